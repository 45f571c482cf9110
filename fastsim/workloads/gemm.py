"""GEMM lowered to a whole-array, output-stationary design in the style of mlir-aie's
``whole_array`` matmul.

Core (col c, row r) owns C tiles; per output tile it accumulates K/k products of an m x k A tile
and a k x n B tile. B tiles for column c come from DDR through shim(c) MM2S0 into mem tile c and are
broadcast down the column; A tiles for core row r come through shim(r) MM2S1 into mem tile r and are
broadcast along the row; each core's C tile goes to its column's mem tile, which joins the rows'
tiles and drains them through shim S2MM0. All buffers are double-buffered (ObjectFifo depth 2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..arch import Arch
from ..cost import DTYPE_BYTES, matmul_cycles
from ..design import Acquire, Compute, Design, Loop, Release, mm2s, s2mm
from ..errors import Problems
from .paths import broadcast_via_mem, join_outputs, whole_words

OUT_DTYPE = {"bf16": "bf16", "int8": "int32", "int16": "int32"}


@dataclass(frozen=True)
class Gemm:
    """C[M,N] = A[M,K] @ B[K,N] with m x k x n tiles on ``cols`` columns of the array."""

    m_total: int = 2048
    k_total: int = 2048
    n_total: int = 2048
    dtype: str = "bf16"
    tile_m: int = 64
    tile_k: int = 64
    tile_n: int = 64
    cols: int | None = None  # default: every column of the arch
    out_dtype: str | None = None  # default: bf16 -> bf16, int8 -> int32
    kernel_efficiency: float = 1.0
    kernel_overhead_cycles: int = 0
    weight_dtype: str | None = None  # B's storage dtype (default: dtype); narrower B is dequantized
    weight_bytes: float | None = None  # bytes per B element if not the dtype's (e.g. int4 + scales)
    cast_cycles_per_weight: float = 0.0  # explicit dequantization kernel on the core, per B element
    macs_scale: float = 1.0  # e.g. 0.5 for causal attention
    noop: bool = False  # replace compute by a 1-cycle pass: data still moves

    @property
    def macs(self) -> int:
        return self.m_total * self.k_total * self.n_total

    @property
    def ops(self) -> int:
        return 2 * self.macs


def _check(g: Gemm, arch: Arch) -> tuple[int, int, float, float]:
    p = Problems("gemm")
    rows = arch.compute_rows
    cols = g.cols if g.cols is not None else arch.columns
    out_dtype = g.out_dtype or OUT_DTYPE.get(g.dtype, g.dtype)
    p.check(g.dtype in arch.macs_per_cycle, "dtype", g.dtype,
            f"{arch.name} has MAC rates for {sorted(arch.macs_per_cycle)}")
    p.check(out_dtype in DTYPE_BYTES, "out_dtype", out_dtype, f"one of {sorted(DTYPE_BYTES)}")
    p.check(rows <= cols <= arch.columns, "cols", cols,
            f"must be in {rows}..{arch.columns} (A rows enter through one column each)")
    for name in ("m_total", "k_total", "n_total", "tile_m", "tile_k", "tile_n"):
        p.check(getattr(g, name) >= 1, name, getattr(g, name), "must be >= 1")
    p.raise_if_any()
    bi, bo = DTYPE_BYTES[g.dtype], DTYPE_BYTES[out_dtype]
    p.check((g.weight_dtype or g.dtype) in DTYPE_BYTES, "weight_dtype", g.weight_dtype,
            f"one of {sorted(DTYPE_BYTES)}")
    p.raise_if_any()
    bw = g.weight_bytes or DTYPE_BYTES[g.weight_dtype or g.dtype]
    p.check(g.m_total % (rows * g.tile_m) == 0, "m_total", g.m_total,
            f"must be a multiple of rows x tile_m = {rows * g.tile_m}")
    p.check(g.n_total % (cols * g.tile_n) == 0, "n_total", g.n_total,
            f"must be a multiple of cols x tile_n = {cols * g.tile_n}")
    p.check(g.k_total % g.tile_k == 0, "k_total", g.k_total, f"must be a multiple of tile_k = {g.tile_k}")
    l1 = 2 * (g.tile_m * g.tile_k * bi + g.tile_k * g.tile_n * bw) + 2 * g.tile_m * g.tile_n * bo
    p.check(l1 <= arch.compute.memory_bytes, "tile_m/tile_k/tile_n", (g.tile_m, g.tile_k, g.tile_n),
            f"double-buffered A, B and C need {l1:g} bytes of core memory; "
            f"{arch.compute.memory_bytes} available")
    l2 = 2 * (g.tile_m * g.tile_k * bi + g.tile_k * g.tile_n * bw) + 2 * rows * g.tile_m * g.tile_n * bo
    p.check(l2 <= arch.mem.memory_bytes, "tile_m/tile_k/tile_n", (g.tile_m, g.tile_k, g.tile_n),
            f"mem tile needs {l2:g} bytes; {arch.mem.memory_bytes} available")
    p.check(g.tile_m * g.tile_k * bi % 4 == 0 and g.tile_m * g.tile_n * bo % 4 == 0, "tile sizes",
            (g.tile_m, g.tile_k, g.tile_n), "A and C tiles must be whole 32-bit words")
    p.raise_if_any()
    return rows, cols, bi, bo, bw


def gemm_design(g: Gemm, arch: Arch) -> Design:
    rows, cols, bi, bo, bw = _check(g, arch)
    m, k, n = g.tile_m, g.tile_k, g.tile_n
    a_bytes, b_bytes, c_bytes = int(m * k * bi), whole_words(k * n * bw), int(m * n * bo)
    k_steps = g.k_total // k
    block_rows = g.m_total // (rows * m)
    tiles_per_row = g.n_total // (cols * n)
    d = Design(arch, f"gemm {g.m_total}x{g.k_total}x{g.n_total} {g.dtype}")
    cycles = 1 if g.noop else matmul_cycles(m, k, n, g.dtype, arch, g.kernel_efficiency,
                                            g.kernel_overhead_cycles, g.macs_scale)
    cast = () if g.noop or not g.cast_cycles_per_weight else (
        Compute(max(1, math.ceil(k * n * g.cast_cycles_per_weight)), "cast"),)

    ddr_a = d.ddr_buffer(int(g.m_total * g.k_total * bi), "A")
    ddr_b = d.ddr_buffer(max(b_bytes * k_steps, int(g.k_total * g.n_total * bw)), "B")
    ddr_c = d.ddr_buffer(int(g.m_total * g.n_total * bo), "C")

    a_in = {}  # core tile -> A fifo endpoint
    b_in = {}
    for c in range(cols):
        memt = d.mem(c)
        # B: shim -> mem tile -> broadcast down column c
        dsts = [s2mm(d.compute(c, r), 1) for r in range(rows)]
        for r, end in enumerate(broadcast_via_mem(d, mm2s(d.shim(c), 0), s2mm(memt, 0), mm2s(memt, 0), dsts,
                                                  b_bytes, f"B{c}")):
            b_in[(c, r)] = end
        if c < rows:  # A row c: shim -> mem tile c -> broadcast along core row c
            dsts = [s2mm(d.compute(cc, c), 0) for cc in range(cols)]
            for cc, end in enumerate(broadcast_via_mem(d, mm2s(d.shim(c), 1), s2mm(memt, 1), mm2s(memt, 1),
                                                       dsts, a_bytes, f"A{c}")):
                a_in[(cc, c)] = end
    for c in range(cols):
        # C: each core -> mem tile S2MM(2+r) (its part of the joined block) -> shim S2MM0
        for r, (c_prod, c_cons) in enumerate(join_outputs(d, c, rows, c_bytes, 2, "C")):
            d.core_program(d.compute(c, r), Loop(block_rows * tiles_per_row, (
                Acquire(c_prod),
                Loop(k_steps, (
                    Acquire(a_in[(c, r)]["cons_lock"]), Acquire(b_in[(c, r)]["cons_lock"]),
                    *cast, Compute(cycles, "matmul"),
                    Release(a_in[(c, r)]["prod_lock"]), Release(b_in[(c, r)]["prod_lock"]))),
                Release(c_cons))))

    # host runtime sequence: per block row of C, stream A rows, B columns, drain C
    shim_bd = {}
    for c in range(cols):
        shim_bd[("B", c)] = d.bd(mm2s(d.shim(c), 0), ddr_b, b_bytes * k_steps, name=f"B{c}_ddr")
        shim_bd[("C", c)] = d.bd(s2mm(d.shim(c), 0), ddr_c, int(rows * m * n * bo), name=f"C{c}_ddr")
        if c < rows:
            shim_bd[("A", c)] = d.bd(mm2s(d.shim(c), 1), ddr_a, int(m * g.k_total * bi), name=f"A{c}_ddr")
    for _ in range(block_rows):
        for c in range(cols):
            for kind in ("A", "B", "C"):
                if (kind, c) in shim_bd:
                    bd = shim_bd[(kind, c)]
                    left = tiles_per_row
                    while left > 0:
                        step = min(left, arch.max_task_repeat)
                        d.push(bd.channel, bd, repeat=step)
                        left -= step
    for c in range(cols):
        d.wait(s2mm(d.shim(c), 0))
    return d

