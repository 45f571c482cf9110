"""Two core mechanisms: the matmul microkernel's per-call and per-block cycles (closed form, checked
against the one-tile measurements it is derived from) and the per-part vector-op table."""
import numpy as np
import pytest

from fastsim import arch as arch_mod
from fastsim.arch import NPU1, NPU2, SYSTOLIC16, VECTOR_KINDS
from fastsim.calibration import Measurement, Predictor, calibrate, parse_workload, with_params
from fastsim.cost import kernel_blocks, matmul_cycles
from fastsim.errors import ConfigError
from fastsim.mapping import plan
from fastsim.mapping.space import Matmul

GHZ_1_8 = 1.8e9  # both Uni Jena figures are quoted for a tile at 1.8 GHz


def _one_tile_efficiency(arch, m, k, n, datapath):
    """Fraction of the datapath's peak one call of the kernel reaches, from the closed form."""
    cycles = matmul_cycles(m, k, n, datapath, arch, arch.efficiency(datapath))
    return m * k * n / (arch.macs_per_cycle[datapath] * cycles)


# The generic microkernel formula (fastsim.cost, Arch.kernel_* tables), which prices calls on arrays
# of no modelled generation: the presets' geometry and rates as "generic" arrays with the tables the
# presets carried before the kernel model (docs/kernel_model.md prices aie2/aie2p; its own tests are
# tests/test_kernel_model_matmul.py).
G1 = NPU1.replace(name="generic_npu1", generation="generic", kernel_efficiency={"bf16": 1.0, "int8": 0.42},
                  kernel_call_cycles={"bf16": 40, "int8": 15, "int16": 15, "int8xint4": 15},
                  kernel_block_cycles={"bf16": 0, "int8": 8, "int16": 8})
G2 = NPU2.replace(name="generic_npu2", generation="generic", kernel_efficiency={"bfp16": 1.0, "int8": 1.0, "bf16": 1.0},
                  kernel_call_cycles={"bfp16": 36, "int8": 36, "bf16": 36},
                  kernel_block_cycles={"bfp16": 0, "int8": 0, "bf16": 0})


def test_kernel__xdna1_bf16_one_tile_figure_is_reproduced_at_its_tile_shape():
    # Uni Jena "Hello XDNA" XDNA1 kernel: 32x32x32 bf16, 398 GFLOPS measured on one tile
    measured = 398e9 / (2 * G1.macs_per_cycle["bf16"] * GHZ_1_8)
    assert measured == pytest.approx(0.864, abs=1e-3)
    assert _one_tile_efficiency(G1, 32, 32, 32, "bf16") == pytest.approx(measured, rel=0.005)
    # closed form: 256 VMAC cycles + 40 per call, no exposed per-block cost
    assert matmul_cycles(32, 32, 32, "bf16", G1, G1.efficiency("bf16")) == 256 + 40


def test_kernel__xdna2_bfp16_one_tile_figure_is_reproduced_at_its_tile_shape():
    # Uni Jena "Hello XDNA" XDNA2 kernel: 64x96x64 bfp16, 1,760 GFLOPS measured on one tile
    measured = 1760e9 / (2 * G2.macs_per_cycle["bfp16"] * GHZ_1_8)
    assert _one_tile_efficiency(G2, 64, 96, 64, "bfp16") == pytest.approx(measured, rel=0.005)
    assert matmul_cycles(64, 96, 64, "bfp16", G2, G2.efficiency("bfp16")) == 768 + 36
    assert kernel_blocks(64, 64, "bfp16", G2) == 16  # the 14 loop iterations + warm-up + cool-down


def test_kernel__section_4c_trace_is_reproduced_under_the_reading_the_block_cost_comes_from():
    # mlir-aie section-4c: 64x64x64 in ~2535 cycles against an ideal of 2048 (a 128-MAC/cycle path,
    # 64 2x2 blocks of 4x8x4); npu1's int16 kernel costs carry that fit
    traced = G1.replace(macs_per_cycle={**G1.macs_per_cycle, "int16": 128},
                          mmul_shapes={**G1.mmul_shapes, "int16": (4, 8, 4)})
    assert kernel_blocks(64, 64, "int16", traced) == 64
    assert matmul_cycles(64, 64, 64, "int16", traced) == pytest.approx(2535, rel=0.02)


@pytest.mark.parametrize("arch", [G1, G2], ids=lambda a: a.name)
def test_kernel__small_k_tiles_cost_more_per_mac_than_large_k(arch):
    for path in arch.macs_per_cycle:
        def per_mac(k):
            return matmul_cycles(64, k, 64, path, arch, arch.efficiency(path)) / (64 * k * 64)
        assert per_mac(16) > per_mac(64) > per_mac(256), path


def test_kernel__more_blocks_per_mac_cost_more_where_blocks_cost_cycles():
    # npu1 int8 (IRON mm.cc kernel, 8 cycles per block): same MACs, 4x the blocks
    square = matmul_cycles(64, 64, 64, "int8", G1, G1.efficiency("int8"))
    thin = matmul_cycles(8, 64, 512, "int8", G1, G1.efficiency("int8"))
    assert kernel_blocks(64, 64, "int8", G1) == 32 and kernel_blocks(8, 512, "int8", G1) == 32
    assert thin == square  # same blocks, same MACs
    few = matmul_cycles(128, 64, 32, "int8", G1, G1.efficiency("int8"))
    assert kernel_blocks(128, 32, "int8", G1) == 32 and few == square
    many = matmul_cycles(64, 64, 64, "int8", G1.replace(mmul_shapes={**G1.mmul_shapes, "int8": (2, 8, 2)}),
                         G1.efficiency("int8"))
    assert many > square


@pytest.mark.parametrize("arch", [G1, G2], ids=lambda a: a.name)
def test_kernel__plan_and_cost_agree_on_every_tile(arch):
    """The mapper's vectorized matmul_cycles is the same arithmetic as cost.matmul_cycles."""
    rng = np.random.default_rng(0)
    m, k, n = (rng.integers(1, 300, size=40) for _ in range(3))
    for path in arch.macs_per_cycle:
        op = Matmul(256, 256, 256, kernel_overhead_cycles=3, macs_scale=0.5)
        got = plan.matmul_cycles(op, (path,), arch, m[None, :], k[None, :], n[None, :])[0]
        want = [matmul_cycles(int(a), int(b), int(c), path, arch, arch.efficiency(path), 3, 0.5)
                for a, b, c in zip(m, k, n)]
        assert got.tolist() == want, path


def test_kernel__mesh_cores_and_missing_entries_cost_nothing_extra():
    assert SYSTOLIC16.kernel_call_cycles == {} and SYSTOLIC16.kernel_block_cycles == {}
    assert G1.block_cycles("int8xint4") == 0 and G2.call_cycles("bfp8") == 0
    bare = G2.replace(kernel_call_cycles={}, kernel_block_cycles={}, kernel_efficiency={})
    assert matmul_cycles(64, 64, 64, "bfp16", bare) == 64 ** 3 // 512


def test_arch__new_macs_keep_only_kernel_entries_of_datapaths_that_exist():
    a = G2.replace(macs_per_cycle={"int8": 512}, datapaths={})
    assert set(a.kernel_call_cycles) == set(a.kernel_block_cycles) == set(a.kernel_efficiency) == {"int8"}


def test_arch__vector_table_has_every_kind_and_the_measured_npu2_figures():
    for a in (NPU1, NPU2, SYSTOLIC16):
        assert set(a.vector_cycles_per_elem) == set(VECTOR_KINDS)
        assert all(a.vector_cost(kind) >= 0 for kind in VECTOR_KINDS)
    # mlir-air kernel registry, one tile at 1.8 GHz: RMSNorm 2.88, LayerNorm 4.34, GELU 4.06, SiLU*up 3.39
    for kind, cycles in {"norm": 2.88, "layer_norm": 4.34, "gelu": 4.06, "silu_mul": 3.39}.items():
        assert NPU2.vector_cost(kind) == pytest.approx(cycles, abs=0.05)
    # RoPE and element-wise add are DMA-bound in that benchmark: the core costs less than it measured
    assert NPU2.vector_cost("rope") < 1.8 and NPU2.vector_cost("elementwise") < 1.15
    with pytest.raises(ConfigError, match="vector op kind"):
        NPU2.vector_cost("warp")


def test_arch__validate_reports_every_bad_kernel_and_vector_entry_at_once():
    with pytest.raises(ConfigError) as e:
        NPU2.replace(kernel_call_cycles={"fp8": 1, "int8": -1}, kernel_block_cycles={"bfp16": "x"},
                     vector_cycles_per_elem={"gelu": -2, "warp": 1})
    text = str(e.value)
    for needle in ("kernel_call_cycles key = 'fp8'", "kernel_call_cycles.int8 = -1", "kernel_block_cycles.bfp16",
                   "vector_cycles_per_elem.gelu = -2", "vector_cycles_per_elem key = 'warp'"):
        assert needle in text, needle
    with pytest.raises(ConfigError, match="missing layer_norm"):
        arch_mod.from_dict({**arch_mod._as_plain_dict(NPU2), "vector_cycles_per_elem": {"norm": 1.0}})


def test_arch__toml_overrides_single_vector_kinds_and_kernel_tables(tmp_path):
    path = tmp_path / "part.toml"
    path.write_text('[arch]\nbase = "npu1"\n[arch.vector_cycles_per_elem]\nsoftmax = 2.0\n'
                    '[arch.kernel_block_cycles]\nint8 = 12\n')
    a = arch_mod.load(path)
    assert a.vector_cost("softmax") == 2.0 and a.vector_cost("norm") == NPU1.vector_cost("norm")
    assert a.block_cycles("int8") == 12 and a.block_cycles("int16") == 0  # a kernel table is replaced whole


TRUE_KERNEL = {"kernel_efficiency.bfp16": 0.9, "kernel_call_cycles.bfp16": 50, "kernel_block_cycles.bfp16": 6}


def _kernel_rows(shapes, truth):
    ms = [Measurement("empty", *parse_workload("dispatch"), 1.0)]
    ms += [Measurement(f"k{i}", *parse_workload(f"kernel m={m} k={k} n={n} dtype=bf16 calls=20000"), 1.0)
           for i, (m, k, n) in enumerate(shapes)]
    pred = Predictor(NPU2, ms)
    true = with_params(NPU2, list(truth), list(truth.values()))
    return [Measurement(m.name, m.kind, m.args, pred.predict(m, true)) for m in ms]


def test_calibrate__call_and_block_cycles_are_fitted_back_from_three_tile_shapes():
    # one long k loop (64x256x64) among them: with the C moves in series, short-k calls are mostly
    # block cost, and the MAC efficiency needs a call whose k loop dominates it
    ms = _kernel_rows([(64, 256, 64), (32, 128, 32), (64, 16, 64), (128, 32, 128)], TRUE_KERNEL)
    cal = calibrate(ms, NPU2, leave_one_out=False)
    got = dict(zip(cal.names, cal.values))
    assert set(TRUE_KERNEL) <= set(got)
    assert got["kernel_call_cycles.bfp16"] == 50 and got["kernel_block_cycles.bfp16"] == 6
    assert got["kernel_efficiency.bfp16"] == pytest.approx(0.9, rel=0.01)
    assert np.abs(cal.residuals).max() < 1e-3


def test_calibrate__call_and_block_cycles_are_held_unless_the_shapes_separate_them():
    ms = _kernel_rows([(64, 64, 64), (64, 128, 64)], {})  # same block count: not separable
    assert Predictor(NPU2, ms).determined() == {"dispatch_overhead_s", "kernel_efficiency.bfp16"}
