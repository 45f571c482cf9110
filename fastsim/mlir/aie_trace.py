"""A simulated design's events in the shape mlir-aie's trace parser writes, so that a simulated
and a hardware trace open side by side in Perfetto.

mlir-aie's ``python/utils/trace/parse.py`` turns a hardware trace into a JSON array of Chrome
trace events: one process per traced tile and trace type, named ``core_trace for tileR,C`` (row,
column; ``mem_trace``, ``memtile_trace``, ``shim_trace`` for the others), eight threads per
process, one per trace slot, each named after the event in that slot (``INSTR_EVENT_0``,
``INSTR_VECTOR``, ``PORT_RUNNING_0``, ...), and ``B``/``E`` pairs while an event is active, with
timestamps in cycles.

What fastsim fills in, from what it simulates (nothing else is written):

- a core (``core_trace``): ``INSTR_EVENT_0`` for one cycle where each kernel call starts and
  ``INSTR_EVENT_1`` where it ends (the markers IRON's kernels raise with ``event0()`` /
  ``event1()``), ``INSTR_VECTOR`` while the call runs (fastsim does not see inside a kernel: the
  whole call), and ``PORT_RUNNING_n`` for the tile's DMA channels in use (S2MM first, then
  MM2S), active while a BD moves data;
- a mem tile (``memtile_trace``) and a shim tile (``shim_trace``): ``PORT_RUNNING_n`` per DMA
  channel in use, in the same order, up to the eight slots a tile has (further channels are left
  out, as the hardware would leave them untraced).

Lock and stream stalls are not written: fastsim knows when a core waits but not, apart from
the kernel calls, what it executes meanwhile, and a slot it cannot fill is left out rather than
guessed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

_SLOTS = 8
_TRACK = re.compile(r"^tile\((\d+),(\d+)\)\.(s2mm|mm2s)(\d+)$")
_CORE = re.compile(r"^core tile\((\d+),(\d+)\)$")


def _runs(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans merged where they touch or overlap: an event stays active across them."""
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _tracks(ds) -> tuple[dict, dict]:
    """(core calls per tile, BD spans per (tile, channel)) of design 0 of a traced Dataset."""
    row = ds.isel(design=0)
    cores: dict[tuple[int, int], list] = {}
    channels: dict[tuple[int, int], dict[tuple[str, int], list]] = {}
    for track, start, end in zip(row.event_track.values, row.event_start_cycles.values, row.event_end_cycles.values):
        track = str(track)
        core, dma = _CORE.match(track), _TRACK.match(track)
        if core:
            cores.setdefault((int(core[1]), int(core[2])), []).append((int(start), int(end)))
        elif dma:
            tile = (int(dma[1]), int(dma[2]))
            channels.setdefault(tile, {}).setdefault((dma[3], int(dma[4])), []).append((int(start), int(end)))
    return cores, channels


def aie_trace(ds, arch) -> list[dict]:
    """The events of a ``simulate_design(info, trace=True)`` Dataset as mlir-aie's trace parser
    writes them (a JSON-ready list)."""
    if "event_track" not in ds:
        raise ValueError("the Dataset holds no events: simulate with trace=True")
    cores, channels = _tracks(ds)
    events: list[dict] = []
    tiles = sorted(set(cores) | set(channels), key=lambda t: (arch.tile_kind_name(t[1]) != "compute", t))
    for pid, (col, row) in enumerate(tiles):
        kind = {"compute": "core", "mem": "memtile", "shim": "shim"}[arch.tile_kind_name(row)]
        slots: list[tuple[str, list]] = []
        calls = cores.get((col, row), [])
        if calls:
            slots += [("INSTR_EVENT_0", [(s, s + 1) for s, _ in calls]),
                      ("INSTR_EVENT_1", [(e, e + 1) for _, e in calls]), ("INSTR_VECTOR", _runs(calls))]
        ports = sorted(channels.get((col, row), {}).items(), key=lambda kv: (kv[0][0] != "s2mm", kv[0][1]))
        slots += [(f"PORT_RUNNING_{n}", _runs(spans)) for n, (_, spans) in enumerate(ports)]
        events.append({"name": "process_name", "ph": "M", "pid": pid,
                       "args": {"name": f"{kind}_trace for tile{row},{col}"}})
        for tid, (name, spans) in enumerate(slots[:_SLOTS]):
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
            for s, e in spans:
                events.append({"name": name, "ts": s, "ph": "B", "pid": pid, "tid": tid, "args": {}})
                events.append({"name": name, "ts": e, "ph": "E", "pid": pid, "tid": tid, "args": {}})
    return events


def aie_trace_path(path: str | Path) -> Path:
    """Where ``run design --trace t.json`` writes mlir-aie's shape: ``t.aie.json`` beside it."""
    p = Path(path)
    return p.with_name(p.stem + ".aie.json")


def write_aie_trace(ds, arch, path: str | Path) -> int:
    """Write ``aie_trace`` as mlir-aie's parser does (a JSON array); returns the B/E pairs written."""
    events = aie_trace(ds, arch)
    Path(path).write_text(json.dumps(events))
    return sum(1 for e in events if e["ph"] == "B")
