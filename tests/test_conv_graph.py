"""Conv ops in the op graph: the evaluator maps them through the conv mapper, so a CNN runs like
any other graph (per-op results, dispatches, NOOP ablation), and each conv takes exactly the time
its own search found."""
import pytest

from fastsim import NPU1, NPU2
from fastsim.errors import ConfigError
from fastsim.evaluation import GraphPins, evaluate
from fastsim.graph import CONV, VECTOR, ConvGeometry, Op, OpGraph, Operand
from fastsim.mapping.conv import Conv2d
from fastsim.mapping.conv_search import search_conv

ACT8, W8 = Operand("activations", 1.0), Operand("weights", 1.0)
SLOWER_DDR = NPU2.replace(ddr_bytes_per_s=NPU2.ddr_bytes_per_s / 2)  # the part under background traffic


def _conv(name, layer, g: ConvGeometry) -> Op:
    m, k, n = g.gemm_extents()
    return Op(name, "conv", layer, CONV, m, k, n, ACT8, W8, ACT8, conv=g)


def _small_cnn() -> OpGraph:
    c1 = ConvGeometry(1, 16, 32, 32, 32, 3, 3, 1, 1)
    c2 = ConvGeometry(1, 32, 32, 32, 64, 1, 1)
    relu = Op("relu1", "elementwise", 1, VECTOR, c1.oh * c1.ow, 1, c1.k, ACT8, y=ACT8, vector_cycles_per_elem=0.0625)
    ops = (_conv("conv1", 0, c1), relu, _conv("conv2", 2, c2))
    return OpGraph(ops, ((), (0,), (1,)))


@pytest.mark.slow
@pytest.mark.parametrize("arch", [NPU1, NPU2], ids=["npu1", "npu2"])
def test_cnn__each_conv_takes_what_its_own_search_found(arch):
    from fastsim.mapping.placed import control_weight

    graph = _small_cnn()
    pins = GraphPins(compute_dtype="int8", search_budget=None)
    result = evaluate(graph, arch, pins)
    placed = {p.op.name: p for p in result.placed}
    by_name = {name: result.results[p.key] for name, p in placed.items()}
    for op in (graph.ops[0], graph.ops[2]):
        g = op.conv
        # its own search inside a graph weighs the control the pass charges it (docs/mapping.md)
        weight = control_weight(placed[op.name], pins)
        assert weight
        found = search_conv(Conv2d(g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.stride, g.padding, g.dilation, g.groups,
                                   "int8", "int8", name=op.name), arch, control_weight=weight)
        assert by_name[op.name].cycles == found.best_cycles
        assert by_name[op.name].dataflow == "conv"
    assert by_name["relu1"].cycles > 0


def test_cnn__noop_of_conv_keeps_its_data_movement():
    graph = _small_cnn()
    base = evaluate(graph, NPU2, GraphPins(compute_dtype="int8"))
    ablated = evaluate(graph, NPU2, GraphPins(compute_dtype="int8", noop=("conv",)))
    for p, q in zip(base.placed, ablated.placed):
        before, after = base.results[p.key], ablated.results[q.key]
        if p.op.kind == CONV:
            assert after.cycles <= before.cycles  # NOOP never slower
            assert after.level_bytes.tolist() == before.level_bytes.tolist()  # every byte still moves
            assert before.movement_cycles == after.cycles  # the twin is the NOOP design


def test_conv_op__needs_its_geometry_and_matching_extents():
    g = ConvGeometry(1, 16, 8, 8, 8, 3, 3)
    with pytest.raises(ConfigError, match="geometry"):
        OpGraph((Op("c", "conv", 0, CONV, *g.gemm_extents(), ACT8, W8, ACT8),), ((),))
    with pytest.raises(ConfigError, match="must be its geometry"):
        OpGraph((Op("c", "conv", 0, CONV, 1, 2, 3, ACT8, W8, ACT8, conv=g),), ((),))


def test_conv_op__pins_it_does_not_model_are_refused_by_name():
    graph = _small_cnn()
    for pins, word in ((GraphPins(compute_dtype="int8", columns=(("conv1", 2),)), "columns"),
                       (GraphPins(compute_dtype="int8", residency="static"), "residency static"),
                       (GraphPins(compute_dtype="int8", kernel_overhead_cycles=5), "kernel_overhead_cycles"),
                       (GraphPins(compute_dtype="int8", mapped_on=NPU2), "mapped_on is for matmul")):
        with pytest.raises(ConfigError, match=word):
            evaluate(graph, SLOWER_DDR, pins)
    # every refusal at once, and none turned into a search: a pointwise conv that would be refused
    # asks search_many for nothing
    from fastsim.mapping.mappers import search_request
    from fastsim.mapping.placed import Placed

    both = GraphPins(compute_dtype="int8", residency="static", mapped_on=NPU2)
    with pytest.raises(ConfigError, match="residency static(.|\n)*mapped_on"):
        evaluate(graph, SLOWER_DDR, both)
    assert search_request(Placed(graph.ops[2]), NPU2, GraphPins(compute_dtype="int8", residency="static")) is None
    assert search_request(Placed(graph.ops[2]), NPU2, GraphPins(compute_dtype="int8")) is not None


def test_cnn__a_chain_keeps_conv_edges_in_ddr():
    """Fusing a whole dispatch keeps activations on chip, except where a conv reads or writes
    them: its designs use DDR, so the chain must not count them as on chip."""
    from fastsim.mapping.fusion import chain_groups, on_chip_flags
    from fastsim.mapping.mappers import KIND_TRAITS

    graph = _small_cnn()
    group = chain_groups(graph, [0, 0, 0])[0]
    flags = on_chip_flags(graph, [group] * 3, set(), KIND_TRAITS)
    assert not any(f.x or f.y for f in flags)
