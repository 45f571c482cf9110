"""Kernel cost model: how many cycles a core spends on one kernel invocation.

Kernel efficiency is an input, not an output: a hand-tuned matmul microkernel reaches a fraction of
the MAC array's peak that fastsim cannot know; whole-array results follow from it and from data
movement. Single-core measurements (ARCH_FACTS: 26-43 % end to end) include data movement, so the
right efficiency for a kernel alone is higher.
"""
from __future__ import annotations

import math

from .arch import Arch
from .errors import Problems

DTYPE_BYTES = {"int4": 0.5, "int8": 1, "int16": 2, "bf16": 2, "int32": 4, "f32": 4}


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
    """Cycles of one m x k x n tile matmul on a core: the systolic mesh model when the arch's cores
    are meshes (``core_mesh_rows``), else MACs / (MACs per cycle x efficiency), the tile padded to
    the datapath's native intrinsic shape (``Arch.mmul_shapes``). ``dtype`` is the datapath key."""
    if not arch.core_mesh_rows:
        r, s, t = arch.mmul_shapes.get(dtype, (1, 1, 1))
        m, k, n = -(-m // r) * r, -(-k // s) * s, -(-n // t) * t
        return kernel_cycles(math.ceil(m * k * n * macs_scale), dtype, arch, efficiency, overhead_cycles)
    from .systolic import Layer, MeshConfig, mesh_metrics

    mesh = MeshConfig(arch.core_mesh_rows, arch.core_mesh_cols, arch.core_mesh_dataflow)
    cycles = int(mesh_metrics([Layer.gemm("tile", m, n, k)], [mesh], occupancy_bins=1)["compute_cycles"][0, 0])
    return max(1, math.ceil(cycles * macs_scale / efficiency)) + overhead_cycles
