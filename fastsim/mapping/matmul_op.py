"""The matmul mapper as the evaluator calls it (``MAPPER``): a graph op becomes the mapper's
``Matmul`` (the graph's operands X, W, Y are the mapper's A, B, C), the graph's pins become the
search's ``Pins``, and the search's answer becomes the op's design."""
from __future__ import annotations

from dataclasses import replace

from ..arch import Arch
from ..errors import ConfigError
from ..graph import MATMUL
from .design import NOOP_DROPS, matmul_design
from .op_mapper import KindTraits, Mapper, NoopTwin, OpDesign
from .pins import Pins
from .placed import Placed, columns_pin, control_weight
from .search import lower_bound_cycles, search
from .search_result import SearchResult
from .space import MATMUL_PINS, Matmul


def matmul_of(p: Placed, pins) -> Matmul:
    """A matmul op as the mapper sees it: its shapes, operand sizes, on-chip hand-offs and the pins
    that change its design (datapath dtype, efficiency, static weights)."""
    op = p.op
    static = pins.residency == "static" and op.w.kind == "weights"
    codegen = pins.pinned(pins.codegen, op.name, p.kind, op.op_class) or "external"
    if codegen != "external" and not op.streams_weights:
        raise ConfigError([f"codegen[{op.name}] = {codegen!r}: the generated kernel is measured on GEMMs over model "
                           f"weights; {op.name} reads {op.w.kind} (an attention kernel of its own)"], "mapping")
    return Matmul(m=op.m, k=op.k, n=op.n, dtype=pins.compute_dtype, a_bytes=op.x.elem_bytes,
                  b_bytes=op.w.elem_bytes, c_bytes=op.y.elem_bytes, kernel_efficiency=pins.kernel_efficiency,
                  kernel_overhead_cycles=pins.kernel_overhead_cycles, cast_cycles_per_weight=op.cast_cycles_per_weight,
                  macs_scale=op.macs_scale, static_b=static, name=op.name, a_on_chip=p.chip.x, c_on_chip=p.chip.y,
                  onchip_window_bytes=p.chip.window_bytes, row_major_ddr=pins.row_major_ddr,
                  codegen=codegen)


def _datapath(pins, p: Placed, arch: Arch, real: Matmul) -> str | None:
    """A pinned datapath, if it is one the op's dtype can run on."""
    path = pins.pinned(pins.datapath, p.op.name, p.kind, p.op.op_class)
    allowed = [d for d, _ in arch.datapath_options(real.dtype)]
    if path is not None and path not in allowed:
        raise ConfigError([f"datapath[{p.op.name}] = {path!r}: a {real.dtype} matmul runs on {arch.name} on "
                           f"{' or '.join(allowed) or 'no datapath'}"], "mapping")
    return path


def _search_pins(p: Placed, arch: Arch, pins, real: Matmul, cols: int | None, col0: int | None) -> Pins:
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
                  l2=pins.pinned(pins.l2, op.name, p.kind, op.op_class),
                  rows=pins.pinned(pins.rows, op.name, p.kind, op.op_class),
                  **{name: pins.pinned(getattr(pins, name), op.name, p.kind, op.op_class)
                     for name in ("split", "buffers", "c_buffers", "k_panel")})
    own = pins.op_pins_of(op.name, p.kind, op.op_class)
    set_twice = [f"{op.name}: {name} pinned twice, {getattr(tables, name)!r} by a table and {getattr(own, name)!r} "
                 "by op_pins: give it in one place"
                 for name in ("dataflow", "tile", "datapath", "l2", "cols", "rows", "split", "buffers", "c_buffers",
                              "k_panel")
                 if getattr(own, name) not in (None, ()) and getattr(tables, name) not in (None, ())
                 and (name != "dataflow" or chosen) and getattr(own, name) != getattr(tables, name)]
    if set_twice:
        raise ConfigError(set_twice, "mapping")
    return replace(tables, **own.set_fields())


def search_request(p: Placed, arch: Arch, pins, at: tuple[int, int] | None = None) -> tuple:
    """The mapping search ``matmul_op_design`` runs for ``p``: ``search``'s arguments (op, arch,
    pins, top, keep, budget, control_weight)."""
    cols, col0 = at if at else (columns_pin(p, pins, arch), None)
    real = matmul_of(p, pins)
    if at is not None and real.c_on_chip:  # a pipeline stage handing its output to the next one's columns
        real = replace(real, c_handoff=True)
    on = pins.mapped_on or arch  # the arch the mapping is searched for (a deployed design keeps it)
    # a pipeline stage, and an op held to a kernel its dispatch shares (a budgeted search), try
    # the best-bounded candidate of their narrowed space
    one = at is not None or (bool(p.kernel) and pins.search_budget is not None)
    return (real, on, _search_pins(p, arch, pins, real, cols, col0), 1 if one else pins.search_top,
            pins.search_keep, 1 if one else pins.search_budget, control_weight(p, pins))


def matmul_op_design(p: Placed, arch: Arch, pins, noop: bool, at: tuple[int, int] | None = None,
                     validate: bool = True) -> OpDesign:
    """A matmul op through the mapper's search (``--dataflow`` and ``--columns`` pin it); the
    search always sees the op as it really computes, so NOOP ablation keeps the mapping and
    removes only the compute (and "cast" in ``pins.noop`` the weights' dequantization)."""
    real, on, search_pins, top, keep, budget, weight = search_request(p, arch, pins, at)
    found = search(real, on, search_pins, top=top, keep=keep, budget=budget, validate=validate, control_weight=weight)
    best = found.best
    # a generated kernel is another program than mm.cc's at the same tile (never shared with it)
    kernels = {("matmul", best.tile, best.datapath or pins.compute_dtype,
                *(() if real.codegen == "external" else (real.codegen,)))}
    if real.cast_cycles_per_weight:
        kernels.add(("vector", "cast"))
    twin = None if noop else NoopTwin(lambda: matmul_design(real, best, arch, noop=True), NOOP_DROPS)
    if not noop and "cast" not in pins.noop and on is arch:
        return OpDesign(found.best_design, best.dataflow, found.best_arrays, frozenset(kernels), twin,
                        found.best_lowered, found.gap, found.validated)
    run = replace(real, cast_cycles_per_weight=0.0) if "cast" in pins.noop else real
    return OpDesign(matmul_design(run, best, arch, noop=noop), best.dataflow, None, frozenset(kernels), twin, None,
                    found.gap)


def matmul_op_search(p: Placed, arch: Arch, pins) -> SearchResult:
    """The search answer ``matmul_op_design`` took (cached after an evaluation; its design checked):
    its request is ``search``'s leading arguments in order (``search_many`` keys it the same way)."""
    return search(*search_request(p, arch, pins))


def matmul_lower_bound_cycles(p: Placed, arch: Arch, pins) -> float:
    """The fewest cycles matmul op ``p``'s design can take (closed-form bounds of its search
    space, nothing simulated; inf when no mapping is legal). A bound of the searched design only:
    0 where the design run is another (NOOP ablation, dequantization removed, a mapping kept
    from another arch), which bounds anything."""
    op = p.op
    if op.op_class in pins.noop or "cast" in pins.noop or pins.mapped_on not in (None, arch):
        return 0.0
    real = matmul_of(p, pins)
    try:
        return lower_bound_cycles(real, arch, _search_pins(p, arch, pins, real, columns_pin(p, pins, arch), None))
    except ConfigError:
        return float("inf")


MAPPER = Mapper(MATMUL, KindTraits(ddr_edges=False, kernel_size="matmul", first_mm2s="w"), matmul_op_design,
                search=matmul_op_search, request=search_request, pins=MATMUL_PINS,
                tables=("columns", "dataflow", "datapath", "tiles", "l2", "rows", "split", "buffers", "c_buffers",
                        "k_panel", "codegen"))
