"""The plain CSV for everything else: ``op,measured_s`` (ONNX node names, seconds per run) or
``kernel,cycles`` (kernel symbols, cycles per call); either name column with either figure, and an
optional ``count`` of calls the figure averages over (docs/compare.md, "Plain CSV")."""
from __future__ import annotations

from pathlib import Path

from .profile import Profile, Row, bad, csv_rows, number, read_text

NAME_COLUMNS = {"op": "op", "kernel": "kernel"}  # column -> Row.kind
FIGURE_COLUMNS = ("measured_s", "cycles")


def read_plain(path: Path) -> Profile:
    text = read_text(path)
    head = text.splitlines()[0].split(",") if text.strip() else []
    head = [h.strip() for h in head]
    name_col = next((c for c in NAME_COLUMNS if c in head), "op")
    figure = next((c for c in FIGURE_COLUMNS if c in head), "measured_s")
    rows = []
    seen = {}
    for line, cells in csv_rows(path, text, (name_col, figure), ("count",)):
        name = cells[name_col]
        if not name:
            raise bad(path, line, name_col, name, "must name the op or kernel")
        if name in seen:
            raise bad(path, line, name_col, name, f"given twice (also line {seen[name]}); one row per name")
        seen[name] = line
        value = number(cells[figure], path, line, figure)
        count = number(cells["count"], path, line, "count", lo=1, integer=True) if cells.get("count") else 1
        rows.append(Row(name, NAME_COLUMNS[name_col], value if figure == "measured_s" else None,
                        value if figure == "cycles" else None, str(path), line, count=count))
    if not rows:
        raise bad(path, 2, "rows", 0, "the file has a header but no measurements")
    return Profile("plain", str(path), tuple(rows))
