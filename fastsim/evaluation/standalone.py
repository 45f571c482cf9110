"""One op run as a workload of its own (``fastsim run gemm``, ``fastsim run conv``): its one-op
graph through ``evaluate``, with what such a run reports beyond the graph's result: the op's
mapping search answer and the engine result of its design."""
from __future__ import annotations

from dataclasses import dataclass

import xarray as xr

from ..arch import Arch
from ..graph import OpGraph
from ..mapping.mappers import op_design, op_search
from ..mapping.placed import Placed
from ..mapping.search_result import SearchResult
from ..simulation import simulate
from .evaluate import GraphResult, evaluate
from .pins import GraphPins


@dataclass(frozen=True)
class StandaloneRun:
    """A one-op graph's evaluation, its op's search answer (mapping, certainty) and the engine
    result of the design the evaluation ran (``simulate``'s Dataset, stepped or traced as asked)."""

    result: GraphResult
    search: SearchResult
    dataset: xr.Dataset


def run_standalone(graph: OpGraph, arch: Arch, pins: GraphPins, skip: bool = True,
                   trace: bool = False) -> StandaloneRun:
    """Evaluate one-op ``graph`` as a workload of its own: the evaluator's search, cache and
    checks. Its dispatch limits are recorded (``DispatchPlan.fits``), never a refusal (a lone op was
    never held to them), and no data-only twin runs (its summary reads the engine result). The
    pins say the rest: a standalone op's are ``fusion="none"`` and its own ``op_pins``."""
    if len(graph.ops) != 1:
        raise ValueError(f"run_standalone: a graph of {len(graph.ops)} ops (one op runs standalone)")  # a caller's bug
    result = evaluate(graph, arch, pins, strict=False, movement=False)
    p = result.placed[0]
    found = op_search(p, arch, pins)
    return StandaloneRun(result, found, engine_result(p, found, arch, pins, skip, trace))


def engine_result(p: Placed, found: SearchResult, arch: Arch, pins: GraphPins, skip: bool, trace: bool):
    """The engine result of op ``p``'s design as the evaluation runs it: the search's own simulation
    where that is the design (no NOOP, the arch it was searched on) and neither stepping nor a
    trace is asked (the search skips cycles and records no trace); else the design simulated as
    asked (the same numbers, stepped or traced)."""
    design = op_design(p, arch, pins).design
    if skip and not trace and design is found.best_design and found.best_simulation is not None:
        return found.best_simulation
    return simulate(design, skip=skip, trace=trace)
