"""Slow reference for the systolic closed forms: builds SCALE-Sim-style demand matrices fold by
fold (null requests for fill, drain and unused PEs, skewed for the systolic wavefront) and counts
their rows and real requests. Written from SCALE-Sim v3's description, independent of the kernel."""
from __future__ import annotations

import numpy as np

NULL = -1


def skew(mat: np.ndarray) -> np.ndarray:
    """Delay column c by c cycles (the systolic wavefront)."""
    rows, cols = mat.shape
    out = np.full((rows + cols - 1, cols), NULL)
    for c in range(cols):
        out[c:c + rows, c] = mat[:, c]
    return out


def block(rows: int, cols: int, used_rows: int, used_cols: int) -> np.ndarray:
    """A demand block with real requests (1) in the used corner and nulls elsewhere."""
    mat = np.full((rows, cols), NULL)
    mat[:used_rows, :used_cols] = 1
    return mat


def tiles(extent: int, size: int) -> list[int]:
    return [min(size, extent - start) for start in range(0, extent, size)]


def reference(m: int, n: int, k: int, r: int, c: int, df: str) -> dict:
    if df == "os":
        sr, sc, t = m, n, k
    elif df == "ws":
        sr, sc, t = k, n, m
    else:
        sr, sc, t = k, m, n
    rows_total = 0
    reads = {"ifmap": 0, "filter": 0, "ofmap": 0}
    map_eff, comp_util = [], []
    for used_c in tiles(sc, c):
        for used_r in tiles(sr, r):
            if df == "os":
                ifmap = skew(np.vstack([block(t, r, t, used_r), np.full((c - 1, r), NULL)]))
                filt = skew(np.vstack([block(t, c, t, used_c), np.full((r - 1, c), NULL)]))
                reads["ifmap"] += int((ifmap != NULL).sum())
                reads["filter"] += int((filt != NULL).sum())
                reads["ofmap"] += used_r * used_c + r + c
                util_cycles = (t - 1 + r) + c - 1
            else:
                ifmap_cols = r
                gap = np.full((r, ifmap_cols), NULL)
                if df == "ws":
                    ifmap = skew(np.vstack([gap, block(t, r, t, used_r), np.full((c - 1, r), NULL)]))
                    reads["ifmap"] += int((ifmap != NULL).sum())
                    reads["filter"] += used_r * used_c
                else:
                    ifmap = np.vstack([block(r, c, used_r, used_c), np.full((r + c + t - 2, c), NULL)])
                    reads["ifmap"] += int((ifmap != NULL).sum())
                    reads["filter"] += t * used_r
                reads["ofmap"] += t * used_c
                util_cycles = (2 * r + c + t - 2) + c - 1
            fold_rows = ifmap.shape[0]
            rows_total += fold_rows
            map_eff.append(used_r * used_c / (r * c))
            comp_util.append(used_r * used_c * t / (r * c * util_cycles))
    cycles = rows_total - 1
    return {"compute_cycles": cycles, "folds": len(map_eff), "sram_ifmap_reads": reads["ifmap"],
            "sram_filter_reads": reads["filter"], "sram_ofmap_writes": reads["ofmap"],
            "mapping_efficiency": 100 * float(np.mean(map_eff)),
            "compute_utilization": 100 * float(np.mean(comp_util)),
            "overall_utilization": 100 * m * n * k / (max(cycles, 1) * r * c)}
