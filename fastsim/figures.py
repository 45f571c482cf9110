"""Figures of results, drawn headless: each function draws one kind on a matplotlib Figure and
returns it, so that tests can check axes, series and labels. ``fastsim plot`` (``plot.py``) picks
one for a result; study reports (``studies/report.py``) draw with the same headless set-up.

- ``sweep_figure``, ``heatmap_figure``: any output of a sweep over one axis (lines, one per value
  of a second axis) or two (a heatmap);
- ``kv_figure``: KV-cache vs weight DDR bytes over context (an LLM sweep), one curve per model
  coloured by family and one panel per batch, the crossover interpolated (``kv_crossover``) and
  sliding windows marked;
- ``classes_figure``: time by op class and by layer (an LLM run);
- ``stalls_figure``: stall attribution per op, what its DMA channels did, for the ops taking the
  most time (an LLM run);
- ``roofline_figure``: achieved ops/s against ops per DDR byte with the arch's compute and DDR
  ceilings (a GEMM run);
- ``mismatch_figure``: the systolic tile-mismatch histogram (a systolic run);
- ``occupancy_figure``: busy share of every core and DMA channel over time (a run's ``--trace`` file;
  an LLM run's trace: the share of core- and channel-cycles in each state, op by op).
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from .errors import ConfigError


def pyplot():
    """matplotlib.pyplot set up for files only (the Agg backend): the one matplotlib set-up of fastsim."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on clusters and CI
    import matplotlib.pyplot as plt

    return plt


def _figure(w=6.0, h=3.6):
    return pyplot().subplots(figsize=(w, h))


def _label(da) -> str:
    units = da.attrs.get("units", "")
    return f"{da.name} ({units})" if units and units != "1" else str(da.name)


def _over(ds, var: str, x: str, y: str | None):
    """``var`` of the good points (status 0) over axes ``x`` (and ``y``); other axes at their first value."""
    if var not in ds:
        raise ConfigError([f"var = {var!r}: not in the result; one of {sorted(ds.data_vars)}"], "plot")
    for axis in (x, y):
        if axis is not None and axis not in ds[var].dims:
            raise ConfigError([f"axis {axis!r}: {var} runs over {list(ds[var].dims)}"], "plot")
    da = ds[var].where(ds["status"] == 0) if "status" in ds else ds[var]
    return da.isel({dim: 0 for dim in da.dims if dim not in (x, y)})


def sweep_figure(ds, var: str, x: str, y: str | None = None):
    """``var`` over axis ``x``: one line, or one per value of ``y``."""
    da = _over(ds, var, x, y)
    fig, ax = _figure()
    if y is None:
        ax.plot(da[x].values, da.values, "o-", label=var)
    else:
        for value in da[y].values:
            ax.plot(da[x].values, da.sel({y: value}).values, "o-", label=f"{y} = {value}")
        ax.legend(fontsize=7)
    ax.set_xlabel(_label(ds[x]))
    ax.set_ylabel(_label(ds[var]))
    ax.set_title(f"{var} over {x}" + (f" and {y}" if y else ""), fontsize=9)
    return fig


def heatmap_figure(ds, var: str, x: str, y: str):
    """``var`` over axes ``x`` and ``y`` as a heatmap with a colour bar."""
    da = _over(ds, var, x, y).transpose(y, x)
    fig, ax = _figure()
    im = ax.imshow(da.values, aspect="auto", origin="lower")
    ax.set_xticks(range(da.sizes[x]), [str(v) for v in da[x].values], fontsize=7)
    ax.set_yticks(range(da.sizes[y]), [str(v) for v in da[y].values], fontsize=7)
    ax.set_xlabel(_label(ds[x]))
    ax.set_ylabel(_label(ds[y]))
    fig.colorbar(im, ax=ax, label=_label(ds[var]))
    ax.set_title(f"{var}", fontsize=9)
    return fig


def kv_crossover(context, kv_bytes, weight_bytes) -> float:
    """The context at which KV bytes overtake weight bytes: the first pair of grid points where KV
    goes from at most the weights to above them, interpolated linearly in context between those two
    points (KV bytes grow linearly with context, so this is exact wherever they do; interpolated in
    log2 of the context it came out 4 % early for Llama-3.2-1B between 16,384 and 32,768). NaN where no
    pair brackets a crossing (KV above the weights from the first context on, or never above);
    points with a NaN (failed points) are left out.

    >>> kv_crossover([1024, 2048, 4096], [100, 200, 400], [300, 300, 300])
    3072.0
    """
    c, kv, w = (np.asarray(a, dtype=float) for a in (context, kv_bytes, weight_bytes))
    w = np.broadcast_to(w, c.shape)
    ok = np.isfinite(c) & np.isfinite(kv) & np.isfinite(w) & (c > 0)
    c, d = c[ok], kv[ok] - w[ok]
    for i in range(len(c) - 1):
        if d[i] <= 0 < d[i + 1]:
            t = -d[i] / (d[i + 1] - d[i])
            return float(c[i] + t * (c[i + 1] - c[i]))
    return float("nan")


def _kv_layout(ds, x: str, batch=None):
    """kv_bytes and weight_bytes of the good points over (batch,) model and ``x``; other axes fixed
    (decode where there is a regime axis, else their first value)."""
    for name in ("kv_bytes", "weight_bytes"):
        if name not in ds:
            raise ConfigError([f"kind kv needs outputs kv_bytes and weight_bytes (and a {x} axis)"], "plot")
    if x not in ds.kv_bytes.dims:
        raise ConfigError([f"axis {x!r}: kv_bytes runs over {list(ds.kv_bytes.dims)}"], "plot")
    keep = [d for d in (x, "model", "batch") if d in ds.kv_bytes.dims]
    fixed = {d: ("decode" if d == "regime" and "decode" in ds[d].values else ds[d].values[0])
             for d in ds.kv_bytes.dims if d not in keep}
    good = ds.sel(fixed)
    good = good.where(good["status"] == 0) if "status" in good else good
    if batch is not None and "batch" in good.dims:
        wanted = [batch] if np.isscalar(batch) else list(batch)
        missing = [b for b in wanted if b not in good.batch.values]
        if missing:
            raise ConfigError([f"batch = {missing}: the store has batch {good.batch.values.tolist()}"], "plot")
        good = good.sel(batch=wanted)
    return good, fixed


def kv_crossovers(ds, x: str = "context", batch=None):
    """``kv_crossover`` of every model (and batch) of an LLM sweep: a DataArray over the store's
    ``model`` (and ``batch``) axes, in tokens (NaN where KV does not overtake the weights inside the
    swept contexts)."""
    good, _ = _kv_layout(ds, x, batch)
    kv = good.kv_bytes.transpose(..., x)
    w = good.weight_bytes.transpose(..., x)
    out = np.array([kv_crossover(good[x].values, a, b) for a, b in
                    zip(kv.values.reshape(-1, kv.sizes[x]), w.values.reshape(-1, kv.sizes[x]))])
    dims = [d for d in kv.dims if d != x]
    return xr.DataArray(out.reshape([kv.sizes[d] for d in dims]), dims=dims, coords={d: good[d].values for d in dims},
                        name="kv_crossover", attrs={"units": "tokens", "description": "context where KV bytes "
                                                    "overtake weight bytes (interpolated between grid points)"})


def _model_fact(ds, model: str, name: str, fallback):
    """A per-point model fact (family, sliding_window) of ``model`` from the store (its points that
    ran: failed points hold "" or -1), else ``fallback(model)``."""
    if name in ds:
        values = np.ravel(ds[name].sel(model=model).values)
        known = values[values != ""] if values.dtype.kind in "UT" else values[values >= 0]
        if known.size:
            return known[0]
    return fallback(model)


def _preset_family(model: str) -> str:
    try:
        from .llm import get_model
        return get_model(model).family
    except Exception:  # a path that no longer exists, say: the model's name stands for its family
        return str(model)


def _preset_window(model: str) -> int:
    try:
        from .llm import get_model
        return max(get_model(model).windows, default=0)
    except Exception:
        return 0


def kv_figure(ds, x: str = "context", batch=None):
    """KV-cache vs weight DDR bytes per step over context.

    An LLM sweep with a ``model`` axis (``sweeps/families.toml``, ``sweeps/kv_growth.toml``): one
    panel per ``batch`` value (``batch`` picks one value or a list; without a batch axis, one panel);
    in each, one KV curve per model, coloured by family (the ``family`` output, else the preset's),
    its weight bytes as a dashed horizontal line of the same colour, the crossover where KV
    overtakes the weights marked at the context interpolated between grid points (``kv_crossover``), and a
    dotted vertical line at the model's largest sliding window, where the sliding layers' KV stops
    growing (the curve flattens, fully when every layer slides). Other axes are fixed at decode
    (a regime axis) or their first value. A store over ``context`` alone: the two curves, the
    crossover marked where it is interpolated.
    """
    if "kv_bytes" not in ds or "model" not in ds.kv_bytes.dims:
        return _kv_single_figure(ds, x)
    good, fixed = _kv_layout(ds, x, batch)
    crossings = kv_crossovers(ds, x, batch)
    batches = good.batch.values.tolist() if "batch" in good.dims else [None]
    models = [str(m) for m in good.model.values]
    families = {m: str(_model_fact(ds, m, "family", _preset_family)) for m in models}
    colour = {f: f"C{i % 10}" for i, f in enumerate(dict.fromkeys(families.values()))}
    fig, axes = pyplot().subplots(1, len(batches), figsize=(4.6 * len(batches) + 1.4, 4.0), squeeze=False,
                                  sharey=True)
    legend = {}  # label -> a model's KV curve (from whichever panel drew it)
    for ax, b in zip(axes[0], batches):
        sel = good if b is None else good.sel(batch=b)
        cross = crossings if b is None else crossings.sel(batch=b)
        handles = [_kv_model(ax, sel, x, m, families[m], colour[families[m]], i, float(cross.sel(model=m)),
                             int(_model_fact(ds, m, "sliding_window", _preset_window)))
                   for i, m in enumerate(models)]
        legend.update((h.get_label(), h) for h in handles if h is not None)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(_label(ds[x]) if x in ds.coords else x)
        ax.set_title(("" if b is None else f"batch {b}: ") + "KV (solid) vs weights (dashed)", fontsize=9)
    axes[0][0].set_ylabel("DDR MB per step")
    axes[0][-1].legend(handles=list(legend.values()), fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                       title="model (family); x: KV > weights", title_fontsize=6)
    if fixed:
        fig.suptitle(", ".join(f"{k} = {v}" for k, v in fixed.items()), fontsize=8)
    fig.tight_layout()
    return fig


def _kv_model(ax, sel, x: str, model: str, family: str, colour: str, i: int, crossing: float, window: int):
    """One model on one panel: its KV curve (returned, for the legend), weights line, crossover
    marker and sliding-window line; every artist labelled ``<model>: <what>``. None where the
    model has no point that ran."""
    ctx = sel[x].values
    kv = sel.kv_bytes.sel(model=model).values / 1e6
    w = sel.weight_bytes.sel(model=model).values / 1e6
    if not np.isfinite(kv).any():  # every point of this model failed here (decode on an encoder)
        return None
    name = _model_name(model)
    label = f"{name} ({family}" + (f", window {window:,})" if window else ")")
    (curve,) = ax.plot(ctx, kv, "-", marker="os^vD<>p"[i % 8], ms=3, color=colour, label=label)
    level = np.nanmedian(w)
    if np.nanmax(np.abs(w - level), initial=0.0) <= 1e-9 * abs(level):
        ax.axhline(level, color=colour, ls="--", lw=0.8, label=f"{name}: weights")
    else:  # weights read per step change along context (they should not): draw them as they are
        ax.plot(ctx, w, "--", color=colour, lw=0.8, label=f"{name}: weights")
    if np.isfinite(crossing):
        ok = np.isfinite(w)
        ax.plot([crossing], [np.interp(np.log2(crossing), np.log2(ctx[ok]), w[ok])], "x", color=colour, ms=8, mew=2,
                label=f"{name}: KV > weights")
    if window and ctx.min() <= window <= ctx.max():
        ax.axvline(window, color=colour, ls=":", lw=0.8, label=f"{name}: sliding window")
    return curve


def _model_name(model: str) -> str:
    """A preset's name, or a config.json's folder name (``runs/tiny/config.json`` and ``runs/tiny``
    are both ``tiny``)."""
    from pathlib import Path

    if "/" not in model and "\\" not in model:
        return model
    path = Path(model)
    return path.parent.name if path.name == "config.json" else path.name


def _kv_single_figure(ds, x: str = "context"):
    """KV and weight DDR bytes per step over context; the context where KV overtakes the weights,
    interpolated between grid points (``kv_crossover``)."""
    for name in ("kv_bytes", "weight_bytes"):
        if name not in ds:
            raise ConfigError([f"kind kv needs outputs kv_bytes and weight_bytes (and a {x} axis)"], "plot")
    kv, w = ds.kv_bytes, ds.weight_bytes
    for dim in list(kv.dims):
        if dim != x:
            kv, w = kv.isel({dim: 0}), w.isel({dim: 0})
    fig, ax = _figure()
    ax.plot(kv[x].values, w.values / 1e6, "s-", label="weights")
    ax.plot(kv[x].values, kv.values / 1e6, "^-", label="KV cache")
    crossing = kv_crossover(kv[x].values, kv.values, w.values)
    if np.isfinite(crossing):  # where it is, interpolated, not the first grid point past it
        ax.axvline(crossing, color="grey", ls="--", lw=0.8, label=f"KV > weights at {crossing:,.0f}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(_label(ds[x]) if x in ds.coords else x)
    ax.set_ylabel("DDR MB per step")
    ax.legend(fontsize=7)
    ax.set_title("KV-cache vs weight traffic", fontsize=9)
    return fig


def classes_figure(run: dict):
    """Time by op class (bar) and by layer (bar) of an LLM run's JSON."""
    if "by_class" not in run:
        raise ConfigError(["kind classes needs an LLM run's JSON (fastsim run llm --json)"], "plot")
    fig, (a, b) = pyplot().subplots(1, 2, figsize=(8, 3.4))
    classes = sorted(run["by_class"], key=run["by_class"].get, reverse=True)
    a.bar(classes, [run["by_class"][c] * 1e3 for c in classes])
    a.set_ylabel("time (ms)")
    a.set_xlabel("op class")
    a.tick_params(axis="x", rotation=45, labelsize=7)
    layers = list(run["by_layer"])
    b.bar(layers, [run["by_layer"][k] * 1e3 for k in layers])
    b.set_xlabel("layer")
    b.set_ylabel("time (ms)")
    b.tick_params(axis="x", labelsize=6)
    fig.suptitle(f"{run['model']} {run['regime']}: {run['seconds'] * 1e3:.3f} ms", fontsize=9)
    fig.tight_layout()
    return fig


def stalls_figure(run: dict, top: int = 12):
    """The ``top`` slowest ops of an LLM run: share of their DMA channel-cycles in each state."""
    if "stalls_by_op" not in run:
        raise ConfigError(["kind stalls needs an LLM run's JSON (fastsim run llm --json)"], "plot")
    ops = sorted(run["stalls_by_op"], key=lambda o: o["seconds"], reverse=True)[:top][::-1]
    states = list(ops[0]["channels"]) if ops else []
    fig, ax = _figure(7, 0.35 * len(ops) + 1.5)
    left = np.zeros(len(ops))
    names = [f"{o['op']} (layer {o['layer']})" if o.get("layer", -1) >= 0 else o["op"] for o in ops]
    rows = np.arange(len(ops))  # positions, not names: every layer has an op of each name
    for state in states:
        share = np.array([100 * o["channels"][state] for o in ops])
        ax.barh(rows, share, left=left, label=state)
        left += share
    ax.set_yticks(rows, names)
    ax.set_xlabel("DMA channel-cycles (%)")
    ax.tick_params(axis="y", labelsize=6)
    ax.legend(fontsize=6, ncol=4, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return fig


def roofline_figure(run: dict, arch):
    """A GEMM run on the arch's roofline: ops per DDR byte against achieved ops/s."""
    if "ops_per_s" not in run or "ddr_bytes" not in run:
        raise ConfigError(["kind roofline needs a GEMM run's JSON (fastsim run gemm --json)"], "plot")
    intensity = run["ops"] / max(1.0, run["ddr_bytes"])
    peak = run["peak_ops_per_s"]
    ddr = arch.ddr_bytes_per_s
    xs = np.logspace(-1, 4, 200)
    fig, ax = _figure()
    ax.plot(xs, np.minimum(peak, xs * ddr), "k-", label="roofline (compute, DDR)")
    ax.axhline(peak, color="grey", ls=":", lw=0.8)
    ax.plot([intensity], [run["ops_per_s"]], "o", color="C3", label="this run")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ops per DDR byte")
    ax.set_ylabel("ops/s")
    ax.legend(fontsize=7)
    ax.set_title(f"Roofline of {arch.name}: {run['ops_per_s'] / 1e12:.2f} of {peak / 1e12:.1f} Top/s", fontsize=9)
    return fig


def mismatch_figure(run: dict):
    """Systolic tile mismatch: folds by kind, summed over layers (a systolic run's JSON)."""
    if "layers" not in run or not run["layers"] or "tile_mismatch" not in run["layers"][0]:
        raise ConfigError(["kind mismatch needs a systolic run's JSON (fastsim systolic --json)"], "plot")
    kinds = list(run["layers"][0]["tile_mismatch"])
    totals = [sum(row["tile_mismatch"][k] for row in run["layers"]) for k in kinds]
    fig, ax = _figure()
    ax.bar(kinds, totals)
    ax.set_xlabel("fold kind")
    ax.set_ylabel("folds")
    ax.tick_params(axis="x", rotation=30, labelsize=7)
    ax.set_title("Systolic tile mismatch over all layers", fontsize=9)
    return fig


def occupancy(trace: dict, bins: int = 120):
    """(track names, bin edges in cycles, busy share per track and bin) of a Perfetto trace written
    by ``fastsim run --trace``: the share of each time bin a track's slices cover. A summary slice
    (periodic run, ``count`` raw slices) spreads its raw slices' own cycles evenly over its span."""
    names, spans = {}, {}
    for e in trace.get("traceEvents", []):
        key = (e.get("pid", 0), e.get("tid", 0))
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[key] = e["args"]["name"]
        elif e.get("ph") == "X" and "start_cycle" in e.get("args", {}):
            a = e["args"]
            length = a["end_cycle"] - a["start_cycle"]
            share = a.get("busy_cycles", length) / length if length else 0.0
            spans.setdefault(key, []).append((a["start_cycle"], a["end_cycle"], share))
    if not spans:
        raise ConfigError(["kind occupancy needs a trace of fastsim run gemm --trace or fastsim run llm --trace; "
                           "this one has neither channel slices nor per-op counters"], "plot")
    keys = sorted(spans, key=lambda k: (not names.get(k, "").startswith("core"), k))
    end = max(e for k in keys for _, e, _ in spans[k])
    edges = np.linspace(0, end, bins + 1)
    width = edges[1] - edges[0]
    busy = np.zeros((len(keys), bins))
    for row, key in enumerate(keys):
        for start, stop, share in spans[key]:
            lo = np.clip(edges[:-1], start, stop)
            hi = np.clip(edges[1:], start, stop)
            busy[row] += (hi - lo) * share
    return [names.get(k, f"track {k[1]}") for k in keys], edges, busy / width


def occupancy_figure(trace: dict, bins: int = 120):
    """Occupancy over time: one row per core and DMA channel of a traced run, the share of each
    time bin it was busy (cores first)."""
    if not any(e.get("ph") == "X" and "start_cycle" in e.get("args", {}) for e in trace.get("traceEvents", [])):
        return counter_occupancy_figure(trace)
    tracks, edges, share = occupancy(trace, bins)
    fig, ax = _figure(7.0, max(2.5, min(9.0, 0.12 * len(tracks) + 1.5)))
    image = ax.imshow(100 * share, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=100,
                      extent=(edges[0], edges[-1], len(tracks) - 0.5, -0.5))
    step = max(1, len(tracks) // 40)
    ax.set_yticks(range(0, len(tracks), step), [tracks[i] for i in range(0, len(tracks), step)], fontsize=5)
    ax.set_xlabel("cycle")
    ax.set_ylabel("core / DMA channel")
    fig.colorbar(image, ax=ax, label="busy (%)")
    ax.set_title(f"occupancy of {len(tracks)} tracks over {edges[-1]:,.0f} cycles", fontsize=9)
    fig.tight_layout()
    return fig


def counters(trace: dict) -> dict[str, tuple[np.ndarray, list[str], np.ndarray]]:
    """Per counter track of an LLM trace (``fastsim run llm --trace``: one sample per op, the share of
    core- or channel-cycles in each state): (start times in us with the run's end appended, states,
    percent per state and sample)."""
    samples, end = {}, 0.0
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "C":
            samples.setdefault(e["name"], []).append((float(e["ts"]), e["args"]))
        elif e.get("ph") == "X":
            end = max(end, float(e["ts"]) + float(e.get("dur", 0.0)))
    out = {}
    for name, rows in samples.items():
        rows.sort(key=lambda r: r[0])
        states = list(rows[0][1])
        times = np.array([t for t, _ in rows] + [max(end, rows[-1][0])])
        out[name] = (times, states, np.array([[float(a.get(k, 0.0)) for _, a in rows] for k in states]))
    return out


def counter_occupancy_figure(trace: dict):
    """Occupancy of an LLM run's trace: per counter track (cores, DMA channels) the share of
    cycles in each state over time, op by op, as stacked areas."""
    tracks = counters(trace)
    if not tracks:
        raise ConfigError(["kind occupancy needs a trace of fastsim run gemm --trace or fastsim run llm --trace; "
                           "this one has neither channel slices nor per-op counters"], "plot")
    fig, axes = pyplot().subplots(len(tracks), 1, figsize=(7.0, 2.2 * len(tracks) + 0.6), sharex=True, squeeze=False)
    for ax, (name, (times, states, pct)) in zip(axes[:, 0], tracks.items()):
        ax.stackplot(times, np.concatenate([pct, pct[:, -1:]], axis=1), labels=states, step="post")
        ax.set_ylim(0, 100)
        ax.set_ylabel("% of cycles")
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("time (us)")
    fig.tight_layout()
    return fig
