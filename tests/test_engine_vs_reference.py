"""The kernels (with and without event skipping) agree with the reference model cycle for cycle."""
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fastsim import NPU2, Design, mm2s, s2mm
from fastsim.kernels import layout as L
from fastsim.kernels.engine import simulate_batch
from fastsim.lower import lower, pack
from reference_model import ReferenceSim
from strategies import designs, pipelines

LIMITS = dict(max_cycles=20000, livelock_cycles=600, max_events=512)


def run_kernel(lowered_list):
    batch = pack(lowered_list)
    simulate_batch(*batch.kernel_args())
    return batch.outputs


def assert_same(out, d, ref, lowered):
    res = out["res"][d]
    n_ch, n_k = len(lowered.channels), len(lowered.core_tiles)
    assert res[L.R_STATUS] == ref.status
    assert res[L.R_CYCLES] == ref.cycle
    assert out["ch_stats"][d, :n_ch].tolist() == [c.stats for c in ref.ch]
    assert out["ch_bytes"][d, :n_ch].tolist() == [c.bytes for c in ref.ch]
    assert out["core_stats"][d, :n_k].tolist() == [k.stats for k in ref.cores]
    n_ev = min(res[L.R_EVENTS], out["events"].shape[1])
    assert res[L.R_EVENTS] == len(ref.events)
    assert [tuple(e) for e in out["events"][d, :n_ev].tolist()] == ref.events[:n_ev]


any_design = st.one_of(designs(), pipelines())


def assert_matches_reference(design):
    """The kernel, with and without event skipping, against the reference model."""
    ref = ReferenceSim(lower(design, **LIMITS)).run()
    for skip in (True, False):
        lowered = lower(design, skip=skip, **LIMITS)
        assert_same(run_kernel([lowered]), 0, ref, lowered)


@given(any_design)
def test_engine__matches_reference_on_random_designs(design):
    assert_matches_reference(design)


@settings(max_examples=25)
@given(any_design, any_design, any_design)
def test_engine__batch_equals_designs_run_alone(a, b, c):
    lowered = [lower(x, **LIMITS) for x in (a, b, c)]
    out = run_kernel(lowered)
    for i, x in enumerate(lowered):
        assert_same(out, i, ReferenceSim(x).run(), x)


@given(any_design)
def test_engine__cycle_classes_add_up_to_total(design):
    lowered = lower(design, **LIMITS)
    out = run_kernel([lowered])
    assume(out["res"][0, L.R_STATUS] == L.ST_OK)  # a run stopped early has no total to add up to
    total = out["res"][0, L.R_CYCLES]
    n_ch, n_k = len(lowered.channels), len(lowered.core_tiles)
    assert (out["ch_stats"][0, :n_ch].sum(axis=1) == total).all()
    assert (out["core_stats"][0, :n_k].sum(axis=1) == total).all()


@pytest.mark.long
@settings(max_examples=3000)
@given(any_design)
def test_engine__matches_reference_many(design):
    assert_matches_reference(design)


@settings(max_examples=60)
@given(pipelines(), st.floats(0.05, 0.95))
def test_engine__a_prefix_reproduces_the_first_cycles(design, fraction):
    """Stopping at cycle t (max_cycles) gives exactly the events the full run had finished by t."""
    full = lower(design, **{**LIMITS, "max_events": 4096})
    out = run_kernel([full])
    total = int(out["res"][0, L.R_CYCLES])
    t = max(1, int(total * fraction))
    prefix = lower(design, max_cycles=t, livelock_cycles=LIMITS["livelock_cycles"], max_events=4096)
    pout = run_kernel([prefix])
    assert pout["res"][0, L.R_STATUS] == L.ST_CYCLE_LIMIT and pout["res"][0, L.R_CYCLES] == t
    # an event ending at t is recorded when cycle t begins, which a run stopped at t never simulates
    done = [tuple(e) for e in out["events"][0, :out["res"][0, L.R_EVENTS]].tolist() if e[4] < t]
    got = [tuple(e) for e in pout["events"][0, :pout["res"][0, L.R_EVENTS]].tolist()]
    assert sorted(got) == sorted(done)
    # channel cycle counts of the prefix add up to t
    n_ch = len(prefix.channels)
    assert (pout["ch_stats"][0, :n_ch].sum(axis=1) == t).all()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(any_design, st.sampled_from([0.0, 5e4, 1e5, 3e6])), min_size=2, max_size=6))
def test_engine__threads_give_identical_results(designs):
    """A batch spread over threads equals the batch run on one thread, array for array, whatever
    the designs' expected lengths (which order the threads' calls: ``simulation._tasks``)."""
    from dataclasses import replace

    from fastsim.simulation import run_batch

    lowered = [replace(lower(x, **LIMITS), expected_cycles=e) for x, e in designs]
    one, two = run_batch(lowered, threads=1, cache=False), run_batch(lowered, threads=2, cache=False)
    for key in one.outputs:
        assert (one.outputs[key] == two.outputs[key]).all()
    for a, b in zip(one.state, two.state):
        assert (a == b).all()


def test_engine__a_channel_asleep_on_a_lock_at_a_livelock_matches_the_reference():
    """The engine skips a channel whose acquire failed until its lock is released, and counts its
    waits when read. Here a static cyclic chain (no required work) releases the lock every round,
    waking the waiting channel below it, and the run ends in a livelock: an exit the random designs
    rarely reach with a channel asleep, and a woken channel whose waits must be counted as the
    reference counts them."""
    d = Design(NPU2, "asleep at a livelock")
    ct0, ct1 = d.compute(0, 0), d.compute(0, 1)
    lock = d.lock(ct0, 1)
    waiting, spinning = mm2s(ct0, 0), mm2s(ct0, 1)  # the waiting channel has the lower index
    d.route(waiting, s2mm(ct1, 0))
    d.route(spinning, s2mm(ct1, 1))
    src = d.buffer(ct0, 64)
    d.start_chain(waiting, d.chain(d.bd(waiting, src, 64, acquire=(lock, 2))))  # the lock never holds 2
    d.start_chain(spinning, d.chain(d.bd(spinning, src, 64, acquire=(lock, 1), release=(lock, 1)), cyclic=True))
    for i in (0, 1):
        d.start_chain(s2mm(ct1, i), d.chain(d.bd(s2mm(ct1, i), d.buffer(ct1, 64), 64), cyclic=True))
    lowered = lower(d, **LIMITS)
    out = run_kernel([lowered])
    assert out["res"][0, L.R_STATUS] == L.ST_LIVELOCK
    assert out["ch_stats"][0, 0, L.CC_LOCK_WAIT] > LIMITS["livelock_cycles"] // 2
    assert_matches_reference(d)
