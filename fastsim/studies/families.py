"""``fastsim optimize`` over several models: the method per model, then where their decisions differ.

A dataflow that wins on one family can lose on another (a mixture of experts' small per-expert
matmuls, a sliding window's short attention, an encoder's square attention), so the method's
results are segmented by family and by batch (the regimes carry the batch): each model gets its
own directory with the whole method (``optimize``), and the top-level report compares the plans
and the dataflow playbooks regime by regime, naming every op whose recommended style differs
between families.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import xarray as xr

from ..arch import NPU2, Arch
from ..llm import LlmStudy
from .dataflow import playbook
from .optimize import optimize
from .report import ms, table


def optimize_models(bases: list[LlmStudy], regimes=None, mix=None, arch: Arch = NPU2,
                    out: str | Path = "optimize", progress=None, levers: bool = True,
                    workers: int | None = 1) -> dict:
    """The method for each model into ``out/<model>/``, then ``out/report.md`` and
    ``out/comparison.json``: one section per family and where the playbooks differ (``levers``:
    as ``optimize``'s)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plans, books, families = {}, {}, {}
    for base in bases:
        model = base.model_config()
        folder = out / _folder(model.name)
        plans[model.name] = optimize(base, regimes, mix, arch, folder, progress, levers=levers, workers=workers)
        ds = xr.open_zarr(folder / "dataflow.zarr", consolidated=False).load()
        books[model.name], families[model.name] = playbook(ds), model.family
    comparison = {"models": {m: {"family": families[m], "folder": _folder(m)} for m in plans},
                  "regimes": compare_playbooks(books, families), "plans": plans}
    (out / "comparison.json").write_text(json.dumps(comparison, indent=1))
    (out / "report.md").write_text(_report(comparison, plans, books, arch))
    return comparison


def _folder(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def compare_playbooks(books: dict, families: dict) -> dict:
    """Per regime: each model's chosen point and best single style, and per op (by name, among
    the models that have it) the style each recommends; ``differs`` lists the ops whose style is
    not the same for every model that has them."""
    labels = sorted({g for b in books.values() for g in b["regimes"]})
    out = {}
    for g in labels:
        per_model = {m: b["regimes"][g] for m, b in books.items() if g in b["regimes"]}
        ops = sorted({op for r in per_model.values() for op in r["ops"]})
        styles = {op: {m: r["ops"][op]["style"] for m, r in per_model.items() if op in r["ops"]} for op in ops}
        out[g] = {"chosen": {m: r["chosen"] for m, r in per_model.items()},
                  "best_single_style": {m: r["baseline"] for m, r in per_model.items()},
                  "styles": styles,
                  "differs": [op for op, by in styles.items() if len(by) > 1 and len(set(by.values())) > 1]}
    return out


def _report(comparison: dict, plans: dict, books: dict, arch: Arch) -> str:
    models = comparison["models"]
    lines = [f"# Optimization report: {len(models)} models on {arch.name}", "",
             "The method (ablate → cuts → overlays → dataflow, `docs/tutorial.md`) ran once per model; each "
             "model's folder holds its own report, plan and evidence. Results are segmented by family and by "
             "batch (the regimes carry the batch), because a dataflow that wins on one family can lose on another.",
             "", "## Plans side by side", ""]
    rows = []
    for m, plan in plans.items():
        for g, r in plan["regimes"].items():
            p, d = r["predicted"], r["decisions"]
            rows.append([m, models[m]["family"], g, ms(r["baseline"]["seconds"]), ms(p["seconds"]),
                         f"{p['tokens_per_s']:,.1f}", d["top_class"], f"{p['dispatches']}", d["dataflow_point"]])
    lines += [table(["model", "family", "regime", "baseline ms", "plan ms", "tokens/s", "optimize first",
                     "dispatches", "dataflow"], rows), ""]
    lines += ["## Where the dataflow playbooks differ", ""]
    for g, r in comparison["regimes"].items():
        singles = ", ".join(f"{m}: {s.upper()}" for m, s in r["best_single_style"].items())
        lines.append(f"- **{g}**: best single style {singles}.")
        if not r["differs"]:
            lines.append("  Every op the models share gets the same style.")
        for op in r["differs"]:
            by = r["styles"][op]
            lines.append(f"  `{op}`: " + "; ".join(f"{s.upper()} for {', '.join(m for m in by if by[m] == s)}"
                                                   for s in sorted(set(by.values()))))
    lines += ["", "## Per family", ""]
    for m, info in models.items():
        lines += [f"### {m} ({info['family']})", "", f"Report: [{info['folder']}/report.md]({info['folder']}/report.md); "
                  f"dataflow playbook: [{info['folder']}/studies/dataflow.md]({info['folder']}/studies/dataflow.md).", ""]
        rules = books[m]["rules"]
        lines += [f"- {rule}" for rule in rules] or ["- no op changes style between this model's regimes"]
        lines.append("")
    return "\n".join(lines)
