"""Map an LLM forward pass onto the array, simulate every distinct op design in one batched
engine call, and assemble per-op results into an xarray Dataset.

Each op runs alone on the whole array (ops of a dispatch run one after another) and reads its
inputs from, and writes its outputs to, DDR: activations round-trip DDR between ops (no fusion).
Ops with identical shapes (every layer repeats the same ones) share one simulation.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import xarray as xr

from ..arch import Arch, NPU2
from ..design import compute_cycles_by_kernel
from ..errors import ConfigError, Problems
from ..report import utilizations
from ..results import CHANNEL_STATES, CORE_STATES, LEVELS
from ..simulation import simulate
from ..mapping import Matmul, Pins, matmul_design, search
from ..mapping.space import DATAFLOWS
from ..workloads.vector import VectorOp, vector_design
from .graph import OP_CLASSES, Op, VectorCosts, build_graph, kv_bytes_per_token
from .model import ModelConfig, Precision, get_model

TENSOR_KINDS = ("weights", "activations", "kv", "psum")


@dataclass(frozen=True)
class LlmStudy:
    """Everything that defines one LLM simulation point."""

    model: str | ModelConfig = "llama-3.2-1b"
    regime: str = "decode"
    context: int = 4096
    prompt: int = 2048
    prefill_context: int = 0  # prefill: tokens already cached before the prompt (chunked prefill)
    batch: int = 1
    precision: Precision = Precision()
    dataflow: dict = field(default_factory=dict)  # op class or op name -> "ws" | "is" | "os"
    columns: dict = field(default_factory=dict)  # op class or op name -> columns it runs on
    residency: str = "streamed"  # or "static": weights preloaded once per dispatch (ws ops)
    cuts: tuple[int, ...] = ()  # cut the model into dispatches after these layers
    noop: tuple[str, ...] = ()  # op classes replaced by a data-only pass
    kernel_efficiency: float = 1.0
    costs: VectorCosts = VectorCosts()
    causal_halving: bool = True
    lm_head_last_only: bool = True

    def model_config(self) -> ModelConfig:
        return self.model if isinstance(self.model, ModelConfig) else get_model(self.model)

    def validate(self, model: ModelConfig) -> None:
        p = Problems("llm study")
        p.check(self.regime in ("decode", "prefill"), "regime", self.regime, "decode or prefill")
        p.check(self.context >= 0, "context", self.context, "must be >= 0 tokens")
        p.check(self.prompt >= 1, "prompt", self.prompt, "must be >= 1 token")
        p.check(self.prefill_context >= 0, "prefill_context", self.prefill_context, "must be >= 0 tokens")
        p.check(self.batch >= 1, "batch", self.batch, "must be >= 1")
        p.check(self.residency in ("streamed", "static"), "residency", self.residency, "streamed or static")
        for key, value in self.dataflow.items():
            p.check(value in DATAFLOWS, f"dataflow[{key}]", value, f"one of {DATAFLOWS}")
        for key, value in self.columns.items():
            p.check(isinstance(value, int) and 1 <= value, f"columns[{key}]", value, "must be >= 1")
        for c in self.noop:
            p.check(c in OP_CLASSES, "noop", c, f"one of {OP_CLASSES}")
        for c in self.cuts:
            p.check(0 <= c < model.num_layers - 1, "cuts", c, f"layer indices in 0..{model.num_layers - 2}")
        p.check(0 < self.kernel_efficiency <= 1, "kernel_efficiency", self.kernel_efficiency, "in (0, 1]")
        p.raise_if_any()


def _pinned(study: LlmStudy, table: dict, op: Op):
    return table.get(op.name) or table.get(op.op_class)


def _columns(study: LlmStudy, op: Op, arch: Arch) -> int | None:
    cols = _pinned(study, study.columns, op)
    if cols is not None and cols > arch.columns:
        raise ConfigError([f"columns[{op.name}] = {cols}: the arch has {arch.columns} columns"], "llm mapping")
    return cols


def _matmul(op: Op, study: LlmStudy, precision: Precision, cast: float) -> Matmul:
    static = study.residency == "static" and op.w_kind == "weights"
    return Matmul(op.m, op.k, op.n, precision.compute_dtype, op.x_bytes, op.w_bytes, op.y_bytes,
                  study.kernel_efficiency, 0, cast, op.macs_scale, static_b=static, name=op.name)


def op_design(op: Op, arch: Arch, study: LlmStudy, precision: Precision):
    """The design of one op, its dataflow, and its engine result when the mapping search already
    simulated exactly this design (else None). Matmul-like ops take the mapper's searched mapping
    (``--dataflow`` and ``--columns`` pin the search); the search always sees the op as it really
    computes, so NOOP ablation keeps the mapping and removes only the compute."""
    noop = op.op_class in study.noop
    if op.kind == "vector":
        spec = VectorOp(op.m, op.n, op.x_bytes, op.y_bytes, op.vector_cycles_per_elem, op.x_inputs, noop,
                        _columns(study, op, arch), op.name)
        return vector_design(spec, arch), "stream", None
    real = _matmul(op, study, precision, op.cast_cycles_per_weight)
    chosen = _pinned(study, study.dataflow, op)
    flows = (chosen,) if chosen else (("ws",) if real.static_b else ())
    found = search(real, arch, Pins(dataflow=flows, cols=_columns(study, op, arch)), top=_LLM_TOP)
    if not noop and "cast" not in study.noop:
        return found.best_design, found.best.dataflow, found.best_simulation
    run = replace(real, cast_cycles_per_weight=0.0) if "cast" in study.noop else real
    return matmul_design(run, found.best, arch, noop=noop), found.best.dataflow, None


_LLM_TOP = 3  # candidates simulated per distinct op (plus the baseline where it fits)


def simulate_llm(study: LlmStudy, arch: Arch = NPU2) -> xr.Dataset:
    """Simulate one forward pass (decode step or prefill); returns a per-op Dataset with totals."""
    model = study.model_config().validate()
    study.validate(model)
    precision = study.precision.validate()
    ops = build_graph(model, precision, study.regime, batch=study.batch, context=study.context,
                      prompt=study.prompt, costs=study.costs, causal_halving=study.causal_halving,
                      lm_head_last_only=study.lm_head_last_only, prefill_context=study.prefill_context)
    # one design per distinct op (identical layers share it); designs simulated before with the
    # same mapping inputs come from the result cache (results are deterministic); collect every
    # mapping problem before failing
    mapping = _mapping_key(study, precision, arch)
    results, todo, problems = {}, {}, []
    for op in ops:
        key = _op_key(op)
        if key in results or key in todo:
            continue
        cached = _CACHE.get((mapping, key))
        if cached is not None:
            _CACHE.move_to_end((mapping, key))
            results[key] = cached
            continue
        try:
            todo[key] = op_design(op, arch, study, precision)
        except ConfigError as e:
            problems += [f"{op.name}: {x}" for x in e.problems]
    if problems:
        raise ConfigError(sorted(set(problems)), "llm mapping")
    for key, (design, flow, known) in list(todo.items()):
        if known is not None:  # the mapping search simulated this very design
            results[key] = _design_result(known, 0, design, flow, arch)
            _CACHE[(mapping, key)] = results[key]
            del todo[key]
    if todo:
        sim = simulate([d for d, _, _ in todo.values()])
        for i, (key, (design, flow, _)) in enumerate(todo.items()):
            results[key] = _design_result(sim, i, design, flow, arch)
            _CACHE[(mapping, key)] = results[key]
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return _assemble(study, model, precision, arch, ops, results)


_CACHE: "OrderedDict[tuple, dict]" = OrderedDict()
_CACHE_SIZE = 2048


def clear_cache() -> None:
    """Forget cached op results (they are exact; this only frees memory)."""
    _CACHE.clear()


def _op_key(op: Op) -> tuple:
    return op.shape_key + (op.name,)


def _mapping_key(study: LlmStudy, precision: Precision, arch: Arch) -> tuple:
    """Everything besides the op itself that op_design reads."""
    return (repr(arch), tuple(sorted(study.dataflow.items())), tuple(sorted(study.columns.items())),
            tuple(study.noop), study.residency, study.kernel_efficiency, precision.compute_dtype,
            precision.activations)


def _design_result(sim: xr.Dataset, i: int, design, flow: str, arch: Arch) -> dict:
    """What the per-op results need from one simulated design."""
    util = utilizations(sim, i, arch, 0.0)
    row = sim.isel(design=i)
    by_kernel = compute_cycles_by_kernel(next(iter(design.cores.values())))
    busy = sum(by_kernel.values())
    return dict(cycles=int(row.total_cycles), bound=max(util, key=util.get), flow=flow,
                levels=row.level_bytes.values, ch=row.channel_cycles.sum("channel").values,
                core=row.core_cycles.sum("core").values,
                cast=by_kernel.get("cast", 0) / busy if busy else 0.0, shim=_shim_bytes(sim, i))


def _shim_bytes(sim: xr.Dataset, i: int) -> dict[str, float]:
    """DDR bytes of design i by shim channel role: MM2S0 carries W (stream ops: X), MM2S1 carries
    X, S2MM0 carries Y (see the design builders)."""
    row = sim.isel(design=i)
    shim = row.channel_row.values == 0
    out = {}
    for role, (way, index) in {"mm2s0": ("mm2s", 0), "mm2s1": ("mm2s", 1), "s2mm0": ("s2mm", 0)}.items():
        pick = shim & (row.channel_direction.values == way) & (row.channel_index.values == index)
        out[role] = float(row.channel_bytes.values[pick].sum())
    return out


def _ddr_by_kind(shim: dict[str, float], op: Op) -> dict[str, float]:
    out = dict.fromkeys(TENSOR_KINDS, 0.0)
    out[op.x_kind if op.kind == "vector" else op.w_kind] += shim["mm2s0"]
    out[op.x_kind] += shim["mm2s1"]
    out[op.y_kind] += shim["s2mm0"]
    return out


def _assemble(study, model, precision, arch, ops, results) -> xr.Dataset:
    n = len(ops)
    seconds = np.zeros(n)
    cycles = np.zeros(n, np.int64)
    macs = np.array([op.macs for op in ops], np.int64)
    kind_bytes = np.zeros((n, len(TENSOR_KINDS)))
    level_bytes = np.zeros((n, len(LEVELS)))
    ch_state = np.zeros((n, len(CHANNEL_STATES)))
    core_state = np.zeros((n, len(CORE_STATES)))
    bound = np.empty(n, dtype=object)
    flow_of = np.empty(n, dtype=object)
    cast_share = np.zeros(n)
    energy = np.zeros(n)
    for j, op in enumerate(ops):
        r = results[_op_key(op)]
        cycles[j] = r["cycles"] * op.repeat
        seconds[j] = cycles[j] / arch.clock_hz
        by_kind = _ddr_by_kind(r["shim"], op)
        kind_bytes[j] = [by_kind[k] * op.repeat for k in TENSOR_KINDS]
        level_bytes[j] = r["levels"] * op.repeat
        ch_state[j] = r["ch"] * op.repeat
        core_state[j] = r["core"] * op.repeat
        bound[j] = r["bound"]
        flow_of[j] = r["flow"]
        cast_share[j] = r["cast"]
        ddr = level_bytes[j][LEVELS.index("ddr_read")] + level_bytes[j][LEVELS.index("ddr_write")]
        energy[j] = (op.macs * arch.pj_per_mac.get(precision.compute_dtype, 0.0)
                     + ddr * arch.pj_per_byte["ddr"]
                     + sum(level_bytes[j][LEVELS.index(lv)] * arch.pj_per_byte.get(lv, 0.0)
                           for lv in LEVELS if lv not in ("ddr_read", "ddr_write")))
    # dispatches: one per cut segment; each pays the host overhead (and static weight preloads)
    layer_of = np.array([op.layer for op in ops])
    dispatch = np.zeros(n, np.int64)
    for cut in sorted(study.cuts):
        dispatch += (layer_of > cut) | ((layer_of == -1) & (np.arange(n) > 0))
    n_dispatch = len(study.cuts) + 1
    static_bytes = np.zeros(n_dispatch)
    if study.residency == "static":
        for j, op in enumerate(ops):
            if op.kind == "matmul" and op.w_kind == "weights":
                static_bytes[dispatch[j]] += op.k * op.n * op.w_bytes
        capacity = (arch.compute_tiles * arch.compute.memory_bytes
                    + arch.columns * arch.mem_rows * arch.mem.memory_bytes)
        too_big = [f"dispatch {i}: static weights = {b:.0f} bytes: must fit in the array's "
                   f"{capacity} bytes of on-chip memory; add cuts or stream weights"
                   for i, b in enumerate(static_bytes) if b > capacity]
        if too_big:
            raise ConfigError(too_big, "llm residency")
    preload_s = static_bytes.sum() / arch.ddr_bytes_per_s
    dispatch_s = n_dispatch * arch.dispatch_overhead_s
    total_s = seconds.sum() + dispatch_s + preload_s
    tokens = study.batch * (1 if study.regime == "decode" else study.prompt)

    op_dim = ("op",)
    ds = xr.Dataset(
        {
            "op_seconds": (op_dim, seconds, {"units": "s", "description": "time of the op (all repeats)"}),
            "op_cycles": (op_dim, cycles, {"units": "cycles"}),
            "macs": (op_dim, macs, {"units": "MAC", "description": "multiply-accumulates (causal halving applied)"}),
            "ddr_bytes": (("op", "tensor_kind"), kind_bytes,
                          {"units": "bytes", "description": "DDR traffic by tensor kind"}),
            "level_bytes": (("op", "level"), level_bytes, {"units": "bytes", "description": "bytes per memory level"}),
            "weight_reuse": (op_dim, _ratio(macs, kind_bytes[:, 0] + kind_bytes[:, 2]),
                             {"units": "MAC/byte", "description": "MACs per byte of weights (or KV) fetched from DDR"}),
            "activation_reuse": (op_dim, _ratio(macs, kind_bytes[:, 1]),
                                 {"units": "MAC/byte", "description": "MACs per byte of activations fetched from DDR"}),
            "bound_by": (op_dim, bound, {"description": "resource with the highest utilization in the op"}),
            "dataflow": (op_dim, flow_of, {"description": "ws, is, os, or stream (vector ops)"}),
            "cast_share": (op_dim, cast_share, {"units": "1", "description":
                                                "share of core compute cycles spent dequantizing weights"}),
            "channel_state_cycles": (("op", "channel_state"), ch_state,
                                     {"units": "channel-cycles", "description": "stall attribution over all DMA channels"}),
            "core_state_cycles": (("op", "core_state"), core_state,
                                  {"units": "core-cycles", "description": "stall attribution over all cores"}),
            "energy_pj": (op_dim, energy, {"units": "pJ", "description": "MACs and bytes moved times the arch energy table"}),
            "dispatch": (op_dim, dispatch, {"description": "dispatch the op runs in"}),
            "total_seconds": ((), total_s, {"units": "s", "description": "ops + dispatch overheads + static weight preloads"}),
            "dispatch_seconds": ((), dispatch_s, {"units": "s"}),
            "preload_seconds": ((), preload_s, {"units": "s", "description": "static weights loaded once per dispatch"}),
            "tokens_per_s": ((), tokens / total_s, {"units": "tokens/s"}),
            "kv_bytes_per_token": ((), kv_bytes_per_token(model, precision), {"units": "bytes"}),
        },
        coords={
            "op_name": (op_dim, np.array([op.name for op in ops], dtype=object)),
            "op_class": (op_dim, np.array([op.op_class for op in ops], dtype=object)),
            "layer": (op_dim, layer_of),
            "tensor_kind": list(TENSOR_KINDS), "level": LEVELS,
            "channel_state": CHANNEL_STATES, "core_state": CORE_STATES,
        },
        attrs={"model": model.name, "regime": study.regime, "context": study.context, "prompt": study.prompt,
               "prefill_context": study.prefill_context,
               "batch": study.batch, "weights": precision.weights, "kv": precision.kv, "arch": arch.name,
               "dispatches": n_dispatch, "residency": study.residency, "noop": ",".join(study.noop)},
    )
    return ds


def _ratio(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)


def by_class(ds: xr.Dataset) -> dict[str, float]:
    """Seconds per op class. Dequantization runs fused inside gemm ops, so its time stays in
    "gemm" (``cast_share`` reports its share of core cycles; ``noop=("cast",)`` measures what
    removing it saves)."""
    out = {}
    for cls, sec in zip(ds.op_class.values, ds.op_seconds.values):
        out[str(cls)] = out.get(str(cls), 0.0) + float(sec)
    return out


def by_layer(ds: xr.Dataset) -> dict[str, float]:
    """Seconds per transformer layer ("head" = embedding, final norm and LM head)."""
    out = {}
    for layer, sec in zip(ds.layer.values, ds.op_seconds.values):
        key = "head" if layer < 0 else str(int(layer))
        out[key] = out.get(key, 0.0) + float(sec)
    return out


def llm_summary(ds: xr.Dataset) -> dict:
    kinds = ds.ddr_bytes.sum("op")
    bound_time = {}
    for b, s in zip(ds.bound_by.values, ds.op_seconds.values):
        bound_time[b] = bound_time.get(b, 0.0) + s
    bound_time["dispatch"] = float(ds.dispatch_seconds)
    seconds = float(ds.total_seconds)
    return {
        "model": ds.attrs["model"], "regime": ds.attrs["regime"], "context": ds.attrs["context"],
        "prompt": ds.attrs["prompt"], "batch": ds.attrs["batch"], "arch": ds.attrs["arch"],
        "seconds": seconds, "tokens_per_s": float(ds.tokens_per_s),
        "by_class": by_class(ds),
        "by_layer": by_layer(ds),
        "ddr_bytes": float(kinds.sum()),
        "weight_bytes": float(kinds.sel(tensor_kind="weights")),
        "kv_bytes": float(kinds.sel(tensor_kind="kv")),
        "activation_bytes": float(kinds.sel(tensor_kind="activations")),
        "macs": int(ds.macs.sum()),
        "energy_j": float(ds.energy_pj.sum()) * 1e-12,
        "dispatch_seconds": float(ds.dispatch_seconds),
        "dispatch_share": float(ds.dispatch_seconds) / seconds,
        "bound_by": max(bound_time, key=bound_time.get),
        "time_by_bound": bound_time,
    }


def simulate_generation(study: LlmStudy, new_tokens: int, arch: Arch = NPU2, samples: int = 4) -> dict:
    """A request end to end: prefill of ``study.prompt`` tokens, one overlay switch (prefill and
    decode use different placements, so the array is reconfigured: ``arch.reconfiguration_s``), then
    ``new_tokens`` decode steps whose context grows from the prompt length.

    Decode steps are simulated at ``samples`` contexts spread over the range and interpolated
    linearly in between (decode time is piecewise linear in context: KV reads grow linearly).
    """
    if new_tokens < 1:
        raise ConfigError([f"new_tokens = {new_tokens}: must be >= 1"], "generation")
    prefill = simulate_llm(replace(study, regime="prefill"), arch)
    first, last = study.prompt, study.prompt + new_tokens - 1
    contexts = sorted({int(round(x)) for x in np.linspace(first, last, max(2, samples))})
    steps = [simulate_llm(replace(study, regime="decode", context=c), arch) for c in contexts]
    per_step = np.interp(np.arange(first, last + 1), contexts, [float(s.total_seconds) for s in steps])
    ttft = float(prefill.total_seconds)
    overlay = arch.reconfiguration_s
    total = ttft + overlay + float(per_step.sum())
    return {
        "model": prefill.attrs["model"], "prompt": study.prompt, "new_tokens": new_tokens, "arch": arch.name,
        "seconds": total, "ttft_s": ttft, "overlay_s": overlay, "decode_s": float(per_step.sum()),
        "tpot_s": float(per_step.mean()), "tokens_per_s": (study.batch * new_tokens) / total,
        "decode_contexts_simulated": contexts,
        "prefill_by_class": by_class(prefill),
        "decode_by_class_at_last_context": by_class(steps[-1]),
    }
