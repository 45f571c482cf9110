"""Element-wise vector ops (norms, rope, softmax, residual adds, KV append) streamed through every
core: each core owns a slice of a row's elements.

Per used column c: X tiles come from shim(c) MM2S0 into mem(c) S2MM0, which deals them round-robin to
its rows' buffers (mlir-aie ObjectFifo distribute); mem(c) MM2S r feeds core (c, r); outputs are
joined in the mem tile and drained through mem(c) MM2S5 to shim(c) S2MM0. A core spends
``vector_cycles_per_elem`` per output element on each tile; the front ends take that figure from
the kernel model (``fastsim.kernel_model``) priced on the tile a core gets (``core_tile``).

``stream_split`` shares the tiles among the columns: ``equal`` gives every column the same number,
``proportional`` gives each column tiles in proportion to the rate its shim can read their inputs
and write their outputs (asymmetric columns; the same on symmetric ones). A fused op whose input
or output stays on chip keeps the equal split: its neighbour op's tiles are laid out that way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import NamedTuple

from ..arch import Arch
from ..cache import CACHE, Region
from ..design import Acquire, Compute, Design, Loop, Release, fifo_endpoint, mm2s, s2mm
from ..errors import Problems
from ..lower import LoweredDesign, lower
from .paths import STREAM_SPLITS, join_outputs, onchip_bytes, push_round, shares, stream_rates, whole_words

ROWS_PER_TILE = 32  # rows of a tile (fewer when the op has fewer)
ELEMS_PER_TILE = 64  # most elements of a row a core processes per tile


@dataclass(frozen=True)
class VectorOp:
    """``m`` rows of ``n`` elements; ``x_inputs`` input tensors per output element."""

    m: int
    n: int
    x_bytes: float = 2.0
    y_bytes: float = 2.0
    vector_cycles_per_elem: float = 0.0
    x_inputs: int = 1  # e.g. 2 for silu(gate) * up
    noop: bool = False  # replace compute by a 1-cycle pass: data still moves
    cols: int | None = None
    name: str = "op"
    # fused groups: inputs already in the mem tiles / outputs kept there (see fastsim.mapping.Matmul)
    x_on_chip: bool = False
    y_on_chip: bool = False
    onchip_window_bytes: int = 0
    col0: int = 0  # first column (a concurrent group runs on its own columns)
    stream_split: str = "equal"  # or "proportional" (see the module docstring)


class _Tiling(NamedTuple):
    """How every core's slice is cut into tiles (the same on every column)."""

    tiles: int  # tiles per column under an equal split (each a tile on every core of the column)
    x_tile: int  # bytes of one core's input tile (every input tensor of it)
    y_tile: int  # bytes of one core's output tile
    cycles: int  # core cycles per tile


def vector_design(op: VectorOp, arch: Arch) -> Design:
    """The design of ``op`` streamed through ``arch`` (see the module docstring)."""
    cols = _checked_cols(op, arch)
    t = _tiling(op, arch, cols)
    d = Design(arch, op.name)
    col_tiles = _column_tiles(op, arch, cols, t.tiles, t.x_tile, t.y_tile)
    used = [c for c in range(op.col0, op.col0 + cols) if col_tiles[c]]
    x_in, x_sends = _input_paths(d, op, used, col_tiles, t.x_tile)
    keeps = _outputs_and_cores(d, op, used, col_tiles, t, x_in)
    _host_sequence(d, op, used, col_tiles, t, x_sends, keeps)
    return d


VECTOR_REGION = "vector"
CACHE.add_region(Region(VECTOR_REGION, 256))


def lowered_vector_design(op: VectorOp, arch: Arch) -> tuple[Design, LoweredDesign]:
    """``vector_design(op, arch)`` and its lowered (so validated) tables. A vector op's design is
    its mapping, nothing is searched: like a matmul's searched design, it is kept in the one cache
    (region "vector"), so a workload that runs the same op again only simulates it. Ops that differ
    in name alone (a layer's two norms) share the lowered tables (``lowered_vector_shape``), the
    costly part; each keeps a design of its own name (for its messages, traces and exports)."""
    key = ("design", op, repr(arch))  # tagged: an op named "" has its shape's key otherwise
    found = CACHE.get(VECTOR_REGION, key)
    if found is None:
        design = vector_design(op, arch)
        found = (design, replace(lowered_vector_shape(op, arch, design), design=design))
        CACHE.put(VECTOR_REGION, key, found)
    return found


def lowered_vector_shape(op: VectorOp, arch: Arch, design: Design | None = None) -> LoweredDesign:
    """The lowered (so validated) tables every op of ``op``'s shape shares, whatever its name (its
    ``design`` is the first such op's): what the column search simulates, and an op of that shape
    then lowers nothing again. ``design``: ``op``'s, when the caller has built it."""
    key = ("lowered", replace(op, name=""), repr(arch))
    found = CACHE.get(VECTOR_REGION, key)
    if found is None:
        found = lower(design if design is not None else vector_design(op, arch))
        CACHE.put(VECTOR_REGION, key, found)
    return found


def _checked_cols(op: VectorOp, arch: Arch) -> int:
    """The columns ``op`` uses, after every problem of its fields is reported at once."""
    p = Problems(f"op {op.name}")
    for f in ("m", "n", "x_inputs"):
        p.check(getattr(op, f) >= 1, f, getattr(op, f), "must be >= 1")
    cols = op.cols or arch.columns
    p.check(1 <= cols <= arch.columns, "cols", cols, f"must be in 1..{arch.columns}")
    p.check(0 <= op.col0 <= arch.columns - cols, "col0", op.col0, f"must be in 0..{arch.columns - cols} (cols = {cols})")
    p.check(op.stream_split in STREAM_SPLITS, "stream_split", op.stream_split, f"one of {STREAM_SPLITS}")
    p.raise_if_any()
    return cols


def core_tile(m: int, n: int, x_inputs: int, cores: int) -> tuple[int, int]:
    """(rows, elements per row) of the tile one core processes per kernel call when ``m`` rows of
    ``n`` elements are spread over ``cores`` cores: each core owns a slice of every row, cut into the
    fewest tiles within ``ROWS_PER_TILE`` x ``ELEMS_PER_TILE`` (so padding stays least and tiles
    stay small enough to double-buffer). The front ends price a vector kernel call on this shape."""
    return _cut(m, n, x_inputs, cores)[:2]


def _cut(m: int, n: int, x_inputs: int, cores: int) -> tuple[int, int, int]:
    """``core_tile`` and how many tiles a core's slice of a row is cut into. More than two inputs
    (a mixture of experts' combine): narrower tiles, so that inputs and output together take the
    memory of a two-input tile."""
    per_core = math.ceil(n / max(1, cores))
    budget = ELEMS_PER_TILE if x_inputs <= 2 else max(4, ELEMS_PER_TILE * 3 // (x_inputs + 1))
    n_tiles = math.ceil(per_core / budget)  # fewest tiles, padded least
    tile_n = -(-math.ceil(per_core / n_tiles) // 4) * 4
    return max(1, min(m, ROWS_PER_TILE)), tile_n, n_tiles


def _tiling(op: VectorOp, arch: Arch, cols: int) -> _Tiling:
    """Every core's tiles (``core_tile``) and the core cycles of one: ``vector_cycles_per_elem``
    per element of the tile, which the front end priced on this tile's shape."""
    m_tile, tile_n, n_tiles = _cut(op.m, op.n, op.x_inputs, cols * arch.compute_rows)
    tiles = math.ceil(op.m / m_tile) * n_tiles
    x_tile = whole_words(math.ceil(m_tile * tile_n * op.x_bytes * op.x_inputs))
    y_tile = whole_words(math.ceil(m_tile * tile_n * op.y_bytes))
    cycles = 1 if op.noop else max(1, math.ceil(m_tile * tile_n * op.vector_cycles_per_elem))
    return _Tiling(tiles, x_tile, y_tile, cycles)


def _held(op: VectorOp, nbytes: int, unit: int) -> int:
    """Bytes of an on-chip buffer: the whole per-core stream, or a ring of it (a fused group's
    window)."""
    return int(onchip_bytes(nbytes, op.onchip_window_bytes, unit))


def _input_paths(d: Design, op: VectorOp, used: list[int], col_tiles: dict[int, int],
                 x_tile: int) -> tuple[dict, dict]:
    """Every core's X input endpoint, by (column, row), and the mem-tile sends the host pushes
    when X is already on chip (empty when it streams from the shim)."""
    x_in, x_sends = {}, {}
    for c in used:
        if op.x_on_chip:
            ends, sends = _onchip_inputs(d, op, c, col_tiles[c], x_tile)
            x_sends.update(sends)
        else:
            ends = _streamed_inputs(d, c, x_tile)
        x_in.update(ends)
    return x_in, x_sends


def _onchip_inputs(d: Design, op: VectorOp, c: int, tiles: int, x_tile: int) -> tuple[dict, dict]:
    """X already in column ``c``'s mem tile (a fused producer left it there): each row's part is
    sent from its own buffer on tasks the host pushes, with no shim transfer."""
    memt = d.mem(c)
    ends, sends = {}, {}
    for r in range(d.arch.compute_rows):
        out = mm2s(memt, r)
        sends[(c, r)] = d.bd(out, d.buffer(memt, _held(op, tiles * x_tile, x_tile), f"X{c}_{r}_onchip"), x_tile,
                             name=f"X{c}_{r}_send")
        ends[(c, r)] = fifo_endpoint(d, s2mm(d.compute(c, r), 1), 2, x_tile, f"X{c}_{r}")
        d.route(out, s2mm(d.compute(c, r), 1))
    return ends, sends


def _streamed_inputs(d: Design, c: int, x_tile: int) -> dict:
    """X from column ``c``'s shim: the mem tile deals its tiles round-robin to its rows' buffers
    (ObjectFifo distribute) and forwards each row's to its core."""
    memt = d.mem(c)
    rows = d.arch.compute_rows
    ends = {}
    parts = []
    for r in range(rows):
        locks = (d.lock(memt, 2, f"X{c}_{r}_prod"), d.lock(memt, 0, f"X{c}_{r}_cons"))
        parts.append((*locks, [d.buffer(memt, x_tile, f"X{c}_{r}_{i}") for i in range(2)]))
    ins = [d.bd(s2mm(memt, 0), parts[r][2][i], x_tile, acquire=(parts[r][0], 1), release=(parts[r][1], 1),
                name=f"X{c}_in{i}_{r}") for i in range(2) for r in range(rows)]
    d.start_chain(s2mm(memt, 0), d.chain(*ins, cyclic=True))
    d.route(mm2s(d.shim(c), 0), s2mm(memt, 0))
    for r, (prod, cons, bufs) in enumerate(parts):
        out = mm2s(memt, r)
        d.start_chain(out, d.chain(*[d.bd(out, b, x_tile, acquire=(cons, 1), release=(prod, 1),
                                          name=f"X{c}_{r}_fwd{i}") for i, b in enumerate(bufs)], cyclic=True))
        ends[(c, r)] = fifo_endpoint(d, s2mm(d.compute(c, r), 1), 2, x_tile, f"X{c}_{r}")
        d.route(out, s2mm(d.compute(c, r), 1))
    return ends


def _outputs_and_cores(d: Design, op: VectorOp, used: list[int], col_tiles: dict[int, int], t: _Tiling,
                       x_in: dict) -> dict:
    """Join every column's Y tiles (or keep them on chip) and give each core its loop, which needs
    the join's locks; returns each column's receive BDs of an on-chip Y (empty otherwise)."""
    keeps = {}
    for c in used:
        y_locks, keeps[c] = join_outputs(d, c, d.arch.compute_rows, t.y_tile, 5, "Y",
                                         _held(op, col_tiles[c] * t.y_tile, t.y_tile) if op.y_on_chip else 0)
        for r, (y_prod, y_cons) in enumerate(y_locks):
            x = x_in[(c, r)]
            d.core_program(d.compute(c, r), Loop(col_tiles[c], (
                Acquire(x["cons_lock"]), Acquire(y_prod), Compute(t.cycles, "vector"),
                Release(x["prod_lock"]), Release(y_cons))))
    return keeps


def _host_sequence(d: Design, op: VectorOp, used: list[int], col_tiles: dict[int, int], t: _Tiling,
                   x_sends: dict, keeps: dict) -> None:
    """One round of host tasks per tile, every column's input and output in step, then a wait on
    every output: pushing in step keeps every column's queue fed."""
    rows = d.arch.compute_rows
    x_bds = [d.bd(mm2s(d.shim(c), 0), d.ddr_buffer(t.x_tile * rows, f"X{c}"), t.x_tile * rows, name=f"X{c}_ddr")
             for c in used]
    y_bds = [d.bd(s2mm(d.shim(c), 0), d.ddr_buffer(t.y_tile * rows, f"Y{c}"), t.y_tile * rows, name=f"Y{c}_ddr")
             for c in used]
    ins = ([[(x_sends[(c, r)], 1) for r in range(rows)] for c in used] if op.x_on_chip else
           [[(bd, 1)] for bd in x_bds])
    outs = [[(bd, 1) for bd in keeps[c]] for c in used] if op.y_on_chip else [[(bd, 1)] for bd in y_bds]
    for live, times in _runs(_push_order(used, col_tiles)):
        push_round(d, [e for i in live for e in ins[i]] + [e for i in live for e in outs[i]], times)
    for entries in outs:
        for bd, _ in entries:
            d.wait(bd.channel)


def _push_order(used: list[int], col_tiles: dict[int, int]) -> list[list[int]]:
    """The columns (indices into ``used``) each round pushes: column c's t-th tile is due at
    (t + 1) / its tile count, so columns with more tiles get pushed more often and no column's
    queue runs dry behind a slower one's."""
    if len({col_tiles[c] for c in used}) == 1:
        return [list(range(len(used)))] * col_tiles[used[0]]
    due: dict[Fraction, list[int]] = {}
    for i, c in enumerate(used):
        for t in range(col_tiles[c]):
            due.setdefault(Fraction(t + 1, col_tiles[c]), []).append(i)
    return [due[k] for k in sorted(due)]


def _runs(rounds: list) -> list[tuple[list, int]]:
    """Consecutive equal rounds as (round, how many times in a row)."""
    out: list[tuple[list, int]] = []
    for r in rounds:
        if out and out[-1][0] == r:
            out[-1] = (r, out[-1][1] + 1)
        else:
            out.append((r, 1))
    return out


def _column_tiles(op: VectorOp, arch: Arch, cols: int, tiles: int, x_tile: int, y_tile: int) -> dict[int, int]:
    """Tiles (each a tile on every core of the column) per column: ``tiles`` each for an equal
    split; for a proportional one the same total, shared by the rate at which each column's shim
    reads a tile's inputs and writes its outputs."""
    span = range(op.col0, op.col0 + cols)
    how = "equal" if (op.x_on_chip or op.y_on_chip) else op.stream_split
    if how == "equal":
        return {c: tiles for c in span}
    rows = arch.compute_rows
    reads, writes = stream_rates(arch, op.col0, cols, "read"), stream_rates(arch, op.col0, cols, "write")
    rates = [1.0 / max(x_tile * rows / r, y_tile * rows / w) for r, w in zip(reads, writes)]
    return dict(zip(span, shares(tiles * cols, rates, how)))


def lower_bound_cycles(op: VectorOp, arch: Arch) -> float:
    """Cycles no run of ``vector_design(op, arch)`` beats (the column search prunes by it): each
    column's shim channel moves its streamed inputs and outputs at most at its rate, each core's
    stream from the mem tile at most one stream's width a cycle, each core computes its tiles one
    after another, and the shared DDR moves every streamed byte at most at its rate."""
    cols = _checked_cols(op, arch)
    t = _tiling(op, arch, cols)
    col_tiles = _column_tiles(op, arch, cols, t.tiles, t.x_tile, t.y_tile)
    rows = arch.compute_rows
    reads, writes = stream_rates(arch, op.col0, cols, "read"), stream_rates(arch, op.col0, cols, "write")
    bound, streamed = 0.0, 0.0
    for i, c in enumerate(range(op.col0, op.col0 + cols)):
        tiles = col_tiles[c]
        x_bytes, y_bytes = tiles * rows * t.x_tile * (not op.x_on_chip), tiles * rows * t.y_tile * (not op.y_on_chip)
        streamed += x_bytes + y_bytes
        bound = max(bound, x_bytes / reads[i], y_bytes / writes[i], tiles * t.x_tile / arch.stream_bytes_per_cycle,
                    tiles * t.cycles)
    return max(bound, streamed / arch.ddr_bytes_per_cycle)


def used_columns(op: VectorOp, arch: Arch) -> int:
    """The columns ``vector_design(op, arch)`` streams tiles through (a proportional split may leave
    a slow column none): every used column is set up alike, so its control is this many times one
    column's (tests/test_vector_search.py)."""
    cols = _checked_cols(op, arch)
    t = _tiling(op, arch, cols)
    return sum(1 for n in _column_tiles(op, arch, cols, t.tiles, t.x_tile, t.y_tile).values() if n)
