"""Hybrid per-op dataflow vs the best single style (method step 6, docs/studies.md), with a playbook.

For each regime the whole forward pass runs four times with the layout (fusion, cuts) pinned:
every matmul-like op weight-stationary, every one input-stationary, every one output-stationary
(``dataflow`` pins by class; an op a style cannot map leaves that style infeasible), and the
searched baseline. An op's time and energy under a style do not depend on the other ops' styles
(hand-offs follow the fusion, not the producer's loop order), so the hybrid takes, per op, the
style with the least time (``hybrid_latency``) or the least energy (``hybrid_energy``); both are
then simulated again as whole runs with per-op pins, and those measured runs are what is
reported. The whole run can still differ from the sum: a dispatch links every distinct kernel, and
a freer mix of styles can overflow program memory and reload programs. So ``hybrid_latency`` is
searched on measured whole runs (``_hybrid``): never slower than the best single style.
Layers are identical, so a choice per op name is a choice for every layer.

A transition between ops of different styles costs what the data path between them costs (DDR or
a mem-tile hand-off, as the fusion says); no extra re-layout is charged (an assumption, stated in
the playbook). Shape sensitivity comes from the regimes: the same op at different M (tokens x
batch) may change style, and the playbook turns such changes into rules.
"""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..errors import ConfigError
from ..graph import TENSOR_KINDS
from ..llm import LlmStudy, simulate_llm
from ..llm.run import pinned_layout
from .declaration import Command, Step, Study, SweepKind
from .document import Document
from .memo import duration, energy
from .regimes import Regime, parse_regimes
from .report import few_ticks, ms, regime_panels, save_figure, table
from .variables import StudyVariable as Output, Variable, build

STYLES = ("ws", "is", "os")
MATMUL_CLASSES = ("gemm", "attention")
POINTS = STYLES + ("searched", "hybrid_latency", "hybrid_energy")
MOVES = 12  # most single-op moves the hybrid search tries (each is a whole run)
EVIDENCE = ("weight_reuse", "activation_reuse", "l1_peak_bytes", "l2_peak_bytes")  # per op, from the hybrid run


def _per_op(ds: xr.Dataset) -> dict:
    """Per matmul op name: (seconds, energy_pj) summed over its layers, plus the Dataset rows."""
    out = {}
    for i, (name, flow) in enumerate(zip(ds.op_name.values, ds.dataflow.values)):
        if flow not in STYLES:
            continue
        s, e, rows = out.get(str(name), (0.0, 0.0, []))
        out[str(name)] = (s + float(ds.op_seconds.values[i]), e + float(ds.energy_pj.values[i]), rows + [i])
    return out


def _run(study: LlmStudy, arch: Arch, dataflow: dict):
    try:
        return simulate_llm(replace(study, dataflow={**study.dataflow, **dataflow}), arch)
    except ConfigError:
        return None


def dataflow(base: LlmStudy = LlmStudy(), regimes=None, arch: Arch = NPU2) -> xr.Dataset:
    """Per regime: all-WS, all-IS, all-OS, the searched mapping and the two hybrids, each a
    measured whole run (seconds, joules); per op the recommended style and the evidence.

    Returns
    -------
    xarray.Dataset over (regime, point) with ``seconds``, ``energy_j``, ``pareto``; over
    (regime, op, style) ``op_seconds``/``op_energy_j`` of each op under each style; over
    (regime, op) the ``choice`` (hybrid_latency's style) and its evidence (reuse, DDR traffic by
    tensor kind, buffer peaks, gain over the best single style); per regime the ``baseline``
    (best single style by latency) and the ``chosen`` point.
    """
    return dataflow_dataset([dataflow_regime(base, regime, arch) for regime in parse_regimes(regimes)], base, arch)


def dataflow_regime(base: LlmStudy, regime, arch: Arch = NPU2) -> tuple:
    """One regime's measured runs (a row of ``dataflow_dataset``): regimes share nothing, so
    ``fastsim optimize`` runs them in different worker processes."""
    study = regime.study(base)
    searched = simulate_llm(study, arch)
    pinned = pinned_layout(study, searched)
    runs = {s: _run(pinned, arch, {c: s for c in MATMUL_CLASSES}) for s in STYLES}
    runs["searched"] = searched  # its own layout pinned reproduces it exactly: no second run
    per_style = {s: _per_op(ds) for s, ds in runs.items() if ds is not None and s in STYLES}
    names = list(_per_op(runs["searched"]))
    by_time, runs["hybrid_latency"] = _hybrid(pinned, arch, runs, per_style, names)
    runs["hybrid_energy"] = _run(pinned, arch, _pick(per_style, names, STYLES, by_energy=True))
    return regime, runs, per_style, names, by_time


def dataflow_prefetch(base: LlmStudy, regime, arch: Arch = NPU2, styles=("os", "is")) -> None:
    """Simulate ahead what ``dataflow_regime`` asks for after its longest run (the all-ws one):
    the other style runs, last first. A worker with time to spare beside that regime fills the
    shared cache with them (``result_cache``: large runs on disk, claimed while they run), so the
    regime finds them done; its answers are the same bits whoever simulated them."""
    study = regime.study(base)
    pinned = pinned_layout(study, simulate_llm(study, arch))
    for style in styles:
        _run(pinned, arch, {c: style for c in MATMUL_CLASSES})


def _hybrid(pinned, arch, runs, per_style, names):
    """The fastest measured mix: start from the better of the best single style and every op on its
    own fastest style, then move ops one at a time (largest per-op gain first) to their fastest
    style, keeping each move only if the whole run gets faster (a dispatch links every distinct
    kernel: a freer mix can overflow program memory and reload programs)."""
    def total(ds):
        return (float(ds.total_seconds), float(ds.energy_pj.sum()))

    singles = [(s, runs[s]) for s in STYLES if runs.get(s) is not None]
    style, ds = min(singles, key=lambda t: total(t[1]))
    best_pick, best = {n: style for n in names if n in per_style[style]}, ds
    free = _pick(per_style, names, STYLES, by_energy=False)
    trial = _run(pinned, arch, free)
    if trial is not None and total(trial) < total(best):
        best_pick, best = free, trial
    gains = sorted((per_style[best_pick[n]][n][0] - per_style[free[n]][n][0], n) for n in free
                   if free[n] != best_pick.get(n))
    for gain, name in reversed(gains[-MOVES:]):
        if gain <= 0:
            continue
        pick = {**best_pick, name: free[name]}
        trial = _run(pinned, arch, pick)
        if trial is not None and total(trial) < total(best):
            best_pick, best = pick, trial
    return best_pick, best


def _pick(per_style: dict, names: list[str], allowed, by_energy: bool) -> dict:
    """Per op, the allowed style with the least time (or energy); ties go to the other metric."""
    out = {}
    for name in names:
        options = {s: per_style[s][name][:2] for s in allowed if s in per_style and name in per_style[s]}
        if options:
            key = (lambda s: (options[s][1], options[s][0], STYLES.index(s))) if by_energy else \
                (lambda s: (options[s][0], options[s][1], STYLES.index(s)))
            out[name] = min(options, key=key)
    return out


def _pareto(seconds: np.ndarray, energy: np.ndarray) -> np.ndarray:
    ok = np.isfinite(seconds) & np.isfinite(energy)
    out = np.zeros(len(seconds), bool)
    for i in np.nonzero(ok)[0]:
        better = (seconds < seconds[i]) | (energy < energy[i])
        dominated = ok & (seconds <= seconds[i]) & (energy <= energy[i]) & better
        out[i] = not dominated.any()
    return out


def dataflow_dataset(rows, base: LlmStudy, arch: Arch = NPU2) -> xr.Dataset:
    """The study's Dataset from every regime's runs (``dataflow_regime``, in regime order): the
    per-point and per-op halves are built apart because only the per-op half needs each regime's
    baseline style."""
    from ..results import LEVELS

    ops = []
    for _, _, _, names, _ in rows:
        ops += [n for n in names if n not in ops]
    points = _points(rows)
    per_op = _per_op_evidence(rows, ops, points["baseline"])
    return build(OUTPUTS, {**points, **per_op},
                 coords={"regime": [r[0].label for r in rows], "point": list(POINTS), "op": ops,
                         "style": list(STYLES), "tensor_kind": list(TENSOR_KINDS), "level": list(LEVELS)},
                 attrs={"study": "dataflow", "model": rows[0][1]["searched"].attrs["model"], "arch": arch.name,
                        "weights": base.precision.weights, "kv": base.precision.kv,
                        "version": _version(),
                        "transition_cost": "hand-offs between ops cost their data path (DDR, or mem tiles when "
                                           "fused); no extra re-layout is charged between ops of different styles "
                                           "(assumption)"})


def _points(rows) -> dict:
    """Per regime, each point's measured seconds, joules and program reloads, the Pareto front,
    the best single style (the baseline the hybrid must beat) and the chosen point: the fastest
    on the front, energy breaking ties."""
    nr = len(rows)
    seconds, energy = np.full((nr, len(POINTS)), np.nan), np.full((nr, len(POINTS)), np.nan)
    reload = np.full((nr, len(POINTS)), np.nan)
    pareto, baseline, chosen, fusion, m_rows = [], [], [], [], []
    for i, (regime, runs, _, _, _) in enumerate(rows):
        for j, p in enumerate(POINTS):
            if runs.get(p) is not None:
                seconds[i, j] = float(runs[p].total_seconds)
                energy[i, j] = float(runs[p].energy_pj.sum()) * 1e-12
                reload[i, j] = float(runs[p].program_reload_seconds)
        singles = [j for j, p in enumerate(POINTS) if p in STYLES and np.isfinite(seconds[i, j])]
        base_j = min(singles, key=lambda j: seconds[i, j])
        baseline.append(POINTS[base_j])
        front = _pareto(seconds[i], energy[i])
        pareto.append(front)
        on_front = [j for j in range(len(POINTS)) if front[j]]
        chosen.append(POINTS[min(on_front, key=lambda j: (seconds[i, j], energy[i, j]))] if on_front else "")
        fusion.append(runs["searched"].attrs["fusion"])
        m_rows.append(int(runs["searched"].attrs["batch"]) * (1 if regime.regime == "decode" else regime.tokens))
    return {"seconds": seconds, "energy_j": energy, "program_reload_seconds": reload, "pareto": np.array(pareto),
            "baseline": np.array(baseline, dtype=str), "chosen": np.array(chosen, dtype=str),
            "fusion": np.array(fusion, dtype=str), "m_rows": np.array(m_rows)}


def _per_op_evidence(rows, ops: list[str], baseline) -> dict:
    """Per (regime, op): its time and energy under each style, the hybrid's choice, and the
    evidence for it from the hybrid run (reuse, buffer peaks, DDR traffic by tensor kind and
    bytes per level, gain over the baseline style), which the playbook quotes."""
    from ..results import LEVELS

    nr, no, ns = len(rows), len(ops), len(STYLES)
    op_s, op_e = np.full((nr, no, ns), np.nan), np.full((nr, no, ns), np.nan)
    choice = np.full((nr, no), "", dtype=object)
    evidence = {k: np.full((nr, no), np.nan) for k in EVIDENCE}
    traffic = np.full((nr, no, len(TENSOR_KINDS)), np.nan)
    per_level = np.full((nr, no, len(LEVELS)), np.nan)
    gain_s, gain_e = np.full((nr, no), np.nan), np.full((nr, no), np.nan)
    for i, (_, runs, per_style, names, by_time) in enumerate(rows):
        hybrid = runs["hybrid_latency"]
        hybrid_ops = _per_op(hybrid) if hybrid is not None else {}
        base_ops = per_style[str(baseline[i])]
        for name in names:
            k = ops.index(name)
            for si, s in enumerate(STYLES):
                if name in per_style.get(s, {}):
                    op_s[i, k, si], op_e[i, k, si] = per_style[s][name][0], per_style[s][name][1] * 1e-12
            choice[i, k] = by_time.get(name, "")
            if name in hybrid_ops:
                rows_i = hybrid_ops[name][2]
                for key in EVIDENCE:
                    evidence[key][i, k] = float(hybrid[key].values[rows_i].max() if "peak" in key
                                                else hybrid[key].values[rows_i].mean())
                traffic[i, k] = hybrid.ddr_bytes.values[rows_i].sum(axis=0)
                per_level[i, k] = hybrid.level_bytes.values[rows_i].sum(axis=0)
                if name in base_ops:
                    gain_s[i, k] = base_ops[name][0] - hybrid_ops[name][0]
                    gain_e[i, k] = (base_ops[name][1] - hybrid_ops[name][1]) * 1e-12
    return {"op_seconds": op_s, "op_energy_j": op_e, "choice": choice.astype(str), **evidence,
            "ddr_bytes": traffic, "level_bytes": per_level, "gain_seconds": gain_s, "gain_j": gain_e}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastsim")
    except PackageNotFoundError:
        return "unknown"


def transition_rules(ds: xr.Dataset) -> list[str]:
    """Where an op's recommended style changes with M (the regimes' tokens x batch), as rules."""
    order = np.argsort(ds.m_rows.values, kind="stable")
    rules = []
    for op in ds.op.values:
        seq = [(int(ds.m_rows.values[i]), str(ds.choice.sel(op=op).values[i])) for i in order
               if str(ds.choice.sel(op=op).values[i])]
        for (m_a, a), (m_b, b) in zip(seq, seq[1:]):
            if a != b:
                rules.append(f"{op}: {a.upper()} up to M = {m_a} rows, {b.upper()} from M = {m_b}")
    return rules


def playbook(ds: xr.Dataset) -> dict:
    """The playbook as plain data (the JSON written beside the Markdown): the Dataset's numbers."""
    out = {"inputs": {k: ds.attrs[k] for k in ("model", "arch", "weights", "kv", "version")},
           "transition_cost": ds.attrs["transition_cost"], "rules": transition_rules(ds), "regimes": {}}
    for g in ds.regime.values:
        r = ds.sel(regime=g)
        points = {str(p): {"seconds": float(r.seconds.sel(point=p)), "energy_j": float(r.energy_j.sel(point=p)),
                           "pareto": bool(r.pareto.sel(point=p))} for p in ds.point.values}
        ops = {}
        for op in ds.op.values:
            c = str(r.choice.sel(op=op).values)
            if not c:
                continue
            x = r.sel(op=op)
            rejected = {}
            for s in STYLES:
                if s == c:
                    continue
                t = float(x.op_seconds.sel(style=s))
                extra_mj = (float(x.op_energy_j.sel(style=s)) - float(x.op_energy_j.sel(style=c))) * 1e3
                rejected[s] = ("no legal mapping" if np.isnan(t) else
                               f"slower by {(t - float(x.op_seconds.sel(style=c))) * 1e3:.4g} ms "
                               f"(energy {extra_mj:+.4g} mJ)")
            ops[str(op)] = {
                "style": c, "seconds": float(x.op_seconds.sel(style=c)),
                "weight_reuse_mac_per_byte": float(x.weight_reuse),
                "activation_reuse_mac_per_byte": float(x.activation_reuse),
                "ddr_bytes": {str(k): float(v) for k, v in zip(ds.tensor_kind.values, x.ddr_bytes.values)},
                "level_bytes": {str(k): float(v) for k, v in zip(ds.level.values, x.level_bytes.values)},
                "l1_peak_bytes": float(x.l1_peak_bytes), "l2_peak_bytes": float(x.l2_peak_bytes),
                "gain_seconds": float(x.gain_seconds), "gain_j": float(x.gain_j), "rejected": rejected}
        out["regimes"][str(g)] = {"baseline": str(r.baseline.values), "chosen": str(r.chosen.values),
                                  "fusion": str(r.fusion.values), "m_rows": int(r.m_rows), "points": points,
                                  "ops": ops}
    return out


def dataflow_point(study: LlmStudy, arch: Arch) -> dict:
    """One sweep point (``[study] kind = "dataflow"``): the study's own regime, its chosen point
    against the best single style."""
    r = dataflow(study, [Regime.of(study)], arch).isel(regime=0)
    chosen, baseline = str(r.chosen.values), str(r.baseline.values)
    return {"seconds": float(r.seconds.sel(point=chosen)), "energy_j": float(r.energy_j.sel(point=chosen)),
            "baseline_seconds": float(r.seconds.sel(point=baseline)),
            "hybrid_seconds": float(r.seconds.sel(point="hybrid_latency")),
            "style_seconds": {s: float(r.seconds.sel(point=s)) for s in STYLES}}


def pins(ds: xr.Dataset, regime_label: str) -> dict:
    """The dataflow pins of the regime's chosen point (per op for a hybrid, by class for a single
    style, none for the searched mapping): what ``fastsim optimize`` plans with."""
    r = ds.sel(regime=regime_label)
    chosen = str(r.chosen.values)
    if chosen in STYLES:
        return {"gemm": chosen, "attention": chosen}
    if chosen == "searched":
        return {}
    if chosen == "hybrid_latency":
        return {str(op): str(c) for op, c in zip(ds.op.values, r.choice.values) if str(c)}
    return {}  # hybrid_energy chosen only off the latency-first rule: keep the search's


def dataflow_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    """The report is the playbook: per regime the runs, the baseline and chosen point, per op its
    style and evidence; then the transition rules."""
    book = playbook(ds)
    a = ds.attrs
    out = [f"# Dataflow playbook: {a['model']} on {a['arch']} ({a['weights']} weights, fastsim {a['version']})", "",
           "Every matmul-like op weight-, input- or output-stationary, against the best single style (the "
           "baseline), judged on whole-run latency and joules per inference; each point is a measured run "
           f"with the layout pinned. Transitions: {a['transition_cost']}.", ""]
    for g, r in book["regimes"].items():
        out += [f"## {g} (M = {r['m_rows']} rows; fusion `{r['fusion']}`)", ""]
        rows = [[p, ms(v["seconds"]), f"{v['energy_j'] * 1e3:.4g}", "yes" if v["pareto"] else ""]
                for p, v in r["points"].items()]
        out += [table(["run", "ms", "mJ", "Pareto"], rows), "",
                f"Baseline (best single style): **{r['baseline']}**. Chosen (fastest on the front): "
                f"**{r['chosen']}**.", ""]
        rows = []
        for op, v in r["ops"].items():
            rows.append([op, v["style"].upper(), f"{v['weight_reuse_mac_per_byte']:.3g}",
                         f"{v['activation_reuse_mac_per_byte']:.3g}",
                         " / ".join(f"{v['ddr_bytes'][k] / 1e6:.3g}" for k in ("activations", "weights", "psum")),
                         f"{v['level_bytes']['mem_compute'] / 1e6:.3g}",
                         f"{v['l1_peak_bytes'] / 1024:.0f} / {v['l2_peak_bytes'] / 1024:.0f}",
                         ms(v["gain_seconds"]), f"{v['gain_j'] * 1e3:.3g}",
                         "; ".join(f"{s.upper()} {why}" for s, why in v["rejected"].items())])
        out += [table(["op", "style", "weight reuse MAC/B", "act. reuse MAC/B", "DDR MB act/wgt/psum",
                       "mem→core MB", "L1/L2 peak KiB", "gain ms", "gain mJ", "rejected"], rows), ""]
    out += ["## Transition rules (how the choice moves with M)", ""]
    out += [f"- {rule}" for rule in book["rules"]] or ["- none: every op keeps its style across these regimes"]
    out += ["", f"Styles compared: {', '.join(s.upper() for s in STYLES)}; the numbers are the Dataset's "
            "(`dataflow.json` beside this file holds them all).", ""]
    if figure:
        out += [f"![latency vs energy]({figure})", ""]
    return "\n".join(out)


def dataflow_figure(ds: xr.Dataset, path: Path | None = None):
    """Latency vs energy of every run per regime; the runs told apart by colour in one legend (labels
    written beside close points overlap and cannot be read)."""
    from matplotlib.lines import Line2D

    plt, fig, panels = regime_panels(ds, 3.3)
    points = [str(p) for p in ds.point.values]
    colour = {p: f"C{i % 10}" for i, p in enumerate(points)}
    for ax, g in panels:
        r = ds.sel(regime=g)
        for p in points:
            x, y = float(r.seconds.sel(point=p)) * 1e3, float(r.energy_j.sel(point=p)) * 1e3
            if not np.isnan(x):
                ax.plot(x, y, "o" if bool(r.pareto.sel(point=p)) else "x", color=colour[p], ms=6)
        ax.set_xlabel("latency (ms)")
        ax.set_ylabel("energy (mJ)")
        ax.set_title(str(g), fontsize=9)
        ax.ticklabel_format(axis="both", style="sci", scilimits=(-3, 4), useOffset=False)
        few_ticks(ax.xaxis)
        few_ticks(ax.yaxis, 6)
    handles = [Line2D([], [], ls="", marker="s", color=colour[p], label=p) for p in points]
    panels[-1][0].legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), title="run",
                         title_fontsize=7)
    fig.suptitle(f"Dataflow: {ds.attrs['model']} on {ds.attrs['arch']} (o: on the Pareto front, x: off it)",
                 fontsize=10)
    return save_figure(plt, fig, path)


def dataflow_section(doc: Document, ds) -> None:
    """The memo's section: per regime the best single style, the chosen point, the ops that gain
    off it and the rejected points; then the playbook's headline rules."""
    book = playbook(ds)
    for g, r in book["regimes"].items():
        pts = r["points"]
        chosen, base = pts[r["chosen"]], pts[r["baseline"]]
        moved = [f"{op} {v['style'].upper()} (saves {duration(v['gain_seconds'])})" for op, v in r["ops"].items()
                 if v["style"] != r["baseline"] and v["gain_seconds"] > 0]
        text = (f"**{g}** (M = {r['m_rows']} rows): the best single style is {r['baseline'].upper()} "
                f"({duration(base['seconds'])}, {energy(base['energy_j'])}); chosen: {r['chosen']} "
                f"({duration(chosen['seconds'])}, {energy(chosen['energy_j'])}).")
        if moved:
            text += " Ops off the best single style that gain: " + ", ".join(moved) + "."
        others = sorted(((v["seconds"], p) for p, v in pts.items() if p != r["chosen"] and not math.isnan(v["seconds"])))
        text += " Rejected: " + "; ".join(f"{p} {duration(s)} (+{duration(s - chosen['seconds'])})" for s, p in others) + "."
        doc.paragraph(text)
    rules = book["rules"]
    if rules:
        doc.paragraph(f"Headline rules of the playbook ({len(rules)} in all, `studies/dataflow.json`):")
        doc.bullets(rules[:6] + ([f"... and {len(rules) - 6} more"] if len(rules) > 6 else []))
    else:
        doc.paragraph("Every op keeps its style across these regimes (no transition rules).")


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "seconds": Output(("regime", "point"), "s",
        "end-to-end time of the whole run (NaN: a style cannot map some op)"),
    "energy_j": Output(("regime", "point"), "J", "energy per inference (ops, arch energy table)"),
    "program_reload_seconds": Output(("regime", "point"), "s",
        "program reloads of the run (its distinct kernels exceed program memory)"),
    "pareto": Output(("regime", "point"), "1", "no other point is as fast and as frugal"),
    "baseline": Output(("regime",), "1", "the best single style by latency: the explicit baseline"),
    "chosen": Output(("regime",), "1", "the fastest point on the Pareto front"),
    "fusion": Output(("regime",), "1", "the pinned layout"),
    "m_rows": Output(("regime",), "rows", "M of the token-parallel ops (tokens x batch) in the regime"),
    "op_seconds": Output(("regime", "op", "style"), "s", "the op (all its layers) under each single style"),
    "op_energy_j": Output(("regime", "op", "style"), "J",
        "the op's energy (all its layers) under each single style"),
    "choice": Output(("regime", "op"), "1", "recommended style (least time; ties: less energy)"),
    "weight_reuse": Output(("regime", "op"), "MAC/byte",
        "MACs per byte of weights (or KV) fetched from DDR, chosen style"),
    "activation_reuse": Output(("regime", "op"), "MAC/byte",
        "MACs per byte of activations fetched from DDR, chosen style"),
    "l1_peak_bytes": Output(("regime", "op"), "bytes", "buffer pressure: most core memory any core uses"),
    "l2_peak_bytes": Output(("regime", "op"), "bytes", "buffer pressure: most mem-tile memory any mem tile uses"),
    "ddr_bytes": Output(("regime", "op", "tensor_kind"), "bytes",
        "DDR traffic of the op (all layers) by tensor kind, chosen style"),
    "level_bytes": Output(("regime", "op", "level"), "bytes",
        "traffic of the op (all layers) per level of the hierarchy (DDR, shim-mem, mem-core, core-core, "
        "mem-mem), chosen style"),
    "gain_seconds": Output(("regime", "op"), "s", "time the op saves against the baseline style"),
    "gain_j": Output(("regime", "op"), "J", "energy the op saves against the baseline style"),
}


def _tasks(base, regimes, mix, arch) -> dict:
    """As a step of ``fastsim optimize``: the regimes share nothing, one task each."""
    return {f"dataflow@{r.label}": (dataflow_regime, (base, r, arch)) for r in regimes}


def _result(done: dict, base, regimes, arch) -> xr.Dataset:
    """As a step of ``fastsim optimize``: the regimes' answers as one Dataset."""
    return dataflow_dataset([done[f"dataflow@{r.label}"] for r in regimes], base, arch)


def _write_playbook(ds: xr.Dataset, out: Path) -> None:
    """The playbook's numbers as JSON beside the report, for tools to read."""
    (out / "dataflow.json").write_text(json.dumps(playbook(ds), indent=1))


STUDY = Study(
    "dataflow", dataflow, OUTPUTS, dataflow_markdown, dataflow_figure, _write_playbook,
    command=Command("""Weight-, input- or output-stationary per op, or one style for all? Runs all-WS, all-IS,
    all-OS and a hybrid per-op choice (searched on measured whole runs) and judges them on latency
    and joules per inference (Pareto front, chosen point stated). Writes a playbook: per op the
    style, reuse factors, DDR traffic by tensor kind, buffer pressure, gain over the best single
    style, rejected styles with their numbers, and rules for how the choice moves with M.

    Example: fastsim study dataflow --regime decode:4096 --regime prefill:256 --regime prefill:2048 --report out/
    """, dataflow),
    sweep=SweepKind(dataflow_point, {  # one regime per point
        "seconds": Variable("seconds", "s", "end-to-end time of the chosen point (fastest on the latency-energy "
                            "front)"),
        "energy_j": Variable("energy_j", "J", "energy per inference of the chosen point"),
        "baseline_seconds": Variable("baseline_seconds", "s", "end-to-end time of the best single style (the "
                                     "baseline)"),
        "hybrid_seconds": Variable("hybrid_seconds", "s", "end-to-end time of the hybrid per-op choice"),
        "style_seconds": Variable("style_seconds", "s", "end-to-end time with every matmul-like op in one style",
                                  extra_dim=("style", STYLES))},
        without=frozenset({"noop"})),
    step=Step(3, "choosing a style per op", _tasks,
              lambda ds, label: {"dataflow_point": str(ds.chosen.sel(regime=label).values),
                                 "dataflow_pins": pins(ds, label)},
              dataflow_section, {"dataflow@prefill": 0, "dataflow": 2}, _result))
