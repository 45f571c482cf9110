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

``report.md`` and ``report.html`` are the memo (``memo.py``): the decisions with their numbers and
rejected alternatives, the biggest levers left simulated on the plan (``levers.py``), the latency
tails and what reproduces the run; their extra numbers are in plan.json under ``notes``.
"""
from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

from ..arch import NPU2, Arch
from ..cache import directory
from ..errors import ConfigError, SimulationError
from ..llm import LlmStudy, Precision, simulate_llm
from ..llm.run import llm_summary
from ..mapping.dispatch import cuts_of_text
from .dataflow import dataflow_prefetch
from .levers import fingerprint, latency_tails, what_if_calls, what_ifs
from .memo import memo
from .overlays import mix_regimes
from .parallel import Workers
from .regimes import parse_regimes
from .registry import SECTIONS, STEPS, STUDIES, write_report
from .whole_run import whole_run_search

__all__ = ["STEPS", "optimize", "plan_study", "study_from_json", "study_to_json"]


def plan_study(base: LlmStudy, regime, fusion: str, cut_text: str, pins: dict) -> LlmStudy:
    return replace(regime.study(base), fusion=fusion, cuts=cuts_of_text(cut_text), dataflow={**base.dataflow, **pins})


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
             progress=None, command: str | None = None, levers: bool = True, workers: int | None = 1) -> dict:
    """Run the four studies, write the directory, return the plan (as in plan.json).

    ``command`` is the line the memo's reproducibility block quotes (default: this call in Python);
    ``levers=False`` skips the what-ifs and latency tails (the memo says so); ``workers``
    processes run the studies at once, then the regimes' plans, then the what-ifs (``Workers``:
    the same results; None: one per core)."""
    regimes = parse_regimes(regimes)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda step, text: None)
    calls = {task: call for step in STEPS for task, call in STUDIES[step].step.tasks(base, regimes, mix, arch).items()}
    if levers:  # the baseline's latency tails need no study: they run beside them
        calls["latency"] = (latency_notes, (base, regimes, arch, None))
    # the overlays study runs its regimes' other layouts with every matmul's style pinned: the
    # dataflow study's designs for the same regimes. Workers share them through the disk tier
    # (``result_cache``); without one, one worker runs both studies and simulates them once
    shared = ("overlays", *(f"dataflow@{r.label}" for r in regimes if r in mix_regimes(mix)))
    with Workers(workers, len(calls) + 1) as pool:
        if pool.size > 1 and directory():  # a worker to spare simulates ahead for the longest task
            calls.update({f"prefetch@{r.label}": (dataflow_prefetch, (base, r, arch)) for r in regimes
                          if r.regime == "prefill"})
        done = pool.run(calls, say, phase="studies", together=() if directory() else (shared,))
        results = {step: _result(step, done, base, regimes, arch) for step in STEPS}
        say("plan", "simulating the plan")
        plan, studies = _plan(base, regimes, arch, results, pool)
        command = command or (f"fastsim.studies.optimize.optimize(LlmStudy(model={plan['inputs']['model']!r}), "
                              f"regimes={[r.label.replace('@', ':') for r in regimes]!r}, mix={mix!r}, "
                              f"arch={arch.name!r})")
        plan["notes"] = _notes(base, arch, studies, command, done.get("latency"), say, pool, regimes)
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    for name, ds in results.items():
        write_report(ds, out / "studies")
        ds.to_zarr(out / f"{name}.zarr", mode="w", zarr_format=2, consolidated=True)
    doc = memo(plan, results, plan["notes"], SECTIONS)
    (out / "report.md").write_text(doc.markdown())
    (out / "report.html").write_text(doc.html(out))
    say("done", str(out / "report.md"))
    return plan


def _result(step: str, done: dict, base: LlmStudy, regimes, arch: Arch):
    """The Dataset of a step from its tasks' answers (its one task's, unless it declares more)."""
    combine = STUDIES[step].step.result
    return done[step] if combine is None else combine(done, base, regimes, arch)


SUMMARY_KEYS = ("seconds", "tokens_per_s", "ddr_bytes", "energy_j", "dispatches", "fusion")


def _plan(base: LlmStudy, regimes, arch: Arch, results: dict, pool: Workers) -> tuple[dict, dict]:
    """The plan per regime (decisions combined, simulated as a whole, never slower than the
    baseline), and each regime's planned LlmStudy; the regimes are planned in ``pool`` at once."""
    plan = {"inputs": {"model": results["ablate"].attrs["model"], "arch": arch.name,
                       "weights": base.precision.weights, "kv": base.precision.kv,
                       "activations": base.precision.activations, "arch_definition": repr(arch),
                       "energy_table": {"pj_per_mac": dict(arch.pj_per_mac), "pj_per_byte": dict(arch.pj_per_byte)}},
            "regimes": {}}
    calls = {}
    for regime in regimes:
        label = regime.label
        decisions = {key: value for step in STEPS
                     for key, value in STUDIES[step].step.decisions(results[step], label).items()}
        fusion = str(results["dataflow"].fusion.sel(regime=label).values)
        calls[f"plan {label}"] = (plan_regime, (base, regime, arch, fusion, decisions))
    planned = pool.run(calls, phase="plan")
    studies = {}
    for regime in regimes:
        plan["regimes"][regime.label], studies[regime.label] = planned[f"plan {regime.label}"]
    return plan, studies


def plan_regime(base: LlmStudy, regime, arch: Arch, fusion: str, decisions: dict) -> tuple[dict, LlmStudy]:
    """One regime's plan entry (plan.json) and its planned study: the decisions combined and
    simulated as a whole run, the baseline kept where they combine slower, then the whole-run
    search seeded from it."""
    study = plan_study(base, regime, fusion, decisions["cuts"], decisions["dataflow_pins"])
    planned, unplanned = simulate_llm(study, arch), simulate_llm(regime.study(base), arch)
    predicted, baseline = llm_summary(planned), llm_summary(unplanned)
    kept = predicted["seconds"] > baseline["seconds"]
    if kept:  # decisions measured one at a time need not combine: never plan anything slower
        study, planned = regime.study(base), unplanned
    whole = whole_run_search(study, arch, seed=planned)  # kernels shared across ops where programs reload
    study, predicted = whole.study, llm_summary(whole.dataset)
    entry = {"study": study_to_json(study),
             "predicted": {k: predicted[k] for k in SUMMARY_KEYS},
             "baseline": {k: baseline[k] for k in SUMMARY_KEYS},
             "decisions": {**decisions, "kept_baseline": kept},
             "whole_run": whole.to_json()}
    return entry, study


def _notes(base: LlmStudy, arch: Arch, studies: dict, command: str, baseline_latency: dict | None, say,
           pool: Workers, regimes=()) -> dict:
    """What the memo adds to the studies: the levers (simulated on the plans) and the latency tails
    of the plans, beside those of the baseline (already sampled; None: ``levers=False``, none of
    them is run), what reproduces the run, and which of the arch's parameters are assumptions."""
    assumed = {k: str(v) for k, v in arch.notes.items() if "assum" in str(v).lower()}
    notes = {"reproduce": fingerprint(base, arch, command), "assumptions": len(assumed), "assumed": assumed}
    if baseline_latency is None:
        return notes
    say("levers", "simulating the what-ifs and the latency tails on the plan")
    calls = {**what_if_calls(studies, base, arch), "latency of the plan": (latency_notes, (base, regimes, arch, studies))}
    done = pool.run(calls, phase="levers")
    notes["levers"] = what_ifs(studies, base, arch, done)
    notes["latency"] = done["latency of the plan"]
    notes["latency_baseline"] = baseline_latency
    return notes


def latency_notes(base: LlmStudy, regimes, arch: Arch, plans: dict | None) -> dict:
    """The latency tails of the decode regime's batch (the prefill regime's prompt, else the
    study's), on ``plans`` (each regime's planned study, by label; None: the searched layouts, the
    baseline, which depends on no study and runs beside them), or why there are none."""
    decode = next((r for r in regimes if r.regime == "decode"), None)
    prefill = next((r for r in regimes if r.regime == "prefill"), None)
    if decode is None:
        return {"why": "no decode regime (per-token latency needs one)"}
    layouts = None
    if plans is not None:
        layouts = {r.regime: plans[r.label] for r in (decode, prefill) if r is not None and r.label in plans}
    try:
        return latency_tails(replace(base, batch=decode.batch), decode.tokens,
                             prefill.tokens if prefill else base.prompt, arch, layouts)
    except (ConfigError, SimulationError, ValueError) as e:
        return {"why": str(e).splitlines()[0]}
