"""The compiler-generated matmul kernel (mlir-air ``--codegen direct``): its fitted cost reproduces
its train rows, it is never cheaper than mm.cc's kernel at the same tile, and it is refused where
it was not measured (docs/kernel_model.md, "Compiler-generated kernels")."""
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsim.arch import NPU1, NPU2
from fastsim.errors import ConfigError
from fastsim.kernel_model import matmul as KM
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.run import with_as_built as with_llm_as_built
from fastsim.mapping.overlay import load_as_built
from fastsim.workloads.gemm import Gemm, gemm_mapping, run_gemm, with_as_built

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import fit_direct_codegen as FIT  # noqa: E402


def test_direct_codegen__the_fitted_cost_reproduces_its_train_row():
    row = FIT.TRAIN_VALUE
    assert FIT.simulated_us(row, KM.DIRECT_CALL_EXTRA_CYCLES["aie2p"]) == pytest.approx(FIT.measured_us(row), rel=0.01)


def test_direct_codegen__the_form_train_row_picks_a_cost_per_call():
    # the two forms agree on train 1 by construction; at tile_n 64 only the per-call one lands
    row = FIT.TRAIN_FORM
    per_call = FIT.simulated_us(row, KM.DIRECT_CALL_EXTRA_CYCLES["aie2p"])
    per_block = FIT.simulated_us(row, 0.0, KM.DIRECT_CALL_EXTRA_CYCLES["aie2p"] / FIT.BLOCKS_PER_CALL)
    assert abs(per_call / FIT.measured_us(row) - 1) < 0.05 < abs(per_block / FIT.measured_us(row) - 1)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 256), st.integers(1, 256), st.integers(1, 256), st.just("bfp16"))
def test_direct_codegen__never_cheaper_than_mm_cc_and_more_work_never_fewer_cycles(m, k, n, key):
    direct = KM.call_cycles(NPU2, key, m, k, n, codegen="direct")
    assert direct >= KM.call_cycles(NPU2, key, m, k, n)
    for bigger in ((m + 16, k, n), (m, k + 16, n), (m, k, n + 16)):
        assert KM.call_cycles(NPU2, key, *bigger, codegen="direct") >= direct


def test_direct_codegen__adds_its_fitted_cycles_to_the_matmul_form():
    # the compiler emits the matmul form even where mm.cc's author would pick the GEMV form
    m, k, n = np.array([1, 64]), 32, 128
    extra = KM.DIRECT_CALL_EXTRA_CYCLES["aie2p"]
    assert np.array_equal(KM.call_cycles(NPU2, "bfp16", m, k, n, codegen="direct"),
                          KM.matmul_call_cycles(NPU2, "bfp16", m, k, n) + extra)


def test_direct_codegen__refused_where_it_was_not_measured_and_unknown_names_refused():
    with pytest.raises(ConfigError, match="codegen = 'direct'.*aie2p cores only.*npu1 has aie2"):
        run_gemm(Gemm(256, 256, 256, codegen="direct", budget=1), NPU1)
    with pytest.raises(ConfigError, match="codegen = 'direct'.*bfp16 datapath only.*not int8"):
        run_gemm(Gemm(256, 256, 256, "int8", codegen="direct", budget=1), NPU2)
    with pytest.raises(ConfigError, match="codegen = 'direct'.*not bf16"):
        run_gemm(Gemm(256, 256, 256, codegen="direct", datapath="bf16", budget=1), NPU2)
    with pytest.raises(ConfigError, match="codegen"):
        KM.call_cycles(NPU2, "int8", 64, 64, 64, codegen="direct")
    with pytest.raises(ConfigError, match="codegen.*'compiler'.*one of"):
        Gemm(256, 256, 256, codegen="compiler").graph()


def test_direct_codegen__every_door_to_the_search_holds_it_to_bfp16():
    # run gemm (through the evaluator) and map gemm (the search alone) answer alike
    g = Gemm(512, 512, 512, codegen="direct")
    mapped = gemm_mapping(g, NPU2).best
    summary, _ = run_gemm(g, NPU2)
    assert mapped.datapath == summary["mapping"]["datapath"] == "bfp16"
    assert mapped.label() == summary["mapping"]["label"]


def test_direct_codegen__a_file_pins_it_and_the_gemm_takes_longer(tmp_path):
    base = ROOT / "examples" / "as_built" / "air_gemm_bf16_f32_out.toml"
    direct = tmp_path / "direct.toml"
    direct.write_text(base.read_text().replace("[gemm]\n", '[gemm]\ncodegen = "direct"\n'))
    g = Gemm(1024, 1024, 1024, tile_m=64, tile_k=32, tile_n=128, k_panel=8)
    ext, _ = run_gemm(with_as_built(g, str(base)), NPU2, as_built=str(base))
    gen, _ = run_gemm(with_as_built(g, str(direct)), NPU2, as_built=str(direct))
    assert gen["seconds"] > ext["seconds"]
    assert "codegen" in gen["as_built"]["pinned"] and "codegen external" in ext["as_built"]["default"]
    bad = tmp_path / "bad.toml"
    bad.write_text(base.read_text().replace("[gemm]\n", '[gemm]\ncodegen = "hand"\n'))
    with pytest.raises(ConfigError, match="codegen"):
        run_gemm(with_as_built(g, str(bad)), NPU2)


def test_direct_codegen__an_llm_table_pins_weight_gemms_only_by_a_known_name():
    with pytest.raises(ConfigError, match="codegen\\[softmax\\].*codegen pin is for matmul"):
        simulate_llm(LlmStudy(model="llama-3.2-1b", regime="prefill", prompt=256, codegen={"softmax": "direct"}), NPU2)
    with pytest.raises(ConfigError, match="codegen\\[gemm\\]"):
        simulate_llm(LlmStudy(model="llama-3.2-1b", regime="prefill", prompt=256, codegen={"gemm": "mlir"}), NPU2)
    with pytest.raises(ConfigError, match="codegen\\[attn_scores\\].*reads kv"):
        simulate_llm(LlmStudy(model="llama-3.2-1b", regime="prefill", prompt=256, codegen={"attention": "direct"}),
                     NPU2)


def test_direct_codegen__pinning_the_default_changes_nothing():
    # "external" is what an unpinned op runs: the pin must not hold the op out of kernel sharing
    # (FastFlowLM's fused decode shares kernels among its ops)
    built = load_as_built(ROOT / "examples" / "as_built" / "flm_llama32_1b.toml")
    base = with_llm_as_built(LlmStudy(model="llama-3.2-1b", context=1024), built)
    plain = simulate_llm(base, NPU2)
    pinned = simulate_llm(replace(base, codegen={"gemm": "external"}), NPU2)
    assert float(pinned["total_seconds"]) == float(plain["total_seconds"])
    assert list(pinned["matmul_tile"].values.ravel()) == list(plain["matmul_tile"].values.ravel())
