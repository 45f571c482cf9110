"""The calls a run completed, read from the cores' final program state (fastsim.calls_done), equal
the kernel-call events the engine logged, wherever the run stops: at its end, or cut short in the
middle of its loops by a cycle limit."""
from collections import Counter

import numpy as np

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fastsim.calls_done import calls_done
from fastsim.kernels import layout as L
from fastsim.kernels.engine import simulate_batch
from fastsim.lower import lower, pack
from strategies import pipelines
from test_fast_forward import matmul_designs


def _logged_and_read(design, max_cycles: int, skip: bool):
    lw = lower(design, max_cycles=max_cycles, livelock_cycles=50_000, max_events=100_000, skip=skip)
    batch = pack([lw])
    simulate_batch(*batch.kernel_args())
    res, events = batch.outputs["res"][0], batch.outputs["events"][0]
    assert res[L.R_EVENTS] <= len(events)
    logged = Counter()
    for row in events[: res[L.R_EVENTS]]:
        if row[0] == L.EV_CORE:
            logged[lw.kernel_names[row[2]]] += 1
    read = calls_done(lw.prog, lw.cores, batch.state[2][0], batch.state[3][0], lw.kernel_names)
    return dict(logged), {name: calls for name, (calls, _) in read.items() if calls}, res


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(design=st.one_of(matmul_designs(), pipelines()), cut=st.floats(0.05, 1.5), skip=st.booleans())
def test_calls_read_from_state_equal_logged_calls(design, cut, skip):
    assume(design is not None)  # a strategy's draw that gives no design
    _, _, full = _logged_and_read(design, 200_000, skip)
    limit = max(1, int(cut * int(full[L.R_CYCLES])))
    logged, read, _ = _logged_and_read(design, limit, skip)
    assert read == logged


def test_a_stop_inside_nested_loops():
    """Outer loop of 3 in its second iteration, inner loop of 2 in its second, stopped in b's
    call: a ran twice, b three times (the running call not counted)."""
    prog = np.array([[L.OP_LOOP, 3, 0], [L.OP_COMPUTE, 7, 0], [L.OP_LOOP, 2, 0],
                     [L.OP_COMPUTE, 5, 1], [L.OP_END, 0, 0], [L.OP_END, 0, 0]])
    kst = np.zeros((1, L.K_NCOL), np.int64)
    kst[0, L.K_STATE], kst[0, L.K_PC], kst[0, L.K_DEPTH] = L.KS_COMPUTE, 3, 2
    kloop = np.zeros((1, L.MAX_LOOP_DEPTH, 2), np.int64)
    kloop[0, 0], kloop[0, 1] = (0, 2), (2, 1)
    assert calls_done(prog, np.array([[0, 6]]), kst, kloop, ["a", "b"]) == {"a": (2, 14), "b": (3, 15)}
