"""Simulate an LLM forward pass: build the graph, search fusion and mappings, cut it into feasible
dispatches, simulate every distinct op design in one batched engine call, and assemble the result.

Fusion is searched per group kind: every op is simulated both alone (activations through DDR) and
inside its group (activations on chip, token-blocked where needed), and each kind takes whichever
is faster (the kinds do not interact: an op's hand-offs depend only on its own group). A chain
(the whole dispatch fused) is tried on top where every activation fits. Ops with identical shapes
and hand-offs (every layer repeats the same ones) share one simulation.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import xarray as xr

from ..arch import Arch, NPU2
from ..errors import ConfigError
from ..gc_pause import gc_paused
from ..graph import OpGraph
from ..lower import lower, noop_twin
from ..mapping.dispatch import DispatchLimits, OpFootprint, assign, plan as plan_dispatches, sequence_words
from ..mapping.fusion import (CHAIN, GROUP_KINDS, PIPELINABLE, PIPELINE, Group, find_groups, fusion_kinds,
                              pipelined_kinds)
from ..simulation import simulate
from .assemble import TENSOR_KINDS, assemble, by_class, by_layer, llm_summary  # noqa: F401 (re-exported)
from .model import ModelConfig, Precision
from .op_result import OpResult, design_result
from .pipelined import pipelined_group, share_results
from .place import Placed, op_design, place
from .study import LlmStudy  # noqa: F401 (re-exported)
from .transformer import Pass, build_graph

_CACHE: "OrderedDict[tuple, OpResult]" = OrderedDict()
_CACHE_SIZE = 2048


def clear_cache() -> None:
    """Forget cached op results (they are exact; this only frees memory)."""
    _CACHE.clear()


def simulate_llm(study: LlmStudy, arch: Arch = NPU2, limits: DispatchLimits = DispatchLimits(),
                 strict: bool = True) -> xr.Dataset:
    """Simulate one forward pass (decode step or prefill); returns a per-op Dataset with totals.
    ``strict=False`` runs explicit cuts that do not fit a dispatch anyway and records what does not
    fit (``dispatch_fits``, attr ``dispatch_problems``) instead of raising: a cut search's input."""
    with gc_paused():
        model = study.model_config().validate()
        study.validate(model)
        precision = study.precision.validate()
        graph = build_graph(model, precision, study_pass(study))
        return Evaluation(graph, model, precision, study, arch, limits.validate(), strict).run()


def study_pass(study: LlmStudy) -> Pass:
    """The forward pass a study describes."""
    return Pass(study.regime, study.batch, study.context, study.prompt, study.prefill_context, study.costs,
                study.causal_halving, study.lm_head_last_only)


@dataclass
class Evaluation:
    """One graph evaluated under one study's pins: fusion searched, dispatches cut, every distinct
    op design simulated once (``results`` by ``Placed.key``)."""

    graph: OpGraph
    model: ModelConfig
    precision: Precision
    study: LlmStudy
    arch: Arch
    limits: DispatchLimits
    strict: bool
    results: dict = field(default_factory=dict)
    alternatives: dict = field(default_factory=dict)

    def __post_init__(self):
        self.groups = find_groups(self.graph)
        self.mapping = _mapping_key(self.study, self.precision, self.arch)
        arch = self.arch
        self.capacity = (arch.compute_tiles * arch.compute.memory_bytes
                         + arch.columns * arch.mem_rows * arch.mem.memory_bytes)
        self.cuts = None if self.study.cuts is None else tuple(sorted(self.study.cuts))

    def run(self) -> xr.Dataset:
        study, layers = self.study, self.graph.layers
        one = assign(layers, self.cuts or ())
        unfused = self.place(set(), False, one)
        self.simulate(unfused, strict=True)
        chosen = unfused
        self.alternatives["none"] = self.total(unfused)
        kinds = fusion_kinds(study.fusion)
        if kinds:
            grouped = self.place(kinds, False, one)
            self.simulate(grouped, strict=False)
            chosen, picked = self.best_per_kind(unfused, grouped, study.fusion != "auto")
            self.alternatives["groups:" + "+".join(picked)] = self.total(chosen)
            if study.regime == "prefill":
                chosen = self.pipelines(unfused, grouped, chosen)
        dispatch = self.dispatches(chosen, self.cuts)
        if study.fusion in ("auto", "chain"):
            chosen, dispatch = self.try_chain(chosen, dispatch)
        fusion = {"chosen": _label(chosen), "alternatives": "; ".join(
            f"{k} {v * 1e3:.4g} ms" if isinstance(v, float) else f"{k} {v}" for k, v in self.alternatives.items())}
        return assemble(study, self.model, self.precision, self.arch, chosen, self.results, dispatch, self.limits,
                        fusion)

    def place(self, fused: set[str], chain: bool, dispatch: list[int]) -> list[Placed] | None:
        return place(self.graph, self.groups, self.study, self.arch, fused, chain, dispatch)

    def dispatches(self, placed, cuts, strict: bool | None = None):
        """The dispatch plan of ``placed`` cut at ``cuts`` (None: the greedy feasible cut)."""
        strict = self.strict if strict is None else strict
        return plan_dispatches(self.graph.layers, self.footprints(placed), cuts, self.limits, self.capacity, strict)

    def try_chain(self, chosen, dispatch):
        """The whole dispatch fused, kept when asked (``chain``) or faster (``auto``); the reason
        it cannot be built lands in the alternatives."""
        study = self.study
        chained = self.place(set(), True, dispatch.of_op)
        if chained is None:
            if study.fusion == "chain":
                raise ConfigError(["fusion = chain: the activations do not all fit on chip at once "
                                   "(use groups or auto)"], "llm fusion")
            return chosen, dispatch
        self.simulate(chained, strict=study.fusion == "chain")
        total = self.total(chained)
        if total == float("inf"):
            return chosen, dispatch
        self.alternatives[CHAIN] = total
        if study.fusion == "chain" or total < self.total(chosen):
            try:
                return self.chain_dispatches(chained, dispatch)
            except ConfigError as e:
                if study.fusion == "chain":
                    raise
                self.alternatives[CHAIN] = "cannot: " + e.problems[0]
        return chosen, dispatch

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
        """Seconds of all ops (inf when one has no legal design)."""
        total = 0
        for p in placed:
            r = self.results.get(p.key)
            if r is None:
                return float("inf")
            total += r.cycles * p.op.repeat
        return total / self.arch.clock_hz

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
        study = self.study
        asked = pipelined_kinds(study.fusion)
        for kind in PIPELINABLE:
            if study.fusion != "auto" and kind not in asked:
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
        study = self.study
        stages = [[unfused[i] for i in s] for s in group.stages]
        built = pipelined_group(stages, [[grouped[i] for i in s] for s in group.stages],
                                [[self.results[grouped[i].key] for i in s] for s in group.stages],
                                self.graph.token_rows, study, self.precision, self.arch, kind)
        placed, designs, whole, twin, blocks, how = built
        ablated = tuple(sorted(study.noop))  # any member's ablation changes the whole pipeline
        if all((self.mapping, p.key, ablated) in _CACHE for p in placed):
            self.results.update({p.key: _CACHE[(self.mapping, p.key, ablated)] for p in placed})
            return placed
        sim = simulate([*designs, whole, twin])
        own = [design_result(sim, j, d, flow, kernels, self.arch)
               for j, (d, (flow, kernels)) in enumerate(zip(designs, how))]
        shared = share_results(placed, own, sim, (len(designs), len(designs) + 1), blocks)
        for key, r in shared.items():
            self.results[key] = _CACHE[(self.mapping, key, ablated)] = r
        return placed

    def footprints(self, placed) -> list[OpFootprint]:
        out = []
        for p in placed:
            r = self.results[p.key]
            static = (p.op.k * p.op.n * p.op.w.elem_bytes
                      if self.study.residency == "static" and p.op.streams_weights else 0.0)
            out.append(OpFootprint(sequence_words(r.host_steps, self.limits) * p.op.repeat, r.kernels, static))
        return out

    def simulate(self, placed: list[Placed], strict: bool) -> None:
        """Engine results of every distinct instance into ``results`` (cached across calls).
        ``strict``: an instance with no legal design is an error (listing every one); otherwise
        it is left out (fusion falls back)."""
        todo, by_key = self.designs(placed, strict)
        # every design and its data-only twin (NOOP kernels) in one batch; the twin's time is the
        # op's data-movement time, so exposed compute is measured by difference, as an ablation does
        batch, where = [], {}
        for key, (design, _, known, _, twin) in todo.items():
            lowered = lower(design) if known is None or twin is not None else None
            if known is None:
                where[key] = len(batch)
                batch.append(lowered)
            if twin is not None:
                where[(key, "twin")] = len(batch)
                batch.append(noop_twin(lowered, twin.drop))
        sim = simulate(batch) if batch else None
        for key, (design, flow, known, kernels, twin) in todo.items():
            src, i = (known, 0) if known is not None else (sim, where[key])
            r = design_result(src, i, design, flow, kernels, self.arch)
            if twin is not None:
                r = replace(r, movement_cycles=int(sim.total_cycles.values[where[(key, "twin")]]))
            self.results[key] = _CACHE[(self.mapping, key, _ablated(by_key[key], self.study))] = r
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)

    def designs(self, placed: list[Placed], strict: bool) -> tuple[dict, dict]:
        """The op designs still to simulate by key (cached results go straight to ``results``)."""
        from tqdm.auto import tqdm

        todo, problems, by_key = {}, [], {}
        for p in tqdm(placed, desc="mapping ops", unit="op", leave=False, disable=not _PROGRESS["on"]):
            key = p.key
            by_key[key] = p
            if key in self.results or key in todo:
                continue
            cache_key = (self.mapping, key, _ablated(p, self.study))
            cached = _CACHE.get(cache_key)
            if cached is not None:
                _CACHE.move_to_end(cache_key)
                self.results[key] = cached
                continue
            try:
                todo[key] = op_design(p, self.arch, self.study, self.precision)
            except ConfigError as e:
                if strict:
                    problems += [f"{p.op.name}: {x}" for x in e.problems]
        if problems:
            raise ConfigError(sorted(set(problems)), "llm mapping")
        return todo, by_key


def _label(placed: list[Placed]) -> str:
    """The fusion value that reproduces ``placed`` (what overlays store)."""
    kinds = {p.chip.group.kind + (f":{PIPELINE}" if p.pipelined else "") for p in placed if p.chip.group}
    return "+".join(sorted(kinds)) or "none"


_PROGRESS = {"on": False}


def show_progress(on: bool) -> None:
    """Show a progress bar on stderr while ops are mapped (the CLI turns it on for a terminal)."""
    _PROGRESS["on"] = bool(on)


def _ablated(p: Placed, study) -> bool:
    """Whether the ablation (``study.noop``) changes this op's design (the cache key's part that
    depends on it: other ops' results are reused across ablation runs)."""
    return p.op.op_class in study.noop or ("cast" in study.noop and bool(p.op.cast_cycles_per_weight))


def _mapping_key(study: LlmStudy, precision, arch: Arch) -> tuple:
    """Everything besides the op instance itself (and its own ablation, ``_ablated``) that
    op_design reads."""
    return (repr(arch), tuple(sorted(study.dataflow.items())), tuple(sorted(study.columns.items())),
            study.residency, study.kernel_efficiency, study.stream_split, precision.compute_dtype,
            precision.activations, study.costs)


def apply_overlay(study: LlmStudy, overlay) -> LlmStudy:
    """The study laid out as ``overlay`` says (its pins added to, and winning over, the study's)."""
    if overlay is None:
        return study
    return replace(study, fusion=overlay.fusion, columns={**study.columns, **overlay.columns},
                   dataflow={**study.dataflow, **overlay.dataflow}, residency=overlay.residency)


def simulate_generation(study: LlmStudy, new_tokens: int, arch: Arch = NPU2, samples: int = 4,
                        overlays: dict | None = None) -> dict:
    """A request end to end: prefill of ``study.prompt`` tokens, one overlay switch, then
    ``new_tokens`` decode steps whose context grows from the prompt length.

    Each regime runs on its own overlay (``overlays`` by regime; else each regime's searched
    layout). The switch costs ``Arch.reconfiguration_s`` when the cores keep their programs (the
    two layouts link the same kernels: only routes and BDs change) and ``Arch.elf_reload_s`` when
    they do not. Decode steps are simulated at ``samples`` contexts spread over the range and
    interpolated linearly in between (decode time is piecewise linear in context: KV reads grow
    linearly).
    """
    from ..mapping.overlay import switch_seconds

    if new_tokens < 1:
        raise ConfigError([f"new_tokens = {new_tokens}: must be >= 1"], "generation")
    overlays = overlays or {}
    prefill = simulate_llm(apply_overlay(replace(study, regime="prefill"), overlays.get("prefill")), arch)
    first, last = study.prompt, study.prompt + new_tokens - 1
    contexts = sorted({int(round(x)) for x in np.linspace(first, last, max(2, samples))})
    decode = apply_overlay(replace(study, regime="decode"), overlays.get("decode"))
    steps = [simulate_llm(replace(decode, context=c), arch) for c in contexts]
    per_step = np.interp(np.arange(first, last + 1), contexts, [float(s.total_seconds) for s in steps])
    ttft = float(prefill.total_seconds)
    switch, changes = switch_seconds(set(prefill.attrs["kernels"].split(";")),
                                     set(steps[-1].attrs["kernels"].split(";")), arch)
    total = ttft + switch + float(per_step.sum())
    return {
        "model": prefill.attrs["model"], "prompt": study.prompt, "new_tokens": new_tokens, "arch": arch.name,
        "seconds": total, "ttft_s": ttft, "overlay_s": switch, "overlay_change": changes,
        "decode_s": float(per_step.sum()),
        "tpot_s": float(per_step.mean()), "tokens_per_s": (study.batch * new_tokens) / total,
        "decode_contexts_simulated": contexts,
        "prefill_fusion": prefill.attrs["fusion"], "decode_fusion": steps[-1].attrs["fusion"],
        "prefill_by_class": by_class(prefill),
        "decode_by_class_at_last_context": by_class(steps[-1]),
    }
