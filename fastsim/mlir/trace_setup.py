"""Trace set up by raw register writes in a runtime sequence, read as configuration with no time.

Older designs (mlir-aie's ``matrix_multiplication_using_cascade``) configure tracing with
``aiex.npu.write32`` to the trace, timer, event and stream-switch event-port registers, and give
the trace stream a shim BD with ``aiex.npu.writebd`` that a ``write32`` to a shim task queue
starts. fastsim gives trace streams no time (``aie.trace*``, flows from ``Trace`` ports), so these
writes change nothing it models: they are read as trace setup. A register outside these, or a
raw BD that is not started on a shim channel that only trace flows reach, stays outside the
subset, because it could change what fastsim models (locks, BDs, core control).
"""
from __future__ import annotations

from math import prod

from ..design import MM2S, S2MM, Buffer, Channel, Tile
from .values import Unreadable, attrs, groups, int_of, memref_of, split

# register offsets within a tile (AM025, AIE-ML; mlir-aie's trace utilities write the same ones for
# npu2) whose writes change nothing fastsim models, because they configure trace: timer control
# (trace time stamps), event generation and broadcast (a trace's start and stop events), trace
# control and trace events, and the stream-switch ports whose activity is traced. An event changes
# timing only through a register that reacts to it (core enable events, say), and those are not here.
INERT_REGISTERS = {0x32038: "Core_Processor_Bus"}  # lets a core reach memory-mapped registers
_EVENTS = {0x34000: "Timer_Control", 0x34008: "Event_Generate", 0x340D0: "Trace_Control0",
           0x340D4: "Trace_Control1", 0x340E0: "Trace_Event0", 0x340E4: "Trace_Event1"}
_BROADCAST = {0x34010 + 4 * i: f"Event_Broadcast{i}" for i in range(16)}
_CORE_MODULE = {**_EVENTS, **_BROADCAST, 0x3FF00: "Stream_Switch_Event_Port_Selection_0",
                0x3FF04: "Stream_Switch_Event_Port_Selection_1"}
_MEMORY_MODULE = {k - 0x20000: v for k, v in {**_EVENTS, **_BROADCAST}.items()}  # 0x14000.. of a compute tile
_MEM_TILE = {**{k + 0x60000: v for k, v in {**_EVENTS, **_BROADCAST}.items()},  # 0x94000..
             0xB0F00: "Stream_Switch_Event_Port_Selection_0", 0xB0F04: "Stream_Switch_Event_Port_Selection_1"}
TRACE_REGISTERS = {
    "compute": {**_CORE_MODULE, **_MEMORY_MODULE},
    "mem": _MEM_TILE,
    "shim": {**_EVENTS, **_BROADCAST, 0x3FF00: "Stream_Switch_Event_Port_Selection_0",
             0x3FF04: "Stream_Switch_Event_Port_Selection_1"},
}
# a shim DMA channel's task queue: a write pushes the BD id in its low bits (AM025 DMA_*_Task_Queue)
SHIM_TASK_QUEUES = {0x1D204: (S2MM, 0), 0x1D20C: (S2MM, 1), 0x1D214: (MM2S, 0), 0x1D21C: (MM2S, 1)}
# a shim DMA channel's control register (AM025 DMA_S2MM_n_Ctrl, DMA_MM2S_n_Ctrl: out-of-order and
# packet-controller settings): inert when only trace flows reach the channel (IRON's trace set-up
# writes it for the trace channel)
SHIM_CHANNEL_CONTROL = {0x1D200: (S2MM, 0), 0x1D208: (S2MM, 1), 0x1D210: (MM2S, 0), 0x1D218: (MM2S, 1)}
REGISTER_WRITES = ("aiex.npu.write32", "aiex.npu.maskwrite32", "aiex.npu.blockwrite", "aiex.buffer_clear")
_COL_SHIFT, _ROW_SHIFT = 25, 20  # an address without column and row attributes carries them
# a shim BD's address word (AM025 DMA_BDn_1): where ``address_patch`` writes a runtime argument's address
_SHIM_BD_ADDRESS, _SHIM_BD_STRIDE, _SHIM_BDS = 0x1D004, 0x20, 16
_SHIM_BD_BASE = _SHIM_BD_ADDRESS - 4  # a shim BD's first word (AM025 DMA_BDn_0)


class TraceSetup:
    """Register writes of one runtime sequence: which are trace setup (``write``), and the raw BDs
    (``writebd``) and address patches that a trace channel's task queue starts; ``finish``
    refuses every other raw BD and patch."""

    def __init__(self, reader):
        self.r = reader
        self.pending: dict[tuple[Tile, int], list] = {}  # (tile, bd id) -> writebd/address_patch ops not yet started
        self.unknown: list = []  # address patches into no shim BD

    def writebd(self, op) -> None:
        a, env = attrs(op), self.r.env
        key = (Tile(int_of(a["column"], env), int_of(a["row"], env)), int_of(a["bd_id"], env))
        self.pending.setdefault(key, []).append(op)

    def started(self, tile: Tile, bd: int) -> None:
        """A BD a data channel's queue started (``fastsim.mlir.raw_dma``): its writes and patches
        were instructions, no longer pending."""
        self.r.untimed += [(o.name, o.line) for o in self.pending.pop((tile, bd), [])]

    def address_patch(self, op) -> None:
        """``address_patch {addr}``: a runtime argument's address into a shim BD's address word;
        judged with the BD it patches."""
        try:
            tile, local = _split_address(int_of(attrs(op)["addr"], self.r.env))
        except (Unreadable, KeyError):
            self.unknown.append(op)
            return
        bd, rest = divmod(local - _SHIM_BD_ADDRESS, _SHIM_BD_STRIDE)
        if tile.row == 0 and rest == 0 and 0 <= bd < _SHIM_BDS:
            self.pending.setdefault((tile, bd), []).append(op)
        else:
            self.unknown.append(op)

    def into_buffer(self, op) -> bool:
        """A write into an ``aie.buffer``'s memory (``{buffer = @b}``, the address an offset in it):
        it sets data values, which fastsim does not model, and moves nothing."""
        ref = attrs(op).get("buffer")
        sym = str(ref[0]).lstrip("@").strip('"') if ref else None
        return sym is not None and isinstance(self.r.symbols.get(sym), Buffer)

    def write(self, op) -> str | None:
        """None when a ``write32``/``maskwrite32`` is trace or event set-up, a write into a
        buffer's memory (or changes nothing modelled); otherwise why it is refused."""
        if self.into_buffer(op):
            return None
        try:
            tile, address, value = self._register_write(op)
        except (Unreadable, KeyError, IndexError):
            return "its address and value are not constants fastsim can read"
        if self.inert(tile, address):
            return None
        if _shim_channel(SHIM_TASK_QUEUES, tile, address) and op.name == "aiex.npu.write32":
            direction, index = SHIM_TASK_QUEUES[address]
            key = (tile, value & 0xF)
            if self.pending.get(key) and self.r.is_trace_sink(Channel(tile, direction, index)):
                self.r.untimed += [(o.name, o.line) for o in self.pending.pop(key)]
                return None
        return (f"a write to register 0x{address:X} of {tile}: fastsim reads register writes only to trace, "
                "event, timer and stream-switch event-port registers, to a trace channel's control register and "
                "task queue, to data memory and buffers, and to the processor bus")

    def inert(self, tile: Tile, address: int) -> bool:
        """Whether a write to ``address`` of ``tile`` changes nothing fastsim models: a trace or
        event register, or a word of a compute or mem tile's data memory (the bottom
        ``TileKind.memory_bytes`` of its address space, AM025: data values, which fastsim does not
        model)."""
        arch = self.r.design.arch
        kind = arch.tile_kind_name(tile.row)
        if address in INERT_REGISTERS or address in TRACE_REGISTERS.get(kind, {}):
            return True
        if kind != "shim" and 0 <= address < arch.tile_kind(tile.row).memory_bytes:
            return True
        ch = _shim_channel(SHIM_CHANNEL_CONTROL, tile, address)
        return ch is not None and self.r.is_trace_sink(Channel(tile, *ch))

    def buffer_clear(self, op) -> str | None:
        """``aiex.buffer_clear(%tile, offset, length)``: zeroes part of a compute or mem tile's data
        memory in place; it changes values, which fastsim does not model, so where and how much
        does not matter. None unless the tile is a shim tile (it has no data memory)."""
        try:
            tile = self.r.value(split(groups(op, "(")[0].items)[0], Tile)
        except (Unreadable, IndexError):
            return "expected aiex.buffer_clear(%tile, offset, length)"
        if self.r.design.arch.tile_kind_name(tile.row) == "shim":
            return f"{tile} is a shim tile: it has no data memory to clear"
        return None

    def blockwrite(self, op) -> str | None:
        """``blockwrite(%data) {address, column, row}``: consecutive words from ``address``; None
        when every word is an inert register (``inert``) or the block is one shim BD (judged as
        ``writebd``, with the task-queue write that starts it); otherwise why it is refused."""
        a, env = attrs(op), self.r.env
        if self.into_buffer(op):
            return None
        try:
            address = int_of(a["address"], env)
            tile = Tile(int_of(a["column"], env), int_of(a["row"], env)) if "column" in a else None
            words = _block_words(op)
        except (Unreadable, KeyError, IndexError):
            return "its address and data are not constants fastsim can read"
        if tile is None:
            tile, address = _split_address(address)
        bd, rest = divmod(address - _SHIM_BD_BASE, _SHIM_BD_STRIDE)
        if tile.row == 0 and rest == 0 and 0 <= bd < _SHIM_BDS:
            self.pending.setdefault((tile, bd), []).append(op)
            return None
        bad = [address + 4 * i for i in range(words) if not self.inert(tile, address + 4 * i)]
        if not bad:
            return None
        return (f"a block write to register 0x{bad[0]:X} of {tile}: fastsim reads register writes only to trace, "
                "event, timer and stream-switch event-port registers, to data memory and buffers, and a shim BD "
                "that a trace channel starts")

    def finish(self) -> None:
        """Refuse the raw BDs and patches no channel's queue started."""
        for op in [o for ops in self.pending.values() for o in ops] + self.unknown:
            self.r.unsupported(op, "a BD or address patch written by register writes is read when a write32 to "
                                   "a DMA channel's start or task queue runs it; none runs this one")

    def _register_write(self, op) -> tuple[Tile, int, int]:
        """(tile, address within the tile, value) of ``write32(%addr, %value) {column, row}``, its
        attribute form ``write32 {address, column, row, value}``, or ``maskwrite32`` (the same
        with a mask)."""
        a, env = attrs(op), self.r.env
        if "address" in a:
            address, value = int_of(a["address"], env), int_of(a["value"], env)
        else:
            values = split(groups(op, "(")[0].items)
            address, value = int_of(values[0], env), int_of(values[1], env)
        if "column" in a and "row" in a:
            return Tile(int_of(a["column"], env), int_of(a["row"], env)), address, value
        return (*_split_address(address), value)


def _split_address(address: int) -> tuple[Tile, int]:
    """(tile, address within the tile) of an array address (column and row in its high bits)."""
    return Tile(address >> _COL_SHIFT, (address >> _ROW_SHIFT) & 0x1F), address & ((1 << _ROW_SHIFT) - 1)



def _shim_channel(table: dict, tile: Tile, address: int):
    """(direction, index) of a shim channel register in ``table``, None elsewhere."""
    return table.get(address) if tile.row == 0 else None


def _block_words(op) -> int:
    """Words a ``blockwrite`` writes: the element count of its data's memref type."""
    shape, bits = memref_of(op.items)
    return prod(shape) * bits // 32
