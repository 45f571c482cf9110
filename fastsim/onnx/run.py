"""Simulate an ONNX model: the graph (``graph.build_graph``) through ``fastsim.evaluation`` on an
arch, host-fallback ops timed as given, and the summary ``fastsim run onnx`` prints."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ..arch import Arch, NPU2
from ..evaluation import GraphPins, evaluate, to_dataset
from ..gc_pause import gc_paused
from ..llm import host
from ..mapping.dispatch import DispatchLimits
from .graph import OnnxGraph, build_graph


def simulate_onnx(model, arch: Arch = NPU2, *, dims: dict[str, int] | None = None, cpu_fallback=(),
                  host_seconds=None, fold_epilogues: bool = False, fusion: str = "auto", search_budget: int | None = 3,
                  limits: DispatchLimits = DispatchLimits(), noop: tuple[str, ...] = ()) -> xr.Dataset:
    """One inference of ``model`` (a path, a ``ModelProto`` or an ``OnnxGraph``): the per-op
    Dataset of ``fastsim.evaluation`` with the ops' ONNX types (``onnx_op_type``), the compute
    dtype and, where ops run on the host, their given seconds (``host_seconds``). ``noop``: op
    classes (and "cast") replaced by data-only passes (``GraphPins.noop``; ablation)."""
    with gc_paused():
        g = model if isinstance(model, OnnxGraph) else build_graph(
            model, arch, dims=dims, cpu_fallback=cpu_fallback, host_seconds=host_seconds,
            fold_epilogues=fold_epilogues)
        graph = host.offload(g.graph, g.host) if g.host else g.graph
        pins = GraphPins(compute_dtype=g.compute_dtype, fusion=fusion, noop=tuple(noop),
                         search_budget=search_budget)
        result = evaluate(graph, arch, pins, limits)
        attrs = {"model": g.name, "regime": "inference", "batch": graph.batch, "tokens": graph.tokens,
                 "compute_dtype": g.compute_dtype, "fold_epilogues": int(fold_epilogues)}
        extra = {"onnx_op_type": (("op",), np.array(g.op_types, dtype=object),
                                  {"description": "the ONNX node type the op lowers"})}
        ds = to_dataset(result, pins, arch, limits, attrs, extra)
        if g.host:
            ds = host.account(ds, g.host, arch.dispatch_overhead_s)
            ds.attrs["dispatches"] = int(ds.attrs["dispatches"]) + host.islands(g.host)
        return ds


def onnx_summary(ds: xr.Dataset, top: int = 10) -> dict:
    """Whole-network latency, the ``top`` ops by time, time per op class and ONNX type, bytes per
    memory level and DDR bytes by tensor kind, the binding resource (of the time: each op's, and
    the host round trips'), energy, and the host ops apart."""
    seconds = float(ds.total_seconds)
    order = np.argsort(-ds.op_seconds.values, kind="stable")[:top]
    layers = [{"op": str(ds.op_name.values[i]), "type": str(ds.onnx_op_type.values[i]),
               "class": str(ds.op_class.values[i]), "seconds": float(ds.op_seconds.values[i]),
               "share": float(ds.op_seconds.values[i]) / seconds, "bound_by": str(ds.bound_by.values[i]),
               "macs": int(ds.macs.values[i])} for i in order]
    bound = _sum_by(ds.bound_by.values, ds.op_seconds.values)
    bound["dispatch"] = float(ds.dispatch_seconds)
    bound["control"] = float(ds.control_seconds)
    host_ops = ds.bound_by.values == "host"
    macs = int(ds.macs.sum())
    return {
        "model": ds.attrs["model"], "arch": ds.attrs["arch"], "compute_dtype": ds.attrs["compute_dtype"],
        "batch": int(ds.attrs["batch"]), "seconds": seconds, "inferences_per_s": int(ds.attrs["batch"]) / seconds,
        "macs": macs, "tops": 2 * macs / seconds / 1e12, "ops": int(ds.sizes["op"]),
        "top_layers": layers,
        "by_class": _sum_by(ds.op_class.values, ds.op_seconds.values),
        "by_type": _sum_by(ds.onnx_op_type.values, ds.op_seconds.values),
        "bytes_by_level": {str(lv): float(b) for lv, b in zip(ds.level.values, ds.level_bytes.sum("op").values)},
        "ddr_bytes_by_kind": {str(k): float(b) for k, b in zip(ds.tensor_kind.values, ds.ddr_bytes.sum("op").values)},
        "bound_by": max(bound, key=bound.get), "time_by_bound": bound,
        "energy_j": (float(ds.energy_pj.sum()) + float(ds.get("preload_energy_pj", 0.0))) * 1e-12,
        "dispatches": int(ds.attrs["dispatches"]), "dispatch_seconds": float(ds.dispatch_seconds),
        "control_seconds": float(ds.control_seconds), "control_instructions": int(ds.op_control_instructions.sum()),
        "fusion": ds.attrs["fusion"],
        "host": {"seconds": float(ds.get("host_seconds", 0.0)),
                 "ops": _count(ds.onnx_op_type.values[host_ops])},
    }


def _sum_by(keys, values) -> dict[str, float]:
    out = {}
    for k, v in zip(keys, values):
        out[str(k)] = out.get(str(k), 0.0) + float(v)
    return out


def _count(keys) -> dict[str, int]:
    out = {}
    for k in keys:
        out[str(k)] = out.get(str(k), 0) + 1
    return out
