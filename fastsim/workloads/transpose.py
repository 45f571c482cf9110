"""A 2-D transpose as a workload of its own (``fastsim run transpose``): a one-op graph of the
transpose kind run by the evaluator (``fastsim.evaluation.run_standalone``: the transpose search,
the cache and the checks of every graph's transpose), summarized as ``run conv`` is, less the
arithmetic rates (a transpose computes nothing) and with the bandwidth it reaches."""
from __future__ import annotations

from ..arch import Arch
from ..evaluation import GraphPins, run_standalone
from ..graph import TRANSPOSE, Op, OpGraph, Operand
from ..mapping.pins import Pins
from ..mapping.transpose import Transpose, check_pins

ARITHMETIC = ("ops", "ops_per_s", "peak_ops_per_s", "peak_fraction")  # ``summarize``'s, meaningless here


def transpose_graph(op: Transpose, batch: int = 1) -> OpGraph:
    """The one-op graph of ``op`` (``batch`` instances, one after another), as the ONNX front end
    builds a Transpose's."""
    x = Operand("activations", float(op.elem_bytes))
    one = Op(op.name, "elementwise", 0, TRANSPOSE, op.m, op.unit, op.n, x, y=x, repeat=batch)
    return OpGraph((one,), ((),), batch=1, tokens=op.m)


def run_transpose(op: Transpose, arch: Arch, batch: int = 1, pins: Pins = Pins(), budget: int | None = None,
                  skip: bool = True, trace: bool = False) -> tuple[dict, object]:
    """Evaluate ``op``'s one-op graph; return the summary ``fastsim run transpose`` prints (time,
    bytes, utilization, the chosen mapping and the search's certainty) and the engine result of one
    instance's design."""
    from ..report import summarize

    check_pins(op.validate(), pins, arch)  # named as the transpose search names them
    gp = GraphPins(fusion="none", search_budget=budget, op_pins=((op.name, pins),),
                   search_control=False)  # ranked by cycles alone, as run gemm and run conv: a dispatch of its own
    run = run_standalone(transpose_graph(op, batch), arch, gp, skip=skip, trace=trace)
    found, ds = run.search, run.dataset
    summary = {k: v for k, v in summarize(ds, 0, arch, 0.0, "bf16").items() if k not in ARITHMETIC}
    if batch > 1:  # one instance's design, run ``batch`` times (the evaluator's op time)
        summary.update(total_cycles=summary["total_cycles"] * batch, kernel_seconds=summary["kernel_seconds"] * batch,
                       seconds=summary["kernel_seconds"] * batch + summary["dispatch_overhead_s"],
                       ddr_bytes=summary["ddr_bytes"] * batch)
    summary["bytes_per_s"] = 2 * op.m * op.n * op.unit_bytes * batch / summary["seconds"]
    summary["workload"] = {"kind": "transpose", "m": op.m, "n": op.n, "unit": op.unit, "elem_bytes": op.elem_bytes,
                           "batch": batch}
    mp, pl = found.best, found.best_plan
    summary["mapping"] = {"label": mp.label(), "tm": mp.tm, "tn": mp.tn, "cols": mp.cols, "rows": mp.rows,
                          "padding_tiles": pl.padding_tiles, "runs_per_tile": pl.runs_per_tile,
                          "call_cycles": pl.call_cycles, "lower_bound_cycles": pl.lower_bound_cycles}
    summary["search"] = found.summary()
    return summary, ds
