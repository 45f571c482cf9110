"""Ablation ranking (method step 1, docs/studies.md): which op class is worth optimizing, per regime.

Each op class in turn is replaced by a pass that still moves all of its data but computes nothing
(``LlmStudy.noop``), the whole forward pass is simulated again, and the classes are ranked by the
end-to-end time that removal saves. One more pass removes every class's compute at once: what is
left is the pure data-movement time. Deltas are differences of whole runs, never sums of isolated
kernel costs.

Every ablated run keeps the baseline's layout: its fusion choice and its dispatch cuts are pinned,
and each op's mapping is searched on the op as it really computes, so removing a class's compute
changes nothing else.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..errors import ConfigError
from ..graph import OP_CLASSES
from ..llm import LlmStudy, simulate_llm
from ..llm.run import apply_overlay, pinned_layout, strict_for
from . import memo, report
from .declaration import Step, Study, SweepKind, one_task
from .regimes import Regime, binding, parse_regimes
from .variables import StudyVariable as Output, Variable, build, sweep_output


def _classes(baseline: xr.Dataset) -> list[str]:
    """Op classes present in the run, in graph order; "cast" when dequantization costs cycles."""
    seen = []
    for c in baseline.op_class.values:
        if str(c) not in seen:
            seen.append(str(c))
    if float(baseline.cast_share.max()) > 0:
        seen.append("cast")
    return seen


def ablate(base: LlmStudy = LlmStudy(), regimes=None, arch: Arch = NPU2, overlays: dict | None = None) -> xr.Dataset:
    """Rank op classes by the end-to-end time their compute costs, per regime.

    Parameters
    ----------
    base : LlmStudy
        Model, precision and mapping pins; its regime and shape are replaced by each regime's.
    regimes : list of str or Regime
        e.g. ``["decode:4096", "prefill:1024", "decode:4096:8"]`` (default: decode at 4k, prefill 1k).
    arch : Arch
    overlays : dict, optional
        Layouts by regime kind (an as-built file's ``AsBuilt.overlays``): the baseline a user
        already runs, ablated as built. Every regime asked must have one (a regime the file does
        not describe would be ablated on a searched layout under the file's name).

    Returns
    -------
    xarray.Dataset over (regime, op_class): ``delta_seconds`` (time saved by removing the class's
    compute), ``share`` of the baseline, the class's ``op_seconds``, ``compute_seconds`` and
    ``movement_seconds`` in the baseline, ``exposed_share`` (delta over compute), its ``bound_by``
    resource and ``rank``; per regime the
    ``baseline_seconds``, ``data_movement_seconds`` (every class's compute removed) and ``top_class``.
    """
    regimes = parse_regimes(regimes)
    if overlays is not None:
        missing = [r.label for r in regimes if r.regime not in overlays]
        if missing:
            raise ConfigError([f"regime {', '.join(missing)}: the layout file describes none "
                               f"(it has {', '.join(sorted(overlays)) or 'no regime'}); ask for those regimes"], "ablate")
    rows = []
    for regime in regimes:
        layout = (overlays or {}).get(regime.regime)
        strict = strict_for(layout)
        study = apply_overlay(regime.study(base), layout)
        baseline = simulate_llm(study, arch, strict=strict)
        pinned = pinned_layout(study, baseline)
        classes = _classes(baseline)
        ablated = {c: float(simulate_llm(replace(pinned, noop=(c,)), arch, strict=strict).total_seconds)
                   for c in classes}
        movement = float(simulate_llm(replace(pinned, noop=tuple(classes)), arch, strict=strict).total_seconds)
        rows.append((regime, baseline, classes, ablated, movement))
    return _dataset(rows, base, arch)


def _dataset(rows, base: LlmStudy, arch: Arch) -> xr.Dataset:
    classes = []
    for _, _, cs, _, _ in rows:
        classes += [c for c in cs if c not in classes]
    shape = (len(rows), len(classes))
    v = {k: np.full(shape, np.nan) for k in ("delta", "share", "op", "compute", "movement")}
    bound = np.full(shape, "", dtype=object)
    rank = np.full(shape, -1, np.int64)
    total, moving, top, fusion = [], [], [], []
    for i, (regime, ds, cs, ablated, movement) in enumerate(rows):
        t0 = float(ds.total_seconds)
        total.append(t0)
        moving.append(movement)
        fusion.append(ds.attrs["fusion"])
        for c in cs:
            j = classes.index(c)
            pick = ds.op_class.values == c if c != "cast" else ds.cast_share.values > 0
            v["delta"][i, j] = t0 - ablated[c]
            v["share"][i, j] = (t0 - ablated[c]) / t0
            v["op"][i, j] = float(ds.op_seconds.values[pick].sum())
            v["compute"][i, j] = float(ds.compute_seconds.values[pick].sum())
            v["movement"][i, j] = float(ds.movement_seconds.values[pick].sum())
            bound[i, j] = binding(ds, pick)
        order = sorted(cs, key=lambda c: (-v["delta"][i, classes.index(c)], classes.index(c)))
        for r, c in enumerate(order):
            rank[i, classes.index(c)] = r + 1
        top.append(order[0] if order else "")
    out = build(OUTPUTS, {
            "delta_seconds": v["delta"],
            "share": v["share"],
            "op_seconds": v["op"],
            "time_share": v["op"] / np.array(total)[:, None],
            "compute_seconds": v["compute"],
            "movement_seconds": v["movement"],
            "bound_by": bound.astype(str),
            "exposed_share": np.divide(v["delta"], v["compute"], out=np.full(shape, np.nan), where=v["compute"] > 0),
            "rank": rank,
            "baseline_seconds": np.array(total),
            "data_movement_seconds": np.array(moving),
            "top_class": np.array(top, dtype=str),
            "fusion": np.array(fusion, dtype=str),
        },
        coords={"regime": [r[0].label for r in rows], "op_class": classes},
        attrs={"study": "ablate", "model": rows[0][1].attrs["model"] if rows else "", "arch": arch.name,
               "weights": base.precision.weights, "kv": base.precision.kv,
               "activations": base.precision.activations},
    )
    return out


def ablate_point(study: LlmStudy, arch: Arch) -> dict:
    """One sweep point (``[study] kind = "ablate"``): the ranking of the study's own regime (its
    decode context or prefill prompt), as the outputs its sweep kind declares."""
    ds = ablate(study, [Regime.of(study)], arch).isel(regime=0)
    classes = [str(c) for c in ds.op_class.values]
    return {"seconds": float(ds.baseline_seconds), "data_movement_seconds": float(ds.data_movement_seconds),
            "delta_seconds": dict(zip(classes, ds.delta_seconds.values.tolist())),
            "share": dict(zip(classes, ds.share.values.tolist())),
            "top_class": OP_CLASSES.index(str(ds.top_class.values))}


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "delta_seconds": Output(("regime", "op_class"), "s",
        "end-to-end time saved when the class computes nothing (its data still moves)"),
    "share": Output(("regime", "op_class"), "1", "delta_seconds over baseline_seconds"),
    "op_seconds": Output(("regime", "op_class"), "s", "the class's op time in the baseline"),
    "time_share": Output(("regime", "op_class"), "1",
        "op_seconds over baseline_seconds: the class's share of the run, what a per-kernel profile "
        "shows (a class can take most of the time and save none of it: its time is data movement)"),
    "compute_seconds": Output(("regime", "op_class"), "s",
        "the class's kernel time in the baseline (busiest core per op)"),
    "movement_seconds": Output(("regime", "op_class"), "s",
        "the class's data-movement time in the baseline (its ops with 1-cycle kernels)"),
    "bound_by": Output(("regime", "op_class"), "1",
        "resource with the highest utilization over most of the class's time in the baseline"),
    "exposed_share": Output(("regime", "op_class"), "1",
        "delta_seconds over compute_seconds: the share of the class's kernel time on the critical "
        "path (0: hidden under data movement)"),
    "rank": Output(("regime", "op_class"), "1", "1 = largest delta_seconds in the regime; -1 absent"),
    "baseline_seconds": Output(("regime",), "s", "end-to-end time of the regime, nothing removed"),
    "data_movement_seconds": Output(("regime",), "s", "end-to-end time with every class's compute removed at once"),
    "top_class": Output(("regime",), "1", "the class to optimize first (rank 1)"),
    "fusion": Output(("regime",), "1", "the layout every run of the regime kept (the baseline's fusion: searched, or as built)"),
}


STUDY = Study(
    "ablate", ablate, OUTPUTS, report.ablate_markdown, report.ablate_figure,
    sweep=SweepKind(ablate_point, {  # one regime's ranking per point (its decode context or prefill prompt)
        "seconds": Variable("seconds", "s", "end-to-end time of the regime, nothing removed"),
        "data_movement_seconds": sweep_output(OUTPUTS, "data_movement_seconds"),
        "delta_seconds": sweep_output(OUTPUTS, "delta_seconds", extra_dim=("op_class", OP_CLASSES)),
        "share": sweep_output(OUTPUTS, "share", extra_dim=("op_class", OP_CLASSES)),
        "top_class": sweep_output(OUTPUTS, "top_class", dtype="int8", flags=OP_CLASSES)},
        without=frozenset({"noop"})),
    step=Step(0, "ranking op classes by whole-run NOOP deltas", one_task("ablate", ablate),
              lambda ds, label: {"top_class": str(ds.top_class.sel(regime=label).values)}, memo.ablate_section,
              {"ablate": 3}))
