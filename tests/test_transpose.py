"""The transpose op kind (fastsim.mapping.transpose): its kernel's cycles are its closed form and
grow with the tile, its search is never slower than a pinned mapping and never faster than its
bound, and ONNX Transpose nodes reach it (a view stays a view, a perm it cannot express is
refused by name)."""
import json

import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto, helper

from fastsim.arch import NPU1, NPU2
from fastsim.errors import ConfigError
from fastsim.graph import TRANSPOSE
from fastsim.kernel_model.vector import AIE2, AIE2P, transpose_cycles
from fastsim.mapping.pins import Pins
from fastsim.mapping.dispatch import control_counts, layer_instructions
from fastsim.mapping.transpose import (Transpose, TransposeMapping, candidates, control_counts_of, plan, search_transpose,
                                       transpose_design)
from fastsim.onnx import build_graph, simulate_onnx
from fastsim.simulation import simulate


def test_transpose_kernel__cycles_are_the_closed_form():
    # bf16, 8 x 8 blocks: 8 row stores of 16 B on the one store slot bind (shuffles 4, loads 8 / 2)
    assert transpose_cycles(AIE2, 64, 128, 2) == 15 + 8 * (8 + 16 * 8)
    assert transpose_cycles(AIE2P, 64, 128, 2) == 15 + 8 * (8 + 16 * 8)
    # fp32, 4 x 4 blocks: 4 stores bind; a ragged tile pays whole blocks
    assert transpose_cycles(AIE2, 10, 6, 4) == 15 + 3 * (8 + 2 * 4)
    # runs of 64 bf16 (128 B): 4 loads of 32 B over two slots, 4 stores of 32 B on AIE-ML; 2 and 2 on v2
    assert transpose_cycles(AIE2, 12, 128, 2, unit=64) == 15 + 12 * (8 + 128 * 4)
    assert transpose_cycles(AIE2P, 12, 128, 2, unit=64) == 15 + 12 * (8 + 128 * 2)


def test_transpose_kernel__refuses_what_it_cannot_move():
    with pytest.raises(ConfigError, match="elem_bytes"):
        transpose_cycles(AIE2, 8, 8, 8)
    with pytest.raises(ConfigError, match="16-byte"):
        transpose_cycles(AIE2, 8, 8, 2, unit=3)


@settings(deadline=None, max_examples=60)
@given(rows=st.integers(1, 300), cols=st.integers(1, 300), more_rows=st.integers(0, 40), more_cols=st.integers(0, 40),
       elem=st.sampled_from([1, 2, 4]), unit=st.sampled_from([1, 8, 32]), core=st.sampled_from([AIE2, AIE2P]))
def test_transpose_kernel__more_elements_never_take_fewer_cycles(rows, cols, more_rows, more_cols, elem, unit, core):
    unit = unit if unit == 1 else max(unit, 16 // elem)
    assert transpose_cycles(core, rows + more_rows, cols + more_cols, elem, unit) >= \
        transpose_cycles(core, rows, cols, elem, unit)


@pytest.mark.parametrize("op, arch", [(Transpose(64, 96, 1, 2), NPU2), (Transpose(48, 32, 1, 4), NPU1),
                                      (Transpose(12, 40, 64, 2), NPU2)])
def test_transpose_search__never_slower_than_a_pinned_mapping_nor_faster_than_its_bound(op, arch):
    found = search_transpose(op, arch)
    assert found.optimal and found.kind == "transpose"
    assert found.best_cycles >= found.best_plan.lower_bound_cycles
    simulated = [r for r in found.ranked if r.get("status") == "ok"]
    assert all(r["cycles"] >= r["lower_bound_cycles"] for r in simulated)
    pinned = sorted({r["mapping"] for r in found.ranked}, key=lambda mp: (mp.tm * mp.tn, mp))[::7][:6]
    for mp in pinned:
        one = search_transpose(op, arch, Pins(tile=(mp.tm, mp.tn, 1), cols=mp.cols, rows=mp.rows))
        assert one.best == mp and one.best_cycles >= found.best_cycles
        assert one.best_cycles >= plan(op, mp, arch).lower_bound_cycles


def test_transpose_plan__counts_the_runs_and_bytes_its_design_moves():
    op, mp = Transpose(64, 96, 1, 2), TransposeMapping(16, 32, 2, 2)
    pl = plan(op, mp, NPU2)
    assert (pl.tiles, pl.per_core, pl.padding_tiles, pl.tile_bytes) == (12, 3, 0, 16 * 32 * 2)
    assert pl.x_dims == ((16, 1), (16, 48)) and pl.y_dims == ((8, 1), (32, 32))  # 16 runs in, 32 out
    ds = simulate(search_transpose(op, NPU2, Pins(tile=(16, 32, 1), cols=2, rows=2)).best_design)
    moved = [float(ds.level_bytes.sel(level=x).sum()) for x in ("ddr_read", "ddr_write")]
    assert moved == [64 * 96 * 2] * 2


def test_transpose_pins__another_kinds_pin_and_a_tile_that_does_not_divide_are_refused():
    with pytest.raises(ConfigError, match="dataflow"):
        search_transpose(Transpose(64, 64), NPU2, Pins(dataflow=("ws",)))
    with pytest.raises(ConfigError, match="tm dividing m = 64"):
        search_transpose(Transpose(64, 64), NPU2, Pins(tile=(24, 8, 1)))


def _model(nodes, x_shape, y_shape):
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def test_onnx_transpose__a_last_two_axes_swap_runs_as_the_transpose_kind():
    model = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 1]),
                    helper.make_node("Relu", ["b"], ["y"])], [3, 64, 96], [3, 96, 64])
    g = build_graph(model)
    t = g.graph.ops[1]
    assert (t.kind, t.repeat, t.m, t.n, t.k, t.x.elem_bytes) == (TRANSPOSE, 3, 64, 96, 1, 2.0)
    ds = simulate_onnx(g, NPU2)
    i = list(ds.onnx_op_type.values).index("Transpose")
    # inside a graph the search weighs the op's control: one set-up for its 3 runs (placed.control_weight)
    found = search_transpose(Transpose(64, 96, 1, 2, t.name), NPU2, budget=3, control_weight=1 / 3)
    assert int(ds.op_cycles.values[i]) == 3 * found.best_cycles


def test_transpose_pins__two_column_counts_for_one_op_are_refused_not_one_silently_kept():
    """A ``columns`` table and the op's own ``op_pins`` may agree; when they differ, which wins
    would be a guess (the op_pins value used to win silently)."""
    from fastsim.evaluation import GraphPins, evaluate

    model = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 1]),
                    helper.make_node("Relu", ["b"], ["y"])], [3, 64, 96], [3, 96, 64])
    graph = build_graph(model).graph
    name = graph.ops[1].name
    agreed = evaluate(graph, NPU2, GraphPins(columns=((name, 2),), op_pins=((name, Pins(cols=2)),)))
    assert int(agreed.results[agreed.placed[1].key].columns) == 2
    with pytest.raises(ConfigError, match=f"{name}: cols pinned twice, 4 by a table and 2 by op_pins"):
        evaluate(graph, NPU2, GraphPins(columns=((name, 4),), op_pins=((name, Pins(cols=2)),)))


def test_onnx_transpose__heads_move_as_runs_and_size_one_axes_stay_a_view():
    model = _model([helper.make_node("Transpose", ["x"], ["a"], perm=[0, 2, 1, 3]),
                    helper.make_node("Transpose", ["a"], ["b"], perm=[1, 0, 2, 3]),
                    helper.make_node("Relu", ["b"], ["y"])], [1, 16, 4, 64], [4, 1, 16, 64])
    g = build_graph(model)
    assert g.op_types == ("Transpose", "Relu")  # the second moves only the batch axis of size 1
    heads = g.graph.ops[0]
    assert (heads.kind, heads.repeat, heads.m, heads.n, heads.k) == (TRANSPOSE, 1, 16, 4, 64)


def test_onnx_transpose__a_perm_it_cannot_express_is_refused_by_name():
    model = _model([helper.make_node("Transpose", ["x"], ["y"], perm=[2, 1, 0])], [2, 3, 4], [4, 3, 2])
    with pytest.raises(ConfigError, match=r"perm = \[2, 1, 0\] of a \[2, 3, 4\] tensor"):
        build_graph(model)
    odd = _model([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0, 2])], [4, 6, 3], [6, 4, 3])
    with pytest.raises(ConfigError, match=r"perm = \[1, 0, 2\].*16-byte"):
        build_graph(odd)


def test_run_transpose__the_command_prints_the_searched_mapping_and_refuses_a_bad_tile():
    from click.testing import CliRunner

    from fastsim.cli import main

    out = CliRunner().invoke(main, ["run", "transpose", "--m", "64", "--n", "96", "--batch", "3", "--json"])
    assert out.exit_code == 0, out.output
    s = json.loads(out.output)
    found = search_transpose(Transpose(64, 96, 1, 2), NPU2)
    assert s["mapping"]["label"] == found.best.label() and s["total_cycles"] == 3 * found.best_cycles
    assert s["search"]["optimal"] and s["ddr_bytes"] == 3 * 2 * 64 * 96 * 2 and "ops_per_s" not in s
    bad = CliRunner().invoke(main, ["run", "transpose", "--m", "64", "--n", "64", "--tile", "24,8"])
    assert bad.exit_code != 0 and "tm dividing m = 64" in bad.output


@settings(deadline=None, max_examples=12)
@given(m=st.sampled_from([8, 12, 24, 64, 100, 128]), n=st.sampled_from([8, 16, 40, 96, 256]),
       elem=st.sampled_from([1, 2, 4]), runs=st.booleans(), arch=st.sampled_from([NPU1, NPU2]))
def test_transpose_search__every_simulated_candidate_is_no_faster_than_its_bound(m, n, elem, runs, arch):
    found = search_transpose(Transpose(m, n, 16 // elem if runs else 1, elem), arch)
    simulated = [r for r in found.ranked if r.get("status") == "ok"]
    assert simulated and all(r["cycles"] >= r["lower_bound_cycles"] for r in simulated)
    assert found.optimal and found.best_cycles == min(r["cycles"] for r in simulated)


@settings(deadline=None, max_examples=15)
@given(m=st.sampled_from([8, 24, 64, 128, 512]), n=st.sampled_from([16, 40, 96, 256, 768]), elem=st.sampled_from([1, 2, 4]),
       arch=st.sampled_from([NPU1, NPU2]), pick=st.randoms(use_true_random=False))
def test_transpose_control__counted_from_the_mapping_equals_the_built_designs(m, n, elem, arch, pick):
    """The search bounds a candidate's control without building it (``control_counts_of``): the count
    must be the built design's exactly, so the bound is valid and as tight as it can be."""
    op = Transpose(m, n, 1, elem)
    legal = [mp for mp in candidates(op, arch, Pins()) if not plan(op, mp, arch).problems]
    for mp in pick.sample(legal, min(4, len(legal))):
        assert control_counts_of(mp) == control_counts(transpose_design(op, mp, arch))


def test_transpose_search__weighs_control_inside_a_graph_and_stays_exact():
    """With a control weight the answer minimizes cycles + weighted control, proven over the space:
    no legal candidate's combined bound is below the answer's objective, and a weight of 0 is the
    cycles-only answer."""
    op = Transpose(512, 768, 1, 2)
    plain, weighed = search_transpose(op, NPU2), search_transpose(op, NPU2, control_weight=1.0)
    assert plain.best_control_cycles == 0 and weighed.optimal
    objective = weighed.best_cycles + weighed.best_control_cycles
    assert weighed.best_control_cycles == layer_instructions(control_counts_of(weighed.best)) * NPU2.runtime_instruction_cycles
    assert all(r["objective_bound"] >= objective or r.get("status") == "ok" for r in weighed.ranked)
    assert plain.best_cycles <= weighed.best_cycles
