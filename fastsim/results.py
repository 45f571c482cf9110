"""Turn kernel outputs into an xarray Dataset with units and descriptions on every variable."""
from __future__ import annotations

import numpy as np
import xarray as xr

from fastsim.kernels import layout as L

from .lower import Batch

CHANNEL_STATES = ["idle", "overhead", "lock_wait", "busy", "ddr_limited", "backpressure", "starved"]
CORE_STATES = ["idle", "overhead", "lock_wait", "busy"]
LEVELS = ["ddr_read", "ddr_write", "shim_mem", "mem_compute", "compute_compute", "shim_compute",
          "mem_mem"]
STATUS_NAMES = {L.ST_OK: "ok", L.ST_DEADLOCK: "deadlock", L.ST_LIVELOCK: "livelock",
                L.ST_CYCLE_LIMIT: "cycle_limit", L.ST_LOCK_OVERFLOW: "lock_overflow"}


def _kind(arch, tile) -> str:
    return arch.tile_kind_name(tile.row)


def level_of(arch, src_tile, dst_tile) -> str:
    a, b = sorted([_kind(arch, src_tile), _kind(arch, dst_tile)],
                  key=["shim", "mem", "compute"].index)
    return f"{a}_{b}"


def _variable(dims: tuple, values: np.ndarray, attrs: dict | None = None) -> xr.Variable:
    """A variable over an array that is already a plain numpy array: xarray's conversion checks
    (which import dask.array, 0.2 s of a small run) have nothing to convert."""
    return xr.Variable(dims, values, attrs, fastpath=True)


def to_dataset(batch: Batch, trace: bool = False) -> xr.Dataset:
    n = len(batch.designs)
    out = batch.outputs
    res = out["res"]
    n_ch = out["ch_bytes"].shape[1]
    n_k = out["core_stats"].shape[1]
    names = np.full((n, n_ch), "", dtype=object)
    ch_col = np.full((n, n_ch), -1, np.int64)
    ch_row = np.full((n, n_ch), -1, np.int64)
    ch_index = np.full((n, n_ch), -1, np.int64)
    ch_dir = np.full((n, n_ch), "", dtype=object)
    core_names = np.full((n, n_k), "", dtype=object)
    level_bytes = np.zeros((n, len(LEVELS)))
    clock = np.array([lw.design.arch.clock_hz for lw in batch.designs])
    ch_bytes = out["ch_bytes"] / L.UNITS_PER_BYTE
    for d, lw in enumerate(batch.designs):
        arch = lw.design.arch
        for c, chan in enumerate(lw.channels):
            names[d, c] = str(chan)
            ch_col[d, c], ch_row[d, c], ch_index[d, c] = chan.tile.col, chan.tile.row, chan.index
            ch_dir[d, c] = chan.direction
            if chan.tile.row == 0:
                level_bytes[d, LEVELS.index("ddr_read" if chan.direction == "mm2s" else "ddr_write")] += ch_bytes[d, c]
            producer = lw.ch[c, L.CH_PRODUCER]
            if chan.direction == "s2mm" and producer >= 0:
                lvl = level_of(arch, lw.channels[producer].tile, chan.tile)
                level_bytes[d, LEVELS.index(lvl)] += ch_bytes[d, c]
        for k, tile in enumerate(lw.core_tiles):
            core_names[d, k] = str(tile)
    cycles = res[:, L.R_CYCLES]
    ds = xr.Dataset(
        {name: _variable(*spec) for name, spec in {
            "total_cycles": (("design",), cycles,
                             {"units": "cycles", "description": "cycles until all required work finished"}),
            "stepped_cycles": (("design",), res[:, L.R_STEPS].copy(),
                               {"units": "cycles", "description": "cycles the engine simulated one by one; "
                                "the rest were skipped (repeating the previous cycle) or fast-forwarded"}),
            "fast_forwarded_cycles": (("design",), res[:, L.R_FF_CYCLES].copy(),
                                      {"units": "cycles", "description": "cycles covered by whole periods "
                                       "of a periodic steady state jumped at once (exact)"}),
            "seconds": (("design",), cycles / clock,
                        {"units": "s", "description": "total_cycles at the arch clock (no host dispatch)"}),
            "status": (("design",), np.array([STATUS_NAMES[int(s)] for s in res[:, L.R_STATUS]], dtype=object),
                       {"description": "ok, deadlock, livelock, cycle_limit or lock_overflow"}),
            "channel_name": (("design", "channel"), names, {"description": "tile and DMA channel"}),
            "channel_col": (("design", "channel"), ch_col, {"description": "column of the channel's tile (-1: padding)"}),
            "channel_row": (("design", "channel"), ch_row,
                            {"description": "row of the channel's tile (0 = shim; -1: padding)"}),
            "channel_direction": (("design", "channel"), ch_dir, {"description": "mm2s or s2mm ('' = padding)"}),
            "channel_index": (("design", "channel"), ch_index, {"description": "channel number on its tile"}),
            "channel_cycles": (("design", "channel", "channel_state"), out["ch_stats"].copy(),
                               {"units": "cycles", "description": "cycles each DMA channel spent in each state; "
                                "states add up to total_cycles"}),
            "channel_bytes": (("design", "channel"), ch_bytes,
                              {"units": "bytes", "description": "bytes the channel moved on its stream"}),
            "core_name": (("design", "core"), core_names, {"description": "compute tile"}),
            "core_cycles": (("design", "core", "core_state"), out["core_stats"].copy(),
                            {"units": "cycles", "description": "cycles each core spent in each state"}),
            "level_bytes": (("design", "level"), level_bytes,
                            {"units": "bytes", "description": "bytes moved per memory level (DDR reads/"
                             "writes by shim DMAs; tile-to-tile bytes received over streams)"}),
        }.items()},
        coords={name: _variable((name,), np.array(values)) for name, values in
                (("channel_state", CHANNEL_STATES), ("core_state", CORE_STATES), ("level", LEVELS),
                 ("design", np.arange(n)))},
        attrs={"clock_hz": [float(c) for c in clock] if n > 1 else float(clock[0])},
    )
    if trace:
        ds = ds.merge(_events(batch))
    return ds


def _events(batch: Batch) -> xr.Dataset:
    """Recorded BD transfers and kernel invocations as padded (design, event) variables."""
    ev = batch.outputs["events"]
    res = batch.outputs["res"]
    n = ev.shape[0]
    cap = max(1, int(min(res[:, L.R_EVENTS].max(), ev.shape[1])))
    track = np.full((n, cap), "", dtype=object)
    name = np.full((n, cap), "", dtype=object)
    start = np.full((n, cap), -1, np.int64)
    end = np.full((n, cap), -1, np.int64)
    for d, lw in enumerate(batch.designs):
        count = min(int(res[d, L.R_EVENTS]), cap)
        for e, (kind, idx, what, s, t) in enumerate(ev[d, :count].tolist()):
            if kind == L.EV_CHANNEL:
                bd = lw.design.bds[what]
                track[d, e], name[d, e] = str(lw.channels[idx]), bd.name or f"bd{bd.id}"
            else:
                track[d, e], name[d, e] = f"core {lw.core_tiles[idx]}", lw.kernel_names[what]
            start[d, e], end[d, e] = s, t
    return xr.Dataset({
        "event_track": (("design", "event"), track, {"description": "DMA channel or core ('' = padding)"}),
        "event_name": (("design", "event"), name, {"description": "BD name or kernel name"}),
        "event_start_cycles": (("design", "event"), start, {"units": "cycles"}),
        "event_end_cycles": (("design", "event"), end, {"units": "cycles", "description": "exclusive end"}),
        "events_dropped": (("design",), np.maximum(res[:, L.R_EVENTS] - ev.shape[1], 0),
                           {"description": "events past the trace buffer (raise max_events)"}),
    })
