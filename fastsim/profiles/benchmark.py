"""AMD onnx-benchmark's ``report_performance.json``: ``results.performance.average_latency``
(milliseconds per inference) and ``results.performance.total_throughput`` (inferences per second);
a whole-model figure, compared with the simulated inference's total time."""
from __future__ import annotations

from pathlib import Path

from .profile import Profile, Row, bad, number, read_json


def read_benchmark(path: Path) -> Profile:
    doc = read_json(path)
    perf = doc.get("results") if isinstance(doc, dict) else None
    perf = perf.get("performance") if isinstance(perf, dict) else None
    if not isinstance(perf, dict):
        raise bad(path, 0, "results.performance", None, "missing: onnx-benchmark writes it with average_latency")
    if "average_latency" not in perf:
        raise bad(path, 0, "results.performance.average_latency", None, "missing: milliseconds per inference")
    ms = number(perf["average_latency"], path, 0, "results.performance.average_latency", lo=1e-12)
    if "total_throughput" in perf:
        number(perf["total_throughput"], path, 0, "results.performance.total_throughput")
    row = Row("model", "model", ms * 1e-3, None, str(path), 0)
    return Profile("onnx_benchmark", str(path), (row,), total_seconds=ms * 1e-3)
