"""Search the mapping space of a convolution: enumerate, check and bound in closed form
(``conv_plan``), then simulate candidates cycle-exactly, best lower bound first, until the fastest
simulated one is no slower than every unsimulated bound (the answer is then the best of the space;
inside a graph, "slower" counts the design's control too: ``branch_bound.objective``).

Pointwise convolutions are GEMMs and go to the matmul mapper (``fastsim.mapping.search``) unchanged;
depthwise and dense ones search the conv space (``ConvMapping``): split, columns, rows, output rows
per call (``rpc``), output channels per call (``kb``), weights resident / streamed by output-channel
block / streamed by (output, input)-channel block with its input-channel block (``cb``).

``MAPPER`` is the conv kind's door for the evaluator: a graph op becomes a ``Conv2d`` and its
search's answer the op's design.
"""
from __future__ import annotations

from dataclasses import asdict, replace

from ..arch import Arch
from ..cache import CACHE, Region
from ..design import Design
from ..errors import ConfigError
from ..graph import CONV
from ..lower import lower, noop_twin
from .conv import CONV_PINS, SPLITS, WEIGHTS, Conv2d, ConvMapping, cdiv, check_mapping
from .branch_bound import FIRST_BATCH, LegalInOrder, branch_and_bound, control_cycles
from .conv_plan import control_counts_of, plan, problems
from .op_mapper import KindTraits, Mapper, NoopTwin, OpDesign
from .pins import Pins
from .placed import Placed, columns_pin, control_weight
from .search_result import SearchResult



REGION = "conv_search"
CACHE.add_region(Region(REGION, 64))


def search_conv(op: Conv2d, arch: Arch, pins: Pins = Pins(), budget: int | None = None,
                control_weight: float = 0.0) -> SearchResult:
    """The fastest mapping of ``op`` on ``arch`` (module docstring); results are kept in the one
    cache (region "conv_search", memory only) on everything the search reads. ``control_weight``:
    as the matmul search's (``search.search``), the objective's weight on the design's control."""
    op.validate(arch)
    CONV_PINS.validate(pins, arch)
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ConfigError([f"budget = {budget!r}: must be a whole number of candidates >= 1"], "conv search")
    key = (replace(op, name=""), pins, repr(arch), budget, control_weight)
    found = CACHE.get(REGION, key)
    if found is None:
        found = _pointwise(op, arch, budget, control_weight) if op.kind == "pointwise" and pins == Pins() else \
            _search(op, arch, pins, budget, control_weight)
        CACHE.put(REGION, key, found)
    return found


def gemm_of(op: Conv2d):
    """The GEMM a pointwise conv is: M = n*oh*ow pixels, K = c, N = k (strided 1x1 convs read
    every stride-th pixel: the shim's BD gathers them)."""
    from .space import Matmul

    return Matmul(op.n * op.oh * op.ow, op.c, op.k, op.dtype, c_bytes=op.out_bytes,
                  kernel_efficiency=op.kernel_efficiency, name=op.name)


def _pointwise_args(op: Conv2d, arch: Arch, budget: int | None, control_weight: float) -> tuple:
    """The GEMM search a pointwise conv is: ``search.search``'s op, arch, pins, top, keep, budget,
    control weight and report (also what ``pointwise_request`` hands ``search_many``). Its lists of
    ranked and rejected candidates are not made (``report=False``): a conv's answer keeps the
    simulated ones only."""
    return gemm_of(op), arch, Pins(), 6, 50, budget, control_weight, False


def _pointwise(op: Conv2d, arch: Arch, budget: int | None, control_weight: float) -> SearchResult:
    from .search import search

    found = search(*_pointwise_args(op, arch, budget, control_weight))
    chosen = next(r for r in found.ranked if r["chosen"])
    return SearchResult(op, found.best, found.best_cycles, found.ranked, [], found.enumerated, found.legal,
                        found.rejected_by_reason, found.best_design, found.best_run, None, found.simulated,
                        found.unexplored_bound_cycles, kind="pointwise", best_plan=chosen, gemm=found,
                        validated=found.validated, best_control_cycles=found.best_control_cycles)


def _pow2_cover(x: int, lo: int = 1) -> list[int]:
    """Powers of two from ``lo`` (or less when ``x`` is smaller) up to the first that covers ``x``,
    and ``x`` itself (a block that fits a dimension exactly pads nothing)."""
    out, v = [], min(lo, 1 << max(0, (x - 1).bit_length()))
    while True:
        out.append(v)
        if v >= x:
            break
        v *= 2
    return sorted(set(out) | {x})


def candidates(op: Conv2d, arch: Arch, pins: Pins) -> list[ConvMapping]:
    """Every mapping worth planning: splits that would leave whole parts as padding are skipped;
    blocks below 8 channels only when r input rows of 8 channels take over a quarter of core memory."""
    cols_opts = [pins.cols] if pins.cols else sorted({c for c in (1, 2, 4, 8, 16) if c <= arch.columns}
                                                      | {arch.columns})
    rows_opts = [pins.rows] if pins.rows else sorted({r for r in (1, 2, 4) if r <= arch.compute_rows}
                                                      | {arch.compute_rows})
    quarter = arch.compute.memory_bytes / 4
    width_in = (op.ow - 1) * op.stride + (op.s - 1) * op.dilation + 1
    wide = op.r * width_in * min(8, op.cg) * op.in_bytes > quarter  # rows so wide that blocks shrink below 8
    least = 1 if wide else 8
    out = []
    for split in [pins.split] if pins.split else SPLITS:
        for cols in cols_opts:
            for rows in rows_opts:
                cores = cols * rows
                ph, pk = {"rows": (cores, 1), "oc": (1, cores), "rows_by_col": (cols, rows),
                          "oc_by_col": (rows, cols)}[split]
                if (ph > op.oh or pk > op.k) and not pins.split:
                    continue
                ohp, kp = cdiv(op.oh, ph), cdiv(op.k, pk)
                for rpc in [pins.rpc] if pins.rpc else _pow2_cover(ohp):
                    for kb in [pins.kb] if pins.kb else _pow2_cover(kp, least):
                        for weights in [pins.weights] if pins.weights else WEIGHTS:
                            if weights != "ci":
                                out.append(ConvMapping(split, cols, rows, rpc, kb, weights, 0))
                            elif op.groups == 1:
                                for cb in [pins.cb] if pins.cb else [x for x in _pow2_cover(op.cg, least)
                                                                     if x < op.cg]:
                                    out.append(ConvMapping(split, cols, rows, rpc, kb, weights, cb))
    return out


def _search(op: Conv2d, arch: Arch, pins: Pins, budget: int | None, control_weight: float) -> SearchResult:
    """Plan every candidate, then branch and bound over the legal ones (module docstring)."""
    memo: dict = {}
    legal, reasons, enumerated = [], {}, 0
    for mp in candidates(op, arch, pins):
        enumerated += 1
        pl = plan(op, mp, arch, memo, checked=True)
        if mp.weights == "oc" and pl["kt"] == 1 and pins.weights is None:
            continue  # one output-channel block: the same loads as resident weights
        broken = problems(pl, arch)
        if broken:
            first = broken[0].limit.value  # the first limit broken, as the matmul search counts
            reasons[first] = reasons.get(first, 0) + 1
            continue
        control = control_cycles(control_counts_of(pl), arch, control_weight) if control_weight else 0
        legal.append({"mapping": mp, "plan": pl, "lower_bound_cycles": pl["lower_bound_cycles"],
                      "objective_bound": pl["lower_bound_cycles"] + control})
    if not legal:
        raise ConfigError([f"no legal mapping for conv {op.name} (c={op.c}, h={op.h}, w={op.w}, k={op.k}, "
                           f"r={op.r}, s={op.s}, groups={op.groups}, dtype={op.dtype}) among {enumerated} "
                           f"candidates; rejected: {reasons}"], "conv search")
    legal.sort(key=lambda r: (r["objective_bound"], r["plan"]["windows_per_core"] + r["plan"]["tiles_per_core"],
                              r["mapping"]))
    space = _ConvSpace(op, arch, legal)
    first = space.take(FIRST_BATCH if budget is None else min(FIRST_BATCH, budget), float("inf"))
    best, _, simulated = branch_and_bound(space, first, budget, control_weight=control_weight)
    left = space.unexplored_bound()
    return SearchResult(op, best["mapping"], best["cycles"], legal, [], enumerated, len(legal), reasons, best["design"],
                        best["simulation"], None, simulated, left, kind=op.kind, best_plan=best["plan"],
                        validated=True,  # its candidates were simulated through ``simulate``, which validates
                        best_control_cycles=best["objective"] - best["cycles"])


class _ConvSpace(LegalInOrder):
    """The conv candidates as ``branch_bound`` walks them: every legal one, planned, in order of
    ``objective_bound`` (its cycles bound plus, inside a graph, its design's weighted control,
    counted from the plan: ``conv_plan.control_counts_of``)."""

    group = "conv search"
    bound = "objective_bound"

    def __init__(self, op: Conv2d, arch: Arch, legal: list[dict]):
        super().__init__(f"conv {op.name}", legal)
        self.op, self.arch = op, arch

    def simulate(self, rows: list[dict], cap_cycles: int | None) -> list[dict]:
        _simulate(self.op, self.arch, rows, cap_cycles)
        return rows

    def tie(self, row: dict) -> tuple:
        return ()  # simulation order is bound order


def _simulate(op: Conv2d, arch: Arch, rows: list[dict], cap_cycles: int | None) -> None:
    """Simulate ``rows`` in one engine call; a run past ``cap_cycles`` cannot win and stops there
    (status ``cycle_limit``)."""
    from ..lower import capped, lower
    from ..report import binding_resource
    from ..simulation import simulate
    from .conv_design import conv_design

    designs = [conv_design(op, r["mapping"], arch, r["plan"]) for r in rows]
    runs = [capped(lower(d), cap_cycles, r["lower_bound_cycles"]) for d, r in zip(designs, rows)]
    ds = simulate(runs, on_error="record")
    for i, r in enumerate(rows):
        r["design"], r["simulation"] = designs[i], ds.isel(design=[i])
        r["status"] = str(ds.status.values[i])
        r["cycles"] = int(ds.total_cycles.values[i])
        r["bound_by"] = binding_resource(ds, i, arch) if r["status"] == "ok" else r["status"]


def pinned_design(op: Conv2d, mp: ConvMapping, arch: Arch):
    """The design of one explicit conv mapping (checked: a ConfigError lists what it breaks)."""
    from .conv_design import conv_design

    op.validate(arch)
    check_mapping(mp, arch)
    return conv_design(op, mp, arch)


def conv_op_design(p: Placed, arch: Arch, pins, noop: bool, at: tuple[int, int] | None = None,
                   validate: bool = True) -> OpDesign:
    """A conv op through this search. Its designs read and write DDR (``fusion.on_chip_flags``
    keeps its edges there), run on the columns the search picks (or its ``op_pins``), and stream
    their weights: pins and placements that ask otherwise are refused. NOOP (ablation) derives
    the data-only twin from its tables."""
    problems = _refusals(p, arch, pins, at)
    if problems:
        raise ConfigError(problems, "mapping")
    conv, found = _conv_search(p, arch, pins)
    kernels = frozenset({("conv", conv.kind, f"{conv.r}x{conv.s}", conv.dtype)})
    if noop:
        return OpDesign(found.best_design, "conv", None, kernels, None, noop_twin(lower(found.best_design)),
                        found.gap)
    twin = NoopTwin(_no_pipeline)  # a lone op's twin is derived from its tables; only pipelines build
    return OpDesign(found.best_design, "conv", found.best_arrays, kernels, twin, None, found.gap)


def _refusals(p: Placed, arch: Arch, pins, at: tuple[int, int] | None) -> list[str]:
    """What a conv op's placement or the graph's pins ask that a conv design does not do (empty:
    nothing)."""
    op = p.op
    return [f"{op.name}: {why}" for bad, why in (
        (p.chip.x or p.chip.y, "a conv reads and writes DDR; it does not fuse with its neighbours"),
        (at is not None, "a conv does not run as a pipeline stage"),
        (columns_pin(p, pins, arch) is not None, "columns: the conv search chooses a conv's columns"),
        (pins.residency == "static", "residency static: conv weights stream (resident per core where they fit)"),
        (pins.kernel_overhead_cycles != 0, "kernel_overhead_cycles: not modelled for conv kernels"),
        (op.w.elem_bytes != op.x.elem_bytes, f"weights of {op.w.elem_bytes:g} bytes on activations of "
         f"{op.x.elem_bytes:g}: mixed-precision convs are not modelled"),
        (pins.mapped_on is not None, "a conv's mapping is searched on the arch it runs on (mapped_on is for "
         "matmul and vector ops)")) if bad]


def _placed_conv(p: Placed, pins) -> Conv2d:
    """A placed conv op's ``Conv2d`` under the graph's pins (its pinned ``out_dtype``)."""
    op = p.op
    return conv_of(op, pins.compute_dtype, pins.kernel_efficiency, pins.pinned(pins.out_dtype, op.name, p.kind,
                                                                               op.op_class))


def _conv_search(p: Placed, arch: Arch, pins) -> tuple[Conv2d, SearchResult]:
    """A conv op's ``Conv2d`` and its search's answer under the graph's pins."""
    op, conv = p.op, _placed_conv(p, pins)
    return conv, search_conv(conv, arch, pins.op_pins_of(op.name, p.kind, op.op_class), pins.search_budget,
                             control_weight(p, pins))


def conv_of(op, compute_dtype: str, kernel_efficiency: float | None = None, out_dtype: str | None = None) -> Conv2d:
    """The ``Conv2d`` of a graph CONV op (int8 activations run int8; an int8 conv without an int8
    output writes bf16), writing ``out_dtype`` where that is pinned."""
    g = op.conv
    dtype = "int8" if op.x.elem_bytes == 1 else compute_dtype
    out = out_dtype or ("int8" if op.y.elem_bytes == 1 else ("bf16" if dtype == "int8" else None))
    return Conv2d(**asdict(g), dtype=dtype, out_dtype=out, kernel_efficiency=kernel_efficiency, name=op.name)


def _no_pipeline() -> Design:
    raise ConfigError(["a conv does not run as a pipeline stage"], "mapping")


def pointwise_request(p: Placed, arch: Arch, pins, at: tuple[int, int] | None = None) -> tuple | None:
    """The GEMM search ``search_conv`` runs for a pointwise conv with no pins of its own (``_pointwise``),
    as ``search.search_many``'s arguments, so that a graph's pointwise convs are searched together
    with its other GEMM searches; None where ``conv_op_design`` runs another search or refuses."""
    try:
        if _refusals(p, arch, pins, at) or pins.op_pins_of(p.op.name, p.kind, p.op.op_class) != Pins():
            return None
        conv = _placed_conv(p, pins)
    except ConfigError:
        return None
    if conv.kind != "pointwise":
        return None
    return _pointwise_args(conv, arch, pins.search_budget, control_weight(p, pins))


MAPPER = Mapper(CONV, KindTraits(ddr_edges=True, kernel_size="matmul", first_mm2s="w"), conv_op_design,
                search=lambda p, arch, pins: _conv_search(p, arch, pins)[1], request=pointwise_request,
                pins=CONV_PINS, tables=("out_dtype",))
