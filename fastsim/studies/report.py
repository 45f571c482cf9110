"""Study reports: Markdown with the evidence tables and PNG figures (matplotlib, headless): the
helpers every study's writers share, and the writers of the studies that keep them here. Each
study's writers are declared with it (its ``STUDY``; ``fastsim.studies.registry.write_report``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from ..figures import pyplot  # one headless matplotlib setup for every figure fastsim draws
from ..mapping.dispatch import dispatches_of_text


def save_figure(plt, fig, path: Path | None):
    """Lay out; write and close the figure, or return it (``path`` None: for tests to inspect)."""
    fig.tight_layout()
    if path is None:
        return fig
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g}"


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def ablate_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    out = [f"# Ablation ranking: {ds.attrs['model']} on {ds.attrs['arch']} ({ds.attrs['weights']} weights)",
           "",
           "Each op class in turn computes nothing while all of its data still moves; the whole forward "
           "pass is simulated again with the baseline's fusion and cuts. Deltas are differences of whole "
           "runs. Optimize the top of each ranking first. `time share` is the class's share of the run (what "
           "a per-kernel profile shows): a large share with a small delta is time spent moving data, which a "
           "faster kernel would not shorten and a better placement or dataflow would. `cast` is the weight "
           "dequantization inside the gemm ops: its row is a part of gemm's, not an addition to it.", ""]
    for regime in ds.regime.values:
        r = ds.sel(regime=regime)
        present = [c for c in ds.op_class.values if int(r["rank"].sel(op_class=c)) > 0]
        present.sort(key=lambda c: int(r["rank"].sel(op_class=c)))
        top = str(r.top_class.values)
        out += [f"## {regime}", "",
                f"Baseline {ms(float(r.baseline_seconds))} ms; with every class's compute removed "
                f"{ms(float(r.data_movement_seconds))} ms (pure data movement). Layout: "
                + (f"as built in `{ds.attrs['layout_file']}`, " if ds.attrs.get("layout_file") else "")
                + f"fusion `{r.fusion.values}`.", ""]
        if top:
            t = r.sel(op_class=top)
            out += [f"**Optimize first: {top}** ({ms(float(t.delta_seconds))} ms, "
                    f"{100 * float(t.share):.1f} % of the regime; {100 * float(t.exposed_share):.1f} % of its "
                    f"kernel time is exposed, the rest hides under data movement).", ""]
        rows = []
        for c in present:
            x = r.sel(op_class=c)
            exposed = float(x.exposed_share)
            rows.append([int(x["rank"]), c, ms(float(x.delta_seconds)), f"{100 * float(x.share):.2f} %",
                         ms(float(x.op_seconds)), f"{100 * float(x.time_share):.1f} %", ms(float(x.compute_seconds)),
                         ms(float(x.movement_seconds)),
                         "" if np.isnan(exposed) else f"{100 * exposed:.1f} %", str(x.bound_by.values)])
        out += [table(["rank", "class", "delta ms", "share", "class ms", "time share", "compute ms", "movement ms",
                       "compute exposed", "highest utilization"], rows), ""]
    if figure:
        out += [f"![time saved per op class]({figure})", ""]
    return "\n".join(out)


def few_ticks(axis, n: int = 4) -> None:
    """At most ``n`` tick intervals in small type: long decimal labels side by side stay apart."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=n))
    axis.set_tick_params(labelsize=8)


def regime_panels(ds: xr.Dataset, height: float):
    """(pyplot, figure, [(axes, regime label)]): one panel per regime, side by side."""
    plt = pyplot()
    n = len(ds.regime)
    fig, axes = plt.subplots(1, n, figsize=(4.5 * n, height), squeeze=False)
    return plt, fig, list(zip(axes[0], ds.regime.values))


def ablate_figure(ds: xr.Dataset, path: Path | None = None):
    plt, fig, panels = regime_panels(ds, 3.2)
    for ax, regime in panels:
        r = ds.sel(regime=regime)
        present = [c for c in ds.op_class.values if int(r["rank"].sel(op_class=c)) > 0]
        present.sort(key=lambda c: -int(r["rank"].sel(op_class=c)))
        delta = np.array([float(r.delta_seconds.sel(op_class=c)) * 1e3 for c in present])
        ax.barh(present, delta, color=["tab:red" if c == str(r.top_class.values) else "tab:gray" for c in present])
        ax.set_title(f"{regime} (baseline {ms(float(r.baseline_seconds))} ms)", fontsize=9)
        ax.set_xlabel("time saved without its compute (ms)")
        few_ticks(ax.xaxis)
    fig.suptitle(f"Ablation: {ds.attrs['model']} on {ds.attrs['arch']}", fontsize=10)
    return save_figure(plt, fig, path)


def cuts_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    out = [f"# Dispatch cuts: {ds.attrs['model']} on {ds.attrs['arch']} ({ds.attrs['weights']} weights)", "",
           "The fastest cut set for every dispatch count, found by dynamic programming over layer "
           "boundaries (every dispatch's cost simulated; dispatches that do not fit excluded), with the "
           "layout (fusion) pinned. Each boundary of the best set is priced against the merged dispatch it "
           f"replaces. Host round trip per dispatch: {ds.attrs['dispatch_overhead_s'] * 1e6:.0f} us.", ""]
    for regime in ds.regime.values:
        r = ds.sel(regime=regime)
        best = str(r.best_cuts.values)
        n_best = dispatches_of_text(best)
        out += [f"## {regime}", "",
                f"**Best: {n_best} dispatch(es), cuts after layers [{best}]: {ms(float(r.best_seconds))} ms** "
                f"(default greedy cut [{r.default_cuts.values}]: {ms(float(r.default_seconds))} ms). "
                f"Layout: fusion `{r.fusion.values}`.", ""]
        rows = []
        shown = [k for k in ds.dispatches.values if k <= n_best + 3 or bool(r.pareto.sel(dispatches=k))]
        for k in shown:
            x = r.sel(dispatches=k)
            if np.isnan(float(x.seconds)):
                rows.append([int(k), "does not fit", "", "", ""])
                continue
            rows.append([int(k), ms(float(x.seconds)), f"{float(x.energy_pj) * 1e-9:.4g}", f"[{x.cuts.values}]",
                         "yes" if bool(x.pareto) else ""])
        out += [table(["dispatches", "fastest ms", "energy mJ", "cuts after layers", "Pareto"], rows), ""]
        if len(shown) < len(ds.dispatches):
            out += [f"(More dispatches, up to {int(ds.dispatches.values[-1])}, are slower and off the front: "
                    "in the Dataset.)", ""]
        layers = [int(v) for v in r.boundary_after_layer.values if int(v) >= 0]
        if layers:
            rows = []
            for j, layer in enumerate(layers):
                b = r.isel(boundary=j)
                rows.append([layer] + [ms(float(b[f"boundary_{k}_seconds"])) for k in
                                       ("write_out", "read_back", "host_round_trip", "setup_in_round_trip",
                                        "weight_reload", "program_reload", "net")] + [str(b.boundary_relieves.values)])
            out += ["Boundaries of the best cut set, against the merged dispatch each replaces (ms):", "",
                    table(["after layer", "write-out", "read-back", "host", "set-up in host", "weight reload",
                           "program reload", "net", "relieves"], rows), ""]
    if figure:
        out += [f"![dispatch count vs time]({figure})", ""]
    return "\n".join(out)


def cuts_figure(ds: xr.Dataset, path: Path | None = None):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for regime in ds.regime.values:
        r = ds.sel(regime=regime)
        k, t = ds.dispatches.values, r.seconds.values * 1e3
        line = ax.plot(k, t / np.nanmin(t), marker="o", label=f"{regime} ({ms(float(np.nanmin(t)) / 1e3)} ms best)")
        front = r.pareto.values
        ax.plot(k[front], (t / np.nanmin(t))[front], "s", color=line[0].get_color(), markersize=9, fillstyle="none")
    ax.set_xlabel("dispatches")
    ax.set_ylabel("time / best time")
    ax.set_title(f"Dispatch cuts: {ds.attrs['model']} on {ds.attrs['arch']} (squares: Pareto)", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(plt, fig, path)


def _why_not(ds: xr.Dataset, regime: str, overlay: str) -> str:
    """Why ``overlay``'s layout cannot run ``regime`` (the study's record of the simulation's refusal)."""
    if "cannot_run" not in ds or overlay not in ds.overlay.values:
        return "the study recorded no reason"
    return str(ds.cannot_run.sel(regime=regime, overlay=overlay).values) or "the study recorded no reason"


def overlays_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    a = ds.attrs
    out = [f"# Overlays: {a['model']} on {a['arch']} ({a['weights']} weights)", "",
           f"Request mix (prompt:new tokens:batch:weight): {a['mix']}. Each regime's own overlay is its "
           "searched layout; every overlay is also run in every other regime. Per-regime overlays pay "
           f"{a['switches_per_request']} switches per request at {ms(a['switch_seconds'])} ms "
           f"({a['switch_change']}).", ""]
    rows = [[g, str(ds.fusion.sel(regime=g).values), str(ds.residency_reason.sel(regime=g).values),
             ms(float(ds.seconds.sel(regime=g, overlay=g))), str(ds.best_overlay.sel(regime=g).values),
             ms(float(ds.seconds.sel(regime=g).min()))] for g in ds.regime.values]
    out += ["## Each regime's own (searched) overlay and its best one", "",
            table(["regime", "own fusion", "weights", "own ms", "best overlay", "best ms"], rows), ""]
    rows = [[g] + [(f"cannot run: {_why_not(ds, g, o)}" if np.isnan(float(v)) else ms(float(v)))
                   for o, v in zip(ds.overlay.values, ds.seconds.sel(regime=g).values)] for g in ds.regime.values]
    out += ["## Every overlay in every regime (ms; columns: whose overlay)", "",
            table(["regime"] + [str(o) for o in ds.overlay.values], rows), ""]
    rows = [[p, "cannot run: " + "; ".join(f"not {g} ({_why_not(ds, g, str(p).removeprefix('single:'))})"
                                           for g in ds.regime.values
                                           if np.isnan(float(ds.seconds.sel(regime=g, overlay=str(p).removeprefix('single:')))))
             if np.isnan(float(v)) else ms(float(v))] for p, v in zip(ds.plan.values, ds.mix_seconds.values)]
    gain = a["gain_seconds"]
    if gain > 0:
        verdict = (f"**Per-regime overlays save {ms(gain)} ms over the best single overlay ({a['best_single']}), "
                   "net of the switches.**")
    elif gain == 0:
        verdict = f"**One overlay ({a['best_single']}) is the best for every regime: nothing to switch.**"
    else:
        verdict = (f"**One overlay ({a['best_single']}) serves the mix best: per-regime overlays would lose "
                   f"{ms(-gain)} ms to the switches.**")
    out += ["## The mix", "", table(["plan", "mix ms"], rows), "", verdict, ""]
    differs = [c for c, d in zip(ds.op_class.values, ds.binding_differs.values) if d]
    if differs:
        out += ["Op classes bound by different resources in different regimes (a placement tuned for one regime "
                "may not suit another; the mix above says whether one overlay still serves them all):", ""]
        out += [f"- {c}: " + ", ".join(f"{g} {ds.bound_by.sel(regime=g, op_class=c).values}" for g in ds.regime.values)
                for c in differs]
        out += [""]
    out += ["## The overlays (`fastsim run llm --overlay FILE` takes one table per regime)", "", "```toml",
            a["overlays_toml"], "```", ""]
    if figure:
        out += [f"![request mix per plan]({figure})", ""]
    return "\n".join(out)


def overlays_figure(ds: xr.Dataset, path: Path | None = None):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.0))
    plans = [str(p) for p in ds.plan.values]
    values = np.nan_to_num(ds.mix_seconds.values * 1e3, nan=0.0)
    colors = ["tab:blue"] + ["tab:gray"] * (len(plans) - 1)
    ax.barh(plans, values, color=colors)
    for i, v in enumerate(ds.mix_seconds.values):
        if np.isnan(v):
            ax.text(0, i, " cannot run every regime", va="center", fontsize=7)
    ax.set_xlabel("request mix time (ms)")
    ax.set_title(f"Overlays: {ds.attrs['model']} on {ds.attrs['arch']} (mix {ds.attrs['mix']})", fontsize=9)
    return save_figure(plt, fig, path)


def bandwidth_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    gb = 1e9
    sizes = [int(x) for x in ds.size_bytes.values]
    out = [f"# Bandwidth harness: {ds.attrs['arch']}", "",
           f"Memcpy transfers between DDR and the mem tiles, {ds.attrs['total_bytes']:,} bytes per channel; "
           f"effective GB/s (bytes over simulated time). DDR cap {ds.attrs['ddr_bytes_per_s'] / gb:.4g} GB/s.", ""]
    for n in ds.channels.values:
        rows = []
        for col in ds.column.values:
            for d in ds.direction.values:
                v = ds.bytes_per_s.sel(column=col, direction=d, channels=n).values / gb
                rows.append([col, d] + [f"{x:.4g}" for x in v])
        out += [f"## {int(n)} channel(s) per column", "",
                table(["column", "direction"] + [f"{s:,} B" for s in sizes], rows), ""]
    eq, pr = (float(ds.split_bytes_per_s.sel(split=k)) / gb for k in ("equal", "proportional"))
    out += ["## One tensor over every column", "",
            f"Equal shares: **{eq:.4g} GB/s**; shares in proportion to each column's measured read bandwidth: "
            f"**{pr:.4g} GB/s** (sum of the columns alone: "
            f"{float(ds.column_read_bytes_per_s.sum()) / gb:.4g} GB/s).", ""]
    if figure:
        out += [f"![bandwidth vs transfer size]({figure})", ""]
    return "\n".join(out)


def bandwidth_figure(ds: xr.Dataset, path: Path | None = None):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for col in ("0", "all"):
        for d in ds.direction.values:
            v = ds.bytes_per_s.sel(column=col, direction=d, channels=ds.channels.values[0]).values / 1e9
            ax.plot(ds.size_bytes.values, v, marker="o", label=f"column {col}, {d}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("GB/s")
    ax.set_title(f"Bandwidth harness: {ds.attrs['arch']} ({int(ds.channels.values[0])} channel)", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(plt, fig, path)


def compression_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    out = [f"# Compression measured on {ds.attrs['weights_file']}", "",
           f"{ds.sizes['tensor']} tensors; int8/int4 with one bf16 scale per {ds.attrs['group_size']} values; "
           f"zero-value compression with a 32-bit mask per {ds.attrs['block_bytes']}-byte block. Ratio = baseline "
           "bytes / scheme bytes (measured), against the scheme's nominal ratio.", ""]
    for kind in ("weights", "kv"):
        total = ds[f"total_ratio_{kind}"]
        if not np.isfinite(total.values).any():
            continue
        nominal = ds[f"total_nominal_ratio_{kind}"]
        rows = [[str(s), str(ds.baseline.sel(scheme=s).values), f"{float(total.sel(scheme=s)):.3f}",
                 f"{float(nominal.sel(scheme=s)):.3f}"] for s in ds.scheme.values]
        out += [f"## All {kind} tensors", "", table(["scheme", "baseline", "measured", "nominal"], rows), ""]
    if figure:
        out += [f"![measured vs nominal ratio]({figure})", ""]
    return "\n".join(out)


def compression_figure(ds: xr.Dataset, path: Path | None = None):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.4))
    x = np.arange(ds.sizes["scheme"])
    ax.bar(x - 0.2, ds.total_ratio_weights.values, 0.4, label="measured (weights)")
    ax.bar(x + 0.2, ds.total_nominal_ratio_weights.values, 0.4, label="nominal (weights)")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x, [str(s) for s in ds.scheme.values], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("compression ratio (baseline / stored bytes)")
    ax.set_title("Compression on real weights", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(plt, fig, path)
