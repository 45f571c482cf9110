"""The figures README.md and docs/*.md quote, computed from fastsim's own outputs (issue 49.6).

    python bench/doc_figures.py             # quick figures (under a minute), written to docs/figures.json
    python bench/doc_figures.py --slow      # also the slow ones (a few minutes on 2 cores)
    python bench/doc_figures.py --check     # the docs' text against docs/figures.json, every problem listed

Each figure has a stable name, the command that reproduces it, and the places a doc prints it (a
pattern whose one group is the printed number, and the format the doc prints it with). Tiers:

- ``quick``: computed on every run (and by tests/test_doc_figures.py, which runs these commands);
- ``slow``: computed with ``--slow`` (a sweep of contexts, a latency sample, a prefill);
- ``validation``: read from ``fastsim/presets/validation.json``, which ``bench/validation.py`` writes
  together with docs/validation.md (15 minutes on 2 cores);
- ``measured``: a measurement of the VM it ran on (speed timings, whole ``optimize`` runs, large
  sweeps) or of a file the repository does not ship: kept as measured with its command, recorded
  in the JSON as "measured, not regenerated", never compared.

``--check`` compares each computed figure's printed form in the docs with the JSON's value at the
precision the doc prints; a measured figure only has to still be found where it is listed.

This script lives in bench/ beside the other scripts that write documentation figures
(``validation.py`` -> docs/validation.md, ``report.py`` -> docs/speed.md); the JSON lives beside
the docs it checks.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "figures.json"
VALIDATION = ROOT / "fastsim" / "presets" / "validation.json"
TIERS = ("quick", "slow", "validation", "measured")
NOT_REGENERATED = "measured, not regenerated"
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


@dataclass(frozen=True)
class Quote:
    """Where a doc prints a figure: ``pattern`` (whitespace-insensitive, one group: the figure as
    printed) in ``path``, printed with format spec ``fmt`` ("word": a small count spelled out)."""

    path: str
    pattern: str
    fmt: str = ""


@dataclass(frozen=True)
class Figure:
    """A number the docs quote. ``compute`` maps the command's result (a dict of the named JSON) to
    the value; measured figures have none."""

    name: str
    tier: str
    command: str
    quotes: tuple[Quote, ...]
    compute: Callable[[dict], float] | None = None
    note: str = ""


def printed(value, fmt: str) -> str:
    """``value`` as a doc prints it with ``fmt``."""
    if fmt == "word":
        return WORDS.get(int(value), str(int(value)))
    if fmt.endswith("d"):
        return format(int(value), fmt)
    return format(value, fmt)


def _doc_text(path: str) -> str:
    return " ".join((ROOT / path).read_text().split())  # a line break may fall anywhere in a sentence


# ---------------------------------------------------------------------------------------------
# the results figures are read from: a command's --json output, or a script's rows

_RESULTS: dict[str, dict] = {}


def cli_json(command: str) -> dict:
    """``command``'s JSON output (``fastsim`` run in this process), once per command."""
    if command not in _RESULTS:
        from click.testing import CliRunner

        from fastsim.cli import main

        args = shlex.split(command)
        assert args[0] == "fastsim", command
        out = CliRunner().invoke(main, args[1:])
        if out.exit_code != 0:
            raise RuntimeError(f"{command} failed: {out.output[-2000:]}")
        text = out.output[out.output.index("{") if out.output.lstrip()[:1] != "[" else out.output.index("["):]
        _RESULTS[command] = json.loads(text)
    return _RESULTS[command]


def _models(command: str) -> dict:
    from fastsim.llm.presets import MODELS

    return {"presets": len(MODELS), "families": len({m.family for m in MODELS.values()})}


def _kv_growth(command: str) -> dict:
    """examples/kv_growth.py's table rows, keyed by context (its bisection is left to the script)."""
    sys.path.insert(0, str(ROOT / "examples"))
    import kv_growth

    return {c: kv_growth.point(c) for c in (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131071)}


def _latency(command: str) -> dict:
    from click.testing import CliRunner

    from fastsim.cli import main

    out = CliRunner().invoke(main, shlex.split(command)[1:]).output
    rows = {}
    for key in ("per token", "first token"):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(key))
        rows[key] = [float(x.replace(",", "")) for x in re.findall(r"[\d,]+\.\d+", line)]
    return rows


def _pipeline_alternatives(command: str) -> dict:
    from fastsim.llm import LlmStudy, simulate_llm

    text = simulate_llm(LlmStudy(regime="prefill", prompt=512)).attrs["fusion_alternatives"]
    return {m[1]: float(m[2]) / 1e3 for m in re.finditer(r"(\S+) ([\d.]+) ms", text)}  # "KIND T ms; ..."


def _validation(command: str) -> dict:
    return json.loads(VALIDATION.read_text())


_READERS = {"models": _models, "kv_growth": _kv_growth, "latency": _latency, "pipeline": _pipeline_alternatives,
            "validation": _validation}


def result(command: str) -> dict:
    """What ``command`` gives: a fastsim command's JSON, or the named reader's result for a
    script (the reader is chosen by the command's tag in brackets)."""
    tag = re.search(r"\[(\w+)\]$", command)
    if tag is None:
        return cli_json(command)
    key = ("reader", command)
    if key not in _RESULTS:
        _RESULTS[key] = _READERS[tag[1]](command.removesuffix(tag[0]).strip())
    return _RESULTS[key]


# ---------------------------------------------------------------------------------------------
# the figures

GEMM = "fastsim run --json gemm --m 2048 --k 2048 --n 2048 --dtype bf16"
DECODE = "fastsim run --json llm --model llama-3.2-1b --context 4096"
MODELS_CMD = "fastsim models --json [models]"
KV = "python examples/kv_growth.py [kv_growth]"
LATENCY = "fastsim run llm --context 256 --prompt 64 --samples 500 --seed 3 [latency]"
PIPELINE = ("python -c \"from fastsim.llm import *; print(simulate_llm(LlmStudy(regime='prefill', "
            "prompt=512)).attrs['fusion_alternatives'])\" [pipeline]")
VAL = "python bench/validation.py [validation]"
ABLATE = "fastsim study ablate --regime decode:4096 --regime prefill:1024 --json"
WHOLE_RUN = "fastsim run --json llm --context 4096 --whole-run"
KV_STUDY = "fastsim study kv --context 16384 --context 32768 --json"
VAL_NOTE = "read from fastsim/presets/validation.json, written with docs/validation.md by bench/validation.py"


def _err(rows, key="as_built_error") -> list[float]:
    return [100 * abs(r[key]) for r in rows]


def _built(d) -> list[float]:
    return _err(d["rows"])


def _searched(d) -> list[float]:
    return _err(d["rows"], "searched_error")


def _kind(d, kind) -> list[dict]:
    return [r for r in d["rows"] if r["kind"] == kind]


def _all_but_worst(errors: list[float]) -> float:
    return sorted(errors)[-2]


def _families(d, kind) -> int:
    from fastsim.llm.presets import MODELS

    return len({MODELS[r["model"]].family for r in _kind(d, kind)})


def _gemv_within(d) -> float:
    return max(_err(_kind(d, "gemv")))


def _kv_per_token(rows) -> float:
    return (rows[32768]["kv_bytes"] - rows[16384]["kv_bytes"]) / 16384


def _pipeline_ms(alternatives: dict, key: str) -> float:
    return 1e3 * next(v for k, v in alternatives.items() if k.startswith(key))


_SUMMARY = r"median absolute error (\d+) %, worst (\d+) % over (\d+) measurements"
_SUMMARY_DOCS = ("README.md", "docs/guide.md", "docs/validation.md")


def _validation_figures() -> list[Figure]:
    def at(group: int) -> tuple[Quote, ...]:
        """The summary's group-th number (median, worst, count) in each doc that prints it."""
        parts = re.split(r"\(\\d\+\)", _SUMMARY)
        pattern = "".join(part + ("" if i == len(parts) - 1 else "(\\d+)" if i == group else "\\d+")
                          for i, part in enumerate(parts))
        return tuple(Quote(path, pattern, ".0f") for path in _SUMMARY_DOCS)

    return [
        Figure("validation.as_built.median_error_pct", "validation", VAL, at(0),
               lambda d: statistics.median(_built(d)), VAL_NOTE),
        Figure("validation.as_built.worst_error_pct", "validation", VAL, at(1), lambda d: max(_built(d)), VAL_NOTE),
        Figure("validation.measurements", "validation", VAL, at(2), lambda d: len(d["rows"]), VAL_NOTE),
        Figure("validation.searched.median_error_pct", "validation", VAL,
               (Quote("README.md", r"searched designs on the same rows: median absolute error (\d+) %", ".0f"),
                Quote("docs/guide.md", r"searched designs on the same rows: (\d+) %", ".0f"),
                Quote("docs/validation.md", r"searched, median absolute error (\d+) %", ".0f")),
               lambda d: statistics.median(_searched(d)), VAL_NOTE),
        Figure("validation.searched.worst_error_pct", "validation", VAL,
               (Quote("README.md", r"searched designs on the same rows: median absolute error \d+ %, worst (\d+) %",
                      ".0f"),
                Quote("docs/guide.md", r"searched designs on the same rows: \d+ %, worst (\d+) %", ".0f"),
                Quote("docs/validation.md", r"searched, median absolute error \d+ %, worst (\d+) %", ".0f")),
               lambda d: max(_searched(d)), VAL_NOTE),
        Figure("validation.decode.as_built_within_pct_all_but_worst", "validation", VAL,
               (Quote("README.md", r"Decode is within (\d+) % as built", ".0f"),),
               lambda d: _all_but_worst(_err(_kind(d, "decode"))), VAL_NOTE),
        Figure("validation.decode.rows_within", "validation", VAL,
               (Quote("README.md", r"Decode is within \d+ % as built in (\d+) of", "d"),),
               lambda d: len(_kind(d, "decode")) - 1, VAL_NOTE),
        Figure("validation.decode.rows", "validation", VAL,
               (Quote("README.md", r"Decode is within \d+ % as built in \d+ of (\d+) rows", "d"),),
               lambda d: len(_kind(d, "decode")), VAL_NOTE),
        Figure("validation.decode.families", "validation", VAL,
               (Quote("README.md", r"rows over (\w+) families", "word"),), lambda d: _families(d, "decode"), VAL_NOTE),
        Figure("validation.gemv.as_built_within_pct", "validation", VAL,
               (Quote("README.md", r"\(nothing double-buffered\) are within (\d+) %", ".0f"),), _gemv_within, VAL_NOTE),
    ]


def _quick_figures() -> list[Figure]:
    return [
        Figure("gemm_2048_bf16.cycles", "quick", GEMM,
               (Quote("docs/guide.md", r"cycles (\S+) time"),
                Quote("docs/guide.md", r"\| 2048³ \| bf16 \| [\d,]+ \| [\d.]+ \| ([\d,]+) \|")),
               lambda d: d["total_cycles"]),
        Figure("gemm_2048_bf16.time_us", "quick", GEMM,
               (Quote("docs/guide.md", r"time (\S+) us \(kernel", ",.1f"),),
               lambda d: 1e6 * d["seconds"]),
        Figure("gemm_2048_bf16.time_us_rounded", "quick", GEMM,
               (Quote("docs/guide.md", r"against (\S+) µs predicted as built", ",.0f"),),
               lambda d: 1e6 * d["seconds"]),
        Figure("gemm_2048_bf16.kernel_us", "quick", GEMM,
               (Quote("docs/guide.md", r"\(kernel (\S+) us \+ dispatch", ",.1f"),),
               lambda d: 1e6 * d["kernel_seconds"]),
        Figure("gemm_2048_bf16.peak_pct", "quick", GEMM,
               (Quote("docs/guide.md", r"Top/s \((\S+) % of \d+ Top/s peak\)", ".1f"),),
               lambda d: 100 * d["peak_fraction"]),
        Figure("gemm_2048_bf16.candidates_simulated", "quick", GEMM,
               (Quote("README.md", r"best of its space, (\d+) candidates simulated", "d"),),
               lambda d: d["search"]["simulated"]),
        Figure("models.presets", "quick", MODELS_CMD,
               (Quote("README.md", r"`models` \((\d+) preset models", "d"),
                Quote("docs/guide.md", r"`fastsim models` shows the (\d+) presets", "d")),
               lambda d: d["presets"]),
        Figure("models.families", "quick", MODELS_CMD,
               (Quote("README.md", r"preset models of (\d+) families", "d"),), lambda d: d["families"]),
        Figure("decode_llama_3_2_1b_4096.ms", "quick", DECODE,
               (Quote("docs/guide.md", r"compute saves only [\d.]+ ms of ([\d.]+) ms", ".2f"),),
               lambda d: 1e3 * d["seconds"]),
        Figure("decode_llama_3_2_1b_4096.program_reload_ms", "quick", DECODE,
               (Quote("docs/guide.md", r"program reloads in the decode step: ([\d.]+) ms", ".1f"),),
               lambda d: 1e3 * d["program_reload_seconds"]),
        Figure("decode_llama_3_2_1b_4096.kernel_shared_ops", "quick", DECODE,
               (Quote("docs/mapping.md", r"\(npu2\) (\d+) of \d+ matmul ops share a kernel", "d"),),
               lambda d: d["mapping_search"]["kernel_shared_ops"]),
        Figure("decode_llama_3_2_1b_4096.matmul_ops", "quick", DECODE,
               (Quote("docs/mapping.md", r"\(npu2\) \d+ of (\d+) matmul ops share a kernel", "d"),),
               lambda d: d["mapping_search"]["matmul_ops"]),
        Figure("decode_llama_3_2_1b_4096.weights_mb", "quick", DECODE,
               (Quote("docs/guide.md", r"simulated KV growth, ([\d.]+) MB /", ".1f"),),
               lambda d: d["weight_bytes"] / 1e6),
    ]


def _kv_row(context: int, col: int, fmt: str, value: Callable[[dict], float]) -> Figure:
    name = ("ms_per_token", "tokens_per_s", "weights_mb", "kv_mb", "attention_share_pct")[col]
    cells = [r"[^|]+"] * 5
    cells[col] = r"(\d+) %" if name.endswith("_pct") else r"([^|]+?)"
    pattern = rf"\| {context:,} \| " + r" \| ".join(cells) + r" \|"
    return Figure(f"kv_growth.{context}.{name}", "slow", KV, (Quote("docs/guide.md", pattern, fmt),),
                  lambda rows: value(rows[context]))


def _ablated(d: dict, var: str, regime: int, op_class: str | None = None) -> float:
    """``var`` of the ablation study's JSON (an xarray to_dict) at a regime and op class."""
    data = d["data_vars"][var]["data"][regime]
    return data if op_class is None else data[d["coords"]["op_class"]["data"].index(op_class)]


def _ablate_figures() -> list[Figure]:
    g = "docs/guide.md"

    def fig(name, pattern, fmt, value):
        return Figure(f"ablate_llama_3_2_1b.{name}", "slow", ABLATE, (Quote(g, pattern, fmt),), value)

    def ms(var, regime, op_class=None):
        return lambda d: 1e3 * _ablated(d, var, regime, op_class)

    def pct(var, regime, op_class):
        return lambda d: 100 * _ablated(d, var, regime, op_class)

    def exposed(regime):
        return lambda d: _ablated(d, "baseline_seconds", regime) - _ablated(d, "data_movement_seconds", regime)

    return [
        fig("decode.gemm_delta_ms", r"removing all of its compute saves only ([\d.]+) ms", ".2f",
            ms("delta_seconds", 0, "gemm")),
        fig("decode.baseline_ms", r"saves only [\d.]+ ms of ([\d.]+) ms \(", ".2f", ms("baseline_seconds", 0)),
        fig("decode.gemm_exposed_pct", r"ms \(([\d.]+) % of its kernel time is exposed; then cast", ".1f",
            pct("exposed_share", 0, "gemm")),
        fig("decode.softmax_delta_ms", r"and softmax ([\d.]+) ms\)", ".2f", ms("delta_seconds", 0, "softmax")),
        fig("decode.cast_delta_ms", r"dequantization inside gemm, ([\d.]+) ms", ".2f", ms("delta_seconds", 0, "cast")),
        fig("decode.every_class_ms", r"every class's compute at once ([\d.]+) ms", ".2f",
            lambda d: 1e3 * exposed(0)(d)),
        fig("prefill.softmax_delta_ms", r"then softmax \(([\d.]+) ms: the flash", ".1f", ms("delta_seconds", 1, "softmax")),
        fig("prefill.gemm_delta_ms", r"Prefill ranks gemm first \(([\d.]+) ms of", ".1f", ms("delta_seconds", 1, "gemm")),
        fig("prefill.baseline_ms", r"gemm first \([\d.]+ ms of ([\d.]+) ms", ".1f", ms("baseline_seconds", 1)),
        fig("prefill.gemm_exposed_pct", r"(\d+) % of gemm's kernel time is exposed", ".0f",
            pct("exposed_share", 1, "gemm")),
        fig("prefill.cast_delta_ms", r"inside it \(([\d.]+) ms\), then softmax", ".1f", ms("delta_seconds", 1, "cast")),
        fig("prefill.exposed_compute_ms", r"and ([\d.]+) ms \(\d+ %\) of the prefill is exposed", ".1f",
            lambda d: 1e3 * exposed(1)(d)),
        fig("prefill.exposed_compute_pct", r"and [\d.]+ ms \((\d+) %\) of the prefill is exposed", ".0f",
            lambda d: 100 * exposed(1)(d) / _ablated(d, "baseline_seconds", 1)),
    ]


def _slow_figures() -> list[Figure]:
    kv = []
    for context in (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131071):
        kv += [_kv_row(context, 0, ".2f", lambda s: 1e3 * s["seconds"]),
               _kv_row(context, 1, ".1f", lambda s: s["tokens_per_s"]),
               _kv_row(context, 3, ".0f", lambda s: s["kv_bytes"] / 1e6),
               _kv_row(context, 4, ".0f", lambda s: 100 * (s["by_class"].get("attention", 0)
                                                             + s["by_class"].get("softmax", 0)) / s["seconds"])]
    latency = [Figure(f"latency_example.{key.replace(' ', '_')}.{q}", "slow", LATENCY,
                      (Quote("docs/latency.md", rf"{key} " + r" / ".join(
                          "([\\d,.]+)" if i == n else "[\\d,.]+" for i in range(3)) + " ms", fmt),),
                      (lambda key, n: lambda d: d[key][n])(key, n))
               for key, fmt in (("per token", ",.3f"), ("first token", ",.1f")) for n, q in enumerate(("p50", "p95", "p99"))]
    return kv + latency + [
        Figure("kv_growth.kv_bytes_per_token_kb", "slow", KV,
               (Quote("docs/guide.md", r"MB / ([\d.]+) kB per token", ".1f"),), lambda rows: _kv_per_token(rows) / 1e3),
        Figure("kv_growth.closed_form_crossover", "slow", KV,
               (Quote("docs/guide.md", r"kB per token, give ([\d,]+)", ",.0f"),),
               lambda rows: rows[4096]["weight_bytes"] / _kv_per_token(rows)),
        *_ablate_figures(),
        Figure("whole_run_llama_3_2_1b_4096.ms", "slow", WHOLE_RUN,
               (Quote("docs/mapping.md", r"decode at 4k: ([\d.]+) ms, \d+ moves", ".2f"),),
               lambda d: 1e3 * d["whole_run"]["seconds"]),
        Figure("whole_run_llama_3_2_1b_4096.moves", "slow", WHOLE_RUN,
               (Quote("docs/mapping.md", r"decode at 4k: [\d.]+ ms, (\d+) moves", "d"),),
               lambda d: len(d["whole_run"]["moves"])),
        Figure("kv_study.llama_3_2_1b.crossover", "slow", KV_STUDY,
               (Quote("docs/guide.md", r"\(`--report DIR` draws it\): ([\d,]+) for Llama-3.2-1B", ",.0f"),),
               lambda d: d["data_vars"]["kv_crossover"]["data"][0][0]),
        Figure("pipeline_prefill_512.norm_qkv_pipeline_ms", "slow", PIPELINE,
               (Quote("docs/llm.md", r"`norm_qkv:pipeline` ([\d.]+) ms", ".1f"),),
               lambda d: _pipeline_ms(d, "norm_qkv:pipeline")),
        Figure("pipeline_prefill_512.groups_ms", "slow", PIPELINE,
               (Quote("docs/llm.md", r"against ([\d.]+) ms for the groups", ".1f"),),
               lambda d: _pipeline_ms(d, "groups:")),
    ]


def _measured(name: str, command: str, path: str, pattern: str, note: str = "") -> Figure:
    return Figure(name, "measured", command, (Quote(path, pattern),), note=note)


SPEED = "python bench/report.py"
STUDY_BEFORE_SHARING = "a study run before kernel sharing entered the default evaluation (commit 9761e2d)"
OPTIMIZE = "fastsim optimize --out opt/"


def _measured_figures() -> list[Figure]:
    vm = "a timing of the 2-core VM it ran on (docs/speed.md)"
    opt = ("a whole optimize or study run, before kernel sharing entered the default evaluation (commit 9761e2d): "
           "regenerate by running it, then update the doc")
    return [
        _measured("speed.gemm_2048_m_cycles_per_s", SPEED, "README.md", r"simulates at (\d+) M cycles/s", vm),
        _measured("speed.vs_reference", SPEED, "README.md", r"about ([\d,]+)× the pure-Python reference", vm),
        _measured("speed.two_threads", SPEED, "README.md", r"candidates run ([\d.]+)× faster on 2 threads", vm),
        _measured("speed.gemm_2048_search_s", SPEED, "README.md", r"candidates simulated\), takes ([\d.]+) s", vm),
        _measured("speed.decode_10k_sweep_s", "fastsim sweep sweeps/decode_10k.toml --out d.zarr", "README.md",
                  r"decode sweep runs in (\d+) s on 2 workers", vm),
        _measured("speed.decode_step_s", SPEED, "README.md", r"simulates a decode step in ([\d.]+(?:-[\d.]+)?) s", vm),
        _measured("speed.scalesim_s", SPEED, "README.md", r"ResNet-50 layers ([\d.]+) s", vm),
        _measured("guide.kv_growth_script_s", KV.removesuffix(" [kv_growth]"), "docs/guide.md",
                  r"`python examples/kv_growth.py` \((\d+) s", vm),
        _measured("guide.ablate_s", "fastsim study ablate --regime decode:4096 --regime prefill:1024 --report out/",
                  "docs/guide.md", r"--report out/ # (\d+) s", vm),
        _measured("guide.optimize_s", OPTIMIZE, "docs/guide.md", r"prefill:1024: (\d+) s on two cores", vm),
        _measured("optimize.decode_baseline_ms", OPTIMIZE, "docs/guide.md", r"decode@4096: baseline ([\d.]+) ms", opt),
        _measured("optimize.decode_plan_ms", OPTIMIZE, "docs/guide.md", r"decode@4096: baseline [\d.]+ ms -> plan ([\d.]+) ms",
                  opt),
        _measured("optimize.prefill_baseline_ms", OPTIMIZE, "docs/guide.md", r"prefill@1024: baseline ([\d.]+) ms", opt),
        _measured("cuts.llama_3_2_3b_prefill_sequence_words", "fastsim study cuts --model llama-3.2-3b --regime "
                  "prefill:1024", "docs/guide.md", r"a ([\d,]+)-word runtime sequence", opt),
        _measured("overlays.prefill_layout_decode_ms", "fastsim study overlays --mix 1024:128", "docs/guide.md",
                  r"the prefill layout runs decode in ([\d.]+) ms", STUDY_BEFORE_SHARING),
        _measured("overlays.decode_chain_ms", "fastsim study overlays --mix 1024:128", "docs/guide.md",
                  r"its own chain ([\d.]+) ms", STUDY_BEFORE_SHARING),
        _measured("optimize.cut_after_layer_0_ms", OPTIMIZE, "docs/guide.md", r"cut after layer 0: ([\d.]+) ms", opt),
        _measured("whole_run.before_sharing_ms", "fastsim run --json llm --context 4096 --whole-run",
                  "docs/mapping.md", r"op by op it was ([\d.]+) ms with", STUDY_BEFORE_SHARING),
        _measured("compression.ms_per_token", "fastsim run llm --weights bf16 --compression measured.json",
                  "docs/guide.md", r"# ([\d.]+ -> [\d.]+) ms/token",
                  "needs a model.safetensors the repository does not ship (docs/studies/compression.md)"),
    ]


def figures() -> list[Figure]:
    return _quick_figures() + _validation_figures() + _slow_figures() + _measured_figures()


# ---------------------------------------------------------------------------------------------
# generate and check


def generate(tiers=("quick", "validation")) -> dict:
    """Every figure of ``tiers`` computed, the others as docs/figures.json holds them (or as the
    docs print them, for measured figures)."""
    old = json.loads(OUT.read_text())["figures"] if OUT.is_file() else {}
    out = {}
    for f in figures():
        entry = {"tier": f.tier, "command": f.command.rsplit(" [", 1)[0], "quoted_in": sorted({q.path for q in f.quotes})}
        if f.note:
            entry["note"] = f.note
        if f.tier == "measured":
            m = re.search(f.quotes[0].pattern, _doc_text(f.quotes[0].path))
            entry.update(value=m[1] if m else None, status=NOT_REGENERATED)
        elif f.tier in tiers:
            entry["value"] = float(f.compute(result(f.command)))
        elif f.name in old:
            entry["value"] = old[f.name]["value"]
        else:
            entry["value"] = None
        out[f.name] = entry
    return out


def check(values: dict) -> list[str]:
    """Every place a doc prints a figure differently from ``values`` (or no longer prints it)."""
    problems = []
    for f in figures():
        v = values.get(f.name, {}).get("value")
        for q in f.quotes:
            found = re.findall(q.pattern, _doc_text(q.path))
            if not found:
                problems.append(f"{f.name}: not found in {q.path} (pattern {q.pattern!r})")
            elif f.tier != "measured" and v is not None:
                want = printed(v, q.fmt or ",d")
                problems += [f"{f.name}: {q.path} prints {got}, today's value is {want} ({f.command})"
                             for got in found if got.strip() != want]
    return problems


def write(values: dict) -> int:
    """Rewrite each figure the docs print with today's value (the group of each quote's pattern; a
    space in a pattern matches any run of whitespace, as the check reads the docs). Prose around a
    number is not rewritten: read the diff. Returns how many numbers changed."""
    changed = 0
    for f in figures():
        v = values.get(f.name, {}).get("value")
        if f.tier == "measured" or v is None:
            continue
        for q in f.quotes:
            want = printed(v, q.fmt or ",d")
            path = ROOT / q.path
            text = path.read_text()
            pattern = re.compile(q.pattern.replace(" ", r"\s+"))
            out, last = [], 0
            for m in pattern.finditer(text):
                if m.group(1).strip() != want:
                    out += [text[last:m.start(1)], want]
                    last, changed = m.end(1), changed + 1
            path.write_text("".join(out) + text[last:])
    return changed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--slow", action="store_true", help="also compute the slow figures")
    p.add_argument("--check", action="store_true", help="check the docs against docs/figures.json; compute nothing")
    p.add_argument("--write", action="store_true", help="rewrite the numbers the docs print from docs/figures.json "
                   "(compute nothing; read the diff: the prose around them is yours)")
    args = p.parse_args()
    if args.write:
        print(f"{write(json.loads(OUT.read_text())['figures'])} numbers rewritten")
    if not args.check and not args.write:
        values = generate(("quick", "validation", "slow") if args.slow else ("quick", "validation"))
        OUT.write_text(json.dumps({"generated_by": "bench/doc_figures.py", "figures": values}, indent=1) + "\n")
        print(f"{len(values)} figures -> {OUT.relative_to(ROOT)}")
    problems = check(json.loads(OUT.read_text())["figures"])
    print("\n".join(problems) or "every figure the docs print equals docs/figures.json")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
