"""Placement of a graph's ops: fusion groups applied (on-chip hand-offs, token blocks) and one
design per op instance, matmuls through the mapper's search."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from functools import cached_property
from typing import Callable, NamedTuple

from ..arch import Arch
from ..design import Design
from ..errors import ConfigError
from ..lower import LoweredDesign, lower, noop_twin
from ..mapping import Matmul, Pins, matmul_design, search
from ..mapping.dispatch import ControlWeight
from ..mapping.search_result import SearchResult
from ..mapping.search import lower_bound_cycles
from ..mapping.design import NOOP_DROPS as MATMUL_NOOP_DROPS
from ..graph import CONV, MATMUL, TRANSPOSE, VECTOR, Op, OpGraph
from ..mapping.fusion import (FLASH_ATTENTION, FLASH_KV_BLOCK, Group, OnChip, block_tokens, chain_groups,
                              intermediate_bytes_per_token, kind_by_op, on_chip_flags, runs_flash)
from ..mapping.transpose import Transpose, search_transpose, transpose_design
from ..mapping.vector import VectorOp, lowered_vector_design, vector_design
from ..mapping.vector_search import search_vector_columns
from ..results import DesignArrays
from .pins import GraphPins

@dataclass(frozen=True)
class Placed:
    """One op as it runs: its (possibly token-blocked) shape, its on-chip hand-offs, and the fusion
    pattern it belongs to whether fused or not (``kind``: pins and overlays may name it)."""

    op: Op
    chip: OnChip = OnChip()
    pipelined: tuple = ()  # (group kind, columns, first column, blocks) when its group is a pipeline
    kind: str = ""
    # (tile, datapath) a matmul is held to where its dispatch shares kernels (``evaluation.sharing``)
    kernel: tuple = ()
    # times its design is set up in its dispatch: once, or once per token block where a fused group
    # runs block by block (its ops take turns); a pipeline's blocks run inside one design
    runs: int = 1

    @property
    def reruns(self) -> int:
        """Times its design is re-run on new operands after its set-ups: each gathered repeat (an
        expert) beyond them; strided repeats (heads, sequences) are iterations of one task."""
        return self.op.repeat - self.runs if self.op.gathered else 0

    @cached_property
    def key(self) -> tuple:
        """Instances with equal keys have identical designs (simulated once): their repeats and
        runs are in it too, as they weigh the search's control (``control_weight``). An evaluation
        looks its ops' results up thousands of times: the key and its hash are made once."""
        return _HashedKey(self.op.shape_key + (self.op.name, self.kind, self.chip.x, self.chip.y,
                                               self.chip.window_bytes, self.pipelined, self.kernel,
                                               self.op.repeat, self.op.gathered, self.runs))


class _HashedKey(tuple):
    """A tuple whose hash is computed once (a plain tuple rehashes its nested dataclasses on every
    dict lookup); equal to, and printed as, the plain tuple."""

    def __new__(cls, items):
        key = super().__new__(cls, items)
        key._hash = tuple.__hash__(key)
        return key

    def __hash__(self):
        return self._hash

    def __reduce__(self):  # string hashes differ between processes: another one hashes anew
        return _HashedKey, (tuple(self),)


def place(graph: OpGraph, groups: tuple[Group, ...], pins: GraphPins, arch: Arch, fused: set[str], chain: bool,
          dispatch: list[int]) -> list[Placed] | None:
    """The ops with the pattern ``groups`` of kinds ``fused`` or ``chain`` (a whole dispatch)
    applied; None if a chain cannot keep every activation on chip. Prefill groups run in token
    blocks whose intermediates fit (``fusion.block_tokens``); a group with no such block stays
    unfused."""
    tokens = graph.token_rows
    l2 = arch.columns * arch.mem_rows * arch.mem.memory_bytes
    group_of: list[Group | None] = [None] * len(graph.ops)
    blocks = {}
    if chain:
        if block_tokens(tokens, graph.chain_live_bytes_per_token, l2) != tokens:
            return None
        chosen = chain_groups(graph, dispatch)
    else:
        chosen = []
        for g in groups:
            if g.kind not in fused:
                continue
            # flash attention needs no token blocks (its hand-offs stream through a ring)
            b = tokens if g.kind == FLASH_ATTENTION else block_tokens(tokens, intermediate_bytes_per_token(graph, g), l2)
            if b:
                blocks[g] = b
                chosen.append(g)
    for g in chosen:
        for i in g.ops:
            group_of[i] = g
    flash = {i for g in groups if g.kind == FLASH_ATTENTION for i in g.ops}
    kinds = kind_by_op(graph, groups)
    out = []
    for i, (op, chip) in enumerate(zip(graph.ops, on_chip_flags(graph, group_of, flash))):
        block, runs = blocks.get(group_of[i], tokens), 1
        if block < tokens and op.m == tokens:
            runs = math.ceil(tokens / block)
            op = replace(op, m=block, repeat=op.repeat * runs)
        if op.online_rescale_cycles and runs_flash(group_of[i], i, flash):
            extra = op.online_rescale_cycles / FLASH_KV_BLOCK  # once per block of keys
            op = replace(op, vector_cycles_per_elem=op.vector_cycles_per_elem + extra)
        out.append(Placed(op, chip, kind=kinds[i], runs=runs))
    return out


def _columns(pins: GraphPins, p: Placed, arch: Arch) -> int | None:
    cols = pins.pinned(pins.columns, p.op.name, p.kind, p.op.op_class)
    if cols is not None and cols > arch.columns:
        raise ConfigError([f"columns[{p.op.name}] = {cols}: the arch has {arch.columns} columns"], "mapping")
    return cols


def _datapath(pins: GraphPins, p: Placed, arch: Arch, real: Matmul) -> str | None:
    """A pinned datapath, if it is one the op's dtype can run on."""
    path = pins.pinned(pins.datapath, p.op.name, p.kind, p.op.op_class)
    allowed = [d for d, _ in arch.datapath_options(real.dtype)]
    if path is not None and path not in allowed:
        raise ConfigError([f"datapath[{p.op.name}] = {path!r}: a {real.dtype} matmul runs on {arch.name} on "
                           f"{' or '.join(allowed) or 'no datapath'}"], "mapping")
    return path


def matmul_of(p: Placed, pins: GraphPins) -> Matmul:
    """A matmul op as the mapper sees it: its shapes, operand sizes, on-chip hand-offs and the pins
    that change its design (datapath dtype, efficiency, static weights)."""
    op = p.op
    static = pins.residency == "static" and op.w.kind == "weights"
    # the graph's operands X, W, Y are the mapper's A, B, C
    return Matmul(m=op.m, k=op.k, n=op.n, dtype=pins.compute_dtype, a_bytes=op.x.elem_bytes,
                  b_bytes=op.w.elem_bytes, c_bytes=op.y.elem_bytes, kernel_efficiency=pins.kernel_efficiency,
                  kernel_overhead_cycles=pins.kernel_overhead_cycles, cast_cycles_per_weight=op.cast_cycles_per_weight,
                  macs_scale=op.macs_scale, static_b=static, name=op.name, a_on_chip=p.chip.x, c_on_chip=p.chip.y,
                  onchip_window_bytes=p.chip.window_bytes, row_major_ddr=pins.row_major_ddr)


@dataclass(frozen=True)
class NoopTwin:
    """An op design's NOOP twin: every kernel a 1-cycle pass, kernels named in ``drop`` gone, every
    byte still moving; its time is the op's data-movement time. ``build`` makes it as a Design
    (pipelines compose designs); a lone op derives it from its own lowered tables
    (``fastsim.lower.noop_twin`` with ``drop``), which is cheaper and the same."""

    build: Callable[[], Design]
    drop: tuple[str, ...] = ()


class OpDesign(NamedTuple):
    """One op instance's design and what is already known of it."""

    design: Design
    dataflow: str  # ws, is, os, or stream (vector ops)
    known: DesignArrays | None  # the engine result when the search already simulated exactly this design
    kernels: frozenset  # the kernels it links
    twin: NoopTwin | None  # None when it is a NOOP design already
    lowered: LoweredDesign | None  # its lowered tables, when already made
    search_gap: float = 0.0  # how much faster the best of its mapping space may be (0: proven, or nothing searched)
    # its design passed ``validate_design``; False: a search answer whose checks wait until the
    # evaluation chooses it (``validate=False`` of ``op_design``)
    checked: bool = True


def op_design(p: Placed, arch: Arch, pins: GraphPins, at: tuple[int, int] | None = None,
              validate: bool = True) -> OpDesign:
    """The design of one op instance. Matmul-like ops take the mapper's searched mapping
    (``--dataflow`` and ``--columns`` pin the search); the search always sees the op as it really
    computes, so NOOP ablation keeps the mapping and removes only the compute. ``at`` = (columns,
    first column) places the op on its own columns (a pipeline stage) instead of where the search
    or pins put it. ``validate=False``: a searched design may come back unchecked (``checked``)."""
    op = p.op
    noop = op.op_class in pins.noop
    if op.kind == VECTOR:
        cols, col0 = at if at else (_columns(pins, p, arch), None)
        spec = VectorOp(m=op.m, n=op.n, x_bytes=op.x.elem_bytes, y_bytes=op.y.elem_bytes,
                        vector_cycles_per_elem=op.vector_cycles_per_elem, x_inputs=op.x_inputs, noop=noop, cols=cols,
                        name=op.name, x_on_chip=p.chip.x, y_on_chip=p.chip.y,
                        onchip_window_bytes=p.chip.window_bytes, col0=col0 or 0,
                        stream_split="proportional" if pins.stream_split == "auto" else pins.stream_split)
        weight = control_weight(p, pins)
        if cols is None and weight and not (p.chip.x or p.chip.y):  # the real op's columns, NOOP or not
            spec = replace(spec, cols=search_vector_columns(replace(spec, noop=False), arch, weight))
        # lowering validates: on-chip buffers must fit next to the stream buffers, say so now
        design, lowered = lowered_vector_design(spec, arch)
        twin = None if noop else NoopTwin(lambda: vector_design(replace(spec, noop=True), arch))
        return OpDesign(design, "stream", None, frozenset({("vector", op.op_class)}), twin, lowered)
    if op.kind == CONV:
        return _conv_design(p, arch, pins, noop, at)
    if op.kind == TRANSPOSE:
        return _transpose_design(p, arch, pins, noop, at)
    real, on, search_pins, top, keep, budget, weight = search_request(p, arch, pins, at)  # refuses a kind it cannot map
    found = search(real, on, search_pins, top=top, keep=keep, budget=budget, validate=validate, control_weight=weight)
    best = found.best
    kernels = {("matmul", best.tile, best.datapath or pins.compute_dtype)}
    if real.cast_cycles_per_weight:
        kernels.add(("vector", "cast"))
    twin = None if noop else NoopTwin(lambda: matmul_design(real, best, arch, noop=True), MATMUL_NOOP_DROPS)
    if not noop and "cast" not in pins.noop and on is arch:
        return OpDesign(found.best_design, best.dataflow, found.best_arrays, frozenset(kernels), twin,
                        found.best_lowered, found.gap, found.validated)
    run = replace(real, cast_cycles_per_weight=0.0) if "cast" in pins.noop else real
    return OpDesign(matmul_design(run, best, arch, noop=noop), best.dataflow, None, frozenset(kernels), twin, None,
                    found.gap)


def search_request(p: Placed, arch: Arch, pins: GraphPins, at: tuple[int, int] | None = None) -> tuple | None:
    """The mapping search ``op_design`` runs for ``p``: ``search``'s arguments (op, arch, pins, top,
    keep, budget, control_weight), or None for an op it searches none for (vector ops; convs and
    transposes search their own)."""
    if p.op.kind in (VECTOR, CONV, TRANSPOSE):
        return None
    _matmul_kind(p.op)
    cols, col0 = at if at else (_columns(pins, p, arch), None)
    real = matmul_of(p, pins)
    on = pins.mapped_on or arch  # the arch the mapping is searched for (a deployed design keeps it)
    # a pipeline stage, and an op held to a kernel its dispatch shares (a budgeted search), try
    # the best-bounded candidate of their narrowed space
    one = at is not None or (bool(p.kernel) and pins.search_budget is not None)
    return (real, on, _search_pins(p, arch, pins, real, cols, col0), 1 if one else pins.search_top,
            pins.search_keep, 1 if one else pins.search_budget, control_weight(p, pins))


def control_weight(p: Placed, pins: GraphPins):
    """The weight of a candidate's control in ``p``'s search (``branch_bound.objective``), as
    ``Evaluation.total`` charges it per simulated run of its design: ``runs`` set-ups for ``repeat``
    runs, and where its repeats are gathered (experts) a re-run on new operands for each other
    run; 0 where the pins rank by cycles alone (``GraphPins.search_control``)."""
    if not pins.search_control:
        return 0.0
    return ControlWeight(p.runs / p.op.repeat, p.reruns / p.op.repeat)


def _matmul_kind(op: Op) -> None:
    """An op kind without a branch of its own must not be designed as a GEMM of its m, k, n."""
    if op.kind != MATMUL:
        raise ValueError(f"{op.name}: op kind {op.kind!r} has no design in op_design (docs/architecture.md, "
                         "How to add: an op kind)")


def _search_pins(p: Placed, arch: Arch, pins: GraphPins, real: Matmul, cols: int | None, col0: int | None) -> Pins:
    """What the graph's pins (and the kernel an op is held to) fix of a matmul's search: the
    tables, then the fields its ``op_pins`` set."""
    op = p.op
    chosen = pins.pinned(pins.dataflow, op.name, p.kind, op.op_class)
    flows = (chosen,) if chosen else (("ws",) if real.static_b else ())
    tile, datapath = p.kernel or (pins.pinned(pins.tiles, op.name, p.kind, op.op_class),
                                  _datapath(pins, p, arch, real))
    tables = Pins(dataflow=flows, cols=cols, col0=col0,
                  stream_split=None if pins.stream_split == "auto" else pins.stream_split,
                  tile=tuple(tile) if tile else None, datapath=datapath,
                  l2=pins.pinned(pins.l2, op.name, p.kind, op.op_class))
    own = pins.op_pins_of(op.name, p.kind, op.op_class)
    set_twice = [f"{op.name}: {name} pinned twice, {getattr(tables, name)!r} by a table and {getattr(own, name)!r} "
                 "by op_pins: give it in one place" for name in ("dataflow", "tile", "datapath", "l2", "cols")
                 if getattr(own, name) not in (None, ()) and getattr(tables, name) not in (None, ())
                 and (name != "dataflow" or chosen) and getattr(own, name) != getattr(tables, name)]
    if set_twice:
        raise ConfigError(set_twice, "mapping")
    return replace(tables, **{f.name: getattr(own, f.name) for f in fields(own)
                              if getattr(own, f.name) not in (None, ())})


def matmul_lower_bound_cycles(p: Placed, arch: Arch, pins: GraphPins) -> float:
    """The fewest cycles matmul op ``p``'s design can take (closed-form bounds of its search
    space, nothing simulated; inf when no mapping is legal). A bound of the searched design only:
    0 where the design run is another (NOOP ablation, dequantization removed, a mapping kept
    from another arch), which bounds anything."""
    op = p.op
    if op.op_class in pins.noop or "cast" in pins.noop or pins.mapped_on not in (None, arch):
        return 0.0
    real = matmul_of(p, pins)
    try:
        return lower_bound_cycles(real, arch, _search_pins(p, arch, pins, real, _columns(pins, p, arch), None))
    except ConfigError:
        return float("inf")


def _conv_design(p: Placed, arch: Arch, pins: GraphPins, noop: bool, at) -> OpDesign:
    """A conv op through the conv mapper's search (``fastsim.mapping.conv_search``). Its designs
    read and write DDR (``fusion.on_chip_flags`` keeps its edges there), run on the columns the
    search picks (or its ``op_pins``), and stream their weights: pins and placements that ask
    otherwise are refused. NOOP (ablation) derives the data-only twin from its tables."""
    op = p.op
    problems = [why for bad, why in (
        (p.chip.x or p.chip.y, "a conv reads and writes DDR; it does not fuse with its neighbours"),
        (at is not None, "a conv does not run as a pipeline stage"),
        (_columns(pins, p, arch) is not None, "columns: the conv search chooses a conv's columns"),
        (pins.residency == "static", "residency static: conv weights stream (resident per core where they fit)"),
        (pins.kernel_overhead_cycles != 0, "kernel_overhead_cycles: not modelled for conv kernels"),
        (op.w.elem_bytes != op.x.elem_bytes, f"weights of {op.w.elem_bytes:g} bytes on activations of "
         f"{op.x.elem_bytes:g}: mixed-precision convs are not modelled")) if bad]
    if problems:
        raise ConfigError([f"{op.name}: {why}" for why in problems], "mapping")
    if pins.mapped_on is not None:
        raise ConfigError([f"{op.name}: a conv's mapping is searched on the arch it runs on (mapped_on is for "
                           "matmul and vector ops)"], "mapping")
    conv, found = _conv_search(p, arch, pins)
    kernels = frozenset({("conv", conv.kind, f"{conv.r}x{conv.s}", conv.dtype)})
    if noop:
        return OpDesign(found.best_design, "conv", None, kernels, None, noop_twin(lower(found.best_design)),
                        found.gap)
    twin = NoopTwin(_no_conv_pipeline)  # a lone op's twin is derived from its tables; only pipelines build
    return OpDesign(found.best_design, "conv", found.best_arrays, kernels, twin, None, found.gap)


def _conv_search(p: Placed, arch: Arch, pins: GraphPins):
    """A conv op's ``Conv2d`` and its search's answer under the graph's pins."""
    from ..mapping.conv_search import search_conv

    op = p.op
    out = pins.pinned(pins.out_dtype, op.name, p.kind, op.op_class)
    conv = conv_of(op, pins.compute_dtype, pins.kernel_efficiency, out)
    return conv, search_conv(conv, arch, pins.op_pins_of(op.name, p.kind, op.op_class), pins.search_budget,
                             control_weight(p, pins))


def op_search(p: Placed, arch: Arch, pins: GraphPins) -> SearchResult:
    """The mapping search's answer that ``op_design`` takes for matmul, conv or transpose op ``p``
    (after an evaluation, its cached answer; a matmul's design checked): what a one-op workload
    reports of its op (the mapping, the search's certainty)."""
    if p.op.kind == CONV:
        return _conv_search(p, arch, pins)[1]
    if p.op.kind == TRANSPOSE:
        return _transpose_search(p, arch, pins)[1]
    request = search_request(p, arch, pins)
    if request is None:
        raise ValueError(f"{p.op.name}: a {p.op.kind} op searches no mapping")  # a caller's bug
    return search(*request)


def conv_of(op, compute_dtype: str, kernel_efficiency: float | None = None, out_dtype: str | None = None):
    """The conv mapper's ``Conv2d`` of a graph CONV op (int8 activations run int8; an int8 conv
    without an int8 output writes bf16), writing ``out_dtype`` where that is pinned."""
    from ..mapping.conv import Conv2d

    g = op.conv
    dtype = "int8" if op.x.elem_bytes == 1 else compute_dtype
    out = out_dtype or ("int8" if op.y.elem_bytes == 1 else ("bf16" if dtype == "int8" else None))
    return Conv2d(**asdict(g), dtype=dtype, out_dtype=out, kernel_efficiency=kernel_efficiency, name=op.name)


def _no_conv_pipeline() -> Design:
    raise ConfigError(["a conv does not run as a pipeline stage"], "mapping")


def _transpose_design(p: Placed, arch: Arch, pins: GraphPins, noop: bool, at) -> OpDesign:
    """A transpose op through its own search (``fastsim.mapping.transpose``): its designs read and
    write DDR (``KindTraits.ddr_edges``) on the columns the search picks (a ``columns`` table pin
    or its ``op_pins`` fix them). A mapping searched on ``mapped_on`` is built for ``arch``; NOOP
    (ablation) derives the data-only twin from its tables."""
    if at is not None:
        raise ConfigError([f"{p.op.name}: a transpose does not run as a pipeline stage"], "mapping")
    op, found = _transpose_search(p, arch, pins)
    kernels = frozenset({("transpose", op.elem_bytes, op.unit > 1)})
    design, known = found.best_design, found.best_arrays
    if pins.mapped_on not in (None, arch):
        design, known = transpose_design(op, found.best, arch), None
    if noop:
        return OpDesign(design, "transpose", None, kernels, None, noop_twin(lower(design)), found.gap)
    return OpDesign(design, "transpose", known, kernels, NoopTwin(_no_transpose_pipeline), None, found.gap)


def _transpose_search(p: Placed, arch: Arch, pins: GraphPins):
    """A transpose op's ``Transpose`` and its search's answer (on ``mapped_on`` where set) under
    the graph's pins: its ``op_pins``, and a ``columns`` table pin where those leave columns open."""
    op = p.op
    e = op.x.elem_bytes
    t = Transpose(op.m, op.n, op.k, int(e) if e == int(e) else e, op.name)
    own = pins.op_pins_of(op.name, p.kind, op.op_class)
    cols = _columns(pins, p, arch)
    if cols is not None and own.cols is None:
        own = replace(own, cols=cols)
    return t, search_transpose(t, pins.mapped_on or arch, own, pins.search_budget, control_weight(p, pins))


def _no_transpose_pipeline() -> Design:
    raise ConfigError(["a transpose does not run as a pipeline stage"], "mapping")
