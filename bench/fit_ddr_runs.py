"""Fit ``ddr_run_overhead_s``, the DDR time each contiguous run of a shim BD costs, to its train rows.

    python bench/fit_ddr_runs.py

Train rows (the only ones this parameter may be fitted to; every other row stays held out): mlir-air
``kernel_registry/details/GEMM_bf16_in_bf16_out.md:303``, smolvla's connector GEMM 64x12288x960 on a
4x4 herd, swept over ``tile_n`` = 16/48/80/240: 3,352/1,347/890/690 us for the same bytes, B read from
DDR in runs of ``tile_n`` x 2 B (32 to 480 B). The model is the engine's (``kernels/engine.py``
``_share_ddr``) when the DDR is the bottleneck: time = bytes / ddr_bytes_per_s + runs x overhead,
with ddr_bytes_per_s held at the preset's measured memcpy rate, so one parameter is fitted, by least
squares on the relative error. A and C are counted as bytes only (their runs are a few hundred of
B's tens of thousands to hundreds of thousands).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

M, K, N, ELEM_BYTES = 64, 12288, 960, 2
TILE_N = (16, 48, 80, 240)
MEASURED_US = (3352.0, 1347.0, 890.0, 690.0)  # GEMM_bf16_in_bf16_out.md:303


def train_rows() -> list[tuple[float, float, float]]:
    """(bytes, runs, measured seconds) of each train row."""
    b_bytes = K * N * ELEM_BYTES
    total = b_bytes + (M * K + M * N) * ELEM_BYTES
    return [(total, b_bytes / (tn * ELEM_BYTES), us * 1e-6) for tn, us in zip(TILE_N, MEASURED_US)]


def fit(ddr_bytes_per_s: float) -> tuple[float, list[float]]:
    """The per-run overhead (seconds) minimizing the squared relative error, and each row's error."""
    rows = train_rows()
    # relative residual of row i: (runs_i * o + bytes_i / bw) / t_i - 1, linear in o
    x = [runs / t for _, runs, t in rows]
    y = [1 - nbytes / ddr_bytes_per_s / t for nbytes, _, t in rows]
    overhead_s = sum(a * b for a, b in zip(x, y)) / sum(a * a for a in x)
    errors = [(runs * overhead_s + nbytes / ddr_bytes_per_s) / t - 1 for nbytes, runs, t in rows]
    return overhead_s, errors


def main() -> None:
    from fastsim.arch import NPU2

    overhead_s, errors = fit(NPU2.ddr_bytes_per_s)
    print(f"ddr_run_overhead_s = {overhead_s:.3e} s at ddr_bytes_per_s = {NPU2.ddr_bytes_per_s / 1e9:.1f} GB/s; "
          f"preset {NPU2.ddr_run_overhead_s:.3e} s")
    for tn, err in zip(TILE_N, errors):
        print(f"  tile_n {tn:4d}: {100 * err:+.1f} %")


if __name__ == "__main__":
    main()
