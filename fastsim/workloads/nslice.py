"""N-slice designs: every core owns a slice of the output columns.

Topology (per column c of the ``cols`` used):

- activations X: shim(0) MM2S1 -> every used mem tile's S2MM1 (one DDR read, broadcast across
  columns) -> mem(c) MM2S4 -> broadcast to the column's cores (S2MM0);
- weights W: shim(c) MM2S0 -> mem(c) S2MM0, which deals tiles round-robin to its rows' buffers ->
  mem(c) MM2S r -> core (c, r) S2MM1 (mlir-aie ObjectFifo distribute);
- outputs Y: core MM2S0 -> mem(c) S2MM(2+r) -> joined -> mem(c) MM2S5 -> shim(c) S2MM0.

Dataflows:

- ``is`` (input-stationary): a block of X rows stays in each core while W tiles stream past; W is
  re-read once per X block. Natural for decode, where X is one token.
- ``ws`` (weight-stationary): each core's whole W slice stays resident (loaded once, or preloaded
  for the dispatch when ``static_weights``) while X tiles stream past; the slice must fit.
- ``os`` (output-stationary): an output tile stays in the core while X and W tiles stream past in
  step along the reduction; X is re-read once per output tile. Fits any reduction length.
- ``stream`` (vector ops): no W; X tiles arrive on the W path, are processed and leave as Y.

Compute per invocation = matmul cycles (or per-element cost) plus an explicit dequantization
("cast") kernel per weight tile when weights are narrower than the compute dtype.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..arch import Arch
from ..cost import matmul_cycles
from ..design import Acquire, Compute, Design, Loop, Release, fifo_endpoint, mm2s, s2mm
from ..errors import Problems
from . import paths
from .paths import forward, join_outputs, whole_words


@dataclass(frozen=True)
class NSliceOp:
    """One op mapped onto N-slices. Sizes in elements; bytes per element per tensor."""

    dataflow: str  # "is", "ws", "os" or "stream"
    m: int  # rows of X (tokens x heads in a group)
    k: int  # reduction length (stream ops: 1)
    n: int  # output columns (stream ops: elements per row)
    x_bytes: float = 2.0
    w_bytes: float = 0.5
    y_bytes: float = 2.0
    compute_dtype: str = "bf16"
    kernel_efficiency: float = 1.0
    cast_cycles_per_weight: float = 0.0  # explicit dequantization on the core, per weight element
    vector_cycles_per_elem: float = 0.0  # stream ops: cost per output element
    x_inputs: int = 1  # stream ops: input tensors per output element (e.g. 2 for silu(gate)*up)
    macs_scale: float = 1.0  # e.g. 0.5 for causal attention
    static_weights: bool = False  # ws: weights preloaded for the dispatch, not read by this op
    noop: bool = False  # replace compute by a 1-cycle pass: data still moves
    cols: int | None = None
    tile_k: int = 256
    tile_n: int = 64
    name: str = "op"


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def plan(op: NSliceOp, arch: Arch) -> dict:
    """Tile sizes, padding and capacity checks; raises ConfigError naming what does not fit."""
    p = Problems(f"op {op.name}")
    p.check(op.dataflow in ("is", "ws", "os", "stream"), "dataflow", op.dataflow, "is, ws, os or stream")
    for f in ("m", "k", "n"):
        p.check(getattr(op, f) >= 1, f, getattr(op, f), "must be >= 1")
    p.raise_if_any()
    cols = op.cols or arch.columns
    rows = arch.compute_rows
    cores = cols * rows
    l1 = arch.compute.memory_bytes
    per_core = math.ceil(op.n / cores)
    n_tiles = math.ceil(per_core / op.tile_n)  # fewest tiles of at most tile_n, padded least
    tile_n = _round_up(math.ceil(per_core / n_tiles), 4)
    n_core = tile_n * n_tiles
    if op.dataflow == "stream":
        tile_k = 1
    else:
        tile_k = min(op.tile_k, _round_up(op.k, 8))
    k_pad = _round_up(op.k, tile_k)
    w_tile = math.ceil(tile_k * tile_n * op.w_bytes) if op.dataflow != "stream" else 0
    out = {"cols": cols, "rows": rows, "cores": cores, "tile_k": tile_k, "tile_n": tile_n,
           "n_core": n_core, "k_pad": k_pad, "n_tiles": n_tiles, "k_steps": k_pad // tile_k,
           "w_tile": whole_words(w_tile)}
    if op.dataflow == "is":
        # largest X block (rows) that fits beside double-buffered W and Y tiles
        # largest X block (rows) that fits beside double-buffered W and Y tiles; X is
        # double-buffered unless a single buffer saves a pass (one fewer re-read of W)
        fixed = 2 * w_tile
        best = None
        for x_depth in (2, 1):
            per_row = x_depth * k_pad * op.x_bytes + 2 * tile_n * op.y_bytes
            m_blk = min(op.m, int((l1 - fixed) // per_row))
            if m_blk >= 1 and (best is None or math.ceil(op.m / m_blk) < math.ceil(op.m / best[1])):
                best = (x_depth, m_blk)
        p.check(best is not None, "tiles", (tile_k, tile_n), f"one row of X ({k_pad} elements) plus W "
                f"and Y tiles need more than the {l1} bytes of core memory")
        p.raise_if_any()
        x_depth, m_blk = best
        out.update(m_blk=m_blk, x_depth=x_depth, passes=math.ceil(op.m / m_blk),
                   x_block=whole_words(math.ceil(m_blk * k_pad * op.x_bytes)),
                   y_tile=whole_words(math.ceil(m_blk * tile_n * op.y_bytes)))
    elif op.dataflow == "os":
        x_tile = whole_words(math.ceil(op.m * tile_k * op.x_bytes))
        y_tile = whole_words(math.ceil(op.m * tile_n * op.y_bytes))
        need = 2 * x_tile + 2 * w_tile + 2 * y_tile
        p.check(need <= l1, "dataflow", "os", f"X, W and Y tiles for {op.m} rows need {need} bytes of "
                f"core memory; {l1} available")
        p.raise_if_any()
        out.update(x_tile=x_tile, y_tile=y_tile)
    elif op.dataflow == "ws":
        w_slice = math.ceil(k_pad * n_core * op.w_bytes)
        m_tile = max(1, min(op.m, 32))
        x_tile = whole_words(math.ceil(m_tile * tile_k * op.x_bytes))
        y_tile = whole_words(math.ceil(m_tile * n_core * op.y_bytes))
        need = w_slice + 2 * x_tile + 2 * y_tile
        p.check(need <= l1, "dataflow", "ws", f"weight-stationary needs the whole weight slice "
                f"({w_slice} bytes) plus X/Y buffers ({need} bytes) in each core; {l1} available: "
                f"use is or os, or more columns")
        p.raise_if_any()
        out.update(m_tile=m_tile, m_tiles=math.ceil(op.m / m_tile), x_tile=x_tile, y_tile=y_tile,
                   w_slice=whole_words(w_slice))
    else:
        m_tile = max(1, min(op.m, 32))
        x_tile = whole_words(math.ceil(m_tile * tile_n * op.x_bytes * op.x_inputs))
        y_tile = whole_words(math.ceil(m_tile * tile_n * op.y_bytes))
        out.update(m_tile=m_tile, m_tiles=math.ceil(op.m / m_tile), x_tile=x_tile, y_tile=y_tile)
    return out


def nslice_design(op: NSliceOp, arch: Arch) -> Design:
    pl = plan(op, arch)
    cols, rows = pl["cols"], pl["rows"]
    d = Design(arch, op.name)

    def cycles(mkn: tuple = (), elems: float = 0.0) -> int:
        if op.noop:
            return 1
        c = matmul_cycles(*mkn, op.compute_dtype, arch, op.kernel_efficiency, 0, op.macs_scale) if mkn else 0
        return max(1, c + math.ceil(elems * op.vector_cycles_per_elem))

    cast = (0 if op.noop or op.cast_cycles_per_weight == 0
            else max(1, math.ceil(pl["tile_k"] * pl["tile_n"] * op.cast_cycles_per_weight)))

    # --- activations path (is / ws): one DDR read, broadcast to every mem tile, then to cores
    x_unit = pl["x_block"] if op.dataflow == "is" else pl.get("x_tile", 0)
    x_in, w_in = {}, {}
    if op.dataflow in ("is", "ws", "os"):
        stages = [fifo_endpoint(d, s2mm(d.mem(c), 1), 2, x_unit, f"X{c}_mem") for c in range(cols)]
        d.route(mm2s(d.shim(0), 1), *[s2mm(d.mem(c), 1) for c in range(cols)])
        for c in range(cols):
            forward(d, mm2s(d.mem(c), 4), stages[c], x_unit, f"X{c}_fwd")
            dsts = [s2mm(d.compute(c, r), 0) for r in range(rows)]
            for r, dst in enumerate(dsts):
                x_in[(c, r)] = fifo_endpoint(d, dst, pl.get("x_depth", 2), x_unit, f"X{c}_{r}")
            d.route(mm2s(d.mem(c), 4), *dsts)
    # --- weights path (or the stream op's input): dealt round-robin by each mem tile
    w_unit = {"is": pl["w_tile"], "os": pl["w_tile"], "ws": pl.get("w_slice", 0),
              "stream": pl.get("x_tile", 0)}[op.dataflow]
    w_needed = not (op.dataflow == "ws" and op.static_weights)
    if w_needed:
        for c in range(cols):
            memt = d.mem(c)
            parts = []
            for r in range(rows):
                prod = d.lock(memt, 2, f"W{c}_{r}_prod")
                cons = d.lock(memt, 0, f"W{c}_{r}_cons")
                bufs = [d.buffer(memt, w_unit, f"W{c}_{r}_{i}") for i in range(2)]
                parts.append((prod, cons, bufs))
            ins = [d.bd(s2mm(memt, 0), parts[r][2][i], w_unit, acquire=(parts[r][0], 1),
                        release=(parts[r][1], 1), name=f"W{c}_in{i}_{r}")
                   for i in range(2) for r in range(rows)]
            d.start_chain(s2mm(memt, 0), d.chain(*ins, cyclic=True))
            d.route(mm2s(d.shim(c), 0), s2mm(memt, 0))
            for r in range(rows):
                prod, cons, bufs = parts[r]
                out = mm2s(memt, r)
                bds = [d.bd(out, b, w_unit, acquire=(cons, 1), release=(prod, 1), name=f"W{c}_{r}_fwd{i}")
                       for i, b in enumerate(bufs)]
                d.start_chain(out, d.chain(*bds, cyclic=True))
                depth = 1 if op.dataflow == "ws" else 2
                w_in[(c, r)] = fifo_endpoint(d, s2mm(d.compute(c, r), 1), depth, w_unit, f"W{c}_{r}")
                d.route(out, s2mm(d.compute(c, r), 1))
    # --- outputs: per-core tiles joined in the mem tile, drained by the shim
    y_unit = pl["y_tile"]
    for c in range(cols):
        for r, (y_prod, y_cons) in enumerate(join_outputs(d, c, rows, y_unit, 5, "Y")):
            d.core_program(d.compute(c, r), *_program(op, pl, x_in.get((c, r)), w_in.get((c, r)), y_prod,
                                                      y_cons, cycles, cast))
    _host_sequence(d, op, pl, w_needed, w_unit, x_unit, y_unit)
    return d


def _program(op, pl, x, w, y_prod, y_cons, cycles, cast):
    """The core loop for one dataflow."""
    tile_n, tile_k = pl["tile_n"], pl["tile_k"]
    cast_ops = (Compute(cast, "cast"),) if cast else ()
    if op.dataflow == "is":
        mm = cycles((pl["m_blk"], tile_k, tile_n))
        return [Loop(pl["passes"], (
            Acquire(x["cons_lock"]),
            Loop(pl["n_tiles"], (
                Acquire(y_prod),
                Loop(pl["k_steps"], (Acquire(w["cons_lock"]), *cast_ops, Compute(mm, "matmul"),
                                     Release(w["prod_lock"]))),
                Release(y_cons))),
            Release(x["prod_lock"])))]
    if op.dataflow == "os":
        mm = cycles((op.m, tile_k, tile_n))
        return [Loop(pl["n_tiles"], (
            Acquire(y_prod),
            Loop(pl["k_steps"], (Acquire(x["cons_lock"]), Acquire(w["cons_lock"]), *cast_ops,
                                 Compute(mm, "matmul"), Release(x["prod_lock"]), Release(w["prod_lock"]))),
            Release(y_cons)))]
    if op.dataflow == "ws":
        mm = cycles((pl["m_tile"], tile_k, pl["n_core"]))
        load = []
        if w is not None:
            load = [Acquire(w["cons_lock"])]
            if cast:
                load.append(Compute(max(1, cast * pl["k_steps"] * pl["n_tiles"]), "cast"))
        body = [Loop(pl["m_tiles"], (
            Acquire(y_prod),
            Loop(pl["k_steps"], (Acquire(x["cons_lock"]), Compute(mm, "matmul"), Release(x["prod_lock"]))),
            Release(y_cons)))]
        return load + body + ([Release(w["prod_lock"])] if w is not None else [])
    vec = cycles((), pl["m_tile"] * tile_n)
    return [Loop(pl["m_tiles"] * pl["n_tiles"], (
        Acquire(w["cons_lock"]), Acquire(y_prod), Compute(vec, "vector"),
        Release(w["prod_lock"]), Release(y_cons)))]


def _host_sequence(d, op, pl, w_needed, w_unit, x_unit, y_unit):
    """Push tasks round by round (one pass / m-tile each), interleaving all channels as an
    mlir-aie runtime sequence does: pushing one channel far ahead would block the host on its full
    task queue while other columns starve, which deadlocks a broadcast."""
    arch = d.arch
    cols, rows = pl["cols"], pl["rows"]
    x_bd = d.bd(mm2s(d.shim(0), 1), d.ddr_buffer(max(4, x_unit), "X"), x_unit, name="X_ddr") \
        if op.dataflow != "stream" else None
    w_bds = [d.bd(mm2s(d.shim(c), 0), d.ddr_buffer(max(4, w_unit * rows), f"W{c}"), w_unit * rows,
                  name=f"W{c}_ddr") for c in range(cols)] if w_needed else []
    y_bds = [d.bd(s2mm(d.shim(c), 0), d.ddr_buffer(y_unit * rows, f"Y{c}"), y_unit * rows, name=f"Y{c}_ddr")
             for c in range(cols)]

    def push_round(entries):
        paths.push_round(d, entries)

    def per_column(w_count, y_count):
        out = []
        for c in range(cols):
            out += [(w_bds[c] if w_bds else None, w_count), (y_bds[c], y_count)]
        return out

    # one round per output tile (per row tile for ws), so every channel advances in step
    if op.dataflow == "is":
        for _ in range(pl["passes"]):
            push_round([(x_bd, 1)])
            for _ in range(pl["n_tiles"]):
                push_round(per_column(pl["k_steps"], 1))
    elif op.dataflow == "os":
        for _ in range(pl["n_tiles"]):
            push_round([(x_bd, pl["k_steps"])] + per_column(pl["k_steps"], 1))
    elif op.dataflow == "ws":
        push_round(per_column(1, 0))
        for _ in range(pl["m_tiles"]):
            push_round([(x_bd, pl["k_steps"])] + per_column(0, 1))
    else:
        for _ in range(pl["m_tiles"] * pl["n_tiles"]):
            push_round(per_column(1, 1))
    for c in range(cols):
        d.wait(s2mm(d.shim(c), 0))

