"""The DDR side of a mapped matmul's shim BDs: which contiguous runs of the row-major operands in DDR
they read and write, written as the BDs' dimensions so that the engine charges each run
(``Arch.ddr_run_overhead_s``; the lowering counts runs from the dims, ``fastsim.lower.run_bytes``).

A, B and C lie in DDR row-major (A[M, K], B[K, N], C[M, N]), as a user's tensors at an API boundary
do (``Matmul.row_major_ddr``; a graph op's deployment owns its layouts: one run per BD). A mem tile
addresses its own buffers in up to four dimensions, so it can re-tile what it receives: a shim BD
reads each row of what one mem-tile buffer holds as one run. That makes a run of A the K extent of
one mem-tile buffer of A (one L1 K tile when A is streamed, the part's whole K when it is resident),
and a run of B or C one tile's N extent, ``tile_n`` elements; a block of whole rows is one run.
"""
from __future__ import annotations

import numpy as np

from fastsim.kernels.layout import UNITS_PER_BYTE

from ..arch import Arch, TileKind
from ..design import BD, Channel, Design
from ..lower import ddr_run_units, to_units
from .space import Mapping, Matmul


def operand_run_bytes(op: Matmul, mp: Mapping, ev: dict, key: str) -> tuple[float, float]:
    """(bytes of one DDR run, bytes of one row of the operand) for operand ``key`` ("A", "B", "C")."""
    tm, _, tn = mp.tile
    if key == "A":
        return float(ev["mem_unit_a"]) / tm, op.k * op.a_elem_bytes
    if key == "B":
        return tn * op.b_elem_bytes, op.n * op.b_elem_bytes
    return tn * op.c_elem_bytes, op.n * op.c_elem_bytes


def run_dims(length_bytes: int, run_bytes: float, row_bytes: float, kind: TileKind) -> tuple:
    """Dims that read ``length_bytes`` as runs of ``run_bytes``, one per row of ``row_bytes``; ()
    (one run) where the runs cover whole rows or the BD cannot say them: runs that are not whole
    words or exceed the innermost wrap (then at least 4 KiB each, where a run's cost is a few per
    cent of its bytes), or more runs than the outer dimensions' wraps reach."""
    wrap = 2**kind.bd_wrap_bits - 1
    if run_bytes >= row_bytes or run_bytes % 4 or row_bytes % 4 or length_bytes % run_bytes or run_bytes / 4 > wrap:
        return ()
    runs = length_bytes // int(run_bytes)
    dims = [(int(run_bytes) // 4, 1)]
    stride = int(row_bytes) // 4
    while runs > 1 and len(dims) < kind.bd_dims and stride < 2**kind.bd_step_bits:
        size = next(f for f in range(min(runs, wrap), 0, -1) if runs % f == 0)
        dims.append((size, stride))
        stride *= size
        runs //= size
    return tuple(dims) if runs == 1 else ()


def shim_bd(d: Design, ch: Channel, key: str, length: int, name: str, op: Matmul, mp: Mapping, ev: dict) -> BD:
    """A shim BD moving ``length`` bytes of operand ``key`` in its DDR runs, with a DDR buffer as
    large as the rows those runs span; one run when the op's operands are not row-major in DDR
    (``Matmul.row_major_ddr``: a graph op, whose deployment lays its tensors out as it reads them)."""
    dims = run_dims(length, *operand_run_bytes(op, mp, ev, key), d.arch.shim) if op.row_major_ddr else ()
    extent = 4 * (1 + sum((size - 1) * stride for size, stride in dims)) if dims else length
    return d.bd(ch, d.ddr_buffer(extent, f"{key}{ch.tile.col}"), length, dims=dims, name=name)


def bound_run_bytes(arch: Arch) -> float:
    """The DDR capacity one run takes, in bytes, as the engine charges it (``lower`` rounds it to
    units), for the search's lower bounds; 0 (bytes alone) where a bound cannot count on it: the
    engine scales the shares of an over-subscribed DDR down in proportion, but never below one
    unit a cycle, and only while no share can fall below one unit (a share of the slowest column
    against every shim channel streaming runs of one word) do the runs' loads stay within
    ``bound_rate``."""
    run = ddr_run_units(arch)
    stream = to_units(arch.stream_bytes_per_cycle)
    shim = arch.shim
    slowest = min(max(1, min(stream, to_units(rate) // channels))
                  for rates, channels in ((arch.shim_read_bytes_per_cycle, shim.mm2s_channels),
                                          (arch.shim_write_bytes_per_cycle, shim.s2mm_channels))
                  for rate in rates)
    channels = arch.columns * (shim.mm2s_channels + shim.s2mm_channels)
    busiest = channels * stream * (1 + run / (4 * UNITS_PER_BYTE))  # most DDR load the shares can ask for
    return run / UNITS_PER_BYTE if run > 0 and slowest * to_units(arch.ddr_bytes_per_cycle) >= busiest else 0.0


def bound_rate(arch: Arch, channels):
    """Bytes per cycle (runs' costs included) the DDR serves ``channels`` shim channels at most: its
    capacity in units, and less than one unit per channel that each share's rounding down leaves
    uncounted (``bound_run_bytes`` says when this holds)."""
    return (to_units(arch.ddr_bytes_per_cycle) + channels) / UNITS_PER_BYTE


def write_most(arch: Arch, b) -> np.ndarray:
    """Per structure of ``b`` (a ``plan.StructureBatch``), as (S, 1): the most C bytes per cycle its
    shim S2MMs write to DDR together, one per column at the stream rate or its column's rate."""
    rates = np.asarray(b.write_rate, dtype=np.float64)
    finite = np.isfinite(rates)
    # to_units of each finite rate (Python's round and np.rint both round half to even)
    units = np.maximum(1.0, np.rint(np.where(finite, rates, 0.0) * UNITS_PER_BYTE))
    each = np.minimum(float(to_units(arch.stream_bytes_per_cycle)), units)
    return np.where(finite, each, 0.0).sum(axis=1, keepdims=True) / UNITS_PER_BYTE
