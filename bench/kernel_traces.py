"""The matmul kernel model against one-core kernel traces: "Striking the Balance" Tables 1-3.

    python bench/kernel_traces.py

Taka et al. (arXiv:2512.13282, Sec. 5.1) time each GEMM kernel call on one core with the NPU trace
unit (xchesscc, software pipelining and loop unrolling/flattening directives; bank-conflict stalls
included; each call loads its C tile, accumulates and stores it, Sec. 4.2.1; zeroing and the C drain
outside the figure, Sec. 5.2.1). Those 24 MACs/cycle figures, int8 in with int8, int16 and int32
out and bf16 (bfp16-emulated on XDNA2), on both generations, are component measurements of
mlir-aie's ``mm.cc`` kernels.

What they set: one structural choice, that ``mm.cc`` as compiled runs a block's C loads and stores
and a pipeline fill between two k loops, in series with the MACs (``MicroKernel.overlap_c`` False).
Train rows: Table 1 (the eight "single-core GEMM results"). Held out: Tables 2 and 3 (sixteen
kernels of the whole-array designs, B column-major and transposed in the core by ``aie::transpose``
on each B load). No number is fitted: every other parameter keeps its cited source.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from statistics import median
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastsim.arch import NPU1, NPU2  # noqa: E402
from fastsim.kernel_model import matmul as KM  # noqa: E402

SOURCE = "arXiv:2512.13282 (Striking the Balance, Taka et al. 2025)"
OUT_BYTES = {"int8": 1, "int16": 2, "int32": 4, "bf16": 2}


@dataclass(frozen=True)
class KernelTrace:
    """One traced kernel: its table, part, input and output dtypes, tile and measured MACs/cycle."""

    table: str
    part: str
    in_dtype: str
    out_dtype: str
    tile: tuple[int, int, int]
    macs_per_cycle: float

    @property
    def role(self) -> str:
        return "train" if self.table == "Table 1" else "held out"


def _rows() -> tuple[KernelTrace, ...]:
    data = [  # table, part, in, out, "m x k x n", MACs/cycle
        ("Table 1", "npu1", "int8", "int8", "64x232x64", 233.0),
        ("Table 1", "npu1", "int8", "int16", "64x216x64", 217.6),
        ("Table 1", "npu1", "int8", "int32", "48x280x48", 192.0),
        ("Table 1", "npu1", "bf16", "bf16", "64x104x64", 112.6),
        ("Table 1", "npu2", "int8", "int8", "64x232x64", 450.6),
        ("Table 1", "npu2", "int8", "int16", "64x216x64", 419.8),
        ("Table 1", "npu2", "int8", "int32", "48x280x48", 384.0),
        ("Table 1", "npu2", "bf16", "bf16", "48x152x48", 158.1),
        ("Table 2", "npu1", "int8", "int8", "112x112x112", 212.5),
        ("Table 2", "npu1", "int8", "int8", "112x104x128", 207.4),
        ("Table 2", "npu1", "int8", "int16", "96x112x96", 192.0),
        ("Table 2", "npu1", "int8", "int16", "80x104x128", 186.9),
        ("Table 2", "npu1", "int8", "int32", "80x88x96", 146.0),
        ("Table 2", "npu1", "int8", "int32", "64x80x128", 133.1),
        ("Table 2", "npu1", "bf16", "bf16", "96x56x96", 99.8),
        ("Table 2", "npu1", "bf16", "bf16", "96x48x112", 97.3),
        ("Table 3", "npu2", "int8", "int8", "144x72x144", 343.0),
        ("Table 3", "npu2", "int8", "int8", "160x64x144", 322.6),
        ("Table 3", "npu2", "int8", "int16", "128x72x112", 307.2),
        ("Table 3", "npu2", "int8", "int16", "160x64x96", 271.4),
        ("Table 3", "npu2", "int8", "int32", "96x64x96", 256.0),
        ("Table 3", "npu2", "int8", "int32", "128x56x80", 209.9),
        ("Table 3", "npu2", "bf16", "bf16", "112x48x96", 137.2),
        ("Table 3", "npu2", "bf16", "bf16", "160x40x80", 124.1)
    ]
    return tuple(KernelTrace(t, p, i, o, tuple(int(x) for x in tile.split("x")), r) for t, p, i, o, tile, r in data)


ROWS = _rows()
ARCHS = {"npu1": NPU1.replace(kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={}),
         "npu2": NPU2.replace(kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={})}


def modelled_macs_per_cycle(row: KernelTrace, overlap_c: bool | None = None) -> float:
    """The kernel model's MACs per cycle for ``row``'s call (its datapath as fastsim picks it for the
    input dtype, conversion included, C in the output dtype); ``overlap_c`` overrides the kernel's."""
    arch = ARCHS[row.part]
    key, conv = arch.datapath_options(row.in_dtype)[-1]
    kernel = KM.micro_kernel(arch, key)
    if overlap_c is not None:
        kernel = replace(kernel, overlap_c=overlap_c)
    m, k, n = row.tile
    cycles = float(KM.matmul_call_cycles(arch, key, m, k, n, conv_cycles_per_elem=conv,
                                         c_bytes=OUT_BYTES[row.out_dtype], kernel=kernel))
    return m * k * n / cycles


def errors(overlap_c: bool | None = None) -> list[tuple[KernelTrace, float]]:
    """(row, modelled / measured - 1) for every row."""
    return [(r, modelled_macs_per_cycle(r, overlap_c) / r.macs_per_cycle - 1) for r in ROWS]


def _summary(errs: list[float]) -> str:
    magnitudes = [abs(e) for e in errs]
    return f"median {100 * median(magnitudes):.0f} %, worst {100 * max(magnitudes):.0f} % over {len(errs)}"


def main() -> None:
    print(f"{SOURCE}: one-core kernel traces against the kernel model (MACs/cycle)")
    print(f"{'table':8} {'part':5} {'dtypes':11} {'tile':12} {'role':9} {'measured':>9} {'serial':>8} {'err':>6} "
          f"{'overlap':>8} {'err':>6}")
    serial, hidden = errors(), errors(overlap_c=True)
    for (r, e), (_, h) in zip(serial, hidden):
        tile = "x".join(map(str, r.tile))
        print(f"{r.table:8} {r.part:5} {r.in_dtype + '-' + r.out_dtype:11} {tile:12} {r.role:9} "
              f"{r.macs_per_cycle:9.1f} {r.macs_per_cycle * (1 + e):8.1f} {100 * e:+5.0f}% "
              f"{r.macs_per_cycle * (1 + h):8.1f} {100 * h:+5.0f}%")
    for role in ("train", "held out"):
        print(f"{role:9} serial (the model): {_summary([e for r, e in serial if r.role == role])}; "
              f"overlapped: {_summary([e for r, e in hidden if r.role == role])}")


if __name__ == "__main__":
    main()
