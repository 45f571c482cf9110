"""Sweep points reuse a pass's graph, its placements and its fusion choice (cache regions
``graph``, ``placement`` and ``fusion``): the answers must be those of building, placing and
choosing everything afresh."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from fastsim.arch import NPU2
from fastsim.cache import CACHE
from fastsim.evaluation.evaluate import FUSION
from fastsim.evaluation.place import REGION as PLACEMENT
from fastsim.llm import LlmStudy, ModelConfig, simulate_llm
from fastsim.llm.forward import REGION as GRAPH, build_graph
from fastsim.llm.run import study_pass
from fastsim.mapping.dispatch import DispatchLimits

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
    kept = _run(points)
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
