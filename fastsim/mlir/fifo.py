"""Object FIFOs lowered the way mlir-aie's stateful transform lowers them.

A FIFO of depth d between two tiles that share memory (adjacent compute tiles, one consumer, no
DMA features asked for) is d buffers and one producer/consumer lock pair that both cores use.
Otherwise each tile end gets d buffers, a producer lock initialised to d and a consumer lock to 0,
and a cyclic BD ring on a DMA channel of its own; a shim end gets a shim channel that the runtime
sequence pushes tasks to (named by the FIFO). ``aie.objectfifo.link`` makes a mem tile the
consumer of its input FIFOs and the producer of its outputs over one set of buffers, those of the
larger FIFO of a one-to-one link (both sides move whole buffers: a 16-word object reaches an 8-word
FIFO as two objects), of a distribute's input or a join's output: a distribute (one input,
several outputs) writes each output's slice, from its offset to the next, under that output's
lock pair and each output reads its slice; a join is the mirror image.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..design import MM2S, S2MM, Tile
from .syntax import Atom, Group
from .records import pad_layout
from .values import Unreadable, attrs, groups, int_list, int_of, memref_bytes, memref_of, split, word


@dataclass
class Fifo:
    name: str
    producer: Tile
    consumers: list
    depths: list           # one per end: producer first, then each consumer
    size_bytes: int
    bits: int
    attrs: dict
    line: int
    dims_to_stream: tuple = ()
    pads: tuple = ()  # padDimensions: zero padding the producer's MM2S adds, outermost first
    link_in: object = None   # the link this FIFO feeds (it is one of its inputs)
    link_out: object = None  # the link this FIFO leaves (it is one of its outputs)


@dataclass
class Link:
    ins: list
    outs: list
    src_offsets: list
    dst_offsets: list
    line: int
    tile: Tile | None = None


@dataclass
class Fifos:
    reader: object
    fifos: dict = field(default_factory=dict)
    links: list = field(default_factory=list)
    ends: dict = field(default_factory=dict)  # (fifo, port, tile) -> (acquire lock, release lock)

    def declare(self, op) -> None:
        if op.name == "aie.objectfifo":
            self._fifo(op)
        else:
            self._link(op)

    def _fifo(self, op) -> None:
        r = self.reader
        name = next(i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL")
        args = split(groups(op, "(")[0].items)
        producer = r.value(args[0])
        consumers = [r.value([i]) for i in args[1][0].items if isinstance(i, Atom) and i.kind == "VALUE"]
        depth_items = args[2]
        if isinstance(depth_items[0], Group):
            depths = int_list(depth_items[0])
        else:
            depths = [int_of(depth_items)] * (1 + len(consumers))
        shape, bits = memref_of(op.items)
        if any(isinstance(i, Atom) and i.kind == "ARROW" for i in op.items):
            raise Unreadable(f"object FIFO {name}: a consumer element type of its own (`: !aie.objectfifo<...> -> "
                             "!aie.objectfifo<...>`) is not modelled")
        most = r.design.arch.lock_max_value  # a FIFO's producer lock starts at its depth
        bad = [d for d in depths if not 1 <= d <= most]
        if bad or len(depths) != 1 + len(consumers):
            raise Unreadable(f"object FIFO {name}: depth {depths if len(depths) > 1 else depths[0]}: one depth, or one "
                             f"per end ({1 + len(consumers)}), each in 1..{most} (the lock that counts its free "
                             "elements holds at most that)")
        if not all(1 <= n < 2**32 for n in shape):
            raise Unreadable(f"object FIFO {name}: element memref shape {list(shape)}: sizes must be in 1..2**32 - 1")
        a = attrs(op)
        for key in ("repeat_count", "init_values", "plio", "aie_stream", "disable_synchronization", "iter_count"):
            if key in a:
                raise Unreadable(f"object FIFO {name}: attribute {key} is not modelled")
        dims = ()
        for items in (op.items, args[0]):  # IRON writes it after the producer: (%t dimensionsToStream [...], ...)
            texts = [i.text if isinstance(i, Atom) else None for i in items]
            if "dimensionsToStream" in texts:
                dims = _layout(items[texts.index("dimensionsToStream") + 1])
        pads = pad_layout(_first_square(a["padDimensions"])) if "padDimensions" in a else ()
        self.fifos[name] = Fifo(name, producer, consumers, depths, memref_bytes(shape, bits), bits, a, op.line, dims,
                                pads)

    def _link(self, op) -> None:
        squares = groups(op, "[")
        ins = [i.text.lstrip("@") for i in squares[0].items if isinstance(i, Atom) and i.kind == "SYMBOL"]
        outs = [i.text.lstrip("@") for i in squares[1].items if isinstance(i, Atom) and i.kind == "SYMBOL"]
        offsets = [g for g in groups(op, "(")]
        src, dst = [], []
        if offsets:
            inner = [i for i in offsets[0].items if isinstance(i, Group)]
            src = int_list(inner[0]) if inner else []
            dst = int_list(inner[1]) if len(inner) > 1 else []
        self.links.append(Link(ins, outs, src, dst, op.line))

    # -- expansion ---------------------------------------------------------------------------------
    def expand(self) -> None:
        for link in self.links:
            for n in link.ins + link.outs:
                if n not in self.fifos:
                    raise Unreadable(f"line {link.line}: aie.objectfifo.link names unknown FIFO @{n}")
            for n in link.ins:
                self.fifos[n].link_in = link
            for n in link.outs:
                self.fifos[n].link_out = link
            link.tile = self.fifos[link.outs[0]].producer
        for f in self.fifos.values():
            self._expand(f)
        for link in self.links:
            self._expand_link(link)

    def _expand(self, f: Fifo) -> None:
        r, d = self.reader, self.reader.design
        if self._shared(f):
            prod = d.lock(f.producer, f.depths[0], f"{f.name}_prod_lock")
            cons = d.lock(f.producer, 0, f"{f.name}_cons_lock")
            for i in range(f.depths[0]):
                d.buffer(f.producer, f.size_bytes, f"{f.name}_buff_{i}")
            self.ends[(f.name, "Produce", f.producer)] = (prod, cons)
            self.ends[(f.name, "Consume", f.consumers[0])] = (cons, prod)
            return
        # the producer's end
        if f.link_out is not None:
            src = self._link_channel(f.link_out, f, MM2S)
        elif f.producer.row == 0:
            src = r.channel_for(f.producer, MM2S)
            r.symbols.setdefault(f.name, src)
        else:
            src = r.channel_for(f.producer, MM2S)
            ring = self._ring(src, f.producer, f.depths[0], f.size_bytes, f.bits, f.name, f.dims_to_stream, send=True,
                              pads=f.pads)
            self.ends[(f.name, "Produce", f.producer)] = ring
        for j, tile in enumerate(f.consumers):
            depth = f.depths[1 + j] if 1 + j < len(f.depths) else f.depths[-1]
            if f.link_in is not None and tile == f.link_in.tile:
                dst = self._link_channel(f.link_in, f, S2MM)
            elif tile.row == 0:
                dst = r.channel_for(tile, S2MM)
                r.symbols.setdefault(f.name, dst)
            else:
                dst = r.channel_for(tile, S2MM)
                ring = self._ring(dst, tile, depth, f.size_bytes, f.bits, f"{f.name}_cons", (), send=False)
                self.ends[(f.name, "Consume", tile)] = (ring[1], ring[0])
            r.connect(src, dst)

    def _shared(self, f: Fifo) -> bool:
        """Whether mlir-aie would pass this FIFO through shared memory instead of DMAs."""
        if len(f.consumers) != 1 or f.link_in or f.link_out or f.dims_to_stream or "via_DMA" in f.attrs:
            return False
        a, b = f.producer, f.consumers[0]
        arch = self.reader.design.arch
        if arch.tile_kind_name(a.row) != "compute" or arch.tile_kind_name(b.row) != "compute":
            return False
        return abs(a.col - b.col) + abs(a.row - b.row) <= 1

    def _ring(self, ch, tile, depth, size_bytes, bits, name, dims, send: bool, pads=()):
        """``depth`` buffers, a producer lock (init depth) and consumer lock (init 0) and a cyclic BD
        ring on ``ch``: an MM2S acquires the consumer lock and releases the producer lock, an S2MM
        the other way round. Returns (producer lock, consumer lock)."""
        d = self.reader.design
        prod = d.lock(tile, depth, f"{name}_prod_lock")
        cons = d.lock(tile, 0, f"{name}_cons_lock")
        bds = []
        for i in range(depth):
            buf = d.buffer(tile, size_bytes, f"{name}_buff_{i}")
            acq, rel = ((cons, 1), (prod, 1)) if send else ((prod, 1), (cons, 1))
            bds.append(self.reader.make_bd(ch, buf, bits, 0, size_bytes * 8 // bits, *_sizes(dims, size_bytes, bits,
                                                                                              pads),
                                           acquire=acq, release=rel, name=buf.name, pads=pads))
        d.start_chain(ch, d.chain(*bds, cyclic=True))
        return prod, cons

    # -- links ------------------------------------------------------------------------------------
    def _link_channel(self, link: Link, f: Fifo, direction: str):
        chans = getattr(link, "channels", None)
        if chans is None:
            chans = link.channels = {}
        key = (f.name, direction)
        if key not in chans:
            chans[key] = self.reader.channel_for(link.tile, direction)
        return chans[key]

    def _expand_link(self, link: Link) -> None:
        """The mem tile's side of a link as ``--aie-objectFifo-stateful-transform`` lowers it
        (``createObjectFifoElements``, ``createMemTileDMA``): buffers of one FIFO, the target (the
        input of a distribute, the output of a join, the larger of a one-to-one link), in its
        depth at the mem tile; a distribute or join slices each buffer at the link's offsets, one
        lock pair per slice; a one-to-one link moves whole target buffers on both sides, so a
        16-word object leaves as two objects of an 8-word FIFO, not as its first 8 words."""
        d = self.reader.design
        ins = [self.fifos[n] for n in link.ins]
        outs = [self.fifos[n] for n in link.outs]
        tile = link.tile
        if any(tile not in f.consumers for f in ins):
            raise Unreadable(f"line {link.line}: the link's tile must consume its input FIFOs")
        distribute, join = len(outs) > 1, len(ins) > 1
        if distribute and join:
            raise Unreadable(f"line {link.line}: a link with several inputs and several outputs")
        target = _link_target(ins[0], outs[0], distribute, join)
        slices = _link_slices(link, target, ins, outs, distribute, join)
        depth = _end_depth(target, tile)
        # fastsim's DMA moves a padded BD's zeros as bytes read from the buffer (reader.padded), so a
        # buffer must hold the padded length of a side that pads; mlir-aie's holds the unpadded target
        room = max([target.size_bytes] + [f.size_bytes for f in outs if f.pads])
        bufs = [d.buffer(tile, room, f"{target.name}_link_buff_{i}") for i in range(depth)]
        pairs = [(d.lock(tile, depth, f"{name}_link_prod_lock"), d.lock(tile, 0, f"{name}_link_cons_lock"))
                 for name in ([p.name for p in (outs if distribute else ins)] if slices else [target.name])]
        for f in ins:  # S2MM side: each input writes its slices (all of them when it is the target)
            ch = self._link_channel(link, f, S2MM)
            self._link_ring(ch, bufs, self._ring_slices(f, target, slices, pairs), target.bits, (), send=False)
        for f in outs:
            ch = self._link_channel(link, f, MM2S)
            self._link_ring(ch, bufs, self._ring_slices(f, target, slices, pairs), target.bits, f.dims_to_stream,
                            send=True, pads=f.pads)

    @staticmethod
    def _ring_slices(f: Fifo, target: Fifo, slices: list, pairs: list) -> list:
        """(lock pair, offset, bytes) of each BD one side of a link puts on a target buffer: every
        slice for the target's own side, its own slice for a distribute's output or a join's
        input; one whole-buffer BD in a one-to-one link, of the target's length or, where this
        side's element is the longer (a padded output), its own (mlir-aie's ``lenOut``)."""
        if not slices:
            elems = max(_elements(target), _elements(f)) if f is not target else _elements(target)
            return [(pairs[0], 0, elems * target.bits // 8)]
        if f is target:
            return [(pairs[i], off, n * target.bits // 8) for i, (_, off, n) in enumerate(slices)]
        i = next(i for i, (part, _, _) in enumerate(slices) if part is f)
        return [(pairs[i], slices[i][1], slices[i][2] * target.bits // 8)]

    def _link_ring(self, ch, bufs, slices, bits, dims, send: bool, pads=()) -> None:
        d = self.reader.design
        bds = []
        for buf in bufs:
            for (prod, cons), offset_elems, size_bytes in slices:
                acq, rel = ((cons, 1), (prod, 1)) if send else ((prod, 1), (cons, 1))
                bds.append(self.reader.make_bd(ch, buf, bits, offset_elems, size_bytes * 8 // bits,
                                               *_sizes(dims, size_bytes, bits, pads), acquire=acq, release=rel,
                                               name=f"{buf.name}@{offset_elems}", pads=pads))
        d.start_chain(ch, d.chain(*bds, cyclic=True))

    def depth_at(self, fifo: str, port: str, tile: Tile) -> int:
        """The FIFO's depth at a core's end: the producer's, or this consumer's (a depth per end)."""
        f = self.fifos[fifo]
        return f.depths[0] if port == "Produce" else _end_depth(f, tile)

    def core_locks(self, fifo: str, port: str, tile: Tile):
        end = self.ends.get((fifo, port, tile))
        if end is None:
            raise Unreadable(f"no {port} end of object FIFO @{fifo} on {tile}")
        return end


def _elements(f: Fifo) -> int:
    return f.size_bytes * 8 // f.bits


def _link_target(fin: Fifo, fout: Fifo, distribute: bool, join: bool) -> Fifo:
    """The FIFO whose elements a link's mem tile holds (mlir-aie's ``objFifoLinks`` entry): a
    distribute's input, a join's output; in a one-to-one link the input unless the output's
    element is larger and not only by its padding."""
    if distribute:
        return fin
    if join:
        return fout
    return fin if _elements(fin) >= _elements(fout) or fout.pads else fout


def _end_depth(f: Fifo, tile: Tile) -> int:
    """A FIFO's depth at ``tile``: its consumer depth there, or its producer depth."""
    if f.producer == tile:
        return f.depths[0]
    j = f.consumers.index(tile)
    return f.depths[1 + j] if 1 + j < len(f.depths) else f.depths[-1]


def _link_slices(link: Link, target: Fifo, ins: list, outs: list, distribute: bool, join: bool) -> list:
    """(part, offset, length) in the target's elements of each slice of a distribute or join
    (``getDistributeTransferLengths``/``getJoinTransferLengths``: from one offset to the next, the
    last to the end of the target's element); [] for a one-to-one link. Without offsets the parts
    lie end to end."""
    if not (distribute or join):
        return []
    parts = outs if distribute else ins
    offsets = (link.dst_offsets if distribute else link.src_offsets) or _running(parts)
    if len(offsets) != len(parts):
        raise Unreadable(f"line {link.line}: {len(offsets)} offsets for {len(parts)} "
                         f"{'outputs' if distribute else 'inputs'} of the link")
    ends = list(offsets[1:]) + [_elements(target)]
    if any(o < 0 or e <= o for o, e in zip(offsets, ends)):
        raise Unreadable(f"line {link.line}: link offsets {list(offsets)} must rise within the "
                         f"{_elements(target)} elements of @{target.name}")
    return [(p, o, e - o) for p, o, e in zip(parts, offsets, ends)]


def _running(fifos) -> list[int]:
    """Offsets (in elements) of slices laid end to end."""
    out, at = [], 0
    for f in fifos:
        out.append(at)
        at += f.size_bytes * 8 // f.bits
    return out


def _layout(group) -> tuple:
    """``[<size = 4, stride = 16>, ...]`` -> ((size, stride), ...) outermost first."""
    out = []
    for entry in split(group.items):
        g = next((i for i in entry if isinstance(i, Group) and i.kind == "<"), None)
        if g is None:
            continue
        kv = {}
        for part in split(g.items):
            if len(part) >= 3:
                kv[word(part[:1])] = int_of(part[2:])
        out.append((kv.get("size", 1), kv.get("stride", 1)))
    return tuple(out)


def _sizes(dims, size_bytes: int = 0, bits: int = 8, pads=()) -> tuple[list, list]:
    """Sizes and strides of a FIFO's layout; a padded FIFO without one reads its element whole."""
    if not dims and pads:
        return [size_bytes * 8 // bits], [1]
    return [s for s, _ in dims], [t for _, t in dims]


def _first_square(items):
    """The first ``[...]`` group among items, searched through groups (``#aie<x[...]>``)."""
    for it in items:
        if isinstance(it, Group):
            if it.kind == "[":
                return it
            found = _first_square(it.items)
            if found is not None:
                return found
    return None
