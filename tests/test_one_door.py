"""``run gemm`` and ``run conv`` go through the evaluator (``evaluation.run_standalone``): the same
search, cache and checks as every graph's op, and the API returns what the CLI prints."""
import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

import fastsim.evaluation.standalone as standalone
from fastsim.arch import NPU1, NPU2
from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.evaluation import GraphPins, evaluate
from fastsim.mapping.mappers import op_search, search_request
from fastsim.mapping.placed import Placed
from fastsim.graph import MATMUL, VECTOR, Op, OpGraph, Operand
from fastsim.mapping.conv import Conv2d
from fastsim.mapping.pins import Pins
from fastsim.workloads.conv import conv_graph, conv_pins, run_conv
from fastsim.workloads.gemm import SEARCH_KEEP, SEARCH_TOP, Gemm, gemm_mapping, run_gemm


@pytest.fixture
def evaluations(monkeypatch):
    """The graphs ``run_standalone`` hands to ``evaluate``."""
    seen = []

    def spy(graph, *args, **kwargs):
        seen.append(graph)
        return evaluate(graph, *args, **kwargs)

    monkeypatch.setattr(standalone, "evaluate", spy)
    return seen


def test_run_gemm__evaluates_its_one_op_graph_and_reports_its_search(evaluations):
    g = Gemm(96, 160, 64, "int8", rows=2, k_split=1, buffers=1)
    summary, ds = run_gemm(g, NPU2)
    assert [len(graph.ops) for graph in evaluations] == [1]
    found = gemm_mapping(g, NPU2)  # the search the evaluation ran (same pins, top and keep: cached)
    assert summary["total_cycles"] == found.best_cycles == int(ds.total_cycles[0])
    assert summary["mapping"]["label"] == found.best.label() and summary["search"] == found.summary()
    assert (found.best.rows, found.best.k_split, found.best.buffers) == (2, 1, 1)


def test_gemm_graph_pins__carry_every_mapping_pin_to_the_search():
    g = Gemm(128, 256, 128, tile_m=32, tile_k=32, tile_n=32, cols=2, rows=2, dataflow="os", l2="a", k_split=1,
             stream_split="equal", buffers=1)
    pins = g.graph_pins()
    request = search_request(Placed(g.graph().ops[0]), NPU2, pins)
    assert request[2] == g.pins() and request[3:5] == (SEARCH_TOP, SEARCH_KEEP)
    assert pins.fusion == "none" and pins.op_pins == (("gemm", g.pins()),)


def test_run_gemm__as_built_report_is_in_the_api_summary(tmp_path):
    from fastsim.workloads.gemm import with_as_built

    path = tmp_path / "built.toml"
    path.write_text('[gemm]\ncols = 1\nrows = 1\n\n[sources]\n"gemm.cols" = "a paper"\n')
    g = with_as_built(Gemm(64, 64, 64), str(path))
    summary, _ = run_gemm(g, NPU2, as_built=str(path))
    assert summary["as_built"]["pinned"] == ["cols", "rows"] and "tile" in summary["as_built"]["searched"]
    assert summary["as_built"]["sources"] == {"gemm.cols": "a paper"}
    out = CliRunner().invoke(main, ["run", "--json", "gemm", "--m", "64", "--k", "64", "--n", "64", "--overlay",
                                    str(path)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == summary  # the CLI prints the API's summary, nothing added


def test_run_conv__evaluates_its_one_op_graph_with_its_pins_and_out_dtype(evaluations):
    op = Conv2d(1, 16, 12, 12, 16, 3, 3, padding=1, out_dtype="int32")
    summary, _ = run_conv(op, NPU1, Pins(cols=1, weights="resident"), budget=2)
    assert [graph.ops[0].kind for graph in evaluations] == ["conv"]
    assert summary["mapping"]["cols"] == 1 and summary["mapping"]["weights"] == "resident"
    # an int32 output (no graph conv writes one unless pinned) writes 4 bytes per element
    assert summary["bytes_by_level"]["ddr_write"] == 4 * 16 * 12 * 12
    found = op_search(Placed(conv_graph(op).ops[0]), NPU1, conv_pins(op, Pins(cols=1, weights="resident"), 2))
    assert summary["search"] == found.summary()


def test_graph_pins__op_pins_and_out_dtype_must_select_their_kinds():
    x = Operand("activations", 2.0)
    graph = OpGraph((Op("mm", "gemm", 0, MATMUL, 8, 8, 8, x, Operand("weights", 2.0), x),
                     Op("act", "elementwise", 0, VECTOR, 8, 1, 8, x, y=x, vector_cycles_per_elem=1.0)), ((), (0,)))
    for pins, named in ((GraphPins(op_pins=(("act", Pins(rows=1)),)), "op_pins[act]"),
                        (GraphPins(op_pins=(("nothing", Pins()),)), "op_pins[nothing]"),
                        (GraphPins(out_dtype=(("mm", "int8"),)), "out_dtype[mm]"),
                        (GraphPins(out_dtype=(("mm", "fp9"),)), "out_dtype[mm]"),
                        (GraphPins(search_top=0), "search_top")):
        with pytest.raises(ConfigError, match=named.replace("[", r"\[")):
            evaluate(graph, NPU2, pins)
    assert replace(GraphPins(), op_pins=(("mm", Pins(rows=1)),)).op_pins_of("mm", "", "gemm") == Pins(rows=1)


def test_one_door__a_field_pinned_by_a_table_and_by_op_pins_alike_is_refused_when_they_differ():
    """A table and an op's own pins name the same choice: the same value is one pin, two values
    are refused (one would otherwise win silently)."""
    g = Gemm(64, 64, 64)
    same = replace(g.graph_pins(), tiles=(("gemm", (32, 32, 32)),), op_pins=(("gemm", Pins(tile=(32, 32, 32))),))
    evaluate(g.graph(), NPU2, same)
    differ = replace(same, op_pins=(("gemm", Pins(tile=(16, 32, 32))),))
    with pytest.raises(ConfigError, match=r"gemm: tile pinned twice, \(32, 32, 32\) by a table and \(16, 32, 32\) by op_pins"):
        evaluate(g.graph(), NPU2, differ)
