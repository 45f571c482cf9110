"""Steady-state fast-forward: jump whole periods of a periodic run at once, cycle-exact.

A tiled GEMM, a GEMV over N slices or a streamed attention repeats itself: after a fill phase the
whole array's state at one loop end of a core equals its state one loop iteration (or one tile)
earlier, except for counters that only move linearly. The engine then re-derives the same events
period after period. This module detects such a period and applies n of them at once.

**Anchor.** One agent's events mark candidate period boundaries: the loop ends (OP_END) of the
first core that has not finished, or, in a design without running cores, the BD completions of the
first busy channel. Each distinct boundary (the END's pc, or the BD) keeps its own ring of the last
``DEPTH`` snapshots, so a k-loop and the tile loop around it are both found. A boundary that keeps
failing is sampled ever more sparsely (``MAX_STRIDE``) so that aperiodic runs pay little, but only
while its samples come fewer than ``SPARSE_BELOW_STEPS`` steps apart: a snapshot costs about as much
as a step or two, so a boundary met every few hundred steps is worth sampling every time (the
8-column, 4-row GEMMs of an 8B prefill restart their steady state every outer tile, and sparse
sampling there found each new period several periods late).

**Snapshot.** The state at the top of a cycle, normalized: absolute times (ready cycles, event
starts) become times relative to now; task queues are read from their heads; dead fields (the
last cycle's classes) are dropped. Packet ports' owners and last owners (``S_OWNER``,
``S_LAST_OWNER``) are channel indices and part of the exact state, so a period must also repeat
the round-robin position of every shared S2MM. Linear counters are kept apart: task repeats, tasks pushed and
done, core loop counters, the host's step, and every statistic.

**Why a jump is exact.** The engine's next state is a function of the normalized state and of
comparisons of the linear counters with constants (``repeats > 1``, ``loop count > 0``, ``done <
pushed``, the host's step in its program). If the state at t2 equals the state at t1 < t2, every
counter not restarted between them moved by the same amount each period, and every comparison it
took in that period kept going (a loop that exited and restarted, or a new task, counts as a
restart and must match exactly), then the run from t2 mirrors the run from t1 shifted by P = t2 -
t1, as long as each shifted counter stays on the same side of its comparison and the host reads
the same program rows. ``_periods`` computes the largest such n; ``_apply`` adds n periods to every
counter, statistic and timestamp and copies the period's events n times. Progress must happen
inside the period and 2P must stay below the livelock bound, so the livelock verdict cannot change;
the jump stops before max_cycles. Property tests check the result against the stepping reference.
"""
from ._jit import inline, kernel
from .layout import (
    CC_N, CH_RATE, CS_TRANSFER, H_NCOL, K_CLASS, K_DEPTH, K_EV_START, K_NCOL, K_STATE, KC_N, KS_COMPUTE,
    KS_DONE, MAX_LOOP_DEPTH, P_LIVELOCK, P_MAX_CYCLES, P_N_CH, P_N_CORES, P_N_HOST,
    P_N_LOCKS, P_QDEPTH, R_EVENTS, R_FF_CYCLES, R_STEPS, CS_IDLE, S_CLASS, S_DONE_TASKS, S_EV_START,
    S_NCOL, S_NEXT_WAITER, S_PUSHED, S_QHEAD, S_QLEN, S_READY_AT, S_REMAIN, S_REPEATS, S_STATE, S_TASK_KIND,
    S_WAIT_SINCE, TASK_STATIC_CYCLIC,
)

KEYS = 8  # boundaries tracked at once for the anchor
DEPTH = 4  # snapshots kept per boundary
MAX_STRIDE = 64  # sample a failing boundary at most this sparsely
SPARSE_BELOW_STEPS = 128  # ... and only while its samples come fewer steps apart than this

# control words at the start of the scratch
C_ANCHOR_CORE = 0
C_ANCHOR_CH = 1
C_NOTE = 2  # boundary key met by the anchor this cycle, or -1
C_LOG = 3  # where a caller's diagnostic log starts (past the scratch), or 0: none (see _log)
C_N = 4

# key table, one row per tracked boundary
KT_KEY = 0
KT_SEEN = 1
KT_STRIDE = 2
KT_MISSES = 3
KT_FILLED = 4
KT_HEAD = 5
KT_USED = 6
KT_STEPS = 7  # engine steps at the boundary's last snapshot
KT_N = 8

# snapshot meta words
M_T = 0
M_HASH = 1
M_HOST = 2
M_EVENTS = 3
M_PROGRESS = 4
M_N = 5

# linear words per channel
L_REPEATS = 0
L_PUSHED = 1
L_DONE = 2
L_REMAIN = 3
L_EV_START = 4
LIN_CH = 5

# an optional diagnostic log past the scratch (see _log; bench/ff_drift.py reads it)
LOG_HEADER = 2
LOG_BOUNDARIES = -1
LOG_ROW = 4

MASK = 0x7FFFFFFFFFFFFFFF
PRIME = 1099511628211


@kernel
def _sizes(n_ch, n_cores, n_locks, qdepth):
    """Words of (exact, linear, stats) parts of one snapshot."""
    exact = n_ch * (S_NCOL + 2 * qdepth) + n_cores * (K_NCOL + MAX_LOOP_DEPTH) + n_locks
    linear = n_ch * LIN_CH + n_cores * MAX_LOOP_DEPTH
    stats = n_ch * (1 + CC_N) + n_cores * KC_N
    return exact, linear, stats


@kernel
def _offsets(n_ch, n_cores, n_locks, qdepth):
    """(task starts, loop starts, key table, snapshots, words per snapshot) offsets in the scratch."""
    exact, linear, stats = _sizes(n_ch, n_cores, n_locks, qdepth)
    o_task = C_N
    o_loop = o_task + n_ch
    o_keys = o_loop + n_cores * MAX_LOOP_DEPTH
    o_snap = o_keys + KEYS * KT_N
    return o_task, o_loop, o_keys, o_snap, M_N + exact + linear + stats


def scratch_words(n_ch: int, n_cores: int, n_locks: int, qdepth: int) -> int:
    """Scratch the kernel needs for one design at a time of at most these sizes (called from
    Python: the plain variant, so that a run with ``jit=False`` never imports numba)."""
    o_task, o_loop, o_keys, o_snap, snap = _offsets.python(n_ch, n_cores, n_locks, qdepth)
    return o_snap + KEYS * DEPTH * snap


@kernel
def ff_offsets(prm):
    """(task starts, loop starts) offsets: the engine stamps restarts of linear counters there."""
    o_task, o_loop, o_keys, o_snap, snap = _offsets(prm[P_N_CH], prm[P_N_CORES], prm[P_N_LOCKS], prm[P_QDEPTH])
    return o_task, o_loop


@kernel  # called rarely: compiled once, not inlined into the engine loop
def ff_reset(prm, ff):
    """Clear the scratch for a new design."""
    n_ch, n_cores = prm[P_N_CH], prm[P_N_CORES]
    o_task, o_loop, o_keys, o_snap, snap = _offsets(n_ch, n_cores, prm[P_N_LOCKS], prm[P_QDEPTH])
    ff[C_ANCHOR_CORE] = -1
    ff[C_ANCHOR_CH] = -1
    ff[C_NOTE] = -1
    for i in range(o_task, o_keys):
        ff[i] = -1
    _clear_keys(ff, o_keys)


@kernel
def _clear_keys(ff, o_keys):
    for j in range(KEYS):
        r = o_keys + j * KT_N
        ff[r + KT_KEY] = -1
        ff[r + KT_SEEN] = 0
        ff[r + KT_STRIDE] = 1
        ff[r + KT_MISSES] = 0
        ff[r + KT_FILLED] = 0
        ff[r + KT_HEAD] = 0
        ff[r + KT_USED] = -1
        ff[r + KT_STEPS] = 0


@kernel  # called rarely: compiled once, not inlined into the engine loop
def ff_anchor(prm, ch, st, kst, ff):
    """Keep the anchor on a live agent: the first unfinished core, else the first busy channel
    with required work. Changing it forgets every snapshot (their boundaries belong to the old
    anchor)."""
    a = ff[C_ANCHOR_CORE]
    if a >= 0 and kst[a, K_STATE] != KS_DONE:
        return
    c = ff[C_ANCHOR_CH]
    if c >= 0 and (st[c, S_STATE] != CS_IDLE or st[c, S_QLEN] > 0):
        return
    new_core = -1
    new_ch = -1
    for k in range(prm[P_N_CORES]):
        if kst[k, K_STATE] != KS_DONE:
            new_core = k
            break
    if new_core < 0:
        for j in range(prm[P_N_CH]):
            if st[j, S_STATE] != CS_IDLE and st[j, S_TASK_KIND] != TASK_STATIC_CYCLIC:
                new_ch = j
                break
    if new_core == a and new_ch == c:
        return
    ff[C_ANCHOR_CORE] = new_core
    ff[C_ANCHOR_CH] = new_ch
    o_task, o_loop, o_keys, o_snap, snap = _offsets(prm[P_N_CH], prm[P_N_CORES], prm[P_N_LOCKS], prm[P_QDEPTH])
    _clear_keys(ff, o_keys)


@kernel
def _put(values, ff, i):
    """Write a row of values at ff[i:]; returns the next free index."""
    for x in range(values.shape[0]):
        ff[i + x] = values[x]
    return i + values.shape[0]


@kernel
def _put_loops(kst, kloop, k, column, ff, i):
    """Write core k's open loops' ``column`` (0: start pc, 1: count), zero past its depth."""
    for d in range(MAX_LOOP_DEPTH):
        ff[i + d] = kloop[k, d, column] if d < kst[k, K_DEPTH] else 0
    return i + MAX_LOOP_DEPTH


@kernel
def _snapshot(cyc, prm, st, queue, kst, kloop, hst, locks, ch_bytes, ch_stats, core_stats, events, res,
              last_progress, ff, base):
    """Write the normalized state at the top of cycle ``cyc`` at ff[base:]; returns its hash."""
    n_ch, n_cores, n_locks, qdepth = prm[P_N_CH], prm[P_N_CORES], prm[P_N_LOCKS], prm[P_QDEPTH]
    tracing = res[R_EVENTS] < events.shape[0]  # events are still being recorded: their starts count
    ff[base + M_T] = cyc
    ff[base + M_HOST] = hst[0]
    ff[base + M_EVENTS] = res[R_EVENTS]
    ff[base + M_PROGRESS] = last_progress
    i = base + M_N
    for c in range(n_ch):
        for f in range(S_NCOL):
            v = st[c, f]
            if (f == S_REPEATS or f == S_DONE_TASKS or f == S_QHEAD or f == S_CLASS
                    or f == S_REMAIN or f == S_EV_START or f == S_WAIT_SINCE or f == S_NEXT_WAITER):
                v = 0  # linear (compared in _periods), dead, or the engine's bookkeeping of lock waits
            elif f == S_PUSHED:
                v = st[c, S_PUSHED] - st[c, S_DONE_TASKS]
            elif f == S_READY_AT:
                v = max(v - cyc, 0)
            ff[i] = v
            i += 1
        head = st[c, S_QHEAD]
        for q in range(qdepth):
            if q < st[c, S_QLEN]:
                slot = (head + q) % qdepth
                ff[i] = queue[c, slot, 0]
                ff[i + 1] = queue[c, slot, 1]
            else:
                ff[i] = 0
                ff[i + 1] = 0
            i += 2
    for k in range(n_cores):
        for f in range(K_NCOL):
            v = kst[k, f]
            if f == K_CLASS:
                v = 0
            elif f == K_EV_START:  # only shows in the compute's event
                v = cyc - v if kst[k, K_STATE] == KS_COMPUTE and tracing else 0
            ff[i] = v
            i += 1
        i = _put_loops(kst, kloop, k, 0, ff, i)
    i = _put(locks[:n_locks], ff, i)
    h = 0
    for j in range(base + M_N, i):
        h = ((h ^ ff[j]) * PRIME) & MASK
    ff[base + M_HASH] = h
    for c in range(n_ch):
        ff[i + L_REPEATS] = st[c, S_REPEATS]
        ff[i + L_PUSHED] = st[c, S_PUSHED]
        ff[i + L_DONE] = st[c, S_DONE_TASKS]
        transfer = st[c, S_STATE] == CS_TRANSFER
        ff[i + L_REMAIN] = st[c, S_REMAIN] if transfer else 0
        ff[i + L_EV_START] = st[c, S_EV_START] if transfer else 0
        i += LIN_CH
    for k in range(n_cores):
        i = _put_loops(kst, kloop, k, 1, ff, i)
    for c in range(n_ch):
        ff[i] = ch_bytes[c]
        i = _put(ch_stats[c], ff, i + 1)
    for k in range(n_cores):
        i = _put(core_stats[k], ff, i)
    return h


@inline
def _countdown_periods(n, x1, x2, restarted):
    """At most ``n`` periods, as many as a count-down (x1 one period ago, x2 now) allows: one that
    restarted inside the period must hold the same value; else it falls by the same step each
    period and must stay >= 1 (the engine's comparisons: repeats > 1, loop count > 0). -1: none."""
    if x1 == x2:
        return n
    if restarted or x2 > x1:
        return -1
    return min(n, (x2 - 1) // (x1 - x2))


@kernel
def _periods(prm, ch, host, events, res, ff, old, new, o_task, o_loop):
    """How many whole periods, from snapshot ``new`` on, provably repeat the one since ``old``."""
    n_ch, n_cores, n_locks, qdepth = prm[P_N_CH], prm[P_N_CORES], prm[P_N_LOCKS], prm[P_QDEPTH]
    exact, linear, stats = _sizes(n_ch, n_cores, n_locks, qdepth)
    t1 = ff[old + M_T]
    t2 = ff[new + M_T]
    period = t2 - t1
    if period <= 0 or ff[new + M_PROGRESS] < t1 or 2 * period > prm[P_LIVELOCK]:
        return 0
    for j in range(M_N, M_N + exact):
        if ff[old + j] != ff[new + j]:
            return 0
    n = (prm[P_MAX_CYCLES] - t2) // period
    tracing = res[R_EVENTS] < events.shape[0]  # a transfer's start only shows in its event
    lo = old + M_N + exact
    ln = new + M_N + exact
    for c in range(n_ch):
        r1 = ff[lo + LIN_CH * c + L_REPEATS]
        r2 = ff[ln + LIN_CH * c + L_REPEATS]
        n = _countdown_periods(n, r1, r2, ff[o_task + c] >= t1)  # a task started inside: restarted
        if n < 0:
            return 0
        # a transfer (the exact part says whether one runs) started inside the period must match
        # in age and bytes left; one running all period long moves its bytes left linearly, and
        # stays above the stream rate so that the bytes left never bound a cycle's flow
        if ff[new + M_N + c * (S_NCOL + 2 * qdepth) + S_STATE] != CS_TRANSFER:
            continue
        e1 = ff[lo + LIN_CH * c + L_EV_START]
        e2 = ff[ln + LIN_CH * c + L_EV_START]
        m1 = ff[lo + LIN_CH * c + L_REMAIN]
        m2 = ff[ln + LIN_CH * c + L_REMAIN]
        if e2 >= t1:
            if m1 != m2 or (tracing and t2 - e2 != t1 - e1):
                return 0
        elif e1 != e2 or m2 > m1:
            return 0
        elif m2 < m1:
            n = min(n, (m2 - ch[c, CH_RATE]) // (m1 - m2))
    lo += LIN_CH * n_ch
    ln += LIN_CH * n_ch
    for k in range(n_cores):
        for d in range(MAX_LOOP_DEPTH):
            x1 = ff[lo + k * MAX_LOOP_DEPTH + d]
            x2 = ff[ln + k * MAX_LOOP_DEPTH + d]
            n = _countdown_periods(n, x1, x2, ff[o_loop + k * MAX_LOOP_DEPTH + d] >= t1)  # (re)entered inside
            if n < 0:
                return 0
    if n <= 0:
        return 0
    h1 = ff[old + M_HOST]
    h2 = ff[new + M_HOST]
    step = h2 - h1
    if step < 0:
        return 0
    if step > 0:  # the host must read the same rows, shifted by ``step``, in every period
        last = h2 + n * step
        j = h2
        while j <= last:
            if j >= prm[P_N_HOST]:
                break
            same = True
            for f in range(H_NCOL):
                if host[j, f] != host[j - step, f]:
                    same = False
                    break
            if not same:
                break
            j += 1
        n = min(n, (j - 1 - h2) // step)
    return max(n, 0)


@kernel
def _apply(n, prm, st, kst, kloop, hst, ch_bytes, ch_stats, core_stats, events, res, ff, old, new,
           o_task, o_loop):
    """Advance the current state (equal to snapshot ``new``) by n periods of ``new - old``."""
    n_ch, n_cores, n_locks, qdepth = prm[P_N_CH], prm[P_N_CORES], prm[P_N_LOCKS], prm[P_QDEPTH]
    exact, linear, stats = _sizes(n_ch, n_cores, n_locks, qdepth)
    t1 = ff[old + M_T]
    period = ff[new + M_T] - t1
    dt = n * period
    lo = old + M_N + exact
    ln = new + M_N + exact
    for c in range(n_ch):
        a = lo + LIN_CH * c
        b = ln + LIN_CH * c
        st[c, S_REPEATS] -= n * (ff[a + L_REPEATS] - ff[b + L_REPEATS])
        st[c, S_PUSHED] += n * (ff[b + L_PUSHED] - ff[a + L_PUSHED])
        st[c, S_DONE_TASKS] += n * (ff[b + L_DONE] - ff[a + L_DONE])
        st[c, S_READY_AT] += dt
        if ff[b + L_EV_START] >= t1 or st[c, S_STATE] != CS_TRANSFER:
            st[c, S_EV_START] += dt  # a transfer of the period: its mirror starts later
        else:
            st[c, S_REMAIN] -= n * (ff[a + L_REMAIN] - ff[b + L_REMAIN])  # one long transfer
        if ff[o_task + c] >= t1:
            ff[o_task + c] += dt
    lo += LIN_CH * n_ch
    ln += LIN_CH * n_ch
    for k in range(n_cores):
        kst[k, K_EV_START] += dt
        for d in range(MAX_LOOP_DEPTH):
            slot = o_loop + k * MAX_LOOP_DEPTH + d
            if ff[slot] >= t1:
                ff[slot] += dt
            elif d < kst[k, K_DEPTH]:
                kloop[k, d, 1] -= n * (ff[lo + k * MAX_LOOP_DEPTH + d] - ff[ln + k * MAX_LOOP_DEPTH + d])
    hst[0] += n * (ff[new + M_HOST] - ff[old + M_HOST])
    lo += n_cores * MAX_LOOP_DEPTH
    ln += n_cores * MAX_LOOP_DEPTH
    for c in range(n_ch):
        ch_bytes[c] += n * (ff[ln] - ff[lo])
        lo += 1
        ln += 1
        for x in range(CC_N):
            ch_stats[c, x] += n * (ff[ln] - ff[lo])
            lo += 1
            ln += 1
    for k in range(n_cores):
        for x in range(KC_N):
            core_stats[k, x] += n * (ff[ln] - ff[lo])
            lo += 1
            ln += 1
    e1 = ff[old + M_EVENTS]
    e2 = ff[new + M_EVENTS]
    per = e2 - e1
    cap = events.shape[0]
    if per > 0 and e2 <= cap:  # the period's events were all recorded: repeat them, shifted
        dest = e2
        for i in range(1, n + 1):
            if dest >= cap:
                break
            for r in range(e1, e2):
                if dest >= cap:
                    break
                events[dest, 0] = events[r, 0]
                events[dest, 1] = events[r, 1]
                events[dest, 2] = events[r, 2]
                events[dest, 3] = events[r, 3] + i * period
                events[dest, 4] = events[r, 4] + i * period
                dest += 1
    res[R_EVENTS] += n * per
    res[R_FF_CYCLES] += dt
    return dt


@kernel  # called rarely: compiled once, not inlined into the engine loop
def _log(ff, base, snap, new, key, cyc, jumped, steps):
    """Diagnostics, when the caller set ff[C_LOG] to ``base``, past ``scratch_words`` (``ff_reset``
    keeps it): at ff[base] the log's kind, at ff[base + 1] its rows; rows from ff[base + LOG_HEADER]
    on, as long as they fit. Kind LOG_BOUNDARIES: one row (cycle, boundary key, cycles jumped,
    engine steps) per snapshot taken; a kind k >= 0: a copy of each snapshot of boundary k."""
    kind = ff[base]
    width = LOG_ROW if kind == LOG_BOUNDARIES else snap
    at = base + LOG_HEADER + ff[base + 1] * width
    if at + width > ff.shape[0] or (kind != LOG_BOUNDARIES and kind != key):
        return
    if kind == LOG_BOUNDARIES:
        ff[at] = cyc
        ff[at + 1] = key
        ff[at + 2] = jumped
        ff[at + 3] = steps
    else:
        for x in range(snap):
            ff[at + x] = ff[new + x]
    ff[base + 1] += 1


@kernel  # called rarely: compiled once, not inlined into the engine loop
def ff_boundary(cyc, last_progress, prm, ch, host, st, queue, kst, kloop, hst, locks, ch_bytes,
                ch_stats, core_stats, events, res, ff):
    """The anchor met boundary ff[C_NOTE] in the cycle before ``cyc``: snapshot, compare with
    earlier snapshots of that boundary and jump as far as provably exact. Returns the cycles
    jumped (0 if none)."""
    key = ff[C_NOTE]
    ff[C_NOTE] = -1
    o_task, o_loop, o_keys, o_snap, snap = _offsets(prm[P_N_CH], prm[P_N_CORES], prm[P_N_LOCKS], prm[P_QDEPTH])
    row = -1
    oldest = 0
    for j in range(KEYS):
        r = o_keys + j * KT_N
        if ff[r + KT_KEY] == key:
            row = j
            break
        if ff[o_keys + oldest * KT_N + KT_USED] > ff[r + KT_USED]:
            oldest = j
    if row < 0:  # a new boundary takes the least recently used row
        row = oldest
        r = o_keys + row * KT_N
        ff[r + KT_KEY] = key
        ff[r + KT_SEEN] = 0
        ff[r + KT_STRIDE] = 1
        ff[r + KT_MISSES] = 0
        ff[r + KT_FILLED] = 0
        ff[r + KT_HEAD] = 0
        ff[r + KT_STEPS] = res[R_STEPS]
    r = o_keys + row * KT_N
    ff[r + KT_USED] = cyc
    ff[r + KT_SEEN] += 1
    if ff[r + KT_SEEN] % ff[r + KT_STRIDE] != 0:
        return 0
    steps_apart = res[R_STEPS] - ff[r + KT_STEPS]
    ff[r + KT_STEPS] = res[R_STEPS]
    ring = o_snap + row * DEPTH * snap
    head = ff[r + KT_HEAD]
    new = ring + head * snap
    h = _snapshot(cyc, prm, st, queue, kst, kloop, hst, locks, ch_bytes, ch_stats, core_stats, events, res,
                  last_progress, ff, new)
    best_old = new  # the snapshot giving the longest jump (valid once best_dt > 0) and its length
    best_dt = 0  # (no literal initial values: numba would compile _apply once more for them)
    for back in range(1, ff[r + KT_FILLED] + 1):  # most recent first
        old = ring + ((head - back + DEPTH) % DEPTH) * snap
        if ff[old + M_HASH] != h:
            continue
        n = _periods(prm, ch, host, events, res, ff, old, new, o_task, o_loop)
        if n * (cyc - ff[old + M_T]) > best_dt:
            best_old = old
            best_dt = n * (cyc - ff[old + M_T])
    if ff[C_LOG] > 0:  # a caller's diagnostic log
        _log(ff, ff[C_LOG], snap, new, key, cyc, best_dt, res[R_STEPS])
    ff[r + KT_HEAD] = (head + 1) % DEPTH
    ff[r + KT_FILLED] = min(ff[r + KT_FILLED] + 1, DEPTH - 1)
    if best_dt == 0:
        if steps_apart >= SPARSE_BELOW_STEPS:
            return 0  # samples this far apart cost little: keep the stride
        ff[r + KT_MISSES] += 1
        if ff[r + KT_MISSES] >= 2 * DEPTH:
            ff[r + KT_MISSES] = 0
            ff[r + KT_STRIDE] = min(2 * ff[r + KT_STRIDE], MAX_STRIDE)
        return 0
    ff[r + KT_MISSES] = 0
    ff[r + KT_STRIDE] = 1
    periods = best_dt // (cyc - ff[best_old + M_T])
    return _apply(periods, prm, st, kst, kloop, hst, ch_bytes, ch_stats, core_stats, events, res, ff,
                  best_old, new, o_task, o_loop)
