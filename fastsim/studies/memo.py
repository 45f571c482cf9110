"""The optimize memo: ``report.md`` and ``report.html`` of ``fastsim optimize``, written for a colleague.

A summary paragraph (what to change, the gain per regime, how far to trust it), one section per
step of the method with its finding in sentences and the rejected alternatives with their numbers,
the plan against the baseline, the biggest levers left (simulated), the latency tails and what
reproduces the run. Every number is read from the run's plan and Datasets; the sentences only
arrange them.
"""
from __future__ import annotations

import math

import numpy as np

from .document import Document
from .levers import NARROWER, WIDER
from .report import ms

STEPS = ("ablate", "cuts", "overlays", "dataflow")


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def saved(before_s: float, after_s: float) -> str:
    """'12.3 % faster' or '4.0 % slower'."""
    change = 1 - after_s / before_s
    if change == 0:
        return "no change"
    size = 100 * abs(change)
    return (f"{size:.1f} %" if size >= 1 else f"{size:.2g} %") + (" faster" if change > 0 else " slower")


def dispatches(n: int) -> str:
    return f"{n} dispatch{'' if n == 1 else 'es'}"


def memo(plan: dict, results: dict, notes: dict) -> Document:
    """The memo's blocks. ``notes``: what ``optimize`` adds to the studies (``levers``, ``latency``,
    ``reproduce``, ``assumptions``), as stored in plan.json."""
    i = plan["inputs"]
    doc = Document(f"Optimization memo: {i['model']} on {i['arch']} ({i['weights']} weights, {i['kv']} KV)")
    _summary(doc, plan, results, notes)
    doc.heading("Plan vs baseline (the searched layout, default cuts)")
    _plan_table(doc, plan)
    for n, (step, section) in enumerate(zip(STEPS, (_ablate, _cuts, _overlays, _dataflow)), 1):
        doc.heading(f"{n}. {step}")
        section(doc, results[step])
        doc.paragraph(f"Evidence: [studies/{step}.md](studies/{step}.md), data `{step}.zarr`.")
        doc.image(f"{step}: figure of the study", f"studies/{step}.png")
    doc.heading(f"{len(STEPS) + 1}. whole-run mapping")
    _whole_run(doc, plan)
    _levers(doc, plan, notes.get("levers"))
    _latency(doc, notes.get("latency"))
    _reproduce(doc, notes["reproduce"])
    return doc


def _summary(doc: Document, plan: dict, results: dict, notes: dict) -> None:
    doc.heading("Summary")
    changes = []
    for label, r in plan["regimes"].items():
        b, p, d = r["baseline"]["seconds"], r["predicted"]["seconds"], r["decisions"]
        if d["kept_baseline"]:
            changes.append(f"**{label}**: keep the searched layout ({ms(b)} ms); the combined decisions were slower")
            continue
        if p == b:
            changes.append(f"**{label}**: keep the searched layout ({ms(b)} ms, {dispatches(r['predicted']['dispatches'])},"
                           f" fusion `{r['predicted']['fusion']}`): no decision beats it")
            continue
        changes.append(f"**{label}**: {_decision(r)}: {ms(b)} ms -> {ms(p)} ms per pass (**{saved(b, p)}**)")
    text = "What to change. " + "; ".join(changes) + ". " + _overlay_verdict(results["overlays"])
    best = _best_levers(plan, notes.get("levers"))
    if best:
        text += " Biggest lever left, " + "; ".join(best) + "."
    doc.paragraph(text)
    doc.paragraph("Confidence: " + _confidence(plan, notes))


def _decision(r: dict) -> str:
    d, p = r["decisions"], r["predicted"]
    cuts = f"cut after layers [{d['cuts']}] ({dispatches(p['dispatches'])})" if d["cuts"] else "one dispatch"
    return f"{cuts}, dataflow {d['dataflow_point']}, fusion `{p['fusion']}`"


def _confidence(plan: dict, notes: dict) -> str:
    """How far the numbers carry: simulated not measured, the search budget, the arch's assumptions,
    and the gain against the latency spread."""
    rep = notes["reproduce"]
    budget = rep["search_budget"]
    text = ("simulated, not measured; each plan was simulated as a whole (not summed from the studies) and "
            "replays exactly (`fastsim run llm --plan plan.json`). ")
    text += ("Every matmul's mapping is proven the best of its space. " if budget == "exact" else
             f"The mapping search stopped after {budget} candidates per matmul (not proven optimal). ")
    text += f"{notes['assumptions']} of the arch's parameters are assumptions, not measurements (its notes)."
    lat = notes.get("latency")
    if lat and "token_latency_s" in lat:
        p50, _, p99 = lat["token_latency_s"]
        gains = [f"{label} {saved(r['baseline']['seconds'], r['predicted']['seconds'])}"
                 for label, r in plan["regimes"].items()]
        text += (f" Per-token latency varies by {pct(p99 - p50, p50)} from p50 to p99 under the variance model, "
                 f"against plan gains of {', '.join(gains)}.")
    return text


def _plan_table(doc: Document, plan: dict) -> None:
    rows = []
    for label, r in plan["regimes"].items():
        b, p, d = r["baseline"], r["predicted"], r["decisions"]
        rows.append([label, ms(b["seconds"]), ms(p["seconds"]), saved(b["seconds"], p["seconds"]),
                     f"{b['energy_j'] * 1e3:.4g} -> {p['energy_j'] * 1e3:.4g}", f"{p['tokens_per_s']:.4g}",
                     f"{p['dispatches']} [{d['cuts']}]", d["dataflow_point"], d["top_class"]])
    doc.table(["regime", "baseline ms", "plan ms", "change", "energy mJ", "plan tokens/s", "dispatches [cuts]",
               "dataflow", "optimize first"], rows)
    kept = [label for label, r in plan["regimes"].items() if r["decisions"]["kept_baseline"]]
    if kept:
        doc.paragraph(f"Kept the baseline for {', '.join(kept)}: decisions measured one at a time did not combine "
                      "into a faster run.")


def _ablate(doc: Document, ds) -> None:
    for g in ds.regime.values:
        r = ds.sel(regime=g)
        base, moving = float(r.baseline_seconds), float(r.data_movement_seconds)
        present = sorted((c for c in ds.op_class.values if int(r["rank"].sel(op_class=c)) > 0),
                         key=lambda c: int(r["rank"].sel(op_class=c)))
        ranked = ", ".join(f"{c} {ms(float(r.delta_seconds.sel(op_class=c)))} ms "
                           f"({100 * float(r.share.sel(op_class=c)):.2f} %)" for c in present[:3])
        top = str(r.top_class.values)
        t = r.sel(op_class=top)
        text = (f"**{g}**: the pass takes {ms(base)} ms; with every class's compute removed it still takes "
                f"{ms(moving)} ms, so {pct(moving, base)} of it is data movement and removing all compute would "
                f"save at most {ms(base - moving)} ms. Ranked by time saved: {ranked}. Decision: optimize "
                f"**{top}** first; {_exposed(float(t.exposed_share))} of its kernel time "
                f"({ms(float(t.compute_seconds))} ms) is exposed.")
        others = [c for c in present if c not in (top, "cast")]
        if others:
            busy = max(others, key=lambda c: float(r.compute_seconds.sel(op_class=c)))
            x = r.sel(op_class=busy)
            text += (f" Rejected: {busy}, the busiest other class ({ms(float(x.compute_seconds))} ms of kernel time), "
                     f"would save only {ms(float(x.delta_seconds))} ms ({_exposed(float(x.exposed_share))} exposed).")
        doc.paragraph(text)


def _exposed(share: float) -> str:
    return "n/a" if math.isnan(share) else f"{100 * share:.1f} %"


def _cuts(doc: Document, ds) -> None:
    for g in ds.regime.values:
        r = ds.sel(regime=g)
        best = str(r.best_cuts.values)
        n_best = 1 + (len(best.split(",")) if best else 0)
        b, d = float(r.best_seconds), float(r.default_seconds)
        where = f"cut after layers [{best}]" if best else "no cut"
        text = (f"**{g}**: {dispatches(n_best)}, {where}: {ms(b)} ms, against {ms(d)} ms for the "
                f"default greedy cut [{r.default_cuts.values}] ({saved(d, b)}).")
        layers = [int(v) for v in r.boundary_after_layer.values if int(v) >= 0]
        for j, layer in enumerate(layers):
            x = r.isel(boundary=j)
            cost = {k: float(x[f"boundary_{k}_seconds"]) for k in ("write_out", "read_back", "host_round_trip",
                                                                  "weight_reload", "program_reload", "net")}
            net = cost["net"]
            text += (f" The boundary after layer {layer} costs {ms(cost['write_out'])} ms of activations written out, "
                     f"{ms(cost['read_back'])} ms read back, {ms(cost['host_round_trip'])} ms of host round trip and "
                     f"{ms(cost['weight_reload'])} ms of weight reload; it relieves {x.boundary_relieves.values} "
                     f"(program reloads {ms(cost['program_reload'])} ms): net {ms(net)} ms"
                     f"{' (it pays for itself)' if net < 0 else ''}.")
        alternatives = [(int(k), float(r.seconds.sel(dispatches=k))) for k in ds.dispatches.values if int(k) != n_best]
        fits = sorted((s, k) for k, s in alternatives if not np.isnan(s))[:3]
        if fits:
            text += " Rejected: " + "; ".join(f"{dispatches(k)} {ms(s)} ms (+{ms(s - b)} ms)" for s, k in fits) + "."
        unfit = sum(np.isnan(s) for _, s in alternatives)
        if unfit:
            text += f" {unfit} other dispatch count(s) do not fit on chip."
        doc.paragraph(text)


def _overlays(doc: Document, ds) -> None:
    a = ds.attrs
    own = "; ".join(f"{g}: fusion `{ds.fusion.sel(regime=g).values}`, {ds.residency_reason.sel(regime=g).values}, "
                    f"{ms(float(ds.seconds.sel(regime=g, overlay=g)))} ms" for g in ds.regime.values)
    mix = {str(p): float(v) for p, v in zip(ds.plan.values, ds.mix_seconds.values)}
    best = a["best_single"] if a["best_single"] and not a["gain_seconds"] > 0 else "per_regime"
    doc.paragraph(f"Request mix (prompt:new tokens:batch:weight) {a['mix']}. Each regime's own overlay: {own}. "
                  f"Switching overlays costs {ms(a['switch_seconds'])} ms ({a['switch_change']}), "
                  f"{a['switches_per_request']} times per request. {_overlay_verdict(ds)}")
    rejected = [f"{p} {'cannot run every regime' if np.isnan(v) else f'{ms(v)} ms (+{ms(v - mix[best])} ms)'}"
                for p, v in mix.items() if p != best]
    if rejected:
        doc.paragraph(f"Chosen: {best} ({ms(mix[best])} ms for the mix). Rejected: " + "; ".join(rejected) + ".")
    differs = [str(c) for c, d in zip(ds.op_class.values, ds.binding_differs.values) if d]
    if differs:
        doc.paragraph("Bound by different resources in different regimes (one placement cannot serve both): " +
                      "; ".join(f"{c} (" + ", ".join(f"{g} {ds.bound_by.sel(regime=g, op_class=c).values}"
                                                    for g in ds.regime.values) + ")" for c in differs) + ".")


def _overlay_verdict(ds) -> str:
    a, gain = ds.attrs, ds.attrs["gain_seconds"]
    if not a["best_single"] or math.isnan(gain):
        return "No single overlay runs every regime: per-regime overlays are needed."
    if gain > 0:
        return (f"Per-regime overlays save {ms(gain)} ms per request mix over the best single overlay "
                f"({a['best_single']}), switches included.")
    if gain == 0:
        return f"One overlay ({a['best_single']}) is the best for every regime: nothing to switch."
    return (f"One overlay ({a['best_single']}) serves the request mix best: per-regime overlays would lose "
            f"{ms(-gain)} ms to the switches.")


def _dataflow(doc: Document, ds) -> None:
    from .dataflow import playbook

    book = playbook(ds)
    for g, r in book["regimes"].items():
        pts = r["points"]
        chosen, base = pts[r["chosen"]], pts[r["baseline"]]
        moved = [f"{op} {v['style'].upper()} (saves {ms(v['gain_seconds'])} ms)" for op, v in r["ops"].items()
                 if v["style"] != r["baseline"] and v["gain_seconds"] > 0]
        text = (f"**{g}** (M = {r['m_rows']} rows): the best single style is {r['baseline'].upper()} "
                f"({ms(base['seconds'])} ms, {base['energy_j'] * 1e3:.4g} mJ); chosen: {r['chosen']} "
                f"({ms(chosen['seconds'])} ms, {chosen['energy_j'] * 1e3:.4g} mJ).")
        if moved:
            text += " Ops off the best single style that gain: " + ", ".join(moved) + "."
        others = sorted(((v["seconds"], p) for p, v in pts.items() if p != r["chosen"] and not math.isnan(v["seconds"])))
        text += " Rejected: " + "; ".join(f"{p} {ms(s)} ms (+{ms(s - chosen['seconds'])} ms)" for s, p in others) + "."
        doc.paragraph(text)
    rules = book["rules"]
    if rules:
        doc.paragraph(f"Headline rules of the playbook ({len(rules)} in all, `studies/dataflow.json`):")
        doc.bullets(rules[:6] + ([f"... and {len(rules) - 6} more"] if len(rules) > 6 else []))
    else:
        doc.paragraph("Every op keeps its style across these regimes (no transition rules).")


def _whole_run(doc: Document, plan: dict) -> None:
    """Per regime: what choosing the ops' kernels for the whole run (not op by op) changed."""
    for label, r in plan["regimes"].items():
        w = r.get("whole_run")
        if w is None:
            continue
        if not w["moves"]:
            why = ("its kernels fit program memory, so no program reloads are left to save" if w["reload_seconds"] == 0
                   else f"no shared kernel paid ({w['runs'] - 1} tried against {ms(w['reload_seconds'])} ms of reloads)")
            doc.paragraph(f"**{label}**: the per-op mappings stand ({ms(w['per_op_seconds'])} ms): {why}.")
            continue
        moves = ", ".join(f"{m['op']} onto the {'x'.join(map(str, m['tile']))} {m['datapath']} kernel" for m in w["moves"])
        doc.paragraph(f"**{label}**: the per-op mappings link more kernels than program memory holds and reload "
                      f"them every layer ({ms(w['reload_seconds'])} ms); moving {moves} takes the pass to "
                      f"{ms(w['seconds'])} ms ({saved(w['per_op_seconds'], w['seconds'])}; {w['runs']} whole-run "
                      f"simulations). Rejected: each op's own best mapping, {ms(w['per_op_seconds'])} ms.")


def _best_levers(plan: dict, levers: list | None) -> list[str]:
    """Per regime, the lever with the largest relative gain, in words (none where no lever helps)."""
    out = []
    for label, r in plan["regimes"].items():
        p = r["predicted"]["seconds"]
        gains = [(p - lv["seconds"][label], lv["lever"]) for lv in levers or [] if lv["seconds"][label] is not None]
        if gains and max(gains)[0] > 0:
            gain, name = max(gains)
            out.append(f"{label}: {name}, {ms(p)} -> {ms(p - gain)} ms ({saved(p, p - gain)})")
    return out


def _levers(doc: Document, plan: dict, levers: list | None) -> None:
    doc.heading("Biggest levers left (what-if, each simulated on the plan)")
    if not levers:
        doc.paragraph("Not simulated in this run (`levers=False`).")
        return
    labels = list(plan["regimes"])
    rows = []
    for lever in levers:
        row = [lever["lever"]]
        for label in labels:
            s, p = lever["seconds"][label], plan["regimes"][label]["predicted"]["seconds"]
            row.append(f"cannot run: {lever['errors'][label]}" if s is None else f"{ms(s)} ({saved(p, s)})")
        rows.append(row)
    doc.table(["lever"] + [f"{g} ms (plan {ms(plan['regimes'][g]['predicted']['seconds'])})" for g in labels], rows)
    best = _best_levers(plan, levers)
    text = ("The largest per regime: " + "; ".join(best) + ".") if best else "No lever makes the plan faster."
    weights = plan["inputs"]["weights"]
    for name, table in (("wider", WIDER), ("narrower", NARROWER)):
        if weights not in table:
            text += f" No {name} weight dtype than {weights} is modelled."
    doc.paragraph(text + " Measured compression is a lever too: measure it on a checkpoint with "
                  "`fastsim study compression` and pass `--compression measured.json` to `fastsim run llm`.")


def _latency(doc: Document, lat: dict | None) -> None:
    doc.heading("Latency tails (per-token latency and time to first token)")
    if not lat or "token_latency_s" not in lat:
        doc.paragraph(f"Not computed: {lat['why'] if lat else 'no latency model in this run'}.")
        return
    v = lat["variance_model"]
    doc.paragraph(f"{lat['samples']} sampled decode steps at context {lat['context']:,} and {lat['samples']} requests "
                  f"(prompt {lat['prompt']:,}, then {v['new_tokens']} new tokens) on the searched layout (the baseline: the "
                  f"latency model runs prefill and decode on one layout), seed "
                  f"{lat['seed']}: DDR contention up to {100 * v['ddr_share_max']:.0f} % of the bandwidth, dispatch "
                  f"jitter (CV {v['dispatch_jitter_cv']}), bursty arrivals at load {v['load']} (docs/latency.md).")
    rows = [[f"p{100 * q:g}", ms(t), ms(f)] for q, t, f in zip(lat["quantiles"], lat["token_latency_s"], lat["ttft_s"])]
    doc.table(["quantile", "per-token latency ms", "time to first token ms"], rows)


def _reproduce(doc: Document, rep: dict) -> None:
    doc.heading("Reproduce")
    doc.code("\n".join([rep["command"], f"# fastsim {rep['version']}",
                        f"# arch {rep['arch']} sha256:{rep['arch_sha256']}",
                        f"# model {rep['model']} sha256:{rep['model_sha256']}",
                        "# seeds: " + ", ".join(f"{k} {v}" for k, v in rep["seeds"].items()),
                        f"# search budget: {rep['search_budget']}"]))
    doc.paragraph("The plan replays exactly: `fastsim run llm --plan plan.json` (the same inputs take the same "
                  "deterministic code path).")
