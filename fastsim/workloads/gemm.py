"""GEMM C[M,N] = A[M,K] @ B[K,N] as a workload: a one-op graph, run by the evaluator.

Fields left ``None`` are searched (``fastsim.mapping``); set ones pin the search (a tile, the
columns, the dataflow, L2 residency, K split, datapath). ``run_gemm`` evaluates the one-op graph
(``fastsim.evaluation.run_standalone``), so a GEMM and the same matmul inside a model map alike,
through the same search, cache and checks; it returns what ``fastsim run gemm`` prints.
``gemm_mapping`` is the search alone with every ranked and rejected candidate (``fastsim map
gemm``); ``gemm_design(g, arch, mapping)`` builds the design of one explicit mapping.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..arch import Arch
from ..design import Design
from ..dtypes import DTYPE_BYTES, OUT_DTYPE
from ..errors import ConfigError, Problems
from ..evaluation import GraphPins, run_standalone
from ..mapping.matmul_op import matmul_of
from ..mapping.placed import Placed
from ..graph import MATMUL, Op, OpGraph, Operand
from ..kernel_model.matmul import CODEGENS
from ..mapping import Mapping, Matmul, Pins, matmul_design, search
from ..mapping.space import MATMUL_PINS
from ..simulation import simulate
from .cast_launch import cast_design, check_cast_launch, with_cast_launch


MAX_EXTENT = 1 << 20  # per dimension
MAX_MACS = 1 << 40
# the GEMM's search simulates its best-bounded SEARCH_TOP candidates first and keeps SEARCH_KEEP
# ranked and rejected ones (``map gemm`` lists them): the mapping search's own defaults
SEARCH_TOP, SEARCH_KEEP = 6, 50
# the choices an as-built file (or the options) may pin, as ``run gemm`` reports them
AS_BUILT_CHOICES = ("tile", "cols", "rows", "split", "dataflow", "l2", "datapath", "k_split", "stream_split", "out_dtype",
                    "buffers", "c_buffers")
# the facts a file may state that are never searched: unset, each is its default (reported as such)
AS_BUILT_FACTS = {"k_panel": "1", "cast_launch": "false", "row_major_ddr": "false", "codegen": "external"}


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
    split: str | None = None  # pin: how M and N split over columns and core rows (2d, 2dt, n, m)
    k_split: int | None = None
    rows: int | None = None  # pin: compute rows used per column (1 with cols 1: one core)
    datapath: str | None = None
    stream_split: str | None = None  # pin: equal or proportional; None or "auto": searched (as LLM runs say)
    budget: int | None = None  # candidates the search simulates; None: until proven the best of its space
    buffers: int | None = None  # pin: 1 = A and B single-buffered (as built without ping-pong); None: 2
    c_buffers: int | None = None  # pin: 1 = each core's C tile single-buffered (it waits for each drain)
    k_panel: int | None = None  # pin: L1 K tiles per mem-tile buffer of A and B (mlir-air tile_k_l2 / tile_k_l1)
    # A, B and C lie row-major in DDR and the shim reads them in tile rows, each paying the DDR
    # cost per run (an implementation's layout, an as-built fact); None or False: laid out as the
    # design reads them, one run per BD, as graph ops are (the default: the cost of row-major
    # layouts is a property of the implementation, and tile-row runs keep the engine stepping)
    row_major_ddr: bool | None = None
    # C leaves as an f32 scratch (out_dtype f32) and a second launch of the same dispatch casts it to
    # bf16 (mlir-air's fused-cast: ``cast_launch``); an implementation fact, never searched
    cast_launch: bool | None = None
    # who wrote the kernel: "external" (a hand-written mm.cc, as None) or "direct" (mlir-air's
    # compiler-generated matmul, ``kernel_model.matmul.CODEGENS``); an implementation fact
    codegen: str | None = None

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
        """The one-op graph's pins: its mapping pins (``pins``) as the op's ``op_pins``, datapath
        dtype, efficiency, per-call overhead, NOOP, its operands row-major in DDR (read in tile rows:
        a GEMM's tensors at the API boundary), nothing to fuse, and its search as ``map gemm`` runs it
        (by cycles alone: the op is a dispatch of its own)."""
        return GraphPins(self.dtype, kernel_efficiency=self.kernel_efficiency,
                         kernel_overhead_cycles=self.kernel_overhead_cycles, noop=("gemm",) if self.noop else (),
                         search_budget=self.budget, row_major_ddr=bool(self.row_major_ddr), fusion="none",
                         op_pins=(("gemm", self.pins()),), search_top=SEARCH_TOP, search_keep=SEARCH_KEEP,
                         search_control=False, codegen=(("gemm", self.codegen),) if self.codegen else ())

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
        for name in ("row_major_ddr", "cast_launch"):
            p.check(getattr(self, name) is None or isinstance(getattr(self, name), bool), name, getattr(self, name),
                    "true or false")
        p.raise_if_any()
        # out_dtype and weight_dtype default to dtype: only a value the user set is reported
        p.check(self.dtype in DTYPE_BYTES, "dtype", self.dtype, f"one of {sorted(DTYPE_BYTES)}")
        for name in ("out_dtype", "weight_dtype"):
            v = getattr(self, name)
            p.check(v is None or v in DTYPE_BYTES, name, v, f"one of {sorted(DTYPE_BYTES)}")
        if self.kernel_efficiency is not None:
            p.number("kernel_efficiency", self.kernel_efficiency, lo=0, lo_open=True, hi=1)
        p.check(self.codegen in (None, *CODEGENS), "codegen", self.codegen,
                f"one of {CODEGENS} (a hand-written mm.cc, or mlir-air's compiler-generated matmul)")
        p.raise_if_any()

    def pins(self) -> Pins:
        tiles = (self.tile_m, self.tile_k, self.tile_n)
        p = Problems("gemm")
        for name in ("tile_m", "tile_k", "tile_n", "cols", "rows", "k_split", "buffers", "c_buffers", "k_panel"):
            if getattr(self, name) is not None:
                p.number(name, getattr(self, name), integer=True, lo=1, hi=4096)
        for name in ("dataflow", "split", "l2", "datapath", "stream_split"):
            p.check(getattr(self, name) is None or isinstance(getattr(self, name), str), name, getattr(self, name),
                    "a name (or unset: searched)")
        p.check(all(t is None for t in tiles) or all(t is not None for t in tiles), "tile_m/tile_k/tile_n",
                tiles, "give all three sizes or none (searched)")
        p.raise_if_any()
        return Pins(dataflow=(self.dataflow,) if self.dataflow else (),
                    tile=None if self.tile_m is None else tiles, cols=self.cols, split=self.split, l2=self.l2,
                    k_split=self.k_split, datapath=self.datapath,
                    stream_split=None if self.stream_split == "auto" else self.stream_split, rows=self.rows,
                    buffers=self.buffers, c_buffers=self.c_buffers, k_panel=self.k_panel)


def check_dtype(dtype: str, arch: Arch) -> None:
    """``dtype`` against the dtypes ``arch`` has a matmul datapath for: only those are listed, so
    that a dtype the list offers (int4 has element bytes but no MAC datapath) is never refused next."""
    usable = [d for d in sorted(DTYPE_BYTES) if arch.datapath_options(d)]
    if dtype not in usable:
        why = f"{arch.name} has no {dtype} matmul datapath; " if dtype in DTYPE_BYTES else ""
        raise ConfigError([f"dtype = {dtype!r}: {why}use --dtype {' or '.join(usable)} (the dtypes {arch.name} has "
                           "a matmul datapath for)"], "gemm")


def _gemm_launch_only(g: Gemm, what: str) -> None:
    """``map gemm`` and ``export gemm`` see the GEMM launch alone: a cast launch is refused there."""
    if g.cast_launch:
        raise ConfigError([f"cast_launch = true: {what} shows the GEMM launch alone (its cast launch is a second "
                           "design); fastsim run gemm runs both"], "gemm")


def gemm_mapping(g: Gemm, arch: Arch, top: int = SEARCH_TOP):
    """The mapping search's result for ``g`` (ranked and rejected candidates included)."""
    g.graph()  # every field checked first: a dtype that is not a name must not reach the arch's tables
    _gemm_launch_only(g, "map gemm")
    check_dtype(g.dtype, arch)
    return search(g.matmul(), arch, g.pins(), top=top, keep=SEARCH_KEEP, budget=g.budget)


def gemm_design(g: Gemm, arch: Arch, mapping: Mapping | None = None) -> Design:
    """The design of ``g`` under ``mapping`` (default: the searched one)."""
    _gemm_launch_only(g, "a GEMM's design (export gemm)")
    mp = mapping or gemm_mapping(g, arch).best
    return matmul_design(g.matmul(), mp, arch, noop=g.noop)


def run_gemm(g: Gemm, arch: Arch, skip: bool = True, trace: bool = False,
             as_built: str | None = None) -> tuple[dict, object]:
    """Evaluate ``g``'s one-op graph, and return the usual summary (``report.summarize``) with the
    workload, the chosen mapping and the search's certainty, and the engine result of the chosen
    design: what ``fastsim run gemm`` prints, for Python callers too. ``as_built``: the as-built
    file ``g`` was built with (``with_as_built``), whose pinned and searched choices the summary
    reports (``as_built_report``). With a cast launch the summary covers both launches and the
    Dataset the GEMM launch (its attrs ``cast_launch_cycles`` the second)."""
    graph = g.graph()  # every field checked first, as in ``gemm_mapping``
    check_dtype(g.dtype, arch)
    MATMUL_PINS.validate(g.pins(), arch)  # named as the search names them (the evaluator adds the op's name)
    if g.cast_launch:
        check_cast_launch(g.dtype, g.out_dtype, arch)
        if trace:
            raise ConfigError(["--trace: a GEMM with a cast launch runs two designs, and a trace shows one; "
                               "trace its GEMM launch without cast_launch"], "gemm")
    run = run_standalone(graph, arch, g.graph_pins(), skip=skip, trace=trace)
    summary = gemm_summary(run.dataset, g, run.search, arch)
    if g.cast_launch:
        mp = run.search.best
        cast = simulate(cast_design(g.m, g.n, arch, mp.cols or arch.columns, noop=g.noop), skip=skip)
        summary = with_cast_launch(summary, run.dataset, cast, arch)
        run.dataset.attrs["cast_launch_cycles"] = summary["launches"][1]["cycles"]
    if as_built:
        summary["as_built"] = as_built_report(g, as_built)
    return summary, run.dataset


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
                          "stream_split": mp.stream_split, "k_panel": mp.k_panel, "c_buffers": mp.c_buffers,
                          "buffers": mp.buffers,
                          "padding_waste": next(r["padding_waste"] for r in found.ranked if r["chosen"])}
    summary["search"] = found.summary()
    return summary


def with_as_built(g: Gemm, path: str) -> Gemm:
    """``g`` with the [gemm] table of as-built file ``path`` applied: the file's choices pin the
    search; a choice ``g`` sets too is refused (given in one place)."""
    from ..mapping.overlay import load_as_built

    table = dict(load_as_built(path).check_read_by("gemm", path).gemm)
    if not table:
        raise ConfigError([f"{path}: no [gemm] table"], "--overlay")
    if "tile" in table:
        tile_pin = table.pop("tile")
        if not (isinstance(tile_pin, tuple) and len(tile_pin) == 3):
            raise ConfigError([f"[gemm].tile = {tile_pin!r}: three sizes [m, k, n]"], path)
        table.update(tile_m=tile_pin[0], tile_k=tile_pin[1], tile_n=tile_pin[2])
    clash = [name for name in table if getattr(g, name) is not None]
    if clash:
        raise ConfigError([f"{', '.join(clash)}: {path} sets it too ([gemm]); give it in one place"], "--overlay")
    return replace(g, **table)


def as_built_report(g: Gemm, path: str) -> dict:
    """Which of the GEMM's choices (``AS_BUILT_CHOICES``) the as-built file ``path`` or ``g``'s own
    fields pinned, which were searched, and the file's sources for its [gemm] table."""
    from ..mapping.overlay import load_as_built

    set_by = {"tile": g.tile_m, **{name: getattr(g, name) for name in AS_BUILT_CHOICES if name != "tile"}}
    facts = {name: getattr(g, name) for name in AS_BUILT_FACTS}
    return {"file": path, "pinned": [k for k in AS_BUILT_CHOICES if set_by[k] is not None]
            + [k for k, v in facts.items() if v is not None],
            "searched": [k for k in AS_BUILT_CHOICES if set_by[k] is None],
            "default": [f"{k} {AS_BUILT_FACTS[k]}" for k, v in facts.items() if v is None],
            "sources": {k: v for k, v in load_as_built(path).sources.items() if k.startswith("gemm.")}}
