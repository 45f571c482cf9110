"""``run design --trace t.json`` also writes ``t.aie.json`` in the shape mlir-aie's trace parser
(``python/utils/trace/parse.py``) writes: a JSON array, one process per traced tile named
``core_trace for tileR,C`` (``memtile_trace``, ``shim_trace``), threads named after the event in
each of eight slots, B/E pairs in cycles; only what fastsim simulates is filled in."""
import json
from pathlib import Path

from click.testing import CliRunner

from fastsim.cli import main
from fastsim.mlir import read_design, simulate_design
from fastsim.mlir.aie_trace import aie_trace

HERE = Path(__file__).parent / "mlir"
COSTS = {"kernel": 100}


def _by_thread(events) -> dict:
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    out: dict = {}
    for e in events:
        if e["ph"] in "BE":
            assert e["name"] == names[(e["pid"], e["tid"])]
            out.setdefault((procs[e["pid"]], e["name"]), []).append((e["ph"], e["ts"]))
    return out


def test_aie_trace__kernel_calls_and_dma_ports_in_mlir_aies_event_names():
    info = read_design(HERE / "physical_passthrough.mlir", COSTS)
    ds = simulate_design(info, trace=True)
    threads = _by_thread(aie_trace(ds, info.design.arch))
    core = "core_trace for tile2,0"
    vector = threads[(core, "INSTR_VECTOR")]
    assert [p for p, _ in vector] == ["B", "E"] * 4  # four calls of 100 cycles
    assert all(e - b == 100 for (_, b), (_, e) in zip(vector[::2], vector[1::2]))
    starts = [t for p, t in threads[(core, "INSTR_EVENT_0")] if p == "B"]
    assert starts == [t for p, t in vector if p == "B"]
    assert {name for proc, name in threads if proc == core} >= {"PORT_RUNNING_0", "PORT_RUNNING_1"}
    assert ("shim_trace for tile0,0", "PORT_RUNNING_0") in threads
    # every B has its E, in time order, per thread
    for spans in threads.values():
        assert [p for p, _ in spans] == ["B", "E"] * (len(spans) // 2)
        assert [t for _, t in spans] == sorted(t for _, t in spans)


def test_aie_trace__run_design_trace_writes_both_shapes(tmp_path):
    costs = tmp_path / "costs.toml"
    costs.write_text("[kernels]\nkernel = 100\n")
    out = tmp_path / "t.json"
    r = CliRunner().invoke(main, ["run", "design", str(HERE / "physical_passthrough.mlir"), "--kernels", str(costs),
                                  "--trace", str(out)])
    assert r.exit_code == 0, r.output
    assert "t.aie.json" in r.output
    events = json.loads((tmp_path / "t.aie.json").read_text())
    assert isinstance(events, list) and events[0]["name"] == "process_name"
    assert "traceEvents" in json.loads(out.read_text())
