"""Cast launches: matmul ops whose C leaves as an f32 scratch that a launch of its own converts to
the activations' dtype, as mlir-air's "fused-cast" GEMMs do in its LLM prefill ELFs (the kernel
registry's method for M*K*N >= 4e9: ``matrix_multiplication/bf16_in_bf16_out/run.py:652-664``).

``LlmStudy.cast_launch`` names them (op name or op class -> true). Each named op writes 4-byte C,
and a vector op of class ``cast`` follows it (``NAME_cast``): it reads the scratch, writes the
original output, and every op that read the matmul's output reads the cast's instead. Its cycles
per element are the kernel model's f32 -> bf16 cast on the tile each core gets. It is an op like
any other: a launch of its own where launches reconfigure, a row of the ablation (class ``cast``).
"""
from __future__ import annotations

from dataclasses import replace

from ..arch import Arch
from ..errors import ConfigError
from ..graph import MATMUL, VECTOR, Op, OpGraph
from ..kernel_model.vector import cast_cycles, core_of
from ..mapping.vector import core_tile

SCRATCH_BYTES = 4.0  # f32


def selected(graph: OpGraph, table: dict) -> list[int]:
    """The matmul ops ``table`` names (by op name, else class); a key that names nothing, or a
    non-matmul op, is refused by name."""
    out, used, problems = [], set(), []
    for i, op in enumerate(graph.ops):
        key = op.name if op.name in table else op.op_class if op.op_class in table else None
        if key is None:
            continue
        used.add(key)
        if op.kind != MATMUL:
            if op.name in table:
                problems.append(f"cast_launch[{op.name}]: a {op.kind} op (a cast launch follows a matmul)")
            continue
        out.append(i)
    problems += [f"cast_launch[{k}]: names no matmul op or op class of this workload" for k in sorted(set(table) - used)]
    if problems:
        raise ConfigError(problems, "llm study")
    return out


def cast_op(op: Op, arch: Arch) -> Op:
    """The launch that casts matmul ``op``'s f32 scratch into its output."""
    core = core_of(arch)
    if core is None:
        raise ConfigError([f"cast_launch[{op.name}]: {arch.name} has no documented vector core to price the cast on"],
                          "llm study")
    rows, elems = core_tile(op.m, op.n, 1, arch.columns * arch.compute_rows)
    per_elem = cast_cycles(core, rows * elems, "f32", "bf16") / (rows * elems)
    return Op(f"{op.name}_cast", "cast", op.layer, VECTOR, op.m, 1, op.n,
              replace(op.y, kind="activations", elem_bytes=SCRATCH_BYTES), y=op.y, vector_cycles_per_elem=per_elem,
              repeat=op.repeat)


def insert(graph: OpGraph, chosen: list[int], arch: Arch) -> OpGraph:
    """``graph`` with each chosen matmul writing f32 and its cast launch right after it."""
    if not chosen:
        return graph
    for i in chosen:
        if graph.ops[i].y.elem_bytes != 2:
            raise ConfigError([f"cast_launch[{graph.ops[i].name}]: its output is {graph.ops[i].y.elem_bytes:g}-byte; "
                               "a cast launch writes bf16"], "llm study")
    ops, producers, new_index = [], [], {}
    reads_from = {}  # old index -> new index of what consumers read (the cast, for a chosen op)
    for i, op in enumerate(graph.ops):
        mine = tuple(reads_from[j] for j in graph.producers[i])
        if i in chosen:
            new_index[i] = len(ops)
            ops.append(replace(op, y=replace(op.y, elem_bytes=SCRATCH_BYTES)))
            producers.append(mine)
            reads_from[i] = len(ops)
            ops.append(cast_op(op, arch))
            producers.append((new_index[i],))
        else:
            new_index[i] = reads_from[i] = len(ops)
            ops.append(op)
            producers.append(mine)
    return OpGraph(tuple(ops), tuple(producers), graph.batch, graph.tokens, graph.chain_live_bytes_per_token)
