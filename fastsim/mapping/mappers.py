"""The one door from the evaluator to the mapper: every op kind's ``Mapper`` (declared in the
kind's own module, beside its space and search), looked up by the op's kind. A kind of the graph
without a mapper here, or a mapper of no kind, fails ``import fastsim.mapping.mappers``."""
from __future__ import annotations

from ..arch import Arch
from ..graph import OP_KINDS, Op
from . import conv_search, matmul_op, transpose, vector_search
from .layout import TABLES as LAYOUT_TABLES
from .op_mapper import Mapper, OpDesign
from .placed import Placed
from .search_result import SearchResult

MAPPERS: dict[str, Mapper] = {m.kind: m for m in (matmul_op.MAPPER, vector_search.MAPPER, conv_search.MAPPER,
                                                   transpose.MAPPER)}


def check_mappers(kinds, mappers) -> None:
    """Every op kind has its mapper and every mapper a kind: checked at import, so that no op is
    designed by another kind's mapper (a transpose as a GEMM of its m, k, n)."""
    if set(mappers) != set(kinds):
        raise ImportError(f"op kinds and their mappers differ: {sorted(set(kinds) ^ set(mappers))} "
                          "(fastsim/mapping/mappers.py; docs/architecture.md, How to add: an op kind)")


check_mappers(OP_KINDS, MAPPERS)

# the per-op pin tables of a graph's pins (``evaluation.GraphPins``), each -> the op kinds it applies to
# (the layout's tables but its host ops, which shape the graph, then the as-built pins of one op)
TABLES = (*(t for t in LAYOUT_TABLES if t != "host"), "op_pins", "out_dtype")
TABLE_KINDS: dict[str, tuple[str, ...]] = {
    table: tuple(kind for kind, m in MAPPERS.items() if (m.pins is not None if table == "op_pins" else table in m.tables))
    for table in TABLES}


def mapper_of(op: Op) -> Mapper:
    found = MAPPERS.get(op.kind)
    if found is None:  # an op built outside an OpGraph, which refuses unknown kinds
        raise ValueError(f"{op.name}: op kind {op.kind!r} has no mapper (docs/architecture.md, How to add: an op kind)")
    return found


def op_design(p: Placed, arch: Arch, pins, at: tuple[int, int] | None = None,
              validate: bool = True) -> OpDesign:
    """The design of one op instance, by its kind's mapper, under the graph's pins
    (``evaluation.GraphPins``, as every ``pins`` of a ``Mapper``). The search always sees the op as it
    really computes, so NOOP ablation (``pins.noop``) keeps the mapping and removes only the
    compute. ``at`` = (columns, first column) places the op on its own columns (a pipeline stage)
    instead of where the search or pins put it. ``validate=False``: a searched design may come
    back unchecked (``OpDesign.checked``)."""
    return mapper_of(p.op).design(p, arch, pins, p.op.op_class in pins.noop, at, validate)


def op_search(p: Placed, arch: Arch, pins) -> SearchResult:
    """The mapping search's answer that ``op_design`` takes for ``p`` (after an evaluation, its
    cached answer): what a one-op workload reports of its op (the mapping, the search's certainty)."""
    m = mapper_of(p.op)
    if m.search is None:
        raise ValueError(f"{p.op.name}: a {p.op.kind} op searches no mapping")  # a caller's bug
    return m.search(p, arch, pins)


def search_request(p: Placed, arch: Arch, pins, at: tuple[int, int] | None = None) -> tuple | None:
    """The arguments of the search ``op_design`` runs for ``p`` where its kind's searches run
    together across a graph (``search.search_many``); None for the other kinds."""
    m = mapper_of(p.op)
    return None if m.request is None else m.request(p, arch, pins, at)
