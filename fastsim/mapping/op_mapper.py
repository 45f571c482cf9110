"""What every op kind's mapper gives the evaluator (``Mapper``), and what it answers for one op
(``OpDesign``). Each kind declares its ``Mapper`` beside its space and search; ``mappers.MAPPERS``
lists them, so the evaluator has one door to every kind."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from ..design import Design
from ..lower import LoweredDesign
from ..results import DesignArrays
from .pins import PinRules


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


@dataclass(frozen=True)
class Mapper:
    """One op kind's mapper as the evaluator calls it; each callable takes the op as placed
    (``placed.Placed``), the arch and the graph's pins (``evaluation.GraphPins``: the mapping
    room reads its fields, the evaluation room owns the record).

    - ``design(p, arch, pins, noop, at, validate)`` -> ``OpDesign``: the op's design, its class
      ablated where ``noop``; ``at`` = (columns, first column) places it as a pipeline stage;
      ``validate`` False lets a search answer come back unchecked (``OpDesign.checked``).
    - ``search(p, arch, pins)`` -> ``SearchResult``: the search answer ``design`` took (what a
      one-op workload reports); None for a kind whose mapping is not a search's answer.
    - ``request(p, arch, pins, at)`` -> the arguments of ``search.search_many``, for a kind whose
      searches run together across a graph's ops; None for the others.
    - ``pins``: the ``Pins`` fields it takes (``op_pins`` apply to it); None: it takes none.
    - ``tables``: the graph's per-op pin tables that apply to it (``GraphPins.check`` refuses a
      table's pin that selects no op of a kind it applies to; ``op_pins`` follows ``pins``).
    """

    kind: str
    design: Callable[..., OpDesign]
    search: Callable | None = None
    request: Callable | None = None
    pins: PinRules | None = None
    tables: tuple[str, ...] = ("columns",)
