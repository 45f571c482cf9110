"""``fastsim optimize``: the optimization method's checklist in order, into one directory.

1. ``ablate``: which op classes are worth optimizing (whole-run NOOP deltas);
2. ``cuts``: where to cut into dispatches (the best feasible cut set per regime);
3. ``overlays``: one placement per regime or one for all, on a request mix, with residency;
4. ``dataflow``: the style per op (hybrid vs the best single style).

The plan per regime combines the decisions: the regime's searched fusion, the best cut set, and the
dataflow study's chosen point (its per-op pins). The plan is then simulated as a whole run (and
where the combination is slower than the baseline, the baseline is kept and says so): those are
the predicted numbers, written to ``plan.json`` with everything ``fastsim run llm --plan``
needs to replay them exactly (same inputs, same deterministic code path).
"""
from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

from ..arch import NPU2, Arch
from ..llm import LlmStudy, Precision, simulate_llm
from ..llm.run import llm_summary
from .ablate import ablate
from .cuts import cuts
from .dataflow import STYLES, dataflow
from .overlays import overlays
from .regimes import parse_regimes
from .report import ms, table, write_report

STEPS = ("ablate", "cuts", "overlays", "dataflow")


def _pins(ds_dataflow, regime_label: str) -> dict:
    """The dataflow pins of the regime's chosen point (per op for a hybrid, by class for a single
    style, none for the searched mapping)."""
    r = ds_dataflow.sel(regime=regime_label)
    chosen = str(r.chosen.values)
    if chosen in STYLES:
        return {"gemm": chosen, "attention": chosen}
    if chosen == "searched":
        return {}
    if chosen == "hybrid_latency":
        return {str(op): str(c) for op, c in zip(ds_dataflow.op.values, r.choice.values) if str(c)}
    return {}  # hybrid_energy chosen only off the latency-first rule: keep the search's


def plan_study(base: LlmStudy, regime, fusion: str, cut_text: str, pins: dict) -> LlmStudy:
    cut_set = tuple(int(c) for c in cut_text.split(",") if c)
    return replace(regime.study(base), fusion=fusion, cuts=cut_set, dataflow={**base.dataflow, **pins})


def study_to_json(study: LlmStudy) -> dict:
    d = asdict(study)
    d["cuts"] = None if study.cuts is None else list(study.cuts)
    d["noop"] = list(study.noop)
    if not isinstance(study.model, str):
        d["model"] = asdict(study.model)
    return d


def study_from_json(d: dict) -> LlmStudy:
    from ..llm.transformer import VectorCosts
    from ..llm.model import ModelConfig

    from ..llm.model import Experts
    from ..llm.routing import Routing

    d = dict(d)
    if isinstance(d.get("model"), dict):
        m = dict(d["model"])
        m["experts"] = Experts(**m["experts"]) if m.get("experts") else None
        for key in ("windows", "moe_layers"):
            m[key] = tuple(m.get(key, ()))
        d["model"] = ModelConfig(**m)
    precision = dict(d["precision"])
    precision["measured"] = tuple(tuple(x) for x in precision.get("measured", ()))
    d["precision"] = Precision(**precision)
    if isinstance(d.get("routing"), dict):
        r = d["routing"]
        d["routing"] = Routing(r["mode"], r["seed"], tuple(tuple(row) for row in r.get("histogram", ())))
    if isinstance(d.get("costs"), dict):
        d["costs"] = VectorCosts(**d["costs"])
    d["cuts"] = None if d.get("cuts") is None else tuple(d["cuts"])
    d["noop"] = tuple(d.get("noop", ()))
    return LlmStudy(**d)


def optimize(base: LlmStudy = LlmStudy(), regimes=None, mix=None, arch: Arch = NPU2, out: str | Path = "optimize",
             progress=None) -> dict:
    """Run the four studies in order, write the directory, return the plan (as in plan.json)."""
    regimes = parse_regimes(regimes)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda step, text: None)
    results = {}
    say("ablate", "ranking op classes by whole-run NOOP deltas")
    results["ablate"] = ablate(base, regimes, arch)
    say("cuts", "searching dispatch cuts (dynamic programming over layer boundaries)")
    results["cuts"] = cuts(base, regimes, arch)
    say("overlays", "placing each regime (request mix)")
    results["overlays"] = overlays(base, mix, arch)
    say("dataflow", "choosing a style per op")
    results["dataflow"] = dataflow(base, regimes, arch)
    say("plan", "simulating the plan")
    plan = {"inputs": {"model": results["ablate"].attrs["model"], "arch": arch.name,
                       "weights": base.precision.weights, "kv": base.precision.kv,
                       "activations": base.precision.activations, "arch_definition": repr(arch)},
            "regimes": {}}
    for regime in regimes:
        label = regime.label
        fusion = str(results["dataflow"].fusion.sel(regime=label).values)
        cut_text = str(results["cuts"].best_cuts.sel(regime=label).values)
        pins = _pins(results["dataflow"], label)
        study = plan_study(base, regime, fusion, cut_text, pins)
        predicted = llm_summary(simulate_llm(study, arch))
        baseline = llm_summary(simulate_llm(regime.study(base), arch))
        kept = predicted["seconds"] > baseline["seconds"]
        if kept:  # decisions measured one at a time need not combine: never plan anything slower
            study, predicted = regime.study(base), baseline
        plan["regimes"][label] = {
            "study": study_to_json(study),
            "predicted": {k: predicted[k] for k in ("seconds", "tokens_per_s", "ddr_bytes", "energy_j",
                                                    "dispatches", "fusion")},
            "baseline": {k: baseline[k] for k in ("seconds", "tokens_per_s", "ddr_bytes", "energy_j",
                                                  "dispatches", "fusion")},
            "decisions": {"top_class": str(results["ablate"].top_class.sel(regime=label).values),
                          "cuts": cut_text, "dataflow_point": str(results["dataflow"].chosen.sel(regime=label).values),
                          "dataflow_pins": pins,
                          "kept_baseline": kept}}
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    for name, ds in results.items():
        write_report(ds, out / "studies")
        ds.to_zarr(out / f"{name}.zarr", mode="w", zarr_format=2, consolidated=False)
    (out / "report.md").write_text(_report(plan, results))
    say("done", str(out / "report.md"))
    return plan


def _report(plan: dict, results: dict) -> str:
    i = plan["inputs"]
    lines = [f"# Optimization report: {i['model']} on {i['arch']} ({i['weights']} weights, {i['kv']} KV)", "",
             "The method's steps in order (`docs/tutorial.md`): ablate → cuts → overlays → dataflow. Each "
             "decision links to its evidence below; the plan is simulated as a whole and replays exactly with "
             "`fastsim run llm --plan plan.json`.", "", "## Plan vs baseline (the searched layout, default cuts)", ""]
    rows = []
    for label, r in plan["regimes"].items():
        b, p, d = r["baseline"], r["predicted"], r["decisions"]
        rows.append([label, ms(b["seconds"]), ms(p["seconds"]), f"{100 * (1 - p['seconds'] / b['seconds']):.2f} %",
                     f"{b['energy_j'] * 1e3:.4g} → {p['energy_j'] * 1e3:.4g}", d["top_class"],
                     f"{p['dispatches']} [{d['cuts']}]", d["dataflow_point"]])
    lines += [table(["regime", "baseline ms", "plan ms", "saved", "mJ", "optimize first", "dispatches [cuts]",
                     "dataflow"], rows), ""]
    for step in STEPS:
        text = (Path("studies") / f"{step}.md").as_posix()
        lines += [f"## {STEPS.index(step) + 1}. {step}", "", f"Evidence: [{text}]({text}), "
                  f"![{step}](studies/{step}.png), data `{step}.zarr`.", ""]
    return "\n".join(lines)
