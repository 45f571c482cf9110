"""Turn kernel outputs into an xarray Dataset with units and descriptions on every variable, or,
for callers that only summarise (the evaluator), into plain per-design arrays (``DesignArrays``)."""
from __future__ import annotations

from typing import NamedTuple

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


class DesignArrays(NamedTuple):
    """One simulated design's numbers as plain arrays over its own channels and cores (what the
    summaries read; the Dataset adds names and pads designs to a common size)."""

    cycles: int
    status: int
    channel_col: np.ndarray  # int64[channels]
    channel_row: np.ndarray  # int64[channels] (0: shim)
    channel_index: np.ndarray  # int64[channels]
    channel_mm2s: np.ndarray  # bool[channels] (else s2mm)
    channel_bytes: np.ndarray  # float64[channels]
    channel_cycles: np.ndarray  # int64[channels, CHANNEL_STATES]
    core_cycles: np.ndarray  # int64[cores, CORE_STATES]
    level_bytes: np.ndarray  # float64[LEVELS]


def design_arrays(batch: Batch, d: int) -> DesignArrays:
    """Design ``d`` of a simulated batch (bytes per level summed in channel order, as the Dataset)."""
    lw = batch.designs[d]
    out = batch.outputs
    n_ch, n_core = len(lw.channels), len(lw.core_tiles)
    ch_bytes = out["ch_bytes"][d, :n_ch] / L.UNITS_PER_BYTE
    col, row, index, mm2s, level, of_channel = _channel_columns(lw)
    level_bytes = np.zeros(len(LEVELS))
    np.add.at(level_bytes, level, ch_bytes[of_channel])  # in the Dataset's order: the same sums
    res = out["res"][d]
    return DesignArrays(int(res[L.R_CYCLES]), int(res[L.R_STATUS]), col, row, index, mm2s, ch_bytes,
                        out["ch_stats"][d, :n_ch], out["core_stats"][d, :n_core], level_bytes)


def _fans_out(lw, producers) -> bool:
    """True when an S2MM's one producer sends to several S2MMs by packet id (its consumer span is
    longer than one channel while each of its packet routes has one destination)."""
    if len(producers) != 1:
        return False
    m = int(producers[0])
    return int(lw.ch[m, L.CH_CONS_END] - lw.ch[m, L.CH_CONS_START]) > 1 and lw.ch[lw.cons[lw.ch[m, L.CH_CONS_START]], L.CH_PACKET] == 1


def _channel_columns(lw) -> tuple:
    """A lowered design's channels as arrays (column, row, index, MM2S) and the (level, channel)
    pairs its bytes add to, in channel order: each shim channel's DDR traffic, and each stream's
    bytes at the level its two ends span (a circuit stream: what its S2MM received). Made once per
    lowered design and kept on it, since a search summarises every candidate it simulates."""
    found = getattr(lw, "_channel_columns", None)
    if found is None:
        arch, level, of_channel = lw.design.arch, [], []
        for c, chan in enumerate(lw.channels):
            if chan.tile.row == 0:
                level.append(LEVELS.index("ddr_read" if chan.direction == "mm2s" else "ddr_write"))
                of_channel.append(c)
            producer = lw.ch[c, L.CH_PRODUCER]
            if chan.direction == "s2mm" and producer >= 0:
                level.append(LEVELS.index(level_of(arch, lw.channels[producer].tile, chan.tile)))
                of_channel.append(c)
            producers = lw.cons[lw.ch[c, L.CH_PROD_START]:lw.ch[c, L.CH_PROD_END]]
            if chan.direction == "s2mm" and lw.ch[c, L.CH_PACKET] == 1 and _fans_out(lw, producers):
                # fed only by a source that fans out by packet id (validation refuses it shared):
                # what this S2MM received is what its route carried
                level.append(LEVELS.index(level_of(arch, lw.channels[producers[0]].tile, chan.tile)))
                of_channel.append(c)
            elif chan.direction == "s2mm" and lw.ch[c, L.CH_PACKET] == 1:
                # a packet-switched S2MM's producers sit at different levels: each stream counts
                # what its MM2S sent (the same bytes once the S2MM has drained its buffer)
                for m in producers:
                    level.append(LEVELS.index(level_of(arch, lw.channels[m].tile, chan.tile)))
                    of_channel.append(int(m))
        found = (np.array([c.tile.col for c in lw.channels], np.int64),
                 np.array([c.tile.row for c in lw.channels], np.int64),
                 np.array([c.index for c in lw.channels], np.int64),
                 np.array([c.direction == "mm2s" for c in lw.channels], bool),
                 np.array(level, np.int64), np.array(of_channel, np.int64))
        for a in found:
            a.flags.writeable = False  # shared by every DesignArrays of this design
        lw._channel_columns = found
    return found


_STATUS_CODES = {name: code for code, name in STATUS_NAMES.items()}


def arrays_of(ds: xr.Dataset, i: int) -> DesignArrays:
    """Design ``i`` of a result Dataset as ``DesignArrays`` (its padding dropped)."""
    row, direction = ds["channel_row"].values[i], ds["channel_direction"].values[i]
    real = row >= 0
    return DesignArrays(int(ds["total_cycles"].values[i]),
                        _STATUS_CODES[str(ds["status"].values[i])],
                        ds["channel_col"].values[i][real], row[real], ds["channel_index"].values[i][real],
                        direction[real] == "mm2s", ds["channel_bytes"].values[i][real],
                        ds["channel_cycles"].values[i][real],
                        ds["core_cycles"].values[i][ds["core_name"].values[i] != ""],
                        ds["level_bytes"].values[i])


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
        a, used = design_arrays(batch, d), len(lw.channels)
        names[d, :used] = [str(chan) for chan in lw.channels]
        ch_dir[d, :used] = [chan.direction for chan in lw.channels]
        ch_col[d, :used], ch_row[d, :used], ch_index[d, :used] = a.channel_col, a.channel_row, a.channel_index
        level_bytes[d] = a.level_bytes
        core_names[d, :len(lw.core_tiles)] = [str(tile) for tile in lw.core_tiles]
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
