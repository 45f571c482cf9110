"""GEMM C[M,N] = A[M,K] @ B[K,N] as a workload: any size, mapped by the mapper's search.

Fields left ``None`` are searched (``fastsim.mapping``); set ones pin the search (a tile, the
columns, the dataflow, L2 residency, K split, datapath). ``gemm_design(g, arch, mapping)`` builds
the design of one explicit mapping instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arch import Arch
from ..cost import DTYPE_BYTES
from ..design import Design
from ..errors import Problems
from ..mapping import Mapping, Matmul, Pins, matmul_design, search
from ..mapping.space import OUT_DTYPE


@dataclass(frozen=True)
class Gemm:
    """C[M,N] = A[M,K] @ B[K,N]; ``None`` fields are chosen by the mapping search."""

    m_total: int = 2048
    k_total: int = 2048
    n_total: int = 2048
    dtype: str = "bf16"
    tile_m: int | None = None
    tile_k: int | None = None
    tile_n: int | None = None
    cols: int | None = None
    out_dtype: str | None = None  # default: bf16 -> bf16, int8 -> int32
    kernel_efficiency: float | None = None  # None: the arch's measured figure for the datapath
    kernel_overhead_cycles: int = 0
    weight_dtype: str | None = None  # B's storage dtype (default: dtype); narrower B is dequantized
    weight_bytes: float | None = None  # bytes per B element if not the dtype's (e.g. int4 + scales)
    cast_cycles_per_weight: float = 0.0  # explicit dequantization kernel on the core, per B element
    macs_scale: float = 1.0  # e.g. 0.5 for causal attention
    noop: bool = False  # replace compute by a 1-cycle pass: data still moves
    dataflow: str | None = None  # pin: os, ws or is
    l2: str | None = None  # pin: "", "a", "b" or "ab"
    k_split: int | None = None
    datapath: str | None = None
    stream_split: str | None = None  # pin: equal or proportional (searched on asymmetric columns)

    @property
    def macs(self) -> int:
        return self.m_total * self.k_total * self.n_total

    @property
    def ops(self) -> int:
        return 2 * self.macs

    def matmul(self) -> Matmul:
        p = Problems("gemm")
        for name in ("m_total", "k_total", "n_total"):
            p.check(getattr(self, name) >= 1, name, getattr(self, name), "must be >= 1")
        out = self.out_dtype or OUT_DTYPE.get(self.dtype, self.dtype)
        p.check(self.dtype in DTYPE_BYTES, "dtype", self.dtype, f"one of {sorted(DTYPE_BYTES)}")
        p.check(out in DTYPE_BYTES, "out_dtype", out, f"one of {sorted(DTYPE_BYTES)}")
        p.check((self.weight_dtype or self.dtype) in DTYPE_BYTES, "weight_dtype", self.weight_dtype,
                f"one of {sorted(DTYPE_BYTES)}")
        p.check(self.kernel_efficiency is None or 0 < self.kernel_efficiency <= 1, "kernel_efficiency",
                self.kernel_efficiency, "in (0, 1], or unset for the arch's figure")
        p.raise_if_any()
        b = self.weight_bytes or DTYPE_BYTES[self.weight_dtype or self.dtype]
        return Matmul(self.m_total, self.k_total, self.n_total, self.dtype, DTYPE_BYTES[self.dtype], b,
                      DTYPE_BYTES[out], self.kernel_efficiency, self.kernel_overhead_cycles,
                      self.cast_cycles_per_weight, self.macs_scale, name="gemm")

    def pins(self) -> Pins:
        tiles = (self.tile_m, self.tile_k, self.tile_n)
        p = Problems("gemm")
        p.check(all(t is None for t in tiles) or all(t is not None for t in tiles), "tile_m/tile_k/tile_n",
                tiles, "give all three sizes or none (searched)")
        p.raise_if_any()
        return Pins(dataflow=(self.dataflow,) if self.dataflow else (),
                    tile=None if self.tile_m is None else tiles, cols=self.cols, l2=self.l2,
                    k_split=self.k_split, datapath=self.datapath, stream_split=self.stream_split)


def gemm_mapping(g: Gemm, arch: Arch, top: int = 6):
    """The mapping search's result for ``g`` (ranked and rejected candidates included)."""
    return search(g.matmul(), arch, g.pins(), top=top)


def gemm_design(g: Gemm, arch: Arch, mapping: Mapping | None = None) -> Design:
    """The design of ``g`` under ``mapping`` (default: the searched one)."""
    mp = mapping or gemm_mapping(g, arch).best
    return matmul_design(g.matmul(), mp, arch, noop=g.noop)
