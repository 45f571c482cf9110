"""Export recorded events as Chrome/Perfetto trace JSON (opens in ui.perfetto.dev).

Designs: one process per design, one track (thread) per DMA channel and per core; every BD
transfer and kernel invocation is a complete ("X") event with microsecond timestamps at the arch
clock. LLM runs (``llm_trace``): dispatches, ops and fused groups as slices on a timeline, with
per-op counter tracks of what the DMA channels and cores did.
"""
from __future__ import annotations

import json
from pathlib import Path

import xarray as xr


def summarize_repeats(slices: list[tuple[str, int, int]], min_repeat: int = 3,
                      longest_pattern: int = 4) -> list[tuple[str, int, int, int]]:
    """(name, start, end) slices of one track, in time order, with every periodic run merged into
    one (names, start, end, count) slice: a pattern of 1 to ``longest_pattern`` slices (double
    buffers alternate two names) repeated at least ``min_repeat`` times at a constant period, each
    repeat identical in names and durations. A long periodic run stays loadable and still shows
    what repeated, how often and when; ``count`` is the number of raw slices merged."""
    def same(a, b, period):
        return (slices[a][0] == slices[b][0] and slices[a][2] - slices[a][1] == slices[b][2] - slices[b][1]
                and slices[a][1] - slices[b][1] == period)

    out, i = [], 0
    while i < len(slices):
        best_p, best_n = 1, 1
        for p in range(1, longest_pattern + 1):
            if i + p >= len(slices):
                break
            period = slices[i + p][1] - slices[i][1]
            j = i + p
            while j < len(slices) and same(j, j - p, period):
                j += 1
            covered = (j - i) // p * p  # whole repeats only
            if covered >= min_repeat * p and covered > best_n:
                best_p, best_n = p, covered
        if best_n > 1:
            names = ", ".join(dict.fromkeys(slices[k][0] for k in range(i, i + best_p)))
            out.append((names, slices[i][1], slices[i + best_n - 1][2], best_n))
            i += best_n
        else:
            out.append((*slices[i], 1))
            i += 1
    return out


def chrome_trace(ds: xr.Dataset, raw: bool = False) -> dict:
    """Build the trace from a ``simulate(..., trace=True)`` Dataset; runs of identical periodic
    slices on a track become one summary slice with a count unless ``raw``."""
    if "event_track" not in ds:
        raise ValueError("the Dataset holds no events: run simulate(..., trace=True)")
    clocks = ds.attrs["clock_hz"]
    events = []
    for d in range(ds.sizes["design"]):
        us_per_cycle = 1e6 / (clocks[d] if isinstance(clocks, list) else clocks)
        events.append({"ph": "M", "name": "process_name", "pid": d, "args": {"name": f"design {d}"}})
        row = ds.isel(design=d)
        by_track: dict[str, list] = {}
        for track, name, start, end in zip(row.event_track.values, row.event_name.values,
                                           row.event_start_cycles.values, row.event_end_cycles.values):
            if track:
                by_track.setdefault(str(track), []).append((str(name), int(start), int(end)))
        for tid, (track, slices) in enumerate(by_track.items()):
            events.append({"ph": "M", "name": "thread_name", "pid": d, "tid": tid, "args": {"name": track}})
            slices.sort(key=lambda s: s[1])
            merged = [(n, s, e, 1) for n, s, e in slices] if raw else summarize_repeats(slices)
            first = 0  # index of the merged slice's first raw slice
            for name, start, end, count in merged:
                args = {"start_cycle": start, "end_cycle": end}
                if count > 1:  # the raw slices' own cycles: the summary's span includes the gaps
                    busy = sum(e - s for _, s, e in slices[first:first + count])
                    args.update(count=count, summarized=True, busy_cycles=busy)
                first += count
                events.append({"ph": "X", "name": name if count == 1 else f"{name} x{count}",
                               "cat": "core" if track.startswith("core") else "dma", "pid": d, "tid": tid,
                               "ts": start * us_per_cycle, "dur": (end - start) * us_per_cycle, "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def llm_trace(ds: xr.Dataset) -> dict:
    """A ``simulate_llm`` Dataset as a timeline: track ``dispatch`` (each dispatch: its host round
    trip, static weight load, program reloads and control, then its ops, each launch's
    reconfiguration before the op that starts it), track ``op`` (one slice per op,
    named after it, its class as category, the binding resource and numbers as args), track
    ``fused group``, and counters per op of the share of channel-cycles and core-cycles in each
    state (busy, lock_wait, starved, ...). Ops run one after another, as the model times them."""
    us = 1e6
    events = [{"ph": "M", "name": "process_name", "pid": 0,
               "args": {"name": f"{ds.attrs['model']} {ds.attrs['regime']} on {ds.attrs['arch']}"}}]
    for tid, name in enumerate(("dispatch", "op", "fused group")):
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": name}})
    overhead = float(ds.dispatch_seconds) / max(1, int(ds.sizes["dispatch_index"]))
    t, group_start, group = 0.0, 0.0, ""
    of_op = ds.dispatch.values
    launches = ds.op_launch_seconds.values if "op_launch_seconds" in ds else [0.0] * ds.sizes["op"]
    for d in range(ds.sizes["dispatch_index"]):
        start = t
        for label, seconds in (("host round trip", overhead),
                               ("static weight load", float(ds.dispatch_preload_seconds[d])),
                               ("program reloads", float(ds.dispatch_reload_seconds[d])),
                               ("control instructions", float(ds.dispatch_control_seconds[d]))):
            if seconds > 0:
                events.append({"ph": "X", "name": label, "cat": "dispatch", "pid": 0, "tid": 0, "ts": t * us,
                               "dur": seconds * us, "args": {"dispatch": d}})
                t += seconds
        for i in [i for i in range(ds.sizes["op"]) if of_op[i] == d]:
            launch = float(launches[i])
            if launch > 0:  # the launch this op starts reconfigures the array first
                events.append({"ph": "X", "name": "launch reconfiguration", "cat": "dispatch", "pid": 0, "tid": 0,
                               "ts": t * us, "dur": launch * us, "args": {"dispatch": d, "op": i}})
                t += launch
            seconds = float(ds.op_seconds[i])
            fused = str(ds.fusion_group.values[i])
            if fused != group:
                if group:
                    events.append({"ph": "X", "name": group, "cat": "fusion", "pid": 0, "tid": 2,
                                   "ts": group_start * us, "dur": (t - group_start) * us})
                group, group_start = fused, t
            events.append({"ph": "X", "name": str(ds.op_name.values[i]), "cat": str(ds.op_class.values[i]), "pid": 0,
                           "tid": 1, "ts": t * us, "dur": seconds * us,
                           "args": {"class": str(ds.op_class.values[i]), "layer": int(ds.layer.values[i]),
                                    "bound_by": str(ds.bound_by.values[i]), "dataflow": str(ds.dataflow.values[i]),
                                    "cycles": int(ds.op_cycles.values[i]), "macs": int(ds.macs.values[i]),
                                    "ddr_bytes": float(ds.ddr_bytes.isel(op=i).sum()),
                                    "fused_group": fused}})
            for track, states, values in (("DMA channels (% of channel-cycles)", ds.channel_state.values,
                                           ds.channel_state_cycles.values[i]),
                                          ("cores (% of core-cycles)", ds.core_state.values,
                                           ds.core_state_cycles.values[i])):
                total = float(values.sum()) or 1.0
                events.append({"ph": "C", "name": track, "pid": 0, "ts": t * us,
                               "args": {str(k): round(100 * float(v) / total, 2) for k, v in zip(states, values)}})
            t += seconds
        events.append({"ph": "X", "name": f"dispatch {d}", "cat": "dispatch", "pid": 0, "tid": 0, "ts": start * us,
                       "dur": (t - start) * us, "args": {"ops": int((of_op == d).sum())}})
    if group:
        events.append({"ph": "X", "name": group, "cat": "fusion", "pid": 0, "tid": 2, "ts": group_start * us,
                       "dur": (t - group_start) * us})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "metadata": {"total_seconds": float(ds.total_seconds), "timeline_seconds": t}}


def systolic_trace(rows: list[dict]) -> dict:
    """A per-layer fold timeline of ``fastsim systolic`` rows: one track per dataflow, one slice per
    layer, and inside it the folds as one summary slice (their count and length as args, not one
    slice each: a layer has up to millions) followed by the stall cycles (placed at the end; the
    model gives their number, not their times). Timestamps are cycles (1 cycle shown as 1 us)."""
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "systolic mesh (1 us = 1 cycle)"}}]
    tracks, clock = {}, {}
    for row in rows:
        flow = row["dataflow"]
        if flow not in tracks:
            tracks[flow] = len(tracks)
            clock[flow] = 0
            events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tracks[flow],
                           "args": {"name": f"dataflow {flow}"}})
        tid, t = tracks[flow], clock[flow]
        total, stall, compute = int(row["total_cycles"]), int(row["stall_cycles"]), int(row["compute_cycles"])
        folds = max(1, int(row["folds"]))
        events.append({"ph": "X", "name": row["layer"], "cat": "layer", "pid": 0, "tid": tid, "ts": t, "dur": total,
                       "args": {"folds": folds, "mapping_efficiency_pct": row["mapping_efficiency"],
                                "stall_operand": row["stall_operand"]}})
        events.append({"ph": "X", "name": f"{folds:,} folds", "cat": "folds", "pid": 0, "tid": tid, "ts": t,
                       "dur": compute, "args": {"folds": folds, "cycles_per_fold": compute / folds,
                                                "fill_drain_cycles_per_fold": row["fill_drain_cycles_per_fold"]}})
        if stall:
            events.append({"ph": "X", "name": f"stall ({row['stall_operand'] or '-'})", "cat": "stall", "pid": 0,
                           "tid": tid, "ts": t + total - stall, "dur": stall,
                           "args": row.get("stall_cycles_by_operand", {})})
        clock[flow] = t + total
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_trace(ds: xr.Dataset, path: str | Path, raw: bool = False) -> int:
    """Write Perfetto-readable JSON (a design run's events, periodic runs summarized unless
    ``raw``; or an LLM run's timeline); returns the number of slices written."""
    data = llm_trace(ds) if "op_seconds" in ds else chrome_trace(ds, raw)
    Path(path).write_text(json.dumps(data))
    return sum(1 for e in data["traceEvents"] if e["ph"] == "X")
