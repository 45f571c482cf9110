"""Kernel sharing (``fastsim.evaluation.sharing``): a dispatch's kernels are chosen for the dispatch,
not op by op, so the default run pays program reloads only where no shared set of kernels beats
them; with it, more work never runs faster, and the stated bound on what better mappings could
save holds against the whole-run search."""
import itertools

import numpy as np
import pytest
from dataclasses import replace

from hypothesis import assume, example, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from fastsim.arch import NPU2
from fastsim.llm import LlmStudy, ModelConfig, simulate_llm
from fastsim.llm.assemble import mapping_search
from fastsim.llm.model import Experts
from fastsim.evaluation.evaluate import HELD_CALLS_MAX
from fastsim.evaluation.sharing import shared_kernels
from fastsim.mapping.dispatch import DispatchLimits
from fastsim.studies.whole_run import whole_run_search

KERNELS = ("a", "b", "c", "d", "e")


@st.composite
def sharing_problems(draw):
    ops = draw(st.integers(1, 5))
    cost = {}
    for op in range(ops):
        runs_on = draw(st.lists(st.sampled_from(KERNELS), min_size=1, max_size=5, unique=True))
        cost[op] = {k: draw(st.integers(1, 50)) for k in runs_on}
    fixed = frozenset(draw(st.lists(st.sampled_from(KERNELS), max_size=2, unique=True)))
    return cost, fixed, draw(st.integers(-1, 4))


def _brute_force(cost, fixed, room):
    """The cheapest assignment of every op to one of its kernels using at most ``room`` kernels
    beside ``fixed`` (None: none)."""
    best = None
    for picks in itertools.product(*(sorted(cost[op]) for op in cost)):
        if room < 0 or len(set(picks) - fixed) > room:
            continue
        total = sum(cost[op][k] for op, k in zip(cost, picks))
        best = total if best is None else min(best, total)
    return best


@examples(max_examples=300, deadline=None, derandomize=True)
@given(sharing_problems())
def test_shared_kernels__is_the_cheapest_assignment_that_fits(problem):
    cost, fixed, room = problem
    picks = shared_kernels(cost, fixed, room)
    best = _brute_force(cost, fixed, room)
    if best is None:
        assert picks is None
        return
    assert picks is not None and set(picks) == set(cost)
    assert len(set(picks.values()) - fixed) <= room
    assert sum(cost[op][k] for op, k in picks.items()) == best


TINY = ModelConfig("tiny", 256, 2, 4, 2, 64, 512, 1024, True)
# room for three matmul kernels beside the core's loop and the vector kernels: the tiny model's
# per-op choices use four
TIGHT = DispatchLimits(program_memory_bytes=4 * 2048 + 8 * 512)
ROOMY = DispatchLimits(program_memory_bytes=1 << 20)


def _kernels(ds) -> set:
    return {(tuple(t), dp) for t, dp in zip(ds.matmul_tile.values, ds.matmul_datapath.values) if dp}


def test_default_run__shares_kernels_where_per_op_choices_overflow_program_memory():
    study = LlmStudy(model=TINY, regime="decode", context=256, search_budget=1)
    roomy = simulate_llm(study, limits=ROOMY)
    vector = sum(k.count("'vector'") for k in roomy.attrs["kernels"])
    # room for one matmul kernel fewer than the ops choose alone: op by op, they would overflow it
    room = len(_kernels(roomy)) - 1
    assert room >= 1
    limits = DispatchLimits(program_memory_bytes=ROOMY.core_loop_bytes + vector * ROOMY.vector_kernel_bytes
                            + room * ROOMY.matmul_kernel_bytes)
    tight = simulate_llm(study, limits=limits)
    assert float(tight.program_reload_seconds) == 0 and len(_kernels(tight)) <= room
    per_op_with_reloads = float(roomy.total_seconds) + NPU2.core_program_load_s * TINY.num_layers
    assert float(tight.total_seconds) < per_op_with_reloads
    shared = tight.kernel_shared.values
    assert shared.any() and not roomy.kernel_shared.values.any()
    # a shared op's gap is measured against its own whole space: the same lower bound as alone. Gaps
    # are of the search's objective (cycles + weighted control: these ops are set up after another
    # op of their dispatch, so the pass charges them op + control seconds)
    def lower_bound_s(ds):
        objective_s = ds.op_seconds.values[shared] + ds.op_control_seconds.values[shared]
        return objective_s * (1 - ds.mapping_gap.values[shared])

    assert np.allclose(lower_bound_s(tight), lower_bound_s(roomy), rtol=1e-12)


def test_default_run__keeps_reloads_when_no_shared_set_fits():
    # program memory for the vector kernels only: no matmul kernel fits, sharing or not
    study = LlmStudy(model=TINY, regime="decode", context=256, search_budget=1)
    bare = DispatchLimits(program_memory_bytes=1024 + 8 * 512)
    ds = simulate_llm(study, limits=bare)
    assert float(ds.program_reload_seconds) > 0 and not ds.kernel_shared.values.any()
    assert mapping_search(ds)["program_reload_seconds"] == float(ds.program_reload_seconds)


MOE = ModelConfig("tiny-moe", 256, 2, 4, 2, 64, 512, 1024, True, family="mixtral",
                  experts=Experts(count=4, per_token=2, ffn_size=256))
WINDOWED = ModelConfig("tiny-windowed", 256, 2, 4, 1, 64, 512, 1024, True, family="gemma3",
                       windows=(128, 0))
FAMILIES = st.sampled_from([TINY, MOE, WINDOWED])
FEW = examples(max_examples=5, deadline=None, derandomize=True)


def _step_s(model, **kw) -> float:
    """A pass under TIGHT program memory, where the tiny models' per-op kernels overflow it (op
    by op, 109 of the pairs of a context x batch grid of the three families ran faster with more
    work; 0 with kernel sharing)."""
    return float(simulate_llm(LlmStudy(model=model, **kw), limits=TIGHT, movement=False).total_seconds)


@pytest.mark.slow
@FEW
@given(FAMILIES, st.sampled_from([64, 200, 512]), st.sampled_from([1, 2, 3]), st.sampled_from([2, 3]))
@example(TINY, 64, 2, 3)  # op by op, batch 6 ran faster than batch 2 (its kernels fit)
def test_default_run__more_context_or_batch_never_runs_faster(model, context, batch, factor):
    step = _step_s(model, context=context, batch=batch)
    assert _step_s(model, context=context * factor, batch=batch) >= step
    assert _step_s(model, context=context, batch=batch * factor) >= step


@pytest.mark.slow
@FEW
@given(FAMILIES, st.sampled_from([16, 48]), st.sampled_from([2, 3]))
def test_default_run__a_longer_prompt_or_a_deeper_model_never_runs_faster(model, prompt, factor):
    assert (_step_s(model, regime="prefill", prompt=prompt * factor)
            >= _step_s(model, regime="prefill", prompt=prompt))
    assume(not model.windows)  # one window per layer: a deeper model needs its own windows
    deeper = replace(model, num_layers=model.num_layers * factor)
    assert _step_s(deeper, context=prompt) >= _step_s(model, context=prompt)


@pytest.mark.slow
@examples(max_examples=4, deadline=None, derandomize=True)
@given(FAMILIES, st.sampled_from([64, 256]), st.sampled_from([1, 4]),
       st.sampled_from([TIGHT, DispatchLimits(program_memory_bytes=6 * 2048 + 8 * 512)]))
def test_stated_bound__holds_against_the_whole_run_search(model, context, batch, limits):
    study = LlmStudy(model=model, context=context, batch=batch)
    seed = simulate_llm(study, limits=limits)
    bound = mapping_search(seed)["most_seconds_better_mappings_save"]
    found = whole_run_search(study, limits=limits, seed=seed)
    assert found.gain_seconds <= bound + 1e-15
    # and against every op's mapping proven the best of its space (what the budget's gaps bound)
    exact = simulate_llm(replace(study, search_budget=None), limits=limits)
    assert float(seed.total_seconds) - float(exact.total_seconds) <= bound + 1e-15


@pytest.mark.slow
@examples(max_examples=25, deadline=None, derandomize=True)
@given(st.sampled_from([1, 4, 16, 48]), st.sampled_from([64, 256, 1000]), st.sampled_from([32, 128, 512]),
       st.sampled_from([None, (1, 64, 16), (4, 64, 8), (2, 128, 16)]), st.sampled_from([None, "bf16", "bfp16"]))
def test_lower_bound_cycles__no_search_of_the_space_answers_faster(m, k, n, tile, datapath):
    from fastsim.arch import NPU2
    from fastsim.errors import ConfigError
    from fastsim.mapping import Matmul, Pins, search
    from fastsim.mapping.search import lower_bound_cycles

    op, pins = Matmul(m, k, n, "bf16"), Pins(tile=tile, datapath=datapath)
    bound = lower_bound_cycles(op, NPU2, pins)
    try:
        found = search(op, NPU2, pins, top=1, keep=0, budget=1)
    except ConfigError:
        assert bound == float("inf")
        return
    assert 0 < bound <= found.best_cycles


def test_shared_in__holds_no_op_to_a_kernel_of_many_more_calls():
    # HELD_CALLS_MAX: a held op's tile makes at most that many times the calls of its own choice
    from fastsim.arch import NPU2
    from fastsim.llm.run import build_graph, study_pass

    # a large vocabulary: unlimited, the LM head would be held to a kernel of 8x its own calls
    model = replace(TINY, vocab_size=32768)
    study = LlmStudy(model=model, regime="decode", context=256, search_budget=1)
    roomy, tight = simulate_llm(study, limits=ROOMY), simulate_llm(study, limits=TIGHT)
    graph = build_graph(model, study.precision, study_pass(study, NPU2))
    shape = {(op.name, op.layer): (op.m, op.k, op.n) for op in graph.ops}
    held = np.flatnonzero(tight.kernel_shared.values)
    assert held.size
    for i in held:
        m, k, n = shape[(str(tight.op_name.values[i]), int(tight.layer.values[i]))]

        def calls(tile):
            return -(-m // int(tile[0])) * -(-k // int(tile[1])) * -(-n // int(tile[2]))
        assert calls(tight.matmul_tile.values[i]) <= HELD_CALLS_MAX * calls(roomy.matmul_tile.values[i])


def test_shared_in__kept_by_what_decides_it(monkeypatch):
    """A dispatch's shared kernels are kept by its ops, reloads, pins and ablation, and what the
    plain run makes of an ablated run's ops by those ops, cuts and pins (``judged``): another cut or
    ablation of the same model meets the same dispatches again and reads them back, with the same
    answers as deciding every dispatch afresh."""
    from fastsim.cache import CACHE
    import importlib

    ev = importlib.import_module("fastsim.evaluation.evaluate")  # the module (the package exports its function)

    deep = replace(TINY, name="tiny-deep", num_layers=4)
    studies = [LlmStudy(model=deep, regime="decode", context=256, search_budget=1, cuts=cuts, noop=noop)
               for cuts in ((1,), (1, 2), (2,), ()) for noop in ((), ("softmax",), ("norm",))]
    decided, judged = [], []
    real, real_judged = ev.Evaluation._shared_in, ev.Evaluation._judged
    monkeypatch.setattr(ev.Evaluation, "_shared_in", lambda self, *a: decided.append(1) or real(self, *a))
    monkeypatch.setattr(ev.Evaluation, "_judged", lambda self, *a: judged.append(1) or real_judged(self, *a))

    def runs():
        return [simulate_llm(s, limits=TIGHT, movement=False, strict=False) for s in studies]

    kept = runs()
    asked, asked_judged = len(decided), len(judged)
    decided.clear()
    judged.clear()
    monkeypatch.setattr(CACHE, "get", lambda region, key, context=None, get=CACHE.get:
                        None if region in (ev.SHARING, ev.JUDGED) else get(region, key, context))
    afresh = runs()
    assert asked < len(decided)  # layers repeat: kept dispatches were not decided again
    assert 0 < asked_judged < len(judged)  # an ablated run of the same ops and cuts was not judged again
    assert any(ds.kernel_shared.values.any() for ds in kept)
    monkeypatch.undo()
    numbering = ev._Numbering(25)  # numbering starts over during the runs
    monkeypatch.setattr(ev, "_NUMBERS", numbering)
    CACHE.clear(ev.SHARING, ev.JUDGED)
    try:
        renumbered = runs()
    finally:  # its keys are of this test's numbering: no later test may read them
        CACHE.clear(ev.SHARING, ev.JUDGED)
    assert numbering.starts >= 2
    for a, b, c in zip(kept, afresh, renumbered):
        for x in (b, c):
            assert float(a.total_seconds) == float(x.total_seconds)
            np.testing.assert_array_equal(a.kernel_shared.values, x.kernel_shared.values)
            np.testing.assert_array_equal(a.matmul_tile.values, x.matmul_tile.values)
