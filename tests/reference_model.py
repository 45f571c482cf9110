"""Slow, obvious reference simulator: steps every cycle, one object per channel and core.

It reads the same lowered tables as the kernels (so both see identical inputs) but shares no code
with them: it is written from the semantics in ``kernels/engine.py``'s docstring. Property tests
require identical totals, per-channel and per-core counters, bytes and status.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from fastsim.kernels import layout as L

IDLE, SETUP, ACQUIRE, ACQ_LAT, TRANSFER, RELEASE = "idle", "setup", "acquire", "acq_lat", "transfer", "release"
TIMED = (SETUP, ACQ_LAT, RELEASE)


@dataclass
class Bd:
    length: int
    acq_lock: int
    acq_val: int
    rel_lock: int
    rel_val: int
    next: int
    cyclic: bool
    run: int  # units of one contiguous run of the buffer (one DDR request on a shim channel)
    cons_start: int  # MM2S BD: where its packet goes, a slice of the consumer list (fan-out by packet
    cons_end: int  # id: the route its id picks; else its channel's consumers)


@dataclass
class Chan:
    index: int
    is_mm2s: bool
    is_shim: bool
    col: int
    stream_rate: int
    static_bd: int
    fifo_cap: int
    latency: int
    producer: int
    consumers: list
    packet: bool = False  # S2MM shared by several MM2S, one packet (MM2S BD) at a time
    producers: list = field(default_factory=list)  # packet S2MM: its MM2S channels, by index
    owner: int = -1  # S2MM: the MM2S whose data enters it (packet: -1 while the port is free)
    last_owner: int = -1  # packet S2MM: where round-robin starts looking (after this index)
    state: str = IDLE
    timer: int = 0
    bd: int = -1
    task_bd: int = -1
    repeats: int = 0
    remaining: int = 0
    queue: deque = field(default_factory=deque)
    pushed: int = 0
    done_tasks: int = 0
    fill: int = 0
    ready_at: int = 0
    rate: int = 0
    kind: int = L.TASK_QUEUED
    flow: int = 0
    static_started: bool = False
    cls: int = L.CC_IDLE
    stats: list = field(default_factory=lambda: [0] * L.CC_N)
    bytes: int = 0


@dataclass
class Core:
    start: int
    end: int
    pc: int = 0
    state: str = "run"
    timer: int = 0
    loops: list = field(default_factory=list)
    cls: int = L.KC_IDLE
    stats: list = field(default_factory=lambda: [0] * L.KC_N)


class LockOverflow(Exception):
    pass


class ReferenceSim:
    def __init__(self, lowered):
        p = lowered.prm
        self.p = {name: int(p[getattr(L, name)]) for name in dir(L) if name.startswith("P_") and name != "P_NCOL"}
        self.col_rates = lowered.col_rates.tolist()
        self.bds = [Bd(*[int(x) for x in row]) for row in lowered.bds]
        cons = self.cons = [int(x) for x in lowered.cons]
        self.ch = []
        for i, r in enumerate(lowered.ch):
            r = [int(x) for x in r]
            self.ch.append(Chan(i, r[L.CH_MM2S] == 1, r[L.CH_SHIM] == 1, r[L.CH_COL], r[L.CH_RATE],
                                r[L.CH_STATIC_BD], r[L.CH_FIFO_CAP], r[L.CH_LATENCY], r[L.CH_PRODUCER],
                                cons[r[L.CH_CONS_START]:r[L.CH_CONS_END]] if r[L.CH_MM2S] else [],
                                r[L.CH_PACKET] == 1, cons[r[L.CH_PROD_START]:r[L.CH_PROD_END]],
                                owner=r[L.CH_PRODUCER]))
            self.ch[-1].rate = r[L.CH_RATE]
        self.prog = [tuple(int(x) for x in row) for row in lowered.prog]
        self.cores = [Core(int(a), int(b), pc=int(a)) for a, b in lowered.cores]
        self.host = [tuple(int(x) for x in row) for row in lowered.host]
        self.host_pc = 0
        self.locks = [int(x) for x in lowered.lock_init]
        self.cycle = 0
        self.status = L.ST_OK
        self.events = []

    # ---- helpers ------------------------------------------------------------------------------
    def release(self, lock, value):
        if lock < 0:
            return
        if self.locks[lock] + value > self.p["P_LOCK_MAX"]:
            raise LockOverflow(lock)
        self.locks[lock] += value

    def start(self, c, bd, repeats, kind):
        c.state, c.timer, c.bd, c.task_bd, c.repeats, c.kind = SETUP, self.p["P_SETUP"], bd, bd, repeats, kind

    # ---- control phase ------------------------------------------------------------------------
    def step_host(self):
        moved = False
        while self.host_pc < len(self.host):
            op, c, bd, rep = self.host[self.host_pc]
            chan = self.ch[c]
            if op == L.HOST_PUSH:
                if len(chan.queue) >= self.p["P_QDEPTH"]:
                    break
                chan.queue.append((bd, rep))
                chan.pushed += 1
            elif chan.done_tasks < chan.pushed:
                break
            self.host_pc += 1
            moved = True
        return moved

    def step_core(self, k, core):
        moved = False
        while True:
            if core.state == "done":
                core.cls = L.KC_IDLE
                return moved
            if core.state in ("acq_lat", "compute", "rel_lat"):
                if core.timer > 0:
                    core.timer -= 1
                    core.cls = L.KC_BUSY if core.state == "compute" else L.KC_OVERHEAD
                    return moved
                op, a, b = self.prog[core.pc]
                if core.state == "compute":
                    self.events.append((L.EV_CORE, k, b, core.ev_start, self.cycle))
                if core.state == "rel_lat":
                    self.release(a, b)
                core.pc += 1
                core.state = "run"
                moved = True
                continue
            if core.pc >= core.end:
                core.state = "done"
                moved = True
                continue
            op, a, b = self.prog[core.pc]
            if op == L.OP_ACQUIRE:
                if self.locks[a] >= b:
                    self.locks[a] -= b
                    core.state, core.timer = "acq_lat", self.p["P_ACQ"]
                    moved = True
                else:
                    if core.state != "wait":
                        core.state = "wait"
                        moved = True
                    core.cls = L.KC_LOCK_WAIT
                    return moved
            elif op == L.OP_RELEASE:
                core.state, core.timer = "rel_lat", self.p["P_REL"]
                moved = True
            elif op == L.OP_COMPUTE:
                core.state, core.timer, core.ev_start = "compute", a, self.cycle
                moved = True
            elif op == L.OP_LOOP:
                core.loops.append([core.pc, a])
                core.pc += 1
                moved = True
            else:
                core.loops[-1][1] -= 1
                if core.loops[-1][1] > 0:
                    core.pc = core.loops[-1][0] + 1
                else:
                    core.loops.pop()
                    core.pc += 1
                moved = True

    def step_channel(self, c):
        moved = False
        while True:
            if c.state == IDLE:
                if c.static_bd >= 0 and not c.static_started:
                    c.static_started = True
                    kind = L.TASK_STATIC_CYCLIC if self.bds[c.static_bd].cyclic else L.TASK_STATIC
                    self.start(c, c.static_bd, 1, kind)
                elif c.queue:
                    bd, rep = c.queue.popleft()
                    self.start(c, bd, rep, L.TASK_QUEUED)
                else:
                    c.cls = L.CC_IDLE
                    return moved
                moved = True
                continue
            bd = self.bds[c.bd]
            if c.state == ACQUIRE:
                if bd.acq_lock < 0:
                    c.state, c.timer = ACQ_LAT, 0
                elif self.locks[bd.acq_lock] >= bd.acq_val:
                    self.locks[bd.acq_lock] -= bd.acq_val
                    c.state, c.timer = ACQ_LAT, self.p["P_ACQ"]
                else:
                    c.cls = L.CC_LOCK_WAIT
                    return moved
                moved = True
                continue
            if c.state == TRANSFER:
                if c.remaining > 0:
                    return moved
                self.events.append((L.EV_CHANNEL, c.index, c.bd, c.ev_start, self.cycle))
                for s in c.consumers:  # the packet is through: its port is free for the next one
                    if self.ch[s].packet and self.ch[s].owner == c.index:
                        self.ch[s].owner, self.ch[s].last_owner = -1, c.index
                c.state, c.timer = RELEASE, (self.p["P_REL"] if bd.rel_lock >= 0 else 0)
                moved = True
                continue
            if c.timer > 0:
                c.timer -= 1
                c.cls = L.CC_OVERHEAD
                return moved
            moved = True
            if c.state == SETUP:
                c.state = ACQUIRE
            elif c.state == ACQ_LAT:
                c.state, c.remaining, c.ev_start = TRANSFER, bd.length, self.cycle
            else:
                self.release(bd.rel_lock, bd.rel_val)
                if bd.next >= 0:
                    c.bd, c.state, c.timer = bd.next, SETUP, self.p["P_CHAIN"]
                elif c.repeats > 1:
                    c.repeats -= 1
                    c.bd, c.state, c.timer = c.task_bd, SETUP, self.p["P_CHAIN"]
                else:
                    if c.kind == L.TASK_QUEUED:
                        c.done_tasks += 1
                    c.state = IDLE

    # ---- flow phase ---------------------------------------------------------------------------
    def targets(self, m):
        """Where transferring MM2S m's current BD goes: its BD's slice of the consumers."""
        bd = self.bds[m.bd]
        return self.cons[bd.cons_start:bd.cons_end]

    def blocked(self, m):
        """MM2S m feeds a packet S2MM whose port it does not hold."""
        return any(self.ch[s].packet and self.ch[s].owner != m.index for s in self.targets(m))

    def arbitrate(self):
        """Each free packet port goes to a transferring producer: round-robin by channel index,
        the first after the last owner. Returns True if a port was granted."""
        granted = False
        for s in self.ch:
            if not s.packet or s.owner >= 0:
                continue
            waiting = [m for m in s.producers if self.ch[m].state == TRANSFER and s.index in self.targets(self.ch[m])]
            if waiting:
                after = [m for m in waiting if m > s.last_owner]
                s.owner = (after or waiting)[0]
                granted = True
        return granted

    def flow(self):
        """Packet ports are granted; tile S2MMs pull; shim channels that could move data share DDR;
        shim S2MMs pull; MM2Ss push (not into a packet port another packet holds)."""
        moving = [c for c in self.ch if c.state == TRANSFER]
        restarted = self.arbitrate()
        for c in self.ch:
            c.flow = 0
        for c in moving:
            if not c.is_mm2s and not c.is_shim and self.cycle >= c.ready_at:
                c.flow = min(c.rate, c.remaining, c.fill)
        wanting = []
        for c in moving:
            if not c.is_shim:
                continue
            if c.is_mm2s:
                room = min(self.ch[s].fifo_cap - self.ch[s].fill + (0 if self.ch[s].is_shim else self.ch[s].flow)
                           for s in self.targets(c))
                wants = room > 0 and not self.blocked(c)
            else:
                wants = self.cycle >= c.ready_at and c.fill > 0
            c.rate = c.stream_rate
            if wants:
                wanting.append(c)
        count = {}
        for c in wanting:
            count[(c.is_mm2s, c.col)] = count.get((c.is_mm2s, c.col), 0) + 1
        for c in wanting:
            col_rate = self.col_rates[1 if c.is_mm2s else 0][c.col]
            c.rate = max(1, min(c.stream_rate, col_rate // count[(c.is_mm2s, c.col)]))
        # DDR capacity used: the bytes, plus P_DDR_RUN per contiguous run they span (pro rata, floored)
        total = sum(c.rate + c.rate * self.p["P_DDR_RUN"] // self.bds[c.bd].run for c in wanting)
        if total > self.p["P_DDR_CAP"]:
            for c in wanting:
                c.rate = max(1, c.rate * self.p["P_DDR_CAP"] // total)
        for c in wanting:
            if not c.is_mm2s:
                c.flow = min(c.rate, c.remaining, c.fill)
        for m in moving:
            if not m.is_mm2s:
                continue
            p = min(m.rate, m.remaining) if (not m.is_shim or m in wanting) else 0
            if self.blocked(m):
                p = 0
            p = min([p] + [self.ch[s].fifo_cap - self.ch[s].fill + self.ch[s].flow for s in self.targets(m)])
            m.flow = p
            if p > 0:
                for s in self.targets(m):
                    sc = self.ch[s]
                    if sc.fill == 0:
                        sc.ready_at = self.cycle + sc.latency
                        restarted = True
                    sc.fill += p
                m.remaining -= p
                m.bytes += p
        for c in moving:
            if not c.is_mm2s and c.flow > 0:
                c.fill -= c.flow
                c.remaining -= c.flow
                c.bytes += c.flow
            if c.flow == 0:
                c.cls = L.CC_BACKPRESSURE if c.is_mm2s else L.CC_STARVED
            elif c.is_shim and c.rate < c.stream_rate and c.flow == c.rate:
                c.cls = L.CC_DDR_LIMITED
            else:
                c.cls = L.CC_BUSY
        return restarted

    # ---- run ----------------------------------------------------------------------------------
    def pending(self):
        if self.host_pc < len(self.host) or any(k.state != "done" for k in self.cores):
            return True
        for c in self.ch:
            if c.state != IDLE and c.kind != L.TASK_STATIC_CYCLIC:
                return True
            if c.state == IDLE and (c.queue or (c.static_bd >= 0 and not c.static_started)):
                return True
        return False

    def run(self):
        last_progress = 0
        while True:
            if not self.pending():
                self.status = L.ST_OK
                return self
            if self.cycle >= self.p["P_MAX_CYCLES"]:
                self.status = L.ST_CYCLE_LIMIT
                return self
            try:
                changed = progress = self.step_host()
                for k, core in enumerate(self.cores):
                    moved = self.step_core(k, core)
                    changed |= moved
                    progress |= moved
                for c in self.ch:
                    moved = self.step_channel(c)
                    changed |= moved
                    progress |= moved and c.kind != L.TASK_STATIC_CYCLIC
                    if c.state != TRANSFER:  # counted as soon as evaluated (matters on overflow)
                        c.stats[c.cls] += 1
            except LockOverflow:
                self.status = L.ST_LOCK_OVERFLOW
                return self
            active = self.flow() or changed
            for c in self.ch:
                if c.state == TRANSFER:
                    c.stats[c.cls] += 1
                if c.cls in (L.CC_OVERHEAD, L.CC_BUSY, L.CC_DDR_LIMITED):
                    active = True
                    progress |= c.kind != L.TASK_STATIC_CYCLIC
                elif c.cls == L.CC_STARVED and self.cycle < c.ready_at:
                    active = True
            for core in self.cores:
                core.stats[core.cls] += 1
                if core.cls in (L.KC_BUSY, L.KC_OVERHEAD):
                    active = progress = True
            if not active:
                self.status = L.ST_DEADLOCK
                return self
            if progress:
                last_progress = self.cycle
            elif self.cycle - last_progress >= self.p["P_LIVELOCK"]:
                self.status = L.ST_LIVELOCK
                return self
            self.cycle += 1
