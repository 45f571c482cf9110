"""Steady-state fast-forward is exact: jumping whole periods gives the cycles, counters, statistics
and events that stepping gives (kernels.fastforward)."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fastsim
from fastsim.kernels import layout as L
from fastsim.kernels.engine import simulate_batch
from fastsim.lower import lower, pack
from fastsim.mapping import Mapping, Matmul, matmul_design
from helpers import two_tiers
from reference_model import ReferenceSim
from strategies import pipelines, small_arch
from test_engine_vs_reference import assert_same

LIMITS = dict(max_cycles=200_000, livelock_cycles=50_000)


def run(design, **options):
    batch = pack([lower(design, **{**LIMITS, **options})])
    simulate_batch(*batch.kernel_args())
    return batch.outputs


def assert_outputs_equal(a, b):
    """Every output but the count of stepped cycles (what fast-forward saves) is identical."""
    for key in a:
        x, y = a[key], b[key]
        if key == "res":
            keep = [L.R_STATUS, L.R_CYCLES, L.R_DETAIL, L.R_EVENTS]
            x, y = x[:, keep], y[:, keep]
        np.testing.assert_array_equal(x, y, err_msg=key)


@st.composite
def matmul_designs(draw):
    """A small matmul on a random mapping (dataflow, tile, columns, rows, L2 residency) of a
    random small array: tiled loops over many k-steps and tiles, the periodic case."""
    arch = draw(small_arch()).replace(columns=2, compute_rows=2)
    m, k, n = (draw(st.sampled_from([16, 32, 64])) * draw(st.integers(1, 3)) for _ in range(3))
    tile = tuple(draw(st.sampled_from([8, 16])) for _ in range(3))
    mapping = Mapping(draw(st.sampled_from(["os", "ws", "is"])), "2d", tile,
                      draw(st.integers(1, 2)), draw(st.integers(1, 2)),
                      l2=draw(st.sampled_from(["", "a", "b"])))
    try:
        return matmul_design(Matmul(m, k, n, "bf16"), mapping, arch)
    except fastsim.ConfigError:
        return None


@st.composite
def vector_designs(draw):
    """A streamed element-wise op: the host pushes every tile's tasks, so the host program itself
    repeats (fast-forward must check it reads the same rows shifted)."""
    from fastsim.mapping.vector import VectorOp, vector_design

    arch = draw(small_arch())
    op = VectorOp(m=draw(st.integers(1, 512)), n=draw(st.integers(4, 2048)),
                  vector_cycles_per_elem=draw(st.sampled_from([0.0, 0.25, 1.0, 3.0])),
                  x_inputs=draw(st.integers(1, 2)), cols=draw(st.integers(1, 2)),
                  stream_split=draw(st.sampled_from(["equal", "proportional"])))
    try:
        return vector_design(op, arch)
    except fastsim.ConfigError:
        return None


def assert_jumps_exact(design, traced: bool):
    """Fast-forward, with and without skipping, gives what stepping every cycle gives (a drawn
    mapping the array cannot hold, None, is not an example)."""
    assume(design is not None)
    events = 20_000 if traced else 0
    stepped = run(design, skip=False, fast_forward=False, max_events=events)
    for skip in (True, False):
        assert_outputs_equal(run(design, skip=skip, fast_forward=True, max_events=events), stepped)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(vector_designs(), st.booleans())
def test_fast_forward__matches_stepping_on_random_vector_ops(design, traced):
    assert_jumps_exact(design, traced)


def _long_pipelines_match_reference(design):
    lowered = lower(design, **LIMITS, max_events=4096)
    ref = ReferenceSim(lowered).run()
    for skip in (True, False):
        out = run(design, skip=skip, fast_forward=True, max_events=4096)
        assert_same(out, 0, ref, lower(design, **LIMITS, max_events=4096))


test_fast_forward__matches_reference_on_long_pipelines, test_fast_forward__matches_reference_on_long_pipelines__more = (
    two_tiers(15, 40, pipelines(max_objects=40))(_long_pipelines_match_reference))


@settings(max_examples=40, deadline=None)
@given(matmul_designs(), st.booleans())
def test_fast_forward__matches_stepping_on_random_matmuls(design, traced):
    assert_jumps_exact(design, traced)


@st.composite
def k_split_designs(draw):
    """A matmul whose K is split over 2 cores (partial sums joined), over several C tiles in both
    dimensions on a random small array: the k-loop's period restarts after every C tile, the
    tile-boundary state of the 2048^3 search's slow candidates (bench/ff_drift.py)."""
    arch = draw(small_arch()).replace(columns=2, compute_rows=2)
    tile = tuple(draw(st.sampled_from([8, 16])) for _ in range(3))
    m, n = (tile[i] * draw(st.integers(2, 4)) for i in (0, 2))
    k = tile[1] * 2 * draw(st.integers(6, 12))
    mapping = Mapping(draw(st.sampled_from(["os", "ws", "is"])), "2d", tile, draw(st.integers(1, 2)),
                      2, k_split=2, order=draw(st.sampled_from(["m", "n"])), l2=draw(st.sampled_from(["", "a", "b"])))
    try:
        return matmul_design(Matmul(m, k, n, "bf16"), mapping, arch)
    except fastsim.ConfigError:
        return None


@settings(max_examples=25, deadline=None)
@given(k_split_designs(), st.booleans())
def test_fast_forward__matches_stepping_on_k_split_matmuls_over_many_tiles(design, traced):
    assume(design is not None)
    assert_jumps_exact(design, traced)


def test_fast_forward__diagnostic_log_changes_nothing_and_counts_every_jump():
    """The log past the scratch (kernels.fastforward._log) records each snapshot's cycle, boundary
    and jump: the jumps add up to the cycles fast-forwarded, and the run's outputs are unchanged."""
    from fastsim.kernels import fastforward as F

    batch = pack([lower(_long_pipeline(), **LIMITS)])
    args = list(batch.kernel_args())
    base = args[-1].shape[0]
    ff = np.zeros(base + F.LOG_HEADER + 1000 * F.LOG_ROW, np.int64)
    ff[F.C_LOG], ff[base] = base, F.LOG_BOUNDARIES
    simulate_batch(*args[:-1], ff)
    rows = ff[base + F.LOG_HEADER:].reshape(-1, F.LOG_ROW)[:ff[base + 1]]
    res = batch.outputs["res"][0]
    assert 0 < rows[:, 2].sum() == res[L.R_FF_CYCLES]
    assert (np.diff(rows[:, 0]) > 0).all() and rows[-1, 3] <= res[L.R_STEPS]
    assert_outputs_equal(batch.outputs, run(_long_pipeline()))


def test_ff_drift__analyses_the_tiles_of_a_k_split_matmul(capsys):
    """bench/ff_drift.py's body on a small design (4 C tiles): per-tile figures from both logs."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from ff_drift import analyse

    arch = fastsim.NPU2.replace(columns=2, compute_rows=2)
    design = matmul_design(Matmul(256, 1024, 256, "bf16"), Mapping("os", "2d", (32, 32, 32), 2, 2, k_split=2), arch)
    analyse(0, lower(design))
    out = capsys.readouterr().out
    assert "4 C tiles of core 0, 34 k-loop snapshots" in out
    assert "fewest differing words vs the previous 32 tile boundaries: min 0" in out
    assert "steady state before their own period is found: 2 of 4" in out
    assert "exact repeats by period" in out


def _long_pipeline():
    from helpers import passthrough

    return passthrough(n_obj=64, size=1024, compute_cycles=300)


def test_fast_forward__jumps_and_matches_reference_on_a_long_pipeline():
    design = _long_pipeline()
    lowered = lower(design, max_events=10_000)
    ref = ReferenceSim(lowered).run()
    out = run(design, max_events=10_000)
    assert_same(out, 0, ref, lowered)
    res = out["res"][0]
    assert res[L.R_FF_CYCLES] > res[L.R_CYCLES] // 2  # most of the run was jumped
    assert res[L.R_STEPS] < res[L.R_CYCLES] // 10


def test_fast_forward__gemm_steps_fewer_cycles_with_identical_results():
    design = matmul_design(Matmul(2048, 2048, 2048, "bf16"), Mapping("os", "2d", (64, 64, 64), 8, 4),
                           fastsim.NPU2)
    plain = run(design, fast_forward=False, max_cycles=2**40, livelock_cycles=1 << 24)
    fast = run(design, max_cycles=2**40, livelock_cycles=1 << 24)
    assert_outputs_equal(fast, plain)
    assert fast["res"][0, L.R_STEPS] * 5 < plain["res"][0, L.R_STEPS]


@pytest.mark.parametrize("max_events", [0, 50, 100_000])
def test_fast_forward__trace_events_are_synthesized_for_jumped_periods(max_events):
    design = _long_pipeline()
    assert_outputs_equal(run(design, max_events=max_events),
                         run(design, skip=False, fast_forward=False, max_events=max_events))


def test_fast_forward__public_api_reports_identical_results():
    design = _long_pipeline()
    on = fastsim.simulate(design)
    off = fastsim.simulate(design, fast_forward=False)
    np.testing.assert_array_equal(on.total_cycles.values, off.total_cycles.values)
    assert on.fast_forwarded_cycles.values[0] > 0 == off.fast_forwarded_cycles.values[0]
    np.testing.assert_array_equal(on.channel_cycles.values, off.channel_cycles.values)


def _stride_after_failing_visits(steps_apart: int, visits: int = 24) -> int:
    """The sampling stride of one boundary after ``visits`` snapshots that never match (a lock
    value changes between them), taken ``steps_apart`` engine steps apart."""
    from fastsim.kernels import fastforward as F

    lowered = lower(_long_pipeline(), **LIMITS)
    batch = pack([lowered])
    prm, ch, host = lowered.prm, lowered.ch, lowered.host
    st, queue, kst, kloop, hst, locks = (a[0] for a in batch.state[:6])
    out = {name: a[0] for name, a in batch.outputs.items()}
    ff = batch.scratch()
    F.ff_reset.python(prm, ff)
    for visit in range(visits):
        locks[0] = visit
        out["res"][L.R_STEPS] = visit * steps_apart
        ff[F.C_NOTE] = 7
        with np.errstate(over="ignore"):  # the snapshot hash wraps around, as compiled
            F.ff_boundary.python(visit * 1000, visit * 1000, prm, ch, host, st, queue, kst, kloop, hst, locks,
                                 out["ch_bytes"], out["ch_stats"], out["core_stats"], out["events"], out["res"], ff)
    o_keys = F._offsets.python(prm[L.P_N_CH], prm[L.P_N_CORES], prm[L.P_N_LOCKS], prm[L.P_QDEPTH])[2]
    rows = [o_keys + j * F.KT_N for j in range(F.KEYS)]
    return int(next(ff[r + F.KT_STRIDE] for r in rows if ff[r + F.KT_KEY] == 7))


def test_fast_forward__a_boundary_met_rarely_is_sampled_every_time():
    """Sparse sampling saves snapshots only where they are dense: a boundary whose snapshots fail
    is sampled every 2nd, 4th... visit while its visits come a few steps apart, but every time when
    they come at least SPARSE_BELOW_STEPS apart (a snapshot costs about a step or two, and a new
    period found late costs whole periods of stepping)."""
    from fastsim.kernels import fastforward as F

    assert _stride_after_failing_visits(steps_apart=10) > 1
    assert _stride_after_failing_visits(steps_apart=F.SPARSE_BELOW_STEPS) == 1
