"""An op kind's traits (``graph.KIND_TRAITS``) are the one place fusion, dispatch planning and
the per-op Dataset learn what a kind does with DDR, program memory and its shim channels."""
from dataclasses import replace

import pytest

import fastsim.graph.ops as ops
from fastsim.evaluation.dataset import _ddr_by_kind
from fastsim.graph import CONV, KIND_TRAITS, MATMUL, OP_KINDS, VECTOR
from fastsim.mapping.dispatch import DispatchLimits, program_bytes
from fastsim.mapping.fusion import find_groups, on_chip_flags
from fastsim.llm import LlmStudy
from fastsim.llm.forward import build_graph
from fastsim.llm.run import study_pass
from fastsim.arch import NPU2


def test_traits__a_kind_without_traits_or_traits_without_a_kind_fail_the_import_check():
    ops.check_kind_traits(OP_KINDS, KIND_TRAITS)
    with pytest.raises(ImportError, match="'no_such_kind'"):
        ops.check_kind_traits((*OP_KINDS, "no_such_kind"), KIND_TRAITS)
    with pytest.raises(ImportError, match="'conv'"):
        ops.check_kind_traits(OP_KINDS, {k: v for k, v in KIND_TRAITS.items() if k != CONV})


def test_traits__program_bytes_size_each_kernel_by_its_kinds_trait_and_refuse_an_untagged_one():
    limits = DispatchLimits()
    assert program_bytes({("conv", "dense", "3x3", "int8")}, limits) == program_bytes({("matmul", (4, 64, 64), "bf16")}, limits)
    assert program_bytes({("vector", "norm")}, limits) == limits.core_loop_bytes + limits.vector_kernel_bytes
    with pytest.raises(ValueError, match="tagged by no op kind"):
        program_bytes({("no_such_kind", "x")}, limits)


def test_traits__ddr_attribution_follows_the_first_mm2s_operand(monkeypatch):
    study = LlmStudy(regime="decode", context=64)
    graph = build_graph(study.model_config(), study.precision, study_pass(study, NPU2))
    matmul = next(op for op in graph.ops if op.kind == MATMUL)
    shim = {"mm2s0": 100.0, "mm2s1": 10.0, "s2mm0": 1.0}
    assert _ddr_by_kind(shim, matmul)[matmul.w.kind] == 100.0
    monkeypatch.setitem(KIND_TRAITS, MATMUL, replace(KIND_TRAITS[MATMUL], first_mm2s="x"))
    assert _ddr_by_kind(shim, matmul)[matmul.x.kind] == 111.0  # X, its second MM2S and Y (activations too)


def test_traits__a_kind_with_ddr_edges_never_fuses_on_chip(monkeypatch):
    study = LlmStudy(regime="prefill", prompt=64)
    graph = build_graph(study.model_config(), study.precision, study_pass(study, NPU2))
    groups = find_groups(graph)
    group_of = [None] * len(graph.ops)
    for g in groups:
        for i in g.ops:
            group_of[i] = g
    fused = on_chip_flags(graph, group_of, set())
    assert any(f.x or f.y for f, op in zip(fused, graph.ops) if op.kind == VECTOR)
    monkeypatch.setitem(KIND_TRAITS, VECTOR, replace(KIND_TRAITS[VECTOR], ddr_edges=True))
    monkeypatch.setitem(KIND_TRAITS, MATMUL, replace(KIND_TRAITS[MATMUL], ddr_edges=True))
    assert not any(f.x or f.y for f in on_chip_flags(graph, group_of, set()))
    assert KIND_TRAITS is ops.KIND_TRAITS and KIND_TRAITS[CONV].ddr_edges
