"""The one typed form every profile reader returns: rows of measured time, each with the file and
line it came from, so that a comparison can point back at the user's own file."""
from __future__ import annotations

import json

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError, shown

KINDS = ("op", "kernel", "tile", "gemm", "model")  # what a row names (see Row.kind)


@dataclass(frozen=True)
class Row:
    """One measurement: ``name`` is an ONNX node name (kind op), a kernel symbol (kernel), a core
    tile ``tile(col,row)`` (tile), a GEMM shape ``MxKxN dtype`` (gemm) or the whole run (model).
    Exactly one of ``seconds`` and ``cycles`` is set (the unit the file measures in); ``count``
    is how many calls the figure covers (``seconds``/``cycles`` are per call)."""

    name: str
    kind: str
    seconds: float | None
    cycles: float | None
    source: str
    line: int
    op_type: str = ""  # the profile's own type word (AI Analyzer's Conv2DBf16, ...)
    count: int = 1
    shape: tuple = ()  # gemm: (M, K, N, dtype_in); tile: (col, row)
    pins: tuple = ()  # gemm: (("tile", (m, k, n)), ("cols", c)) as the measured design was built
    stalls: tuple = ()  # tile: ((event name, cycles), ...) stall cycles the trace shows

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source

    def seconds_at(self, clock_hz: float) -> float:
        """Seconds per call: measured seconds, or cycles at ``clock_hz``."""
        return self.seconds if self.seconds is not None else self.cycles / clock_hz


@dataclass(frozen=True)
class Profile:
    """What a reader found in one file or run directory: ``fmt`` (a key of ``FORMATS``), the rows,
    the clock the file states (AI Analyzer's clock_freq_mhz; None: not stated) and the whole
    run's measured seconds where the file has one (average NPU time, average latency), and whether
that figure includes the host's dispatch (``total_scope``)."""

    fmt: str
    path: str
    rows: tuple[Row, ...]
    clock_hz: float | None = None
    total_seconds: float | None = None
    total_scope: str = "host"  # "host": timed around the host's call (dispatch included); "npu": on the NPU only
    notes: tuple[str, ...] = field(default=())  # rows skipped, and why

    def kinds(self) -> set[str]:
        return {r.kind for r in self.rows}


def bad(source, line: int, field_name: str, value, allowed: str):
    """The one clean error of a malformed profile: file, line, field, the value and what is allowed."""
    where = f"{source}:{line}" if line else str(source)
    return ConfigError([f"{where}: {field_name} = {shown(value)}: {allowed}"], "profile")


def number(text, source, line: int, field_name: str, *, lo: float = 0.0, integer: bool = False):
    """``text`` as a finite number >= ``lo`` (an integer for ``integer``), else ``bad``."""
    value = text
    if isinstance(text, str):
        try:
            value = int(text.strip()) if integer else float(text.strip())
        except ValueError:
            raise bad(source, line, field_name, text, f"must be {'an integer' if integer else 'a number'} "
                      f">= {lo:g}") from None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and (not integer or isinstance(value, int))
    try:
        ok = ok and math.isfinite(float(value)) and value >= lo
    except OverflowError:  # an integer past any float: no time or size a part measures
        ok = False
    if not ok:
        raise bad(source, line, field_name, text, f"must be {'an integer' if integer else 'a number'} >= {lo:g}")
    return value


def read_json(path: Path, shape: str = "must be a JSON object"):
    """The file's JSON document, or ``bad`` naming the line (or the nesting) it cannot read."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise bad(path, e.lineno, "json", e.msg, shape) from None
    except RecursionError:
        raise bad(path, 0, "json", "nesting", "nested too deeply to read") from None


def read_text(path: Path) -> str:
    """The file's text, or ``bad`` naming why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise bad(path, 0, "encoding", e.reason, "must be UTF-8 text") from None
    except OSError as e:
        raise bad(path, 0, "file", str(path), f"cannot be read ({e.strerror or e})") from None


def csv_rows(path: Path, text: str, required: tuple[str, ...], optional: tuple[str, ...] = (),
             extra_ok: bool = False) -> list[tuple[int, dict]]:
    """The data rows of a CSV with a header line: (line number, column -> text). Every required
    column must be in the header; unknown columns are refused unless ``extra_ok`` (formats whose
    writers add columns of their own)."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if header is None:
            raise bad(path, 1, "header", "", f"the file is empty; the header must name {', '.join(required)}")
        header = [h.strip() for h in header]
        for col in required:
            if col not in header:
                raise bad(path, 1, "header", ",".join(header), f"must have the column {col!r}")
        if not extra_ok:
            for col in header:
                if col not in required + optional:
                    raise bad(path, 1, f"column {col!r}", col, f"unknown; allowed: {', '.join(required + optional)}")
        if len(set(header)) != len(header):
            raise bad(path, 1, "header", ",".join(header), "names a column twice")
        out = []
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise bad(path, line, "row", ",".join(cells), f"must have {len(header)} cells, as the header")
            out.append((line, {h: c.strip() for h, c in zip(header, cells)}))
    except csv.Error as e:
        raise bad(path, reader.line_num, "csv", str(e), "must be comma-separated text") from None
    return out
