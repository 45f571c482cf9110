"""mlir-aie hardware traces as its trace parser (``parse_trace.py``) writes them: Chrome trace
events in a JSON array (or an object's ``traceEvents``), one process per traced tile named by a
``process_name`` metadata event (``core_trace for tile2,0``: row, then column, as the parser
writes its locations), timestamps in cycles of that tile's timer.

A core's kernel time is what mlir-aie's own summary (``get_trace_summary.py``) measures: from an
``INSTR_EVENT_0`` begin to the next ``INSTR_EVENT_1`` begin, the events a kernel raises around its
work; each such pair is one call. Spans of events named ``*_STALL`` (lock, stream, memory, cascade
stalls) are summed per tile. Timers of different tiles are not synchronised, so no whole-design
time is read from a trace."""
from __future__ import annotations

import re
from pathlib import Path

from .profile import Profile, Row, bad, read_json

PROCESS = re.compile(r"^(\w+?)_trace for tile\(?\s*(\d+)\s*,\s*(\d+)\s*\)?$")


def read_aie_trace(path: Path) -> Profile:
    events = _events(path)
    tiles: dict[int, tuple[str, int, int]] = {}
    for i, e in enumerate(events):
        if e["name"] == "process_name" and e["ph"] == "M":
            name = e.get("args", {}).get("name") if isinstance(e.get("args"), dict) else None
            m = PROCESS.match(name) if isinstance(name, str) else None
            if m is None:
                raise bad(path, 0, f"event[{i}].args.name", name, "must read '<kind>_trace for tile<row>,<col>'")
            tiles[e["pid"]] = (m.group(1), int(m.group(3)), int(m.group(2)))  # kind, col, row
    rows, notes = [], []
    for pid, (kind, col, row) in sorted(tiles.items()):
        if kind != "core":
            continue
        calls, stalls = _core(path, [(i, e) for i, e in enumerate(events) if e["pid"] == pid])
        if not calls:
            notes.append(f"tile({col},{row}): no INSTR_EVENT_0 .. INSTR_EVENT_1 pair; no kernel time read")
            continue
        rows.append(Row(f"tile({col},{row})", "tile", None, sum(calls) / len(calls), str(path), 0, count=len(calls),
                        shape=(col, row), stalls=tuple(sorted(stalls.items()))))
    if not rows:
        raise bad(path, 0, "INSTR_EVENT_0/INSTR_EVENT_1", None, "no core tile of the trace has a pair of them: "
                  "the kernel must raise event0() before and event1() after its work")
    return Profile("aie_trace", str(path), tuple(rows), notes=tuple(notes))


def _events(path: Path) -> list[dict]:
    doc = read_json(path, "must be a JSON array of trace events")
    if isinstance(doc, dict):
        doc = doc.get("traceEvents")
    if not isinstance(doc, list):
        raise bad(path, 1, "top level", type(doc).__name__, "must be a JSON array of trace events (or traceEvents)")
    for i, e in enumerate(doc):
        if not isinstance(e, dict):
            raise bad(path, 0, f"event[{i}]", e, "must be an object")
        for key, kind in (("name", str), ("ph", str), ("pid", int)):
            if not isinstance(e.get(key), kind) or isinstance(e.get(key), bool):
                raise bad(path, 0, f"event[{i}].{key}", e.get(key), f"must be a {kind.__name__}")
        if e["ph"] in ("B", "E"):
            ts = e.get("ts")
            if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not 0 <= ts < 2 ** 64:
                raise bad(path, 0, f"event[{i}].ts", ts, "must be a timestamp in cycles, 0 to 2^64")
    return doc


def _core(path: Path, events: list[tuple[int, dict]]) -> tuple[list[float], dict[str, float]]:
    """Cycles of each kernel call (INSTR_EVENT_0 .. INSTR_EVENT_1) and stall cycles by event name."""
    calls, stalls, start, open_at = [], {}, None, {}
    last = -1.0
    for i, e in events:
        if e["ph"] not in ("B", "E"):
            continue
        if e["ts"] < last:
            raise bad(path, 0, f"event[{i}].ts", e["ts"], f"must not go back in time on its tile (after {last:g})")
        last = e["ts"]
        if e["ph"] == "B" and e["name"] == "INSTR_EVENT_0" and start is None:
            start = e["ts"]
        elif e["ph"] == "B" and e["name"] == "INSTR_EVENT_1" and start is not None:
            calls.append(e["ts"] - start)
            start = None
        if e["name"].endswith("_STALL"):
            if e["ph"] == "B":
                open_at.setdefault(e["name"], e["ts"])
            elif e["name"] in open_at:
                stalls[e["name"]] = stalls.get(e["name"], 0.0) + e["ts"] - open_at.pop(e["name"])
    return calls, stalls
