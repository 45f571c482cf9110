"""Cycle-exact engine: DMA channels, BD chains, task queues, locks, cores and the host sequence.

One call simulates a batch of independent designs given as padded int64 tables (see ``layout``).
Every cycle has two phases:

1. control: the host, then each core, then each channel (in index order) makes its zero-time
   transitions (pop a task, acquire/release a lock, chain to the next BD) until it reaches a state
   that spends the cycle (a timer, a blocked acquire, a transfer, idle);
2. flow: shim channels share their column and DDR bandwidth (bytes plus a cost per contiguous
   run of their BD, see ``_share_ddr``); every S2MM decides its pull from the
   stream buffer as it stood at the start of the cycle; every MM2S pushes into all its consumers'
   buffers at the pace of the fullest one (broadcast waits for the slowest consumer).

Packet switching: a packet-switched S2MM (CH_PACKET) has several producers. Each MM2S BD is one
packet (TLAST on its last word), and a packet holds the S2MM's port from its first word to its last
(S_OWNER): the other producers wait, counted as backpressure. When the port is free, the first
flow phase in which producers are transferring grants it round-robin by channel index, starting
after the last owner (S_LAST_OWNER), before any flow is decided; the owner frees it when its
transfer ends (the control phase of the cycle after its last word), so the next packet can flow
in that cycle. The S2MM's BDs take
the bytes in arrival order, whatever packet they came in. A grant or a release is a state change.
Fan-out by packet id: an MM2S BD's data goes to its BD's consumers (``BD_CONS_START/END``), which
are its channel's unless its channel has several packet routes, where the BD's packet id picks one
(the stream switch forwards a packet by its header's id); only a producer whose current BD goes to
an S2MM competes for that S2MM's port.

Work per cycle: a channel in transfer with bytes left has no control step, and one whose acquire
failed would only fail again until its lock's value rises; so the control phase visits only the
other channels (``A_AWAKE``), and the flow phase only the transferring ones, listed by kind
(``A_TILE_S2MM``...). A lock release wakes the channels asleep on that lock; their lock-wait cycles
are counted when they wake or when the statistics are read (fast-forward snapshots, the end). The
pure-Python reference visits every channel every cycle.

Event skipping: after a cycle in which nothing changed state, the engine computes how many following
cycles are provably identical (same states, same flows) and applies them at once. Fast-forward
(``fastforward``): at loop ends of an anchor core it compares the whole state with earlier loop ends
and, in a periodic steady state, applies whole periods at once. The pure-Python reference in
``tests/reference_model.py`` steps every cycle; property tests demand identical results.
"""
from ._jit import inline, kernel
from .fastforward import C_ANCHOR_CH, C_ANCHOR_CORE, C_NOTE, ff_anchor, ff_boundary, ff_offsets, ff_reset
from .layout import (
    A_AWAKE, A_KINDS, A_SHIM_MM2S, A_SHIM_S2MM, A_TILE_MM2S, A_TILE_S2MM,
    BD_ACQ_LOCK, BD_ACQ_VAL, BD_CONS_END, BD_CONS_START, BD_CYCLIC, BD_LEN, BD_NEXT, BD_REL_LOCK, BD_REL_VAL,
    BD_RUN,
    CC_BACKPRESSURE, CC_BUSY, CC_DDR_LIMITED, CC_IDLE, CC_LOCK_WAIT, CC_OVERHEAD, CC_STARVED,
    CH_COL, CH_CONS_END, CH_CONS_START, CH_FIFO_CAP, CH_LATENCY, CH_MM2S, CH_PACKET, CH_PROD_END,
    CH_PROD_START, CH_PRODUCER, CH_RATE,
    CH_SHIM, CH_STATIC_BD, CORE_END, CORE_START, CS_ACQ_LAT, CS_ACQUIRE, CS_IDLE, CS_RELEASE,
    CS_SETUP, CS_TRANSFER, EV_CHANNEL, EV_CORE, H_BD, H_CH, H_OP, H_REP, HOST_PUSH, K_CLASS,
    K_DEPTH, K_EV_START, K_PC, K_STATE, K_TIMER, KC_BUSY, KC_IDLE, KC_LOCK_WAIT, KC_OVERHEAD,
    KS_ACQ_LAT, KS_ACQ_WAIT, KS_COMPUTE, KS_DONE, KS_REL_LAT, KS_RUN, MAX_LOOP_DEPTH, NEVER, OP_ACQUIRE,
    OP_COMPUTE, OP_LOOP, OP_RELEASE, P_ACQ, P_CHAIN, P_DDR_CAP, P_DDR_RUN, P_LIVELOCK, P_LOCK_MAX,
    P_MAX_CYCLES, P_N_CH, P_N_CORES, P_N_HOST, P_N_LOCKS, P_PACKETS, P_QDEPTH, P_REL, P_SETUP,
    P_FF, P_SKIP, PROG_A, PROG_B, PROG_OP, R_CYCLES, R_DETAIL, R_EVENTS, R_STATUS, R_STEPS, S_BD, S_CLASS,
    S_DONE_TASKS, S_EV_START, S_FILL, S_FLOW, S_LAST_OWNER, S_NEXT_WAITER, S_OWNER, S_PUSHED, S_QHEAD, S_QLEN,
    S_RATE, S_READY_AT, S_WAIT_SINCE,
    S_REMAIN, S_REPEATS, S_STATE, S_WANT, S_STATIC_DONE, S_TASK_BD, S_TASK_KIND, S_TIMER, ST_CYCLE_LIMIT,
    ST_DEADLOCK, ST_LIVELOCK, ST_LOCK_OVERFLOW, ST_OK, TASK_QUEUED, TASK_STATIC, TASK_STATIC_CYCLIC,
)


@inline
def _log_event(events, res, kind, index, what, start, end):
    n = res[R_EVENTS]
    if n < events.shape[0]:
        events[n, 0] = kind
        events[n, 1] = index
        events[n, 2] = what
        events[n, 3] = start
        events[n, 4] = end
    res[R_EVENTS] = n + 1


@inline
def _start_task(st, c, bd, repeats, kind, setup_cycles, cyc, ff, o_task):
    ff[o_task + c] = cyc  # fast-forward: the task's repeat count restarts here
    st[c, S_STATE] = CS_SETUP
    st[c, S_TIMER] = setup_cycles
    st[c, S_BD] = bd
    st[c, S_TASK_BD] = bd
    st[c, S_REPEATS] = repeats
    st[c, S_TASK_KIND] = kind


@inline
def _wake(lk, st, waiters, active):
    """Lock lk's value rose: every channel asleep on it gets a control step again. One whose index
    is above the channel that released it gets it in this cycle, the others in the next, as if
    they had been visited every cycle (the control phase visits channels in index order)."""
    w = waiters[lk]
    while w >= 0:
        active[A_AWAKE, w] = 1
        nxt = st[w, S_NEXT_WAITER]
        st[w, S_NEXT_WAITER] = -1
        w = nxt
    waiters[lk] = -1


@inline
def _sleep(c, cyc, bds, st, waiters, active):
    """Channel c failed its acquire in cycle ``cyc`` (counted): it sleeps until its lock's value
    rises (``_wake``), and its lock-wait cycles from the next one on are counted when it wakes or
    when the statistics are read (``_count_waits``). A waiting channel's visit changes nothing: its
    lock stays too low until someone releases it."""
    lk = bds[st[c, S_BD], BD_ACQ_LOCK]
    active[A_AWAKE, c] = 0
    st[c, S_WAIT_SINCE] = cyc + 1
    st[c, S_NEXT_WAITER] = waiters[lk]
    waiters[lk] = c


@inline
def _count_waits(c, upto, st, ch_stats):
    """Count channel c's lock-wait cycles asleep before cycle ``upto`` into its statistics."""
    since = st[c, S_WAIT_SINCE]
    if since >= 0:
        ch_stats[c, CC_LOCK_WAIT] += upto - since
        st[c, S_WAIT_SINCE] = upto


@inline
def _host_control(prm, host, hst, st, queue):
    """Advance the host runtime sequence as far as it can go this cycle; returns 1 if it moved."""
    changed = 0
    qdepth = prm[P_QDEPTH]
    while hst[0] < prm[P_N_HOST]:
        i = hst[0]
        c = host[i, H_CH]
        if host[i, H_OP] == HOST_PUSH:
            if st[c, S_QLEN] >= qdepth:
                break
            tail = (st[c, S_QHEAD] + st[c, S_QLEN]) % qdepth
            queue[c, tail, 0] = host[i, H_BD]
            queue[c, tail, 1] = host[i, H_REP]
            st[c, S_QLEN] += 1
            st[c, S_PUSHED] += 1
        elif st[c, S_DONE_TASKS] < st[c, S_PUSHED]:
            break
        hst[0] = i + 1
        changed = 1
    return changed


@inline
def _core_control(k, cyc, prm, prog, cores, kst, kloop, locks, events, res, ff, o_loop, st, waiters, active):
    """Zero-time steps of core k, then spend the cycle. Returns (changed, status)."""
    changed = 0
    while True:
        s = kst[k, K_STATE]
        if s == KS_DONE:
            kst[k, K_CLASS] = KC_IDLE
            return changed, ST_OK
        pc = kst[k, K_PC]
        if s == KS_ACQ_LAT or s == KS_COMPUTE or s == KS_REL_LAT:
            if kst[k, K_TIMER] > 0:
                kst[k, K_TIMER] -= 1
                kst[k, K_CLASS] = KC_BUSY if s == KS_COMPUTE else KC_OVERHEAD
                return changed, ST_OK
            if s == KS_COMPUTE:
                _log_event(events, res, EV_CORE, k, prog[pc, PROG_B], kst[k, K_EV_START], cyc)
            elif s == KS_REL_LAT:
                lk = prog[pc, PROG_A]
                value = locks[lk] + prog[pc, PROG_B]
                if value > prm[P_LOCK_MAX]:
                    res[R_DETAIL] = lk
                    return changed, ST_LOCK_OVERFLOW
                locks[lk] = value
                _wake(lk, st, waiters, active)
            kst[k, K_PC] = pc + 1
            kst[k, K_STATE] = KS_RUN
            changed = 1
            continue
        if pc >= cores[k, CORE_END]:
            kst[k, K_STATE] = KS_DONE
            changed = 1
            continue
        op = prog[pc, PROG_OP]
        if op == OP_ACQUIRE:
            lk = prog[pc, PROG_A]
            if locks[lk] >= prog[pc, PROG_B]:
                locks[lk] -= prog[pc, PROG_B]
                kst[k, K_STATE] = KS_ACQ_LAT
                kst[k, K_TIMER] = prm[P_ACQ]
                changed = 1
            else:
                if s != KS_ACQ_WAIT:
                    kst[k, K_STATE] = KS_ACQ_WAIT
                    changed = 1
                kst[k, K_CLASS] = KC_LOCK_WAIT
                return changed, ST_OK
        elif op == OP_RELEASE:
            kst[k, K_STATE] = KS_REL_LAT
            kst[k, K_TIMER] = prm[P_REL]
            changed = 1
        elif op == OP_COMPUTE:
            kst[k, K_STATE] = KS_COMPUTE
            kst[k, K_TIMER] = prog[pc, PROG_A]
            kst[k, K_EV_START] = cyc
            changed = 1
        elif op == OP_LOOP:
            d = kst[k, K_DEPTH]
            kloop[k, d, 0] = pc
            kloop[k, d, 1] = prog[pc, PROG_A]
            ff[o_loop + k * MAX_LOOP_DEPTH + d] = cyc  # fast-forward: the loop count restarts
            kst[k, K_DEPTH] = d + 1
            kst[k, K_PC] = pc + 1
            changed = 1
        else:  # OP_END closes the innermost loop
            d = kst[k, K_DEPTH] - 1
            if k == ff[C_ANCHOR_CORE]:
                ff[C_NOTE] = pc  # a period boundary candidate for fast-forward
            kloop[k, d, 1] -= 1
            if kloop[k, d, 1] > 0:
                kst[k, K_PC] = kloop[k, d, 0] + 1
            else:
                kst[k, K_DEPTH] = d
                kst[k, K_PC] = pc + 1
            changed = 1


@inline
def _channel_control(c, cyc, prm, bds, ch, cons, st, queue, locks, events, res, ff, o_task, waiters, active):
    """Zero-time steps of channel c, then spend the cycle. Returns (changed, status)."""
    changed = 0
    while True:
        s = st[c, S_STATE]
        if s == CS_IDLE:
            sb = ch[c, CH_STATIC_BD]
            if sb >= 0 and st[c, S_STATIC_DONE] == 0:
                st[c, S_STATIC_DONE] = 1
                kind = TASK_STATIC_CYCLIC if bds[sb, BD_CYCLIC] == 1 else TASK_STATIC
                _start_task(st, c, sb, 1, kind, prm[P_SETUP], cyc, ff, o_task)
                changed = 1
                continue
            if st[c, S_QLEN] > 0:
                h = st[c, S_QHEAD]
                st[c, S_QHEAD] = (h + 1) % prm[P_QDEPTH]
                st[c, S_QLEN] -= 1
                _start_task(st, c, queue[c, h, 0], queue[c, h, 1], TASK_QUEUED, prm[P_SETUP], cyc, ff, o_task)
                changed = 1
                continue
            st[c, S_CLASS] = CC_IDLE
            return changed, ST_OK
        bd = st[c, S_BD]
        if s == CS_ACQUIRE:
            lk = bds[bd, BD_ACQ_LOCK]
            if lk < 0:
                st[c, S_STATE] = CS_ACQ_LAT
                st[c, S_TIMER] = 0
            elif locks[lk] >= bds[bd, BD_ACQ_VAL]:
                locks[lk] -= bds[bd, BD_ACQ_VAL]
                st[c, S_STATE] = CS_ACQ_LAT
                st[c, S_TIMER] = prm[P_ACQ]
            else:
                st[c, S_CLASS] = CC_LOCK_WAIT
                return changed, ST_OK
            changed = 1
            continue
        if s == CS_TRANSFER:
            if st[c, S_REMAIN] > 0:
                st[c, S_CLASS] = -1  # decided by the flow phase
                return changed, ST_OK
            _log_event(events, res, EV_CHANNEL, c, bd, st[c, S_EV_START], cyc)
            if prm[P_PACKETS] == 1:
                _free_ports(c, ch, cons, st)  # the packet's last word went out: its port is free
            if c == ff[C_ANCHOR_CH]:
                ff[C_NOTE] = bd  # a period boundary candidate for fast-forward
            st[c, S_FLOW] = 0
            st[c, S_STATE] = CS_RELEASE
            st[c, S_TIMER] = prm[P_REL] if bds[bd, BD_REL_LOCK] >= 0 else 0
            changed = 1
            continue
        # timed states: SETUP, ACQ_LAT, RELEASE
        if st[c, S_TIMER] > 0:
            st[c, S_TIMER] -= 1
            st[c, S_CLASS] = CC_OVERHEAD
            return changed, ST_OK
        changed = 1
        if s == CS_SETUP:
            st[c, S_STATE] = CS_ACQUIRE
        elif s == CS_ACQ_LAT:
            st[c, S_STATE] = CS_TRANSFER
            st[c, S_REMAIN] = bds[bd, BD_LEN]
            st[c, S_EV_START] = cyc
        else:  # CS_RELEASE ends: release the lock, then chain, repeat or finish the task
            lk = bds[bd, BD_REL_LOCK]
            if lk >= 0:
                value = locks[lk] + bds[bd, BD_REL_VAL]
                if value > prm[P_LOCK_MAX]:
                    res[R_DETAIL] = lk
                    return changed, ST_LOCK_OVERFLOW
                locks[lk] = value
                _wake(lk, st, waiters, active)
            nxt = bds[bd, BD_NEXT]
            if nxt >= 0:
                st[c, S_BD] = nxt
                st[c, S_STATE] = CS_SETUP
                st[c, S_TIMER] = prm[P_CHAIN]
            elif st[c, S_REPEATS] > 1:
                st[c, S_REPEATS] -= 1
                st[c, S_BD] = st[c, S_TASK_BD]
                st[c, S_STATE] = CS_SETUP
                st[c, S_TIMER] = prm[P_CHAIN]
            else:
                if st[c, S_TASK_KIND] == TASK_QUEUED:
                    st[c, S_DONE_TASKS] += 1
                st[c, S_STATE] = CS_IDLE


@inline
def _ddr_load(rate, run, run_cost):
    """DDR capacity (units per cycle) that moving ``rate`` units per cycle in runs of ``run`` units
    uses when every run costs ``run_cost`` units besides its bytes: rate * (run + run_cost) / run,
    floored, so that a zero ``run_cost`` charges the bytes alone."""
    return rate + rate * run_cost // run


@inline
def _add_active(active, ch, c):
    """List channel c, which started transferring, under its kind (``A_*``): active[kind, 0] counts
    the kind's channels, listed from active[kind, 1] on in no particular order (nothing in the flow
    phase depends on the order in which it visits channels)."""
    kind = 2 * ch[c, CH_MM2S] + ch[c, CH_SHIM]
    n = active[kind, 0] + 1
    active[kind, n] = c
    active[kind, 0] = n


@inline
def _retire(active, kind, j):
    """Channel active[kind, j] moved its last byte: its transfer ends in the next control phase,
    so it leaves the kind's list (the last entry takes its slot) and gets control steps again."""
    c = active[kind, j]
    n = active[kind, 0]
    active[kind, j] = active[kind, n]
    active[kind, 0] = n - 1
    active[A_AWAKE, c] = 1


@inline
def _retire_ended(st, active):
    """``_retire`` every listed channel with no bytes left (a repeated cycle may move a last byte)."""
    for kind in range(A_KINDS):
        for j in range(active[kind, 0], 0, -1):
            if st[active[kind, j], S_REMAIN] == 0:
                _retire(active, kind, j)


@inline
def _share_ddr(prm, bds, ch, col_rates, st, counts, active):
    """Split column and DDR bandwidth between the shim channels that want to move data now.

    A shim channel wants bandwidth when it could move a byte this cycle (S_WANT, set by the flow
    phase). Each column's read (MM2S) and write (S2MM) bandwidth is split evenly between that
    column's wanting channels of that direction (capped at the stream rate); if the DDR capacity
    those shares use exceeds the DDR cap, every share is scaled down proportionally (floor, at
    least one unit).

    A share's DDR use is its bytes plus ``P_DDR_RUN`` units per contiguous run of its BD
    (``_ddr_load``): the DDR serves requests, one per run, and each costs time besides its bytes.
    The cost takes shared capacity, not a per-channel stall, because the measurements it is fitted
    to and checked against (docs/calibration.md "DDR runs") show one per-run constant for 4- and
    8-column designs alike: a limit of the DDR all shim channels share. A channel alone below the
    cap therefore pays nothing; and since a share's bytes never exceed its DDR use, the bytes moved
    per cycle stay within the cap (the search's bytes-over-rate bounds stay lower bounds).
    """
    for kind in (A_SHIM_S2MM, A_SHIM_MM2S):
        d = kind // 2
        for j in range(1, active[kind, 0] + 1):
            counts[d, ch[active[kind, j], CH_COL]] = 0
        for j in range(1, active[kind, 0] + 1):
            c = active[kind, j]
            if st[c, S_WANT] == 1:
                counts[d, ch[c, CH_COL]] += 1
    total = 0
    run_cost = prm[P_DDR_RUN]
    for kind in (A_SHIM_S2MM, A_SHIM_MM2S):
        d = kind // 2
        for j in range(1, active[kind, 0] + 1):
            c = active[kind, j]
            if st[c, S_WANT] == 1:
                col = ch[c, CH_COL]
                st[c, S_RATE] = max(1, min(ch[c, CH_RATE], col_rates[d, col] // counts[d, col]))
                total += _ddr_load(st[c, S_RATE], bds[st[c, S_BD], BD_RUN], run_cost)
            else:
                st[c, S_RATE] = ch[c, CH_RATE]
    cap = prm[P_DDR_CAP]
    if total > cap:
        for kind in (A_SHIM_S2MM, A_SHIM_MM2S):
            for j in range(1, active[kind, 0] + 1):
                c = active[kind, j]
                if st[c, S_WANT] == 1:
                    st[c, S_RATE] = max(1, st[c, S_RATE] * cap // total)


@inline
def _port_blocked(m, bds, ch, cons, st):
    """True when transferring MM2S m feeds a packet-switched S2MM whose port another packet holds
    (or nobody granted it yet): m cannot push this cycle. m's consumers are its BD's (fan-out by
    packet id sends each BD to the route its packet id picks)."""
    b = st[m, S_BD]
    for i in range(bds[b, BD_CONS_START], bds[b, BD_CONS_END]):
        s = cons[i]
        if ch[s, CH_PACKET] == 1 and st[s, S_OWNER] != m:
            return True
    return False


@inline
def _sends_to(m, s, bds, cons, st):
    """True when transferring MM2S m's current BD (packet) goes to S2MM s."""
    b = st[m, S_BD]
    for i in range(bds[b, BD_CONS_START], bds[b, BD_CONS_END]):
        if cons[i] == s:
            return True
    return False


@inline
def _arbitrate(s, bds, ch, cons, st):
    """Grant the free port of packet S2MM s to a producer transferring a packet to it: the first by
    channel index after the last owner, else the first (round-robin). Returns 1 when granted."""
    last = st[s, S_LAST_OWNER]
    first = -1
    for i in range(ch[s, CH_PROD_START], ch[s, CH_PROD_END]):
        m = cons[i]
        if st[m, S_STATE] == CS_TRANSFER and _sends_to(m, s, bds, cons, st):
            if m > last:
                st[s, S_OWNER] = m
                return 1
            if first < 0:
                first = m
    if first < 0:
        return 0
    st[s, S_OWNER] = first
    return 1


@inline
def _grant_ports(bds, ch, cons, st, active):
    """Arbitrate every free packet port some transferring MM2S wants. Returns 1 if one was granted.
    Which MM2S asks first does not matter: ``_arbitrate`` picks among all of the port's producers."""
    granted = 0
    for kind in (A_TILE_MM2S, A_SHIM_MM2S):
        for j in range(1, active[kind, 0] + 1):
            m = active[kind, j]
            b = st[m, S_BD]
            for i in range(bds[b, BD_CONS_START], bds[b, BD_CONS_END]):
                s = cons[i]
                if ch[s, CH_PACKET] == 1 and st[s, S_OWNER] < 0:
                    granted |= _arbitrate(s, bds, ch, cons, st)
    return granted


@inline
def _free_ports(m, ch, cons, st):
    """Channel m's transfer ended (its packet's last word went out in an earlier cycle): free the
    packet ports it holds. Done in the control phase, not when the last word is pushed, because
    event skipping may push that word in a repeated cycle; the next flow phase re-grants the port,
    so a new packet flows in the cycle after the last word either way."""
    for i in range(ch[m, CH_CONS_START], ch[m, CH_CONS_END]):
        s = cons[i]
        if ch[s, CH_PACKET] == 1 and st[s, S_OWNER] == m:
            st[s, S_OWNER] = -1
            st[s, S_LAST_OWNER] = m


@inline
def _push(m, cyc, packets, bds, ch, cons, st, ch_bytes):
    """MM2S m pushes into every consumer's buffer at the pace of the fullest one. Returns 1 if the
    push restarted an empty stream. Each S2MM has one pusher a cycle (its circuit producer, or the
    packet port's owner), so the order in which MM2Ss push does not matter."""
    restarted = 0
    p = min(st[m, S_RATE], st[m, S_REMAIN])
    if (ch[m, CH_SHIM] == 1 and st[m, S_WANT] == 0) or (packets and _port_blocked(m, bds, ch, cons, st)):
        p = 0
    b = st[m, S_BD]
    for i in range(bds[b, BD_CONS_START], bds[b, BD_CONS_END]):
        s = cons[i]
        p = min(p, ch[s, CH_FIFO_CAP] - st[s, S_FILL] + st[s, S_FLOW])
    st[m, S_FLOW] = p
    if p > 0:
        for i in range(bds[b, BD_CONS_START], bds[b, BD_CONS_END]):
            s = cons[i]
            if st[s, S_FILL] == 0:
                st[s, S_READY_AT] = cyc + ch[s, CH_LATENCY]
                restarted = 1
            st[s, S_FILL] += p
        st[m, S_REMAIN] -= p
        ch_bytes[m] += p
    return restarted


@inline
def _flow_phase(cyc, prm, bds, ch, cons, col_rates, st, ch_bytes, ch_stats, counts, active):
    """Move bytes for one cycle between the ``active`` (transferring) channels, listed by kind; a
    channel whose transfer moved its last byte gets control steps again.

    Order: tile S2MMs decide their pulls (fixed stream rate); shim channels say whether they could
    move data (an S2MM with buffered, arrived data; an MM2S whose consumers all have room, counting
    what tile consumers pull this cycle) and share DDR bandwidth; shim S2MMs pull; every MM2S
    pushes. Packet ports are granted first; an MM2S whose packet port another packet holds moves
    nothing. Channels that are not transferring always have S_FLOW == 0 (cleared when they leave the
    transfer state). Each channel's cycle is then classified and counted in ``ch_stats``.

    Returns (restarted, busy, progress): a push restarted an empty stream or a packet port was
    granted (state changes); some channel moved data or waits for a stream's latency (the cycle is
    not a deadlock); a channel with required work (not a static cyclic task) moved data.
    """
    packets = prm[P_PACKETS] == 1  # else no port to arbitrate: circuit designs pay nothing
    restarted = _grant_ports(bds, ch, cons, st, active) if packets else 0
    for j in range(1, active[A_TILE_S2MM, 0] + 1):
        c = active[A_TILE_S2MM, j]
        st[c, S_FLOW] = min(st[c, S_RATE], st[c, S_REMAIN], st[c, S_FILL]) if cyc >= st[c, S_READY_AT] else 0
    for j in range(1, active[A_SHIM_S2MM, 0] + 1):
        c = active[A_SHIM_S2MM, j]
        st[c, S_FLOW] = 0
        st[c, S_WANT] = 1 if (cyc >= st[c, S_READY_AT] and st[c, S_FILL] > 0) else 0
    for j in range(1, active[A_SHIM_MM2S, 0] + 1):  # after every tile S2MM has decided its pull
        c = active[A_SHIM_MM2S, j]
        room = NEVER
        b = st[c, S_BD]
        for i in range(bds[b, BD_CONS_START], bds[b, BD_CONS_END]):
            s = cons[i]
            room = min(room, ch[s, CH_FIFO_CAP] - st[s, S_FILL] + (st[s, S_FLOW] if ch[s, CH_SHIM] == 0 else 0))
        st[c, S_WANT] = 1 if room > 0 and not (packets and _port_blocked(c, bds, ch, cons, st)) else 0
    _share_ddr(prm, bds, ch, col_rates, st, counts, active)
    for j in range(1, active[A_SHIM_S2MM, 0] + 1):
        c = active[A_SHIM_S2MM, j]
        if st[c, S_WANT] == 1:
            st[c, S_FLOW] = min(st[c, S_RATE], st[c, S_REMAIN], st[c, S_FILL])
    for kind in (A_TILE_MM2S, A_SHIM_MM2S):
        for j in range(1, active[kind, 0] + 1):
            restarted |= _push(active[kind, j], cyc, packets, bds, ch, cons, st, ch_bytes)
    busy = 0
    progress = 0
    for kind in (A_TILE_S2MM, A_SHIM_S2MM, A_TILE_MM2S, A_SHIM_MM2S):
        mm2s = kind >= A_TILE_MM2S
        shim = kind == A_SHIM_S2MM or kind == A_SHIM_MM2S
        for j in range(active[kind, 0], 0, -1):  # backwards: an ended transfer's slot takes the last
            c = active[kind, j]
            f = st[c, S_FLOW]
            if not mm2s and f > 0:
                st[c, S_FILL] -= f
                st[c, S_REMAIN] -= f
                ch_bytes[c] += f
            if f == 0:
                cls = CC_BACKPRESSURE if mm2s else CC_STARVED
                if not mm2s and cyc < st[c, S_READY_AT]:
                    busy = 1  # data is on its way
            else:
                cls = CC_DDR_LIMITED if shim and st[c, S_RATE] < ch[c, CH_RATE] and f == st[c, S_RATE] else CC_BUSY
                busy = 1
                if st[c, S_TASK_KIND] != TASK_STATIC_CYCLIC:
                    progress = 1
            st[c, S_CLASS] = cls
            ch_stats[c, cls] += 1
            if st[c, S_REMAIN] == 0:
                _retire(active, kind, j)
    return restarted, busy, progress


@inline
def _cycles_above(start, slope, floor_value, bound):
    """min(bound, how many further cycles j >= 1 keep ``start + j * slope >= floor_value``).

    Divides only when the answer is below ``bound``: 64-bit division is slow and this runs for every
    transferring channel of every quiet cycle.
    """
    if slope >= 0:
        return bound
    margin = start - floor_value
    if bound < NEVER and margin >= bound * (-slope):
        return bound
    return margin // (-slope)


@inline
def _identical_cycles(t, prm, bds, ch, cons, st, kst):
    """How many cycles after cycle t provably repeat it exactly (t itself changed no state)."""
    k = NEVER
    for c in range(prm[P_N_CH]):
        s = st[c, S_STATE]
        if s == CS_SETUP or s == CS_ACQ_LAT or s == CS_RELEASE:
            k = min(k, st[c, S_TIMER])
        elif s == CS_TRANSFER:
            f = st[c, S_FLOW]
            start_remain = st[c, S_REMAIN] + f
            if ch[c, CH_MM2S] == 0:
                if t < st[c, S_READY_AT]:
                    k = min(k, st[c, S_READY_AT] - t - 1)
                    continue
                prod = st[c, S_OWNER]
                net = (st[prod, S_FLOW] if prod >= 0 else 0) - f
                start_fill = st[c, S_FILL] - net
                k = _cycles_above(start_remain, -f, f, k)
                k = _cycles_above(start_fill, net, f, k)
                if not (f == st[c, S_RATE] or (net == 0 and start_fill == f)):
                    return 0
            elif prm[P_PACKETS] == 1 and _port_blocked(c, bds, ch, cons, st):
                continue  # waits for a packet port until its owner's last word (the owner bounds k)
            else:
                k = _cycles_above(start_remain, -f, f, k)
                steady = f == st[c, S_RATE]
                b = st[c, S_BD]
                for i in range(bds[b, BD_CONS_START], bds[b, BD_CONS_END]):
                    s2 = cons[i]
                    net = f - st[s2, S_FLOW]
                    start_space = ch[s2, CH_FIFO_CAP] - (st[s2, S_FILL] - net) + st[s2, S_FLOW]
                    k = _cycles_above(start_space, -net, f, k)
                    if net == 0 and start_space == f:
                        steady = True
                if not steady:
                    return 0
        if k <= 0:
            return 0
    for i in range(prm[P_N_CORES]):
        s = kst[i, K_STATE]
        if s == KS_ACQ_LAT or s == KS_COMPUTE or s == KS_REL_LAT:
            k = min(k, kst[i, K_TIMER])
    return max(k, 0)


@inline
def _repeat_cycles(n, prm, ch, st, kst, ch_bytes, ch_stats, core_stats):
    """Apply n more copies of the cycle just simulated (see _identical_cycles)."""
    for c in range(prm[P_N_CH]):
        if st[c, S_WAIT_SINCE] < 0:  # (a sleeping channel's waits are counted when read)
            ch_stats[c, st[c, S_CLASS]] += n
        s = st[c, S_STATE]
        if s == CS_SETUP or s == CS_ACQ_LAT or s == CS_RELEASE:
            st[c, S_TIMER] -= n
        f = st[c, S_FLOW]
        if f > 0:
            st[c, S_REMAIN] -= n * f
            ch_bytes[c] += n * f
        if ch[c, CH_MM2S] == 0:
            prod = st[c, S_OWNER]
            pushed = st[prod, S_FLOW] if prod >= 0 else 0
            st[c, S_FILL] += n * (pushed - f)
    for i in range(prm[P_N_CORES]):
        core_stats[i, kst[i, K_CLASS]] += n
        s = kst[i, K_STATE]
        if s == KS_ACQ_LAT or s == KS_COMPUTE or s == KS_REL_LAT:
            kst[i, K_TIMER] -= n


@inline
def _work_pending(prm, ch, hst, st, kst):
    if hst[0] < prm[P_N_HOST]:
        return True
    for i in range(prm[P_N_CORES]):
        if kst[i, K_STATE] != KS_DONE:
            return True
    for c in range(prm[P_N_CH]):
        if st[c, S_STATE] != CS_IDLE:
            if st[c, S_TASK_KIND] != TASK_STATIC_CYCLIC:
                return True
        elif st[c, S_QLEN] > 0 or (ch[c, CH_STATIC_BD] >= 0 and st[c, S_STATIC_DONE] == 0):
            return True
    return False


@inline
def _count_all_waits(n_ch, st, ch_stats, cyc, visited_below):
    """Count every sleeping channel's lock waits, so that the statistics can be read: up to cycle
    ``cyc`` included for channels below ``visited_below`` (cycle ``cyc``'s control phase had
    visited them when the run stopped), before it for the others."""
    for c in range(n_ch):
        _count_waits(c, cyc + 1 if c < visited_below else cyc, st, ch_stats)


@inline
def _shift_waits(n_ch, st, dt):
    """A fast-forward jump of ``dt`` cycles counted every channel's statistics over them."""
    for c in range(n_ch):
        if st[c, S_WAIT_SINCE] >= 0:
            st[c, S_WAIT_SINCE] += dt


@inline
def _initial_state(prm, ch, cores, lock_init, st, queue, kst, kloop, hst, locks, waiters, active,
                   ch_bytes, ch_stats, core_stats, events, res):
    st[:, :] = 0
    queue[:, :, :] = 0
    kst[:, :] = 0
    kloop[:, :, :] = 0
    ch_bytes[:] = 0
    ch_stats[:, :] = 0
    core_stats[:, :] = 0
    events[:, :] = 0
    res[:] = 0
    hst[0] = 0
    for i in range(prm[P_N_LOCKS]):
        locks[i] = lock_init[i]
        waiters[i] = -1
    for c in range(prm[P_N_CH]):
        st[c, S_STATE] = CS_IDLE
        st[c, S_RATE] = ch[c, CH_RATE]
        st[c, S_OWNER] = ch[c, CH_PRODUCER]
        st[c, S_LAST_OWNER] = -1
        st[c, S_WAIT_SINCE] = -1
        st[c, S_NEXT_WAITER] = -1
        active[A_AWAKE, c] = 1
    for kind in range(A_KINDS):
        active[kind, 0] = 0
    for i in range(prm[P_N_CORES]):
        kst[i, K_PC] = cores[i, CORE_START]
        kst[i, K_STATE] = KS_RUN


@kernel
def simulate_one(prm, col_rates, bds, ch, cons, prog, cores, host, lock_init,
                 st, queue, kst, kloop, hst, locks, waiters, counts, active,
                 ch_bytes, ch_stats, core_stats, events, res, ff):
    """Simulate one design until all required work is done or it cannot finish.

    Inputs (int64): prm[P_NCOL], col_rates[2, n_cols] (row 0 write/S2MM, row 1 read/MM2S, units per
    cycle), bds[n_bd, BD_NCOL], ch[n_ch, CH_NCOL], cons[n_cons], prog[n_instr, PROG_NCOL],
    cores[n_cores, CORE_NCOL], host[n_host, H_NCOL], lock_init[n_locks].
    State and outputs are preallocated by the caller and overwritten; res[R_NCOL] holds the status,
    the final cycle and details. ``ff`` is fast-forward scratch (``fastforward.scratch_words``).
    """
    _initial_state(prm, ch, cores, lock_init, st, queue, kst, kloop, hst, locks, waiters, active,
                   ch_bytes, ch_stats, core_stats, events, res)
    ff_reset(prm, ff)
    o_task, o_loop = ff_offsets(prm)
    fast_forward = prm[P_FF] == 1
    n_ch = prm[P_N_CH]
    n_cores = prm[P_N_CORES]
    livelock = prm[P_LIVELOCK]
    max_cycles = prm[P_MAX_CYCLES]
    cyc = 0
    last_progress = 0
    visited_below = 0  # channels whose control step of cycle ``cyc`` ran when the run stopped
    while True:
        if not _work_pending(prm, ch, hst, st, kst):
            res[R_STATUS] = ST_OK
            break
        if cyc >= max_cycles:
            res[R_STATUS] = ST_CYCLE_LIMIT
            break
        res[R_STEPS] += 1
        changed = _host_control(prm, host, hst, st, queue)
        progress = changed
        active_cycle = 0
        status = ST_OK
        for i in range(n_cores):
            moved, status = _core_control(i, cyc, prm, prog, cores, kst, kloop, locks, events, res, ff, o_loop,
                                          st, waiters, active)
            if status != ST_OK:
                break
            changed |= moved
            progress |= moved
        if status == ST_OK:
            # a channel in transfer with bytes left, or asleep on a lock, has nothing to do in the
            # control phase: only awake channels are visited, in index order
            for c in range(n_ch):
                if active[A_AWAKE, c] == 0:
                    continue
                if st[c, S_WAIT_SINCE] >= 0:  # woken from a lock wait: count it, it ends here
                    _count_waits(c, cyc, st, ch_stats)
                    st[c, S_WAIT_SINCE] = -1
                moved, status = _channel_control(c, cyc, prm, bds, ch, cons, st, queue, locks, events, res, ff,
                                                 o_task, waiters, active)
                if status != ST_OK:
                    visited_below = c
                    break
                changed |= moved
                if moved and st[c, S_TASK_KIND] != TASK_STATIC_CYCLIC:
                    progress = 1
                s = st[c, S_STATE]
                if s == CS_TRANSFER:  # with bytes left: the flow phase's until they are moved
                    active[A_AWAKE, c] = 0
                    _add_active(active, ch, c)
                    continue
                cls = st[c, S_CLASS]
                ch_stats[c, cls] += 1
                if s == CS_ACQUIRE:  # its lock is too low
                    _sleep(c, cyc, bds, st, waiters, active)
                elif cls == CC_OVERHEAD:
                    active_cycle = 1
                    if st[c, S_TASK_KIND] != TASK_STATIC_CYCLIC:
                        progress = 1
        if status != ST_OK:
            res[R_STATUS] = status
            break
        restarted, busy, moved = _flow_phase(cyc, prm, bds, ch, cons, col_rates, st, ch_bytes, ch_stats, counts,
                                             active)
        active_cycle |= changed | restarted | busy
        progress |= moved
        for i in range(n_cores):
            cls = kst[i, K_CLASS]
            core_stats[i, cls] += 1
            if cls == KC_BUSY or cls == KC_OVERHEAD:
                active_cycle = 1
                progress = 1
        if not active_cycle:
            res[R_STATUS] = ST_DEADLOCK
            visited_below = n_ch
            break
        if progress:
            last_progress = cyc
        elif cyc - last_progress >= livelock:
            res[R_STATUS] = ST_LIVELOCK
            visited_below = n_ch
            break
        if prm[P_SKIP] == 1 and not changed and not restarted:
            n = _identical_cycles(cyc, prm, bds, ch, cons, st, kst)
            n = min(n, max_cycles - cyc - 1)
            if not progress:
                n = min(n, last_progress + livelock - cyc - 1)
            if n > 0:
                _repeat_cycles(n, prm, ch, st, kst, ch_bytes, ch_stats, core_stats)
                _retire_ended(st, active)
                cyc += n
                if progress:
                    last_progress = cyc
        cyc += 1
        if fast_forward:
            if changed:
                ff_anchor(prm, ch, st, kst, ff)
            if ff[C_NOTE] >= 0:
                _count_all_waits(n_ch, st, ch_stats, cyc, 0)  # a snapshot reads the statistics
                jumped = ff_boundary(cyc, last_progress, prm, ch, host, st, queue, kst, kloop, hst, locks,
                                     ch_bytes, ch_stats, core_stats, events, res, ff)
                _shift_waits(n_ch, st, jumped)
                cyc += jumped  # (moves no transfer's last byte: the channel lists stay right)
                last_progress += jumped
    _count_all_waits(n_ch, st, ch_stats, cyc, visited_below)
    res[R_CYCLES] = cyc


@kernel
def simulate_batch(prm, col_rates, bds, ch, cons, prog, cores, host_rows, host_span, lock_init,
                   st, queue, kst, kloop, hst, locks, waiters, counts, active,
                   ch_bytes, ch_stats, core_stats, events, res, ff):
    """Run ``simulate_one`` for every design d of a padded batch (leading axis = design); the
    fast-forward scratch ``ff`` is shared, one design at a time. Host programs are not padded
    (one design's may have 10^5 rows, its neighbours' ten): design d's rows are
    ``host_rows[host_span[d, 0]:host_span[d, 1]]``."""
    for d in range(prm.shape[0]):
        host = host_rows[host_span[d, 0]:host_span[d, 1]]
        simulate_one(prm[d], col_rates[d], bds[d], ch[d], cons[d], prog[d], cores[d], host,
                     lock_init[d], st[d], queue[d], kst[d], kloop[d], hst[d], locks[d], waiters[d], counts[d], active[d],
                     ch_bytes[d], ch_stats[d], core_stats[d], events[d], res[d], ff)
