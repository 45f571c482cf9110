"""The summaries users print from an LLM run's per-op Dataset (``fastsim.evaluation.dataset``)."""
from __future__ import annotations

import numpy as np
import xarray as xr


def overlay_of(ds: xr.Dataset):
    """The overlay a run used: its fusion choice, columns per op and dataflow per matmul op
    (identical layers agree, so one entry per op name)."""
    from ..mapping.overlay import Overlay

    cols, flows = {}, {}
    for name, c, flow in zip(ds.op_name.values, ds.op_columns.values, ds.dataflow.values):
        cols[str(name)] = int(c)
        if flow in ("ws", "is", "os"):
            flows[str(name)] = str(flow)
    return Overlay(regime=ds.attrs["regime"], fusion=ds.attrs["fusion"], columns=cols, dataflow=flows,
                   residency=ds.attrs["residency"])


def columns(ds: xr.Dataset, *names: str) -> dict[str, np.ndarray]:
    """The variables and coordinates ``names`` of a run's Dataset (none named: all) as arrays, by
    name: what the summaries read (``fastsim.evaluation.dataset.to_columns`` gives all of them
    without building the Dataset). A helper that reads two columns names them, so that a Dataset
    opened lazily loads only those."""
    return {name: ds.variables[name].values for name in names or ds.variables if name in ds.variables}


def by_class(ds: xr.Dataset) -> dict[str, float]:
    """Seconds per op class. Dequantization runs fused inside gemm ops, so its time stays in
    "gemm" (``cast_share`` reports its share of core cycles; ``noop=("cast",)`` measures what
    removing it saves)."""
    return _by_class(columns(ds, "op_class", "op_seconds"))


def by_layer(ds: xr.Dataset) -> dict[str, float]:
    """Seconds per transformer layer ("head" = embedding, final norm and LM head)."""
    return _by_layer(columns(ds, "layer", "op_seconds"))


def llm_summary(ds: xr.Dataset, stalls: bool = True) -> dict:
    """The pass's totals, traffic, binding resource and search quality as plain numbers (and,
    with ``stalls``, each op's stall attribution, ``stalls_by_op``)."""
    return summary_of(columns(ds), ds.attrs, stalls)


def summary_of(col: dict[str, np.ndarray], attrs: dict, stalls: bool = True) -> dict:
    """``llm_summary`` of a run's columns (``columns``) and attrs. ``stalls=False`` leaves out
    ``stalls_by_op``, a dict per op: a sweep keeps none of it, and it is a summary's costliest part."""
    # columns read once as arrays: xarray's reductions and lookups cost more than the pass's
    # arithmetic (a sweep summarises every point). Float sums skip NaN as xarray's do (``nansum``:
    # the same pairwise sum, the same bits)
    kinds = np.nansum(col["ddr_bytes"], axis=0)
    kind_at = {str(k): i for i, k in enumerate(col["tensor_kind"])}
    bound_time = {}
    for b, s in zip(col["bound_by"], col["op_seconds"]):
        bound_time[b] = bound_time.get(b, 0.0) + s
    bound_time["dispatch"] = float(col["dispatch_seconds"])
    bound_time["control"] = float(col["control_seconds"])
    seconds = float(col["total_seconds"])
    decode = attrs["regime"] == "decode"
    preload = float(col.get("preload_bytes", 0.0))  # static weights: in time, bytes and energy alike
    out = {
        # only the shapes the regime reads: decode reads a context, prefill and encode a prompt
        "model": attrs["model"], "regime": attrs["regime"],
        "context": attrs["context"] if decode else attrs.get("prefill_context", 0),
        "prompt": None if decode else attrs["prompt"], "batch": attrs["batch"], "arch": attrs["arch"],
        "seconds": seconds, "tokens_per_s": float(col["tokens_per_s"]),
        "by_class": _by_class(col),
        "by_layer": _by_layer(col),
        "ddr_bytes": float(np.nansum(kinds)) + preload,
        "weight_bytes": float(kinds[kind_at["weights"]]) + preload,
        "weight_bytes_by_kind": _weight_bytes_by_kind(col, kind_at["weights"]),
        "kv_bytes": float(kinds[kind_at["kv"]]),
        "activation_bytes": float(kinds[kind_at["activations"]]),
        "macs": int(col["macs"].sum()),
        "energy_j": (float(np.nansum(col["energy_pj"])) + float(col.get("preload_energy_pj", 0.0))) * 1e-12,
        "dispatch_seconds": float(col["dispatch_seconds"]),
        "dispatch_share": float(col["dispatch_seconds"]) / seconds,
        "dispatches": int(attrs["dispatches"]),
        "control_seconds": float(col["control_seconds"]),
        "control_instructions": int(col["op_control_instructions"].sum()),
        "program_reload_seconds": float(col["program_reload_seconds"]),
        "launch_seconds": float(col["launch_seconds"]),
        "preload_seconds": float(col["preload_seconds"]),
        "fusion": attrs["fusion"],
        "compute_s": float(np.nansum(col["compute_seconds"])),
        "exposed_compute_s": float(np.nansum(col["exposed_compute_seconds"])),
        "movement_s": float(np.nansum(col["movement_seconds"])),
        "bound_by": max(bound_time, key=bound_time.get),
        "time_by_bound": bound_time,
    }
    if stalls:
        out["stalls_by_op"] = _stalls_by_op(col)
    out["mapping_search"] = _mapping_search(col)
    return out


def mapping_search(ds: xr.Dataset) -> dict:
    """How far from the best of its space the pass may be: each matmul's search either proved its
    answer (gap 0) or stopped at its budget with a gap (an op held to a kernel its dispatch shares
    counts against the best of its whole space); an op can get at most its gap x its time faster,
    and the program reloads left could at most vanish, so their sum bounds what any other choice
    of the ops' mappings could save. A gap is of the search's objective, the op's time and its
    control inside the dispatch (``mapping.branch_bound.objective``): it applies to both."""
    return _mapping_search(columns(ds, "dataflow", "mapping_gap", "program_reload_seconds", "op_seconds",
                                   "op_control_seconds", "kernel_shared", "op_name", "total_seconds"))


def weight_bytes_by_kind(ds: xr.Dataset) -> dict[str, float]:
    """Weight bytes read from DDR per weight tensor kind (static weights preloaded once per
    dispatch are reported as "preloaded")."""
    col = columns(ds, "tensor_kind", "weight_kind", "ddr_bytes", "preload_bytes")
    return _weight_bytes_by_kind(col, [str(k) for k in col["tensor_kind"]].index("weights"))


def stalls_by_op(ds: xr.Dataset) -> list[dict]:
    """Per op: its time, binding resource and the share of its DMA channel-cycles and core-cycles
    in each state (stall attribution)."""
    return _stalls_by_op(columns(ds, "op_name", "op_class", "layer", "op_seconds", "bound_by", "channel_state_cycles",
                                 "core_state_cycles", "channel_state", "core_state"))


def _by_class(col: dict) -> dict[str, float]:
    out = {}
    for cls, sec in zip(col["op_class"], col["op_seconds"]):
        out[str(cls)] = out.get(str(cls), 0.0) + float(sec)
    return out


def _by_layer(col: dict) -> dict[str, float]:
    out = {}
    for layer, sec in zip(col["layer"], col["op_seconds"]):
        key = "head" if layer < 0 else str(int(layer))
        out[key] = out.get(key, 0.0) + float(sec)
    return out


def _mapping_search(col: dict) -> dict:
    matmul = col["dataflow"] != "stream"
    gaps = col["mapping_gap"]
    reload_s = float(col["program_reload_seconds"])
    saving = float((gaps * (col["op_seconds"] + col["op_control_seconds"]))[matmul].sum()) + reload_s
    shared = col["kernel_shared"] if "kernel_shared" in col else np.zeros(len(col["op_name"]), bool)
    return {"matmul_ops": int(matmul.sum()), "proven_best": int((gaps[matmul] == 0).sum()),
            "worst_gap": float(gaps[matmul].max()) if matmul.any() else 0.0,
            "kernel_shared_ops": int(shared.sum()), "program_reload_seconds": reload_s,
            "most_seconds_better_mappings_save": saving,
            "most_share_better_mappings_save": saving / float(col["total_seconds"])}


def _weight_bytes_by_kind(col: dict, weights_at: int) -> dict[str, float]:
    out = {}
    if "weight_kind" in col:
        for kind, b in zip(col["weight_kind"], col["ddr_bytes"][:, weights_at]):
            if kind:
                out[str(kind)] = out.get(str(kind), 0.0) + float(b)
    preload = float(col.get("preload_bytes", 0.0))
    if preload:
        out["preloaded"] = preload
    return out


def _stalls_by_op(col: dict) -> list[dict]:
    names, classes, layers = col["op_name"], col["op_class"], col["layer"]
    seconds, bound = col["op_seconds"], col["bound_by"]
    channels, cores = col["channel_state_cycles"], col["core_state_cycles"]
    channel_states = [str(k) for k in col["channel_state"]]
    core_states = [str(k) for k in col["core_state"]]
    # shares as plain floats for every op at once (a per-element float() costs more than the rest)
    channel_shares = (channels / np.maximum(1.0, channels.sum(axis=1, keepdims=True))).tolist()
    core_shares = (cores / np.maximum(1.0, cores.sum(axis=1, keepdims=True))).tolist()
    return [{"op": str(names[i]), "class": str(classes[i]), "layer": int(layers[i]),
             "seconds": float(seconds[i]), "bound_by": str(bound[i]),
             "channels": dict(zip(channel_states, channel_shares[i])),
             "cores": dict(zip(core_states, core_shares[i]))} for i in range(len(names))]
