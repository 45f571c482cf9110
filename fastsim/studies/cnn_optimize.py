"""``fastsim optimize --onnx MODEL.onnx``: the method's steps as they apply to one CNN inference,
written into one directory (``report.md``, ``report.html``, ``plan.json``).

1. **Baseline**: the network as given (fusion ``auto``), ``onnx_summary``'s numbers.
2. **Ablation** (method step 1): each op class present (and ``cast`` where dequantizing costs
   cycles) replaced by a data-only pass (``GraphPins.noop``) on the baseline's fusion, the whole
   network simulated again, the classes ranked by the end-to-end time saved; every class NOOPed at
   once leaves the pure data-movement time, and the rest of the baseline is exposed compute.
3. **Dispatch and fusion** (step 2): each fusion setting the evaluator supports (``none``,
   ``groups``, ``chain``), with the epilogues as given and folded the other way, simulated whole;
   the fastest is the plan (ties keep the earlier, simpler setting).
4. **Dataflow per layer** (step 6), on the plan: each op's chosen mapping, binding resource and
   time; the layers grouped by type (1x1, 3x3, depthwise, strided, fc, ...) with their totals and
   one rule per group.
5. **Levers**: changes the part allows (half the host dispatch overhead, a runtime change; for a
   float model, its QDQ int8 form), each simulated on the plan; then, apart and labelled as such,
   what-ifs on other hardware (+25 % DDR bandwidth, one more column), which no plan rests on.
6. **Reproduce**: the command, fastsim's version, the arch and its hash, the model file's SHA-256,
   the search budget.

Every number is a whole-network simulation's (``simulate_onnx``), never a sum of isolated kernels.
Every op has one name in every table: an op of a graph that folds epilogues lists the ONNX nodes
it runs inside it (``folds``), by the names the unfolded graph gives them. The memo's sentences
are in ``cnn_memo.py``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..arch import NPU2, Arch
from ..errors import ConfigError, SimulationError
from ..graph import CONV, MATMUL
from ..mapping.dispatch import cuts_text
from ..onnx import OnnxGraph, build_graph, onnx_summary, simulate_onnx
from ..version import __version__
from .levers import digest, other_hardware
from .memo import duration
from .regimes import binding

FUSIONS = ("none", "groups", "chain")  # the evaluator's fusion settings ("auto" picks the best of them)
TOP = 10  # layers listed by time in the baseline
DISPATCH_FACTOR = 0.5  # the "half the host dispatch overhead" lever
# What a layer group's binding resource says about where its time goes (the playbook's rules).
HINTS = {
    "ddr": "fewer DDR bytes are the lever (epilogues folded, activations kept on chip, int8), not faster kernels",
    "shim_column": "one shim column's bandwidth binds: spread the layer's streams over more columns",
    "dma_stream": "the tiles' DMA streams bind: longer transfers or more streams per layer, not faster kernels",
    "compute": "the kernels bind: kernel efficiency, the MAC datapath (int8) and more cores are the levers",
    "host": "it runs on the host: only moving it onto the array changes it",
}
SIM_ERRORS = (ConfigError, SimulationError, ValueError)


class Network:
    """One model's op graphs per (arch, folded epilogues), each built once, and its simulations
    (the model's dims and the search budget fixed)."""

    def __init__(self, model, dims: dict[str, int] | None = None, fold_epilogues: bool = False,
                 search_budget: int | None = 3):
        self.model, self.dims, self.fold, self.budget = model, dict(dims or {}), fold_epilogues, search_budget
        self._graphs: dict[tuple, OnnxGraph] = {}

    def graph(self, arch: Arch, fold: bool | None = None) -> OnnxGraph:
        fold = self.fold if fold is None else fold
        key = (repr(arch), fold)
        if key not in self._graphs:
            self._graphs[key] = build_graph(self.model, arch, dims=self.dims, fold_epilogues=fold)
        return self._graphs[key]

    def simulate(self, arch: Arch, fusion: str = "auto", fold: bool | None = None, noop: tuple[str, ...] = ()):
        """One inference (``simulate_onnx``) with op classes ``noop`` replaced by data-only passes."""
        fold = self.fold if fold is None else fold
        return simulate_onnx(self.graph(arch, fold), arch, fold_epilogues=fold, fusion=fusion,
                             search_budget=self.budget, noop=noop)


def optimize_onnx(model, arch: Arch = NPU2, out: str | Path = "optimize", *, dims: dict[str, int] | None = None,
                  fold_epilogues: bool = False, search_budget: int | None = 3, progress=None,
                  command: str | None = None) -> dict:
    """Run the steps (module docstring) on ``model`` (a path or a ``ModelProto``), write
    ``out``/report.md, report.html and plan.json, and return the plan (as in plan.json).

    ``command`` is the line the reproducibility block quotes (default: this call in Python)."""
    from .cnn_memo import memo

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda step, text: None)
    net = Network(model, dims, fold_epilogues, search_budget)
    say("baseline", "simulating the network as given")
    base_ds = net.simulate(arch)
    plan = {"inputs": _inputs(net, arch, base_ds), "baseline": named(onnx_summary(base_ds, TOP), net, arch, net.fold)}
    say("ablate", "ranking op classes by whole-network NOOP deltas")
    plan["ablation"] = ablation(net, arch, base_ds)
    say("fusion", "comparing fusion settings and epilogue folding")
    plan["fusion"], plan_ds = fusion_options(net, arch)
    chosen = plan["fusion"]["chosen"]
    plan["plan"] = {**chosen, "summary": named(onnx_summary(plan_ds, TOP), net, arch, chosen["fold_epilogues"])}
    say("dataflow", "per-layer mappings of the plan")
    plan["dataflow"] = dataflow_per_layer(net, arch, plan_ds, chosen["fold_epilogues"])
    folds = folded_into(net, arch, chosen["fold_epilogues"])
    for r in plan["dataflow"]["layers"]:
        r["folds"] = folds.get(r["op"], [])
    say("levers", "simulating the what-ifs on the plan")
    plan["levers"] = lever_runs(net, arch, chosen)
    plan["reproduce"] = reproduce(net, arch, command or _python_call(model, arch, dims, fold_epilogues, search_budget))
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    doc = memo(plan)
    (out / "report.md").write_text(doc.markdown())
    (out / "report.html").write_text(doc.html(out))
    say("done", str(out / "report.md"))
    return plan


def folded_into(net: Network, arch: Arch, fold: bool) -> dict[str, list[str]]:
    """Per op of the graph built with epilogues folded (``fold``), the ops of the unfolded graph it
    runs inside it, by their names there (an epilogue joins the op that writes its input; {} when
    nothing is folded)."""
    if not fold:
        return {}
    plain = net.graph(arch, False).graph
    kept = {op.name for op in net.graph(arch, True).graph.ops}
    out: dict[str, list[str]] = {}
    for i, op in enumerate(plain.ops):
        j = i
        while plain.ops[j].name not in kept and plain.producers[j]:
            j = plain.producers[j][0]
        if j != i and plain.ops[j].name in kept:
            out.setdefault(plain.ops[j].name, []).append(op.name)
    return out


def named(summary: dict, net: Network, arch: Arch, fold: bool) -> dict:
    """``onnx_summary``'s numbers, each top layer with the ONNX nodes folded into it (``folds``)."""
    folds = folded_into(net, arch, fold)
    return {**summary, "top_layers": [{**r, "folds": folds.get(r["op"], [])} for r in summary["top_layers"]]}


def _inputs(net: Network, arch: Arch, ds) -> dict:
    return {"model": str(ds.attrs["model"]), "file": _file_name(net.model), "arch": arch.name,
            "compute_dtype": str(ds.attrs["compute_dtype"]), "batch": int(ds.attrs["batch"]), "dims": net.dims,
            "fold_epilogues": net.fold, "search_budget": "exact" if net.budget is None else net.budget,
            "arch_definition": repr(arch)}


def _file_name(model) -> str:
    return str(model) if isinstance(model, (str, Path)) else "(a ModelProto in memory)"


def _python_call(model, arch: Arch, dims, fold: bool, budget) -> str:
    return (f"fastsim.studies.cnn_optimize.optimize_onnx({_file_name(model)!r}, arch={arch.name!r}, dims={dims!r}, "
            f"fold_epilogues={fold!r}, search_budget={budget!r})")


# -- step 1: ablation ---------------------------------------------------------------------------

def op_classes(ds) -> list[str]:
    """Op classes present, in graph order (host ops are not the array's); "cast" when dequantizing
    costs cycles."""
    seen = []
    for c, bound in zip(ds.op_class.values, ds.bound_by.values):
        if str(bound) != "host" and str(c) not in seen:
            seen.append(str(c))
    if float(ds.cast_share.max()) > 0:
        seen.append("cast")
    return seen


def _picked(ds, op_class: str) -> np.ndarray:
    return ds.cast_share.values > 0 if op_class == "cast" else ds.op_class.values == op_class


def ablation(net: Network, arch: Arch, base_ds) -> dict:
    """Each class NOOPed on the baseline's fusion: time saved end to end, ranked (ties keep graph
    order); then every class at once (the data-movement time)."""
    t0, fusion = float(base_ds.total_seconds), str(base_ds.attrs["fusion"])
    classes = op_classes(base_ds)
    rows = []
    for c in classes:
        ds = net.simulate(arch, fusion, noop=(c,))
        pick = _picked(base_ds, c)
        compute = float(base_ds.compute_seconds.values[pick].sum())
        noop_s = float(ds.total_seconds)
        rows.append({"class": c, "layers": int(pick.sum()), "op_seconds": float(base_ds.op_seconds.values[pick].sum()),
                     "compute_seconds": compute, "noop_seconds": noop_s, "saved_seconds": t0 - noop_s,
                     "share": (t0 - noop_s) / t0, "exposed_share": (t0 - noop_s) / compute if compute else None,
                     "bound_by": binding(base_ds, pick), "dispatches": int(ds.attrs["dispatches"])})
    rows.sort(key=lambda r: -r["saved_seconds"])  # stable: ties keep graph order
    for rank, r in enumerate(rows, 1):
        r["rank"] = rank
    movement = float(net.simulate(arch, fusion, noop=tuple(classes)).total_seconds) if classes else t0
    return {"fusion": fusion, "baseline_seconds": t0, "dispatches": int(base_ds.attrs["dispatches"]), "classes": rows,
            "data_movement_seconds": movement, "exposed_compute_seconds": t0 - movement,
            "top_class": rows[0]["class"] if rows else ""}


# -- step 2: dispatch and fusion ----------------------------------------------------------------

def _option(net: Network, arch: Arch, fusion: str, fold: bool):
    """One fusion setting simulated whole: its numbers (or why it cannot run) and its Dataset."""
    row = {"fusion": fusion, "fold_epilogues": fold}
    try:
        ds = net.simulate(arch, fusion, fold)
    except SIM_ERRORS as e:
        return {**row, "seconds": None, "error": str(e).splitlines()[-1].strip(" -")}, None
    on_chip = ds.input_on_chip.values.astype(bool) | ds.output_on_chip.values.astype(bool)
    return {**row, "resolved": str(ds.attrs["fusion"]), "seconds": float(ds.total_seconds),
            "dispatches": int(ds.attrs["dispatches"]), "dispatch_seconds": float(ds.dispatch_seconds),
            "cuts": cuts_text(ds.attrs["cuts"]), "ops": int(ds.sizes["op"]), "ops_on_chip": int(on_chip.sum()),
            "ddr_bytes": float(ds.ddr_bytes.sum()), "error": ""}, ds


def fusion_options(net: Network, arch: Arch) -> tuple[dict, object]:
    """Every fusion setting, epilogues as given then folded the other way; the fastest is chosen
    (ties keep the earlier). Returns the step's numbers and the chosen option's Dataset."""
    options, datasets = [], []
    for fold in (net.fold, not net.fold):
        for fusion in FUSIONS:
            row, ds = _option(net, arch, fusion, fold)
            options.append(row)
            datasets.append(ds)
    ran = [i for i, o in enumerate(options) if o["seconds"] is not None]
    if not ran:
        raise ConfigError([f"fusion {o['fusion']}: {o['error']}" for o in options], "optimize --onnx")
    best = min(ran, key=lambda i: (options[i]["seconds"], i))
    return {"options": options, "chosen": dict(options[best]),
            "dispatch_overhead_s": arch.dispatch_overhead_s}, datasets[best]


# -- step 6: dataflow per layer -----------------------------------------------------------------

def layer_group(op) -> str:
    """The playbook's layer type of an op: depthwise, grouped, strided, 1x1, 3x3 or RxS convs; fc
    (a matmul on weights) or matmul (on two activations); else the vector op's class."""
    if op.kind == CONV:
        g = op.conv
        if g.groups > 1:
            return "depthwise" if g.groups == g.c else "grouped"
        if g.stride > 1:
            return "strided"
        return "1x1" if g.r == g.s == 1 else f"{g.r}x{g.s}"
    if op.kind == MATMUL:
        return "fc" if op.w.kind == "weights" else "matmul"
    return op.op_class


def _conv_mapping(op, compute_dtype: str, arch: Arch, budget) -> tuple[str, str]:
    """(kind, label) of a conv's chosen mapping: the search ``conv_op_design`` ran, through the
    mapper's door (its answer comes from the search's cache; a conv never fuses, so it is placed as
    it stands)."""
    from ..evaluation import GraphPins
    from ..mapping.conv_search import conv_of
    from ..mapping.mappers import op_search
    from ..mapping.placed import Placed

    found = op_search(Placed(op), arch, GraphPins(compute_dtype, search_budget=budget))
    return conv_of(op, compute_dtype).kind, found.best.label()


def _mapping(op, ds, i: int, compute_dtype: str, arch: Arch, budget) -> tuple[str, str]:
    """(dataflow, mapping label) of op ``i`` of the plan."""
    cols = int(ds.op_columns.values[i])
    if op is not None and op.kind == CONV:
        kind, label = _conv_mapping(op, compute_dtype, arch, budget)
        flow = label.split("/")[0] if kind == "pointwise" else f"conv {kind}"
        return flow, label
    flow = str(ds.dataflow.values[i])
    if op is not None and op.kind == MATMUL:
        tile = "x".join(str(int(t)) for t in ds.matmul_tile.values[i])
        return flow, f"{flow} {tile} {ds.matmul_datapath.values[i]}, {cols} columns"
    return flow, f"stream, {cols} columns"


def _layer(op, ds, i: int, compute_dtype: str, arch: Arch, budget) -> dict:
    flow, label = _mapping(op, ds, i, compute_dtype, arch, budget)
    row = {"op": str(ds.op_name.values[i]), "type": str(ds.onnx_op_type.values[i]),
           "class": str(ds.op_class.values[i]), "group": layer_group(op) if op is not None else "host",
           "kernel": "", "stride": None, "groups": None, "channels": "", "dataflow": flow, "mapping": label,
           "columns": int(ds.op_columns.values[i]), "bound_by": str(ds.bound_by.values[i]),
           "seconds": float(ds.op_seconds.values[i]), "movement_seconds": float(ds.movement_seconds.values[i]),
           "control_seconds": float(ds.op_control_seconds.values[i]),
           "macs": int(ds.macs.values[i]), "mapping_gap": float(ds.mapping_gap.values[i])}
    if op is not None and op.kind == CONV:
        g = op.conv
        row.update(kernel=f"{g.r}x{g.s}", stride=g.stride, groups=g.groups, channels=f"{g.c}->{g.k} @ {g.oh}x{g.ow}")
    elif op is not None and op.kind == MATMUL:
        row.update(channels=f"{op.k}->{op.n} x {op.m}")
    return row


def dataflow_per_layer(net: Network, arch: Arch, ds, fold: bool) -> dict:
    """Per op of the plan: its mapping, binding resource and time; the layer groups and their rules."""
    g = net.graph(arch, fold)
    ops = {op.name: op for op in g.graph.ops}
    layers = [_layer(ops.get(str(ds.op_name.values[i])), ds, i, g.compute_dtype, arch, net.budget)
              for i in range(ds.sizes["op"])]
    groups = layer_groups(layers)
    flows = {}
    for r in layers:
        if r["dataflow"] in ("ws", "is", "os"):
            flows[r["dataflow"]] = flows.get(r["dataflow"], 0) + 1
    return {"layers": layers, "groups": groups, "rules": [gr["rule"] for gr in groups],
            "matmul_dataflows": dict(sorted(flows.items())), "weights": _weight_modes(layers)}


def _weight_modes(layers: list[dict]) -> dict[str, int]:
    """How many dense and depthwise convs keep their weights resident in core memory or stream them."""
    out = {}
    for r in layers:
        if r["dataflow"].startswith("conv "):
            mode = r["mapping"].split("w:")[-1].split()[0]
            out[mode] = out.get(mode, 0) + 1
    return out


def layer_groups(layers: list[dict]) -> list[dict]:
    """Layers by type, largest total time first: count, time, share, MACs, TOPS, the binding
    resource (by time), the time above the data-movement twins (what faster kernels can save
    at most) and the set-up of its layers inside the dispatch, with the group's rule."""
    total = sum(r["seconds"] for r in layers) or 1.0
    names = list(dict.fromkeys(r["group"] for r in layers))
    out = []
    for name in names:
        rows = [r for r in layers if r["group"] == name]
        seconds = sum(r["seconds"] for r in rows)
        by = {}
        for r in rows:
            by[r["bound_by"]] = by.get(r["bound_by"], 0.0) + r["seconds"]
        bound = max(by, key=by.get)
        macs = sum(r["macs"] for r in rows)
        group = {"group": name, "layers": len(rows), "seconds": seconds, "share": seconds / total, "macs": macs,
                 "tops": 2 * macs / seconds / 1e12 if seconds else 0.0, "bound_by": bound,
                 "bound_share": by[bound] / seconds if seconds else 0.0,
                 "kernel_headroom_seconds": sum(max(0.0, r["seconds"] - r["movement_seconds"]) for r in rows),
                 "control_seconds": sum(r["control_seconds"] for r in rows)}
        group["rule"] = _rule(group)
        out.append(group)
    return sorted(out, key=lambda gr: -gr["seconds"])


def _rule(g: dict) -> str:
    return (f"{g['group']} ({g['layers']} layer{'' if g['layers'] == 1 else 's'}, {duration(g['seconds'])}, "
            f"{100 * g['share']:.1f} % of the op time): bound by {g['bound_by']} for {100 * g['bound_share']:.0f} % "
            f"of it; {HINTS.get(g['bound_by'], 'see its binding resource')}; faster kernels can save at most "
            f"{duration(g['kernel_headroom_seconds'])} (its time above the data-movement twins); setting its layers "
            f"up inside the dispatch takes {duration(g['control_seconds'])} more ({_setup_hint(g)})")


def _setup_hint(g: dict) -> str:
    if g["control_seconds"] > g["seconds"]:
        return "more than its layers run: fold or fuse them, or run them on fewer columns"
    return "less than its layers run"


# -- levers and reproducibility -----------------------------------------------------------------

def _arch_levers(arch: Arch) -> list[tuple[str, Arch, bool]]:
    """(name, changed arch, whether the part allows it): the host runtime's dispatch overhead is
    software on the same part; faster DDR and one more column are other hardware."""
    return [(f"host dispatch overhead x{DISPATCH_FACTOR:g}, a host runtime change "
             f"({duration(arch.dispatch_overhead_s)} -> {duration(arch.dispatch_overhead_s * DISPATCH_FACTOR)})",
             arch.replace(dispatch_overhead_s=arch.dispatch_overhead_s * DISPATCH_FACTOR), True),
            *[(name, changed, False) for name, changed in other_hardware(arch)]]


def _int8_network(net: Network) -> Network:
    """The model in its QDQ int8 form (``zoo.quantize_qdq``: per-tensor int8, as a static quantizer
    writes it), same dims, budget and epilogues."""
    import onnx

    from ..onnx.zoo import quantize_qdq

    proto = net.model if isinstance(net.model, onnx.ModelProto) else onnx.load_model(str(net.model),
                                                                                      load_external_data=False)
    return Network(quantize_qdq(proto), net.dims, net.fold, net.budget)


def lever_runs(net: Network, arch: Arch, chosen: dict) -> list[dict]:
    """Each lever simulated on the plan (its fusion and epilogues): seconds and gain, or why it
    cannot run; ``this_part`` False for a what-if on other hardware."""
    plan_s, fusion, fold = chosen["seconds"], chosen["fusion"], chosen["fold_epilogues"]
    runs = [(name, net, a, part) for name, a, part in _arch_levers(arch)]
    if net.graph(arch, fold).compute_dtype != "int8":
        runs.insert(1, ("int8 weights and activations (QDQ, per tensor)", None, arch, True))
    out = []
    for name, lever_net, a, part in runs:
        try:
            lever_net = lever_net or _int8_network(net)
            seconds = float(lever_net.simulate(a, fusion, fold).total_seconds)
            out.append({"lever": name, "this_part": part, "seconds": seconds, "gain_seconds": plan_s - seconds,
                        "error": ""})
        except SIM_ERRORS as e:
            out.append({"lever": name, "this_part": part, "seconds": None, "gain_seconds": None,
                        "error": str(e).splitlines()[-1].strip(" -") or type(e).__name__})
    return out


def model_sha256(model) -> str:
    """SHA-256 of the model file's bytes (of the serialized proto for a model in memory)."""
    data = Path(model).read_bytes() if isinstance(model, (str, Path)) else model.SerializeToString()
    return hashlib.sha256(data).hexdigest()


def reproduce(net: Network, arch: Arch, command: str) -> dict:
    """What reproduces the run: the command, fastsim's version, the arch and a hash of its
    definition, the model file and its SHA-256, the dims, epilogues and search budget. The
    simulation is deterministic: no seed enters it."""
    return {"command": command, "version": __version__, "arch": arch.name, "arch_sha256": digest(repr(arch)),
            "model_file": _file_name(net.model), "model_sha256": model_sha256(net.model), "dims": net.dims,
            "fold_epilogues": net.fold, "search_budget": "exact" if net.budget is None else net.budget}
