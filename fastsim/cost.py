"""Kernel cost model: how many cycles a core spends on one kernel invocation.

Kernel efficiency is an input, not an output: a hand-tuned matmul microkernel reaches a fraction of
the MAC array's peak that fastsim cannot know; whole-array results follow from it and from data
movement. Single-core measurements (docs/calibration.md: 26-43 % end to end) include data movement, so the
right efficiency for a kernel alone is higher.
"""
from __future__ import annotations

import math

import numpy as np

from .arch import Arch
from .errors import Problems
from .settings import resolve_jit


def kernel_cycles(macs: int, dtype: str, arch: Arch, efficiency: float = 1.0,
                  overhead_cycles: int = 0) -> int:
    """cycles = ceil(MACs / (MACs per cycle x efficiency)) + fixed overhead (at least 1)."""
    p = Problems("kernel cost")
    p.check(dtype in arch.macs_per_cycle, "dtype", dtype, f"{arch.name} has MAC rates for "
            f"{sorted(arch.macs_per_cycle)}")
    p.check(0 < efficiency <= 1, "efficiency", efficiency, "must be in (0, 1]")
    p.check(overhead_cycles >= 0, "overhead_cycles", overhead_cycles, "must be >= 0")
    p.check(macs >= 0, "macs", macs, "must be >= 0")
    p.raise_if_any()
    return max(1, math.ceil(macs / (arch.macs_per_cycle[dtype] * efficiency)) + overhead_cycles)


def matmul_cycles(m: int, k: int, n: int, dtype: str, arch: Arch, efficiency: float = 1.0,
                  overhead_cycles: int = 0, macs_scale: float = 1.0) -> int:
    """Cycles of one m x k x n tile matmul on a core. Mesh cores (``core_mesh_rows``): the systolic
    mesh model. Otherwise the microkernel's structure (mlir-aie ``aie_kernels/aie2*/mm.cc``: 2x2
    blocks of (r, s, t) intrinsics, ``Arch.mmul_shapes``)::

        ceil(c_call + N_blk * c_blk + padded MACs / (MACs per cycle x efficiency)) + overhead_cycles
        N_blk = ceil(m / 2r) * ceil(n / 2t)

    with ``c_call``, ``c_blk`` the datapath's ``Arch.kernel_call_cycles`` and
    ``kernel_block_cycles``, the tile padded to multiples of (r, s, t). ``dtype`` is the datapath
    key; ``overhead_cycles`` is a further fixed cost a study adds."""
    if not arch.core_mesh_rows:
        r, s, t = arch.mmul_shapes.get(dtype, (1, 1, 1))
        fixed = kernel_fixed_cycles(m, n, dtype, arch)
        m, k, n = -(-m // r) * r, -(-k // s) * s, -(-n // t) * t
        kernel_cycles(0, dtype, arch, efficiency, overhead_cycles)  # checks the arguments
        macs = math.ceil(m * k * n * macs_scale)
        return max(1, math.ceil(macs / (arch.macs_per_cycle[dtype] * efficiency) + fixed) + overhead_cycles)
    cycles = mesh_cycles(m, k, n, arch.core_mesh_rows, arch.core_mesh_cols, arch.core_mesh_dataflow)
    return max(1, math.ceil(cycles * macs_scale / efficiency)) + overhead_cycles


def kernel_blocks(m: int, n: int, datapath: str, arch: Arch) -> int:
    """Output blocks of one microkernel call: ceil(m / 2r) * ceil(n / 2t) (2x2 intrinsic blocks)."""
    r, _, t = arch.mmul_shapes.get(datapath, (1, 1, 1))
    return -(-m // (2 * r)) * -(-n // (2 * t))


def kernel_fixed_cycles(m: int, n: int, datapath: str, arch: Arch) -> float:
    """The cycles of one microkernel call that do not scale with its MACs: c_call + N_blk * c_blk."""
    return arch.call_cycles(datapath) + kernel_blocks(m, n, datapath, arch) * arch.block_cycles(datapath)


def mesh_cycles(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> int:
    """Cycles of an m x k x n GEMM on one rows x cols systolic mesh (``dataflow`` ws, is or os) with
    unlimited bandwidth: the closed form of ``kernels/systolic.py``, the same number as
    ``compute_cycles`` of ``fastsim.systolic.mesh_metrics``. The kernel loads on first use and runs
    compiled or as plain Python as ``fastsim.settings`` says."""
    from fastsim.kernels import systolic as K

    inp = np.zeros((1, K.I_NCOL), np.int64)
    inp[0, [K.I_M, K.I_N, K.I_K, K.I_R, K.I_C]] = m, n, k, rows, cols
    inp[0, K.I_DF] = {"ws": K.DF_WS, "is": K.DF_IS, "os": K.DF_OS}[dataflow]
    inp[0, K.I_IFMAP_UNIQUE] = m * k
    out = np.zeros((1, K.O_NCOL), np.int64)
    K.systolic_batch.variant(resolve_jit())(inp, out, np.zeros((1, K.F_NCOL)), np.zeros((1, 1)))
    return int(out[0, K.O_CYCLES])
