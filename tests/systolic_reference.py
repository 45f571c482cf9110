"""Slow reference for the systolic closed forms: counts the rows and real requests of SCALE-Sim's
demand matrices for a GEMM, built element by element by the request-level reference
(``scalesim_memory_reference.matrices``), and averages per-fold efficiencies the way SCALE-Sim
does. Independent of the kernel."""
from __future__ import annotations

import numpy as np

from scalesim_memory_reference import NULL, matrices, operand_matrices


def tiles(extent: int, size: int) -> list[int]:
    return [min(size, extent - start) for start in range(0, extent, size)]


def reference(m: int, n: int, k: int, r: int, c: int, df: str) -> dict:
    sr, sc, t = {"os": (m, n, k), "ws": (k, n, m), "is": (k, m, n)}[df]
    gemm = dict(ifmap_h=m, ifmap_w=k, filter_h=1, filter_w=k, channels=1, num_filters=n, stride=1)
    _, _, d_if, d_fi, d_of = matrices(*operand_matrices(**gemm), r, c, df)
    folds = [(used_r, used_c) for used_c in tiles(sc, c) for used_r in tiles(sr, r)]
    # SCALE-Sim counts r + c extra ofmap writes per output-stationary fold
    ofmap = sum(ur * uc + r + c for ur, uc in folds) if df == "os" else int((d_of != NULL).sum())
    util_cycles = t + r + c - 2 if df == "os" else 2 * r + 2 * c + t - 3
    cycles = d_if.shape[0] - 1
    return {"compute_cycles": cycles, "folds": len(folds), "sram_ifmap_reads": int((d_if != NULL).sum()),
            "sram_filter_reads": int((d_fi != NULL).sum()), "sram_ofmap_writes": ofmap,
            "mapping_efficiency": 100 * float(np.mean([ur * uc / (r * c) for ur, uc in folds])),
            "compute_utilization": 100 * float(np.mean([ur * uc * t / (r * c * util_cycles) for ur, uc in folds])),
            "overall_utilization": 100 * m * n * k / (max(cycles, 1) * r * c)}
