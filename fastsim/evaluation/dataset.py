"""The per-op Dataset of an evaluated graph: time, traffic, accounting (compute vs data movement,
the exposed part of each, buffer pressure), stall attribution, energy and dispatch totals."""
from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..arch import Arch
from ..graph import TENSOR_KINDS, VECTOR
from ..mapping.dispatch import (DispatchLimits, charged_runs, control_seconds_per_dispatch, host_seconds_per_dispatch,
                                launch_seconds, reload_seconds, weighted_instructions)
from ..mapping.mappers import KIND_TRAITS
from ..results import CHANNEL_STATES, CORE_STATES, LEVELS
from .evaluate import GraphResult
from .pins import GraphPins


def _ddr_by_kind(shim: dict[str, float], op) -> dict[str, float]:
    out = dict.fromkeys(TENSOR_KINDS, 0.0)
    out[op.x.kind if KIND_TRAITS[op.kind].first_mm2s == "x" else op.w.kind] += shim["mm2s0"]
    out[op.x.kind] += shim["mm2s1"]
    out[op.y.kind] += shim["s2mm0"]
    return out


def to_dataset(result: GraphResult, pins: GraphPins, arch: Arch, limits: DispatchLimits, attrs: dict,
               variables: dict | None = None) -> xr.Dataset:
    """The per-op Dataset of one evaluated graph (the one place it is assembled). ``attrs`` and
    ``variables``: what the front end says about the workload (model, regime, shapes; e.g. KV bytes
    per token), ahead of and after the run's own."""
    specs, coords, all_attrs = _parts(result, pins, arch, limits, attrs, variables)
    return xr.Dataset(_variables(specs), coords=coords, attrs=all_attrs)


def to_columns(result: GraphResult, pins: GraphPins, arch: Arch, limits: DispatchLimits, attrs: dict,
               variables: dict | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """What ``to_dataset`` would hold, without building it: every variable and coordinate as an
    array by name, and the attrs (``fastsim.llm.assemble.columns`` of the Dataset, equal array for
    array). A sweep point reads a few totals of it, and xarray's assembly of ~60 variables cost
    more than the point's summary. Variables given as ``(dims, values[, attrs])`` only."""
    specs, coords, all_attrs = _parts(result, pins, arch, limits, attrs, variables)
    odd = [name for name, spec in specs.items() if not (isinstance(spec, tuple) and len(spec) in (2, 3))]
    if odd:
        raise TypeError(f"to_columns takes (dims, values[, attrs]) variables only, not {odd}")
    out = {name: np.asarray(spec[1]) for name, spec in specs.items()}
    out.update((name, np.asarray(c[1] if isinstance(c, tuple) else c)) for name, c in coords.items())
    return out, all_attrs


def _parts(result: GraphResult, pins: GraphPins, arch: Arch, limits: DispatchLimits, attrs: dict,
           variables: dict | None) -> tuple[dict, dict, dict]:
    """The Dataset's variables as ``(dims, values, attrs)``, its coordinates and its attrs."""
    placed, results, dispatch = result.placed, result.results, result.dispatch
    ops = [p.op for p in placed]
    per_op = _per_op(placed, results, arch, pins)
    control = np.array(result.control_instructions or [0] * len(ops), np.int64).reshape(len(ops))
    charged = charged_runs(1, 0, pins.resident_programs)  # one run after another op's: a set-up or a re-run
    totals = _totals(pins, arch, dispatch, limits, per_op, np.array([op.layer for op in ops]), control)
    setup = [weighted_instructions(r.control, charged) for r in per_op["distinct"]]
    specs = {**_op_variables(placed, per_op), **_control_variables(control, arch),
             "op_setup_instructions": (OP_DIM, np.array(setup, np.int64).reshape(len(setup))[per_op["row"]],
                                       {"units": "instructions",
                                       "description": "runtime-sequence instructions that set the op's design up after "
                                       "another op's, wherever it runs (op_control_instructions charges them, but not "
                                       "for a dispatch's first op: its dispatch sets it up); where the dispatch's "
                                       "programs stay resident, those that re-run it on its operands"}),
             **_total_variables(dispatch, totals, result.graph.token_rows),
             **(variables or {})}
    coords = {
        "op_name": (OP_DIM, np.array([op.name for op in ops], dtype=object)),
        "op_class": (OP_DIM, np.array([op.op_class for op in ops], dtype=object)),
        "layer": (OP_DIM, np.array([op.layer for op in ops])),
        "tensor_kind": list(TENSOR_KINDS), "level": LEVELS,
        "channel_state": CHANNEL_STATES, "core_state": CORE_STATES,
        "dispatch_index": np.arange(dispatch.count), "tile_axis": ["m", "k", "n"],
    }
    return specs, coords, {**attrs, **_attrs(pins, arch, result)}


OP_DIM = ("op",)


def _variables(specs: dict) -> dict:
    """``(dims, values[, attrs])`` specs of numbers as variables made without xarray's conversion
    checks, which have nothing to convert in a numeric array (numbers become 0-d arrays, as the
    checks make them); a sweep point builds this Dataset each time, and the checks were a third of
    its construction. Anything else (objects, which the checks may convert, or another kind of
    spec) is left to xarray."""
    out = {}
    for name, spec in specs.items():
        values = np.asarray(spec[1]) if isinstance(spec, tuple) and len(spec) in (2, 3) else None
        if values is None or values.dtype.kind not in "biuf":
            out[name] = spec
        else:
            out[name] = xr.Variable(spec[0], values, spec[2] if len(spec) == 3 else None, fastpath=True)
    return out


def _per_op(placed, results, arch: Arch, pins: GraphPins) -> dict:
    """Per-op arrays over all repeats of each op: time split into compute and data movement (and
    the exposed part of each), buffer peaks, traffic by tensor kind and level, stall states, energy.
    A layer's ops repeat the first layer's results: each distinct row is computed once, and each
    column is the distinct rows' values taken per op (``row``: each op's row; ``distinct``: each
    row's result). A sweep point assembles every op's columns, and a list per column per op was a
    fifth of a warm point."""
    n = len(placed)
    keys, table, distinct, row = {}, [], [], np.empty(n, np.intp)
    for i, p in enumerate(placed):
        op, r = p.op, results[p.key]
        same = (id(r), op.repeat, op.macs, op.kind, op.x.kind, op.y.kind, None if op.kind == VECTOR else op.w.kind)
        j = keys.get(same)
        if j is None:
            j = keys[same] = len(table)
            table.append(_op_row(r, op, arch, pins))
            distinct.append(r)
        row[i] = j
    rows = len(table)

    def column(name, dtype, *width):
        return np.array([t[name] for t in table], dtype).reshape(rows, *width)[row]

    clock = arch.clock_hz
    cycles = column("cycles", np.int64)
    f = {k: column(k, float) for k in ("compute", "movement", "exp_compute", "exp_movement", "l1", "l2", "energy", "cast")}
    f = {"seconds": cycles / clock, **f}
    return dict(f=f, cycles=cycles, macs=column("macs", np.int64),
                kind_bytes=column("kind_bytes", float, len(TENSOR_KINDS)),
                level_bytes=column("level_bytes", float, len(LEVELS)),
                ch_state=column("ch_state", float, len(CHANNEL_STATES)),
                core_state=column("core_state", float, len(CORE_STATES)),
                bound=_objects([t["bound"] for t in table])[row], flow_of=_objects([t["flow"] for t in table])[row],
                row=row, distinct=distinct)


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _op_row(r, op, arch: Arch, pins: GraphPins) -> dict:
    """One op's numbers over all its repeats (``_per_op``'s columns)."""
    rep, clock = op.repeat, arch.clock_hz
    by_kind = _ddr_by_kind(r.shim_bytes, op)
    level_bytes = r.level_bytes * rep
    ddr = level_bytes[LEVELS.index("ddr_read")] + level_bytes[LEVELS.index("ddr_write")]
    moving = math.nan if r.movement_cycles is None else r.movement_cycles  # twin left out: not known
    return {"cycles": r.cycles * rep, "macs": op.macs,
            "compute": r.compute_cycles * rep / clock, "movement": moving * rep / clock,
            "exp_compute": np.maximum(0, r.cycles - moving) * rep / clock,  # NaN stays NaN
            "exp_movement": max(0, r.cycles - r.compute_cycles) * rep / clock,
            "l1": r.l1_peak_bytes, "l2": r.l2_peak_bytes,
            "kind_bytes": [by_kind[k] * rep for k in TENSOR_KINDS], "level_bytes": level_bytes,
            "ch_state": r.channel_state_cycles * rep, "core_state": r.core_state_cycles * rep,
            "bound": r.bound_by, "flow": r.dataflow, "cast": r.cast_share,
            "energy": (op.macs * arch.pj_per_mac.get(pins.compute_dtype, 0.0) + ddr * arch.pj_per_byte["ddr"]
                       + sum(level_bytes[LEVELS.index(lv)] * arch.pj_per_byte.get(lv, 0.0)
                             for lv in LEVELS if lv not in ("ddr_read", "ddr_write")))}


def _totals(pins: GraphPins, arch: Arch, dispatch, limits, per_op: dict, layer_of, control) -> dict:
    """Per dispatch and overall: op time, host round trips, static weight loads, control
    instructions and program reloads (they add up to the total), and energy."""
    f = per_op["f"]
    n_dispatch = dispatch.count
    static = np.array(dispatch.static_weight_bytes)
    # static weights: one dispatch keeps them resident across decode steps (loaded once, reported
    # apart); several dispatches overwrite each other's, so every pass reloads every dispatch's
    resident = pins.residency == "static" and n_dispatch == 1 and pins.static_weights_resident
    preload_bytes = 0.0 if resident else float(static.sum())
    preload_s = preload_bytes / arch.ddr_bytes_per_s
    preload_pj = preload_bytes * arch.pj_per_byte["ddr"]
    host_s = host_seconds_per_dispatch(arch, n_dispatch, pins.dispatch_commands)
    dispatch_s = sum(host_s)
    # per dispatch: its ops, its host round trip, its static weights' load and, where its kernels
    # exceed program memory, the cores' program reloads (once per layer); they add up to the total
    of_op = np.array(dispatch.of_op)
    per_preload, per_total, per_energy = (np.zeros(n_dispatch) for _ in range(3))
    per_reload = np.array(reload_seconds(dispatch, list(layer_of), limits, arch, pins.launches_reconfigure), np.float64)
    per_control = np.array(control_seconds_per_dispatch(control.tolist(), dispatch.of_op, n_dispatch, arch), np.float64)
    op_launch = np.array(launch_seconds(dispatch.starts_launch, arch, pins.launches_reconfigure), np.float64)
    per_launch = np.bincount(of_op, weights=op_launch, minlength=n_dispatch).astype(np.float64)
    for d in range(n_dispatch):
        mine = of_op == d
        per_preload[d] = 0.0 if resident else static[d] / arch.ddr_bytes_per_s
        per_total[d] = (f["seconds"][mine].sum() + host_s[d] + per_preload[d] + per_control[d] + per_reload[d]
                        + per_launch[d])
        per_energy[d] = f["energy"][mine].sum() + (0.0 if resident else static[d] * arch.pj_per_byte["ddr"])
    reload_s, control_s, launch_s = per_reload.sum(), per_control.sum(), float(op_launch.sum())
    total_s = f["seconds"].sum() + dispatch_s + preload_s + control_s + reload_s + launch_s
    return dict(total_s=total_s, dispatch_s=dispatch_s, preload_s=preload_s, preload_bytes=preload_bytes,
                preload_pj=preload_pj, reload_s=reload_s, control_s=control_s, static=static, per_reload=per_reload,
                per_control=per_control, per_preload=per_preload, per_total=per_total, per_energy=per_energy,
                launch_s=launch_s, op_launch=op_launch, per_launch=per_launch)


def _control_variables(control: np.ndarray, arch: Arch) -> dict:
    """Per op: the runtime-sequence instructions that set it up inside its dispatch, and their time."""
    return {
        "op_control_instructions": (OP_DIM, control, {"units": "instructions", "description":
                                 "runtime-sequence instructions that set the op up after the op before it in its "
                                 "dispatch (shim tasks, syncs, mem-tile BDs, chain starts and locks, core "
                                 "parameters; where attrs resident_programs is 1, only what re-runs it: shim tasks, "
                                 "on-chip sends, syncs, chain starts; docs/hardware.md 'Control costs'); 0 for a "
                                 "dispatch's first op"}),
        "op_control_seconds": (OP_DIM, control * arch.runtime_instruction_cycles / arch.clock_hz, {
                            "units": "s", "description": "time of op_control_instructions (Arch.runtime_instruction_cycles "
                            "each), in no op's op_seconds; in total_seconds"}),
    }


def _op_variables(placed, per_op: dict) -> dict:
    f, macs, kind_bytes = per_op["f"], per_op["macs"], per_op["kind_bytes"]
    op_dim = OP_DIM
    row, distinct = per_op["row"], per_op["distinct"]
    kernels = [_matmul_kernel(r) for r in distinct]
    groups = np.array([p.chip.group.label if p.chip.group else "" for p in placed], dtype=object)
    return {
        "op_seconds": (op_dim, f["seconds"], {"units": "s", "description": "time of the op (all repeats)"}),
        "op_cycles": (op_dim, per_op["cycles"], {"units": "cycles"}),
        "compute_seconds": (op_dim, f["compute"], {"units": "s", "description":
                            "kernel time of the busiest core (all repeats)"}),
        "movement_seconds": (op_dim, f["movement"], {"units": "s", "description":
                             "time of the op with every kernel a 1-cycle pass (data moves, no compute; NaN "
                             "where that run was left out, movement=False)"}),
        "exposed_compute_seconds": (op_dim, f["exp_compute"], {"units": "s", "description":
                                    "op time not covered by data movement (what a NOOP of the op saves; NaN "
                                    "where movement_seconds is)"}),
        "exposed_movement_seconds": (op_dim, f["exp_movement"], {"units": "s", "description":
                                     "op time not covered by compute"}),
        "l1_peak_bytes": (op_dim, f["l1"], {"units": "bytes", "description": "most core memory any core of the op uses"}),
        "l2_peak_bytes": (op_dim, f["l2"], {"units": "bytes", "description": "most mem-tile memory any mem tile of the op uses"}),
        "macs": (op_dim, macs, {"units": "MAC", "description": "multiply-accumulates (causal halving applied)"}),
        "ddr_bytes": (("op", "tensor_kind"), kind_bytes,
                      {"units": "bytes", "description": "DDR traffic by tensor kind"}),
        "level_bytes": (("op", "level"), per_op["level_bytes"], {"units": "bytes", "description": "bytes per memory level"}),
        "weight_reuse": (op_dim, _ratio(macs, kind_bytes[:, 0] + kind_bytes[:, 2]),
                         {"units": "MAC/byte", "description": "MACs per byte of weights (or KV) fetched from DDR"}),
        "activation_reuse": (op_dim, _ratio(macs, kind_bytes[:, 1]),
                             {"units": "MAC/byte", "description": "MACs per byte of activations fetched from DDR"}),
        "bound_by": (op_dim, per_op["bound"], {"description": "resource with the highest utilization in the op"}),
        "dataflow": (op_dim, per_op["flow_of"], {"description": "ws, is, os, stream (vector ops) or conv"}),
        "fusion_group": (op_dim, groups, {"description": "fused group the op runs in (empty: alone)"}),
        "op_columns": (op_dim, np.array([r.columns for r in distinct], np.int64).reshape(len(distinct))[row],
                       {"units": "columns", "description": "columns the op's cores occupy"}),
        "mapping_gap": (op_dim, np.array([r.search_gap for r in distinct], np.float64).reshape(len(distinct))[row],
                        {"units": "1", "description": "at most this fraction of the op's cycles could an unsimulated "
                         "mapping of its search space save (0: its mapping is proven the best of the space, or the "
                         "op is element-wise and has nothing to search); an op held to a kernel its dispatch "
                         "shares (kernel_shared) counts against the best of its whole space"}),
        "kernel_shared": (op_dim, np.array([bool(p.kernel) for p in placed]), {"description":
                          "the op runs a kernel another op of its dispatch chose, not its own best, so that the "
                          "dispatch's kernels fit core program memory (fastsim.evaluation.sharing)"}),
        "input_on_chip": (op_dim, np.array([p.chip.x for p in placed]), {"description":
                          "activation input read from mem tiles (fused), not DDR"}),
        "output_on_chip": (op_dim, np.array([p.chip.y for p in placed]), {"description":
                           "output kept in mem tiles for the next op of the group"}),
        "cast_share": (op_dim, f["cast"], {"units": "1", "description":
                                           "share of core compute cycles spent dequantizing weights"}),
        "channel_state_cycles": (("op", "channel_state"), per_op["ch_state"],
                                 {"units": "channel-cycles", "description": "stall attribution over all DMA channels"}),
        "core_state_cycles": (("op", "core_state"), per_op["core_state"],
                              {"units": "core-cycles", "description": "stall attribution over all cores"}),
        "energy_pj": (op_dim, f["energy"], {"units": "pJ", "description": "MACs and bytes moved times the arch energy table"}),
        "matmul_tile": (("op", "tile_axis"), np.array([k[0] for k in kernels], np.int64).reshape(len(distinct), 3)[row],
                        {"units": "elements", "description": "m, k, n of the op's microkernel call (0: element-wise op)"}),
        "matmul_datapath": (op_dim, _objects([k[1] for k in kernels])[row],
                            {"description": "MAC datapath of the op's microkernel (empty: element-wise op); ops "
                             "with the same tile and datapath share one kernel in program memory"}),
    }


def _matmul_kernel(r) -> tuple[tuple[int, int, int], str]:
    """(tile, datapath) of an op's matmul kernel, or ((0, 0, 0), "") for an element-wise op."""
    k = r.matmul_kernel
    return ((0, 0, 0), "") if k is None else (tuple(k[1]), k[2])


def _total_variables(dispatch, t: dict, tokens: int) -> dict:
    static = t["static"]
    return {
        "dispatch": (OP_DIM, np.array(dispatch.of_op, np.int64), {"description": "dispatch the op runs in"}),
        "total_seconds": ((), t["total_s"], {"units": "s", "description":
                                        "ops + dispatch overheads + static weight loads + control instructions + program reloads "
                                        "+ launch reconfigurations"}),
        "dispatch_seconds": ((), t["dispatch_s"], {"units": "s", "description": "host time of every dispatch together (single commands or a chained run list: dispatch_commands)"}),
        "preload_seconds": ((), t["preload_s"], {"units": "s", "description":
                                            "static weights loaded per pass (0 when one dispatch keeps them resident)"}),
        "preload_bytes": ((), t["preload_bytes"], {"units": "bytes", "description":
                          "static weights read from DDR per pass (in no op's ddr_bytes; llm_summary adds them)"}),
        "preload_energy_pj": ((), t["preload_pj"], {"units": "pJ", "description": "DDR energy of the static weight load"}),
        "control_seconds": ((), t["control_s"], {"units": "s", "description":
                                  "runtime-sequence instructions that set each op up inside its dispatch (the sum of "
                                  "op_control_seconds)"}),
        "program_reload_seconds": ((), t["reload_s"], {"units": "s", "description":
                                                  "core program reloads where a dispatch's kernels exceed program memory "
                                                  "(where attrs launches_reconfigure is 1: where one launch's kernels do)"}),
        "launch_seconds": ((), t["launch_s"], {"units": "s", "description":
                           "every launch's inline reconfiguration where attrs launches_reconfigure is 1 (the sum of "
                           "op_launch_seconds; 0 otherwise)"}),
        "op_launch_seconds": (OP_DIM, t["op_launch"], {"units": "s", "description":
                              "the inline reconfiguration of the launch the op starts (an op alone or a fusion "
                              "group's first stage; the arch's launch_reconfiguration_s), where attrs "
                              "launches_reconfigure is 1"}),
        "dispatch_launch_seconds": (("dispatch_index",), t["per_launch"], {"units": "s", "description":
                                    "the launches' inline reconfigurations in the dispatch (launch_seconds)"}),
        "sequence_words": (("dispatch_index",), np.array(dispatch.sequence_words, np.int64),
                           {"units": "words", "description": "runtime sequence size per dispatch"}),
        "program_bytes": (("dispatch_index",), np.array(dispatch.program_bytes, np.int64),
                          {"units": "bytes", "description": "core program memory per dispatch (distinct kernels)"}),
        "static_weight_bytes": (("dispatch_index",), static, {"units": "bytes"}),
        "dispatch_total_seconds": (("dispatch_index",), t["per_total"], {"units": "s", "description":
                                   "the dispatch's ops, host round trip, static weight load, control "
                                   "instructions, program reloads and launch reconfigurations (they add up to "
                                   "total_seconds)"}),
        "dispatch_control_seconds": (("dispatch_index",), t["per_control"], {"units": "s", "description":
                                     "control instructions of the dispatch's ops (control_seconds)"}),
        "dispatch_reload_seconds": (("dispatch_index",), t["per_reload"], {"units": "s", "description":
                                    "core program reloads in the dispatch"}),
        "dispatch_preload_seconds": (("dispatch_index",), t["per_preload"], {"units": "s", "description":
                                     "static weights the dispatch loads per pass"}),
        "dispatch_energy_pj": (("dispatch_index",), t["per_energy"], {"units": "pJ", "description":
                               "energy of the dispatch's ops and its static weight load"}),
        "dispatch_fits": (("dispatch_index",), np.array(dispatch.fits, bool), {"description":
                          "the dispatch's runtime sequence and static weights fit (see attr dispatch_problems)"}),
        "tokens_per_s": ((), tokens / t["total_s"], {"units": "tokens/s"}),
    }


def _attrs(pins: GraphPins, arch: Arch, result: GraphResult) -> dict:
    dispatch = result.dispatch
    return {"arch": arch.name, "dispatches": dispatch.count, "cuts": [int(c) for c in dispatch.cuts],
            "residency": pins.residency, "noop": list(pins.noop),
            "resident_programs": int(pins.resident_programs),  # 1: ops after a dispatch's first re-run, not set up
            "launches_reconfigure": int(pins.launches_reconfigure),  # 1: every op's launch rewrites the configuration
            "dispatch_problems": "; ".join(x for d in dispatch.problems for x in d),
            "fusion": result.fusion, "fusion_alternatives": result.alternatives,
            "kernels": sorted({repr(k) for r in {id(r): r for r in result.op_results()}.values() for k in r.kernels})}


def _ratio(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)
