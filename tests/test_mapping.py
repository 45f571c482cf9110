"""The mapper: any size maps and runs, searched mappings beat the fixed baseline, the search is
deterministic and explains rejections, and mapped designs (L2 residency, K split) simulate exactly
as the reference model does."""
import json
import random
from dataclasses import replace

import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fastsim
from fastsim import NPU1, NPU2
from fastsim.cli import main
from fastsim.design import compute_cycles_by_kernel
from fastsim.cache import clear as clear_cache
from fastsim.mapping import Mapping, Matmul, Pins, baseline_mapping, check_mapping, matmul_design, search
from fastsim.mapping.space import DATAFLOWS, SPLITS
from fastsim.lower import lower
from fastsim.workloads.gemm import Gemm, gemm_design
from reference_model import ReferenceSim
from test_engine_vs_reference import LIMITS, assert_same, run_kernel

PRIMES = (1, 2, 3, 5, 7, 13, 31, 97, 257)


def _random_sizes(seed: int, n: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    pick = lambda: rng.choice(PRIMES + (1, 16, 100, 384, 1000))  # noqa: E731
    return [(pick(), pick(), pick()) for _ in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("arch", [NPU1, NPU2], ids=lambda a: a.name)
@pytest.mark.parametrize("dtype", ["bf16", "int8"])
def test_map__any_size_runs_and_matches_its_plan(arch, dtype):
    seed = {"npu1": 1, "npu2": 2}[arch.name] * 10 + {"bf16": 1, "int8": 2}[dtype]  # str hash is salted
    for m, k, n in [(1, 1, 1)] + _random_sizes(seed, 4):
        op = Matmul(m, k, n, dtype)
        found = search(op, arch, top=2)
        ds = fastsim.simulate(matmul_design(op, found.best, arch))
        assert str(ds.status.values[0]) == "ok" and int(ds.total_cycles[0]) == found.best_cycles
        _, plan = check_mapping(op, found.best, arch)
        # the design moves exactly the bytes the plan counted, and never beats its lower bound
        assert float(ds.level_bytes.sel(level="ddr_read")[0]) == plan["ddr_read_bytes"]
        assert float(ds.level_bytes.sel(level="ddr_write")[0]) == plan["ddr_write_bytes"]
        assert found.best_cycles >= plan["lower_bound_cycles"]
        assert plan["padding_waste"] >= 0


@pytest.mark.slow
@pytest.mark.parametrize("size", [256, 512, 1024])
def test_search__never_slower_than_the_fixed_whole_array_mapping(size):
    g = Gemm(size, size, size)
    fixed = fastsim.simulate(gemm_design(g, NPU2, baseline_mapping(NPU2)))
    found = search(g.matmul(), NPU2)
    assert found.best_cycles <= int(fixed.total_cycles[0])


def test_search__deterministic_and_cached():
    op = Matmul(300, 200, 100, "int8")
    clear_cache()
    a = search(op, NPU2, top=3)
    clear_cache()
    b = search(op, NPU2, top=3)
    assert a.best == b.best and a.best_cycles == b.best_cycles
    assert [r["label"] for r in a.ranked] == [r["label"] for r in b.ranked]
    assert search(op, NPU2, top=3) is b  # identical ops share one search,
    assert search(replace(op, name="ffn_up"), NPU2, top=3) is b  # whatever they are called


@pytest.mark.slow
def test_search__pins_constrain_and_impossible_pins_explain_why():
    op = Matmul(512, 512, 512)
    for flow in DATAFLOWS:
        assert search(op, NPU2, Pins(dataflow=(flow,)), top=2).best.dataflow == flow
    assert search(op, NPU2, Pins(cols=2, tile=(32, 64, 32)), top=2).best.cols == 2
    with pytest.raises(fastsim.ConfigError) as e:
        search(op, NPU2, Pins(tile=(512, 512, 512)))
    assert "no legal mapping" in str(e.value) and "core memory: needs" in str(e.value)
    found = search(op, NPU2, top=2)
    assert found.rejected and all(r["reason"] for r in found.rejected)
    assert sum(found.rejected_by_reason.values()) + found.legal == found.enumerated


def test_check__illegal_mappings_list_every_violated_limit():
    with pytest.raises(fastsim.ConfigError) as e:
        check_mapping(Matmul(64, 64, 64), Mapping("is", "2d", (32, 32, 32), 1, 4, k_split=4), NPU2)
    assert "stream ports: 8 streams down one column; 6 available" in str(e.value)
    with pytest.raises(fastsim.ConfigError, match="k_split"):
        check_mapping(Matmul(64, 64, 64), Mapping(k_split=3), NPU2)


def test_datapath__xdna2_bf16_converts_on_the_core():
    op = Matmul(256, 256, 256)
    mp = Mapping("os", "2d", (64, 64, 64), 4, 4)
    _, native = check_mapping(op, Mapping(**{**mp.__dict__, "datapath": "bf16"}), NPU2)
    _, bfp16 = check_mapping(op, Mapping(**{**mp.__dict__, "datapath": "bfp16"}), NPU2)
    # the kernel model converts each A and B block of 8 x 64 and 64 x 8 in every k-step of every
    # 16 x 16 output block (docs/kernel_model.md): 16 blocks x 8 steps x 256 elements / 32 a cycle
    assert native["conversion_cycles"] == 0 and bfp16["conversion_cycles"] == 16 * 8 * (2 * 64 + 2 * 64) / 32
    assert bfp16["core_cycles"] < native["core_cycles"]  # 512 MACs/cycle + conversion beats 64
    design = matmul_design(op, Mapping(**{**mp.__dict__, "datapath": "bfp16"}), NPU2)
    by_kernel = compute_cycles_by_kernel(next(iter(design.cores.values())))
    assert by_kernel["conversion"] == bfp16["conversion_cycles"] * bfp16["kt"] * bfp16["mt"] * bfp16["nt"]


def test_l2_residency__reads_ddr_once_and_k_split_adds_partial_sums():
    op = Matmul(256, 512, 512)
    plain = Mapping("os", "2d", (32, 64, 32), 4, 4, order="n")
    resident = Mapping("os", "2d", (32, 64, 32), 4, 4, order="n", l2="b")
    runs = fastsim.simulate([matmul_design(op, mp, NPU2) for mp in (plain, resident)])
    ddr = runs.level_bytes.sel(level="ddr_read").values
    b_bytes = 512 * 512 * 2
    assert ddr[0] - ddr[1] == b_bytes * (256 // (4 * 32) - 1)  # B re-read once per M tile without L2
    _, split = check_mapping(op, Mapping("os", "2d", (32, 64, 32), 4, 4, k_split=2), NPU2)
    assert split["psum_bytes"] > 0 and split["add_cycles"] > 0


@st.composite
def small_mapped_designs(draw):
    # per-call kernel cycles kept small: tiny tiles make many calls and the reference steps each cycle
    arch = NPU2.replace(name="tiny", columns=2, compute_rows=2, clock_hz=1e9,
                        bd_setup_cycles=draw(st.integers(0, 4)), lock_acquire_cycles=draw(st.integers(0, 2)),
                        task_queue_depth=draw(st.integers(1, 4)),
                        kernel_call_cycles={d: draw(st.integers(0, 3)) for d in NPU2.macs_per_cycle})
    op = Matmul(draw(st.integers(1, 24)), draw(st.integers(1, 24)), draw(st.integers(1, 24)),
                draw(st.sampled_from(["bf16", "int8"])), a_on_chip=draw(st.booleans()),
                c_on_chip=draw(st.booleans()), onchip_window_bytes=draw(st.sampled_from([0, 64])))
    flow = draw(st.sampled_from(DATAFLOWS))
    mp = Mapping(flow, draw(st.sampled_from(SPLITS)),
                 tuple(draw(st.sampled_from([1, 2, 4, 8])) for _ in range(3)),
                 draw(st.integers(1, 2)), 2, 0, draw(st.sampled_from([1, 2])), draw(st.sampled_from("mn")),
                 draw(st.sampled_from(["", "a", "b", "ab"] if flow == "os" else ["", "a" if flow == "ws" else "b"])),
                 buffers=draw(st.sampled_from([1, 2])), k_panel=draw(st.sampled_from([1, 2, 3])) if flow == "os" else 1,
                 c_buffers=draw(st.sampled_from([1, 2])))
    try:
        return matmul_design(op, mp, arch)
    except fastsim.ConfigError:
        return None


@settings(max_examples=40)
@given(small_mapped_designs())
def test_engine__matches_reference_on_mapped_designs(design):
    """L2-resident blocks (BD iterations), distribute chains, K-split partial-sum hand-offs, and
    operands kept on chip by fusion (mem-tile channels driven by the runtime sequence)."""
    assume(design is not None)  # illegal draws are discarded (too many fails the health check)
    lowered = lower(design, **{**LIMITS, "max_cycles": 200_000})
    ref = ReferenceSim(lowered).run()
    assert_same(run_kernel([lowered]), 0, ref, lowered)
    assert ref.status == 0  # mapped designs never deadlock


def test_cli__map_gemm_ranks_and_rejects_and_run_takes_pins():
    runner = CliRunner()
    r = runner.invoke(main, ["map", "gemm", "--m", "97", "--k", "31", "--n", "257", "--dtype", "int8", "--json",
                             "--top", "4", "--search-budget", "2"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["best"] and out["ranked"][0]["chosen"] and out["rejected"][0]["reason"]
    r = runner.invoke(main, ["map", "gemm", "--m", "64", "--k", "64", "--n", "64", "--search-budget", "1"])
    assert r.exit_code == 0 and "rejected" in r.output and "*" in r.output
    r = runner.invoke(main, ["run", "--arch", "npu1", "--json", "gemm", "--m", "13", "--k", "7", "--n", "1",
                             "--tile", "4,8,1", "--cols", "2", "--l2", "none"])
    assert r.exit_code == 0, r.output
    mapping = json.loads(r.output)["mapping"]
    assert mapping["tile"] == [4, 8, 1] and mapping["cols"] == 2 and mapping["l2"] == ""


def test_map__python_api_returns_a_dataset_over_candidates():
    ds = fastsim.map(64, 128, 32, "int8", arch="npu1", top=2)
    assert ds.chosen.sum() == 1 and ds.simulated_cycles.attrs["units"] == "cycles"
    best = ds.sel(candidate=ds.attrs["best"])
    assert int(best.simulated_cycles) == ds.attrs["best_cycles"] and bool(best.chosen)
    assert ds.rejected_reason.size > 0


@pytest.mark.slow
def test_llm__bf16_weights_run_in_both_regimes_and_ws_pins_every_gemm():
    runner = CliRunner()
    for args in (["--regime", "decode", "--context", "64"], ["--regime", "prefill", "--prompt", "16"],
                 ["--regime", "decode", "--context", "64", "--dataflow", "gemm=ws"]):
        r = runner.invoke(main, ["run", "--json", "llm", "--weights", "bf16", *args])
        assert r.exit_code == 0, r.output
        assert json.loads(r.output)["seconds"] > 0
    from fastsim.llm import LlmStudy, Precision, simulate_llm

    ds = simulate_llm(LlmStudy(regime="decode", context=64, precision=Precision(weights="bf16"),
                               dataflow={"gemm": "ws"}))
    assert set(ds.dataflow.values[ds.op_class.values == "gemm"]) == {"ws"}


@settings(max_examples=100)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300), st.sampled_from(["bf16", "bfp16", "int8"]),
       st.sampled_from([1.0, 0.5]), st.floats(0.1, 1.0))
def test_plan__vectorised_kernel_cost_equals_the_scalar_cost_model(m, k, n, key, scale, efficiency):
    """plan.matmul_cycles is the numpy form of fastsim.cost.matmul_cycles; they must agree."""
    import numpy as np

    from fastsim.cost import matmul_cycles
    from fastsim.mapping.plan import matmul_cycles as vectorised

    op = Matmul(m, k, n, "bf16", kernel_efficiency=efficiency, macs_scale=scale)
    got = vectorised(op, key, NPU2, np.array([m]), np.array([k]), np.array([n]))[0]
    assert got == matmul_cycles(m, k, n, key, NPU2, efficiency, 0, scale, c_bytes=op.c_elem_bytes)


@pytest.mark.parametrize("m,k,n,flow", [(1, 2048, 512, "os"), (96, 256, 128, "ws"), (64, 512, 256, "is"),
                                        (128, 128, 128, "os")])
def test_single_buffers__never_faster_and_named(m, k, n, flow):
    """An implementation that double-buffers nothing (``buffers = 1``) waits for each transfer
    before the next: never faster than the same space double-buffered, and the mapping says so."""
    op, pins = Matmul(m, k, n), dict(cols=2, rows=1, dataflow=(flow,), l2="")
    double = search(op, NPU2, Pins(**pins))
    single = search(op, NPU2, Pins(**pins, buffers=1))
    assert single.best_cycles >= double.best_cycles
    assert single.best.buffers == 1 and "single-buffered" in single.best.label()
    with pytest.raises(fastsim.ConfigError, match="buffers"):
        search(op, NPU2, Pins(buffers=3))
