"""Regenerate docs/validation.md: fastsim's predictions against public measurements of real designs.

    python bench/validation.py            # about 5 minutes cold on 2 cores; reruns reuse the search cache

Fidelity rule: none of these numbers sets a parameter. Parameters come from one-core, one-DMA,
one-dispatch micro-benchmarks (fastsim/arch.py cites each); the rows below only report the error.

Each row is predicted twice, by the same commands a user types (run in-process with ``--json``):
*as built*, with the file under ``examples/as_built/`` that describes the measured implementation
(each choice with its source line), and *searched*, with no overlay (fastsim's own best design and
default weight format), which shows the gain fastsim claims over what was built. A measurement
whose implementation the as-built format cannot describe at all is listed apart, with its searched
prediction only, and counts in neither summary.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "validation.md"
# its machine-readable twin, shipped with the package: the optimize memo quotes it (studies/memo.py)
RECORDS = ROOT / "fastsim" / "presets" / "validation.json"
SUSPECT_OVER = 0.25  # errors above this get a suspected mechanism and the micro-benchmark to settle it
sys.path.insert(0, str(ROOT / "bench"))

from validation_rows import AB, ROWS, Row, check_roles  # noqa: E402

def _value(row: Row, summary: dict) -> float:
    """The predicted quantity in the row's unit, with the same timing scope as the measurement."""
    seconds = summary["kernel_seconds"] if row.scope == "kernel" else summary["seconds"]
    rates = {"tokens/s": "tokens_per_s", "inferences/s": "inferences_per_s"}
    if row.unit == "tokens/s" and row.counted_tokens:  # padded rows simulated, the measured tokens counted
        return row.counted_tokens / seconds
    if row.unit in rates:
        return summary[rates[row.unit]]
    return seconds * {"s": 1.0, "ms": 1e3, "us": 1e6}[row.unit]


def _command(row: Row, as_built: bool) -> tuple:
    """``fastsim run`` arguments of one prediction (workload options after the subcommand)."""
    if as_built and row.as_built_args:
        return ("run", "--json", *row.as_built_args)
    head, rest = (row.args[:3], row.args[3:]) if row.args[0] == "--arch" else (row.args[:1], row.args[1:])
    if as_built and "--out-dtype" in rest and _file_sets_out_dtype(row.as_built):
        i = rest.index("--out-dtype")  # the workload's output dtype, which the file states with its source
        rest = rest[:i] + rest[i + 2:]
    return ("run", "--json", *head, *rest, *(("--overlay", row.as_built, *row.as_built_extra) if as_built else ()))


def _file_sets_out_dtype(path: str) -> bool:
    from fastsim.mapping.overlay import load_as_built

    return "out_dtype" in dict(load_as_built(ROOT / path).gemm)


def _run(args: tuple) -> tuple[tuple, dict | str]:
    """The JSON summary of ``fastsim ARGS``, or the error it printed (run in a worker process)."""
    from click.testing import CliRunner

    from fastsim.cli import main

    os.chdir(ROOT)
    out = CliRunner().invoke(main, [_zoo_file(a) if a.startswith("zoo:") else a for a in args])
    line = next((ln for ln in out.output.splitlines() if ln.startswith("{")), None)
    if out.exit_code == 0 and line:
        return args, json.loads(line)
    return args, (out.output.strip().splitlines() or [repr(out.exception)])[-1].removeprefix("Error: ")


def _zoo_file(arg: str) -> str:
    """``zoo:NAME``: the network fastsim.onnx.zoo builds (ResNet-50, MobileNetV2, fp or QDQ int8),
    written once to a temporary file (its weights zero: fastsim reads shapes and types only)."""
    from fastsim.onnx.zoo import save

    path = Path(tempfile.gettempdir()) / f"fastsim_validation_{arg[4:]}.onnx"
    if not path.exists():  # two workers may write it at once: each its own file, then an atomic rename
        mine = path.with_suffix(f".{os.getpid()}.tmp")
        save(arg[4:], str(mine))
        os.replace(mine, path)
    return str(path)


def _predict(rows: list[Row]) -> dict:
    """Every distinct command's result, two at a time (this machine's cores)."""
    commands = {_command(r, True) for r in rows if r.describable} | {_command(r, False) for r in rows}
    # longest first: the prefills and long-context steps, so that the two workers finish together
    order = sorted(commands, key=lambda a: ("prefill" not in a, "llm" not in a, a))
    with ProcessPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(_run, order))


def _fmt(x: float, unit: str) -> str:
    return f"{x:,.4g} {unit}"


def _err(predicted, measured) -> float:
    return predicted / measured - 1


def main() -> None:
    check_roles(ROWS)
    t0 = time.perf_counter()
    results = _predict(ROWS)
    table, apart, built_err, searched_err, records = [], [], [], [], []
    for r in ROWS:
        searched = results[_command(r, False)]
        s_val = _value(r, searched) if isinstance(searched, dict) else None
        a = results[_command(r, True)] if r.describable else "not describable: " + r.why_not
        if not isinstance(a, dict) or s_val is None:
            why = a if isinstance(a, str) else searched
            s_text = "refused" if s_val is None else f"{_fmt(s_val, r.unit)} ({100 * _err(s_val, r.measured):+.0f} %)"
            apart.append(f"- {r.source}, {r.part}, {r.workload}: measured {_fmt(r.measured, r.unit)}; as built: "
                         f"{'`' + r.as_built + '` refused by fastsim: ' if r.as_built else ''}{why}; searched "
                         f"{s_text}.")
            continue
        a_val = _value(r, a)
        ea, es = _err(a_val, r.measured), _err(s_val, r.measured)
        built_err.append(abs(ea))
        searched_err.append(abs(es))
        suspect = r.suspect if abs(ea) > SUSPECT_OVER else ""
        records.append(_record(r, a_val, ea, s_val, es))
        table.append(f"| {r.source} | {r.part} | {r.workload} | {_fmt(r.measured, r.unit)} ({r.scope}) | "
                     f"{_fmt(a_val, r.unit)} | {100 * ea:+.0f} % | {_fmt(s_val, r.unit)} | {100 * es:+.0f} % | "
                     f"`{r.as_built_label}`: {r.built} | {suspect} |")
        print(table[-1][:160], flush=True)
    elapsed = time.perf_counter() - t0
    OUT.write_text(_document(table, apart, built_err, searched_err, elapsed, _gemv_lines(results),
                             _split_lines(records)))
    RECORDS.write_text(json.dumps({"generated_by": "bench/validation.py", "document": "docs/validation.md",
                                   "rows": records}, indent=1) + "\n")
    print(f"as built: median {100 * statistics.median(built_err):.0f} %, worst {100 * max(built_err):.0f} % "
          f"over {len(built_err)}; searched: median {100 * statistics.median(searched_err):.0f} %, worst "
          f"{100 * max(searched_err):.0f} %; {elapsed:.0f} s -> {OUT}")


def _record(r: Row, a_val: float, ea: float, s_val: float, es: float) -> dict:
    """One table row as data: what was measured, on which part, and both predictions' errors."""
    llm = r.args[0] == "llm"
    return {"kind": r.kind, "source": r.source, "part": r.part, "workload": r.workload,
            "model": r.args[r.args.index("--model") + 1] if llm else "", "arch": "npu2" if llm else _family(r.args[1]),
            "measured": r.measured, "unit": r.unit, "scope": r.scope, "as_built": a_val, "as_built_error": ea,
            "searched": s_val, "searched_error": es, "role": r.kind_role, "train": r.train, "sets": r.sets}


def _family(arch_name: str) -> str:
    """The preset a part is built on (strix -> npu2, hawk_point -> npu1): what a plan's arch names."""
    from fastsim.arch import PARTS

    part = PARTS.get(arch_name.split(":")[0])
    return part.base.name if part else arch_name


def _gemv_lines(results: dict) -> str:
    """Fixed cost and rate of the K = 2048 GEMV rows, measured and as built: a least-squares line of
    time against the bytes of A."""
    import numpy as np

    rows = [r for r in ROWS if r.kind == "gemv" and r.args[6] == "2048"]
    mb = np.array([2 * int(r.args[6]) * int(r.args[8]) / 2 ** 20 for r in rows])
    fits = []
    for label, us in (("measured", [r.measured for r in rows]),
                      ("as built", [_value(r, results[_command(r, True)]) for r in rows])):
        slope, intercept = np.polyfit(mb, us, 1)
        fits.append(f"{label} {intercept:.0f} us + {slope:.1f} us/MiB ({2 ** 20 / slope / 1e3:.0f} GB/s)")
    return "; ".join(fits)


def _stats(errors: list[float]) -> str:
    if not errors:
        return "none"
    return (f"median {100 * statistics.median(errors):.0f} %, worst {100 * max(errors):.0f} % "
            f"over {len(errors)}")


def _source_family(source: str) -> str:
    """The publisher of a measurement: a leave-one-source-out group."""
    for family in ("mlir-air kernel_registry", "mlir-air", "FastFlowLM", "iree-amd-aie", "IRON"):
        if family in source:
            return family
    return source.split(" ")[0]


def _split_lines(records: list[dict]) -> list[str]:
    """As-built errors by role under the fidelity rule (train rows apart from held-out ones) and by
    source: each source's rows, and the held-out error of every other source's."""
    def errs(rows):
        return [abs(r["as_built_error"]) for r in rows]

    train = [r for r in records if r["train"]]
    held = [r for r in records if not r["train"]]
    lines = ["## Train and held-out rows", "",
             "A component row (one kernel or one op on the array) may set a kernel parameter; it is then a "
             "train row and its error is not evidence. Whole-workload rows never set one. The kernel model's "
             "own train rows are one-tile micro-benchmarks (docs/kernel_model.md, docs/vector_kernels.md), "
             "none of them a row of this table.", "",
             f"- train rows: {_stats(errs(train))}"
             + ("".join(f"\n  - {r['source']}, {r['workload']}: sets {r['sets']}" for r in train)),
             f"- held-out component rows: {_stats(errs([r for r in held if r['role'] == 'component']))}",
             f"- held-out whole-workload rows: {_stats(errs([r for r in held if r['role'] == 'workload']))}",
             "", "| source | rows | trains | its rows, as built | held-out rows of every other source |",
             "|---|---:|---:|---|---|"]
    for family in sorted({_source_family(r["source"]) for r in records}):
        mine = [r for r in records if _source_family(r["source"]) == family]
        others = [r for r in held if _source_family(r["source"]) != family]
        lines.append(f"| {family} | {len(mine)} | {sum(r['train'] for r in mine)} | {_stats(errs(mine))} | "
                     f"{_stats(errs(others))} |")
    return [*lines, ""]


def _document(table, apart, built_err, searched_err, elapsed, gemv, split) -> str:
    med, worst = statistics.median(built_err), max(built_err)
    s_med, s_worst = statistics.median(searched_err), max(searched_err)
    return "\n".join([
        "# Validation: predictions against public measurements",
        "",
        "Regenerate with `python bench/validation.py` (it rewrites this file). None of these measurements "
        "sets a parameter: parameters come from one-core, one-DMA and one-dispatch micro-benchmarks cited in "
        "`fastsim/arch.py`, and whole workloads only report the error.",
        "",
        "Each measurement is predicted twice. **As built**: the measured implementation described by a file "
        "under `examples/as_built/` (its weight format, dispatches, fusion, datapath, tiles, each with its "
        "source line; `docs/as_built.md`), what the file leaves open searched. **Searched**: no overlay, "
        "fastsim's own best design with its default weight format (int4, bf16 scales per 128): the gain "
        "fastsim claims over what was built. Error = predicted / measured - 1 in the row's unit (a "
        "positive error on a rate and a negative one on a time both mean fastsim predicts faster than "
        "measured). Timing "
        "scope follows the measurement: rows whose measurement excludes the dispatch compare `run gemm`'s "
        "`kernel_seconds`, the others `seconds` (one dispatch included; the kernel registry's "
        "'kernel-only' times are of this kind: the host wall time of one synchronous kernel call and its "
        "wait, `python/air/backend/xrt.py:868-885`, buffer syncs excluded); LLM rows compare tokens/s "
        "or seconds of the pass.",
        "",
        f"**Summary: as built, median absolute error {100 * med:.0f} %, worst {100 * worst:.0f} % over "
        f"{len(built_err)} measurements; searched, median absolute error {100 * s_med:.0f} %, worst "
        f"{100 * s_worst:.0f} % over the same {len(searched_err)}.**",
        "",
        "| source | part | workload | measured | as built | error | searched | error | as built: what the "
        "implementation does, what the file cannot say | suspected mechanism and the micro-benchmark that "
        f"would settle it (as-built errors over {100 * SUSPECT_OVER:.0f} %) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *table,
        "",
        *(["## Measurements the as-built format cannot describe (in neither summary)", "", *apart, ""]
          if apart else []),
        *split,
        "## Notes",
        "",
        "- Sources: mlir-air is `Xilinx/mlir-air` (`programming_examples/`; kernel registry tables measured "
        "with `run.py --perf-iters`, 'kernel-only' (one synchronous dispatch each) after 10 warm-ups; GEMM "
        "rows are the method the registry's default builds (drain below M*K*N = 4e9, fused-cast above); GEMV "
        "host-timed per run in turbo mode); "
        "FastFlowLM rows are `FastFlowLM/FastFlowLM` `docs/benchmarks/llama3_results.md` of v0.9.30 "
        "(docs.fastflowlm.com), Ryzen AI 7 350, decode 'starting @' each context and prefill as prompt "
        "tokens / `prefill()` time; its as-built facts come from its open headers (`src/model_list.json`, "
        "`src/include/...`), its kernels being closed.",
        "- Every XDNA2 part (Strix, Strix Point, Strix Halo, Krackan) is simulated with the `npu2` preset "
        "(8 columns, its clock); power modes (turbo, FLM 'Performance', Default) are not modelled.",
        "- Left out: FastFlowLM v0.1.3 figures (its part is not stated and v0.9.30 measures the same model "
        "1.76x faster: never mix versions); Qwen2.5-3B, Phi-4-mini, Qwen3.5 and Gemma-4 tables (no preset; "
        "Qwen3.5 and Gemma-4 layers are not modelled, and their configs are not written here without a "
        "checked source); IRON Llama-3.2-1B (179 dispatches per token, not described); DDR and vector-op "
        "figures that set or bound parameters (`fastsim/arch.py`).",
        f"- GEMV rows with K = 2048, time against the MiB of A read: {gemv}.",
        "- mlir-air's decode figures: the dual-channel weight feed (the current default build) where its "
        "README gives it, else its headline figure.",
        f"- Generated in {elapsed:.0f} s on this machine ({os.cpu_count()} cores, two simulations at a time; "
        "fastsim's disk result cache as found: a rerun reads back what an earlier run simulated, "
        "`FASTSIM_CACHE=0` times it cold).",
        "",
    ])


if __name__ == "__main__":
    main()
