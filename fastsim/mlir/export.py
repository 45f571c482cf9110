"""A Design written as physical-form ``aie`` MLIR, the form ``aiecc.py`` lowers object FIFOs to.

``write_design`` emits ``aie.device`` with its tiles, buffers, locks, ``aie.flow`` routes, one
``aie.mem``/``aie.memtile_dma`` per tile whose channels run static BD chains (``aie.dma_start``,
``aie.dma_bd``, ``aie.use_lock``, ``aie.next_bd``), ``aie.core`` programs (``aie.use_lock``,
``scf.for``, ``func.call``) and the host's runtime sequence (``aiex.dma_configure_task`` /
``dma_start_task`` for pushes, ``aiex.npu.sync`` for waits). Reading the text back with
``fastsim.mlir.read_text`` gives a design that simulates to the same cycles: that round trip is
what the text is for (docs/mlir.md lists the few ``fastsim.*`` attributes it needs beyond
mlir-aie's own).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict

from ..design import MM2S, Acquire, BD, Channel, Compute, Design, Loop, Push, Release, Tile, Wait, channel_order
from ..errors import ConfigError

INDENT = "  "


class ExportError(ConfigError):
    """A Design feature the physical ``aie`` form (with fastsim's attributes) cannot express."""

    def __init__(self, problems: list[str], name: str):
        super().__init__(problems, f"export of design {name!r}")


def write_design(design: Design) -> str:
    """``design`` as physical ``aie`` MLIR text. Every kernel's cycles per call ride along as a
    ``fastsim.cycles`` attribute of its ``func.func`` declaration (and of calls whose cycles
    differ from it), so the text simulates without a kernel-costs file; a costs file given when
    reading still wins (``write_kernel_costs`` writes one)."""
    w = _Writer(design)
    w.check()
    return w.text()


def write_kernel_costs(design: Design) -> str:
    """A ``[kernels]`` TOML of every kernel's usual cycles per call (its most frequent cost): the
    file ``fastsim run design --kernels`` reads, to be edited for what-if runs."""
    lines = ["# cycles per call of each kernel of the design (fastsim run design --kernels FILE)", "[kernels]"]
    for name, cycles in sorted(_usual_costs(design).items()):
        lines.append(f"{_toml_key(name)} = {cycles}")
    return "\n".join(lines) + "\n"


def _usual_costs(design: Design) -> dict[str, int]:
    """Kernel name -> its most frequent cycles per call over every core program (static count)."""
    seen: dict[str, Counter] = defaultdict(Counter)

    def walk(ops):
        for op in ops:
            if isinstance(op, Compute):
                seen[op.name][op.cycles] += 1
            elif isinstance(op, Loop):
                walk(op.body)

    for tile in sorted(design.cores):
        walk(design.cores[tile])
    return {name: counts.most_common(1)[0][0] for name, counts in seen.items()}


def _toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else '"' + name.replace('"', '\\"') + '"'


def _symbol(name: str) -> str:
    """A kernel's symbol: bare when MLIR allows, else quoted."""
    return "@" + name if re.fullmatch(r"[A-Za-z_][\w.$-]*", name) else '@"' + name.replace('"', "") + '"'


class _Names:
    """Unique identifiers from the design's free-form names (SSA values and symbols share them)."""

    def __init__(self):
        self.used: set[str] = set()

    def __call__(self, name: str, fallback: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", name or fallback).strip("_") or fallback
        if base[0].isdigit():
            base = f"{fallback}_{base}"
        out, k = base, 1
        while out in self.used:
            out, k = f"{base}_{k}", k + 1
        self.used.add(out)
        return out


class _Writer:
    """The text of one design, section by section (each a method that returns lines)."""

    def __init__(self, design: Design):
        self.d = design
        self.names = _Names()
        self.tiles = self._tiles()
        self.buf = {b.id: self.names(b.name, "buf") for b in design.buffers}
        self.lock = {lk.id: self.names(lk.name, "lock") for lk in design.locks}
        self.bits = {b.id: self._element_bits(b) for b in design.buffers}
        self.costs = _usual_costs(design)
        self.problems: list[str] = []

    # -- checks -----------------------------------------------------------------------------------
    def check(self) -> None:
        """Every feature the text cannot carry, reported at once."""
        for ch in sorted(self.d.static_chains, key=channel_order):
            if ch.tile.row == 0:
                self.problems.append(f"{ch}: a static BD chain on a shim channel (shim tiles take tasks "
                                     "from the runtime sequence)")
        for b in self.d.bds:
            if self.bits[b.buffer.id] == 8 and b.dims and b.dims[0][1] != 1:
                self.problems.append(f"{b}: byte-granular offsets or lengths with a strided innermost dimension")
        if self.problems:
            raise ExportError(self.problems, self.d.name)

    def _tiles(self) -> dict[Tile, str]:
        tiles = {b.tile for b in self.d.buffers if b.tile is not None} | {lk.tile for lk in self.d.locks}
        tiles |= {b.channel.tile for b in self.d.bds} | set(self.d.cores)
        for r in self.d.routes:
            tiles |= {r.src.tile, *(c.tile for c in r.dsts)}
        return {t: f"%tile_{t.col}_{t.row}" for t in sorted(tiles)}

    def _element_bits(self, b) -> int:
        """32-bit elements when every access to the buffer is word-aligned, bytes otherwise."""
        ok = b.size_bytes % 4 == 0 and all(x.offset_bytes % 4 == 0 and x.length_bytes % 4 == 0
                                           for x in self.d.bds if x.buffer.id == b.id)
        return 32 if ok else 8

    # -- text -------------------------------------------------------------------------------------
    def text(self) -> str:
        d = self.d
        head = [f"// {d.name}: written by fastsim export (docs/mlir.md); read back with fastsim run design",
                "module {", f"{INDENT}aie.device({d.arch.name}) {{"]
        body = (self._declarations() + self._flows() + self._dma_programs() + self._cores()
                + self._sequence())
        tail = f"{INDENT}}}" + (" {fastsim.output_on_chip = true}" if d.output_on_chip else "")
        return "\n".join(head + [2 * INDENT + line if line else "" for line in body] + [tail, "}", ""])

    def _declarations(self) -> list[str]:
        out = [f"{v} = aie.tile({t.col}, {t.row})" for t, v in self.tiles.items()]
        for name, cycles in sorted(self.costs.items()):
            out.append(f"func.func private {_symbol(name)}() attributes {{fastsim.cycles = {cycles} : i64}}")
        for b in self.d.buffers:
            if b.tile is not None:
                out.append(f"%{self.buf[b.id]} = aie.buffer({self.tiles[b.tile]}) "
                           f"{{sym_name = \"{self.buf[b.id]}\"}} : {self._memref(b)}")
        per_tile: Counter = Counter()
        for lk in self.d.locks:
            out.append(f"%{self.lock[lk.id]} = aie.lock({self.tiles[lk.tile]}, {per_tile[lk.tile]}) "
                       f"{{init = {lk.init} : i32, sym_name = \"{self.lock[lk.id]}\"}}")
            per_tile[lk.tile] += 1
        return out

    def _memref(self, b) -> str:
        bits = self.bits[b.id]
        return f"memref<{b.size_bytes * 8 // bits}x{'i32' if bits == 32 else 'i8'}>"

    def _flows(self) -> list[str]:
        """``aie.flow`` per circuit route and destination; ``aie.packet_flow`` per packet route, its
        id the route's place among the packet routes (``_packet_ids``; the source's BDs carry it)."""
        ids = self._packet_ids()
        return [f"aie.packet_flow({ids[(r.src, r.packet_id)]}) {{ aie.packet_source<{self.tiles[r.src.tile]}, DMA : {r.src.index}> "
                f"aie.packet_dest<{self.tiles[c.tile]}, DMA : {c.index}> }}" if r.packet else
                f"aie.flow({self.tiles[r.src.tile]}, DMA : {r.src.index}, {self.tiles[c.tile]}, DMA : {c.index})"
                for r in self.d.routes for c in r.dsts]

    def _packet_ids(self) -> dict[tuple[Channel, int | None], int]:
        """The packet id of each packet route, by (source channel, its ``packet_id``): a route's own
        id where it has one (fan-out by packet id), else 0, 1, ... in route order, skipping those."""
        taken = {r.packet_id for r in self.d.routes if r.packet and r.packet_id is not None}
        free = (i for i in range(len(self.d.routes) + len(taken) + 1) if i not in taken)
        return {(r.src, r.packet_id): r.packet_id if r.packet_id is not None else next(free)
                for r in self.d.routes if r.packet}

    # -- DMA programs -----------------------------------------------------------------------------
    def _dma_programs(self) -> list[str]:
        """One ``aie.mem``/``aie.memtile_dma`` per tile: each channel's ``dma_start`` opens a block
        (the first the entry block) and names the next channel's block as its successor, the last
        an ``aie.end`` block; the channel's BD blocks follow its start (mlir-aie's layout)."""
        by_tile: dict[Tile, list[Channel]] = defaultdict(list)
        for ch in sorted(self.d.static_chains, key=channel_order):
            by_tile[ch.tile].append(ch)
        out = []
        for tile, chans in by_tile.items():
            op = "aie.memtile_dma" if self.d.arch.tile_kind_name(tile.row) == "mem" else "aie.mem"
            out.append(f"%{op.split('.')[1]}_{tile.col}_{tile.row} = {op}({self.tiles[tile]}) {{")
            chains = [_chain(self.d.static_chains[ch]) for ch in chans]
            n = 0
            starts, bd_labels = [], []
            for chain in chains:
                starts.append(f"bb{n}")
                bd_labels.append([f"bb{n + 1 + i}" for i in range(len(chain))])
                n += 1 + len(chain)
            end = f"bb{n}"
            for k, (ch, chain) in enumerate(zip(chans, chains)):
                after = starts[k + 1] if k + 1 < len(chans) else end
                if k:
                    out.append(f"^{starts[k]}:")
                out.append(f"{INDENT}%dma_{k} = aie.dma_start({_dir(ch)}, {ch.index}, ^{bd_labels[k][0]}, ^{after})")
                out += self._bd_blocks(chain, bd_labels[k], end)
            out += [f"^{end}:", f"{INDENT}aie.end", "}"]
        return out

    def _bd_blocks(self, chain: list[BD], labels: list[str], end: str) -> list[str]:
        """A chain's BDs as labelled blocks; each ends with ``aie.next_bd`` to the BD its ``next``
        names (an earlier one closes a cycle) or to ``end``."""
        at = {bd.id: labels[i] for i, bd in enumerate(chain)}
        out = []
        for bd, lab in zip(chain, labels):
            out.append(f"^{lab}:")
            out += [INDENT + line for line in self._bd(bd)]
            out.append(f"{INDENT}aie.next_bd ^{at[bd.next.id] if bd.next is not None else end}")
        return out

    def _bd(self, bd: BD) -> list[str]:
        """``use_lock`` acquire, ``dma_bd`` and ``use_lock`` release of one BD; offsets, lengths,
        sizes and strides in the buffer's elements, outermost first."""
        out = []
        if bd.acquire is not None:
            out.append(f"aie.use_lock(%{self.lock[bd.acquire[0].id]}, AcquireGreaterEqual, {bd.acquire[1]})")
        out.append(self._dma_bd(bd))
        if bd.release is not None:
            out.append(f"aie.use_lock(%{self.lock[bd.release[0].id]}, Release, {bd.release[1]})")
        return out

    def _dma_bd(self, bd: BD) -> str:
        bits = self.bits[bd.buffer.id]
        per_word = 32 // bits
        dims = list(bd.dims) or [(bd.length_bytes * 8 // 32, 1)] if bd.iterations > 1 or bd.dims else []
        text = (f"aie.dma_bd(%{self.buf[bd.buffer.id]} : {self._memref(bd.buffer)} "
                f"offset = {bd.offset_bytes * 8 // bits} len = {bd.length_bytes * 8 // bits}")
        extra = []
        if dims and not bd.dims and bd.length_bytes % 4:  # iterations of a byte run: no word dims
            dims = [(bd.length_bytes, 1)]
            per_word = 1
        if dims:
            sizes = [s * (per_word if i == 0 else 1) for i, (s, _) in enumerate(dims)]
            strides = [t if i == 0 else t * per_word for i, (_, t) in enumerate(dims)]
            if len(dims) < 4 and bd.iterations > 1:
                sizes += [1] * (3 - len(dims)) + [bd.iterations]
                strides += [0] * (3 - len(dims)) + [0]
            elif bd.iterations > 1:
                extra.append(f"fastsim.iterations = {bd.iterations} : i64")
            text += f" sizes = {list(reversed(sizes))} strides = {list(reversed(strides))}"
        if bd.compression_ratio != 1.0:
            extra.append(f"fastsim.compression_ratio = {bd.compression_ratio!r} : f64")
        packet_id = self._packet_ids().get((bd.channel, bd.packet_id), self._packet_ids().get((bd.channel, None)))
        if packet_id is not None:
            extra.append(f"packet = #aie.packet_info<pkt_type = 0, pkt_id = {packet_id}>")
        return text + ")" + (" {" + ", ".join(extra) + "}" if extra else "")

    # -- cores ------------------------------------------------------------------------------------
    def _cores(self) -> list[str]:
        """Each core program in ``aie.core``: lock operations as ``aie.use_lock``, Compute as a
        ``func.call`` of its kernel, Loop as ``scf.for`` over index constants."""
        out = []
        for tile in sorted(self.d.cores):
            ops = self.d.cores[tile]
            counts = sorted({0, 1} | _loop_counts(ops))
            out.append(f"%core_{tile.col}_{tile.row} = aie.core({self.tiles[tile]}) {{")
            out += [f"{INDENT}%c{n} = arith.constant {n} : index" for n in counts]
            out += self._program(ops, 1)
            out += [f"{INDENT}aie.end", "}"]
        return out

    def _program(self, ops, depth: int) -> list[str]:
        pad = INDENT * depth
        out = []
        for op in ops:
            if isinstance(op, Acquire):
                out.append(f"{pad}aie.use_lock(%{self.lock[op.lock.id]}, AcquireGreaterEqual, {op.value})")
            elif isinstance(op, Release):
                out.append(f"{pad}aie.use_lock(%{self.lock[op.lock.id]}, Release, {op.value})")
            elif isinstance(op, Compute):
                own = f" {{fastsim.cycles = {op.cycles} : i64}}" if op.cycles != self.costs[op.name] else ""
                out.append(f"{pad}func.call {_symbol(op.name)}(){own} : () -> ()")
            elif isinstance(op, Loop):
                out.append(f"{pad}scf.for %i{depth} = %c0 to %c{op.count} step %c1 {{")
                out += self._program(op.body, depth + 1)
                out.append(f"{pad}}}")
        return out

    # -- runtime sequence -------------------------------------------------------------------------
    def _sequence(self) -> list[str]:
        """DDR buffers are the sequence's arguments; each distinct push (channel, BD, repeat) is a
        task configured at its first use and started at every use; a wait is ``npu.sync`` on its
        channel (direction 0 = S2MM, as mlir-aie numbers it)."""
        args = [f"%{self.buf[b.id]}: {self._memref(b)}" for b in self.d.buffers if b.tile is None]
        out = [f"aie.runtime_sequence({', '.join(args)}) {{"]
        tasks: dict[tuple, str] = {}
        for op in self.d.host:
            if isinstance(op, Push):
                key = (op.channel, op.bd.id, op.repeat)
                if key not in tasks:
                    tasks[key] = f"%task_{len(tasks)}"
                    out += [INDENT + line for line in self._task(tasks[key], op)]
                out.append(f"{INDENT}aiex.dma_start_task({tasks[key]})")
            elif isinstance(op, Wait):
                c = op.channel
                out.append(f"{INDENT}aiex.npu.sync {{channel = {c.index} : i32, column = {c.tile.col} : i32, "
                           f"column_num = 1 : i32, direction = {int(c.direction == MM2S)} : i32, "
                           f"row = {c.tile.row} : i32, row_num = 1 : i32}}")
        return out + ["}"]

    def _task(self, name: str, push: Push) -> list[str]:
        ch, chain = push.channel, _chain(push.bd)
        if chain[-1].next is push.bd:
            raise ExportError([f"{push.bd}: a pushed BD chain that returns to its first BD never ends"], self.d.name)
        labels = [""] + [f"bb{i}" for i in range(1, len(chain))]
        out = [f"{name} = aiex.dma_configure_task({self.tiles[ch.tile]}, {_dir(ch)}, {ch.index}) {{"]
        at = {bd.id: labels[i] for i, bd in enumerate(chain)}
        for bd, lab in zip(chain, labels):
            if lab:
                out.append(f"^{lab}:")
            out += [INDENT + line for line in self._bd(bd)]
            out.append(INDENT + (f"aie.next_bd ^{at[bd.next.id]}" if bd.next is not None else "aie.end"))
        repeat = f" {{repeat_count = {push.repeat - 1} : i32}}" if push.repeat > 1 else ""
        return out + ["}" + repeat]


def _chain(first: BD) -> list[BD]:
    """The BDs from ``first`` along ``next`` until the chain ends or returns to one already seen."""
    out, seen, cur = [], set(), first
    while cur is not None and cur.id not in seen:
        out.append(cur)
        seen.add(cur.id)
        cur = cur.next
    return out


def _dir(ch: Channel) -> str:
    return "MM2S" if ch.direction == MM2S else "S2MM"


def _loop_counts(ops) -> set[int]:
    out = set()
    for op in ops:
        if isinstance(op, Loop):
            out.add(op.count)
            out |= _loop_counts(op.body)
    return out
