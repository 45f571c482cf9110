"""One evaluator for every graph: fusion searched per pattern kind, dispatches cut, every distinct op
design simulated once in a batched engine call; typed per-op results (``GraphResult``).

Fusion is searched per group kind: every op is simulated both alone (activations through DDR) and
inside its group (activations on chip, token-blocked where needed), and each kind takes whichever
is faster (the kinds do not interact: an op's hand-offs depend only on its own group). A chain
(the whole dispatch fused) is tried on top where every activation fits. Ops with identical shapes
and hand-offs (every layer repeats the same ones) share one simulation.
"""
from __future__ import annotations

import threading
from array import array
from dataclasses import dataclass, field, fields, replace

from ..arch import Arch
from ..cache import CACHE, Region
from ..settings import current
from ..errors import ConfigError
from ..graph import OpGraph
from ..lower import lower, noop_twin
from ..graph import MATMUL
from ..mapping.dispatch import (DispatchLimits, DispatchPlan, OpFootprint, charged_runs,
                                control_instructions, control_seconds_per_dispatch, host_seconds_per_dispatch,
                                launch_seconds, launch_starts, plan as plan_dispatches, program_bytes, reload_seconds,
                                sequence_words, weighted_instructions)
from ..mapping.branch_bound import objective
from ..mapping.mappers import KIND_TRAITS, check_kinds, op_design, search_request
from ..mapping.matmul_op import matmul_lower_bound_cycles
from ..mapping.placed import Placed, control_weight
from ..mapping.search import search_many
from ..mapping.fusion import (CHAIN, GROUP_KINDS, PIPELINABLE, PIPELINE, Group, find_groups, fusion_kinds, kind_by_op,
                              pipelined_kinds)
from ..results import CORE_STATES, arrays_of
from ..simulation import simulate, simulate_arrays
from .op_result import OpResult, design_result
from .pins import GraphPins
from .pipelined import pipelined_group, share_results
from .place import place
from .sharing import shared_kernels


@dataclass(frozen=True)
class GraphResult:
    """A graph as it runs: every op instance as placed (fusion, token blocks, pipelines), its
    engine result, the dispatch plan, and the fusion choice with every alternative's time."""

    graph: OpGraph
    placed: tuple[Placed, ...]
    results: dict  # OpResult by Placed.key
    dispatch: DispatchPlan
    fusion: str
    alternatives: str
    control_instructions: tuple = ()  # per op: runtime-sequence instructions setting it up (``control``)

    def op_results(self) -> list[OpResult]:
        return [self.results[p.key] for p in self.placed]


def evaluate(graph: OpGraph, arch: Arch, pins: GraphPins = GraphPins(), limits: DispatchLimits = DispatchLimits(),
             strict: bool = True, movement: bool = True) -> GraphResult:
    """Map, fuse, cut and simulate ``graph``. ``strict=False`` runs explicit cuts that do not fit a
    dispatch anyway and records what does not fit (``DispatchPlan.fits``) instead of raising.
    ``movement=False`` leaves out the ops' data-only twins (a second engine run per op design,
    which only the compute / data-movement split reads): their ``movement_cycles`` are None, and
    every time, traffic and stall result is the same. An op of a kind no mapper declares is refused
    here, by name (``mappers.check_kinds``)."""
    check_kinds(graph.ops)
    return Evaluation(graph, pins, arch, limits.validate(), strict, movement=movement).run()


REGION = "op"  # fastsim.cache region of op results, across evaluations
SHARING = "sharing"  # a dispatch's shared kernels (``Evaluation.shared_in``), across evaluations
JUDGED = "judged"  # the kernels the plain run shares (``Evaluation.judged``), across evaluations
CACHE.add_region(Region(SHARING, 4096))
# answers per (shape, cut) and candidate (the chain is judged too): an ablation sweep asks each one
# again for every NOOP class, and a task holds 5 shapes x 25 cuts (64 entries evicted them between
# two classes; 160 cover a task in block order, ``sweeping.tasks.run_chunks``)
CACHE.add_region(Region(JUDGED, 160))
FUSION = "fusion"  # a graph's fusion choice (``Evaluation.fusion_choice``), across evaluations
# a choice per (shape, NOOP class): a task of an ablation sweep makes 50; each entry holds its graph
CACHE.add_region(Region(FUSION, 64))


class _Numbering:
    """The values ``shared_in`` keys by, numbered: a dispatch's key is then a few bytes per op
    instead of each op's key tuple (a decode dispatch holds ~190 ops: 126 kB a key, where its
    answer is a few numbers). Past ``most`` values the table and every key made of it start over
    (they are few: op instances' keys, mapping contexts). Evaluations may run on several threads (a
    dask worker's): numbering, and reading or storing a key, happen under ``lock``."""

    def __init__(self, most: int):
        self.most, self.table, self.starts, self.lock = most, {}, 0, threading.Lock()

    def numbers(self, values: list) -> list[int]:
        """``values`` numbered (the caller holds ``lock``), all from one table: it starts over
        first when they would not fit."""
        new = {v for v in values if v not in self.table}
        if len(self.table) + len(new) > self.most:
            self.table.clear()
            CACHE.clear(SHARING, JUDGED)  # their keys are numbers of the old table
            self.starts += 1
        return [self.table.setdefault(v, len(self.table)) for v in values]


_NUMBERS = _Numbering(50_000)
NO_MOVEMENT = "no twin"  # the key suffix of op results simulated without their data-only twin


@dataclass
class Evaluation:
    """One graph evaluated under its pins: fusion searched, dispatches cut, every distinct
    op design simulated once (``results`` by ``Placed.key``)."""

    graph: OpGraph
    pins: GraphPins
    arch: Arch
    limits: DispatchLimits
    strict: bool
    results: dict = field(default_factory=dict)
    movement: bool = True  # simulate each op design's data-only twin (``evaluate``)
    alternatives: dict = field(default_factory=dict)
    unablated: "Evaluation | None" = field(default=None, repr=False)  # the same graph without NOOP (``real_results``)
    unpinned: dict = field(default_factory=dict, repr=False)  # ``unpinned_kernel`` by (name, kind, class)
    # by op key, with the result they were made of: what ``total`` charges an op and its footprint
    # (the choices weigh the same ops' sums many times)
    op_cycles: dict = field(default_factory=dict, repr=False)
    op_footprints: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.groups = find_groups(self.graph)
        self.pins.check(self.graph, kind_by_op(self.graph, self.groups))
        on = self.pins.mapped_on
        if on is not None and on.replace(ddr_bytes_per_s=self.arch.ddr_bytes_per_s) != self.arch:
            raise ConfigError([f"mapped_on = {on.name}: a mapping is kept only on the same part with another DDR "
                               f"bandwidth; {self.arch.name} differs in more"], "pins")
        if on is not None and on == self.arch:
            self.pins = replace(self.pins, mapped_on=None)  # the same arch: searched as usual (one cache key)
        self.mapping = _mapping_key(self.pins, self.arch)
        arch = self.arch
        self.capacity = (arch.compute_tiles * arch.compute.memory_bytes
                         + arch.columns * arch.mem_rows * arch.mem.memory_bytes)
        self.cuts = None if self.pins.cuts is None else tuple(sorted(self.pins.cuts))

    def run(self) -> GraphResult:
        pins = self.pins
        chosen = self.fusion_choice()
        dispatch = self.dispatches(chosen, self.cuts)
        candidates = [(chosen, dispatch)]
        if pins.fusion in ("auto", "chain"):
            chain = self.chain_candidate(chosen, dispatch)
            if chain is not None:
                candidates = [chain] if pins.fusion == CHAIN else candidates + [chain]
        # each candidate with its kernels shared, then the one whose whole pass (ops, set-up,
        # launches, dispatches, program reloads) is fastest: the choice weighs what the run
        # reports, so a NOOP run, whose every candidate is no slower, never ends slower
        chosen, dispatch = self.share_kernels(*candidates[0])
        best = self.pass_seconds(chosen, dispatch)
        # sharing saves at most a plan's reloads where it holds ops to kernels by a narrower search
        # of the same run (an assumption: that search's objective weighs set-up as the pass does);
        # under an ablation or a mapping kept from another arch it follows another run
        # (``share_as_judged``), so there every candidate is shared and weighed
        judged = bool(pins.noop) or pins.mapped_on is not None
        for c, d in candidates[1:]:
            if not judged and self.pass_seconds(c, d) - self.reload_seconds(d) >= best:
                continue  # it cannot win
            c, d = self.share_kernels(c, d)
            seconds = self.pass_seconds(c, d)
            if seconds < best:
                chosen, dispatch, best = c, d, seconds
        self.check_designs(chosen)
        self.add_twins(chosen)
        alternatives = "; ".join(f"{k} {v * 1e3:.4g} ms" if isinstance(v, float) else f"{k} {v}"
                                 for k, v in self.alternatives.items())
        return GraphResult(self.graph, tuple(chosen), self.results, dispatch, _label(chosen), alternatives,
                           tuple(self.control(chosen, dispatch)))

    def fusion_choice(self) -> list[Placed]:
        """The ops with each group kind fused where that is faster (and pipelines tried, where the
        pins ask), every alternative's time in ``alternatives``. No cut enters it: an unchained
        placement does not read the dispatches.

        Kept by what decides it (region ``fusion``): the graph by identity, the pins but the cuts
        and the arch. An ablation sweep evaluates each NOOP class of a shape at 25 cuts, and this
        choice weighed every op of the step some ten times per cut. A hit reads its ops' results
        again from the op cache (``simulate``), so the results are the cache's as they are now; a
        choice with a pipeline is not kept (its results are cached under the pipeline's own keys)."""
        key = (id(self.graph), self.mapping, replace(self.pins, cuts=None, mapped_on=None))
        found = CACHE.get(FUSION, key)
        if found is not None and found[0] is self.graph:
            chosen = list(found[1])
            self.simulate(chosen, strict=True)
            self.alternatives.update(found[2])
            return chosen
        pins = self.pins
        unfused = self.place(set(), False, [])  # unchained: no dispatch is read
        self.simulate(unfused, strict=True)
        chosen = unfused
        self.alternatives["none"] = self.total(unfused)
        kinds = fusion_kinds(pins.fusion)
        if kinds:
            grouped = self.place(kinds, False, [])
            self.simulate(grouped, strict=False)
            chosen, picked = self.best_per_kind(unfused, grouped, pins.fusion != "auto")
            self.alternatives["groups:" + "+".join(picked)] = self.total(chosen)
            if pins.pipelines:
                chosen = self.pipelines(unfused, grouped, chosen)
        if not any(p.pipelined for p in chosen):
            CACHE.put(FUSION, key, (self.graph, tuple(chosen), dict(self.alternatives)))
        return chosen

    def place(self, fused: set[str], chain: bool, dispatch: list[int]) -> list[Placed] | None:
        return place(self.graph, self.groups, self.pins, self.arch, fused, chain, dispatch)

    def dispatches(self, placed, cuts, strict: bool | None = None):
        """The dispatch plan of ``placed`` cut at ``cuts`` (None: the greedy feasible cut)."""
        strict = self.strict if strict is None else strict
        return plan_dispatches(self.graph.layers, self.footprints(placed), cuts, self.limits, self.capacity, KIND_TRAITS,
                               strict)

    def chain_candidate(self, chosen, dispatch):
        """The whole dispatch fused, with its dispatches, or None where it cannot be built (the
        reason lands in the alternatives; an asked chain raises). ``run`` weighs it against the
        unchained plan."""
        asked = self.pins.fusion == CHAIN
        chained = self.place(set(), True, dispatch.of_op)
        if chained is None:
            if asked:
                raise ConfigError(["fusion = chain: the activations do not all fit on chip at once "
                                   "(use groups or auto)"], "fusion")
            return None
        self.simulate(chained, strict=asked)
        total = self.total(chained)
        if total == float("inf"):
            return None
        self.alternatives[CHAIN] = total
        try:
            chained, plan = self.chain_dispatches(chained, dispatch)
            self.alternatives[CHAIN] = self.total(chained)  # as kept: re-placed where the cut moved
            return chained, plan
        except ConfigError as e:
            if asked:
                raise
            self.alternatives[CHAIN] = "cannot: " + e.problems[0]
        return None

    def chain_dispatches(self, chained, dispatch):
        """A chain's dispatches. Explicit cuts are checked as given. Otherwise the greedy cut is
        found again on the chained ops (on-chip hand-offs push more mem-tile tasks: a chained
        dispatch may hold fewer layers); when it moves, the chain is re-placed on the new
        dispatches (the ops at a dispatch edge read and write DDR). Raises ConfigError when the
        chain fits no dispatch."""
        if self.cuts is not None:
            return chained, self.dispatches(chained, self.cuts)
        greedy = self.dispatches(chained, None, strict=True)
        if greedy.cuts != dispatch.cuts:
            chained = self.place(set(), True, greedy.of_op)
            self.simulate(chained, strict=True)
        return chained, self.dispatches(chained, greedy.cuts, strict=True)

    def total(self, placed: list[Placed]) -> float:
        """Seconds of all ops and of setting each up inside its dispatch (every op charged, as
        if none came first: the choices compare alternatives of the same ops; inf when one has no
        legal design); a gathered op's repeats beyond its set-ups re-run it on new operands
        (``Placed.reruns``)."""
        total = 0
        each = self.arch.runtime_instruction_cycles
        results, kept = self.results, self.op_cycles
        for p in placed:
            key = p.key
            r = results.get(key)
            if r is None:
                return float("inf")
            known = kept.get(key)
            if known is None or known[0] is not r:  # each op instance's charge once per result
                charged = charged_runs(p.runs, p.reruns, self.pins.resident_programs)
                known = kept[key] = (r, r.cycles * p.op.repeat + weighted_instructions(r.control, charged) * each)
            total += known[1]
        starts = launch_starts(joins_previous(placed), [0] * len(placed))  # fusion choices weigh launches too
        return total / self.arch.clock_hz + sum(launch_seconds(starts, self.arch, self.pins.launches_reconfigure))

    def runs(self, placed: list[Placed]) -> list[int]:
        """Times each op is set up in its dispatch (``Placed.runs``)."""
        return [p.runs for p in placed]

    def control(self, placed: list[Placed], dispatch: DispatchPlan) -> list[int]:
        """Per op of ``placed``: the runtime-sequence instructions that set it up in its dispatch
        (``mapping.dispatch.control_instructions``)."""
        return control_instructions([self.results[p.key].control for p in placed], self.runs(placed),
                                    [p.reruns for p in placed], dispatch.of_op, self.pins.resident_programs)

    def best_per_kind(self, unfused, grouped, forced: bool):
        """Each group kind fused or not, whichever is faster (forced: fused wherever it is legal)."""
        out = list(unfused)
        picked = []
        for kind in GROUP_KINDS:
            idx = [i for i, p in enumerate(unfused) if p.kind == kind]
            alone = self.total([unfused[i] for i in idx])
            fused = self.total([grouped[i] for i in idx])
            if not any(grouped[i].chip.group for i in idx):
                continue  # this kind could not be fused (no token block fits)
            if fused < float("inf") and (forced or fused < alone):
                for i in idx:
                    out[i] = grouped[i]
                picked.append(kind)
        return out, picked

    def pipelines(self, unfused, grouped, chosen):
        """Each fused group kind that can run as a spatial pipeline (``PIPELINABLE``), tried on
        top of ``chosen``: kept when faster under ``auto``, always when the fusion value asks for
        it ("KIND:pipeline"). Alternatives that cannot be built say why in ``alternatives``."""
        asked = pipelined_kinds(self.pins.fusion)
        for kind in PIPELINABLE:
            if self.pins.fusion != "auto" and kind not in asked:
                continue
            matches = [g for g in self.groups if g.kind == kind]
            idx = [i for g in matches for i in g.ops]
            if not idx or not all(grouped[i].chip.group and grouped[i].key in self.results for i in idx):
                continue  # not fused (no token block fits) or some fused op has no legal design
            try:
                placed = self.pipelined(matches[0], unfused, grouped, kind)
            except ConfigError as e:
                if kind in asked:
                    raise
                self.alternatives[f"{kind}:{PIPELINE}"] = "cannot: " + e.problems[0].split(";")[0]
                continue
            candidate = list(chosen)
            for g in matches:  # every layer's match runs as the first one's pipeline
                for i, like in zip(g.ops, placed):
                    candidate[i] = Placed(replace(unfused[i].op, m=like.op.m, repeat=like.op.repeat),
                                          replace(grouped[i].chip, window_bytes=0), like.pipelined, unfused[i].kind)
            total = self.total(candidate)
            self.alternatives[f"{kind}:{PIPELINE}"] = total
            if kind in asked or total < self.total(chosen):
                chosen = candidate
        return chosen

    def pipelined(self, group: Group, unfused, grouped, kind) -> list[Placed]:
        """One match of group ``kind`` as a pipeline: its ops as placed (in ``group.ops`` order),
        their results added to ``results`` (cached like any op's)."""
        stages = [[unfused[i] for i in s] for s in group.stages]
        built = pipelined_group(stages, [[grouped[i] for i in s] for s in group.stages],
                                [[self.results[grouped[i].key] for i in s] for s in group.stages],
                                self.graph.token_rows, self.pins, self.arch, kind)
        placed, designs, whole, twin, blocks, how = built
        ablated = tuple(sorted(self.pins.noop))  # any member's ablation changes the whole pipeline
        cached = [CACHE.get(REGION, (self.mapping, p.key, ablated)) for p in placed]
        if all(r is not None for r in cached):
            self.results.update({p.key: r for p, r in zip(placed, cached)})
            return placed
        sim = simulate([*designs, whole, twin])
        own = [replace(design_result(arrays_of(sim, j), d, flow, kernels, self.arch), search_gap=gap)
               for j, (d, (flow, kernels, gap)) in enumerate(zip(designs, how))]
        shared = share_results(placed, own, sim, (len(designs), len(designs) + 1), blocks)
        for key, r in shared.items():
            self.results[key] = r
            CACHE.put(REGION, (self.mapping, key, ablated), r)
        return placed

    def share_kernels(self, chosen, dispatch):
        """Each dispatch whose kernels overflow program memory with its matmuls held to a set of
        kernels that fits (``sharing``), kept where the whole pass (ops, dispatches, reloads) runs
        faster. Cuts the user gave stay; a greedy cut is found again when the shared designs no
        longer fit it (their runtime sequences differ), a chain placed again on it."""
        if all(b <= self.limits.program_memory_bytes for b in dispatch.program_bytes):
            return chosen, dispatch
        if self.pins.noop or self.pins.mapped_on is not None:
            return self.share_as_judged(chosen, dispatch)
        kernel_of = {}
        for d, program in enumerate(dispatch.program_bytes):
            if program > self.limits.program_memory_bytes:
                kernel_of.update(self.shared_in(chosen, dispatch, d))
        if not kernel_of:
            return chosen, dispatch
        out = self.held(chosen, kernel_of)
        shared = self.dispatches(out, dispatch.cuts, strict=False)
        if _problems(shared) > _problems(dispatch) and self.cuts is None:
            shared = self.dispatches(out, None, strict=False)
            if shared.cuts != dispatch.cuts and any(p.chip.group and p.chip.group.kind == CHAIN for p in chosen):
                again = self.place(set(), True, shared.of_op)
                self.simulate(again, strict=False)
                out = self.held(again, kernel_of)
                shared = self.dispatches(out, shared.cuts, strict=False)
        if (_problems(shared) > _problems(dispatch) or any(p.key not in self.results for p in out)
                or self.pass_seconds(out, shared) >= self.pass_seconds(chosen, dispatch)):
            return chosen, dispatch
        return out, shared

    def share_as_judged(self, chosen, dispatch):
        """The kernels the plain run shares: under an ablation, the run without it (NOOP keeps the
        mappings and removes only the compute, so one class's NOOP must not move other ops'
        kernels); for mappings kept from the part at full bandwidth (``mapped_on``), that part's
        run (a deployed design keeps its kernels under background traffic)."""
        judged = self.judged(chosen, dispatch)
        if judged is None:
            return chosen, dispatch
        out, cuts, unheld = judged
        self.simulate(unheld, strict=False)
        out = self.held(unheld, {i: p.kernel for i, p in enumerate(out) if p.kernel}, list(out))
        if any(p.key not in self.results for p in out):
            return chosen, dispatch
        return out, self.dispatches(out, cuts, strict=False)

    def judged(self, chosen, dispatch):
        """What the plain run (``share_as_judged``) makes of ``chosen`` cut as ``dispatch``: its ops
        with their kernels held (a tuple of ``Placed``), its cuts and the same ops unheld, or None
        where it keeps them.

        Kept by what decides it (``JUDGED``): the plain run's pins, arch and limits, and each op as
        placed (its key and on-chip hand-offs), and the graph by identity (its layers and edges
        decide the dispatches; the entry holds the graph, so no other can take its id while it is
        kept). A pipeline's results are this run's (its ablation, its arch): with one among the
        ops, those too. A sweep's ablation runs each class's NOOP on the same ops and cuts of a
        decode step, so its settings ask one question."""
        pins = replace(self.pins, noop=(), mapped_on=None)
        arch = self.pins.mapped_on or self.arch
        own = (tuple(sorted(self.pins.noop)), repr(self.arch)) if any(p.pipelined for p in chosen) else ()
        context = (id(self.graph), pins, repr(arch), self.limits, self.strict, own)
        with _NUMBERS.lock:
            numbers = _NUMBERS.numbers([context] + [(p.key, p.chip) for p in chosen])
            key = (numbers[0], dispatch.cuts, array("q", numbers[1:]).tobytes())
            started = _NUMBERS.starts
            found = CACHE.get(JUDGED, key)
        if found is not None and found[1] is self.graph:
            return found[0]
        answer = self._judged(chosen, dispatch, pins, arch)
        with _NUMBERS.lock:
            if _NUMBERS.starts == started:  # else its numbers belong to a table gone since
                CACHE.put(JUDGED, key, (answer, self.graph))
        return answer

    def _judged(self, chosen, dispatch, pins, arch):
        """``judged``'s answer, decided by an evaluation of the plain run."""
        judge = Evaluation(self.graph, pins, arch, self.limits, self.strict, movement=False)
        # a pipeline's results come from its own build (``pipelined``): its kernels are the same
        judge.results.update({p.key: self.results[p.key] for p in chosen if p.pipelined and p.key in self.results})
        judge.simulate(chosen, strict=False)
        if any(p.key not in judge.results for p in chosen):
            return None
        out, plan = judge.share_kernels(chosen, judge.dispatches(chosen, dispatch.cuts, strict=False))
        if out is chosen:
            return None
        return tuple(out), plan.cuts, tuple(replace(p, kernel=()) if p.kernel else p for p in out)

    def shared_in(self, chosen, dispatch: DispatchPlan, d: int) -> dict:
        """The kernel each movable op of dispatch ``d`` (indices into ``chosen``) is held
        to under the best kernel set that fits (ops on their own kernel left out); {} when none
        fits or none beats the reloads. Branch and bound, as the mapping search: an op design's
        time on another kernel is its closed-form lower bound until the best set so far needs it,
        then simulated; the answer is the best set over exact times (each the search's objective:
        cycles and weighted control, ``op_objective``).

        Kept by what decides it (``SHARING``): the dispatch's op instances, which of them are
        movable, its reload cycles, the mapping pins, the ablation and the limits. Other cuts of the
        same graph, and other runs of a sweep, meet the same dispatch again (every layer repeats
        the same ops); the held designs' results it simulated stay in the op cache."""
        mine = [i for i, x in enumerate(dispatch.of_op) if x == d]
        reload_cycles = reload_seconds(dispatch, self.graph.layers, self.limits, self.arch,
                                       self.pins.launches_reconfigure)[d] * self.arch.clock_hz
        movable = [self.movable(chosen[i]) for i in mine]
        context = (self.mapping, tuple(sorted(self.pins.noop)), self.limits)
        with _NUMBERS.lock:
            numbers = _NUMBERS.numbers([context] + [chosen[i].key for i in mine])
            key = (numbers[0], reload_cycles, array("q", [2 * n + m for n, m in zip(numbers[1:], movable)]).tobytes())
            started = _NUMBERS.starts
            at = CACHE.get(SHARING, key)
        if at is None:
            held = self._shared_in(chosen, mine, reload_cycles)
            at = tuple((mine.index(i), k) for i, k in held.items())
            with _NUMBERS.lock:
                if _NUMBERS.starts == started:  # else its numbers belong to a table gone since
                    CACHE.put(SHARING, key, at)
        return {mine[j]: k for j, k in at}

    def _shared_in(self, chosen, mine: list[int], reload_cycles: float) -> dict:
        """``shared_in``'s branch and bound over the ops ``mine`` of one dispatch."""
        results, limits = self.results, self.limits
        free = [i for i in mine if self.movable(chosen[i])]
        kernels = sorted({k for i in free for k in results[chosen[i].key].kernels if k[0] == "matmul"})
        first, count = {}, {}  # per distinct op design: its first instance, its calls in the dispatch
        for i in free:
            first.setdefault(chosen[i].key, i)
            count[chosen[i].key] = count.get(chosen[i].key, 0) + chosen[i].op.repeat
        own = {key: results[key].matmul_kernel for key in first}
        cycles = {key: {k: self.op_objective(chosen[i], results[key]) if k == own[key] else
                        matmul_lower_bound_cycles(replace(chosen[i], kernel=k[1:]), self.arch, self.pins)
                        if _calls(chosen[i].op, k) <= HELD_CALLS_MAX * _calls(chosen[i].op, own[key]) else float("inf")
                        for k in kernels} for key, i in first.items()}
        exact = {(key, k) for key, k in own.items()}
        fixed = frozenset(k for i in mine for k in results[chosen[i].key].kernels
                          if i not in free or k[0] != "matmul")
        room = (limits.program_memory_bytes - program_bytes(fixed, limits, KIND_TRAITS)) // max(1, limits.matmul_kernel_bytes)
        budget = sum(cycles[key][k] * count[key] for key, k in own.items()) + reload_cycles
        while True:
            weighted = {key: {k: c * count[key] for k, c in by.items() if c < float("inf")}
                        for key, by in cycles.items()}
            picks = shared_kernels(weighted, fixed, room)
            if picks is None or sum(weighted[key][k] for key, k in picks.items()) >= budget:
                return {}
            todo = {key: k for key, k in picks.items() if (key, k) not in exact}
            if not todo:
                return {i: picks[chosen[i].key][1:] for i in free if picks[chosen[i].key] != own[chosen[i].key]}
            tried = {key: replace(chosen[first[key]], kernel=k[1:]) for key, k in todo.items()}
            self.simulate(list(tried.values()), strict=False)
            for key, v in tried.items():
                cycles[key][todo[key]] = self.op_objective(v, results[v.key]) if v.key in results else float("inf")
                exact.add((key, todo[key]))

    def held(self, placed, kernel_of: dict, out: list[Placed] | None = None) -> list[Placed]:
        """``placed`` with the ops of ``kernel_of`` held to their kernels (``out``, where the caller
        has them), simulated, each held op's gap measured against its own whole space (the unheld
        op's lower bound)."""
        if out is None:
            out = [replace(p, kernel=kernel_of[i]) if i in kernel_of else p for i, p in enumerate(placed)]
        self.simulate([p for p in out if p.kernel], strict=False)
        measured = set()
        for alone, p in zip(placed, out):
            if p.kernel and p.key not in measured and p.key in self.results and alone.key in self.results:
                measured.add(p.key)  # every layer's instance is the same design: its gap once
                mine, own = self.results[p.key], self.results[alone.key]
                lower = (1 - own.search_gap) * self.op_objective(alone, own)  # gaps are of the objective
                self.results[p.key] = replace(mine, search_gap=max(0.0, 1 - lower / self.op_objective(p, mine)))
        return out

    def op_objective(self, p: Placed, r: OpResult) -> float:
        """What ``p``'s mapping search ranks its design by (``branch_bound.objective``): its cycles
        and, inside a graph, its weighted control."""
        return objective(r.cycles, r.control, self.arch, control_weight(p, self.pins))

    def reload_seconds(self, dispatch) -> float:
        """Seconds of ``dispatch``'s program reloads: what sharing kernels can save of a pass."""
        return sum(reload_seconds(dispatch, self.graph.layers, self.limits, self.arch, self.pins.launches_reconfigure))

    def pass_seconds(self, placed, dispatch) -> float:
        """Seconds of the ops, the dispatches' host round trips, their control instructions and
        their program reloads."""
        host = host_seconds_per_dispatch(self.arch, dispatch.count, self.pins.dispatch_commands)
        control = control_seconds_per_dispatch(self.control(placed, dispatch), dispatch.of_op, dispatch.count, self.arch)
        ops = sum(self.results[p.key].cycles * p.op.repeat for p in placed) / self.arch.clock_hz
        launches = launch_seconds(dispatch.starts_launch, self.arch, self.pins.launches_reconfigure)
        return ops + sum(host) + sum(control) + self.reload_seconds(dispatch) + sum(launches)

    def movable(self, p: Placed) -> bool:
        """A matmul whose kernel the evaluation may choose: not pinned by the user (tables or
        ``op_pins``), not a pipeline stage."""
        op = p.op
        return (op.kind == MATMUL and not p.pipelined and p.key in self.results
                and self.results[p.key].matmul_kernel is not None and self.unpinned_kernel(op.name, p.kind, op.op_class))

    def unpinned_kernel(self, name: str, kind: str, op_class: str) -> bool:
        """No pin fixes the kernel of the ops ``name`` / ``kind`` / ``op_class`` select: their tile,
        datapath or codegen. Asked for every op of every dispatch each time kernels are shared
        (a sweep's point asks hundreds of times), so kept per evaluation."""
        key = (name, kind, op_class)
        free = self.unpinned.get(key)
        if free is None:
            pins = self.pins
            own = pins.op_pins_of(name, kind, op_class)
            free = (pins.pinned(pins.tiles, name, kind, op_class) is None
                    and pins.pinned(pins.datapath, name, kind, op_class) is None
                    and pins.pinned(pins.codegen, name, kind, op_class) in (None, "external")
                    and own.tile is None and own.datapath is None)
            self.unpinned[key] = free
        return free

    def footprints(self, placed) -> list[OpFootprint]:
        out = []
        results, kept = self.results, self.op_footprints
        for p, joins in zip(placed, joins_previous(placed)):
            r = results[p.key]
            known = kept.get(p.key)
            if known is None or known[0] is not r:  # each op instance's once per result
                static = (p.op.k * p.op.n * p.op.w.elem_bytes
                          if self.pins.residency == "static" and p.op.streams_weights else 0.0)
                known = kept[p.key] = (r, sequence_words(r.host_steps, self.limits) * p.op.repeat, r.kernels, static)
            out.append(OpFootprint(known[1], known[2], known[3], joins))
        return out

    def simulate(self, placed: list[Placed], strict: bool) -> None:
        """Engine results of every distinct instance into ``results`` (cached across calls), without
        their data-only twins: the choices read op times only, and ``add_twins`` runs the chosen
        ops' twins at the end. ``strict``: an instance with no legal design is an error (listing
        every one); otherwise it is left out (fusion falls back)."""
        todo, by_key = self.designs(placed, strict)
        batch, where = [], {}
        for key, od in todo.items():
            if od.known is None:
                where[key] = len(batch)
                batch.append(od.lowered if od.lowered is not None else lower(od.design))
        outcomes = simulate_arrays(batch) if batch else []
        real = self.real_results([by_key[key] for key in todo if any(_ablated(by_key[key], self.pins))])
        for key, od in todo.items():
            outcome = od.known if od.known is not None else outcomes[where[key]]
            r = replace(design_result(outcome, od.design, od.dataflow, od.kernels, self.arch), search_gap=od.search_gap,
                        design_checked=od.checked)
            if od.twin is not None:  # its twin's time is not known yet (a NOOP design is its own twin)
                r = replace(r, movement_cycles=None)
            if key in real and real[key].cycles < r.cycles:
                r = paced(r, real[key])
            self.results[key] = r
            self.keep((self.mapping, key, _ablated(by_key[key], self.pins)), r)

    def real_results(self, ablated: list[Placed]) -> dict:
        """The results of ``ablated`` ops (``pins.noop``) as they really compute, by key: the pace a
        NOOP op may keep (``paced``)."""
        if not ablated:
            return {}
        if self.unablated is None:  # one for the evaluation: its results accumulate across the calls
            self.unablated = Evaluation(self.graph, replace(self.pins, noop=()), self.arch, self.limits, self.strict,
                                        movement=False)
        self.unablated.simulate(ablated, strict=False)
        return self.unablated.results

    def check_designs(self, placed: list[Placed]) -> None:
        """Validate the chosen ops' designs whose searches left it to the evaluation (``simulate``
        asks for them unchecked): of the alternatives the choices weigh, only those it reports
        need their checks, and checking every one was a tenth of a cold decode step."""
        problems = []
        for p in placed:
            r = self.results.get(p.key)
            if r is not None and not r.design_checked:
                try:
                    op_design(p, self.arch, self.pins, validate=True)
                except ConfigError as e:  # a chosen design that fails its checks: named by its op
                    problems += [f"{p.op.name}: {x}" for x in e.problems]
                    continue
                self.results[p.key] = r = replace(r, design_checked=True)
                self.keep((self.mapping, p.key, _ablated(p, self.pins)), r)
        if problems:
            raise ConfigError(problems, "mapping")

    def add_twins(self, placed: list[Placed]) -> None:
        """The data-only twin's time (``movement_cycles``) of each op of ``placed`` simulated
        without it, when the evaluation wants the compute / data-movement split: only the chosen
        ops' twins run, not those of every alternative the choices weighed."""
        if not self.movement:
            return
        todo = {p.key: p for p in placed if p.key in self.results and self.results[p.key].movement_cycles is None}
        batch, built = [], []
        for key, p in todo.items():
            od = op_design(p, self.arch, self.pins)
            if od.twin is not None:
                twin = noop_twin(od.lowered if od.lowered is not None else lower(od.design), od.twin.drop)
                # it moves what the op moves, so it is expected to run about as long (longest first)
                batch.append(replace(twin, expected_cycles=self.results[key].cycles))
                built.append(key)
        for key, outcome in zip(built, simulate_arrays(batch) if batch else []):
            # no slower than the op itself: its data can move at the pace the compute set (``paced``)
            r = replace(self.results[key], movement_cycles=min(outcome.cycles, self.results[key].cycles))
            self.results[key] = r
            self.keep((self.mapping, key, _ablated(todo[key], self.pins)), r)

    def cached(self, key: tuple):
        """An op result kept earlier, with its twin's time or without it (``add_twins`` adds it
        to a chosen op that lacks it)."""
        found = CACHE.get(REGION, key)
        return found if found is not None else CACHE.get(REGION, (*key, NO_MOVEMENT))

    def keep(self, key: tuple, r: OpResult) -> None:
        CACHE.put(REGION, key if r.movement_cycles is not None else (*key, NO_MOVEMENT), r)

    def search_together(self, placed) -> None:
        """The mapping searches of ``placed`` run at once (``search_many``: each step's candidates
        of every op in one engine call), so that ``op_design`` finds them answered. An op whose
        search cannot be set up is left to ``op_design``, which says why."""
        from tqdm.auto import tqdm

        requests = []
        for p in placed:
            try:
                request = search_request(p, self.arch, self.pins)
            except ConfigError:
                continue
            if request is not None:
                requests.append(request)
        with tqdm(total=len(requests), desc="searching mappings", unit="op", leave=False,
                  disable=not current().progress or len(requests) < 2) as bar:
            search_many(requests, bar.update)

    def designs(self, placed: list[Placed], strict: bool) -> tuple[dict, dict]:
        """The op designs still to simulate by key (cached results go straight to ``results``)."""
        from tqdm.auto import tqdm

        todo, problems, by_key, needed = {}, [], {}, {}
        for p in placed:
            key = p.key
            by_key[key] = p
            if key in self.results or key in needed:
                continue
            cached = self.cached((self.mapping, key, _ablated(p, self.pins)))
            if cached is not None:
                self.results[key] = cached
            else:
                needed[key] = p
        self.search_together(needed.values())
        for key, p in tqdm(needed.items(), desc="mapping ops", unit="op", leave=False,
                           disable=not current().progress):
            try:
                todo[key] = op_design(p, self.arch, self.pins, validate=False)
            except ConfigError as e:
                if strict:
                    problems += [f"{p.op.name}: {x}" for x in e.problems]
        if problems:
            raise ConfigError(sorted(set(problems)), "mapping")
        return todo, by_key


def paced(noop: OpResult, real: OpResult) -> OpResult:
    """A NOOP op whose own run is slower than the op computing (a timing anomaly: with no compute
    between them, its DMA requests meet in another order) run at the real op's pace instead: its
    cores wait as long as the kernels ran, so every transfer happens as in the real run. A pass
    that computes nothing is therefore never slower than the one that computes (docs/studies.md)."""
    cores = real.core_state_cycles.copy()
    cores[CORE_STATES.index("idle")] += cores[CORE_STATES.index("busy")]
    cores[CORE_STATES.index("busy")] = 0
    return replace(noop, cycles=real.cycles, movement_cycles=real.cycles, core_state_cycles=cores,
                   channel_state_cycles=real.channel_state_cycles)


def _problems(plan: DispatchPlan) -> int:
    return sum(map(len, plan.problems))


def _label(placed: list[Placed]) -> str:
    """The fusion value that reproduces ``placed`` (what overlays store)."""
    kinds = {p.chip.group.kind + (f":{PIPELINE}" if p.pipelined else "") for p in placed if p.chip.group}
    return "+".join(sorted(kinds)) or "none"


def _ablated(p: Placed, pins: GraphPins) -> tuple[bool, bool]:
    """How the ablation (``pins.noop``) changes this op's design (the cache key's part that
    depends on it: other ops' results are reused across ablation runs): its compute removed, and
    its weight dequantization removed, are two different designs."""
    return p.op.op_class in pins.noop, "cast" in pins.noop and bool(p.op.cast_cycles_per_weight)


def joins_previous(placed: list[Placed]) -> list[bool]:
    """Per op: whether it runs in the launch of the op before it (a later stage of its fusion group)."""
    return [p.chip.group is not None and i > 0 and placed[i - 1].chip.group is p.chip.group
            for i, p in enumerate(placed)]


# GraphPins fields that never change one op's design, so op results are shared across them: they
# choose among designs (fusion, pipelines), cut or submit dispatches (cuts, dispatch_commands,
# static_weights_resident), charge the launches around them (launches_reconfigure), or enter the
# key per op (noop: ``_ablated``). Every other field, a new one included, is part of the key: a
# pin left out would return another layout's cached answer.
NOT_IN_OP_DESIGN = frozenset({"fusion", "pipelines", "cuts", "dispatch_commands", "static_weights_resident", "noop",
                              "launches_reconfigure"})


def _mapping_key(pins: GraphPins, arch: Arch) -> tuple:
    """Everything besides the op instance itself (and its own ablation, ``_ablated``) that can
    change an op's design: the arch and every pin outside ``NOT_IN_OP_DESIGN``."""
    return (repr(arch), *((f.name, _order_free(getattr(pins, f.name))) for f in fields(pins)
                          if f.name not in NOT_IN_OP_DESIGN))


def _order_free(value):
    """A pin's value as a key: (name, value) tables sorted (their order means nothing), an arch by repr."""
    if isinstance(value, Arch):
        return repr(value)
    if isinstance(value, tuple) and value and all(isinstance(x, tuple) for x in value):
        return tuple(sorted(value))
    return value


# An op is held only to kernels whose tile needs at most this many times its own kernel calls. A
# smaller tile pays its per-call and per-block costs that many more times, and the engine steps
# each call: a decode LM head (1 x 2048 x 128256) held to a GEMV's 1x64x16 kernel makes 16x its own
# calls and costs a second of simulation to save at most 0.1 % of one op; at 4x, a decode FFN held
# to a 1x64x4 GEMV kernel still cost half a second to simulate (tiny BDs keep the engine stepping),
# and 2 halves a cold decode step for 0.15 % of its time (Llama-3.2-1B at 4k: 13.809 -> 13.831 ms).
# Every held op's gap still counts against its own whole space, so the pass's "could save at most"
# bound covers the kernels left out.
HELD_CALLS_MAX = 2


def _calls(op, kernel) -> int:
    """Kernel calls of ``op`` on ``kernel`` (("matmul", (m, k, n) tile, datapath))."""
    tm, tk, tn = kernel[1]
    return -(-op.m // tm) * -(-op.k // tk) * -(-op.n // tn) * op.repeat

