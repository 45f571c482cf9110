"""What every op kind's mapper gives the evaluator (``Mapper``, with the kind's ``KindTraits``), and
what it answers for one op (``OpDesign``). Each kind declares its ``Mapper`` as ``MAPPER`` in its own
module of ``fastsim.mapping``, beside its space and search; ``mappers.MAPPERS`` finds them there, so
the evaluator has one door to every kind and a new kind is one module."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from ..design import Design
from ..lower import LoweredDesign
from ..results import DesignArrays
from .pins import PinRules


@dataclass(frozen=True)
class KindTraits:
    """What fusion, dispatch planning and the per-op Dataset need to know of an op kind, declared
    once on its ``Mapper``: a mapper without them cannot be built, so no room can treat a new kind as
    another one by default."""

    ddr_edges: bool  # its designs read their input from and write their output to DDR (never fused on chip)
    kernel_size: str  # program memory of its kernel: "matmul" (a microkernel) or "vector" (``DispatchLimits``)
    first_mm2s: str  # the operand its designs stream on a shim's first MM2S channel: "x" or "w"

    def __post_init__(self):
        if self.kernel_size not in ("matmul", "vector") or self.first_mm2s not in ("x", "w"):
            raise ValueError(f"{self}: kernel_size is 'matmul' or 'vector', first_mm2s 'x' or 'w'")  # a declaration's bug


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
    - ``traits``: what the rooms around the mapper need to know of the kind (``KindTraits``).
    """

    kind: str
    traits: KindTraits
    design: Callable[..., OpDesign]
    search: Callable | None = None
    request: Callable | None = None
    pins: PinRules | None = None
    tables: tuple[str, ...] = ("columns",)
