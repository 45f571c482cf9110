"""Dispatch-cut search (method step 2, docs/studies.md): where to cut a model into dispatches, per regime.

A dispatch covers whole layers ``[a, b)`` (the embedding runs in the first, the final norm and LM
head in the last). Its cost depends only on which layers it holds: its ops (with the layout's
fusion, a chained dispatch keeps activations on chip inside it and sends them through DDR at its
edges), its host round trip, its static weights' load and its program reloads. The total is the sum
over dispatches (``dispatch_total_seconds``), so the best cut set is a shortest path over layer
boundaries: dynamic programming over (boundary, dispatches so far), with infeasible dispatches
(runtime sequence or static weights that do not fit) excluded. The layers of a model are identical,
so a dispatch's cost depends only on its length and whether it holds the first or the last layer:
about 2 x layers simulations (every op result cached) cover every segment.

Each boundary of the chosen cut set is explained against the merged dispatch it replaces: the
activations written out before it and read back after it (the ops' extra time), the host round
trip, weights and programs reloaded, and what the cut relieves (the merged dispatch does not fit,
or reloads programs).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..llm import LlmStudy, simulate_llm
from ..mapping.dispatch import DispatchLimits, cuts_text, dispatches_of_text
from . import memo, report
from .declaration import Command, Option, Step, Study, SweepKind, one_task
from .regimes import Regime, parse_regimes
from .variables import StudyVariable as Output, Variable, build, sweep_output


@dataclass
class Segment:
    """One dispatch holding layers [a, b) of the model (its costs, from the engine)."""

    seconds: float
    energy_pj: float
    fits: bool
    problems: str
    reload_s: float
    preload_s: float
    ops_s: dict  # op time and control by layer offset from a; "head" (embedding) and "tail" (final norm, LM head)
    first_setup_s: float  # the set-up of its first op, which its dispatch does (no op's control pays it)


def _segments_of(ds: xr.Dataset, starts: list[int], n_layers: int, arch: Arch) -> dict:
    """Every dispatch of one run as (first, last, length) -> Segment."""
    out = {}
    # an op's time with its control: its mapping search trades one for the other (docs/mapping.md);
    # a dispatch's first op counts its set-up too (its dispatch does it): the same op, wherever it runs
    disp, layer, secs = ds.dispatch.values, ds.layer.values, ds.op_seconds.values + ds.op_control_seconds.values
    setup_s = ds.op_setup_instructions.values * arch.runtime_instruction_cycles / arch.clock_hz
    problems = ds.attrs["dispatch_problems"]
    for d, a in enumerate(starts):
        b = starts[d + 1] if d + 1 < len(starts) else n_layers
        ops = {}
        mine_ops = np.nonzero(disp == d)[0]
        for i in mine_ops:
            key = ("head" if i == 0 else "tail") if layer[i] < 0 else int(layer[i] - a)
            ops[key] = ops.get(key, 0.0) + float(secs[i]) + (float(setup_s[i]) if i == mine_ops[0] else 0.0)
        mine = "; ".join(x for x in problems.split("; ") if x.startswith(f"dispatch {d}:"))
        out[(a == 0, b == n_layers, b - a)] = Segment(
            float(ds.dispatch_total_seconds.values[d]), float(ds.dispatch_energy_pj.values[d]),
            bool(ds.dispatch_fits.values[d]), mine, float(ds.dispatch_reload_seconds.values[d]),
            float(ds.dispatch_preload_seconds.values[d]), ops, float(setup_s[mine_ops[0]]))
    return out


def segment_costs(study: LlmStudy, arch: Arch, limits: DispatchLimits, n_layers: int) -> dict:
    """Every segment kind's costs: runs cut after layer len-1 (a first and a last segment) and after
    layers 0 and len (a one-layer first segment, a middle one of length len, a last one)."""
    segments = {}

    def run(cuts):
        ds = simulate_llm(replace(study, cuts=tuple(cuts)), arch, limits, strict=False)
        starts = [0] + [c + 1 for c in cuts]
        segments.update(_segments_of(ds, starts, n_layers, arch))

    run(())
    for length in range(1, n_layers):
        run((length - 1,))
    for length in range(1, n_layers - 1):
        run((0, length))
    return segments


def _kind(a: int, b: int, n: int) -> tuple:
    return (a == 0, b == n, b - a)


def best_cuts(segments: dict, n_layers: int, max_dispatches: int | None = None):
    """Shortest path over layer boundaries. Returns, for each dispatch count k, the fastest cut set
    (ties: less energy) as (seconds, energy_pj, cuts) or None when no feasible one exists."""
    kmax = min(max_dispatches or n_layers, n_layers)
    inf = (float("inf"), float("inf"), ())
    best = [[inf] * (n_layers + 1) for _ in range(kmax + 1)]
    best[0][0] = (0.0, 0.0, ())
    for k in range(1, kmax + 1):
        for b in range(1, n_layers + 1):
            for a in range(k - 1, b):
                prev = best[k - 1][a]
                seg = segments.get(_kind(a, b, n_layers))
                if prev[0] == float("inf") or seg is None or not seg.fits:
                    continue
                cand = (prev[0] + seg.seconds, prev[1] + seg.energy_pj, prev[2] + ((a - 1,) if a else ()))
                if cand[:2] < best[k][b][:2]:
                    best[k][b] = cand
    return {k: (best[k][n_layers] if best[k][n_layers][0] < float("inf") else None) for k in range(1, kmax + 1)}


def total_of(segments: dict, cuts: tuple, n_layers: int):
    """(seconds, energy_pj, fits) of one cut set from the segment costs (for brute force)."""
    bounds = [0] + [c + 1 for c in sorted(cuts)] + [n_layers]
    parts = [segments[_kind(a, b, n_layers)] for a, b in zip(bounds, bounds[1:])]
    return sum(p.seconds for p in parts), sum(p.energy_pj for p in parts), all(p.fits for p in parts)


def brute_force(segments: dict, n_layers: int):
    """Every cut set (2^(layers-1) of them): the fastest feasible per dispatch count."""
    out = {}
    for k in range(1, n_layers + 1):
        found = None
        for cuts in combinations(range(n_layers - 1), k - 1):
            s, e, fits = total_of(segments, cuts, n_layers)
            if fits and (found is None or (s, e) < found[:2]):
                found = (s, e, cuts)
        out[k] = found
    return out


def explain_boundary(segments: dict, cuts: tuple, cut: int, n_layers: int, arch: Arch) -> dict:
    """What the boundary after layer ``cut`` costs against the merged dispatch it replaces."""
    bounds = [0] + [c + 1 for c in sorted(cuts)] + [n_layers]
    j = bounds.index(cut + 1)
    a, m, b = bounds[j - 1], bounds[j], bounds[j + 1]
    left, right = segments[_kind(a, m, n_layers)], segments[_kind(m, b, n_layers)]
    merged = segments.get(_kind(a, b, n_layers))
    out = {"after_layer": cut, "host_round_trip_s": arch.dispatch_overhead_s}
    if merged is None:
        return {**out, "relieves": "no merged dispatch simulated"}

    def ops(seg, lo, hi, offset):
        return sum(v for k, v in seg.ops_s.items() if isinstance(k, int) and lo <= k + offset < hi)

    out["write_out_s"] = ops(left, a, m, a) - ops(merged, a, m, a)
    out["read_back_s"] = ops(right, m, b, m) - ops(merged, m, b, a)
    out["setup_in_round_trip_s"] = -right.first_setup_s  # the new dispatch sets its first op up
    out["weight_reload_s"] = left.preload_s + right.preload_s - merged.preload_s
    out["program_reload_s"] = left.reload_s + right.reload_s - merged.reload_s
    out["net_s"] = left.seconds + right.seconds - merged.seconds
    if not merged.fits:
        out["relieves"] = f"without it: {merged.problems or 'the merged dispatch does not fit'}"
    elif out["program_reload_s"] < 0:
        out["relieves"] = f"program reloads: {-out['program_reload_s'] * 1e3:.3g} ms fewer"
    else:
        out["relieves"] = "nothing: the merged dispatch fits and reloads nothing more"
    return out


def cuts(base: LlmStudy = LlmStudy(), regimes=None, arch: Arch = NPU2, limits: DispatchLimits = DispatchLimits(),
         max_dispatches: int | None = None) -> xr.Dataset:
    """Search the dispatch cuts of each regime (latency first, energy second).

    The layout (fusion) is the regime's searched one with the default cut, then pinned while cuts
    vary. Returns a Dataset over (regime, dispatches): the fastest time, energy and cut set for each
    dispatch count (NaN where none fits), whether that count is on the Pareto front (no fewer
    dispatches are as fast), and per regime the best cut set and the default (greedy) cut's time;
    over (regime, boundary) the best cut set's boundaries, each split into write-out, read-back,
    host round trip, weight and program reloads, and what it relieves.
    """
    regimes = parse_regimes(regimes)
    rows = []
    for regime in regimes:
        study = regime.study(base)
        baseline = simulate_llm(study, arch, limits)
        n_layers = int(baseline.attrs["layers"])
        pinned = replace(study, fusion=baseline.attrs["fusion"])
        segments = segment_costs(pinned, arch, limits, n_layers)
        front = best_cuts(segments, n_layers, max_dispatches)
        rows.append((regime, baseline, segments, front, n_layers))
    return _dataset(rows, base, arch)


def _dataset(rows, base, arch: Arch) -> xr.Dataset:
    kmax = max(max(r[3]) for r in rows)
    shape = (len(rows), kmax)
    seconds, energy = np.full(shape, np.nan), np.full(shape, np.nan)
    cut_text = np.full(shape, "", dtype=object)
    pareto = np.zeros(shape, bool)
    best_s, best_cut, default_s, default_cut, explained, fusion = [], [], [], [], [], []
    for i, (regime, baseline, segments, front, n_layers) in enumerate(rows):
        fastest = float("inf")
        for k, found in front.items():
            if found is None:
                continue
            seconds[i, k - 1], energy[i, k - 1] = found[0], found[1]
            cut_text[i, k - 1] = cuts_text(found[2])
            if found[0] < fastest:
                pareto[i, k - 1] = True
                fastest = found[0]
        k_best = min((k for k in front if front[k] is not None), key=lambda k: front[k][:2])
        chosen = front[k_best]
        best_s.append(chosen[0])
        best_cut.append(cuts_text(chosen[2]))
        default_s.append(float(baseline.total_seconds))
        default_cut.append(cuts_text(baseline.attrs["cuts"]))
        fusion.append(baseline.attrs["fusion"])
        explained.append([explain_boundary(segments, chosen[2], c, n_layers, arch) for c in chosen[2]])
    # the best cut set's boundaries, each against the merged dispatch it replaces
    nb = max(1, max(len(e) for e in explained))
    boundary = {}
    for key in ("after_layer", "write_out_s", "read_back_s", "host_round_trip_s", "setup_in_round_trip_s",
                "weight_reload_s", "program_reload_s", "net_s", "relieves"):
        fill = {"after_layer": -1, "relieves": ""}.get(key, np.nan)
        arr = np.full((len(rows), nb), fill, dtype={"after_layer": np.int64, "relieves": object}.get(key, float))
        for i, e in enumerate(explained):
            for j, x in enumerate(e):
                arr[i, j] = x.get(key, fill)
        name = "boundary_" + (key[:-2] + "_seconds" if key.endswith("_s") else key)
        boundary[name] = arr.astype(str) if key == "relieves" else arr
    ds = build(OUTPUTS, {
            "seconds": seconds,
            "energy_pj": energy,
            "cuts": cut_text.astype(str),
            "pareto": pareto,
            "best_seconds": np.array(best_s),
            "best_cuts": np.array(best_cut, dtype=str),
            "default_seconds": np.array(default_s),
            "default_cuts": np.array(default_cut, dtype=str),
            "fusion": np.array(fusion, dtype=str),
            **boundary,
        },
        coords={"regime": [r[0].label for r in rows], "dispatches": np.arange(1, kmax + 1)},
        attrs={"study": "cuts", "model": rows[0][1].attrs["model"], "arch": arch.name,
               "weights": base.precision.weights, "dispatch_overhead_s": arch.dispatch_overhead_s},
    )
    return ds


def cuts_point(study: LlmStudy, arch: Arch) -> dict:
    """One sweep point (``[study] kind = "cuts"``): the best cut set of the study's own regime."""
    r = cuts(study, [Regime.of(study)], arch).isel(regime=0)
    n = dispatches_of_text(r.best_cuts.values)
    return {"seconds": float(r.best_seconds), "dispatches": n, "default_seconds": float(r.default_seconds),
            "energy_j": float(r.energy_pj.sel(dispatches=n)) * 1e-12}


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "seconds": Output(("regime", "dispatches"), "s",
        "fastest end-to-end time with this many dispatches (NaN: none fits)"),
    "energy_pj": Output(("regime", "dispatches"), "pJ", "energy of that cut set's ops"),
    "cuts": Output(("regime", "dispatches"), "1", "that cut set: layers after which a dispatch ends"),
    "pareto": Output(("regime", "dispatches"), "1", "no cut set with fewer dispatches is as fast"),
    "best_seconds": Output(("regime",), "s", "the best cut set's time"),
    "best_cuts": Output(("regime",), "1", "the best cut set (latency, then energy)"),
    "default_seconds": Output(("regime",), "s", "time with the default greedy cut"),
    "default_cuts": Output(("regime",), "1", "the default greedy cut (whole layers while everything fits)"),
    "fusion": Output(("regime",), "1", "the layout kept while cuts vary (the regime's searched fusion)"),
    "boundary_after_layer": Output(("regime", "boundary"), "layer",
        "a boundary of the best cut set: a dispatch ends after this layer (-1: none)"),
    "boundary_write_out_seconds": Output(("regime", "boundary"), "s",
        "extra time of the ops before it, control included (activations written to DDR), against the merged dispatch"),
    "boundary_read_back_seconds": Output(("regime", "boundary"), "s",
        "extra time of the ops after it, control included (activations read back from DDR), against the merged dispatch"),
    "boundary_host_round_trip_seconds": Output(("regime", "boundary"), "s", "one more dispatch's host round trip"),
    "boundary_setup_in_round_trip_seconds": Output(("regime", "boundary"), "s",
        "the set-up of the op after it, which the new dispatch does (negative: no op's control pays it)"),
    "boundary_weight_reload_seconds": Output(("regime", "boundary"), "s",
        "static weights loaded again (no longer resident)"),
    "boundary_program_reload_seconds": Output(("regime", "boundary"), "s", "program reloads added (negative: saved)"),
    "boundary_net_seconds": Output(("regime", "boundary"), "s",
        "what the boundary costs in all (negative: it pays for itself)"),
    "boundary_relieves": Output(("regime", "boundary"), "1", "the resource pressure the boundary relieves"),
}


STUDY = Study(
    "cuts", cuts, OUTPUTS, report.cuts_markdown, report.cuts_figure,
    command=Command("""Where should the model be cut into dispatches? Dynamic programming over layer boundaries
    finds the fastest feasible cut set for every dispatch count (energy breaks ties), gives the
    Pareto front of dispatch count vs time, and prices each boundary of the best set: activations
    written out and read back, host round trip, weight and program reloads, against what it relieves.

    Example: fastsim study cuts --model llama-3.2-3b --regime prefill:1024 --report out/
    """, cuts, options=(Option("--max-dispatches", "max_dispatches", "most dispatches considered (default: one per "
                                "layer)", kind="int", minimum=1),)),
    sweep=SweepKind(cuts_point, {  # one regime's cut search per point
        "seconds": Variable("seconds", "s", "end-to-end time with the best cut set"),
        "dispatches": Variable("dispatches", "1", "dispatches of the best cut set", "int64"),
        "default_seconds": sweep_output(OUTPUTS, "default_seconds"),
        "energy_j": Variable("energy_j", "J", "energy of the best cut set's ops")},
        without=frozenset({"noop", "cuts"})),
    step=Step(1, "searching dispatch cuts (dynamic programming over layer boundaries)", one_task("cuts", cuts),
              lambda ds, label: {"cuts": str(ds.best_cuts.sel(regime=label).values)}, memo.cuts_section,
              {"cuts": 5}))
