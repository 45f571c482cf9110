"""Simulate an LLM forward pass: the transformer front end builds the graph, the study becomes the
evaluation's pins, and ``fastsim.evaluation`` maps, fuses, cuts and simulates it; then a request
end to end (prefill, overlay switch, decode steps)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from ..arch import Arch, NPU2
from ..errors import ConfigError
from ..gc_pause import gc_paused
from ..evaluation import GraphPins, evaluate, to_dataset
from ..evaluation.dataset import to_columns
from ..mapping.dispatch import DispatchLimits
from .assemble import by_class, by_layer, llm_summary, summary_of  # noqa: F401 (re-exported)
from . import cast_launches, dequant_launches, host
from .model import Precision
from .study import LlmStudy
from .forward import build_graph
from .transformer import Pass, VectorCosts, kv_bytes_per_token


def simulate_llm(study: LlmStudy, arch: Arch = NPU2, limits: DispatchLimits = DispatchLimits(),
                 strict: bool = True, *, mapped_on: Arch | None = None, movement: bool = True) -> xr.Dataset:
    """Simulate one forward pass (decode step or prefill); returns a per-op Dataset with totals.
    ``strict=False`` runs explicit cuts that do not fit a dispatch anyway and records what does not
    fit (``dispatch_fits``, attr ``dispatch_problems``) instead of raising: a cut search's input.
    ``mapped_on``: the arch the op mappings were chosen for, when ``arch`` is that part with less
    DDR bandwidth (a deployed layout under background traffic keeps its mappings; pin its fusion
    and cuts too, ``pinned_layout``). ``movement=False`` leaves out each op's data-only twin run
    (``fastsim.evaluation.evaluate``): the compute / data-movement split is then NaN, every
    other variable the same."""
    with gc_paused():
        return _dataset(_evaluated(study, arch, limits, strict, mapped_on, movement), arch)


def summarize_llm(study: LlmStudy, arch: Arch = NPU2, *, movement: bool = True, stalls: bool = True) -> dict:
    """``llm_summary(simulate_llm(study, arch, movement=movement), stalls)`` without building the
    Dataset (the same numbers, tested): a sweep point reads a few totals, and building the
    Dataset cost more than the summary. Under ``simulate_llm``'s default limits, strictness and
    mapping. A study with ops on the host takes the Dataset's way (its accounting rewrites the
    Dataset)."""
    with gc_paused():
        run = _evaluated(study, arch, DispatchLimits(), True, None, movement)
        if run.on_host:
            return llm_summary(_dataset(run, arch), stalls)
        return summary_of(*to_columns(*run.dataset_args), stalls)


def _dataset(run: _Evaluated, arch: Arch) -> xr.Dataset:
    ds = to_dataset(*run.dataset_args)
    if run.on_host:
        ds = host.account(ds, run.on_host, arch.dispatch_overhead_s)
        ds.attrs["dispatches"] = int(ds.attrs["dispatches"]) + host.islands(run.on_host)
    return ds


@dataclass
class _Evaluated:
    """A study's evaluated graph, what ``to_dataset`` takes (``dataset_args``), and the ops it
    runs on the host (accounted on the Dataset)."""
    dataset_args: tuple
    on_host: dict


def _evaluated(study: LlmStudy, arch: Arch, limits: DispatchLimits, strict: bool, mapped_on: Arch | None,
               movement: bool) -> _Evaluated:
    model = study.model_config().validate()
    study.validate(model)
    precision = study.precision.validate()
    static_weights_fit(study, arch)
    graph = build_graph(model, precision, study_pass(study, arch))
    if study.cast_launch:
        chosen = cast_launches.selected(graph, study.cast_launch, study.fusion, study.host)
        graph = cast_launches.insert(graph, chosen, arch)
    if study.dequant_launch:
        chosen = dequant_launches.selected(graph, study.dequant_launch, study.fusion, study.host, study.residency)
        graph = dequant_launches.insert(graph, chosen)
    on_host = host.selected(graph, study.host) if study.host else {}
    graph = host.offload(graph, on_host) if on_host else graph
    pins = replace(study_pins(study, precision), mapped_on=mapped_on)
    result = evaluate(graph, arch, pins, limits, strict, movement)
    attrs = {"model": model.name, "regime": study.regime, "context": study.context, "prompt": study.prompt,
             "prefill_context": study.prefill_context, "layers": model.num_layers, "batch": study.batch,
             "weights": precision.weights, "kv": precision.kv, "dispatch_commands": study.dispatch_commands}
    attrs.update(family=model.family, params=model.params, active_params=model.active_params)
    extra = {"kv_bytes_per_token": ((), kv_bytes_per_token(model, precision), {"units": "bytes"}),
             "weight_kind": (("op",), np.array([op.weight_kind for op in graph.ops], dtype=object),
                             {"description": "the weight tensor kind the op reads (embedding, lm_head, "
                                             "attention, ffn, router; empty: none)"})}
    return _Evaluated((result, pins, arch, limits, attrs, extra), on_host)


def static_weights_fit(study: LlmStudy, arch: Arch) -> None:
    """Static residency keeps every weight on chip: say so in one line when they cannot fit, rather
    than listing each op that finds no mapping."""
    if study.residency != "static":
        return
    weight_bytes = study.model_config().params * study.precision.weight_bytes
    if weight_bytes > arch.on_chip_bytes:
        raise ConfigError([f"static weights (residency static, --residency static): {weight_bytes / 1e6:,.1f} MB of "
                           f"weights do not fit in {arch.on_chip_bytes / 1e6:.1f} MB of on-chip memory ({arch.name}'s "
                           "core and mem-tile memory); use residency streamed (--residency streamed)"], "llm study")


def pinned_layout(study: LlmStudy, run: xr.Dataset) -> LlmStudy:
    """``study`` with the layout of ``run`` (a ``simulate_llm`` Dataset) fixed: its fusion and its
    cuts (no cuts pins one dispatch), so that a study varies one thing and keeps the rest."""
    cuts = tuple(int(c) for c in run.attrs["cuts"])
    return replace(study, fusion=run.attrs["fusion"], cuts=cuts)


def study_pass(study: LlmStudy, arch: Arch = NPU2) -> Pass:
    """The forward pass a study describes (vector ops at the arch's rates unless the study sets them)."""
    costs = study.costs if study.costs is not None else VectorCosts.of(arch)
    return Pass(study.regime, study.batch, study.context, study.prompt, study.prefill_context, costs,
                study.causal_halving, study.lm_head_last_only, study.routing)


def study_pins(study: LlmStudy, precision: Precision) -> GraphPins:
    """What a study fixes about how its graph runs (pipelines are tried in prefill and encode; static
    weights stay resident from one decode step to the next)."""
    return GraphPins.of(study.layout, compute_dtype=precision.compute_dtype, noop=tuple(study.noop),
                        kernel_efficiency=study.kernel_efficiency, stream_split=study.stream_split,
                        pipelines=study.regime != "decode", static_weights_resident=study.regime == "decode",
                        search_budget=study.search_budget, dispatch_commands=study.dispatch_commands)


def apply_overlay(study: LlmStudy, overlay) -> LlmStudy:
    """The study laid out as ``overlay`` says (its pins added to, and winning over, the study's)."""
    if overlay is None:
        return study
    return replace(study, **overlay.layout.over(study.layout).fields())


def with_as_built(study: LlmStudy, built) -> LlmStudy:
    """``study`` with an as-built file's [model] storage (``mapping.overlay.AsBuilt.precision``: its
    weights, KV and activations dtypes, tensor kinds, measured bytes per weight) over its own; each
    regime's layout is applied per pass (``apply_overlay`` with ``built.overlays[regime]``)."""
    return replace(study, precision=replace(study.precision, **built.precision))


def strict_for(overlay) -> bool:
    """Whether fastsim's assumed dispatch limits (instruction buffer, program memory) may refuse a
    run laid out as ``overlay``: not where it pins the cuts, which are then what was built (what
    would not fit is reported, ``dispatch_fits``, never vetoed)."""
    return overlay is None or overlay.cuts is None


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
    layout = overlays.get("prefill")
    prefill = simulate_llm(apply_overlay(replace(study, regime="prefill"), layout), arch, strict=strict_for(layout))
    first, last = study.prompt, study.prompt + new_tokens - 1
    contexts = sorted({int(round(x)) for x in np.linspace(first, last, max(2, samples))})
    layout = overlays.get("decode")
    decode = apply_overlay(replace(study, regime="decode"), layout)
    steps = [simulate_llm(replace(decode, context=c), arch, strict=strict_for(layout)) for c in contexts]
    per_step = np.interp(np.arange(first, last + 1), contexts, [float(s.total_seconds) for s in steps])
    ttft = float(prefill.total_seconds)
    switch, changes = switch_seconds(set(prefill.attrs["kernels"]), set(steps[-1].attrs["kernels"]), arch)
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
