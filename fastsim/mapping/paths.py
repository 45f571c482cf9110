"""Data paths shared by the whole-array designs (mlir-aie ObjectFifo link/join patterns)."""
from __future__ import annotations

import numpy as np

from ..design import BD, Design, Lock, mm2s, s2mm

# How a streamed tensor's units are shared among the columns that stream it: ``equal`` shares
# (every column waits for the slowest one: N x the slowest bandwidth) or shares in proportion to
# each column's bandwidth (approaching the sum on asymmetric columns; identical on symmetric ones).
STREAM_SPLITS = ("equal", "proportional")


def stream_rates(arch, first: int, cols: int, direction: str = "read") -> list[float]:
    """Bytes per cycle one shim channel of each column moves: the column's shim bandwidth, at most
    one stream's width."""
    shim = arch.shim_read_bytes_per_cycle if direction == "read" else arch.shim_write_bytes_per_cycle
    return [min(x, arch.stream_bytes_per_cycle) for x in shim[first:first + cols]]


def deal(units: int, rates, how: str = "equal") -> list[int]:
    """The column (index into ``rates``) each of ``units`` equal units goes to: round-robin for
    ``equal``; for ``proportional`` each unit goes to the column that would finish its share first
    at its rate (ties to the lower column, so equal rates give round-robin too)."""
    cols = len(rates)
    if how == "equal":
        return [u % cols for u in range(units)]
    load, out = [0] * cols, []
    for _ in range(units):
        c = _first_to_finish(load, rates)
        load[c] += 1
        out.append(c)
    return out


def _first_to_finish(load, rates) -> int:
    """The column that would finish one more unit first at its rate (ties to the lower column)."""
    return min(range(len(rates)), key=lambda i: ((load[i] + 1) / rates[i], i))


def shares(units: int, rates, how: str = "equal") -> list[int]:
    """How many of ``units`` equal units each column gets, without dealing every unit: for
    ``proportional`` each column's share rounded down, the rest dealt one by one as ``deal`` does."""
    cols = len(rates)
    if how == "equal":
        return [units // cols + (c < units % cols) for c in range(cols)]
    total = float(sum(rates))
    base = [int(units * r / total) for r in rates]
    rest = units - sum(base)
    for _ in range(rest):
        base[_first_to_finish(base, rates)] += 1
    return base


def whole_words(nbytes: float) -> int:
    """Bytes rounded up to whole 32-bit words (DMAs move words), at least one word."""
    return max(4, -(-int(-(-nbytes // 1)) // 4) * 4)


def onchip_bytes(nbytes, window: int, unit):
    """Bytes of an on-chip hand-off buffer: the whole operand, or a ring of ``window`` bytes, never
    less than one transfer ``unit`` (works on numpy arrays and plain numbers)."""
    if not window:
        return nbytes
    return np.maximum(np.minimum(nbytes, whole_words(window)), unit)


def join_outputs(d: Design, col: int, rows: int | list[int], unit: int, drain_channel: int,
                 name: str, keep_bytes: int = 0, core_buffers: int = 2) -> tuple[list[tuple[Lock, Lock]], list[BD]]:
    """Each core of column ``col`` (compute rows ``rows``: a count or a list) sends its output tile
    (``unit`` bytes) over MM2S0 to mem-tile S2MM(2 + i) for the i-th of those cores; the mem tile
    joins the column's tiles and drains them through MM2S ``drain_channel`` to shim S2MM0
    (ObjectFifo join). ``core_buffers`` buffers on each side (1: the core waits for each send, the
    mem tile for each drain).

    ``keep_bytes`` > 0 keeps the output on chip instead (a fused group's intermediate): each core's
    tiles land in a mem-tile buffer of that many bytes (a ring when smaller than the output) and
    nothing drains; the host pushes the returned receive BDs (one per core) as the tiles come.
    Returns each core's (producer lock, consumer lock) (the core acquires the producer lock before
    writing a tile and releases the consumer lock when it is ready to send) and the receive BDs."""
    memt = d.mem(col)
    d.output_on_chip = d.output_on_chip or bool(keep_bytes)
    core_rows = list(range(rows)) if isinstance(rows, int) else list(rows)
    joined = [] if keep_bytes else [d.buffer(memt, len(core_rows) * unit, f"{name}{col}_join{i}")
                                    for i in range(core_buffers)]
    parts, core_locks, keep = [], [], []
    for r, core_row in enumerate(core_rows):
        ch = s2mm(memt, 2 + r)
        if keep_bytes:
            kept = d.buffer(memt, keep_bytes, f"{name}{col}_{r}_onchip")
            keep.append(d.bd(ch, kept, unit, name=f"{name}{col}_{r}_keep"))
        else:
            prod = d.lock(memt, core_buffers, f"{name}{col}_{r}_prod")
            cons = d.lock(memt, 0, f"{name}{col}_{r}_cons")
            bds = [d.bd(ch, joined[i], unit, offset_bytes=r * unit, acquire=(prod, 1), release=(cons, 1),
                        name=f"{name}{col}_{r}_in{i}") for i in range(core_buffers)]
            d.start_chain(ch, d.chain(*bds, cyclic=True))
            parts.append((prod, cons))
        core = d.compute(col, core_row)
        core_prod = d.lock(core, core_buffers, f"{name}{col}_{r}_core_prod")
        core_cons = d.lock(core, 0, f"{name}{col}_{r}_core_cons")
        bufs = [d.buffer(core, unit, f"{name}{col}_{r}_{i}") for i in range(core_buffers)]
        out = mm2s(core, 0)
        d.start_chain(out, d.chain(*[d.bd(out, b, unit, acquire=(core_cons, 1), release=(core_prod, 1),
                                          name=f"{name}{col}_{r}_out{i}") for i, b in enumerate(bufs)],
                                   cyclic=True))
        d.route(out, ch)
        core_locks.append((core_prod, core_cons))
    if keep_bytes:
        return core_locks, keep
    drain = mm2s(memt, drain_channel)
    bds = [d.bd(drain, joined[i], unit, offset_bytes=r * unit, acquire=(cons, 1), release=(prod, 1),
                name=f"{name}{col}_out{i}_{r}") for i in range(core_buffers) for r, (prod, cons) in enumerate(parts)]
    d.start_chain(drain, d.chain(*bds, cyclic=True))
    d.route(drain, s2mm(d.shim(col), 0))
    return core_locks, keep


def push_round(d: Design, entries, times: int = 1) -> None:
    """Push one round of host tasks ``times`` times over, interleaving every (bd, count) entry's
    chunks (at most max_task_repeat each) in proportion to the counts: the entry with the most
    tasks pushes a whole chunk per pass and every other entry as much of its own count as that
    entry has done of its count. A channel's queue then never fills while the tasks another
    channel needs to drain it are still unpushed (a broadcast, or on-chip A sends several per B
    task, deadlock otherwise). Entries of equal counts push exactly as plain round robin does."""
    cap = d.arch.max_task_repeat
    live = [[bd, count, 0] for bd, count in entries if bd is not None and count > 0]
    most = max((count for _, count, _ in live), default=0)
    ops, done_most = [], 0
    while done_most < most:
        done_most = min(most, done_most + cap)
        for entry in live:
            bd, count, done = entry
            target = -(-count * done_most // most)  # ceil: a smaller entry is never behind
            while done < target:
                step = min(target - done, cap)
                ops.append(d.push_op(bd.channel, bd, step))
                done += step
            entry[2] = done
    d.host.extend(ops * times)
