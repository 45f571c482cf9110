"""Dequant launches: matmul ops whose packed weights a launch of its own dequantizes to bf16 in DDR
before they run, each prefill, as FastFlowLM's prefill does (a per-layer run list on its
``dequant.xclbin``, then the ``mm.xclbin`` GEMMs on bf16 weights; docs/as_built.md).

``LlmStudy.dequant_launch`` names them (op name or op class -> true). Each named op then reads bf16
weights and dequantizes nothing on its cores; a vector op of class ``dequant_launch``
(``NAME_dequant``) reads the packed weights and writes the bf16 ones, at the per-weight cost the
matmul's cores would have paid (``Op.cast_cycles_per_weight``). A layer's dequant launches run at
the start of the layer, before any of its ops (so no fused group is split), an op outside the
layers right before it. Each is an op like any other: a launch of its own where launches
reconfigure, a row of the run's class table. Its time there (``op_seconds``), not its ablation
row, is what dequantizing once at load would save: NOOP removes a launch's compute, and its DDR
traffic, which sets its time, still moves.
"""
from __future__ import annotations

from dataclasses import replace

from ..dtypes import DTYPE_BYTES
from ..errors import ConfigError
from ..graph import MATMUL, VECTOR, Op, OpGraph

TARGET = "bf16"  # what the launches write and the matmuls then read
TARGET_BYTES = DTYPE_BYTES[TARGET]
# fusion modes that keep every dequant launch's output in DDR: a group or a chain would hand
# on-chip tensors along the ops' producers, and a dequant launch's output is read from DDR
FUSIONS = ("none", "flash_attention")


def selected(graph: OpGraph, table: dict, fusion: str = "none", host: dict | None = None,
             residency: str = "streamed") -> list[int]:
    """The matmul ops ``table`` names (by op name, else class). Refused by name: a key that selects
    no matmul op, a non-matmul op's name, an op whose weights are no narrower than bf16 (nothing to
    dequantize), an op the host runs, a fusion that could hand tensors on chip, static weights."""
    out, used, problems = [], set(), []
    host = host or {}
    if fusion not in FUSIONS:
        problems.append(f"dequant_launch with fusion = {fusion!r}: a dequant launch writes bf16 weights to DDR for the "
                        f"matmul to read; pin fusion to one of {FUSIONS}")
    if residency == "static":
        problems.append("dequant_launch with residency = 'static': weights dequantized every pass are not "
                        "preloaded; use residency = 'streamed'")
    for i, op in enumerate(graph.ops):
        key = op.name if op.name in table else op.op_class if op.op_class in table else None
        if key is None:
            continue
        if op.kind != MATMUL or not op.streams_weights:
            if op.name in table:
                problems.append(f"dequant_launch[{op.name}]: a {op.kind} op on {op.w.kind} operands, not model "
                                "weights (a dequant launch feeds a matmul's weights)")
            continue
        used.add(key)
        if op.w.elem_bytes >= TARGET_BYTES or not op.cast_cycles_per_weight:
            problems.append(f"dequant_launch[{key}]: {op.name}'s {op.w.elem_bytes:g}-byte weights are not dequantized "
                            f"to {TARGET} by its cores (nothing for a launch to take over)")
        elif op.name in host or op.op_class in host:
            problems.append(f"dequant_launch[{key}]: {op.name} runs on the host (host table), not in an NPU launch")
        else:
            out.append(i)
    problems += [f"dequant_launch[{k}]: selects no matmul op over model weights in this workload"
                 for k in sorted(set(table) - used)]
    if problems:
        raise ConfigError(sorted(set(problems)), "llm study")
    return out


def dequant_op(op: Op) -> Op:
    """The launch that dequantizes matmul ``op``'s K x N packed weights into bf16 in DDR."""
    return Op(f"{op.name}_dequant", "dequant_launch", op.layer, VECTOR, op.k, 1, op.n, op.w,
              y=replace(op.w, elem_bytes=TARGET_BYTES), vector_cycles_per_elem=op.cast_cycles_per_weight,
              repeat=op.repeat, gathered=op.gathered, weight_kind=op.weight_kind)


def insert(graph: OpGraph, chosen: list[int]) -> OpGraph:
    """``graph`` with each chosen matmul reading bf16 weights, dequantized by its launch at the
    start of its layer (an op outside the layers: right before it)."""
    if not chosen:
        return graph
    chosen = set(chosen)
    first_of_layer: dict[int, int] = {}
    for i, op in enumerate(graph.ops):
        first_of_layer.setdefault(op.layer, i)
    before: dict[int, list[int]] = {}  # op index -> chosen matmuls whose launches run right before it
    for i in sorted(chosen):  # in graph order
        layer = graph.ops[i].layer
        before.setdefault(first_of_layer[layer] if layer >= 0 else i, []).append(i)
    ops, producers, new_index = [], [], {}
    for i, op in enumerate(graph.ops):
        for j in before.get(i, ()):
            ops.append(dequant_op(graph.ops[j]))
            producers.append(())
        new_index[i] = len(ops)
        ops.append(replace(op, w=replace(op.w, elem_bytes=TARGET_BYTES), cast_cycles_per_weight=0.0)
                   if i in chosen else op)
        producers.append(graph.producers[i])
    remapped = tuple(tuple(new_index[j] for j in p) for p in producers)
    return OpGraph(tuple(ops), remapped, graph.batch, graph.tokens, graph.chain_live_bytes_per_token)
