"""Default kernel costs: a func.call whose kernel has no given cost takes fastsim's own cost model
when fastsim recognises the kernel by its name and memref shapes, and says so; any other kernel
without a cost is an error naming it."""
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from fastsim import NPU1, NPU2
from fastsim.cost import matmul_cycles
from fastsim.mlir import MlirError, read_design, read_text, simulate_design
from fastsim.mlir.kernels import default_kernel_cost

HERE = Path(__file__).parent / "mlir"


def by_hand_matmul(m, k, n, key, arch, in_bytes, c_bytes, conv_per_elem=0.0) -> int:
    """The mapper's core cycles of one m x k x n call (fastsim.mapping.plan._core_cycles), written
    out: on a modelled generation the kernel model's call (its A, B and C moves and the operand
    conversion inside, C of ``c_bytes`` per element); elsewhere the microkernel (at least the A and
    B loads), the C tile's load and store, conversion."""
    from fastsim.cost import kernel_modelled

    if kernel_modelled(arch, key):
        return matmul_cycles(m, k, n, key, arch, arch.efficiency(key), conv_cycles_per_elem=conv_per_elem,
                             c_bytes=c_bytes)
    load, store = arch.core_load_bytes_per_cycle, arch.core_store_bytes_per_cycle
    core = matmul_cycles(m, k, n, key, arch, arch.efficiency(key))
    return (max(core, math.ceil((m * k + k * n) * in_bytes / load)) + math.ceil(m * n * c_bytes / load)
            + math.ceil(m * n * c_bytes / store) + math.ceil((m * k + k * n) * conv_per_elem))


@pytest.mark.parametrize("arch, element, key, in_bytes", [(NPU2, "bf16", "bfp16", 2), (NPU1, "bf16", "bf16", 2),
                                                          (NPU2, "i8", "int8", 1), (NPU1, "i16", "int16", 2)])
def test_matmul__the_mappers_core_cycles_on_the_fastest_datapath(arch, element, key, in_bytes):
    guess, why = default_kernel_cost("matmul_x", [((32, 64), element), ((64, 48), element), ((32, 48), "f32")],
                                     arch)
    conv = dict(arch.datapath_options({"bf16": "bf16", "i8": "int8", "i16": "int16"}[element]))[key]
    assert why == "" and guess.cycles == by_hand_matmul(32, 64, 48, key, arch, in_bytes, 4, conv)
    assert guess.rule.startswith("matmul 32x64x48 ") and f"on the {key} datapath" in guess.rule


def test_matmul__m_k_n_come_from_element_counts_in_any_layout():
    flat, _ = default_kernel_cost("mm_64", [((64, 32), "i8"), ((32, 64), "i8"), ((64, 64), "i32")], NPU2)
    blocked, _ = default_kernel_cost("matmul_4x2x4", [((4, 8, 8, 8), "i8"), ((8, 4, 8, 8), "i8"),
                                                      ((8, 8, 8, 8), "i32")], NPU2)
    assert blocked.cycles == flat.cycles and "64x32x64" in blocked.rule


def test_matmul__without_a_mac_rate_or_a_consistent_shape_it_says_why():
    none, why = default_kernel_cost("matmul_scalar_i32", [((4, 8), "i32"), ((8, 4), "i32"), ((4, 4), "i32")], NPU2)
    assert none is None and "no MAC rate" in why
    none, why = default_kernel_cost("matmul", [((4, 8), "i8"), ((5, 4), "i8"), ((4, 4), "i32")], NPU2)
    assert none is None and "m x k, k x n, m x n" in why


@pytest.mark.parametrize("name, kind", [("passThroughLine", "elementwise"), ("vector_scalar_mul_aie", "elementwise"),
                                        ("bf16_relu", "elementwise"), ("eltwise_add_bf16", "elementwise"),
                                        ("zero_f32", "elementwise"), ("softmax_bf16", "softmax"),
                                        ("layer_norm", "layer_norm"), ("rms_norm_bf16", "norm")])
def test_vector__elements_of_the_largest_memref_times_the_arch_cost(name, kind):
    guess, _ = default_kernel_cost(name, [((1024,), "bf16"), ((1,), "i32"), ((1000,), "bf16")], NPU1)
    assert guess.cycles == math.ceil(1024 * NPU1.vector_cost(kind)) and guess.rule.startswith(f"{kind}: 1024 elements")


def test_design__defaulted_costs_are_used_and_reported_with_their_rules():
    info = read_design(HERE / "matmul_default_costs.mlir")
    got = {d.kernel: d for d in info.defaulted}
    assert set(got) == {"zero_f32", "matmul_bf16_f32"}
    assert got["matmul_bf16_f32"].cycles == by_hand_matmul(64, 64, 64, "bfp16", NPU2, 2, 4, 1 / 32)
    assert got["zero_f32"].cycles == math.ceil(4096 * NPU2.vector_cost("elementwise"))
    assert info.kernels == {d.kernel: d.cycles for d in info.defaulted}
    measured = read_design(HERE / "matmul_default_costs.mlir", {"matmul_bf16_f32": 5000})
    assert [d.kernel for d in measured.defaulted] == ["zero_f32"] and measured.kernels["matmul_bf16_f32"] == 5000
    assert int(simulate_design(measured).total_cycles[0]) > int(simulate_design(info).total_cycles[0])


def test_design__a_kernel_fastsim_does_not_recognise_stays_an_error():
    text = (HERE / "matmul_default_costs.mlir").read_text().replace("zero_f32", "clear_tile")
    with pytest.raises(MlirError, match="kernel 'clear_tile' has no cost .not a kernel fastsim recognises"):
        read_text(text)


def test_cli__guessed_costs_are_in_the_summary_and_the_json():
    from fastsim.cli import main

    path = str(HERE / "matmul_default_costs.mlir")
    out = CliRunner().invoke(main, ["run", "design", path])
    assert out.exit_code == 0, out.output
    assert "guessed cost    matmul_bf16_f32: " in out.output and "fastsim.cost.matmul_cycles" in out.output
    js = json.loads(CliRunner().invoke(main, ["run", "design", path, "--json"]).output)
    assert {d["kernel"] for d in js["kernels"]["defaulted"]} == {"zero_f32", "matmul_bf16_f32"}
    assert all(d["rule"] and d["cycles"] >= 1 for d in js["kernels"]["defaulted"])


def test_study_ablate__ranks_the_kernels_of_a_design_and_refuses_model_options():
    """``fastsim study ablate --design`` asks the method's first question of a user's own design:
    each kernel in turn a 1-cycle pass, ranked by the cycles that saves."""
    import json

    from click.testing import CliRunner

    from fastsim.cli import main

    from pathlib import Path

    design = str(Path(__file__).parent / "mlir" / "matmul_default_costs.mlir")
    r = CliRunner().invoke(main, ["study", "ablate", "--design", design, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    saved = [a["saved_cycles"] for a in out["ablation"]]
    assert [a["kernel"] for a in out["ablation"]][0] == "matmul_bf16_f32" and saved == sorted(saved, reverse=True)
    assert saved[0] > 0 and all(out["total_cycles"] - a["cycles"] == a["saved_cycles"] for a in out["ablation"])
    r = CliRunner().invoke(main, ["study", "ablate", "--design", design, "--model", "llama-3.2-3b"])
    assert r.exit_code == 2 and "--model: a model's options do not apply to --design" in r.output


def test_harness__the_matmul_harness_lines_from_the_calls_macs_and_the_time():
    """mlir-aie's matmul test.cpp prints "Avg NPU matmul time: Nus." and "Avg NPU gflops: G";
    fastsim prints the same from the matmul calls completed (m k n each, by name and shape)."""
    from fastsim.mlir.run import format_design_summary, summary

    info = read_design(HERE / "matmul_default_costs.mlir")
    assert info.matmul_macs == {"matmul_bf16_f32": 64 ** 3}
    s = summary(simulate_design(info), info)
    calls = s["kernels"]["completed"]["matmul_bf16_f32"]["calls"]
    assert s["harness"]["avg_npu_time_us"] == pytest.approx(s["seconds"] * 1e6)
    assert s["harness"]["gflops"] == pytest.approx(2 * calls * 64 ** 3 / s["seconds"] / 1e9)
    text = format_design_summary(s)
    assert f"Avg NPU matmul time: {s['seconds'] * 1e6:.0f}us." in text.splitlines()
    assert any(line.startswith("Avg NPU gflops: ") for line in text.splitlines())


def test_matvec__mv_cc_calls_take_the_kernel_models_one_row_call():
    """mlir-aie's mv.cc (matvec_vectorized_i16_i32(A m x k, b k, c m)): the kernel model's call for
    one row against a k x m matrix; counts that are no m x k, k, m are not guessed."""
    a, b, c = ((32, 16), "i16"), ((16,), "i16"), ((32,), "i32")
    got, why = default_kernel_cost("matvec_vectorized_i16_i32", [a, b, c], NPU1)
    assert why == "" and got.cycles == matmul_cycles(1, 16, 32, "int16", NPU1, NPU1.efficiency("int16"), c_bytes=4)
    assert "matrix-vector 32x16 int16" in got.rule
    bad, why = default_kernel_cost("matvec_vectorized_i16_i32", [a, ((32,), "i16"), c], NPU1)
    assert bad is None and "no m x k, k, m" in why


@pytest.mark.parametrize("name, memrefs, kind, r", [
    ("conv2dk1_i8", [((32, 1, 64), "i8"), ((4096,), "i8"), ((32, 1, 64), "ui8")], "pointwise", 1),
    ("conv2dk3_ui8", [((32, 1, 64), "ui8")] * 3 + [((36864,), "i8"), ((32, 1, 64), "ui8")], "dense", 3),
    ("conv2dk3_dw_ui8", [((32, 1, 64), "ui8")] * 3 + [((576,), "i8"), ((32, 1, 64), "ui8")], "depthwise", 3),
])
def test_conv__mlir_aie_conv_kernels_take_the_kernel_models_conv_call(name, memrefs, kind, r):
    """conv2dk1 (input W x Cin, weights Cin Cout, output W x Cout), conv2dk3 (three input lines,
    9 Cin Cout weights) and its depthwise form: the conv mapper's call cycles for 32 pixels, 64 -> 64."""
    from fastsim.kernel_model import conv as KC, matmul as KM

    got, why = default_kernel_cost(name, memrefs, NPU1)
    tuning = KM.Tuning(NPU1.efficiency("int8"), float(NPU1.call_cycles("int8")), float(NPU1.block_cycles("int8")))
    want = math.ceil(float(KC.conv_call_cycles(NPU1, "int8", kind, 32, 64, 64, r, r, tuning=tuning, out_bytes=1)))
    assert why == "" and got.cycles == want and f"{kind} conv {r}x{r}, 32 pixels x 64 -> 64" in got.rule


def test_conv__variants_and_shapes_it_cannot_read_are_not_guessed():
    base = [((32, 1, 64), "i8"), ((4096,), "i8"), ((32, 1, 64), "ui8")]
    assert "skip variant" in default_kernel_cost("conv2dk1_skip_i8", base, NPU1)[1]
    assert "no input lines, weights and output" in default_kernel_cost(
        "conv2dk1_i8", [base[0], ((4000,), "i8"), base[2]], NPU1)[1]
    assert "passes 2 memrefs" in default_kernel_cost("conv2dk1_i8", base[:2], NPU1)[1]


A_4x8 = ((16, 256), (8, 8), (4, 64), (8, 1))  # 64x64 A in 4x8 blocks (row stride 64)
B_8x8 = ((8, 512), (8, 8), (8, 64), (8, 1))  # 64x64 B in 8x8 blocks


@pytest.mark.parametrize("a, b, key", [(A_4x8, B_8x8, "bf16"), (B_8x8, B_8x8, "bfp16")])
def test_matmul__the_datapath_whose_microkernel_the_operands_blocks_show(a, b, key):
    memrefs = [((64, 64), "bf16"), ((64, 64), "bf16"), ((64, 64), "f32")]
    guess, _ = default_kernel_cost("matmul_bf16_f32", memrefs, NPU2, [a, b, ()])
    conv = dict(NPU2.datapath_options("bf16"))[key]
    assert guess.cycles == by_hand_matmul(64, 64, 64, key, NPU2, 2, 4, conv)
    shape = "x".join(map(str, NPU2.mmul_shapes[key]))
    assert f"on the {key} datapath (A and B reach the core in" in guess.rule and f"its {shape} microkernel" in guess.rule


@pytest.mark.parametrize("a, b", [((), ()), (A_4x8, ()), (A_4x8, A_4x8),  # no layout; B's rows 4 != A's columns 8
                                  (((64, 64), (64, 1)), B_8x8),  # A row-major, no blocks: 64x64 is no mmul shape
                                  (((4, 64), (8, 1), (2, 512)), B_8x8)])  # innermost run not last: not read
def test_matmul__layouts_that_show_no_microkernel_keep_the_fastest_datapath(a, b):
    memrefs = [((64, 64), "bf16"), ((64, 64), "bf16"), ((64, 64), "f32")]
    guess, _ = default_kernel_cost("matmul_bf16_f32", memrefs, NPU2, [a, b, ()])
    plain, _ = default_kernel_cost("matmul_bf16_f32", memrefs, NPU2)
    assert guess == plain and "on the bfp16 datapath:" in guess.rule


def _layout_text(dims) -> str:
    return "[" + ", ".join(f"<size = {s}, stride = {t}>" for s, t in dims) + "]"


def test_design__a_calls_datapath_comes_from_the_fifos_that_feed_it():
    """The layout a call's operands arrived in is read through the FIFO each was acquired from."""
    text = (HERE / "matmul_default_costs.mlir").read_text()
    for fifo, dims in (("a_in", A_4x8), ("b_in", B_8x8)):
        text = text.replace(f"@{fifo}(%shim, ", f"@{fifo}(%shim dimensionsToStream {_layout_text(dims)}, ")
    tiled = {d.kernel: d for d in read_text(text).defaulted}["matmul_bf16_f32"]
    assert tiled.cycles == by_hand_matmul(64, 64, 64, "bf16", NPU2, 2, 4, 0.0) and "4x8x8 microkernel" in tiled.rule
    plain = {d.kernel: d for d in read_design(HERE / "matmul_default_costs.mlir").defaulted}["matmul_bf16_f32"]
    assert plain.cycles != tiled.cycles and "bfp16" in plain.rule
