"""Export recorded events as Chrome/Perfetto trace JSON (opens in ui.perfetto.dev).

One process per design, one track (thread) per DMA channel and per core; every BD transfer and
kernel invocation is a complete ("X") event with microsecond timestamps at the arch clock.
"""
from __future__ import annotations

import json
from pathlib import Path

import xarray as xr


def chrome_trace(ds: xr.Dataset) -> dict:
    """Build the trace from a ``simulate(..., trace=True)`` Dataset."""
    if "event_track" not in ds:
        raise ValueError("the Dataset holds no events: run simulate(..., trace=True)")
    clocks = ds.attrs["clock_hz"]
    events = []
    for d in range(ds.sizes["design"]):
        us_per_cycle = 1e6 / (clocks[d] if isinstance(clocks, list) else clocks)
        events.append({"ph": "M", "name": "process_name", "pid": d, "args": {"name": f"design {d}"}})
        tids: dict[str, int] = {}
        row = ds.isel(design=d)
        for track, name, start, end in zip(row.event_track.values, row.event_name.values,
                                           row.event_start_cycles.values, row.event_end_cycles.values):
            if not track:
                continue
            if track not in tids:
                tids[track] = len(tids)
                events.append({"ph": "M", "name": "thread_name", "pid": d, "tid": tids[track],
                               "args": {"name": track}})
            events.append({"ph": "X", "name": str(name), "cat": "core" if track.startswith("core") else "dma",
                           "pid": d, "tid": tids[track], "ts": int(start) * us_per_cycle,
                           "dur": int(end - start) * us_per_cycle,
                           "args": {"start_cycle": int(start), "end_cycle": int(end)}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_trace(ds: xr.Dataset, path: str | Path) -> int:
    """Write Perfetto-readable JSON; returns the number of slices written."""
    data = chrome_trace(ds)
    Path(path).write_text(json.dumps(data))
    return sum(1 for e in data["traceEvents"] if e["ph"] == "X")
