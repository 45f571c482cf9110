"""Sweep points reuse a pass's graph, its placements and its fusion choice (cache regions
``graph``, ``placement`` and ``fusion``): the answers must be those of building, placing and
choosing everything afresh."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import xarray as xr

from fastsim import cache, settings
from fastsim.arch import NPU2
from fastsim.cache import CACHE
from fastsim.evaluation.evaluate import FUSION
from fastsim.evaluation.place import REGION as PLACEMENT
from fastsim.llm import LlmStudy, ModelConfig, simulate_llm
from fastsim.llm.forward import REGION as GRAPH, build_graph
from fastsim.llm.run import study_pass
from fastsim.mapping.dispatch import DispatchLimits
from fastsim.mapping.search import REGION as SEARCH

TINY = ModelConfig("tiny-reuse", 256, 4, 4, 2, 64, 512, 1024, True)
TIGHT = DispatchLimits(program_memory_bytes=4 * 2048 + 8 * 512)  # kernels shared: the judged path runs


def _points():
    return [LlmStudy(model=TINY, regime=regime, context=256, prompt=64, search_budget=1, cuts=cuts, noop=noop)
            for regime in ("decode", "prefill") for cuts in (None, (1,), (2,)) for noop in ((), ("norm",))]


def _run(points):
    return [simulate_llm(s, limits=TIGHT, movement=False, strict=False) for s in points]


def test_graph_and_placements__reused_across_points_give_the_answers_made_afresh(monkeypatch):
    """Points that differ in cuts and ablation share one graph object per pass, the same placed
    ops where the cuts do not decide them and one fusion choice per pass and ablation; every
    dataset equals one made with the three regions off."""
    CACHE.clear(GRAPH, PLACEMENT, FUSION)
    points = _points()
    hits, real_get = [], CACHE.get

    def counting_get(region, key, context=None):
        found = real_get(region, key, context)
        if region == FUSION and found is not None:
            hits.append(key)
        return found

    monkeypatch.setattr(CACHE, "get", counting_get)
    kept = _run(points)
    monkeypatch.undo()
    assert len(hits) == 4  # decode's second and third cuts reuse the first's choice, per ablation
    assert CACHE.size(GRAPH) == 2  # one graph per regime, every cut and ablation sharing it
    placed = CACHE.size(PLACEMENT)
    assert 0 < placed < 3 * len(points)  # unfused, grouped and chained per point, were nothing shared
    # decode's per ablation, whatever the cuts; prefill's tries pipelines, whose choice is not kept
    assert CACHE.size(FUSION) == 2
    monkeypatch.setattr(CACHE, "get", lambda region, key, context=None, get=CACHE.get:
                        None if region in (GRAPH, PLACEMENT, FUSION) else get(region, key, context))
    afresh = _run(points)
    for a, b in zip(kept, afresh):
        xr.testing.assert_identical(a, b)
        assert float(a.total_seconds) == float(b.total_seconds)


@pytest.mark.parametrize("regime", ["decode", "prefill"])
def test_graph__one_object_per_pass_with_one_operand_object_per_value(regime):
    """The kept graph is the same object for equal inputs, and its ops' operands are one object per
    value: op keys then compare by identity (a new build would still be equal)."""
    study = LlmStudy(model=TINY, regime=regime, context=256, prompt=64)
    first = simulate_llm(study, movement=False)
    a = build_graph(TINY, study.precision, study_pass(study, NPU2))
    b = build_graph(TINY, study.precision, study_pass(study, NPU2))
    assert a is b
    operands = [o for op in a.ops for o in (op.x, op.w, op.y)]
    assert len({id(o) for o in operands}) == len(set(operands))
    assert np.isfinite(float(first.total_seconds))


def test_dataset__per_op_columns_are_each_ops_own_result():
    """The Dataset's columns are built from distinct rows and taken per op by index: each op's
    entry is still its own result's (a wrong row would give a layer another op's numbers)."""
    from fastsim.evaluation.dataset import to_columns
    from fastsim.llm.run import _evaluated

    study = LlmStudy(model=TINY, regime="decode", context=256, search_budget=1, cuts=(1,), noop=("norm",))
    run = _evaluated(study, NPU2, TIGHT, False, None, False)
    result = run.dataset_args[0]
    col, _ = to_columns(*run.dataset_args)
    mine = [result.results[p.key] for p in result.placed]
    assert col["op_cycles"].tolist() == [r.cycles * p.op.repeat for r, p in zip(mine, result.placed)]
    assert col["op_columns"].tolist() == [r.columns for r in mine]
    assert col["mapping_gap"].tolist() == [r.search_gap for r in mine]
    assert col["macs"].tolist() == [p.op.macs for p in result.placed]
    assert col["bound_by"].tolist() == [r.bound_by for r in mine]
    assert col["dataflow"].tolist() == [r.dataflow for r in mine]
    kernels = [((0, 0, 0), "") if r.matmul_kernel is None else (tuple(r.matmul_kernel[1]), r.matmul_kernel[2])
               for r in mine]
    assert [tuple(t) for t in col["matmul_tile"].tolist()] == [k[0] for k in kernels]
    assert col["matmul_datapath"].tolist() == [k[1] for k in kernels]
    assert len({r.cycles for r in mine}) > 1  # ops of different results, so a wrong row would show


def test_search_answers__read_back_packed_give_the_answers_kept_live(monkeypatch):
    """Search answers dropped from the live tier come back packed (``cache.Cache``: their designs
    rebuilt); with one live entry, so that every answer read again is unpacked, every dataset
    equals the one made with answers kept live (the disk tier off: no answer read from disk)."""
    points = _points()
    unpacked, real_unpack = [], cache._unpack

    def counting_unpack(packed, codec, context):
        found = real_unpack(packed, codec, context)
        unpacked.append(found is not None)
        return found

    with settings.use(cache=False):
        CACHE.clear()
        live = _run(points)
        monkeypatch.setattr(cache, "_unpack", counting_unpack)
        monkeypatch.setitem(CACHE._regions, SEARCH, replace(CACHE._regions[SEARCH], size=1))
        CACHE.clear()
        packed = _run(points)
        CACHE.clear()
    assert len(unpacked) >= 10 and all(unpacked)
    for a, b in zip(live, packed):
        xr.testing.assert_identical(a, b)
        assert float(a.total_seconds) == float(b.total_seconds)
