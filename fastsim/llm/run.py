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
from dataclasses import replace

import numpy as np
import xarray as xr

from ..arch import Arch, NPU2
from ..design import buffer_peaks, compute_cycles_by_kernel
from ..errors import ConfigError
from ..gc_pause import gc_paused
from ..mapping.dispatch import DispatchLimits, OpFootprint, assign, host_counts, plan as plan_dispatches, sequence_words
from ..mapping.fusion import GROUPS, PIPELINE, PIPELINE_STAGES, fusion_kinds, pipelined_kinds
from ..report import utilizations
from ..lower import lower, noop_twin
from ..simulation import simulate
from .assemble import TENSOR_KINDS, assemble, by_class, by_layer, llm_summary  # noqa: F401 (re-exported)
from .graph import build_graph
from .pipelined import pipelined_group, share_results
from .place import Placed, kind_of, op_design, place
from .study import LlmStudy  # noqa: F401 (re-exported)

_CACHE: "OrderedDict[tuple, dict]" = OrderedDict()
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
        return _simulate_llm(study, arch, limits, strict)


def _simulate_llm(study: LlmStudy, arch: Arch, limits: DispatchLimits, strict: bool) -> xr.Dataset:
    model = study.model_config().validate()
    study.validate(model)
    precision = study.precision.validate()
    limits = limits.validate()
    ops = build_graph(model, precision, study.regime, batch=study.batch, context=study.context,
                      prompt=study.prompt, costs=study.costs, causal_halving=study.causal_halving,
                      lm_head_last_only=study.lm_head_last_only, prefill_context=study.prefill_context)
    layers = [op.layer for op in ops]
    cuts = None if study.cuts is None else tuple(sorted(study.cuts))
    one = assign(layers, cuts or ())
    mapping = _mapping_key(study, precision, arch)
    unfused = place(ops, model, precision, study, arch, set(), False, one)
    results = _results(unfused, mapping, arch, study, precision, strict=True)
    chosen, alternatives = unfused, {"none": _op_total(unfused, results, arch)}
    kinds = fusion_kinds(study.fusion)
    if kinds:
        grouped = place(ops, model, precision, study, arch, kinds, False, one)
        results.update(_results(grouped, mapping, arch, study, precision, strict=False))
        chosen, picked = _best_per_kind(unfused, grouped, results, arch, study.fusion != "auto")
        alternatives["groups:" + "+".join(picked)] = _op_total(chosen, results, arch)
        if study.regime == "prefill":
            chosen = _pipelines(unfused, grouped, chosen, results, mapping, study, precision, arch, alternatives)
    capacity = arch.compute_tiles * arch.compute.memory_bytes + arch.columns * arch.mem_rows * arch.mem.memory_bytes
    dispatch = plan_dispatches(layers, _footprints(chosen, results, study, limits), cuts, limits, capacity, strict)
    if study.fusion in ("auto", "chain"):
        chained = place(ops, model, precision, study, arch, set(), True, dispatch.of_op)
        if chained is None and study.fusion == "chain":
            raise ConfigError(["fusion = chain: the activations do not all fit on chip at once "
                               "(use groups or auto)"], "llm fusion")
        if chained is not None:
            results.update(_results(chained, mapping, arch, study, precision, strict=study.fusion == "chain"))
            total = _op_total(chained, results, arch)
            if total < float("inf"):
                alternatives["chain"] = total
                if study.fusion == "chain" or total < _op_total(chosen, results, arch):
                    try:
                        chosen, dispatch = _chain_dispatches(chained, ops, layers, cuts, dispatch, results, mapping,
                                                             model, precision, study, arch, limits, capacity, strict)
                    except ConfigError as e:
                        if study.fusion == "chain":
                            raise
                        alternatives["chain"] = "cannot: " + e.problems[0]
    label = _label(chosen)
    fusion = {"chosen": label, "alternatives": "; ".join(
        f"{k} {v * 1e3:.4g} ms" if isinstance(v, float) else f"{k} {v}" for k, v in alternatives.items())}
    return assemble(study, model, precision, arch, chosen, results, dispatch, limits, fusion)


def _chain_dispatches(chained, ops, layers, cuts, dispatch, results, mapping, model, precision, study, arch,
                      limits, capacity, strict):
    """A chain's dispatches. Explicit cuts are checked as given. Otherwise the greedy cut is found
    again on the chained ops (on-chip hand-offs push more mem-tile tasks: a chained dispatch may
    hold fewer layers); when it moves, the chain is re-placed on the new dispatches (the ops at a
    dispatch edge read and write DDR). Raises ConfigError when the chain fits no dispatch."""
    footprints = _footprints(chained, results, study, limits)
    if cuts is not None:
        return chained, plan_dispatches(layers, footprints, cuts, limits, capacity, strict)
    greedy = plan_dispatches(layers, footprints, None, limits, capacity)
    if greedy.cuts != dispatch.cuts:
        chained = place(ops, model, precision, study, arch, set(), True, greedy.of_op)
        results.update(_results(chained, mapping, arch, study, precision, strict=True))
        footprints = _footprints(chained, results, study, limits)
    return chained, plan_dispatches(layers, footprints, greedy.cuts, limits, capacity)


def _label(placed: list[Placed]) -> str:
    """The fusion value that reproduces ``placed`` (what overlays store)."""
    groups = {p.chip.group.split("@")[0].rstrip("0123456789") + (f":{PIPELINE}" if p.pipelined else "")
              for p in placed if p.chip.group}
    return "+".join(sorted(groups)) or "none"


def _op_total(placed: list[Placed], results: dict, arch: Arch) -> float:
    """Seconds of all ops (inf when one has no legal design)."""
    total = 0
    for p in placed:
        r = results.get(p.key)
        if r is None:
            return float("inf")
        total += r["cycles"] * p.op.repeat
    return total / arch.clock_hz


def _best_per_kind(unfused, grouped, results, arch, forced: bool):
    """Each group kind fused or not, whichever is faster (forced: fused wherever it is legal)."""
    out = list(unfused)
    picked = []
    for kind in GROUPS:
        idx = [i for i, p in enumerate(unfused) if kind_of(p.op.name) == kind]
        alone = _op_total([unfused[i] for i in idx], results, arch)
        fused = _op_total([grouped[i] for i in idx], results, arch)
        if not any(grouped[i].chip.group for i in idx):
            continue  # this kind could not be fused (no token block fits)
        if fused < float("inf") and (forced or fused < alone):
            for i in idx:
                out[i] = grouped[i]
            picked.append(kind)
    return out, picked


def _pipelines(unfused, grouped, chosen, results, mapping, study, precision, arch, alternatives):
    """Each fused group kind that can run as a spatial pipeline (``PIPELINE_STAGES``), tried on
    top of ``chosen``: kept when faster under ``auto``, always when the fusion value asks for it
    ("KIND:pipeline"). Alternatives that cannot be built say why in ``alternatives``."""
    asked = pipelined_kinds(study.fusion)
    tokens = study.batch * study.prompt
    for kind in PIPELINE_STAGES:
        if study.fusion != "auto" and kind not in asked:
            continue
        idx = [i for i, p in enumerate(unfused) if kind_of(p.op.name) == kind]
        if not idx or not all(grouped[i].chip.group and grouped[i].key in results for i in idx):
            continue  # not fused (no token block fits) or some fused op has no legal design
        first = [i for i in idx if unfused[i].op.layer == unfused[idx[0]].op.layer]
        try:
            placed = _pipelined(first, unfused, grouped, results, mapping, tokens, study, precision, arch, kind)
        except ConfigError as e:
            if kind in asked:
                raise
            alternatives[f"{kind}:{PIPELINE}"] = "cannot: " + e.problems[0].split(";")[0]
            continue
        by_name = {p.op.name: p for p in placed}
        candidate = list(chosen)
        for i in idx:
            like = by_name[unfused[i].op.name]
            candidate[i] = Placed(replace(unfused[i].op, m=like.op.m, repeat=like.op.repeat),
                                  replace(grouped[i].chip, window_bytes=0), like.pipelined)
        total = _op_total(candidate, results, arch)
        alternatives[f"{kind}:{PIPELINE}"] = total
        if kind in asked or total < _op_total(chosen, results, arch):
            chosen = candidate
    return chosen


def _pipelined(first, unfused, grouped, results, mapping, tokens, study, precision, arch, kind) -> list[Placed]:
    """One layer of group ``kind`` as a pipeline: its ops as placed, their results added to
    ``results`` (cached like any op's)."""
    built = pipelined_group([unfused[i] for i in first], [grouped[i] for i in first],
                            [results[grouped[i].key] for i in first], tokens, study, precision, arch, kind)
    placed, designs, whole, twin, blocks, how, _ = built
    ablated = tuple(sorted(study.noop))  # any member's ablation changes the whole pipeline
    if all((mapping, p.key, ablated) in _CACHE for p in placed):
        results.update({p.key: _CACHE[(mapping, p.key, ablated)] for p in placed})
        return placed
    sim = simulate([*designs, whole, twin])
    own = [_design_result(sim, j, d, flow, kernels, arch) for j, (d, (flow, kernels)) in enumerate(zip(designs, how))]
    shared = share_results(placed, own, sim, (len(designs), len(designs) + 1), blocks)
    for key, r in shared.items():
        results[key] = _CACHE[(mapping, key, ablated)] = r
    return placed


def _footprints(placed, results, study, limits: DispatchLimits) -> list[OpFootprint]:
    out = []
    for p in placed:
        r = results[p.key]
        static = p.op.k * p.op.n * p.op.w_bytes if (study.residency == "static" and p.op.kind == "matmul"
                                                    and p.op.w_kind == "weights") else 0.0
        out.append(OpFootprint(sequence_words(r["host"], limits) * p.op.repeat, r["kernels"], static))
    return out


_PROGRESS = {"on": False}


def show_progress(on: bool) -> None:
    """Show a progress bar on stderr while ops are mapped (the CLI turns it on for a terminal)."""
    _PROGRESS["on"] = bool(on)


def _results(placed, mapping, arch, study, precision, strict: bool) -> dict:
    """Engine results of every distinct instance (cached across calls). ``strict``: an instance with
    no legal design is an error (listing every one); otherwise it is left out (fusion falls back)."""
    from tqdm.auto import tqdm

    results, todo, problems, by_key = {}, {}, [], {}
    for p in tqdm(placed, desc="mapping ops", unit="op", leave=False, disable=not _PROGRESS["on"]):
        key = p.key
        by_key[key] = p
        if key in results or key in todo:
            continue
        cache_key = (mapping, key, _ablated(p, study))
        cached = _CACHE.get(cache_key)
        if cached is not None:
            _CACHE.move_to_end(cache_key)
            results[key] = cached
            continue
        try:
            todo[key] = op_design(p, arch, study, precision)
        except ConfigError as e:
            if strict:
                problems += [f"{p.op.name}: {x}" for x in e.problems]
    if problems:
        raise ConfigError(sorted(set(problems)), "llm mapping")
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
        results[key] = _design_result(src, i, design, flow, kernels, arch)
        if twin is not None:
            results[key]["movement"] = int(sim.total_cycles.values[where[(key, "twin")]])
        _CACHE[(mapping, key, _ablated(by_key[key], study))] = results[key]
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return results


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


def _design_result(sim: xr.Dataset, i: int, design, flow: str, kernels, arch: Arch) -> dict:
    """What the per-op results need from one simulated design."""
    util = utilizations(sim, i, arch, 0.0)
    per_core = [compute_cycles_by_kernel(prog) for prog in design.cores.values()]
    busy = sum(per_core[0].values()) if per_core else 0
    l1, l2 = buffer_peaks(design)
    cycles = int(sim["total_cycles"].values[i])
    return dict(cycles=cycles, bound=max(util, key=util.get), flow=flow,
                levels=sim["level_bytes"].values[i], ch=sim["channel_cycles"].values[i].sum(axis=0),
                core=sim["core_cycles"].values[i].sum(axis=0),
                cast=per_core[0].get("cast", 0) / busy if busy else 0.0, shim=_shim_bytes(sim, i),
                compute=max((sum(c.values()) for c in per_core), default=0),
                movement=cycles,  # a NOOP design's own time (replaced by its twin's otherwise)
                l1_peak=l1, l2_peak=l2, host=host_counts(design), cols=len({t.col for t in design.cores}),
                kernels=frozenset(kernels))


def _shim_bytes(sim: xr.Dataset, i: int) -> dict[str, float]:
    """DDR bytes of design i by shim channel role: MM2S0 carries W (stream ops: X), MM2S1 carries
    X, S2MM0 carries Y (see the design builders)."""
    shim = sim["channel_row"].values[i] == 0
    way, index = sim["channel_direction"].values[i], sim["channel_index"].values[i]
    moved = sim["channel_bytes"].values[i]
    return {role: float(moved[shim & (way == w) & (index == k)].sum())
            for role, (w, k) in {"mm2s0": ("mm2s", 0), "mm2s1": ("mm2s", 1), "s2mm0": ("s2mm", 0)}.items()}


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
