"""GEMM end to end: data volumes, MAC time, capacity checks, and the batch path."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

import fastsim
from fastsim import NPU1, NPU2
from fastsim.cli import main
from fastsim.report import summarize
from fastsim.mapping import Mapping, check_mapping
from fastsim.mapping.dispatch import DispatchLimits
from fastsim.workloads.gemm import Gemm, gemm_design


@pytest.mark.parametrize("arch,g,tile,cols", [
    (NPU2, Gemm(512, 256, 1024), (64, 64, 64), 8),
    (NPU2, Gemm(256, 128, 256, "int8"), (32, 64, 32), 4),
    (NPU1, Gemm(512, 512, 512), (32, 32, 64), 4),
])
def test_gemm__whole_array_os_moves_exactly_the_expected_bytes(arch, g, tile, cols):
    """mlir-aie whole_array (os, 2d, no L2 residency): A re-read per C tile column, B per row."""
    mp = Mapping("os", "2d", tile, cols, arch.compute_rows)
    ds = fastsim.simulate(gemm_design(g, arch, mp))
    rows = arch.compute_rows
    bi, bo = {"bf16": (2, 2), "int8": (1, 4)}[g.dtype]
    block_rows, tiles_per_row = g.m // (rows * tile[0]), g.n // (cols * tile[2])
    a_bytes = g.m * g.k * bi * tiles_per_row  # each A row block re-sent per C tile
    b_bytes = g.k * g.n * bi * block_rows  # each B column panel re-sent per block row
    lv = ds.level_bytes.isel(design=0)
    assert float(lv.sel(level="ddr_read")) == a_bytes + b_bytes
    assert float(lv.sel(level="ddr_write")) == g.m * g.n * bo
    # every core spends the planned kernel cycles
    _, plan = check_mapping(g.matmul(), mp, arch)
    busy = ds.core_cycles.isel(design=0).sel(core_state="busy").values
    assert (busy == plan["core_cycles"]).all()
    assert len(busy) == rows * cols


def test_gemm__tiles_that_do_not_fit_are_reported():
    with pytest.raises(fastsim.ConfigError) as e:
        gemm_design(Gemm(2048, 2048, 2048, tile_m=256, tile_k=256, tile_n=256), NPU2)
    assert "core memory: needs" in str(e.value) and "65536 available" in str(e.value)
    with pytest.raises(fastsim.ConfigError, match="cols"):
        gemm_design(Gemm(512, 512, 512, cols=9), NPU2)


@pytest.mark.slow
def test_gemm__efficiency_slows_compute_bound_designs():
    fast = fastsim.simulate(gemm_design(Gemm(512, 512, 512, "int8", kernel_efficiency=1.0), NPU2))
    slow = fastsim.simulate(gemm_design(Gemm(512, 512, 512, "int8", kernel_efficiency=0.25), NPU2))
    assert int(slow.total_cycles[0]) > int(fast.total_cycles[0])


@pytest.mark.slow
def test_gemm__batch_equals_single_runs():
    designs = [gemm_design(Gemm(512, k, 512), NPU2) for k in (128, 256, 512)]
    batch = fastsim.simulate(designs)
    for i, d in enumerate(designs):
        one = fastsim.simulate(d)
        assert int(batch.total_cycles[i]) == int(one.total_cycles[0])
        n = int((one.channel_name.values[0] != "").sum())
        np.testing.assert_array_equal(batch.channel_cycles.values[i, :n], one.channel_cycles.values[0, :n])


def test_summary__bound_by_and_peak_fraction():
    g = Gemm(512, 512, 512)
    ds = fastsim.simulate(gemm_design(g, NPU2))
    s = summarize(ds, 0, NPU2, g.ops, "bf16")
    assert 0 < s["peak_fraction"] <= 1
    assert s["bound_by"] in s["utilization"]
    assert s["seconds"] == pytest.approx(s["total_cycles"] / NPU2.clock_hz + NPU2.dispatch_overhead_s)


def test_cli__json_has_the_documented_keys(tmp_path):
    trace = tmp_path / "t.json"
    r = CliRunner().invoke(main, ["run", "--json", "--trace", str(trace), "gemm", "--m", "512",
                                  "--k", "256", "--n", "512"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    for key in ("total_cycles", "seconds", "ops_per_s", "peak_fraction", "ddr_bytes", "bound_by"):
        assert key in out
    data = json.loads(trace.read_text())
    tracks = {e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "core tile(0,2)" in tracks and "tile(0,0).mm2s0" in tracks
    assert sum(e["ph"] == "X" for e in data["traceEvents"]) == out["trace_events"] > 0


@pytest.mark.slow  # an exact 2048^3 search (12 s); the README test runs `run gemm` on a small GEMM
def test_cli__default_run():
    r = CliRunner().invoke(main, ["run"])
    assert r.exit_code == 0 and "GEMM 2048x2048x2048 bf16 on npu2" in r.output and "bound by" in r.output


def test_cli__bad_input():
    runner = CliRunner()
    r = runner.invoke(main, ["run", "gemm", "--m", "0"])
    assert r.exit_code == 2 and "--m" in r.output
    r = runner.invoke(main, ["run", "gemm", "--tile", "64,64"])
    assert r.exit_code == 2 and "m,k,n" in r.output
    r = runner.invoke(main, ["run", "--arch", "npu9"])
    assert r.exit_code == 2 and "not a preset" in r.output


def test_trace__periodic_runs_become_summary_slices_that_cover_the_raw_events():
    """Long traces stay loadable (issue 16): identical back-to-back slices at a constant period are
    one slice with a count; the raw events are still there with raw=True."""
    from fastsim.trace import chrome_trace, summarize_repeats

    assert summarize_repeats([("a", 0, 2), ("a", 5, 7), ("a", 10, 12), ("b", 12, 13), ("a", 15, 17)]) == \
        [("a", 0, 12, 3), ("b", 12, 13, 1), ("a", 15, 17, 1)]
    alternating = [(("x0", "x1")[k % 2], 4 * k, 4 * k + 3) for k in range(8)]  # a double buffer
    assert summarize_repeats(alternating) == [("x0, x1", 0, 31, 8)]
    # a design whose steady state repeats slices at a constant period (npu1 256^3: 4336 raw -> 360)
    ds = fastsim.simulate(gemm_design(Gemm(256, 256, 256), NPU1), trace=True)
    raw = [e for e in chrome_trace(ds, raw=True)["traceEvents"] if e["ph"] == "X"]
    short = [e for e in chrome_trace(ds)["traceEvents"] if e["ph"] == "X"]
    assert len(short) < len(raw)
    assert sum(e["args"].get("count", 1) for e in short) == len(raw)
    for tid in {e["tid"] for e in raw}:  # each summary spans exactly the raw slices it counts, in order
        mine = sorted((e for e in raw if e["tid"] == tid), key=lambda e: e["ts"])
        k = 0
        for e in sorted((e for e in short if e["tid"] == tid), key=lambda e: e["ts"]):
            count = e["args"].get("count", 1)
            assert mine[k]["ts"] == e["ts"]
            assert mine[k + count - 1]["ts"] + mine[k + count - 1]["dur"] == pytest.approx(e["ts"] + e["dur"])
            k += count
        assert k == len(mine)


def test_gemm__is_a_one_op_graph_that_evaluates_like_its_search():
    """The GEMM command's op is the graph's op as every graph's op reaches the mapper: evaluating the
    one-op graph runs the search's best design of that same op."""
    from fastsim.evaluation import evaluate, to_dataset
    from fastsim.mapping import Pins, search

    g = Gemm(m=96, k=160, n=224, dtype="int8")
    graph = g.graph()
    assert len(graph.ops) == 1 and graph.ops[0].macs == g.macs
    result = evaluate(graph, NPU2, g.graph_pins())
    best = search(g.matmul(), NPU2, Pins(), top=3, keep=0)
    assert result.op_results()[0].cycles == best.best_cycles
    ds = to_dataset(result, g.graph_pins(), NPU2, DispatchLimits(), {"workload": "gemm"})
    assert float(ds.ddr_bytes.sel(tensor_kind="weights").sum()) >= g.k * g.n  # B read at least once
    assert int(ds.macs.sum()) == g.macs


def test_run_gemm__out_dtype_sets_what_c_writes_to_ddr():
    """An int8 GEMM that requantizes writes int8 C (a quarter of int32's bytes); the option and an
    as-built file's [gemm] out_dtype are one setting, refused when given twice."""
    import json

    from click.testing import CliRunner

    from fastsim.cli import main

    def ddr_write(*extra):
        r = CliRunner().invoke(main, ["run", "--json", "--arch", "npu1", "gemm", "--m", "256", "--k", "256",
                                      "--n", "256", "--dtype", "int8", "--search-budget", "2", *extra])
        assert r.exit_code == 0, r.output
        return json.loads(r.output)["bytes_by_level"]["ddr_write"]

    assert ddr_write("--out-dtype", "int8") * 4 == ddr_write()
    bad = CliRunner().invoke(main, ["run", "gemm", "--m", "64", "--k", "64", "--n", "64", "--out-dtype", "int7"])
    assert bad.exit_code != 0 and "out_dtype = 'int7'" in bad.output
