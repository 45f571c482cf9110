"""The one door from the evaluator to the mapper: every op kind's ``Mapper``, looked up by the op's
kind. Each kind declares its mapper as ``MAPPER`` in its own module of ``fastsim.mapping`` (beside its
space and search); this module finds them there, so adding a kind adds no line here. Two modules
declaring one kind fail ``import fastsim.mapping.mappers``; an op of a kind no module declares is
refused by the evaluator (``check_kinds``), naming the kinds there are."""
from __future__ import annotations

import importlib
import pkgutil

from ..arch import Arch
from ..errors import ConfigError
from ..graph import Op
from .layout import FRONT_END_TABLES, TABLES as LAYOUT_TABLES
from .op_mapper import KindTraits, Mapper, OpDesign
from .placed import Placed
from .search_result import SearchResult


def declared_mappers(modules) -> dict[str, Mapper]:
    """The ``MAPPER`` each of ``modules`` declares, by kind; a kind declared twice is refused (one of
    them would silently design the other's ops)."""
    found: dict[str, Mapper] = {}
    where: dict[str, str] = {}
    for module in modules:
        m = getattr(module, "MAPPER", None)
        if not isinstance(m, Mapper):
            continue
        if m.kind in found:
            raise ImportError(f"op kind {m.kind!r}: declared by two mappers, {where[m.kind]} and {module.__name__} "
                              "(docs/architecture.md, How to add: an op kind)")
        found[m.kind], where[m.kind] = m, module.__name__
    return found


def _mapping_modules():
    """Every module of ``fastsim.mapping`` but this one (the kinds' mappers live among them)."""
    package = __name__.rpartition(".")[0]
    here = importlib.import_module(package)
    return [importlib.import_module(f"{package}.{info.name}") for info in pkgutil.iter_modules(here.__path__)
            if f"{package}.{info.name}" != __name__]


MAPPERS: dict[str, Mapper] = dict(sorted(declared_mappers(_mapping_modules()).items()))
KIND_TRAITS: dict[str, KindTraits] = {kind: m.traits for kind, m in MAPPERS.items()}


def check_kinds(ops) -> None:
    """Refuse ops of a kind no mapper declares, by name (the graph takes any kind: which kinds are
    modelled is the mapper's to say)."""
    unknown = [f"{op.name}: op kind {op.kind!r} is not modelled (one of {', '.join(MAPPERS)})"
               for op in ops if op.kind not in MAPPERS]
    if unknown:
        raise ConfigError(unknown, "op graph")


# the per-op pin tables of a graph's pins (``evaluation.GraphPins``), each -> the op kinds it applies to
# (the layout's tables but its host ops, which shape the graph, then the as-built pins of one op)
TABLES = (*(t for t in LAYOUT_TABLES if t not in FRONT_END_TABLES), "op_pins", "out_dtype")
TABLE_KINDS: dict[str, tuple[str, ...]] = {
    table: tuple(kind for kind, m in MAPPERS.items() if (m.pins is not None if table == "op_pins" else table in m.tables))
    for table in TABLES}


def mapper_of(op: Op) -> Mapper:
    found = MAPPERS.get(op.kind)
    if found is None:  # an op that did not come through ``evaluate`` (``check_kinds``)
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
