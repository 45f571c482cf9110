"""A vector op's column count is searched like a mapping: the bound it prunes by is a lower bound
of every design's cycles, and the answer is the least objective of all the column counts."""
from dataclasses import replace

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from fastsim.arch import NPU1, NPU2
from fastsim.mapping.branch_bound import objective
from fastsim.mapping.dispatch import ControlWeight, control_counts
from fastsim.mapping.vector import VectorOp, lower_bound_cycles, used_columns, vector_design
from fastsim.mapping.vector_search import column_choices, search_vector_columns
from fastsim.simulation import simulate

OPS = st.builds(VectorOp, m=st.integers(1, 300), n=st.integers(1, 3000), x_bytes=st.sampled_from([1.0, 2.0, 4.0]),
                y_bytes=st.sampled_from([1.0, 2.0]), vector_cycles_per_elem=st.sampled_from([0.0, 0.05, 0.5, 3.0]),
                x_inputs=st.integers(1, 3), stream_split=st.sampled_from(["equal", "proportional"]))


@examples(max_examples=25, deadline=None, derandomize=True)
@given(OPS, st.sampled_from([NPU1, NPU2]), st.sampled_from([0.0, 1.0, 0.25, ControlWeight(0.25, 0.75)]))
def test_vector_columns__bound_holds_and_the_answer_is_the_least_objective(op, arch, weight):
    designs = {c: vector_design(replace(op, cols=c), arch) for c in column_choices(arch)}
    ds = simulate(list(designs.values()))
    cycles = dict(zip(designs, (int(x) for x in ds.total_cycles.values)))
    one_column = control_counts(vector_design(replace(op, cols=1), arch))
    for c in designs:
        assert lower_bound_cycles(replace(op, cols=c), arch) <= cycles[c]
        # the search counts control without building: one column's, times the columns used
        used = used_columns(replace(op, cols=c), arch)
        assert control_counts(designs[c]) == tuple(n * used for n in one_column)
    score = {c: objective(cycles[c], control_counts(designs[c]), arch, weight) for c in designs}
    chosen = search_vector_columns(op, arch, weight)
    assert score[chosen] == min(score.values())
    assert chosen == max(c for c in designs if score[c] == score[chosen])  # ties keep more columns


def test_vector_columns__a_tiny_op_inside_a_graph_takes_fewer_columns():
    # a decode norm: its 8-column set-up outweighs its data, so fewer columns win inside a graph;
    # standalone (weight 0) the fastest design alone decides
    norm = VectorOp(m=1, n=2048, vector_cycles_per_elem=0.5)
    assert search_vector_columns(norm, NPU2, 1.0) < NPU2.columns


def test_lowered_vector_design__ops_differing_in_name_share_tables_not_designs():
    from fastsim.cache import clear
    from fastsim.mapping.vector import lowered_vector_design

    clear()
    attn = VectorOp(m=4, n=512, vector_cycles_per_elem=0.5, name="attn_norm")
    design_a, lowered_a = lowered_vector_design(attn, NPU2)
    design_f, lowered_f = lowered_vector_design(replace(attn, name="ffn_norm"), NPU2)
    assert (design_a.name, design_f.name) == ("attn_norm", "ffn_norm")
    assert lowered_a.design is design_a and lowered_f.design is design_f
    assert lowered_f.bds is lowered_a.bds  # lowered once
    one, two = simulate([lowered_a.design, lowered_f.design]).total_cycles.values
    assert one == two


def test_vector_columns__the_answer_lowers_nothing_again(monkeypatch):
    """The search lowers its candidates as the op's own design is lowered, kept by shape: the op
    it answers for, whatever its name (an op named "" included), reuses the answer's tables."""
    from fastsim import cache
    from fastsim.mapping import vector

    cache.clear()
    op = VectorOp(m=64, n=2048, x_bytes=2.0, y_bytes=2.0, vector_cycles_per_elem=0.5)
    lowered = []
    real = vector.lower
    monkeypatch.setattr(vector, "lower", lambda d, **kw: lowered.append(d.name) or real(d, **kw))
    cols = search_vector_columns(op, NPU2, 1.0)
    searched = len(lowered)
    for name in ("", "norm"):
        design, tables = vector.lowered_vector_design(replace(op, name=name, cols=cols), NPU2)
        assert design.name == name and tables.design is design
    assert searched >= 1 and len(lowered) == searched
