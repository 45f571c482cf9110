"""Users' measurements in: readers of the profiles users already have (AI Analyzer runs, mlir-aie
traces, GEMM sweep CSVs and harness logs, onnx-benchmark reports, a plain CSV), each into one
typed ``Profile``, and their alignment with fastsim's simulation of the same model, design or
GEMMs (``compare``). docs/compare.md describes every format."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .aie_trace import read_aie_trace
from .analyzer import read_analyzer
from .benchmark import read_benchmark
from .gemm_csv import read_gemm_csv, read_harness_log
from .plain import read_plain
from .profile import Profile, Row, bad, read_text

__all__ = ["FORMATS", "Profile", "Row", "read_profile", "detect"]

RAW_TRACE_WORD = re.compile(r"(0x)?[0-9a-fA-F]{8}")  # a 32-bit word of a raw trace.txt

# format -> reader; a new format is one module and one line here
FORMATS = {
    "analyzer": read_analyzer,
    "aie_trace": read_aie_trace,
    "gemm_csv": read_gemm_csv,
    "harness_log": read_harness_log,
    "onnx_benchmark": read_benchmark,
    "plain": read_plain,
}


def read_profile(path, fmt: str | None = None) -> Profile:
    """The profile at ``path`` (a file or an AI Analyzer run directory) in format ``fmt`` (a key
    of ``FORMATS``; None: told from the file). A malformed file is one ConfigError naming the
    file, the line (where the format has lines) and the field."""
    path = Path(path)
    if not path.exists():
        raise bad(path, 0, "path", str(path), "no such file or directory")
    if fmt is not None and fmt not in FORMATS:
        raise bad(path, 0, "format", fmt, f"one of {', '.join(FORMATS)}")
    return FORMATS[fmt or detect(path)](path)


def detect(path: Path) -> str:
    """The format of ``path`` from its shape: a directory is an AI Analyzer run; JSON by its keys;
    CSV by its header; other text by the harness's lines."""
    if path.is_dir():
        return "analyzer"
    text = read_text(path)
    if path.suffix.lower() == ".json" or text.lstrip()[:1] in ("[", "{"):
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise bad(path, 0, "json", path.name, "not valid JSON; name the format with --format") from None
        if isinstance(doc, list) or (isinstance(doc, dict) and "traceEvents" in doc):
            return "aie_trace"
        if isinstance(doc, dict) and "results" in doc:
            return "onnx_benchmark"
        raise bad(path, 0, "format", path.name, "JSON that is neither a trace (array of events) nor an "
                  "onnx-benchmark report (results.performance); name the format with --format")
    header = {h.strip() for h in (text.splitlines() or [""])[0].split(",")}
    if {"Name", "Type", "Execution Time.Cycles"} <= header:
        return "analyzer"
    if {"M", "K", "N", "avg_us"} <= header:
        return "gemm_csv"
    if header & {"op", "kernel"}:
        return "plain"
    if "Avg NPU matmul time" in text:
        return "harness_log"
    words = text.split()
    if words and all(RAW_TRACE_WORD.fullmatch(w) for w in words[:64]):
        raise bad(path, 1, "format", path.name, "a raw mlir-aie trace (trace.txt: hex packet words), which fastsim "
                  "does not decode; read it with mlir-aie's parse_trace.py (--input trace.txt --mlir aie.mlir "
                  "--output trace.json) and give fastsim the JSON")
    raise bad(path, 1, "format", path.name, f"not recognised; name it with --format ({', '.join(FORMATS)})")
