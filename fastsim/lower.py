"""Lowering: a validated Design becomes the flat int64 tables the kernels run (see kernels.layout)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from fastsim.kernels import layout as L
from fastsim.kernels.fastforward import scratch_words

from .design import MM2S, Acquire, Channel, Compute, Design, Loop, Push, Release, channel_order
from .validate import endless_chains, validate_design


@dataclass
class LoweredDesign:
    """One design as kernel tables plus the names needed to explain results."""

    design: Design
    prm: np.ndarray
    col_rates: np.ndarray
    bds: np.ndarray
    ch: np.ndarray
    cons: np.ndarray
    prog: np.ndarray
    cores: np.ndarray
    host: np.ndarray
    lock_init: np.ndarray
    channels: list[Channel]
    core_tiles: list
    kernel_names: list[str]
    # cycles the caller expects the run to take (a search's lower bound; 0: unknown): read only to
    # give a batch's long runs to the engine's threads first (``simulation._tasks``), never by the kernel
    expected_cycles: float = 0.0


def to_units(bytes_per_cycle: float) -> int:
    return max(1, int(round(bytes_per_cycle * L.UNITS_PER_BYTE)))


def ddr_run_units(arch) -> int:
    """The DDR capacity one contiguous run's cost takes, in units: its time at the DDR's byte rate
    (the engine's ``P_DDR_RUN``; the mapping search's bounds read the same number)."""
    return round(arch.ddr_run_overhead_s * arch.ddr_bytes_per_s * L.UNITS_PER_BYTE)


def hops(src, dst) -> int:
    """Stream-switch hops between two tiles: one switch per tile on a Manhattan path."""
    return abs(src.col - dst.col) + abs(src.row - dst.row) + 1


def lower(design: Design, *, skip: bool = True, max_cycles: int = 2**40,
          livelock_cycles: int = 1 << 24, max_events: int = 0,
          fast_forward: bool | None = None, validate: bool = True) -> LoweredDesign:
    """``skip`` jumps over cycles that repeat the previous one; ``fast_forward`` (default: as
    ``skip``) jumps over whole periods of a periodic steady state. Both are exact. ``validate=False``
    is for a caller that validates what it keeps (the mapping search: its winner), never for a
    design whose results are reported unvalidated."""
    if validate:
        validate_design(design)
    lock_index = {lk.id: i for i, lk in enumerate(design.locks)}
    bd_index = {b.id: i for i, b in enumerate(design.bds)}
    channels = _used_channels(design)
    ch_index = {c: i for i, c in enumerate(channels)}
    bds = _bd_table(design, lock_index, bd_index)
    ch, cons, spans = _channel_table(design, channels, ch_index, bd_index)
    _bd_consumers(design, bds, ch, ch_index, spans)
    core_tiles, cores, prog, kernel_names = _core_tables(design, lock_index)
    host = _host_table(design.host, ch_index, bd_index)
    prm = _params(design, len(channels), len(core_tiles), skip=skip, max_cycles=max_cycles,
                  livelock_cycles=livelock_cycles, max_events=max_events, fast_forward=fast_forward)
    lock_init = np.array([lk.init for lk in design.locks], np.int64)
    return LoweredDesign(design, prm, _col_rates(design.arch), bds, ch, cons=np.array(cons, np.int64), prog=prog,
                         cores=cores, host=host, lock_init=lock_init, channels=channels,
                         core_tiles=core_tiles, kernel_names=kernel_names)


def capped(lowered: LoweredDesign, cap_cycles: int | None, expected_cycles: float = 0.0) -> LoweredDesign:
    """``lowered`` stopping at ``cap_cycles`` at the latest (status ``cycle_limit``): a search's
    candidate past the best run so far cannot win. A copy: the tables themselves stay uncapped (a
    search keeps them, and the answer's twin is derived from them). ``expected_cycles``: what the
    search expects of the run (its candidate's lower bound), no more than the cap
    (``LoweredDesign.expected_cycles``)."""
    if cap_cycles is None and not expected_cycles:
        return lowered
    prm = lowered.prm
    if cap_cycles is not None:
        prm = prm.copy()
        prm[L.P_MAX_CYCLES] = min(int(prm[L.P_MAX_CYCLES]), cap_cycles)
        expected_cycles = min(expected_cycles, cap_cycles)
    return replace(lowered, prm=prm, expected_cycles=expected_cycles)


def _used_channels(design: Design) -> list[Channel]:
    """Every channel a BD, static chain or route names, in ``channel_order``: only those get
    rows, and a fixed order makes the tables the same for the same design."""
    used = {b.channel for b in design.bds} | set(design.static_chains)
    for r in design.routes:
        used.add(r.src)
        used.update(r.dsts)
    return sorted(used, key=channel_order)


def _bd_table(design: Design, lock_index: dict, bd_index: dict) -> np.ndarray:
    """One row per BD: the bytes it puts on the wire (after compression), its locks and the next
    BD, with object references turned into row indices the kernels can follow."""
    bds = np.zeros((len(design.bds), L.BD_NCOL), np.int64)
    endless = endless_chains(design.bds)
    for i, b in enumerate(design.bds):
        wire_bytes = math.ceil(b.total_bytes / b.compression_ratio)
        bds[i, L.BD_LEN] = wire_bytes * L.UNITS_PER_BYTE
        bds[i, L.BD_ACQ_LOCK] = lock_index[b.acquire[0].id] if b.acquire else -1
        bds[i, L.BD_ACQ_VAL] = b.acquire[1] if b.acquire else 0
        bds[i, L.BD_REL_LOCK] = lock_index[b.release[0].id] if b.release else -1
        bds[i, L.BD_REL_VAL] = b.release[1] if b.release else 0
        bds[i, L.BD_NEXT] = bd_index[b.next.id] if b.next is not None else -1
        bds[i, L.BD_CYCLIC] = int(endless[b.id])
        bds[i, L.BD_RUN] = max(1, round(run_bytes(b) * L.UNITS_PER_BYTE / b.compression_ratio))
    return bds


def run_bytes(b) -> int:
    """Bytes of one contiguous run of ``b``'s buffer: what one DDR request streams when ``b`` is a
    shim BD. Without dims the whole length is one run (each iteration re-reads it: a run each);
    with dims, the innermost dimension's contiguous words, merged with each outer dimension whose
    stride continues them (a row-major block of whole rows is one run); an innermost stride other
    than one word makes every word its own run."""
    if not b.dims:
        return b.length_bytes
    words = 1
    for size, stride in b.dims:
        if stride != words:
            break
        words *= size
    return min(b.length_bytes, 4 * words)


def _channel_table(design: Design, channels: list[Channel], ch_index: dict,
                   bd_index: dict) -> tuple[np.ndarray, list[int], dict]:
    """One row per channel, and every route's consumers as one flat list that each MM2S row
    indexes by span, followed by each packet-switched S2MM's producers (its row indexes those):
    a route's switch hops set its consumers' FIFO capacity and latency. The routes of one source
    (several under fan-out by packet id) lie side by side in the list; ``spans`` gives each packet
    id's part of its source's span."""
    arch = design.arch
    ch = np.zeros((len(channels), L.CH_NCOL), np.int64)
    ch[:, L.CH_STATIC_BD] = -1
    ch[:, L.CH_PRODUCER] = -1
    stream_rate = to_units(arch.stream_bytes_per_cycle)
    for i, c in enumerate(channels):
        ch[i, L.CH_MM2S] = int(c.direction == MM2S)
        ch[i, L.CH_SHIM] = int(c.tile.row == 0)
        ch[i, L.CH_COL] = c.tile.col
        ch[i, L.CH_RATE] = stream_rate
        if c in design.static_chains:
            ch[i, L.CH_STATIC_BD] = bd_index[design.static_chains[c].id]
    cons = []
    spans: dict[tuple[Channel, int], tuple[int, int]] = {}
    by_src: dict[Channel, list] = {}
    for r in design.routes:
        by_src.setdefault(r.src, []).append(r)
    for src, routes in by_src.items():
        m = ch_index[src]
        ch[m, L.CH_CONS_START] = len(cons)
        for r in routes:
            start = len(cons)
            for d in r.dsts:
                s = ch_index[d]
                cons.append(s)
                if not r.packet:
                    ch[s, L.CH_PRODUCER] = m
                    _set_stream(ch, s, hops(r.src.tile, d.tile), arch)
            if len(routes) > 1:
                spans[(src, r.packet_id)] = (start, len(cons))
        ch[m, L.CH_CONS_END] = len(cons)
    _packet_producers(design, ch, ch_index, cons)
    return ch, cons, spans


def _bd_consumers(design: Design, bds: np.ndarray, ch: np.ndarray, ch_index: dict, spans: dict) -> None:
    """Each MM2S BD's consumers, a span of the consumer list: its channel's whole span, or under
    fan-out by packet id the part of the route its packet id picks."""
    for i, b in enumerate(design.bds):
        m = ch_index.get(b.channel)
        if m is None or not ch[m, L.CH_MM2S]:
            continue
        bds[i, L.BD_CONS_START], bds[i, L.BD_CONS_END] = spans.get(
            (b.channel, b.packet_id), (ch[m, L.CH_CONS_START], ch[m, L.CH_CONS_END]))


def _set_stream(ch: np.ndarray, s: int, n_hops: int, arch) -> None:
    """S2MM row s: the buffering and latency of a stream through ``n_hops`` switches."""
    ch[s, L.CH_FIFO_CAP] = n_hops * arch.switch_buffer_bytes * L.UNITS_PER_BYTE
    ch[s, L.CH_LATENCY] = n_hops * arch.switch_hop_latency_cycles


def _packet_producers(design: Design, ch: np.ndarray, ch_index: dict, cons: list[int]) -> None:
    """Mark each S2MM that packet routes feed, and append its producers (by channel index, the
    round-robin order) to ``cons``. Its stream is the part all its packets share, the switches
    nearest to it: the shortest producer's path sets its buffering and latency (an assumption:
    each longer path's own switches before the merge are not modelled)."""
    feeds: dict[int, list[tuple[int, int]]] = {}  # S2MM row: (producer row, hops) per packet route
    for r in design.routes:
        if r.packet:
            for d in r.dsts:
                feeds.setdefault(ch_index[d], []).append((ch_index[r.src], hops(r.src.tile, d.tile)))
    for s in sorted(feeds):
        ch[s, L.CH_PACKET] = 1
        _set_stream(ch, s, min(n for _, n in feeds[s]), design.arch)
        ch[s, L.CH_PROD_START] = len(cons)
        cons.extend(sorted(m for m, _ in feeds[s]))
        ch[s, L.CH_PROD_END] = len(cons)


def _core_tables(design: Design, lock_index: dict) -> tuple[list, np.ndarray, np.ndarray, list[str]]:
    """Every core's program flattened into one table (loops as begin/end rows) with each core's
    span of rows; kernels are numbered by first use, which ``noop_twin`` relies on."""
    core_tiles = sorted(design.cores)
    prog_rows: list[tuple[int, int, int]] = []
    kernel_names: list[str] = []
    cores = np.zeros((len(core_tiles), L.CORE_NCOL), np.int64)

    for k, tile in enumerate(core_tiles):
        cores[k, L.CORE_START] = len(prog_rows)
        _emit(design.cores[tile], lock_index, prog_rows, kernel_names)
        cores[k, L.CORE_END] = len(prog_rows)
    prog = np.array(prog_rows, np.int64).reshape(-1, L.PROG_NCOL)
    return core_tiles, cores, prog, kernel_names


def _emit(ops: list, lock_index: dict, prog_rows: list, kernel_names: list[str]) -> None:
    """Append a core program's rows (a module function, not a closure: a recursive closure is a
    reference cycle that keeps every lowered design alive until the cycle collector runs)."""
    for op in ops:
        if isinstance(op, Acquire):
            prog_rows.append((L.OP_ACQUIRE, lock_index[op.lock.id], op.value))
        elif isinstance(op, Release):
            prog_rows.append((L.OP_RELEASE, lock_index[op.lock.id], op.value))
        elif isinstance(op, Compute):
            if op.name not in kernel_names:
                kernel_names.append(op.name)
            prog_rows.append((L.OP_COMPUTE, op.cycles, kernel_names.index(op.name)))
        elif isinstance(op, Loop):
            prog_rows.append((L.OP_LOOP, op.count, 0))
            _emit(op.body, lock_index, prog_rows, kernel_names)
            prog_rows.append((L.OP_END, 0, 0))


def _col_rates(arch) -> np.ndarray:
    """Each column's shim write (row 0) and read (row 1) bandwidth in kernel units, per column
    because columns can differ (asymmetric shims)."""
    col_rates = np.zeros((2, arch.columns), np.int64)
    col_rates[0] = [to_units(x) for x in arch.shim_write_bytes_per_cycle]
    col_rates[1] = [to_units(x) for x in arch.shim_read_bytes_per_cycle]
    return col_rates


def _params(design: Design, n_channels: int, n_cores: int, *, skip: bool, max_cycles: int,
            livelock_cycles: int, max_events: int, fast_forward: bool | None) -> np.ndarray:
    """The scalar parameters of one design (table sizes, arch timings, run limits) as one row, so
    that designs of different arches batch together."""
    arch = design.arch
    prm = np.zeros(L.P_NCOL, np.int64)
    prm[L.P_N_LOCKS] = len(design.locks)
    prm[L.P_N_BDS] = len(design.bds)
    prm[L.P_N_CH] = n_channels
    prm[L.P_N_CORES] = n_cores
    prm[L.P_N_HOST] = len(design.host)
    prm[L.P_N_COLS] = arch.columns
    prm[L.P_DDR_CAP] = to_units(arch.ddr_bytes_per_cycle)
    prm[L.P_DDR_RUN] = ddr_run_units(arch)
    prm[L.P_QDEPTH] = arch.task_queue_depth
    prm[L.P_SETUP] = arch.bd_setup_cycles
    prm[L.P_CHAIN] = arch.bd_chain_cycles
    prm[L.P_ACQ] = arch.lock_acquire_cycles
    prm[L.P_REL] = arch.lock_release_cycles
    prm[L.P_LOCK_MAX] = arch.lock_max_value
    prm[L.P_LIVELOCK] = livelock_cycles
    prm[L.P_MAX_CYCLES] = max_cycles
    prm[L.P_SKIP] = int(skip)
    prm[L.P_FF] = int(skip if fast_forward is None else fast_forward)
    prm[L.P_PACKETS] = int(any(r.packet for r in design.routes))
    prm[L.P_MAX_EVENTS] = max_events
    return prm


def noop_twin(lw: LoweredDesign, drop: tuple[str, ...] = ()) -> LoweredDesign:
    """The tables of ``lw``'s NOOP twin (every kernel a 1-cycle pass, kernels named in ``drop``
    gone; every byte still moves), equal to lowering the design its builder makes with
    ``noop=True`` without building, validating and lowering that design again. The twin keeps
    ``lw.design`` for names: its buffers, locks, BDs, routes and host are the same."""
    prog = lw.prog
    compute = prog[:, L.PROG_OP] == L.OP_COMPUTE
    dropped = np.zeros(len(prog), bool)
    for k, name in enumerate(lw.kernel_names):
        if name in drop:
            dropped |= compute & (prog[:, L.PROG_B] == k)
    kept = prog[~dropped].copy()
    kept_compute = kept[:, L.PROG_OP] == L.OP_COMPUTE
    kept[kept_compute, L.PROG_A] = 1
    # kernels numbered by first use again, as lowering numbers them
    first_use = list(dict.fromkeys(kept[kept_compute, L.PROG_B].tolist()))
    renumber = np.zeros(max(len(lw.kernel_names), 1), np.int64)
    renumber[first_use] = np.arange(len(first_use))
    kept[kept_compute, L.PROG_B] = renumber[kept[kept_compute, L.PROG_B]]
    before = np.concatenate([[0], np.cumsum(dropped)])  # rows dropped before each row index
    cores = lw.cores - before[lw.cores]
    return LoweredDesign(lw.design, lw.prm, lw.col_rates, lw.bds, lw.ch, lw.cons, kept, cores, lw.host,
                         lw.lock_init, lw.channels, lw.core_tiles, [lw.kernel_names[k] for k in first_use])


def _host_table(ops: list, ch_index: dict, bd_index: dict) -> np.ndarray:
    """The runtime sequence as rows. It has up to ~10^5 steps that repeat a few distinct Push and
    Wait objects (``Design.push_op``): each distinct one becomes a row once, then rows are taken."""
    row_of: dict[int, int] = {}
    distinct: list[tuple[int, int, int, int]] = []
    picks = []
    for op in ops:
        r = row_of.get(id(op))
        if r is None:
            r = row_of[id(op)] = len(distinct)
            distinct.append((L.HOST_PUSH, ch_index[op.channel], bd_index[op.bd.id], op.repeat) if type(op) is Push
                            else (L.HOST_WAIT, ch_index[op.channel], 0, 0))
        picks.append(r)
    table = np.array(distinct, np.int64).reshape(-1, L.H_NCOL)
    return table[np.array(picks, np.intp)] if picks else table


def _stack(arrays: list[np.ndarray], fill: int = 0) -> np.ndarray:
    """Pad arrays to a common shape (at least 1 along every axis) and stack them."""
    ndim = arrays[0].ndim
    shape = [max(max(a.shape[i] for a in arrays), 1) for i in range(ndim)]
    out = np.full((len(arrays), *shape), fill, np.int64)
    for d, a in enumerate(arrays):
        out[(d, *[slice(0, n) for n in a.shape])] = a
    return out


def _concat(tables: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Tables one after the other (at least one row) and each one's (first, end) row."""
    ends = np.cumsum([len(t) for t in tables])
    rows = np.concatenate([*tables, np.zeros((1, tables[0].shape[1]), np.int64)])
    return rows, np.stack([ends - [len(t) for t in tables], ends], axis=1).astype(np.int64)


HOST_ROWS = 7  # position of the shared host table in ``Batch.inputs`` (never sliced per design)


@dataclass
class Batch:
    """Padded tables of several lowered designs plus preallocated state and outputs."""

    designs: list[LoweredDesign]
    inputs: tuple
    state: tuple
    outputs: dict
    scratch_words: int

    def scratch(self) -> np.ndarray:
        """Fast-forward scratch for one kernel call (designs of a call share it in turn)."""
        return np.zeros(self.scratch_words, np.int64)

    def kernel_args(self, lo: int = 0, hi: int | None = None) -> tuple:
        """``simulate_batch``'s arguments for designs lo..hi: views, so the kernel writes into
        this batch's state and outputs; the shared host table goes whole (spans index it)."""
        hi = len(self.designs) if hi is None else hi
        inputs = [a if k == HOST_ROWS else a[lo:hi] for k, a in enumerate(self.inputs)]
        return (*inputs, *(a[lo:hi] for a in self.state), *(a[lo:hi] for a in self.outputs.values()),
                self.scratch())


def pack(lowered: list[LoweredDesign]) -> Batch:
    prm = _stack([x.prm for x in lowered])
    col_rates = _stack([x.col_rates for x in lowered], fill=1)
    host_rows, host_span = _concat([x.host for x in lowered])
    inputs = (prm, col_rates, _stack([x.bds for x in lowered]), _stack([x.ch for x in lowered]),
              _stack([x.cons for x in lowered]), _stack([x.prog for x in lowered]),
              _stack([x.cores for x in lowered]), host_rows, host_span,
              _stack([x.lock_init for x in lowered]))
    n = len(lowered)
    n_ch = max(1, max(len(x.channels) for x in lowered))
    n_cores = max(1, max(len(x.core_tiles) for x in lowered))
    n_locks = max(1, max(len(x.lock_init) for x in lowered))
    n_cols = col_rates.shape[2]
    qdepth = int(prm[:, L.P_QDEPTH].max())
    max_events = max(1, int(prm[:, L.P_MAX_EVENTS].max()))
    state = (np.zeros((n, n_ch, L.S_NCOL), np.int64),  # st
             np.zeros((n, n_ch, qdepth, 2), np.int64),  # queue
             np.zeros((n, n_cores, L.K_NCOL), np.int64),  # kst
             np.zeros((n, n_cores, L.MAX_LOOP_DEPTH, 2), np.int64),  # kloop
             np.zeros((n, 1), np.int64),  # hst
             np.zeros((n, n_locks), np.int64),  # locks
             np.zeros((n, n_locks), np.int64),  # channels asleep on each lock (engine scratch)
             np.zeros((n, 2, n_cols), np.int64),  # counts (scratch)
             np.zeros((n, L.A_ROWS, n_ch + 1), np.int64))  # channel lists (scratch)
    outputs = {"ch_bytes": np.zeros((n, n_ch), np.int64),
               "ch_stats": np.zeros((n, n_ch, L.CC_N), np.int64),
               "core_stats": np.zeros((n, n_cores, L.KC_N), np.int64),
               "events": np.zeros((n, max_events, L.EV_NCOL), np.int64),
               "res": np.zeros((n, L.R_NCOL), np.int64)}
    return Batch(lowered, inputs, state, outputs, scratch_words(n_ch, n_cores, n_locks, qdepth))
