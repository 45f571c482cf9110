"""Kernel cost: how many cycles a core spends on one kernel invocation.

On AIE-ML and AIE-ML v2 cores a matmul call is priced by the kernel model (``fastsim.kernel_model``,
docs/kernel_model.md): the micro-kernel's structure on the core's units. The arch's kernel tables
(``kernel_efficiency``, ``kernel_call_cycles``, ``kernel_block_cycles``) adjust it, so a calibration
can fit them to a user's single-kernel measurements. Mesh cores use the systolic closed form; other
cores the plain rate model.
"""
from __future__ import annotations

import math

import numpy as np

from .arch import Arch
from .errors import Problems
from .kernel_model import matmul as KM
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
                  overhead_cycles: int = 0, macs_scale: float = 1.0, *, conv_cycles_per_elem: float = 0.0,
                  c_bytes: float | None = None) -> int:
    """Cycles of one m x k x n tile matmul on a core. ``dtype`` is the datapath key.

    - AIE-ML and AIE-ML v2 cores (``Arch.generation`` aie2, aie2p) with a micro-kernel for the
      datapath: the kernel model (``fastsim.kernel_model.matmul.call_cycles``: output blocks, k-steps,
      load and store ports, C accumulator moves, loop fill, per-call cycles; the GEMV form for small
      m), with ``efficiency`` dividing its MAC cycles and the arch's ``kernel_call_cycles`` and
      ``kernel_block_cycles`` added per call and per block (calibration adjustments). The C tile's
      load and store and the operand conversion (``conv_cycles_per_elem``, bf16 -> bfp16) are
      inside; ``c_bytes`` is the C buffer's bytes per element (default: the kernel's).
    - Mesh cores (``core_mesh_rows``): the systolic mesh model.
    - Any other core: padded MACs at the datapath's rate plus the arch's per-call and per-block
      cycles (no core units known)::

        ceil(c_call + N_blk * c_blk + padded MACs / (MACs per cycle x efficiency)) + overhead_cycles

    ``overhead_cycles`` is a further fixed cost a study adds."""
    kernel_cycles(0, dtype, arch, efficiency, overhead_cycles)  # checks the arguments
    if arch.core_mesh_rows:
        cycles = mesh_cycles(m, k, n, arch.core_mesh_rows, arch.core_mesh_cols, arch.core_mesh_dataflow)
        return max(1, math.ceil(cycles * macs_scale / efficiency)) + overhead_cycles
    if kernel_modelled(arch, dtype):
        tuning = KM.Tuning(efficiency, arch.call_cycles(dtype), arch.block_cycles(dtype))
        cycles = KM.call_cycles(arch, dtype, m, k, n, tuning=tuning, conv_cycles_per_elem=conv_cycles_per_elem,
                                c_bytes=c_bytes, macs_scale=macs_scale)
        return max(1, math.ceil(float(cycles))) + overhead_cycles
    r, s, t = arch.mmul_shapes.get(dtype, (1, 1, 1))
    fixed = kernel_fixed_cycles(m, n, dtype, arch)
    m, k, n = -(-m // r) * r, -(-k // s) * s, -(-n // t) * t
    macs = math.ceil(m * k * n * macs_scale)
    conv = math.ceil((m * k + k * n) * conv_cycles_per_elem)
    return max(1, math.ceil(macs / (arch.macs_per_cycle[dtype] * efficiency) + fixed) + conv) + overhead_cycles


def kernel_modelled(arch: Arch, datapath: str) -> bool:
    """Whether ``matmul_cycles`` prices ``datapath`` on ``arch`` with the kernel model, whose cycles
    already hold the call's A, B and C moves and its operand conversion (a caller then adds none)."""
    return not arch.core_mesh_rows and KM.micro_kernel(arch, datapath) is not None


def kernel_blocks(m: int, n: int, datapath: str, arch: Arch) -> int:
    """Output blocks of one microkernel call: the kernel model's (ER r x EC t blocks) where the core
    has one, else ceil(m / 2r) * ceil(n / 2t) (2x2 intrinsic blocks)."""
    blocks = KM.blocks(arch, datapath, m, n) if not arch.core_mesh_rows else None
    if blocks is not None:
        return int(blocks)
    r, _, t = arch.mmul_shapes.get(datapath, (1, 1, 1))
    return -(-m // (2 * r)) * -(-n // (2 * t))


def kernel_fixed_cycles(m: int, n: int, datapath: str, arch: Arch) -> float:
    """The arch's cycles of one call that do not scale with its MACs: c_call + N_blk * c_blk."""
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
