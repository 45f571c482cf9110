"""One record per idea in the mapper: one ``Pins`` (what a user fixes about a mapping, every op
kind) and one ``SearchResult`` (what an exact search answers, every op kind)."""
import ast
from pathlib import Path

import pytest

from fastsim.arch import NPU2
from fastsim.errors import ConfigError
from fastsim.mapping.conv import Conv2d
from fastsim.mapping.conv_search import search_conv
from fastsim.mapping.mappers import MAPPERS
from fastsim.mapping.pins import Pins
from fastsim.mapping.search import search
from fastsim.mapping.search_result import SearchResult
from fastsim.mapping.space import Matmul

MAPPING = Path(__file__).resolve().parents[1] / "fastsim" / "mapping"


def classes_named(suffix: str) -> list[str]:
    return sorted(f"{path.name}:{node.name}" for path in MAPPING.glob("*.py")
                  for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)
                  and node.name.endswith(suffix))


def test_one_pins_and_one_search_result_type_in_the_mapper():
    assert classes_named("Pins") == ["pins.py:Pins"]
    assert classes_named("SearchResult") == ["search_result.py:SearchResult"]


def test_both_searches_answer_with_the_one_result_type():
    gemm = search(Matmul(64, 64, 64, "bf16"), NPU2, budget=1)
    conv = search_conv(Conv2d(1, 8, 8, 8, 8, 3, 3, dtype="bf16"), NPU2, budget=1)
    pointwise = search_conv(Conv2d(1, 16, 8, 8, 16, 1, 1, dtype="bf16"), NPU2, budget=1)
    assert all(type(r) is SearchResult for r in (gemm, conv, pointwise))
    assert (gemm.kind, conv.kind, pointwise.kind) == ("matmul", "dense", "pointwise")
    assert pointwise.gemm is not None and pointwise.optimality().startswith("pointwise: the GEMM mapper's answer")


@pytest.mark.parametrize("pins, kind, named", [(Pins(rpc=2), "matmul", "rpc"), (Pins(weights="oc"), "matmul", "weights"),
                                               (Pins(tile=(8, 8, 8)), "conv", "tile"),
                                               (Pins(dataflow=("ws",)), "conv", "dataflow"),
                                               (Pins(k_split=2), "transpose", "k_split")])
def test_a_pin_of_another_op_kind_is_refused_by_name(pins, kind, named):
    with pytest.raises(ConfigError, match=f"{named}.*not a {kind} pin: this op is a {kind}"):
        MAPPERS[kind].pins.validate(pins, NPU2)


def test_each_kind_declares_its_pins_and_every_pin_belongs_to_a_kind():
    """The kinds' declarations (``PinRules``) cover the one ``Pins`` record, and a kind takes only
    fields of it: a pin no kind takes could be set and never read."""
    from dataclasses import fields

    declared = {name for m in MAPPERS.values() if m.pins is not None for name in m.pins.names}
    assert declared == {f.name for f in fields(Pins)}


def test_conv_rejections_are_counted_by_a_typed_limit_not_by_text():
    from fastsim.mapping.conv_plan import Limit

    found = search_conv(Conv2d(1, 256, 56, 56, 256, 3, 3, padding=1, dtype="bf16"), NPU2, budget=1)
    assert found.rejected_by_reason and set(found.rejected_by_reason) <= {x.value for x in Limit}


def test_an_op_kind_without_a_mapper_is_refused_not_mapped_as_a_gemm():
    """An op of a kind no mapper declares fails loudly at the one door instead of running the
    matmul search on its m, k, n: by name at ``evaluate`` (a graph takes any kind's name), and at
    each of the door's calls."""
    from fastsim.evaluation import GraphPins
    from fastsim.graph import Op, Operand
    from fastsim.mapping.mappers import op_design, op_search, search_request
    from fastsim.mapping.placed import Placed

    from fastsim.evaluation import evaluate
    from fastsim.graph import OpGraph

    op = Op("t", "elementwise", 0, "no_such_kind", 64, 1, 64, Operand("activations", 2.0))
    for call in (op_design, op_search, search_request):
        with pytest.raises(ValueError, match="op kind 'no_such_kind' has no mapper"):
            call(Placed(op), NPU2, GraphPins())
    with pytest.raises(ConfigError, match=rf"t: op kind 'no_such_kind' is not modelled \(one of {', '.join(MAPPERS)}\)"):
        evaluate(OpGraph((op,), ((),), batch=1, tokens=64), NPU2)


def test_the_registry_finds_each_kinds_mapper_in_its_module_and_refuses_a_kind_declared_twice():
    """Mappers are found, not listed: every module of ``fastsim/mapping/`` whose source assigns a
    top-level ``MAPPER`` (read here with ``ast``, not by the registry's imports) gives its mapper to
    ``MAPPERS`` under its kind, and two modules declaring one kind fail the import."""
    import importlib
    import types

    from fastsim.mapping import matmul_op
    from fastsim.mapping.mappers import declared_mappers

    folder = Path(__file__).resolve().parents[1] / "fastsim" / "mapping"
    from test_layers import declares_mapper, import_edges

    declaring = [f.stem for f in sorted(folder.glob("*.py")) if declares_mapper(f.read_text())]
    assert {"matmul_op", "conv_search", "vector_search", "transpose"} <= set(declaring)
    # the layer and cycle checks see the registry's discovered imports as edges
    assert {("fastsim.mapping.mappers", f"fastsim.mapping.{m}") for m in declaring} <= import_edges()
    found = {importlib.import_module(f"fastsim.mapping.{m}").MAPPER for m in declaring}
    assert set(MAPPERS.values()) == found and all(k == m.kind for k, m in MAPPERS.items())
    twin = types.SimpleNamespace(__name__="fastsim.mapping.twin", MAPPER=matmul_op.MAPPER)
    assert declared_mappers([matmul_op, types.SimpleNamespace(__name__="x")]) == {"matmul": matmul_op.MAPPER}
    with pytest.raises(ImportError, match="'matmul': declared by two mappers, fastsim.mapping.matmul_op and "
                                          "fastsim.mapping.twin"):
        declared_mappers([matmul_op, twin])


def test_an_op_class_outside_the_known_classes_is_refused_by_the_graph():
    """Reports, ablations and sweeps group ops by class: an unknown class would vanish from them."""
    from fastsim.graph import Op, OpGraph, Operand

    op = Op("t", "teleport", 0, "vector", 64, 1, 64, Operand("activations", 2.0))
    with pytest.raises(ConfigError, match="op_class = 'teleport'"):
        OpGraph((op,), ((),), batch=1, tokens=64)


def test_the_conv_geometry_is_one_record_for_the_graph_and_the_mapper():
    """The mapper's ``Conv2d`` is the graph's ``ConvGeometry`` plus how it computes: no geometry
    field or formula (oh, ow) of its own."""
    from dataclasses import fields

    from fastsim.graph import ConvGeometry

    geometry = [f.name for f in fields(ConvGeometry)]
    assert issubclass(Conv2d, ConvGeometry)
    assert [f.name for f in fields(Conv2d)] == geometry + ["dtype", "out_dtype", "kernel_efficiency", "name"]
    assert "oh" not in vars(Conv2d) and "ow" not in vars(Conv2d)
