"""Data BDs programmed by raw register writes in a runtime sequence, lowered to host pushes.

mlir-aie's ``tile_dmas`` and ``memtile_dmas`` tests program a compute or mem tile's DMA from the
host: a BD written with ``aiex.npu.writebd`` (or as its words by ``aiex.npu.blockwrite``), a shim
BD's address patched to a runtime argument (``aiex.npu.address_patch``), and a ``write32`` to the
channel's start (task) queue that runs it. That is what ``dma_configure_task`` + ``dma_start_task``
say in words, so it is read as that: the BD chain from the queued BD (following ``next_bd``),
pushed to the channel ``repeat_count + 1`` times, its locks the tile's ``aie.lock``s by id.

Field layouts are AM025's (AIE-ML, aie-rt ``xaiemlgbl_params.h``), encoded as mlir-aie's
``AIEDmaToNpu.cpp`` writes them: compute tiles 6 words at 0x1D000 + 0x20 * id, mem tiles 8 words
at 0xA0000 + ..., shim tiles 8 words at 0x1D000 + .... What is not read is refused by name: BDs
with dimensions, zero padding, packet headers or compression; locks of a neighbouring tile or of a
shim; a BD id started before any write gave it; a shim BD no address patch ties to an argument.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from ..design import MM2S, S2MM, Channel, Lock, Push, Tile
from .values import Unreadable, attrs, groups, int_of, split

NOT_MINE = object()  # a register write this module does not read (the trace setup judges it)

_BD_BASE = {"compute": 0x1D000, "mem": 0xA0000, "shim": 0x1D000}
_BD_WORDS = {"compute": 6, "mem": 8, "shim": 8}
_BD_COUNT = {"compute": 16, "mem": 48, "shim": 16}
_BD_STRIDE = 0x20
# a channel's start queue (AM025 DMA_{S2MM,MM2S}_n_Start_Queue; Task_Queue on a shim tile): a write
# pushes Start_BD_ID (low bits), Repeat_Count [23:16] more runs, Enable_Token_Issue [31]
QUEUES = {
    "compute": {0x1DE04: (S2MM, 0), 0x1DE0C: (S2MM, 1), 0x1DE14: (MM2S, 0), 0x1DE1C: (MM2S, 1)},
    "mem": {**{0xA0604 + 8 * i: (S2MM, i) for i in range(6)}, **{0xA0634 + 8 * i: (MM2S, i) for i in range(6)}},
    "shim": {0x1D204: (S2MM, 0), 0x1D20C: (S2MM, 1), 0x1D214: (MM2S, 0), 0x1D21C: (MM2S, 1)},
}
# a channel's control register (DMA_*_Ctrl): only its Controller_ID field (where task-completion
# tokens go, [15:8]) is read, as changing nothing fastsim models
CONTROLS = {
    "compute": {0x1DE00: (S2MM, 0), 0x1DE08: (S2MM, 1), 0x1DE10: (MM2S, 0), 0x1DE18: (MM2S, 1)},
    "mem": {**{0xA0600 + 8 * i: (S2MM, i) for i in range(6)}, **{0xA0630 + 8 * i: (MM2S, i) for i in range(6)}},
    "shim": {0x1D200: (S2MM, 0), 0x1D208: (S2MM, 1), 0x1D210: (MM2S, 0), 0x1D218: (MM2S, 1)},
}
# a lock's value register (AM025 LockN_value): 0x10 apart from lock 0's; (address of lock 0, locks)
LOCK_VALUES = {"compute": (0x1F000, 16), "mem": (0xC0000, 64), "shim": (0x14000, 16)}
_CONTROLLER_ID = 0xFF00
_START_BD_BITS = {"compute": 0xF, "mem": 0x3F, "shim": 0xF}
_MEM_OWN_LOCKS = 64  # a mem tile BD's lock ids 64..127 are its own locks (0..63 west, 128.. east)


@dataclass(frozen=True)
class RawBd:
    """One BD's fields as the hardware holds them (lengths and addresses in bytes)."""

    length_bytes: int
    address_bytes: int
    valid: bool
    use_next: bool
    next_bd: int
    acquire: tuple[int, int] | None  # (lock id, value) when Lock_Acq_Enable
    release: tuple[int, int] | None  # (lock id, value) when the value is not 0
    unread: str = ""  # a field fastsim does not model that is set (dimensions, padding, packets)


def _signed7(v: int) -> int:
    v &= 0x7F
    return v - 0x80 if v & 0x40 else v


def _bits(word: int, lsb: int, mask: int) -> int:
    return (word >> lsb) & mask


def decode(kind: str, w: list[int]) -> RawBd:
    """A BD from its register words (AM025 layouts)."""
    if kind == "shim":
        locks, length, address = w[7], w[0] * 4, w[1] & ~3
        unread = ("dimensions" if w[3] & 0x3FFFFFFF or w[4] & 0x3FFFFFFF or w[5] & 0xFFFFF or w[6] & 0x3FFFFFF
                  else "a packet header" if w[2] >> 30 & 1 else "")
        nxt, use, valid = _bits(locks, 27, 0xF), locks >> 26 & 1, locks >> 25 & 1
        rel_val, rel_id, acq_en, acq_val, acq_id = (_signed7(locks >> 18), _bits(locks, 13, 0xF), locks >> 12 & 1,
                                                    _signed7(locks >> 5), locks & 0xF)
    elif kind == "mem":
        locks, length, address = w[7], (w[0] & 0x1FFFF) * 4, (w[1] & 0x7FFFF) * 4
        unread = ("a packet header" if w[0] >> 31 else "zero padding" if w[1] >> 26 or w[3] >> 27 or w[4] >> 27 & 0xF
                  or w[5] >> 17 else "dimensions" if w[2] & 0x7FFFFFF or w[3] & 0x7FFFFFF or w[4] & 0x7FFFFFF
                  or w[5] & 0x1FFFF or w[6] & 0x7FFFFF else "compression" if w[4] >> 31 else "")
        nxt, use, valid = _bits(w[1], 20, 0x3F), w[1] >> 19 & 1, locks >> 31
        rel_val, rel_id, acq_en, acq_val, acq_id = (_signed7(locks >> 24), _bits(locks, 16, 0xFF), locks >> 15 & 1,
                                                    _signed7(locks >> 8), locks & 0xFF)
    else:
        locks, length, address = w[5], (w[0] & 0x3FFF) * 4, _bits(w[0], 14, 0x3FFF) * 4
        unread = ("a packet header" if w[1] >> 30 & 1 else "compression" if w[1] >> 31 else
                  "dimensions" if w[2] & 0x3FFFFFF or w[3] & 0x1FFFFFFF or w[4] & 0x7FFFF else "")
        nxt, use, valid = _bits(locks, 27, 0xF), locks >> 26 & 1, locks >> 25 & 1
        rel_val, rel_id, acq_en, acq_val, acq_id = (_signed7(locks >> 18), _bits(locks, 13, 0xF), locks >> 12 & 1,
                                                    _signed7(locks >> 5), locks & 0xF)
    return RawBd(length, address, bool(valid), bool(use), nxt, (acq_id, acq_val) if acq_en else None,
                 (rel_id, rel_val) if rel_val else None, unread)


_WRITEBD_ZERO = ("d0_size", "d0_stride", "d1_size", "d1_stride", "d2_size", "d2_stride", "iteration_size",
                 "iteration_stride", "iteration_current")
_WRITEBD_PADS = ("d0_zero_before", "d0_zero_after", "d1_zero_before", "d1_zero_after", "d2_zero_before",
                 "d2_zero_after")


def from_writebd(kind: str, f: dict) -> RawBd:
    """A BD from ``aiex.npu.writebd``'s named fields (mlir-aie's units: ``buffer_length`` in
    words; ``buffer_offset`` in bytes on compute and shim tiles, in words on a mem tile, as
    ``AIEDmaToNpu.cpp`` encodes them)."""
    g = lambda k: f.get(k, 0)  # noqa: E731 - a missing field is 0, as mlir-aie's defaults
    unread = ("a packet header" if g("enable_packet") else "zero padding" if any(g(k) for k in _WRITEBD_PADS)
              else "dimensions" if any(g(k) for k in _WRITEBD_ZERO) else "")
    offset = g("buffer_offset") * (4 if kind == "mem" else 1)
    acq, rel = _signed7(g("lock_acq_val")), _signed7(g("lock_rel_val"))  # 7-bit fields, as encoded
    return RawBd(g("buffer_length") * 4, offset, bool(g("valid_bd")), bool(g("use_next_bd")), g("next_bd"),
                 (g("lock_acq_id"), acq) if g("lock_acq_enable") else None,
                 (g("lock_rel_id"), rel) if rel else None, unread)


class RawDma:
    """BDs written by register writes and the start-queue writes that run them: ``writebd``,
    ``blockwrite`` and ``address_patch`` record; ``write`` pushes or refuses."""

    def __init__(self, seq):
        self.seq, self.r, self.d = seq, seq.r, seq.r.design
        self.bds: dict[tuple[Tile, int], RawBd] = {}
        self.patches: dict[tuple[Tile, int], tuple[int, int]] = {}  # shim BD -> (argument index, byte offset)

    def kind(self, tile: Tile) -> str:
        return self.d.arch.tile_kind_name(tile.row)

    def writebd(self, op) -> None:
        a, env = attrs(op), self.r.env
        tile = Tile(int_of(a["column"], env), int_of(a["row"], env))
        fields = {k: int_of(v, env) for k, v in a.items() if v}
        self.bds[(tile, fields["bd_id"])] = from_writebd(self.kind(tile), fields)

    def blockwrite(self, tile: Tile, address: int, words: list[int] | None) -> int | None:
        """Record a block of one BD's words: its BD id; None when the block is no whole BD."""
        kind = self.kind(tile)
        bd, rest = divmod(address - _BD_BASE[kind], _BD_STRIDE)
        if rest or not 0 <= bd < _BD_COUNT[kind] or words is None or len(words) != _BD_WORDS[kind]:
            return None
        self.bds[(tile, bd)] = decode(kind, words)
        return bd

    def address_patch(self, op) -> None:
        """``address_patch(%offset) {addr, arg_idx}`` into a shim BD's address word: that BD reads
        or writes runtime argument ``arg_idx`` from byte ``offset`` (other patches: the trace
        setup's to judge)."""
        a, env = attrs(op), self.r.env
        tile, local = _tile_and_local({}, int_of(a["addr"], env), env)
        bd, rest = divmod(local - _BD_BASE["shim"] - 4, _BD_STRIDE)
        if tile.row != 0 or rest or not 0 <= bd < _BD_COUNT["shim"] or "arg_idx" not in a:
            return
        inner = split(groups(op, "(")[0].items) if groups(op, "(") else [()]
        offset = int_of(inner[0], env) if inner and inner[0] else 0
        self.patches[(tile, bd)] = (int_of(a["arg_idx"], env), offset)

    def write(self, op, tile: Tile, local: int, value: int, mask: int | None):
        """None when the write is read (a start queue pushes a chain, a control register's
        Controller_ID is inert), a reason when refused, NOT_MINE for other registers."""
        kind = self.kind(tile)
        base, count = LOCK_VALUES[kind]
        lock_id, rest = divmod(local - base, 0x10)
        if not rest and 0 <= lock_id < count:
            if mask is not None:
                return f"a masked write to lock {lock_id}'s value register of {tile}: only a whole value is read"
            found = self.r.lock_ids.get((tile, lock_id))
            if found is None:
                return f"a write to lock {lock_id} of {tile}, which no aie.lock declares"
            self.set_lock(found, value)
            return None
        queue, control = QUEUES[kind].get(local), CONTROLS[kind].get(local)
        if queue is not None and mask is None:
            ch = Channel(tile, *queue)
            if self.r.is_trace_sink(ch):
                return NOT_MINE
            self._start(op, ch, value & _START_BD_BITS[kind], (value >> 16 & 0xFF) + 1)
            return None
        if control is not None and not self.r.is_trace_sink(Channel(tile, *control)):
            changed = mask if mask is not None else 0xFFFFFFFF
            if value & changed & ~_CONTROLLER_ID or (mask is not None and mask & ~_CONTROLLER_ID):
                return (f"a write to register 0x{local:X} of {tile}, its {control[0]} {control[1]} control, beyond "
                        f"the Controller_ID field (value 0x{value:X}{f', mask 0x{mask:X}' if mask is not None else ''})"
                        ": a reset, out-of-order mode or decompression is not modelled")
            return None
        return NOT_MINE

    def set_lock_op(self, op) -> None:
        """``aiex.set_lock(%lock, value)``: as a write to the lock's value register."""
        args = split(groups(op, "(")[0].items)
        self.set_lock(self.r.value(args[0], Lock), int_of(args[1], self.r.env))

    def set_lock(self, lock, value: int) -> None:
        """The host sets a lock's value (``aiex.set_lock``, a write to its value register). fastsim's
        host steps before the first wait all happen at cycle 0, before any core or channel moves
        (the host goes first in each cycle), so a set there is the lock's initial value: read so.
        After a wait, or after a push that finds its channel's task queue full (the host then waits
        for room), the set would land while the design runs, which the host steps do not model."""
        why = self._not_at_cycle_zero()
        if why:
            raise Unreadable(f"sets lock {lock.name} of {lock.tile}, and {why}: a lock set while the design runs is "
                             "not modelled, only one at cycle 0 (before the host's first wait: its initial value)")
        if not 0 <= value <= self.d.arch.lock_max_value:
            raise Unreadable(f"sets lock {lock.name} to {value}: a lock holds 0..{self.d.arch.lock_max_value}")
        self.d.locks[lock.id] = replace(self.d.locks[lock.id], init=value)  # lowering reads init here, by id
        self.r.notes.append(f"lock {lock.name} of {lock.tile}: set to {value} by the host before its first wait: "
                            "its initial value")

    def _start(self, op, ch: Channel, first: int, repeat: int) -> None:
        """Push the chain from BD ``first`` of ``ch``'s tile (``next_bd`` links; a link back to a BD
        already in it closes a cycle)."""
        made, order, bd_id, closes = {}, [], first, None
        while True:
            raw = self.bds.get((ch.tile, bd_id))
            if raw is None:
                raise Unreadable(f"starts BD {bd_id} of {ch.tile}, which no writebd or blockwrite wrote")
            self.seq.trace.started(ch.tile, bd_id)  # its writes are judged with this start
            made[bd_id] = self._bd(ch, bd_id, raw)
            order.append(made[bd_id])
            if not raw.use_next:
                break
            if raw.next_bd in made:
                closes = made[raw.next_bd]  # a link back: the chain is cyclic
                break
            bd_id = raw.next_bd
        for a, b in zip(order, order[1:]):
            a.next = b
        order[-1].next = closes
        if closes is None:
            self.d.push(ch, order[0], repeat)
        else:
            self._endless(op, ch, order[0], repeat)
        self.r.gives_work(ch, op)

    def _endless(self, op, ch: Channel, first, repeat: int) -> None:
        """A cyclic chain a queue write starts runs until the part stops: a task that never
        completes, which fastsim's host pushes cannot be. Where the write comes at cycle 0 of
        fastsim's host model (``_not_at_cycle_zero``), a static chain on the channel (as an
        ``aie.mem`` program's) starts exactly as the push would: in the channel's control phase of
        cycle 0, after the host's, with the same set-up. So it is read as one, unless an earlier push
        queued on the channel first (which would run first) or the chain repeats."""
        why = (self._not_at_cycle_zero() or
               ("an earlier push queued a task on it" if any(isinstance(s, Push) and s.channel == ch
                                                             for s in self.d.host) else
                "its channel already runs a chain" if ch in self.d.static_chains else
                f"it repeats {repeat} times" if repeat != 1 else ""))
        if why:
            raise Unreadable(f"starts a BD chain that cycles forever on {ch}, and {why}: read only as a start at "
                             "cycle 0 (before the host's first wait)")
        self.d.start_chain(ch, first)
        self.r.notes.append(f"{ch}: the cyclic BD chain its queue write starts runs from cycle 0, where fastsim's host "
                            "steps before the first wait run")

    def _not_at_cycle_zero(self) -> str:
        """Why a host step read now would not run at cycle 0 ("" when it would). fastsim's host
        goes first in each cycle and runs every step up to its first wait at once, unless a push
        finds its channel's task queue full; in a run list's configuration that runs several
        sequences, a later run's steps come after the earlier run's waits."""
        steps, depth = self.d.host, self.d.arch.task_queue_depth
        pushes = Counter(s.channel for s in steps if isinstance(s, Push))
        runs = self.r.run_sequences
        return ("a run list's configuration runs its sequences several times" if runs is not None and len(runs) > 1
                else "the host waited before it" if any(not isinstance(s, Push) for s in steps)
                else "the host waited for room in a task queue before it" if any(n > depth for n in pushes.values())
                else "")

    def _bd(self, ch: Channel, bd_id: int, raw: RawBd):
        where = f"BD {bd_id} of {ch.tile}"
        if not raw.valid:
            raise Unreadable(f"starts {where}, which is not valid (valid_bd = 0)")
        if raw.unread:
            raise Unreadable(f"{where} has {raw.unread}: raw BDs are read as contiguous transfers only")
        if raw.length_bytes <= 0:
            raise Unreadable(f"{where} moves no data (buffer_length 0)")
        buf, offset = self._buffer(ch, bd_id, raw)
        acquire = self._lock(ch.tile, raw.acquire, where, "acquire") if raw.acquire else None
        release = self._lock(ch.tile, raw.release, where, "release") if raw.release else None
        return self.d.bd(ch, buf, raw.length_bytes, offset_bytes=offset, acquire=acquire, release=release,
                         name=f"{buf.name}_bd{bd_id}")

    def _buffer(self, ch: Channel, bd_id: int, raw: RawBd):
        """(buffer, byte offset in it): a runtime argument for a shim BD (its address patch), else
        the tile's ``aie.buffer`` holding the BD's addresses, or a buffer made for them when the
        design declares none there."""
        if ch.tile.row == 0:
            patch = self.patches.get((ch.tile, bd_id))
            if patch is None:
                raise Unreadable(f"starts shim BD {bd_id} of {ch.tile}, whose address no address_patch ties to a "
                                 "runtime argument")
            args = self.seq.argument_buffers
            if not 0 <= patch[0] < len(args) or args[patch[0]] is None:
                raise Unreadable(f"an address patch of shim BD {bd_id} names argument {patch[0]}, which is no "
                                 "memref argument of the runtime sequence")
            return args[patch[0]], patch[1]
        lo, hi = raw.address_bytes, raw.address_bytes + raw.length_bytes
        for buf in self.d.buffers:
            start = self.r.buffer_addresses.get(buf.id)
            if buf.tile == ch.tile and start is not None and start <= lo and hi <= start + buf.size_bytes:
                return buf, lo - start
            if buf.tile == ch.tile and start is not None and lo < start + buf.size_bytes and start < hi:
                raise Unreadable(f"BD {bd_id} of {ch.tile} covers bytes {lo}..{hi}, across the end of "
                                 f"aie.buffer {buf.name} at {start}")
        key = ("raw", ch.tile, lo, hi)
        if key not in self.r.symbols:
            self.r.symbols[key] = self.d.buffer(ch.tile, hi - lo, f"raw_{ch.tile.col}_{ch.tile.row}_at_{lo}")
        return self.r.symbols[key], 0

    def _lock(self, tile: Tile, lock: tuple[int, int], where: str, what: str):
        lock_id, value = lock
        if tile.row == 0:
            raise Unreadable(f"{where} {what}s shim lock {lock_id}: shim locks are not modelled")
        if self.kind(tile) == "mem":
            if not _MEM_OWN_LOCKS <= lock_id < 2 * _MEM_OWN_LOCKS:
                raise Unreadable(f"{where} {what}s lock id {lock_id}, a neighbouring mem tile's: only its own "
                                 f"locks ({_MEM_OWN_LOCKS}..{2 * _MEM_OWN_LOCKS - 1}) are read")
            lock_id -= _MEM_OWN_LOCKS
        found = self.r.lock_ids.get((tile, lock_id))
        if found is None:
            raise Unreadable(f"{where} {what}s lock {lock_id} of {tile}, which no aie.lock declares (its initial "
                             "value is unknown)")
        if what == "release" and value < 0:
            raise Unreadable(f"{where} releases lock {lock_id} by {value}: a negative release is not modelled")
        # an acquire's sign tells greater-or-equal from equal on AIE-ML; both are read as
        # greater-or-equal, as for aie.use_lock (docs/mlir.md, Assumptions)
        return found, abs(value)


_LOCAL = (1 << 20) - 1  # the address within a tile; column and row lie above (col << 25 | row << 20)


def _tile_and_local(a: dict, address: int, env) -> tuple[Tile, int]:
    if "column" in a and "row" in a:
        return Tile(int_of(a["column"], env), int_of(a["row"], env)), address & _LOCAL
    return Tile(address >> 25, (address >> 20) & 0x1F), address & _LOCAL


def register_write(op, env) -> tuple[Tile, int, int, int | None]:
    """(tile, address within it, value, mask or None) of ``write32``/``maskwrite32``, positional
    (``(%addr, %value[, %mask]) {column, row}``) or by attributes (``{address, value, mask}``)."""
    a = attrs(op)
    if "address" in a:
        address, value = int_of(a["address"], env), int_of(a["value"], env)
        mask = int_of(a["mask"], env) if "mask" in a else None
    else:
        values = split(groups(op, "(")[0].items)
        address, value = int_of(values[0], env), int_of(values[1], env)
        mask = int_of(values[2], env) if op.name == "aiex.npu.maskwrite32" else None
    tile, local = _tile_and_local(a, address, env)
    return tile, local, value & 0xFFFFFFFF, None if mask is None else mask & 0xFFFFFFFF


def block_write(op, reader) -> tuple[Tile, int, list[int] | None]:
    """(tile, address within it, the words or None when not constant) of ``blockwrite(%data)``,
    ``%data`` a ``memref.get_global`` of a ``memref.global ... = dense<[...]>``."""
    a, env = attrs(op), reader.env
    tile, local = _tile_and_local(a, int_of(a["address"], env), env)
    data = next((i.text for i in groups(op, "(")[0].items if getattr(i, "kind", "") == "VALUE"), None)
    glob = reader.globals.get(env.get(data, ("", ""))[1]) if isinstance(env.get(data), tuple) else None
    return tile, local, None if glob is None else _dense_words(glob)


def _dense_words(op) -> list[int] | None:
    items = list(op.items)
    for k, it in enumerate(items[:-1]):
        nxt = items[k + 1]
        if getattr(it, "text", "") == "dense" and getattr(nxt, "kind", "") == "<" and nxt.items \
                and getattr(nxt.items[0], "kind", "") == "[":
            try:
                return [int_of(e) & 0xFFFFFFFF for e in split(nxt.items[0].items)]
            except Unreadable:
                return None
    return None
