"""Ops run on the host CPU: an as-built input, never a simulated or guessed time.

Some implementations run ops off the NPU (decode attention over a host-resident KV cache, for
one). ``LlmStudy.host`` names them (op name or op class) with the seconds one instance takes on the
host, taken from the implementation's own measurement. Each such op:

- costs the NPU nothing: it stays in the graph as a one-element placeholder with no edges (so no
  fusion reaches across it; its neighbours read and write DDR), and its time is replaced by the
  given host seconds;
- splits the NPU's run: every maximal run of consecutive host ops ends a dispatch and starts
  another, one more host round trip (``Arch.dispatch_overhead_s``) per run.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import xarray as xr

from ..errors import ConfigError
from ..graph import VECTOR, Op, OpGraph
from ..graph.ops import NO_OPERAND


def selected(graph: OpGraph, host: dict) -> dict[int, float]:
    """Host seconds of each op ``host`` selects (by op name, else by op class); a key that selects
    nothing is refused by name."""
    out, used = {}, set()
    for i, op in enumerate(graph.ops):
        key = op.name if op.name in host else op.op_class if op.op_class in host else None
        if key is not None:
            out[i] = float(host[key])
            used.add(key)
    unused = sorted(set(host) - used)
    if unused:
        names = sorted({op.name for op in graph.ops} | {op.op_class for op in graph.ops})
        raise ConfigError([f"host[{k}]: names no op or op class of this workload: one of {', '.join(names)}"
                           for k in unused], "llm study")
    return out


def offload(graph: OpGraph, chosen: dict[int, float]) -> OpGraph:
    """The graph with each chosen op a one-element placeholder, cut off from its producers and
    consumers (its data goes through DDR, where the host reads and writes it)."""
    ops = list(graph.ops)
    for i in chosen:
        op = ops[i]
        ops[i] = Op(op.name, op.op_class, op.layer, VECTOR, 1, 1, 1, replace(op.x, kind="activations"),
                    NO_OPERAND, replace(op.y, kind="activations"), 1, 0.0, weight_kind=op.weight_kind)
    producers = [() if i in chosen else tuple(j for j in ps if j not in chosen)
                 for i, ps in enumerate(graph.producers)]
    return OpGraph(tuple(ops), tuple(producers), graph.batch, graph.tokens, graph.chain_live_bytes_per_token)


def islands(chosen: dict[int, float]) -> int:
    """Maximal runs of consecutive host ops in execution order."""
    idx = sorted(chosen)
    return sum(1 for k, i in enumerate(idx) if k == 0 or idx[k - 1] != i - 1)


def account(ds: xr.Dataset, chosen: dict[int, float], overhead_s: float) -> xr.Dataset:
    """The Dataset with each host op's time its host seconds (its placeholder's NPU time and bytes
    removed) and one dispatch overhead per run of host ops, in every total."""
    if not chosen:
        return ds
    idx = np.array(sorted(chosen))
    host = np.array([chosen[i] for i in idx])
    extra = islands(chosen) * overhead_s
    ds = ds.copy()
    op_seconds = ds.op_seconds.values.copy()
    removed = float(op_seconds[idx].sum())
    op_seconds[idx] = host
    ds["op_seconds"] = ds.op_seconds.copy(data=op_seconds)
    for name in ("ddr_bytes", "energy_pj", "compute_seconds", "movement_seconds", "exposed_compute_seconds",
                 "exposed_movement_seconds"):
        if name in ds and "op" in ds[name].dims:
            values = ds[name].values.copy()
            values[idx] = 0
            ds[name] = ds[name].copy(data=values)
    bound = ds.bound_by.values.copy()
    bound[idx] = "host"
    ds["bound_by"] = ds.bound_by.copy(data=bound)
    tokens = float(ds.tokens_per_s) * float(ds.total_seconds)
    removed += _drop_control(ds, _control_free(chosen, ds.sizes["op"])) + _drop_launches(ds, list(idx))
    total = float(ds.total_seconds) - removed + float(host.sum()) + extra
    ds["total_seconds"] = ds.total_seconds.copy(data=total)
    ds["dispatch_seconds"] = ds.dispatch_seconds.copy(data=float(ds.dispatch_seconds) + extra)
    ds["tokens_per_s"] = ds.tokens_per_s.copy(data=tokens / total)
    ds["host_seconds"] = ((), float(host.sum()), {"units": "s", "description": "time of the ops run on the host "
                                                  "CPU (given, not simulated)"})
    ds.attrs["host_ops"] = ";".join(sorted({str(n) for n in ds.op_name.values[idx]}))
    ds.attrs["host_dispatches"] = islands(chosen)
    return ds


def _control_free(chosen: dict[int, float], n_ops: int) -> list[int]:
    """Ops that set nothing up inside a dispatch: the host ops, and the NPU op after each run of
    them (it starts the next dispatch, whose round trip sets it up)."""
    after = [i + 1 for i in sorted(chosen) if i + 1 < n_ops and i + 1 not in chosen]
    return sorted(chosen) + after


def _drop_control(ds: xr.Dataset, ops: list[int]) -> float:
    """Zero the control instructions of ``ops`` in ``ds`` (in place: per op, per dispatch and the
    sum); returns the seconds removed."""
    if "op_control_seconds" not in ds or not ops:
        return 0.0
    count = ds.op_control_instructions.values.copy()
    count[ops] = 0
    ds["op_control_instructions"] = ds.op_control_instructions.copy(data=count)
    return _zero_seconds(ds, ops, "control")


def _drop_launches(ds: xr.Dataset, ops: list[int]) -> float:
    """Zero the launch reconfigurations of host ops in ``ds`` (in place: per op, per dispatch and
    the sum; they run on the CPU, not in a launch); returns the seconds removed."""
    if "op_launch_seconds" not in ds or not ops:
        return 0.0
    return _zero_seconds(ds, ops, "launch")


def _zero_seconds(ds: xr.Dataset, ops: list[int], what: str) -> float:
    """Zero ``op_<what>_seconds`` of ``ops`` and take them off ``dispatch_<what>_seconds``,
    ``dispatch_total_seconds`` and ``<what>_seconds`` (in place); returns the seconds removed."""
    op_var, dispatch_var, total_var = f"op_{what}_seconds", f"dispatch_{what}_seconds", f"{what}_seconds"
    seconds = ds[op_var].values.copy()
    removed = float(seconds[ops].sum())
    where = ds.dispatch.values[ops]
    for name in (dispatch_var, "dispatch_total_seconds"):
        per_dispatch = ds[name].values.copy()
        np.subtract.at(per_dispatch, where, seconds[ops])
        ds[name] = ds[name].copy(data=np.maximum(per_dispatch, 0.0))
    seconds[ops] = 0
    ds[op_var] = ds[op_var].copy(data=seconds)
    ds[total_var] = ds[total_var].copy(data=float(ds[total_var]) - removed)
    return removed
