"""The CNN optimize report: ``report.md`` and ``report.html`` of ``fastsim optimize --onnx``.

A summary (what to change, the gain, what to optimize first, the biggest lever, how far to trust
it), then one section per step as it applies to one CNN inference: the baseline, the ablation, the
dispatch and fusion choice, the dataflow per layer (groups, rules, every layer), the levers and
what reproduces the run. Every number is read from the plan (``cnn_optimize.optimize_onnx``); the
sentences only arrange them. Each quantity is in the unit its magnitude reads best in, each layer has
one name in every table (an op that runs folded epilogues lists them: ``conv1 + conv1.relu``), and a
what-if on other hardware is reported apart from the levers of the part.
"""
from __future__ import annotations

from .document import Document
from .memo import dispatches, duration, energy, measured_error, pct, saved, size, validation_rows

LAYER_ROWS = 200  # per-layer rows written into the report (plan.json holds every one)
WORTH = 0.01  # a class whose NOOP saves less than this share of the network is not worth kernel work


def dur(seconds: float) -> str:
    """A duration in the unit that reads best (``memo.duration``)."""
    return duration(seconds)


def layer(row: dict) -> str:
    """A layer's one name: its op's, joined with the ONNX nodes folded into it."""
    return " + ".join([row["op"], *row.get("folds", ())])


def macs(n: float) -> str:
    """A MAC count in G, M or k MACs, whichever its magnitude reads best in."""
    return size(n).replace("GB", "G MACs").replace("MB", "M MACs").replace("kB", "k MACs").replace(" B", " MACs")


def n_layers(n: int) -> str:
    return f"{n} layer{'' if n == 1 else 's'}"


def memo(plan: dict) -> Document:
    i = plan["inputs"]
    doc = Document(f"Optimization report: {i['model']} on {i['arch']} ({i['compute_dtype']}, batch {i['batch']})")
    _summary(doc, plan)
    for n, (title, section) in enumerate((("Baseline", _baseline),
                                          ("Ablation: which op class to optimize (method step 1)", _ablation),
                                          ("Dispatch and fusion (method step 2)", _fusion),
                                          ("Dataflow per layer (method step 6)", _dataflow),
                                          ("Levers (what-ifs, each simulated on the plan)", _levers)), 1):
        doc.heading(f"{n}. {title}")
        section(doc, plan)
    _not_applied(doc, plan)
    _reproduce(doc, plan["reproduce"])
    return doc


def _chosen_text(c: dict) -> str:
    fold = "epilogues folded into their producers" if c["fold_epilogues"] else "epilogues as their own ops"
    return f"fusion `{c['fusion']}` with {fold} ({dispatches(c['dispatches'])})"


def _summary(doc: Document, plan: dict) -> None:
    doc.heading("Summary")
    b, p = plan["baseline"]["seconds"], plan["plan"]["seconds"]
    a = plan["ablation"]
    text = (f"What to change: run the network with {_chosen_text(plan['plan'])}: {dur(b)} -> {dur(p)} per "
            f"inference (**{saved(b, p)}**, {plan['plan']['summary']['inferences_per_s']:,.0f} inferences/s). ")
    text += _first(a, plan["baseline"]["bound_by"])
    best = _best_lever(plan)
    text += (f"Biggest lever left: {best['lever']}, {dur(p)} -> {dur(best['seconds'])} ({saved(p, best['seconds'])})."
             if best else "No lever simulated here makes the plan faster.")
    doc.paragraph(text)
    doc.paragraph("Confidence: simulated, not measured; every number is a whole-network simulation, not a sum of "
                  "isolated kernels. " + _measured_confidence(plan) + _search_confidence(plan))


def _measured_confidence(plan: dict) -> str:
    """fastsim's measured error against hardware (docs/validation.md) for what the report rests on:
    whole CNNs on the plan's arch where measured, and GEMMs, the class of its 1x1 convs and fc layers."""
    rows = validation_rows()
    if not rows:
        return "docs/validation.md's data (fastsim/presets/validation.json) is not in this installation. "
    arch = plan["inputs"]["arch"]
    e = measured_error(rows, ("gemm",), arch)
    gemm = (f"on GEMM kernels, the class of its 1x1 convs and fully connected layers, fastsim's measured error "
            f"against hardware on {arch} is median {100 * e['median']:.0f} %, worst {100 * e['worst']:.0f} % over "
            f"{e['rows']} measurements (as built, docs/validation.md)" if e else
            f"no measured GEMM on {arch} checks its 1x1 convs and fully connected layers")
    cnn = measured_error(rows, ("cnn",), arch)
    whole = (f"On whole CNNs measured on {arch} (through a closed runtime), fastsim's measured error "
             f"is median {100 * cnn['median']:.0f} %, worst {100 * cnn['worst']:.0f} % over {cnn['rows']} "
             f"measurements, {cnn['faster']} of them predicted faster than measured (as built, docs/validation.md); "
             if cnn else f"No whole CNN is measured on {arch} (docs/validation.md); ")
    return whole + gemm + ". "


def _search_confidence(plan: dict) -> str:
    """How far the mappings are from proven: the largest optimality gap left and whose it is."""
    budget = plan["reproduce"]["search_budget"]
    gaps = [(r["mapping_gap"], r["op"]) for r in plan["dataflow"]["layers"]]
    gap, op = max(gaps, default=(0.0, ""))
    if budget == "exact" or gap == 0:
        return "Every op's mapping is proven the best of its space."
    return (f"The mapping searches stopped after {budget} candidates per op: the best mapping of {op} may be up to "
            f"{100 * gap:.1f} % faster than the one simulated (the largest gap left; "
            f"`fastsim.studies.cnn_optimize.optimize_onnx(..., search_budget=None)` searches until proven).")


def _first(a: dict, bound_by: str) -> str:
    """What to optimize first, from the ablation: its top class, or none when no class's compute
    shows end to end (the top one saves under ``WORTH`` of the baseline)."""
    if not a["classes"]:
        return ""
    top, t0 = a["classes"][0], a["baseline_seconds"]
    said = f"{dur(top['saved_seconds'])}, {100 * top['saved_seconds'] / t0:.2g} % of the baseline"
    if top["saved_seconds"] < WORTH * t0:
        return (f"Kernel work will not show: removing the compute of the top class, {top['class']}, saves only "
                f"{said}; the network is bound by {bound_by}. ")
    return f"Optimize first: **{top['class']}** (NOOPing its compute saves {said}). "


def _best_lever(plan: dict) -> dict | None:
    """The lever of the part (never other hardware) that gains most."""
    ran = [lv for lv in plan["levers"] if lv.get("this_part", True) and lv["seconds"] is not None
           and lv["gain_seconds"] > 0]
    return max(ran, key=lambda lv: lv["gain_seconds"]) if ran else None


def _baseline(doc: Document, plan: dict) -> None:
    s = plan["baseline"]
    split = ", ".join(f"{k} {dur(v)} ({pct(v, s['seconds'])})"
                      for k, v in sorted(s["time_by_bound"].items(), key=lambda kv: -kv[1]) if v)
    doc.paragraph(f"As given (fusion `auto`, which chose `{s['fusion']}`), one inference of {s['model']} takes "
                  f"**{dur(s['seconds'])}**: {s['inferences_per_s']:,.1f} inferences/s, {macs(s['macs'])} "
                  f"at {s['tops']:.3g} TOPS, {s['ops']} ops in {dispatches(s['dispatches'])} "
                  f"({dur(s['dispatch_seconds'])} of host dispatch), {energy(s['energy_j'])} (the arch's assumed energy table, not a measurement). It is bound by "
                  f"**{s['bound_by']}**; the time by binding resource: {split}. DDR traffic: "
                  + ", ".join(f"{k} {size(v)}" for k, v in s["ddr_bytes_by_kind"].items() if v) + ".")
    rows = [[layer(r), r["type"], r["class"], dur(r["seconds"]), f"{100 * r['share']:.1f} %", r["bound_by"],
             macs(r["macs"])] for r in s["top_layers"]]
    doc.paragraph(f"The {len(rows)} layers that take the most time:")
    doc.table(["op", "ONNX type", "class", "time", "share", "bound by", "MACs"], rows)


def _ablation(doc: Document, plan: dict) -> None:
    a = plan["ablation"]
    t0 = a["baseline_seconds"]
    if not a["classes"]:
        doc.paragraph("No op class runs on the array: nothing to ablate.")
        return
    ranked = "; ".join(f"{r['rank']}. {r['class']} saves {dur(r['saved_seconds'])} ({pct(r['saved_seconds'], t0)})"
                       for r in a["classes"])
    doc.paragraph(f"Each op class in turn was replaced by a pass that moves all its data and computes nothing, on "
                  f"the baseline's fusion (`{a['fusion']}`), and the whole network simulated again ({dur(t0)} "
                  f"before). Ranked by end-to-end time saved: {ranked}. With every class NOOPed at once the network "
                  f"takes {dur(a['data_movement_seconds'])}: that is its data-movement and dispatch time, and only "
                  f"**{dur(a['exposed_compute_seconds'])} ({pct(a['exposed_compute_seconds'], t0)}) is exposed "
                  f"compute**, the most that faster kernels could save.")
    rows = [[r["rank"], r["class"], r["layers"], dur(r["op_seconds"]), dur(r["noop_seconds"]), dur(r["saved_seconds"]),
             pct(r["saved_seconds"], t0), dur(r["compute_seconds"]),
             "n/a" if r["exposed_share"] is None else f"{100 * r['exposed_share']:.0f} %", r["bound_by"]]
            for r in a["classes"]]
    doc.table(["rank", "class", "layers", "time in class", "NOOP run", "saved", "saved share",
               "kernel time", "exposed share of kernel time", "bound by"], rows)
    hidden = [r["class"] for r in a["classes"] if r["saved_seconds"] < WORTH * t0]
    if len(hidden) == len(a["classes"]):
        doc.paragraph(f"No class is worth kernel work: removing any one's compute saves under {100 * WORTH:g} % "
                      f"end to end; the time is data movement and dispatch ({plan['baseline']['bound_by']} binds).")
    elif hidden:
        doc.paragraph(f"Rejected as targets: {', '.join(hidden)}: each saves under {100 * WORTH:g} % when its "
                      f"compute is removed, so kernel work on them would not show end to end.")


def _fusion(doc: Document, plan: dict) -> None:
    f, c = plan["fusion"], plan["fusion"]["chosen"]
    doc.paragraph(f"Each fusion setting the evaluator supports was simulated on the whole network, with the "
                  f"epilogues (a Relu or Clip read only by the op before it) as given and folded the other way. A "
                  f"dispatch boundary costs a host round trip of {dur(f['dispatch_overhead_s'])} and the "
                  f"activations written out and read back; fused ops hand their activations over on chip. "
                  f"Chosen: **{_chosen_text(c)}, {dur(c['seconds'])}**.")
    rows, rejected = [], []
    for o in f["options"]:
        fold = "folded" if o["fold_epilogues"] else "own ops"
        if o["seconds"] is None:
            why = o["error"] or "no reason recorded"
            rows.append([o["fusion"], fold, f"cannot run: {why}", "", "", "", "", ""])
            rejected.append(f"`{o['fusion']}` ({fold}) cannot run: {why}")
            continue
        ran_as = o["fusion"] + (f" (ran as {o['resolved']})" if o["resolved"] != o["fusion"] else "")
        rows.append([ran_as, fold, dur(o["seconds"]), o["dispatches"], o["cuts"] or "none",
                     dur(o["dispatch_seconds"]), f"{o['ops_on_chip']} of {o['ops']}", size(o["ddr_bytes"])])
        if o != c:
            extra = o["seconds"] - c["seconds"]
            rejected.append(f"`{o['fusion']}` ({fold}) {dur(o['seconds'])} " +
                            (f"(+{dur(extra)})" if extra > 0 else "(a tie: the earlier, simpler setting is kept)"))
    doc.table(["fusion", "epilogues", "time", "dispatches", "cuts after", "dispatch", "ops with an on-chip hand-off",
               "DDR traffic"], rows)
    doc.paragraph("Rejected: " + "; ".join(rejected) + ". " + _boundaries(f["options"]))


def _boundaries(options: list[dict]) -> str:
    """What the dispatch counts of the settings that ran say about the cut."""
    counts = sorted({o["dispatches"] for o in options if o["seconds"] is not None})
    if counts == [1]:
        return ("Every setting that runs fits the whole network in one dispatch: no boundary is paid beyond the one "
                "host round trip, so the cut needs no further search.")
    return (f"The settings need {' to '.join(str(n) for n in (counts[0], counts[-1]))} dispatches (the greedy "
            f"feasible cut, each boundary a host round trip and its activations through DDR).")


def _dataflow(doc: Document, plan: dict) -> None:
    d = plan["dataflow"]
    weights = ", ".join(f"{n} `w:{mode}`" for mode, n in d["weights"].items())
    flows = ", ".join(f"{flow.upper()} for {n_layers(n)}" for flow, n in d["matmul_dataflows"].items())
    doc.paragraph("The conv mapper has no weight-, input- or output-stationary choice for dense and depthwise convs: "
                  "it searches how output rows and channels split over columns and cores, the output rows and "
                  "channels per kernel call, and whether the weights stay resident in core memory (`w:resident`) or "
                  "stream by output-channel block (`w:oc`) or by (output, input)-channel block (`w:ci`)"
                  + (f"; here: {weights}. " if weights else ". ") +
                  "1x1 convs are GEMMs and Gemm/MatMul ops are matmuls: the matmul mapper searches their dataflow "
                  "(weight-, input- or output-stationary) per layer" +
                  (f" and chose {flows} (the mapping column says which)." if flows else "."))
    rows = [[g["group"], g["layers"], dur(g["seconds"]), f"{100 * g['share']:.1f} %", f"{g['tops']:.3g}",
             f"{g['bound_by']} ({100 * g['bound_share']:.0f} %)", dur(g["kernel_headroom_seconds"]),
             dur(g["control_seconds"])] for g in d["groups"]]
    doc.paragraph("Layers by type, largest total time first (op time, plan; set-up: the runtime-sequence "
                  "instructions that set each layer up inside the dispatch, docs/hardware.md):")
    doc.table(["group", "layers", "time", "share", "TOPS", "bound by (share of its time)", "kernel headroom",
               "set-up"], rows)
    doc.paragraph("The playbook's rules, one per group:")
    doc.bullets(d["rules"])
    layers = d["layers"]
    if any(r.get("folds") for r in layers):
        doc.paragraph("A name joined with + is one op of the plan that runs those ONNX nodes (epilogues folded "
                      "into their producer): each node keeps its one name in every table of this report.")
    doc.paragraph(f"Every layer of the plan ({len(layers)} ops" + (f"; the first {LAYER_ROWS} here, all in plan.json)"
                                                                  if len(layers) > LAYER_ROWS else ")") + ":")
    doc.table(["op", "ONNX type", "group", "kernel", "stride", "groups", "channels", "mapping", "bound by", "time"],
              [[layer(r), r["type"], r["group"], r["kernel"], r["stride"] or "", r["groups"] or "", r["channels"],
                f"`{r['mapping']}`", r["bound_by"], dur(r["seconds"])] for r in layers[:LAYER_ROWS]])


def _levers(doc: Document, plan: dict) -> None:
    p, arch = plan["plan"]["seconds"], plan["inputs"]["arch"]
    doc.paragraph(f"Each change {arch} allows, simulated on the plan ({dur(p)}):")
    _lever_table(doc, p, [lv for lv in plan["levers"] if lv.get("this_part", True)])
    best = _best_lever(plan)
    doc.paragraph(f"The largest is {best['lever']}: {dur(best['gain_seconds'])} per inference." if best else
                  "None of them makes the plan faster.")
    other = [lv for lv in plan["levers"] if not lv.get("this_part", True)]
    if other:
        doc.paragraph(f"What-if on other hardware, not levers of {arch} (a platform with faster DDR, a part with "
                      f"more columns than {arch} has; no recommendation here rests on them):")
        _lever_table(doc, p, other)


def _lever_table(doc: Document, p: float, levers: list[dict]) -> None:
    rows = [[lv["lever"], f"cannot run: {lv['error'] or 'no reason recorded'}" if lv["seconds"] is None
             else dur(lv["seconds"]), "" if lv["seconds"] is None else saved(p, lv["seconds"])] for lv in levers]
    doc.table(["change", "time", "against the plan"], rows)


def _not_applied(doc: Document, plan: dict) -> None:
    doc.heading("Steps of the method not run here")
    doc.paragraph(f"One placement per regime (step 3): one CNN inference at batch {plan['inputs']['batch']} is one "
                  "regime; for another batch size export the model at that batch (or with a symbolic batch dimension "
                  "and `--dim NAME=N`) and run again. Measured bandwidth and compression "
                  "(step 4): `fastsim study bandwidth` measures the columns' DMA bandwidth. Weights static or "
                  "streamed (step 5): the conv search decides per layer (the `w:` part of each mapping above).")


def _reproduce(doc: Document, rep: dict) -> None:
    doc.heading("6. Reproduce")
    dims = " ".join(f"{k}={v}" for k, v in rep["dims"].items()) or "none"
    doc.code("\n".join([rep["command"], f"# fastsim {rep['version']}",
                        f"# arch {rep['arch']} sha256:{rep['arch_sha256']}",
                        f"# model {rep['model_file']} sha256:{rep['model_sha256']}",
                        f"# dims: {dims}; epilogues folded: {rep['fold_epilogues']}",
                        f"# search budget: {rep['search_budget']} candidates per op; deterministic, no seeds"]))
