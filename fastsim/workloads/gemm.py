"""GEMM C[M,N] = A[M,K] @ B[K,N] as a workload: a one-op graph, mapped by the mapper's search.

Fields left ``None`` are searched (``fastsim.mapping``); set ones pin the search (a tile, the
columns, the dataflow, L2 residency, K split, datapath). The op the mapper sees is the graph's op
as every graph's op becomes one (``fastsim.evaluation.place.matmul_of``), so a GEMM and the same
matmul inside a model map alike. ``gemm_design(g, arch, mapping)`` builds the design of one
explicit mapping instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arch import Arch
from ..design import Design
from ..dtypes import DTYPE_BYTES, OUT_DTYPE
from ..errors import ConfigError, Problems
from ..evaluation import GraphPins
from ..evaluation.place import Placed, matmul_of
from ..graph import MATMUL, Op, OpGraph, Operand
from ..mapping import Mapping, Matmul, Pins, matmul_design, search


MAX_EXTENT = 1 << 20  # per dimension
MAX_MACS = 1 << 40


@dataclass(frozen=True)
class Gemm:
    """C[M,N] = A[M,K] @ B[K,N]; ``None`` fields are chosen by the mapping search."""

    m: int = 2048
    k: int = 2048
    n: int = 2048
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
    rows: int | None = None  # pin: compute rows used per column (1 with cols 1: one core)
    datapath: str | None = None
    stream_split: str | None = None  # pin: equal or proportional; None or "auto": searched (as LLM runs say)
    budget: int | None = None  # candidates the search simulates; None: until proven the best of its space
    buffers: int | None = None  # pin: 1 = A and B single-buffered (as built without ping-pong); None: 2
    # A, B and C lie row-major in DDR and the shim reads them in tile rows, each paying the DDR
    # cost per run (an implementation's layout, an as-built fact); None or False: laid out as the
    # design reads them, one run per BD, as graph ops are (the default: the cost of row-major
    # layouts is a property of the implementation, and tile-row runs keep the engine stepping)
    row_major_ddr: bool | None = None

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n

    @property
    def ops(self) -> int:
        return 2 * self.macs

    def matmul(self) -> Matmul:
        """The op as the mapper sees it."""
        return matmul_of(Placed(self.graph().ops[0]), self.graph_pins())

    def graph(self) -> OpGraph:
        """The one-op graph: A is activations, B weights (narrower B is dequantized on the core)."""
        self._validate()
        out = self.out_dtype or OUT_DTYPE.get(self.dtype, self.dtype)
        b = self.weight_bytes or DTYPE_BYTES[self.weight_dtype or self.dtype]
        op = Op("gemm", "gemm", 0, MATMUL, self.m, self.k, self.n, Operand("activations", DTYPE_BYTES[self.dtype]),
                Operand("weights", b), Operand("activations", DTYPE_BYTES[out]),
                cast_cycles_per_weight=self.cast_cycles_per_weight, macs_scale=self.macs_scale)
        return OpGraph((op,), ((),), batch=1, tokens=self.m)

    def graph_pins(self) -> GraphPins:
        """What the GEMM fixes beyond its mapping pins (``pins``): datapath dtype, efficiency,
        per-call overhead, NOOP, and its operands row-major in DDR (read in tile rows: a GEMM's tensors
        at the API boundary)."""
        return GraphPins(self.dtype, kernel_efficiency=self.kernel_efficiency,
                         kernel_overhead_cycles=self.kernel_overhead_cycles, noop=("gemm",) if self.noop else (),
                         search_budget=self.budget, row_major_ddr=bool(self.row_major_ddr))

    def _validate(self) -> None:
        p = Problems("gemm")
        for name in ("m", "k", "n"):  # 2**20: a 512 x 2**26 x 2048 GEMM did not finish
            p.number(name, getattr(self, name), integer=True, lo=1, hi=MAX_EXTENT)
        if not p.items:
            p.check(self.macs <= MAX_MACS, "m x k x n", self.macs,
                    f"at most {MAX_MACS:,} MACs (2**40; 4096^3 is 2**36): larger ones take hours to simulate")
        p.number("kernel_overhead_cycles", self.kernel_overhead_cycles, integer=True, lo=0, hi=10**6)
        p.number("cast_cycles_per_weight", self.cast_cycles_per_weight, lo=0, hi=10**3)
        p.number("macs_scale", self.macs_scale, lo=0, lo_open=True, hi=1)
        if self.budget is not None:
            p.number("budget", self.budget, integer=True, lo=1, hi=100_000,
                     unit="candidates the search simulates (or unset: exact)")
        if self.weight_bytes is not None:
            p.number("weight_bytes", self.weight_bytes, lo=0, lo_open=True, hi=16)
        for name in ("dtype", "out_dtype", "weight_dtype"):
            v = getattr(self, name)
            p.check(v is None or isinstance(v, str), name, v, "a dtype name")
        p.check(self.row_major_ddr is None or isinstance(self.row_major_ddr, bool), "row_major_ddr",
                self.row_major_ddr, "true or false")
        p.raise_if_any()
        # out_dtype and weight_dtype default to dtype: only a value the user set is reported
        p.check(self.dtype in DTYPE_BYTES, "dtype", self.dtype, f"one of {sorted(DTYPE_BYTES)}")
        for name in ("out_dtype", "weight_dtype"):
            v = getattr(self, name)
            p.check(v is None or v in DTYPE_BYTES, name, v, f"one of {sorted(DTYPE_BYTES)}")
        if self.kernel_efficiency is not None:
            p.number("kernel_efficiency", self.kernel_efficiency, lo=0, lo_open=True, hi=1)
        p.raise_if_any()

    def pins(self) -> Pins:
        tiles = (self.tile_m, self.tile_k, self.tile_n)
        p = Problems("gemm")
        for name in ("tile_m", "tile_k", "tile_n", "cols", "rows", "k_split", "buffers"):
            if getattr(self, name) is not None:
                p.number(name, getattr(self, name), integer=True, lo=1, hi=4096)
        for name in ("dataflow", "l2", "datapath", "stream_split"):
            p.check(getattr(self, name) is None or isinstance(getattr(self, name), str), name, getattr(self, name),
                    "a name (or unset: searched)")
        p.check(all(t is None for t in tiles) or all(t is not None for t in tiles), "tile_m/tile_k/tile_n",
                tiles, "give all three sizes or none (searched)")
        p.raise_if_any()
        return Pins(dataflow=(self.dataflow,) if self.dataflow else (),
                    tile=None if self.tile_m is None else tiles, cols=self.cols, l2=self.l2,
                    k_split=self.k_split, datapath=self.datapath,
                    stream_split=None if self.stream_split == "auto" else self.stream_split, rows=self.rows,
                    buffers=self.buffers)


def gemm_mapping(g: Gemm, arch: Arch, top: int = 6):
    """The mapping search's result for ``g`` (ranked and rejected candidates included)."""
    g.graph()  # every field checked first: a dtype that is not a name must not reach the arch's tables
    if not arch.datapath_options(g.dtype):
        usable = [d for d in sorted(DTYPE_BYTES) if arch.datapath_options(d)]
        raise ConfigError([f"dtype = {g.dtype!r}: {arch.name} has no {g.dtype} matmul datapath (MAC rates for "
                           f"{', '.join(sorted(arch.macs_per_cycle))}); use --dtype {' or '.join(usable)}"], "gemm")
    return search(g.matmul(), arch, g.pins(), top=top, budget=g.budget)


def gemm_design(g: Gemm, arch: Arch, mapping: Mapping | None = None) -> Design:
    """The design of ``g`` under ``mapping`` (default: the searched one)."""
    mp = mapping or gemm_mapping(g, arch).best
    return matmul_design(g.matmul(), mp, arch, noop=g.noop)


def run_gemm(g: Gemm, arch: Arch, skip: bool = True, trace: bool = False) -> tuple[dict, object]:
    """Search ``g``'s mapping, and return the usual summary (``report.summarize``) with the workload,
    the chosen mapping and the search's certainty, and the engine result of the chosen design: what
    ``fastsim run gemm`` prints, for Python callers too."""
    found = gemm_mapping(g, arch)
    ds = chosen_simulation(found, skip, trace)
    return gemm_summary(ds, g, found, arch), ds


def chosen_simulation(found, skip: bool, trace: bool):
    """The engine result of the search's chosen design for a run that asks for ``skip`` and
    ``trace``: the search's own simulation where that is it (the search skips cycles and records
    no trace), else the chosen design simulated as asked (the same numbers, stepped or traced)."""
    if skip and not trace and found.best_simulation is not None:
        return found.best_simulation
    from ..simulation import simulate

    return simulate(found.best_design, skip=skip, trace=trace)


def gemm_summary(ds, g: Gemm, found, arch: Arch) -> dict:
    """The headline numbers (``report.summarize``) with the workload and the chosen mapping."""
    from ..mapping import datapath_of
    from ..report import summarize

    summary = summarize(ds, 0, arch, g.ops, g.dtype)
    mp = found.best
    summary["workload"] = {"kind": "gemm", "m": g.m, "k": g.k, "n": g.n, "dtype": g.dtype,
                           "kernel_efficiency": g.kernel_efficiency
                           or arch.efficiency(datapath_of(g.matmul(), mp, arch))}
    summary["mapping"] = {"label": mp.label(), "dataflow": mp.dataflow, "split": mp.split, "tile": list(mp.tile),
                          "cols": mp.cols, "rows": mp.rows, "col0": mp.col0, "k_split": mp.k_split,
                          "order": mp.order, "l2": mp.l2, "datapath": mp.datapath,
                          "stream_split": mp.stream_split,
                          "padding_waste": next(r["padding_waste"] for r in found.ranked if r["chosen"])}
    summary["search"] = found.summary()
    return summary
