"""The mapping search is exact: its lower bounds never exceed what the engine simulates, so branch
and bound returns the best mapping of the whole space; no pinned sub-search beats it; a budget
stops it early and says how far from the best it may be."""
import random

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fastsim import NPU1, NPU2
from fastsim.lower import lower
from fastsim.validate import validate_design
from fastsim.mapping import Mapping, Matmul, Pins, matmul_design, search
from helpers import two_tiers

_search = __import__("fastsim.mapping.search", fromlist=["_Candidates"])  # the module, not the function
ARCHS = {"npu1": NPU1, "npu2": NPU2}
# the bounds must hold where the DDR binds: a slow DDR (small GEMMs DDR-bound on every mapping) and a
# dearer DDR run (each shim BD's run cost a larger share of its bytes), besides the presets
BOUND_ARCHS = {**ARCHS, "npu2-slow-ddr": NPU2.replace(name="slow-ddr", ddr_bytes_per_s=12 * NPU2.clock_hz),
               "npu1-dear-runs": NPU1.replace(name="dear-runs", ddr_run_overhead_s=1.2e-8)}
EXTENTS = st.sampled_from([1, 3, 8, 16, 31, 64, 100, 256, 384])


def _candidates(op, arch, pins):
    table = _search._Candidates(op, arch, pins)
    return table, np.nonzero(table.a["reason"] < 0)[0]


def _simulated(op, arch, table, indices):
    """The candidates simulated as the search simulates a batch (rows of one design share a run)."""
    rows = [table.row(i) for i in indices]
    return _search._MatmulSpace(op, arch, table, table.a["reason"] < 0).simulate(rows, None)


def _bounds_never_exceed_the_simulated_cycles(m, k, n, dtype, arch, a_on_chip, c_on_chip, static_b, row_major, seed,
                                              split, k_panel, c_buffers):
    """Branch and bound is exact only if every bound is valid: simulate the best-bounded
    candidates and a random sample of the rest, fused variants, static weights, row-major
    operands (a DDR run per tile row), the pinned-only 2dt split and K panels included, on
    DDR-bound arches too; and every legal candidate runs (none deadlocks)."""
    arch = BOUND_ARCHS[arch]
    op = Matmul(m, k, n, dtype, a_on_chip=a_on_chip, c_on_chip=c_on_chip, static_b=static_b, row_major_ddr=row_major)
    if static_b:
        pins = Pins(dataflow=("ws",), split=split, c_buffers=c_buffers)
    else:
        pins = Pins(split=split, k_panel=k_panel, c_buffers=c_buffers, dataflow=("os",) if k_panel else ())
    table, legal = _candidates(op, arch, pins)
    assume(len(legal))  # no legal candidate: nothing to bound
    rng = random.Random(seed)
    picked = sorted(set(table.best(table.a["reason"] < 0, 4)) | set(rng.sample(list(legal), min(8, len(legal)))))
    rows = _simulated(op, arch, table, picked)
    assert len(rows) >= min(4, len(legal))
    for r in rows:
        # the search simulates candidates unvalidated and validates only its answer: sound only if
        # every legal candidate's design is valid
        validate_design(r["design"])
        assert r["status"] == "ok", (r["mapping"].label(), r["status"])  # no legal candidate deadlocks
        assert r["cycles"] >= r["lower_bound_cycles"], (r["mapping"].label(), r["cycles"], r["plan"]["bounds"])


test_bounds__never_exceed_the_simulated_cycles, test_bounds__never_exceed_the_simulated_cycles__more = two_tiers(
    20, 40, m=EXTENTS, k=EXTENTS, n=EXTENTS, dtype=st.sampled_from(["bf16", "int8"]),
    arch=st.sampled_from(sorted(BOUND_ARCHS)), a_on_chip=st.booleans(), c_on_chip=st.booleans(),
    static_b=st.booleans(), row_major=st.booleans(), seed=st.integers(0, 2**16), split=st.sampled_from((None, "2dt")),
    k_panel=st.sampled_from((None, 2, 3, 8)), c_buffers=st.sampled_from((None, 1)))(_bounds_never_exceed_the_simulated_cycles)


@pytest.mark.parametrize("arch,op,pins", [
    (NPU1, Matmul(16, 32, 8, "int8"), Pins(cols=1, rows=1, dataflow=("os",), l2="b")),
    (NPU2, Matmul(24, 40, 12, "bf16"), Pins(cols=2, rows=1, dataflow=("is",), datapath="bf16", l2="")),
], ids=["npu1-int8", "npu2-bf16"])
def test_search__equals_exhaustive_simulation_of_a_small_space(arch, op, pins):
    table, legal = _candidates(op, arch, pins)
    assert 20 <= len(legal) <= 200  # small enough to simulate whole, large enough to mean something
    fastest = min(r["cycles"] for r in _simulated(op, arch, table, legal))
    found = search(op, arch, pins)
    assert found.optimal and found.best_cycles == fastest
    assert found.simulated < len(legal)  # the bounds pruned


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(m=EXTENTS, k=EXTENTS, n=EXTENTS, dtype=st.sampled_from(["bf16", "int8"]), arch=st.sampled_from(sorted(ARCHS)),
       pin=st.sampled_from(["tile", "l2", "cols", "dataflow", "split", "datapath", "k_split", "rows"]))
def test_search__unpinned_is_never_slower_than_a_pinned_one(m, k, n, dtype, arch, pin):
    """A pinned search explores a subset of the unpinned space, so it can never find better."""
    arch = ARCHS[arch]
    op = Matmul(m, k, n, dtype)
    free = search(op, arch)
    assert free.optimal
    best = free.best
    value = {"tile": best.tile, "l2": best.l2, "cols": best.cols, "dataflow": (best.dataflow,), "split": best.split,
             "datapath": best.datapath, "k_split": best.k_split, "rows": best.rows}[pin]
    # pin the answer's own choice, and a different one where the space has it
    others = {"tile": [(64, 64, 64)], "l2": ["", "b"], "cols": [1, 2], "dataflow": [("ws",), ("is",)],
              "split": ["n", "m"], "datapath": [d for d in arch.macs_per_cycle if d != best.datapath][:1],
              "k_split": [2], "rows": [1]}[pin]
    for v in [value, *others]:
        try:
            pinned = search(op, arch, Pins(**{pin: v}))
        except Exception as e:  # a pin this op cannot take (no legal mapping) is no comparison
            assert "mapping" in str(e) or "datapath" in str(e) or "fits" in str(e), e
            continue
        assert free.best_cycles <= pinned.best_cycles, (pin, v)


@pytest.mark.slow
def test_search__2048_cube_bf16_is_no_slower_than_its_pinned_tile():
    """The case that showed the old top-6 search was no search: pinning the tile found a faster
    mapping than leaving it free."""
    op = Matmul(2048, 2048, 2048, "bf16")
    free, pinned = search(op, NPU2), search(op, NPU2, Pins(tile=(64, 64, 64)))
    assert free.optimal and free.best_cycles <= pinned.best_cycles


@pytest.mark.slow
def test_budget__stops_early_and_reports_its_gap():
    op = Matmul(512, 512, 512, "int8")
    exact = search(op, NPU2)
    cut = search(op, NPU2, budget=8)
    assert exact.optimal and exact.gap == 0 and "optimal within the space" in exact.optimality()
    assert cut.simulated <= 8 + 1 and cut.best_cycles >= exact.best_cycles
    assert not cut.optimal and 0 < cut.gap < 1 and "within" in cut.optimality()
    # the gap is a true bound: the best of the space is no faster than it promises
    assert exact.best_cycles >= cut.best_cycles * (1 - cut.gap)
    with pytest.raises(Exception, match="budget"):
        search(op, NPU2, budget=0)


@pytest.mark.parametrize("same,as_2d", [
    (Mapping("os", "n", (16, 16, 16), 4, 2, 0, 2, "m", "", "int8", "equal"),  # one producer per column
     Mapping("os", "2d", (16, 16, 16), 4, 2, 0, 2, "m", "", "int8", "equal")),
    (Mapping("ws", "m", (16, 16, 16), 1, 2, 0, 1, "m", "", "int8", "equal"),  # one column
     Mapping("ws", "2d", (16, 16, 16), 1, 2, 0, 1, "m", "", "int8", "equal")),
])
def test_same_designs__are_simulated_once(same, as_2d):
    """Splits that divide nothing differently build the same design, table for table, so the
    search simulates one of them for both."""
    op = Matmul(64, 96, 48, "int8")
    assert _search._design_key(same) == as_2d
    a, b = lower(matmul_design(op, same, NPU2)), lower(matmul_design(op, as_2d, NPU2))
    for name in ("prm", "col_rates", "bds", "ch", "cons", "prog", "cores", "host", "lock_init"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    other = Mapping("os", "n", (16, 16, 16), 4, 4, 0, 2, "m", "", "int8", "equal")  # two producers per column
    assert _search._design_key(other) == other


@pytest.mark.slow
def test_llm__a_budgeted_answer_is_within_its_reported_saving_of_the_exact_one():
    """The LLM front end searches each op with a budget and reports what better mappings could
    save at most; the exact answer lies between the two (with program memory to spare: per-op
    choices do not yet weigh the program reloads their distinct kernels cause)."""
    from dataclasses import replace

    from fastsim.llm import LlmStudy, ModelConfig, simulate_llm
    from fastsim.llm.assemble import mapping_search
    from fastsim.mapping.dispatch import DispatchLimits

    roomy = DispatchLimits(program_memory_bytes=1 << 20)

    tiny = ModelConfig("tiny", 256, 2, 4, 2, 64, 512, 1024, True)
    for context in (64, 256):
        study = LlmStudy(model=tiny, regime="decode", context=context, search_budget=1)
        cut, exact = simulate_llm(study, limits=roomy), simulate_llm(replace(study, search_budget=None), limits=roomy)
        saving = mapping_search(cut)["most_seconds_better_mappings_save"]
        assert mapping_search(exact)["proven_best"] == mapping_search(exact)["matmul_ops"]
        assert float(cut.total_seconds) - saving <= float(exact.total_seconds) * (1 + 1e-12)
        assert float(exact.total_seconds) <= float(cut.total_seconds) * (1 + 1e-12)


def test_fused_a_on_one_column__runs_without_deadlock():
    """A on chip needs four sends per B task here: pushed one chunk each per round, the B queue
    filled before the A sends its tasks wait for were pushed, and the host blocked (a deadlock
    in about 2 % of the legal candidates of fused ops); pushed in proportion, it runs."""
    import fastsim

    op = Matmul(256, 256, 256, "bf16", a_on_chip=True)
    design = matmul_design(op, Mapping("os", "m", (4, 64, 8), 1, 1, 0, 1, "m", "", "bf16", "equal"), NPU2)
    assert str(fastsim.simulate(design, on_error="record").status.values[0]) == "ok"


@pytest.mark.parametrize("arch,op", [
    (NPU2, Matmul(512, 512, 512, "bf16")), (NPU1, Matmul(256, 1024, 512, "int8", a_on_chip=True)),
    (NPU2, Matmul(1, 2048, 2048, "bf16", c_on_chip=True)), (NPU2, Matmul(77, 300, 129, "bf16")),
    (NPU2, Matmul(1024, 256, 64, "int8")), (NPU1, Matmul(16, 1024, 8, "int8", static_b=True)),
], ids=["512-npu2", "256x1024x512-a-chip", "gemv-c-chip", "odd", "int8-npu2", "static-b"])
@pytest.mark.parametrize("random_picks", [10, pytest.param(40, marks=pytest.mark.slow)])
def test_bounds__hold_for_the_best_bounded_and_random_candidates_of_larger_ops(arch, op, random_picks):
    """The property test's extents stay small; the bounds matter most on larger ops, where the
    pipeline ends, buffer pacing and staggered fills are a smaller share: the 20 best-bounded
    candidates and ``random_picks`` random legal ones (10 in the default tier, 40 under -m slow),
    each simulated to its end."""
    pins = Pins(dataflow=("ws",)) if op.static_b else Pins()
    table, legal = _candidates(op, arch, pins)
    rng = random.Random(0)
    picked = sorted(set(table.best(table.a["reason"] < 0, 20)) | set(rng.sample(list(legal), min(random_picks, len(legal)))))
    for r in _simulated(op, arch, table, picked):
        assert r["status"] == "ok", (r["mapping"].label(), r["status"])
        assert r["cycles"] >= r["lower_bound_cycles"], (r["mapping"].label(), r["cycles"], r["plan"]["bounds"])


@pytest.mark.parametrize("op, arch, budget", [(Matmul(96, 160, 64, "int8"), NPU2, None),
                                              (Matmul(256, 512, 128, "bf16"), NPU2, 3)])
def test_search__without_its_report_lists_answers_the_same(op, arch, budget):
    """``report=False`` (a pointwise conv's GEMM search) skips planning the ranked and rejected rows
    it would list; the search and its answer are the same, the simulated rows still listed."""
    from fastsim.mapping.search import search as run

    full = run(op, arch, budget=budget)
    bare = run(op, arch, budget=budget, report=False)
    same = ("best", "best_cycles", "simulated", "legal", "enumerated", "rejected_by_reason",
            "unexplored_bound_cycles", "best_control_cycles")
    assert [getattr(bare, f) for f in same] == [getattr(full, f) for f in same]
    simulated = [r for r in full.ranked if r["simulated_cycles"] >= 0]
    assert sorted(map(repr, bare.ranked)) == sorted(map(repr, simulated)) and bare.rejected == []
    # a budgeted report lists candidates that did not run; an exact search may too (its report keeps
    # the best-bounded ones), but only ones whose bound proves them no better than its answer
    unrun = [r for r in full.ranked if r["simulated_cycles"] < 0]
    if budget is None:
        assert all(r["lower_bound_cycles"] >= full.best_cycles for r in unrun)
    else:
        assert unrun and len(full.ranked) > len(bare.ranked)


def _first_batch(op, arch, budget, top=6, keep=50):
    """The search's table and its first batch, as ``search._search`` chooses it."""
    table, _ = _candidates(op, arch, Pins())
    legal = [table.row(i) for i in table.best(table.a["reason"] < 0, max(keep, 8 * top))]
    return table, _search._distinct(legal, top) if budget is not None else legal[:top]


@pytest.mark.parametrize("op,arch,budget,leaders", [
    (Matmul(512, 512, 512, "bf16"), NPU1, None, 2),
    (Matmul(512, 512, 512, "bf16"), NPU1, 3, 2),
    (Matmul(128, 512, 256, "bf16"), NPU1, 5, 2),
], ids=["exact", "budget-3", "budget-5-left-unspent"])
def test_first_batch__a_candidate_its_bound_rules_out_is_not_simulated(op, arch, budget, leaders):
    """The first batch's rows from the first bounded more than ``LEAD_WITHIN`` above its best bound
    wait for the leaders' cycles and run only where their bound is no worse (they could still win
    or tie). Here the other four cannot: the answer is what simulating the whole batch finds, from
    the leaders' simulations alone. A budget counts the four as spent, so the same candidates run
    as when all six did: with 5, the 128x512x256 search (which goes past its first batch when
    exact) stops after the batch, not after three more."""
    found = search(op, arch, budget=budget)
    table, first = _first_batch(op, arch, budget)
    whole = _simulated(op, arch, table, [r["index"] for r in first])
    assert found.best_cycles == min(r["cycles"] for r in whole)
    labels = [r["mapping"].label() for r in first]
    assert found.best.label() in labels[:leaders]
    ruled_out = {r["label"] for r in found.ranked if r["lower_bound_cycles"] > found.best_cycles} & set(labels)
    assert ruled_out == set(labels[leaders:])  # the case this test is about
    assert found.simulated == leaders
    for r in found.ranked:
        if r["label"] in ruled_out:
            assert r["simulated_cycles"] == -1, r["label"]
    if budget == 5:
        assert not found.optimal and search(op, arch).simulated > leaders  # exact goes on
