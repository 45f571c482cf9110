"""GEMM measurements: the community sweep CSV (``M,K,N,m,k,n,dtype_in,dtype_out,cols,avg_us,
avg_gflops,tops,pct_peak,status``: one row per GEMM shape, ``m,k,n`` the core's tile, ``cols`` the
array columns used, ``avg_us`` the mean NPU time) and the lines mlir-aie's matmul test harnesses
print (``Avg NPU matmul time: X us``, ``Avg NPU gflops: Y``), with the shape taken from the last
``M x K x N`` (or ``MxKxN``) the log printed before them."""
from __future__ import annotations

import csv
import re
from pathlib import Path

from .profile import Profile, Row, bad, csv_rows, number, read_text

COLUMNS = ("M", "K", "N", "m", "k", "n", "dtype_in", "dtype_out", "cols", "avg_us", "avg_gflops", "tops",
           "pct_peak", "status")
# the dtype words sweep scripts and harnesses write -> fastsim's dtype names
DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "i8": "int8", "int8": "int8", "i16": "int16", "int16": "int16",
          "i32": "int32", "int32": "int32", "f32": "f32", "fp32": "f32", "float32": "f32"}
PASSED = ("ok", "pass", "passed", "success")
TIME = re.compile(r"Avg NPU matmul time:\s*([^\s]+)\s*us")
SHAPE = re.compile(r"(?<![\w.])(\d+)\s*x\s*(\d+)\s*x\s*(\d+)(?![\w.])")


def dtype_of(text: str, source, line: int, field_name: str) -> str:
    if text.lower() not in DTYPES:
        raise bad(source, line, field_name, text, f"one of {', '.join(sorted(DTYPES))}")
    return DTYPES[text.lower()]


def gemm_name(m: int, k: int, n: int, dtype: str) -> str:
    return f"{m}x{k}x{n} {dtype}"


def read_gemm_csv(path: Path) -> Profile:
    rows, notes = [], []
    for line, c in csv_rows(path, read_text(path), COLUMNS):
        if c["status"].lower() not in PASSED:
            notes.append(f"{path}:{line}: status {c['status']!r}: not a passed run, skipped")
            continue
        size = [number(c[x], path, line, x, lo=1, integer=True) for x in ("M", "K", "N")]
        tile = [number(c[x], path, line, x, lo=1, integer=True) for x in ("m", "k", "n")]
        cols = number(c["cols"], path, line, "cols", lo=1, integer=True)
        dtype = dtype_of(c["dtype_in"], path, line, "dtype_in")
        dtype_of(c["dtype_out"], path, line, "dtype_out")
        us = number(c["avg_us"], path, line, "avg_us", lo=1e-12)
        rows.append(Row(gemm_name(*size, dtype), "gemm", us * 1e-6, None, str(path), line,
                        op_type=f"{c['dtype_in']}->{c['dtype_out']}", shape=(*size, dtype),
                        pins=(("tile", tuple(tile)), ("cols", cols))))
    if not rows:
        raise bad(path, 2, "rows", 0, "no passed GEMM run under the header")
    return Profile("gemm_csv", str(path), tuple(rows), notes=tuple(notes))


def read_harness_log(path: Path, dtype: str = "bf16") -> Profile:
    """Each ``Avg NPU matmul time`` line is one measurement of the last shape printed before it;
    the log names no dtype, so ``dtype`` (the CLI's --dtype) says it."""
    rows, shape = [], None
    for line, text in enumerate(read_text(path).splitlines(), 1):
        if (s := SHAPE.search(text)) and "Avg NPU" not in text:
            shape = tuple(int(x) for x in s.groups())
        if (t := TIME.search(text)) is None:
            continue
        us = number(t.group(1), path, line, "Avg NPU matmul time", lo=1e-12)
        if shape is None or min(shape) < 1:
            raise bad(path, line, "shape", shape, "no 'M x K x N' line before this time: the log must print the "
                      "GEMM's size first")
        rows.append(Row(gemm_name(*shape, dtype), "gemm", us * 1e-6, None, str(path), line, shape=(*shape, dtype)))
    if not rows:
        raise bad(path, 0, "Avg NPU matmul time", None, "no such line: not an mlir-aie matmul harness log")
    return Profile("harness_log", str(path), tuple(rows))


def write_gemm_csv(records, path) -> Path:
    """GEMM runs (dicts of ``COLUMNS``: fastsim's simulated runs, ``Comparison.records``) in the
    community sweep CSV, so that a simulated sweep reads back as a profile and diffs against a
    measured one; numbers to 6 significant digits."""
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        for r in records:
            w.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in r.items()})
    return path
