"""AMD AI Analyzer run directories (Ryzen AI / VAIML flow): ``summary.csv`` with one row per
operator instance (``Name``, ``Type``, ``Execution Time.Cycles``; other columns ignored) and
``record_timer_*.json`` with the run's ``average_npu_time_usec`` and, where present, the NPU's
``clock_freq_mhz``. The field names are those of the AI Analyzer SDK's timing table and
performance summary; the layout fastsim reads is written down in docs/compare.md."""
from __future__ import annotations

from pathlib import Path

from .profile import Profile, Row, bad, csv_rows, number, read_json, read_text

COLUMNS = ("Name", "Type", "Execution Time.Cycles")


def read_analyzer(path: Path) -> Profile:
    """A run directory (its summary.csv and record_timer_*.json) or a summary.csv alone."""
    summary = path / "summary.csv" if path.is_dir() else path
    if not summary.is_file():
        raise bad(path, 0, "summary.csv", str(summary), "an AI Analyzer run directory must hold summary.csv")
    rows = []
    for line, cells in csv_rows(summary, read_text(summary), COLUMNS, extra_ok=True):
        if not cells["Name"]:
            raise bad(summary, line, "Name", "", "must name the operator instance")
        cycles = number(cells["Execution Time.Cycles"], summary, line, "Execution Time.Cycles")
        rows.append(Row(cells["Name"], "op", None, cycles, str(summary), line, op_type=cells["Type"]))
    if not rows:
        raise bad(summary, 2, "rows", 0, "no operator rows under the header")
    timers = sorted(path.glob("record_timer_*.json")) if path.is_dir() else []
    npu_s, clocks = [], []
    for timer in timers:
        seconds, clock = _timer(timer)
        npu_s.append(seconds)
        if clock is not None:
            clocks.append(clock)
    if len(set(clocks)) > 1:
        raise bad(timers[0], 0, "clock_freq_mhz", sorted(c / 1e6 for c in set(clocks)),
                  "the record_timer files state different clocks; compare one run at a time")
    total = sum(npu_s) / len(npu_s) if npu_s else None
    # average_npu_time_usec is the NPU's own time per inference, not the host's launch window
    return Profile("analyzer", str(path), tuple(rows), clocks[0] if clocks else None, total, "npu")


def _timer(path: Path) -> tuple[float, float | None]:
    """(average NPU seconds, clock Hz or None) of one record_timer file."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise bad(path, 1, "top level", type(doc).__name__, "must be a JSON object")
    if "average_npu_time_usec" not in doc:
        raise bad(path, 0, "average_npu_time_usec", None, "missing: the run's average NPU time in microseconds")
    us = number(doc["average_npu_time_usec"], path, 0, "average_npu_time_usec")
    clock = doc.get("clock_freq_mhz")
    if clock is not None:
        clock = number(clock, path, 0, "clock_freq_mhz", lo=1e-9) * 1e6
    return us * 1e-6, clock
