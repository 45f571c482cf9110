"""Design layer: what an AIE programmer writes, in mlir-aie IRON's vocabulary.

A ``Design`` places buffers in tile memories (or DDR), declares locks with initial values, builds
buffer descriptors (BDs) on DMA channels, routes MM2S channels to one or more S2MM channels, gives
compute tiles core programs and gives the host a runtime sequence of task pushes and waits.
Nothing is checked while building; ``fastsim.validate`` reports every problem at once.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .arch import Arch

MM2S = "mm2s"
S2MM = "s2mm"


@dataclass(frozen=True, order=True)
class Tile:
    col: int
    row: int

    def __str__(self) -> str:
        return f"tile({self.col},{self.row})"


@dataclass(frozen=True, order=True)
class Channel:
    """One DMA channel: ``direction`` is 'mm2s' (memory to stream) or 's2mm' (stream to memory)."""

    tile: Tile
    direction: str
    index: int

    def __hash__(self) -> int:
        """Computed once (channels key every per-channel table) from ints only, so the cached
        value stays right in another process (str hashes are salted per process)."""
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.tile.col, self.tile.row, self.direction == MM2S, self.index))
            object.__setattr__(self, "_hash", h)
        return h

    def __str__(self) -> str:
        return f"{self.tile}.{self.direction}{self.index}"


@dataclass(frozen=True)
class Buffer:
    id: int
    tile: Tile | None  # None: host memory (DDR), reached through shim DMAs
    size_bytes: int
    name: str


@dataclass(frozen=True)
class Lock:
    id: int
    tile: Tile
    init: int
    name: str


@dataclass
class BD:
    """A buffer descriptor: one transfer between a buffer and a stream.

    ``dims`` lists (size, stride) pairs in 32-bit words, innermost first, as the hardware's
    multi-dimensional addressing; without dims the transfer is contiguous. ``compression_ratio``
    shrinks the bytes on the stream (the DMA compresses; it never converts dtypes).
    ``iterations`` re-sends (or re-fills) the same addresses that many times (the BD's iteration
    wrap with step 0): how a mem tile re-sends a resident block without going back to DDR.
    ``packet_id``: the packet id an MM2S BD's header carries (mlir-aie's ``packet =
    #aie.packet_info<pkt_id = N>``); where its channel has several packet routes (fan-out by packet
    id) it picks the route this BD's packet takes, elsewhere it changes nothing.
    """

    id: int
    channel: Channel
    buffer: Buffer
    length_bytes: int
    offset_bytes: int = 0
    dims: tuple[tuple[int, int], ...] = ()
    acquire: tuple[Lock, int] | None = None
    release: tuple[Lock, int] | None = None
    next: "BD | None" = None
    compression_ratio: float = 1.0
    name: str = ""
    iterations: int = 1
    packet_id: int | None = None

    @property
    def total_bytes(self) -> int:
        """Bytes the BD moves over all its iterations (before compression)."""
        return self.length_bytes * self.iterations

    def __str__(self) -> str:
        return f"bd{self.id}" + (f"({self.name})" if self.name else "") + f" on {self.channel}"


@dataclass(frozen=True)
class Route:
    """A stream from one MM2S to its S2MMs. Circuit-switched (default): it owns its S2MMs, several
    destinations are a broadcast. ``packet=True`` (mlir-aie's ``aie.packet_flow``): several packet
    routes may end at one S2MM, each of the source's BDs one packet that holds the S2MM's port
    until its last word; a packet route has one destination. Fan-out by packet id: one MM2S may
    have several packet routes, each with its own ``packet_id`` and destination; each of its BDs
    is one packet to the route whose id the BD carries (``BD.packet_id``), as the stream switch
    forwards a packet by the id in its header."""

    src: Channel
    dsts: tuple[Channel, ...]
    packet: bool = False
    packet_id: int | None = None


# core program operations
@dataclass(frozen=True)
class Acquire:
    lock: Lock
    value: int = 1


@dataclass(frozen=True)
class Release:
    lock: Lock
    value: int = 1


@dataclass(frozen=True)
class Compute:
    cycles: int
    name: str = "kernel"


@dataclass(frozen=True)
class Loop:
    count: int
    body: tuple


# host runtime sequence operations
@dataclass(frozen=True)
class Push:
    channel: Channel
    bd: BD
    repeat: int = 1


@dataclass(frozen=True)
class Wait:
    channel: Channel


@dataclass
class Design:
    """A complete program for one array: data placement, DMA programs, cores and host sequence."""

    arch: Arch
    name: str = "design"
    buffers: list[Buffer] = field(default_factory=list)
    locks: list[Lock] = field(default_factory=list)
    bds: list[BD] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    static_chains: dict[Channel, BD] = field(default_factory=dict)
    cores: dict[Tile, list] = field(default_factory=dict)
    host: list = field(default_factory=list)
    # the design keeps its output in mem tiles on purpose (a fused group's intermediate): a run
    # that writes nothing to DDR is then expected, not an output that never leaves the array
    output_on_chip: bool = False
    _pushes: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- geometry helpers ---------------------------------------------------------------------
    def shim(self, col: int) -> Tile:
        return Tile(col, 0)

    def mem(self, col: int, row: int = 0) -> Tile:
        return Tile(col, 1 + row)

    def compute(self, col: int, row: int) -> Tile:
        """Compute tile ``row`` (0-based, counted from the first compute row) of column ``col``."""
        return Tile(col, self.arch.first_compute_row + row)

    # -- building -----------------------------------------------------------------------------
    def buffer(self, tile: Tile, size_bytes: int, name: str = "") -> Buffer:
        b = Buffer(len(self.buffers), tile, int(size_bytes), name or f"buf{len(self.buffers)}")
        self.buffers.append(b)
        return b

    def ddr_buffer(self, size_bytes: int, name: str = "") -> Buffer:
        b = Buffer(len(self.buffers), None, int(size_bytes), name or f"ddr{len(self.buffers)}")
        self.buffers.append(b)
        return b

    def lock(self, tile: Tile, init: int = 0, name: str = "") -> Lock:
        lk = Lock(len(self.locks), tile, int(init), name or f"lock{len(self.locks)}")
        self.locks.append(lk)
        return lk

    def bd(self, channel: Channel, buffer: Buffer, length_bytes: int | None = None, *,
           offset_bytes: int = 0, dims=(), acquire=None, release=None, next: BD | None = None,
           compression_ratio: float = 1.0, name: str = "", iterations: int = 1,
           packet_id: int | None = None) -> BD:
        if length_bytes is None:
            length_bytes = buffer.size_bytes - offset_bytes
        b = BD(len(self.bds), channel, buffer, int(length_bytes), int(offset_bytes),
               tuple(tuple(d) for d in dims), acquire, release, next, float(compression_ratio), name,
               int(iterations), None if packet_id is None else int(packet_id))
        self.bds.append(b)
        return b

    def discard(self) -> None:
        """Unlink the BD chains, which are reference cycles when cyclic, so that reference counting
        frees the design as soon as nothing holds it (a mapping search builds dozens and keeps
        one; the cycle collector would otherwise walk them all). The design is unusable after."""
        for b in self.bds:
            b.next = None

    def chain(self, *bds: BD, cyclic: bool = False) -> BD:
        """Link BDs in order (and back to the first when ``cyclic``); returns the first."""
        for a, b in zip(bds, bds[1:]):
            a.next = b
        if cyclic:
            bds[-1].next = bds[0]
        return bds[0]

    def route(self, src: Channel, *dsts: Channel, packet: bool = False, packet_id: int | None = None) -> Route:
        """A stream from ``src`` to ``dsts`` (see ``Route``); ``packet_id`` makes it a packet route
        of that id, one of several from ``src`` (fan-out by packet id)."""
        r = Route(src, tuple(dsts), packet or packet_id is not None, None if packet_id is None else int(packet_id))
        self.routes.append(r)
        return r

    def start_chain(self, channel: Channel, bd: BD) -> None:
        """Start a BD chain on ``channel`` at cycle 0 (statically configured, as for mem/compute tiles)."""
        self.static_chains[channel] = bd

    def core_program(self, tile: Tile, *ops) -> None:
        self.cores[tile] = list(ops)

    def push(self, channel: Channel, bd: BD, repeat: int = 1) -> None:
        self.host.append(self.push_op(channel, bd, repeat))

    def push_op(self, channel: Channel, bd: BD, repeat: int = 1) -> Push:
        """The design's one Push of (channel, bd, repeat): a runtime sequence repeats the same few
        pushes up to ~10^5 times, and shared objects let validation and lowering look each up once."""
        key = (channel, id(bd), int(repeat))
        op = self._pushes.get(key)
        if op is None or op.bd is not bd:
            op = self._pushes[key] = Push(channel, bd, int(repeat))
        return op

    def wait(self, channel: Channel) -> None:
        self.host.append(Wait(channel))


def channel_order(ch: Channel) -> tuple:
    """``sorted(channels, key=channel_order)`` is ``sorted(channels)`` without the dataclass
    comparisons (a design sorts thousands of channels)."""
    return ch.tile.col, ch.tile.row, ch.direction, ch.index


def mm2s(tile: Tile, index: int = 0) -> Channel:
    return Channel(tile, MM2S, index)


def s2mm(tile: Tile, index: int = 0) -> Channel:
    return Channel(tile, S2MM, index)


def object_fifo(design: Design, producer: Channel, consumers: list[Channel], depth: int,
                size_bytes: int, name: str = "of"):
    """Expand an ObjectFifo the way mlir-aie lowers it: ``depth`` buffers on each side, a producer
    lock initialised to ``depth`` and a consumer lock initialised to 0 per endpoint, and cyclic BD
    chains (ping-pong for depth 2) on the producer's MM2S and every consumer's S2MM.

    Shim endpoints have no local buffers and no locks: the host pushes their tasks instead, so only
    the tile side is built for them.
    Returns a dict with the locks and buffers each core program needs.
    """
    out = {"consumers": []}
    ptile = producer.tile
    is_shim_producer = ptile.row == 0
    if not is_shim_producer:
        p_prod = design.lock(ptile, depth, f"{name}_prod")
        p_cons = design.lock(ptile, 0, f"{name}_cons")
        bufs = [design.buffer(ptile, size_bytes, f"{name}_p{i}") for i in range(depth)]
        bds = [design.bd(producer, b, size_bytes, acquire=(p_cons, 1), release=(p_prod, 1),
                         name=f"{name}_out{i}") for i, b in enumerate(bufs)]
        design.start_chain(producer, design.chain(*bds, cyclic=True))
        out.update(producer_buffers=bufs, producer_prod_lock=p_prod, producer_cons_lock=p_cons)
    for j, dst in enumerate(consumers):
        out["consumers"].append(fifo_endpoint(design, dst, depth, size_bytes, f"{name}_c{j}"))
    design.route(producer, *consumers)
    return out


def fifo_endpoint(design: Design, channel: Channel, depth: int, size_bytes: int, name: str) -> dict:
    """The receiving side of an ObjectFifo on one S2MM channel: ``depth`` buffers, a producer lock
    (initialised to depth) that the DMA acquires, a consumer lock that the DMA releases for the core,
    and a cyclic BD chain over the buffers. Shim channels get nothing: the host pushes their tasks."""
    if channel.tile.row == 0:
        return {"channel": channel}
    prod = design.lock(channel.tile, depth, f"{name}_prod")
    cons = design.lock(channel.tile, 0, f"{name}_cons")
    bufs = [design.buffer(channel.tile, size_bytes, f"{name}_{i}") for i in range(depth)]
    bds = [design.bd(channel, b, size_bytes, acquire=(prod, 1), release=(cons, 1), name=f"{name}_in{i}")
           for i, b in enumerate(bufs)]
    design.start_chain(channel, design.chain(*bds, cyclic=True))
    return {"channel": channel, "buffers": bufs, "prod_lock": prod, "cons_lock": cons}


def buffer_peaks(design: Design) -> tuple[int, int]:
    """Bytes of buffers on the fullest compute tile and on the fullest mem tile (buffer pressure)."""
    first = design.arch.first_compute_row
    per_tile: dict[Tile, int] = {}
    for b in design.buffers:
        if b.tile is not None:
            per_tile[b.tile] = per_tile.get(b.tile, 0) + b.size_bytes
    l1 = max((v for t, v in per_tile.items() if t.row >= first), default=0)
    l2 = max((v for t, v in per_tile.items() if 0 < t.row < first), default=0)
    return l1, l2


def compute_cycles_by_kernel(ops, multiplier: int = 1, out: dict | None = None) -> dict[str, int]:
    """Total Compute cycles of a core program per kernel name (loops multiplied out)."""
    out = {} if out is None else out
    for op in ops:
        if isinstance(op, Compute):
            out[op.name] = out.get(op.name, 0) + op.cycles * multiplier
        elif isinstance(op, Loop):
            compute_cycles_by_kernel(op.body, multiplier * op.count, out)
    return out
