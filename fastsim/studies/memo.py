"""The optimize memo: ``report.md`` and ``report.html`` of ``fastsim optimize``, written for a colleague.

A summary paragraph (what to change, the gain per regime, how far to trust it), one section per
step of the method with its finding in sentences and the rejected alternatives with their numbers,
the plan against the baseline, the biggest levers left (simulated), the latency tails and what
reproduces the run. Every number is read from the run's plan and Datasets; the sentences only
arrange them. Each quantity is written in the unit its magnitude reads best in (``duration``,
``energy``, ``size``), each assumption (the arrival model, the energy table, the kernel costs) where
its figure appears, and the confidence quotes fastsim's measured error against hardware from
``fastsim/presets/validation.json`` (written with docs/validation.md by bench/validation.py).
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np

from ..mapping.dispatch import dispatches_of_text
from .document import Document
from .levers import NARROWER, WIDER

VALIDATION = Path(__file__).resolve().parents[1] / "presets" / "validation.json"


def _scaled(value: float, units: tuple[tuple[float, str], ...]) -> str:
    """``value`` in the largest unit it reaches (4 significant digits, rounded before choosing)."""
    if not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0 " + next(unit for scale, unit in units if scale == 1.0)
    value = float(f"{value:.4g}")
    for scale, unit in units:
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    scale, unit = units[-1]
    return f"{value / scale:.4g} {unit}"


def duration(seconds: float) -> str:
    """A time in s, ms, µs or ns, whichever its magnitude reads best in: '15.12 ms', '68.33 ns'."""
    return _scaled(seconds, ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")))


def energy(joules: float) -> str:
    """An energy in J, mJ, µJ or nJ."""
    return _scaled(joules, ((1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ")))


def size(n_bytes: float) -> str:
    """Bytes in GB, MB, kB or B (powers of 1000)."""
    return _scaled(n_bytes, ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")))


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


def memo(plan: dict, results: dict, notes: dict, sections: dict) -> Document:
    """The memo's blocks. ``notes``: what ``optimize`` adds to the studies (``levers``, ``latency``,
    ``reproduce``, ``assumptions``), as stored in plan.json; ``sections``: each step's section writer
    ``(doc, Dataset)``, in the method's order (``fastsim.studies.registry.SECTIONS``)."""
    i = plan["inputs"]
    doc = Document(f"Optimization memo: {i['model']} on {i['arch']} ({i['weights']} weights, {i['kv']} KV)")
    _summary(doc, plan, results, notes)
    doc.heading("Plan vs baseline (the searched layout, default cuts)")
    _plan_table(doc, plan)
    for n, (step, section) in enumerate(sections.items(), 1):
        doc.heading(f"{n}. {step}")
        section(doc, results[step])
        if step == "ablate":
            doc.paragraph(_kernel_cost_note(notes))
        doc.evidence(f"the {step} study's report", f"studies/{step}.md", f"`{step}.zarr`")
        doc.image(f"{step}: figure of the study", f"studies/{step}.png")
    doc.heading(f"{len(sections) + 1}. whole-run mapping")
    _whole_run(doc, plan)
    _levers(doc, plan, notes.get("levers"))
    _latency(doc, notes.get("latency"), notes.get("latency_baseline"))
    _confidence(doc, plan, results, notes)
    _reproduce(doc, notes["reproduce"])
    return doc


def _summary(doc: Document, plan: dict, results: dict, notes: dict) -> None:
    doc.heading("Summary")
    changes = []
    for label, r in plan["regimes"].items():
        b, p, d = r["baseline"]["seconds"], r["predicted"]["seconds"], r["decisions"]
        if d["kept_baseline"]:
            changes.append(f"**{label}**: keep the searched layout ({duration(b)}); the combined decisions were slower")
            continue
        if p == b:
            changes.append(f"**{label}**: keep the searched layout ({duration(b)}, "
                           f"{dispatches(r['predicted']['dispatches'])}, fusion `{r['predicted']['fusion']}`): "
                           "no decision beats it")
            continue
        changes.append(f"**{label}**: {_decision(r)}: {duration(b)} -> {duration(p)} per pass (**{saved(b, p)}**)")
    text = "What to change. " + "; ".join(changes) + ". " + _overlay_verdict(results["overlays"])
    best = _best_levers(plan, notes.get("levers"))
    if best:
        text += " Biggest lever left on this part, " + "; ".join(best) + "."
    doc.paragraph(text)
    measured = {label: e for label, e in _pass_errors(plan).items() if e}
    errors = [f"{label}: {_error_words(e)}" for label, e in measured.items()]
    below = [label for label, e in measured.items()
             if 1 - plan["regimes"][label]["predicted"]["seconds"] / plan["regimes"][label]["baseline"]["seconds"]
             < e["median"]]
    doc.paragraph("Confidence: simulated, not measured"
                  + (f"; fastsim's measured error on such whole passes, as built ({', '.join(errors)}), "
                     + (f"exceeds the gain of {', '.join(below)}" if below else "is below every gain here")
                     + ": see Confidence below." if errors else
                     "; no measurement against hardware covers these regimes (Confidence below)."))


def _decision(r: dict) -> str:
    d, p = r["decisions"], r["predicted"]
    cuts = f"cut after layers [{d['cuts']}] ({dispatches(p['dispatches'])})" if d["cuts"] else "one dispatch"
    return f"{cuts}, dataflow {d['dataflow_point']}, fusion `{p['fusion']}`"


def _plan_table(doc: Document, plan: dict) -> None:
    rows = []
    for label, r in plan["regimes"].items():
        b, p, d = r["baseline"], r["predicted"], r["decisions"]
        rows.append([label, duration(b["seconds"]), duration(p["seconds"]), saved(b["seconds"], p["seconds"]),
                     f"{energy(b['energy_j'])} -> {energy(p['energy_j'])}", f"{p['tokens_per_s']:,.0f}" if p["tokens_per_s"] >= 1000 else f"{p['tokens_per_s']:.4g}",
                     f"{p['dispatches']} [{d['cuts']}]", d["dataflow_point"], d["top_class"]])
    doc.table(["regime", "baseline", "plan", "change", "energy per pass (assumed energy table)", "plan tokens/s",
               "dispatches [cuts]", "dataflow", "optimize first"], rows)
    doc.paragraph(_energy_note(plan["inputs"]))
    kept = [label for label, r in plan["regimes"].items() if r["decisions"]["kept_baseline"]]
    if kept:
        doc.paragraph(f"Kept the baseline for {', '.join(kept)}: decisions measured one at a time did not combine "
                      "into a faster run.")


def _energy_note(inputs: dict) -> str:
    """Where the energy figures come from: the arch's energy table, an assumption."""
    table = inputs.get("energy_table")
    if not table:
        return "Energy: the arch's energy table (assumed per-MAC and per-byte energies; not measured)."
    macs = ", ".join(f"{k} {v:g}" for k, v in table["pj_per_mac"].items())
    moves = ", ".join(f"{k} {v:g}" for k, v in table["pj_per_byte"].items())
    return (f"Energy is an assumption, not a measurement: the arch's energy table (AMD publishes no per-operation "
            f"energy for these parts) prices each MAC (pJ: {macs}) and each byte moved (pJ: {moves}); the "
            "energies here and in the dataflow step are those prices times the simulated counts.")


def ablate_section(doc: Document, ds) -> None:
    for g in ds.regime.values:
        r = ds.sel(regime=g)
        base, moving = float(r.baseline_seconds), float(r.data_movement_seconds)
        present = sorted((c for c in ds.op_class.values if int(r["rank"].sel(op_class=c)) > 0),
                         key=lambda c: int(r["rank"].sel(op_class=c)))
        ranked = ", ".join(f"{c} {duration(float(r.delta_seconds.sel(op_class=c)))} "
                           f"({100 * float(r.share.sel(op_class=c)):.2f} %)" for c in present[:3])
        top = str(r.top_class.values)
        t = r.sel(op_class=top)
        text = (f"**{g}**: the pass takes {duration(base)}; with every class's compute removed it still takes "
                f"{duration(moving)}, so {pct(moving, base)} of it is data movement and removing all compute would "
                f"save at most {duration(base - moving)}. Ranked by time saved: {ranked}. Decision: optimize "
                f"**{top}** first; {_exposed(float(t.exposed_share))} of its kernel time "
                f"({duration(float(t.compute_seconds))}) is exposed.")
        others = [c for c in present if c not in (top, "cast")]
        if others:
            busy = max(others, key=lambda c: float(r.compute_seconds.sel(op_class=c)))
            x = r.sel(op_class=busy)
            text += (f" Rejected: {busy}, the busiest other class ({duration(float(x.compute_seconds))} of kernel time), "
                     f"would save only {duration(float(x.delta_seconds))} ({_exposed(float(x.exposed_share))} exposed).")
        doc.paragraph(text)


def _kernel_cost_note(notes: dict) -> str:
    """Where the kernel times come from, and which of the arch's kernel costs are assumptions."""
    assumed = [k for k in notes.get("assumed") or {} if k.startswith(("kernel_", "vector_", "datapaths"))]
    return ("Kernel times come from the arch's kernel costs (cycles per kernel call and per block, issue "
            "efficiency, vector cycles per element), measured on one core where the arch's notes cite a "
            "measurement" + (f"; assumed, not measured: {', '.join(assumed)} (see Confidence)." if assumed else
                             "; the arch's notes name none of them an assumption."))


def _exposed(share: float) -> str:
    return "n/a" if math.isnan(share) else f"{100 * share:.1f} %"


def cuts_section(doc: Document, ds) -> None:
    for g in ds.regime.values:
        r = ds.sel(regime=g)
        best = str(r.best_cuts.values)
        n_best = dispatches_of_text(best)
        b, d = float(r.best_seconds), float(r.default_seconds)
        where = f"cut after layers [{best}]" if best else "no cut"
        text = (f"**{g}**: {dispatches(n_best)}, {where}: {duration(b)}, against {duration(d)} for the "
                f"default greedy cut [{r.default_cuts.values}] ({saved(d, b)}).")
        layers = [int(v) for v in r.boundary_after_layer.values if int(v) >= 0]
        for j, layer in enumerate(layers):
            x = r.isel(boundary=j)
            cost = {k: float(x[f"boundary_{k}_seconds"]) for k in ("write_out", "read_back", "host_round_trip",
                                                                  "setup_in_round_trip", "weight_reload",
                                                                  "program_reload", "net")}
            net = cost["net"]
            text += (f" The boundary after layer {layer} costs {duration(cost['write_out'])} of activations written out, "
                     f"{duration(cost['read_back'])} read back, {duration(cost['host_round_trip'])} of host round trip "
                     f"(less {duration(-cost['setup_in_round_trip'])} of set-up it does for the next op) and "
                     f"{duration(cost['weight_reload'])} of weight reload; it relieves {x.boundary_relieves.values} "
                     f"(program reloads {duration(cost['program_reload'])}): net {duration(net)}"
                     f"{' (it pays for itself)' if net < 0 else ''}.")
        alternatives = [(int(k), float(r.seconds.sel(dispatches=k))) for k in ds.dispatches.values if int(k) != n_best]
        fits = sorted((s, k) for k, s in alternatives if not np.isnan(s))[:3]
        if fits:
            text += " Rejected: " + "; ".join(f"{dispatches(k)} {duration(s)} (+{duration(s - b)})" for s, k in fits) + "."
        unfit = sum(np.isnan(s) for _, s in alternatives)
        if unfit:
            text += f" {unfit} other dispatch count(s) do not fit on chip."
        doc.paragraph(text)


def overlays_section(doc: Document, ds) -> None:
    a = ds.attrs
    own = "; ".join(f"{g}: fusion `{ds.fusion.sel(regime=g).values}`, {ds.residency_reason.sel(regime=g).values}, "
                    f"{duration(float(ds.seconds.sel(regime=g, overlay=g)))}" for g in ds.regime.values)
    mix = {str(p): float(v) for p, v in zip(ds.plan.values, ds.mix_seconds.values)}
    best = chosen_overlay_plan(ds)
    doc.paragraph(f"Request mix (prompt:new tokens:batch:weight) {a['mix']}. Each regime's own overlay: {own}. "
                  f"Switching overlays costs {duration(a['switch_seconds'])} ({a['switch_change']}), "
                  f"{a['switches_per_request']} times per request. {_overlay_verdict(ds)}")
    rejected = [f"{p} {mix_cell(ds, p, mix[best])}" for p in mix if p != best]
    if rejected:
        doc.paragraph(f"Chosen: {best} ({duration(mix[best])} for the mix). Rejected: " + "; ".join(rejected) + ".")
    doc.paragraph(_bindings(ds, best))


def chosen_overlay_plan(ds) -> str:
    """The plan the overlays study recommends: the best single overlay unless per-regime overlays
    gain net of their switches (or no single overlay runs every regime)."""
    a = ds.attrs
    return a["best_single"] if a["best_single"] and not a["gain_seconds"] > 0 else "per_regime"


def mix_cell(ds, plan: str, best_seconds: float) -> str:
    """A plan's time for the mix against the chosen one's, or why it cannot run the mix (which
    regime its overlay cannot run, and the simulation's reason)."""
    v = float(ds.mix_seconds.sel(plan=plan))
    if math.isnan(v):
        return "cannot run: " + overlay_refusals(ds, plan.removeprefix("single:"))
    return f"{duration(v)} ({'a tie' if v == best_seconds else f'+{duration(v - best_seconds)}'})"


def overlay_refusals(ds, overlay: str) -> str:
    """Why the overlay of regime ``overlay`` cannot run the regimes it cannot run."""
    why = ds.cannot_run if "cannot_run" in ds else None
    out = []
    for g in ds.regime.values:
        if math.isnan(float(ds.seconds.sel(regime=g, overlay=overlay))):
            reason = str(why.sel(regime=g, overlay=overlay).values) if why is not None else ""
            out.append(f"its layout cannot run {g} ({reason or 'the study recorded no reason'})")
    return "; ".join(out)


def _bindings(ds, best: str) -> str:
    """Which classes bind on different resources per regime, and what that means for the choice:
    with one overlay chosen, what each regime pays on it against its own overlay."""
    differs = [str(c) for c, d in zip(ds.op_class.values, ds.binding_differs.values) if d]
    if not differs:
        return "Every op class is bound by the same resource in every regime."
    text = ("Bound by different resources in different regimes: " +
            "; ".join(f"{c} (" + ", ".join(f"{g} {ds.bound_by.sel(regime=g, op_class=c).values}"
                                          for g in ds.regime.values) + ")" for c in differs) + ". ")
    if best == "per_regime":
        gain = ds.attrs["gain_seconds"]
        return text + ("No single placement runs every regime, so each regime keeps its own overlay." if math.isnan(gain)
                       else f"Per-regime placements win: they save {duration(gain)} per mix, switches included.")
    overlay = best.removeprefix("single:")
    costs = []
    for g in ds.regime.values:
        on, own = float(ds.seconds.sel(regime=g, overlay=overlay)), float(ds.seconds.sel(regime=g, overlay=g))
        costs.append(f"{g} {duration(on)} on it against {duration(own)} on its own ({saved(own, on)})"
                     if g != overlay else f"{g} {duration(on)} (its own)")
    return text + (f"Even so, the one placement chosen ({overlay}'s overlay) serves every regime: "
                   + "; ".join(costs) + ". The different bindings cost less than switching would.")


def _overlay_verdict(ds) -> str:
    a, gain = ds.attrs, ds.attrs["gain_seconds"]
    if not a["best_single"] or math.isnan(gain):
        return "No single overlay runs every regime: per-regime overlays are needed."
    if gain > 0:
        return (f"Per-regime overlays save {duration(gain)} per request mix over the best single overlay "
                f"({a['best_single']}), switches included.")
    if gain == 0:
        return f"One overlay ({a['best_single']}) is the best for every regime: nothing to switch."
    return (f"One overlay ({a['best_single']}) serves the request mix best: per-regime overlays would lose "
            f"{duration(-gain)} to the switches.")


def _whole_run(doc: Document, plan: dict) -> None:
    """Per regime: what choosing the ops' kernels for the whole run (not op by op) changed."""
    for label, r in plan["regimes"].items():
        w = r.get("whole_run")
        if w is None:
            continue
        if not w["moves"]:
            why = ("its kernels fit program memory, so no program reloads are left to save" if w["reload_seconds"] == 0
                   else f"no shared kernel paid ({w['runs'] - 1} tried against {duration(w['reload_seconds'])} of reloads)")
            doc.paragraph(f"**{label}**: the per-op mappings stand ({duration(w['per_op_seconds'])}): {why}.")
            continue
        moves = ", ".join(f"{m['op']} onto the {'x'.join(map(str, m['tile']))} {m['datapath']} kernel" for m in w["moves"])
        doc.paragraph(f"**{label}**: the per-op mappings link more kernels than program memory holds and reload "
                      f"them every layer ({duration(w['reload_seconds'])}); moving {moves} takes the pass to "
                      f"{duration(w['seconds'])} ({saved(w['per_op_seconds'], w['seconds'])}; {w['runs']} whole-run "
                      f"simulations). Rejected: each op's own best mapping, {duration(w['per_op_seconds'])}.")


def _best_levers(plan: dict, levers: list | None) -> list[str]:
    """Per regime, the lever of this part (never other hardware) with the largest gain, in words
    (none where no lever helps)."""
    out = []
    for label, r in plan["regimes"].items():
        p = r["predicted"]["seconds"]
        gains = [(p - lv["seconds"][label], lv["lever"]) for lv in _this_part(levers)
                 if lv["seconds"][label] is not None]
        if gains and max(gains)[0] > 0:
            gain, name = max(gains)
            out.append(f"{label}: {name}, {duration(p)} -> {duration(p - gain)} ({saved(p, p - gain)})")
    return out


def _this_part(levers: list | None, this_part: bool = True) -> list[dict]:
    """The levers the part allows (``this_part``), or the what-ifs on other hardware."""
    return [lv for lv in levers or [] if lv.get("this_part", True) == this_part]


def _levers(doc: Document, plan: dict, levers: list | None) -> None:
    arch = plan["inputs"]["arch"]
    doc.heading(f"Biggest levers left on {arch} (what-if, each simulated on the plan)")
    if not levers:
        doc.paragraph("Not simulated in this run (`levers=False`).")
        return
    doc.paragraph(f"Changes {arch} itself allows (weight and KV formats), each simulated on each regime's plan:")
    _lever_table(doc, plan, _this_part(levers))
    best = _best_levers(plan, levers)
    text = ("The largest per regime: " + "; ".join(best) + ".") if best else "No lever makes the plan faster."
    weights = plan["inputs"]["weights"]
    for name, table in (("wider", WIDER), ("narrower", NARROWER)):
        if weights not in table:
            text += f" No {name} weight dtype than {weights} is modelled."
    doc.paragraph(text + " Measured compression is a lever too: measure it on a checkpoint with "
                  "`fastsim study compression` and pass `--compression measured.json` to `fastsim run llm`.")
    other = _this_part(levers, this_part=False)
    if other:
        doc.heading(f"What-if on other hardware (not levers of {arch})", 3)
        doc.paragraph(f"Not available on {arch}: a platform with faster DDR or a part with more columns than "
                      f"{arch} has. Simulated on the same plans to show what the hardware limits; no part of the "
                      "recommendation above depends on them.")
        _lever_table(doc, plan, other)


def _lever_table(doc: Document, plan: dict, levers: list[dict]) -> None:
    labels = list(plan["regimes"])
    rows = []
    for lever in levers:
        row = [lever["lever"]]
        for label in labels:
            s, p = lever["seconds"][label], plan["regimes"][label]["predicted"]["seconds"]
            row.append(f"cannot run: {lever['errors'].get(label) or 'no reason recorded'}" if s is None
                       else f"{duration(s)} ({saved(p, s)})")
        rows.append(row)
    doc.table(["change"] + [f"{g} (plan {duration(plan['regimes'][g]['predicted']['seconds'])})" for g in labels],
              rows)


def _latency(doc: Document, lat: dict | None, baseline: dict | None = None) -> None:
    doc.heading("Latency tails of the plan (per-token latency and time to first token)")
    if not lat or "token_latency_s" not in lat:
        doc.paragraph(f"Not computed: {lat['why'] if lat else 'no latency model in this run'}.")
        return
    v = lat["variance_model"]
    ran = " and ".join(f"{r}'s" for r in lat.get("layouts", [])) or "no regime's"
    doc.paragraph(f"{lat['samples']} sampled decode steps at context {lat['context']:,} on the recommended plan "
                  f"({ran} plan above; a regime without one runs its searched layout), seed {lat['seed']}, under "
                  f"an assumed variance model (docs/latency.md, not measured): DDR contention taking up to "
                  f"{100 * v['ddr_share_max']:.0f} % of the bandwidth, drifting from token to token (correlation "
                  f"{v['ddr_share_correlation']}), and dispatch jitter (coefficient of variation "
                  f"{v['dispatch_jitter_cv']}).")
    doc.paragraph(_arrival_note(lat))
    rows = []
    for k, q in enumerate(lat["quantiles"]):
        row = [f"p{100 * q:g}", duration(lat["token_latency_s"][k]), duration(lat["prefill_s"][k]),
               duration(lat["ttft_s"][k])]
        if baseline and "token_latency_s" in baseline:
            row += [duration(baseline["token_latency_s"][k]), duration(baseline["ttft_s"][k])]
        rows.append(row)
    header = ["quantile", "per-token latency", "prefill alone (no queueing)",
              f"time to first token (queueing at load {v['load']:g}, assumed)"]
    if baseline and "token_latency_s" in baseline:
        header += ["baseline per-token latency", "baseline time to first token (same arrivals)"]
    doc.table(header, rows)


def _arrival_note(lat: dict) -> str:
    """The arrival model the time to first token assumes, with its numbers."""
    v = lat["variance_model"]
    rate = lat.get("arrival_rate_per_s")
    return (f"Time to first token is the wait in the queue plus the prefill, and the wait depends on an assumed "
            f"arrival model, not on anything measured: {lat['samples']} requests (prompt {lat['prompt']:,} tokens, "
            f"then {v['new_tokens']} new tokens each) arrive in bursts at Poisson-distributed times, each burst a "
            f"geometric number of requests (mean {v['burst_mean']:g}), at a mean rate of {100 * v['load']:g} % of "
            f"what the NPU serves" + (f" ({rate:.3g} requests/s with this plan)" if rate else "") +
            ", served one at a time, first come first served. At another load or burst size the tail of time to "
            "first token changes; the prefill-alone column does not depend on it.")


def validation_rows() -> list[dict]:
    """docs/validation.md's rows as data (``fastsim/presets/validation.json``, which
    bench/validation.py writes with it); [] where it is not shipped."""
    try:
        return json.loads(VALIDATION.read_text())["rows"]
    except FileNotFoundError:
        return []


def measured_error(rows: list[dict], kinds: tuple[str, ...], arch: str, model: str | None = None) -> dict | None:
    """The absolute errors (median, worst, count) of the validation rows of ``kinds`` on ``arch``
    (of ``model`` only, where given), as built and searched, and how many predict faster than
    measured; None without such a row."""
    pick = [r for r in rows if r["kind"] in kinds and r["arch"] == arch and model in (None, r["model"])]
    if not pick:
        return None
    built, searched = [abs(r["as_built_error"]) for r in pick], [abs(r["searched_error"]) for r in pick]
    faster = sum((r["as_built_error"] > 0) == (r["unit"] == "tokens/s") for r in pick if r["as_built_error"])
    return {"rows": len(pick), "median": statistics.median(built), "worst": max(built),
            "searched_median": statistics.median(searched), "searched_worst": max(searched), "faster": faster}


# what a regime's decisions rest on, as validation rows: its whole passes, then its matmuls' kernels
PASS_KINDS = {"decode": ("decode",), "prefill": ("prefill", "ttft")}
MATMUL_KINDS = {"decode": ("gemv", "M = 1 matmuls: GEMV kernels"), "prefill": ("gemm", "M > 1 matmuls: GEMM kernels")}


def _pass_errors(plan: dict) -> dict:
    """Per regime, the measured error of whole passes of its kind on the plan's arch."""
    rows, arch = validation_rows(), plan["inputs"]["arch"]
    return {label: measured_error(rows, PASS_KINDS.get(label.split("@")[0], ()), arch) for label in plan["regimes"]}


def _error_words(e: dict) -> str:
    return f"median {100 * e['median']:.0f} %, worst {100 * e['worst']:.0f} % over {e['rows']} measurements"


def _confidence_rows(plan: dict, results: dict) -> tuple[list[list], list[str]]:
    """The Confidence table's rows (regime, what, measured error) and the classes no row measures."""
    rows, arch, model = validation_rows(), plan["inputs"]["arch"], plan["inputs"]["model"]
    table, unmeasured = [], []
    for label in plan["regimes"]:
        regime = label.split("@")[0]
        kinds = PASS_KINDS.get(regime, ())
        checks = [(f"whole {regime} passes, every model", measured_error(rows, kinds, arch)),
                  (f"whole {regime} passes of {model}", measured_error(rows, kinds, arch, model))]
        if regime in MATMUL_KINDS:
            kind, what = MATMUL_KINDS[regime]
            checks.append((what + " (the dataflow and cut decisions)", measured_error(rows, (kind,), arch)))
        for what, e in checks:
            if e is None:
                table.append([label, what, "no measurement", "", "", ""])
                continue
            table.append([label, what, str(e["rows"]), f"{100 * e['median']:.0f} % / {100 * e['worst']:.0f} %",
                          f"{100 * e['searched_median']:.0f} % / {100 * e['searched_worst']:.0f} %",
                          f"{e['faster']} of {e['rows']}"])
        top = str(results["ablate"].top_class.sel(regime=label).values)
        if top not in ("gemm", "cast") and top not in unmeasured:
            unmeasured.append(top)
    return table, unmeasured


def _confidence(doc: Document, plan: dict, results: dict, notes: dict) -> None:
    """How far the numbers carry: fastsim's measured error against hardware for these regimes and
    the op classes the decisions rest on, the search budget, the arch's assumptions and the gains
    against the latency spread."""
    doc.heading("Confidence")
    table, unmeasured = _confidence_rows(plan, results)
    if not validation_rows():
        table = [[label, "docs/validation.md's data (fastsim/presets/validation.json) is not in this installation",
                  "", "", "", ""] for label in plan["regimes"]]
    doc.paragraph("Every number above is simulated, not measured. fastsim's measured error against hardware "
                  "(docs/validation.md: public measurements of real designs; error = predicted / measured - 1, its "
                  "absolute value here; 'as built' describes the measured implementation, 'searched' is fastsim's "
                  f"own design) for what these decisions rest on, on {plan['inputs']['arch']}:")
    doc.table(["regime", "what the decision rests on", "measurements", "as built: median / worst",
               "searched: median / worst", "as built predicts faster than measured"], table)
    text = (f"No measurement isolates {', '.join(unmeasured)} (the ablation's first target): only the whole passes "
            "above check it. " if unmeasured else "")
    gains = [f"{label} {saved(r['baseline']['seconds'], r['predicted']['seconds'])}"
             for label, r in plan["regimes"].items()]
    text += (f"The plan's gains ({', '.join(gains)}) are differences between two simulations of the same "
             "model; the errors above are of absolute times, and no measurement checks such a difference. ")
    budget = notes["reproduce"]["search_budget"]
    text += ("Every matmul's mapping is proven the best of its space. " if budget == "exact" else
             f"The mapping search stopped after {budget} candidates per matmul (not proven optimal). ")
    assumed = notes.get("assumed") or {}
    text += (f"{notes['assumptions']} of the arch's parameters are assumptions, not measurements"
             + (": " + "; ".join(f"{k} ({v})" for k, v in assumed.items()) if assumed else " (its notes)") + ".")
    lat = notes.get("latency")
    if lat and "token_latency_s" in lat:
        p50, _, p99 = lat["token_latency_s"]
        text += (f" On the plan, per-token latency varies by {pct(p99 - p50, p50)} from p50 to p99 under the "
                 "assumed variance model.")
    doc.paragraph(text + " Each plan was simulated as a whole (not summed from the studies) and replays exactly "
                  "(`fastsim run llm --plan plan.json`).")


def _reproduce(doc: Document, rep: dict) -> None:
    doc.heading("Reproduce")
    doc.code("\n".join([rep["command"], f"# fastsim {rep['version']}",
                        f"# arch {rep['arch']} sha256:{rep['arch_sha256']}",
                        f"# model {rep['model']} sha256:{rep['model_sha256']}",
                        "# seeds: " + ", ".join(f"{k} {v}" for k, v in rep["seeds"].items()),
                        f"# search budget: {rep['search_budget']}"]))
    doc.paragraph("The plan replays exactly: `fastsim run llm --plan plan.json` (the same inputs take the same "
                  "deterministic code path).")
