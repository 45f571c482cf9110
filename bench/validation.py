"""Regenerate docs/validation.md: fastsim's predictions against public whole-workload measurements.

    python bench/validation.py            # a few minutes (long-context 8B decode steps dominate)

Fidelity rule: none of these numbers sets a parameter. Parameters come from one-core, one-DMA,
one-dispatch micro-benchmarks (fastsim/arch.py cites each); the rows below only report the error.
"""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastsim.arch import NPU1, NPU2  # noqa: E402
from fastsim.mapping import baseline_mapping  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "docs" / "validation.md"
FLM = "FastFlowLM llama3_results, NPU (FLM)"


@dataclass(frozen=True)
class Row:
    source: str
    part: str
    workload: str
    measured: float
    unit: str  # "us", "ms", "tokens/s" or "GB/s"
    predict: object  # () -> predicted value in ``unit``
    suspect: str = ""  # the modelled mechanism to suspect when the error is large


def _gemm_us(m, k, n, dtype, arch, cols=None, rows=None, mapping=None):
    """One dispatch of the GEMM: the searched mapping, or ``mapping`` (the design that was measured)."""
    def run():
        from fastsim.mapping import Pins, matmul_design, search
        from fastsim.simulation import simulate
        from fastsim.workloads.gemm import Gemm

        op = Gemm(m, k, n, dtype).matmul()
        if mapping is None:
            cycles = search(op, arch, Pins(cols=cols, rows=rows), top=6).best_cycles
        else:
            cycles = int(simulate(matmul_design(op, mapping, arch)).total_cycles[0])
        return (cycles / arch.clock_hz + arch.dispatch_overhead_s) * 1e6
    return run


def _decode_tps(model, context, arch=NPU2):
    def run():
        from fastsim.llm import LlmStudy, simulate_llm

        return float(simulate_llm(LlmStudy(model=model, regime="decode", context=context), arch).tokens_per_s)
    return run


def _read_gbps(arch=NPU2):
    def run():
        from fastsim.studies.bandwidth import bandwidth

        ds = bandwidth(arch, sizes=(65536,), total_bytes=1 << 20, channels=(2,))
        return float(ds.bytes_per_s.sel(column="all", direction="read", channels=2, size_bytes=65536)) / 1e9
    return run


DECODE_SUSPECT = ("decode is weight-streaming bound: sustained DDR bandwidth under a compute program "
                  "(the arch uses the memcpy figure) and the int4 weight format (g128 bf16 scales assumed)")
ROWS = [
    Row("amd/IRON #55", "Strix Halo (npu2)", "GEMM 2048x2048x2048 bf16, whole array", 24679.0, "us",
        _gemm_us(2048, 2048, 2048, "bf16", NPU2, mapping=baseline_mapping(NPU2)),
        "the measured design is IRON's whole_array (simulated here: output-stationary 64x64x64 tiles on "
        "8x4 cores); suspects: its host-side runtime sequence and synchronisation, which fastsim does not "
        "model, and the bf16->bfp16 conversion cost (assumed 1/32 cycle per element)"),
    Row("iree-amd-aie #1198 (76-97 ms per 100 runs)", "Strix (npu2)", "matmul 512x512x512 int8, one core",
        0.865, "ms", lambda: _gemm_us(512, 512, 512, "int8", NPU2, cols=1, rows=1)() / 1e3,
        "compiler-generated single-core kernel well below the hand-tuned kernel efficiency"),
    Row("iree-amd-aie #1198 (152-227 ms per 100 runs)", "Phoenix (npu1)", "matmul 512x512x512 bf16, one core",
        1.895, "ms", lambda: _gemm_us(512, 512, 512, "bf16", NPU1, cols=1, rows=1)() / 1e3,
        "compiler-generated single-core kernel; Phoenix clock (1.0 GHz assumed)"),
    Row("atassis/xdna-engine roofline doc", "Krackan (npu2)", "pure NPU DDR read, all columns", 52.7, "GB/s",
        _read_gbps(), "DDR cap (the memcpy measurement counts both directions at once)"),
    Row(FLM, "XDNA2 laptop (npu2)", "Llama-3.2-1B decode at 1k context", 36.7, "tokens/s",
        _decode_tps("llama-3.2-1b", 1024), DECODE_SUSPECT),
    Row(FLM, "XDNA2 laptop (npu2)", "Llama-3.2-1B decode at 8k context", 29.6, "tokens/s",
        _decode_tps("llama-3.2-1b", 8192), DECODE_SUSPECT),
    Row(FLM, "XDNA2 laptop (npu2)", "Llama-3.2-1B decode at 32k context", 17.7, "tokens/s",
        _decode_tps("llama-3.2-1b", 32768), DECODE_SUSPECT + "; KV layout and attention kernel at long context"),
    Row(FLM, "XDNA2 laptop (npu2)", "Llama-3.2-3B decode at 1k context", 16.1, "tokens/s",
        _decode_tps("llama-3.2-3b", 1024), DECODE_SUSPECT),
    Row(FLM, "XDNA2 laptop (npu2)", "Llama-3.2-3B decode at 32k context", 7.0, "tokens/s",
        _decode_tps("llama-3.2-3b", 32768), DECODE_SUSPECT + "; KV layout and attention kernel at long context"),
    Row(FLM, "XDNA2 laptop (npu2)", "Llama-3.1-8B decode at 1k context", 7.6, "tokens/s",
        _decode_tps("llama-3.1-8b", 1024), DECODE_SUSPECT),
    Row(FLM.replace("NPU (FLM)", "NPU (Ryzen AI SW 1.4, NPU-only)"), "XDNA2 laptop (npu2)",
        "Llama-3.2-1B decode at 1k context, Ryzen AI SW", 18.6, "tokens/s", _decode_tps("llama-3.2-1b", 1024),
        "a different software stack on the same part: fastsim models one mapping, not the stack's overheads"),
]


def main() -> None:
    lines, errors = [], []
    t0 = time.perf_counter()
    for r in ROWS:
        predicted = float(r.predict())
        err = (predicted - r.measured) / r.measured
        errors.append(abs(err))
        lines.append(f"| {r.source} | {r.part} | {r.workload} | {r.measured:,.4g} {r.unit} | "
                     f"{predicted:,.4g} {r.unit} | {100 * err:+.0f} % | {r.suspect if abs(err) > 0.25 else ''} |")
        print(lines[-1], flush=True)
    median, worst = statistics.median(errors), max(errors)
    text = "\n".join([
        "# Validation: predictions against public measurements",
        "",
        "Regenerate with `python bench/validation.py` (it rewrites this file). None of these measurements "
        "sets a parameter: parameters come from one-core, one-DMA and one-dispatch micro-benchmarks cited "
        "in `fastsim/arch.py`, and whole workloads only report the error. Predictions use the presets as "
        "shipped (no calibration), each workload's searched mapping and fastsim's defaults (int4 weights with "
        "bf16 scales per 128, bf16 KV and activations for the LLMs).",
        "",
        f"**Summary: median absolute error {100 * median:.0f} %, worst {100 * worst:.0f} % over {len(ROWS)} "
        f"measurements.**",
        "",
        "| source | part | workload | measured | predicted | error | suspect mechanism (errors over 25 %) |",
        "|---|---|---|---|---|---|---|",
        *lines,
        "",
        "Notes:",
        "- FastFlowLM rows: docs.fastflowlm.com/benchmarks/llama3_results.html (decode tokens/s at each "
        "context). The page does not name its test part; FastFlowLM's published test systems are "
        "XDNA2 laptop parts (Strix / Krackan class, 8 columns), modelled by the `npu2` preset.",
        "- Single-core rows are whole compiled matmuls (data movement included), not the kernel "
        "micro-benchmarks that set kernel efficiency.",
        "- The DDR read row compares with the bandwidth harness reading on every column at once "
        "(`fastsim study bandwidth`).",
        f"- Generated in {time.perf_counter() - t0:.0f} s.",
        "",
    ])
    OUT.write_text(text)
    print(f"median {100 * median:.1f} %, worst {100 * worst:.1f} % -> {OUT}")


if __name__ == "__main__":
    main()
