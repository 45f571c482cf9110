"""An op kind's traits (``KindTraits`` on its ``Mapper``, gathered in ``mappers.KIND_TRAITS``) are
the one place fusion, dispatch planning and the per-op Dataset learn what a kind does with DDR,
program memory and its shim channels."""
from dataclasses import replace

import pytest

from fastsim.evaluation.dataset import _ddr_by_kind
from fastsim.graph import CONV, MATMUL, VECTOR
from fastsim.mapping.dispatch import DispatchLimits, program_bytes
from fastsim.mapping.fusion import find_groups, on_chip_flags
from fastsim.mapping.mappers import KIND_TRAITS, MAPPERS
from fastsim.mapping.op_mapper import KindTraits
from fastsim.llm import LlmStudy
from fastsim.llm.forward import build_graph
from fastsim.llm.run import study_pass
from fastsim.arch import NPU2


def test_traits__every_mapper_declares_them_and_they_are_checked():
    """A mapper cannot be built without its kind's traits (a required field), and traits outside
    their allowed values are refused when declared."""
    assert all(isinstance(m.traits, KindTraits) for m in MAPPERS.values())
    with pytest.raises(ValueError, match="kernel_size"):
        KindTraits(ddr_edges=False, kernel_size="huge", first_mm2s="x")
    with pytest.raises(ValueError, match="first_mm2s"):
        KindTraits(ddr_edges=False, kernel_size="vector", first_mm2s="c")


def test_traits__program_bytes_size_each_kernel_by_its_kinds_trait_and_refuse_an_untagged_one():
    limits = DispatchLimits()
    conv = program_bytes({("conv", "dense", "3x3", "int8")}, limits, KIND_TRAITS)
    assert conv == program_bytes({("matmul", (4, 64, 64), "bf16")}, limits, KIND_TRAITS)
    assert program_bytes({("vector", "norm")}, limits, KIND_TRAITS) == limits.core_loop_bytes + limits.vector_kernel_bytes
    small = {**KIND_TRAITS, CONV: replace(KIND_TRAITS[CONV], kernel_size="vector")}
    assert program_bytes({("conv", "dense", "3x3", "int8")}, limits, small) < conv
    with pytest.raises(ValueError, match="tagged by no op kind"):
        program_bytes({("no_such_kind", "x")}, limits, KIND_TRAITS)


def test_traits__ddr_attribution_follows_the_first_mm2s_operand(monkeypatch):
    study = LlmStudy(regime="decode", context=64)
    graph = build_graph(study.model_config(), study.precision, study_pass(study, NPU2))
    matmul = next(op for op in graph.ops if op.kind == MATMUL)
    shim = {"mm2s0": 100.0, "mm2s1": 10.0, "s2mm0": 1.0}
    assert _ddr_by_kind(shim, matmul)[matmul.w.kind] == 100.0
    monkeypatch.setitem(KIND_TRAITS, MATMUL, replace(KIND_TRAITS[MATMUL], first_mm2s="x"))
    assert _ddr_by_kind(shim, matmul)[matmul.x.kind] == 111.0  # X, its second MM2S and Y (activations too)


def test_traits__a_kind_with_ddr_edges_never_fuses_on_chip():
    study = LlmStudy(regime="prefill", prompt=64)
    graph = build_graph(study.model_config(), study.precision, study_pass(study, NPU2))
    groups = find_groups(graph)
    group_of = [None] * len(graph.ops)
    for g in groups:
        for i in g.ops:
            group_of[i] = g
    fused = on_chip_flags(graph, group_of, set(), KIND_TRAITS)
    assert any(f.x or f.y for f, op in zip(fused, graph.ops) if op.kind == VECTOR)
    in_ddr = {k: replace(t, ddr_edges=True) for k, t in KIND_TRAITS.items()}
    assert not any(f.x or f.y for f in on_chip_flags(graph, group_of, set(), in_ddr))
    assert KIND_TRAITS[CONV].ddr_edges
