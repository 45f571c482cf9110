"""Cast launches: matmul ops whose C leaves as an f32 scratch that a launch of its own converts to
the activations' dtype, as mlir-air's "fused-cast" GEMMs do in its LLM prefill ELFs (the kernel
registry's method for M*K*N >= 4e9: ``matrix_multiplication/bf16_in_bf16_out/run.py:652-664``).

``LlmStudy.cast_launch`` names them (op name or op class -> true). Each named op writes 4-byte C,
and a vector op of class ``cast_launch`` follows it (``NAME_cast``; not ``cast``, which names the
weights' dequantization inside matmuls in NOOP and the ablation): it reads the scratch, writes the
original output, and every op that read the matmul's output reads the cast's instead. Its cycles
per element are the kernel model's f32 -> bf16 cast on the tile each core gets. It is an op like
any other: a launch of its own where launches reconfigure, a row of the ablation.
"""
from __future__ import annotations

from dataclasses import replace

from ..arch import Arch
from ..errors import ConfigError
from ..graph import MATMUL, VECTOR, Op, OpGraph
from ..dtypes import DTYPE_BYTES
from ..workloads.cast_launch import SCRATCH, TARGET, cast_cycles_per_elem

SCRATCH_BYTES = DTYPE_BYTES[SCRATCH]


# fusion modes whose groups never hold a cast-launched op: a cast launch writes its scratch to DDR
# for a launch of its own, so a group that would keep it on chip is not what was built (flash
# attention holds attention matmuls only, which are refused below while it is requested)
FUSIONS = ("none", "flash_attention")


def selected(graph: OpGraph, table: dict, fusion: str = "none", host: dict | None = None) -> list[int]:
    """The matmul ops ``table`` names (by op name, else class). Refused by name: a key that selects
    no matmul op, a non-matmul op's name, an op the host runs, and a fusion that could hold a
    cast-launched op in a group (anything but ``FUSIONS``; attention matmuls under flash attention)."""
    out, used, problems = [], set(), []
    host = host or {}
    if fusion not in FUSIONS:
        problems.append(f"cast_launch with fusion = {fusion!r}: a cast launch writes its op's f32 scratch to DDR for "
                        f"a launch of its own, which a fused group would keep on chip; pin fusion to one of {FUSIONS}")
    for i, op in enumerate(graph.ops):
        key = op.name if op.name in table else op.op_class if op.op_class in table else None
        if key is None:
            continue
        if op.kind != MATMUL:
            if op.name in table:
                problems.append(f"cast_launch[{op.name}]: a {op.kind} op (a cast launch follows a matmul)")
            continue
        used.add(key)
        if op.name in host or op.op_class in host:
            problems.append(f"cast_launch[{key}]: {op.name} runs on the host (host table), not in an NPU launch")
        elif fusion == "flash_attention" and op.op_class == "attention":
            problems.append(f"cast_launch[{key}]: {op.name} is inside flash attention's fused group (fusion = "
                            "flash_attention), which keeps its scores on chip")
        out.append(i)
    problems += [f"cast_launch[{k}]: selects no matmul op of this workload" for k in sorted(set(table) - used)]
    if problems:
        raise ConfigError(sorted(set(problems)), "llm study")
    return out


def cast_op(op: Op, arch: Arch) -> Op:
    """The launch that casts matmul ``op``'s f32 scratch into its output."""
    per_elem = cast_cycles_per_elem(op.m, op.n, arch, arch.columns * arch.compute_rows, f"cast_launch[{op.name}]")
    return Op(f"{op.name}_cast", "cast_launch", op.layer, VECTOR, op.m, 1, op.n,
              replace(op.y, kind="activations", elem_bytes=SCRATCH_BYTES), y=op.y, vector_cycles_per_elem=per_elem,
              repeat=op.repeat)


def insert(graph: OpGraph, chosen: list[int], arch: Arch) -> OpGraph:
    """``graph`` with each chosen matmul writing f32 and its cast launch right after it."""
    if not chosen:
        return graph
    for i in chosen:
        if graph.ops[i].y.elem_bytes != DTYPE_BYTES[TARGET]:
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
