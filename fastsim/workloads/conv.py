"""Convolutions as workloads: one ``Conv2d`` (or every layer of a SCALE-Sim topology CSV) as a
one-op graph run by the evaluator (``fastsim.evaluation.run_standalone``: the conv search, the
cache and the checks of every graph's conv), and summarized as ``run gemm`` is.

Pointwise layers are GEMMs and take the matmul mapper's answer; everything else the conv space's
(``docs/conv.md``).
"""
from __future__ import annotations

from dataclasses import fields

from ..arch import Arch
from ..dtypes import DTYPE_BYTES
from ..errors import ConfigError
from ..evaluation import GraphPins, run_standalone
from ..graph import CONV, ConvGeometry, Op, OpGraph, Operand
from ..mapping.conv import CONV_PINS, Conv2d
from ..mapping.pins import Pins


def layers_from_topology(path: str, dtype: str = "int8") -> list[Conv2d]:
    """The layers of a SCALE-Sim topology CSV (read by the systolic model's parser) as convs.
    SCALE-Sim's ifmap sizes already include any padding (its ofmap is (H - R + stride) / stride),
    so the layers have none; GEMM-form rows (M, N, K) become pointwise convs of M pixels."""
    from ..systolic import read_topology

    out = []
    for layer in read_topology(path):
        if layer.stride_h != layer.stride_w:
            raise ConfigError([f"layer {layer.name}: stride = ({layer.stride_h}, {layer.stride_w}): fastsim's "
                               "Conv2d has one stride for both axes"], f"topology {path}")
        if layer.filter_h == 1 and layer.channels == 1 and layer.ifmap_w == layer.filter_w:  # GEMM form
            out.append(Conv2d(1, layer.k, layer.m, 1, layer.n, 1, 1, dtype=dtype, name=layer.name))
        else:
            out.append(Conv2d(1, layer.channels, layer.ifmap_h, layer.ifmap_w, layer.num_filters, layer.filter_h,
                              layer.filter_w, stride=layer.stride_h, dtype=dtype, name=layer.name))
    return out


def conv_graph(op: Conv2d) -> OpGraph:
    """The one-op graph of ``op``: its geometry, activations and weights in its dtype, its output
    in its out_dtype (the graph's conv op as the ONNX front end builds one)."""
    geometry = ConvGeometry(**{f.name: getattr(op, f.name) for f in fields(ConvGeometry)})
    m, k, n = geometry.gemm_extents()
    elem = DTYPE_BYTES[op.dtype]
    one = Op(op.name, "conv", 0, CONV, m, k, n, Operand("activations", elem), Operand("weights", elem),
             Operand("activations", op.out_bytes), conv=geometry)
    return OpGraph((one,), ((),), batch=1, tokens=m)


def conv_pins(op: Conv2d, pins: Pins = Pins(), budget: int | None = None) -> GraphPins:
    """The one-op graph's pins: ``op``'s dtype, out_dtype and efficiency, its mapping pins as the
    op's ``op_pins``, the search's budget, nothing to fuse, its search by cycles alone (the op is a
    dispatch of its own)."""
    return GraphPins(op.dtype, kernel_efficiency=op.kernel_efficiency, fusion="none", search_budget=budget,
                     op_pins=((op.name, pins),), out_dtype=((op.name, op.out_dtype),) if op.out_dtype else (),
                     search_control=False)


def run_conv(op: Conv2d, arch: Arch, pins: Pins = Pins(), budget: int | None = None,
             skip: bool = True, trace: bool = False) -> tuple[dict, object]:
    """Evaluate ``op``'s one-op graph, and return the usual summary (``report.summarize``) with the
    workload, the chosen mapping and the search's certainty, and the engine result of the chosen
    design (the search's own unless a trace or stepping was asked for): what ``fastsim run conv``
    prints."""
    from ..report import summarize

    graph = conv_graph(op.validate(arch))
    CONV_PINS.validate(pins, arch)  # named as the conv search names them (the evaluator adds the op's name)
    run = run_standalone(graph, arch, conv_pins(op, pins, budget), skip=skip, trace=trace)
    found, ds = run.search, run.dataset
    summary = summarize(ds, 0, arch, 2 * op.macs, op.dtype)
    summary["workload"] = {"kind": "conv", "conv_kind": found.kind, "n": op.n, "c": op.c, "h": op.h, "w": op.w,
                           "k": op.k, "r": op.r, "s": op.s, "stride": op.stride, "padding": op.padding,
                           "dilation": op.dilation, "groups": op.groups, "dtype": op.dtype,
                           "out_dtype": op.out_dtype or op.dtype, "oh": op.oh, "ow": op.ow, "macs": op.macs}
    summary["mapping"] = _mapping(op, found)
    summary["search"] = found.summary()  # as run gemm's: one record of the search's certainty
    return summary, ds


def _mapping(op: Conv2d, found) -> dict:
    """The chosen mapping's fields, its padding waste, and the mem-tile -> core input bytes over
    the input's bytes (the halo factor: about r / stride, where im2col would move r * s)."""
    mp, pl = found.best, found.best_plan
    if found.gemm is not None:
        return {"label": "gemm " + mp.label(), "padding_waste": float(pl["padding_waste"]),
                "gemm": [op.n * op.oh * op.ow, op.c, op.k]}
    return {"label": mp.label(), "split": mp.split, "cols": pl["layout"].cols, "rows": pl["layout"].rows,
            "rpc": mp.rpc, "kb": pl["kb"], "weights": mp.weights, "cb": pl["cb"] if mp.weights == "ci" else None,
            "padding_waste": pl["padding_waste"], "halo_factor": pl["halo_factor"],
            "lower_bound_cycles": pl["lower_bound_cycles"], "bound_resource": pl["bound_resource"]}
