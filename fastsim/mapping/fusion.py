"""Fusion: which ops of a graph share one design and hand their activations over on chip.

A fusion group is a run of consecutive ops whose intermediate activations stay in the mem tiles
(written there by the producer's join, read from there by the consumer's mem-tile channels)
instead of going out to DDR and back. An op reads its activation input on chip when every
producer of that input is in its group, and keeps its output on chip when every consumer is.
The ops of a group run back to back on the same columns (each stage is its own engine design with
on-chip operands, see ``Matmul.a_on_chip``); DDR traffic drops by exactly the intermediates.

Groups are found by patterns over the graph's op classes and edges (``find_groups``), never by op
names, so any front end whose graph has the shape gets the fusion:

- ``norm_qkv``: a norm inside a layer whose every consumer is a gemm (the attention projections);
- ``flash_attention``: attention -> softmax -> attention, each the next one's only consumer, run
  with an online softmax: the scores live in a ring of KV blocks, never a whole row; the rescale
  of the running output costs core cycles;
- ``ffn``: a norm whose consumers are gemms joined by one element-wise op that feeds one gemm
  (gated FFN: norm -> gate/up -> SiLU x mul -> down).

``chain`` fuses a whole dispatch: every activation stays on chip between ops and layers (only
weights, the KV cache and the dispatch's inputs and outputs touch DDR), possible when every
activation tensor fits (decode). Prefill groups other than flash attention run in token blocks
small enough for their intermediates to fit, which re-streams their weights once per block: the
search weighs that against the DDR round trip it saves.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..graph import MATMUL, OpGraph

NORM_QKV, FLASH_ATTENTION, FFN, CHAIN = "norm_qkv", "flash_attention", "ffn", "chain"
GROUP_KINDS = (NORM_QKV, FLASH_ATTENTION, FFN)
PIPELINABLE = (NORM_QKV, FFN)  # kinds whose stages can run side by side as a spatial pipeline
MODES = ("auto", "none", "groups", "chain")  # auto: the search picks per group (and chain when it fits);
# a fusion value may also name group kinds joined by "+" (e.g. "ffn+flash_attention"): exactly those;
# "KIND:pipeline" runs that group as a spatial pipeline in prefill (see fastsim.evaluation.pipelined)
PIPELINE = "pipeline"

FLASH_KV_BLOCK = 64  # keys per online-softmax block (one microkernel's n; assumption)
FLASH_WINDOW_BYTES = 16384  # ring of score/probability blocks per on-chip buffer (assumption)
BLOCK_L2_SHARE = 0.25  # a token block's largest intermediate may fill this share of all mem tiles


@dataclass(frozen=True)
class Group:
    """Ops that run fused: a pattern's match in one layer, or a whole dispatch (``CHAIN``).
    ``stages``: the ops in dependency levels (a pipeline runs each level on its own columns)."""

    kind: str
    stages: tuple[tuple[int, ...], ...]
    index: int  # the layer of a pattern match, the dispatch of a chain

    @property
    def ops(self) -> tuple[int, ...]:
        return tuple(i for s in self.stages for i in s)

    @property
    def label(self) -> str:
        """How results name the group (``fusion_group``)."""
        return f"{CHAIN}{self.index}" if self.kind == CHAIN else f"{self.kind}@{self.index}"


def find_groups(graph: OpGraph) -> tuple[Group, ...]:
    """Every match of the group patterns (module docstring), in op order; an op is in one at most."""
    consumers = graph.consumers
    ops = graph.ops
    found, taken = [], set()

    def keep(kind, stages, layer):
        members = {i for s in stages for i in s}
        if not members & taken:
            taken.update(members)
            found.append(Group(kind, tuple(tuple(s) for s in stages), layer))

    for i, op in enumerate(ops):
        if op.op_class == "attention" and op.kind == MATMUL and len(consumers[i]) == 1:
            s = consumers[i][0]
            if ops[s].op_class == "softmax" and len(consumers[s]) == 1:
                v = consumers[s][0]
                if ops[v].op_class == "attention" and ops[v].kind == MATMUL:
                    keep(FLASH_ATTENTION, ((i,), (s,), (v,)), op.layer)
        if op.op_class != "norm" or op.layer < 0 or not consumers[i]:
            continue
        gemms = consumers[i]
        if not all(ops[j].op_class == "gemm" for j in gemms):
            continue
        join = _gated_join(graph, gemms, consumers)
        if join is not None:
            keep(FFN, ((i,), gemms, (join,), consumers[join]), op.layer)
        else:
            keep(NORM_QKV, ((i,), gemms), op.layer)
    return tuple(sorted(found, key=lambda g: g.ops[0]))


def _gated_join(graph: OpGraph, gemms, consumers) -> int | None:
    """The element-wise op that reads exactly ``gemms`` (all of them) and feeds one gemm: a gated
    FFN's SiLU x mul; None if there is none."""
    if len(gemms) < 2 or any(len(consumers[g]) != 1 for g in gemms):
        return None
    join = consumers[gemms[0]][0]
    op = graph.ops[join]
    if (op.op_class == "elementwise" and set(graph.producers[join]) == set(gemms)
            and len(consumers[join]) == 1 and graph.ops[consumers[join][0]].op_class == "gemm"):
        return join
    return None


def kind_by_op(graph: OpGraph, groups: tuple[Group, ...]) -> tuple[str, ...]:
    """The pattern kind each op belongs to ("" if none): pins and overlays may name it."""
    out = [""] * len(graph.ops)
    for g in groups:
        for i in g.ops:
            out[i] = g.kind
    return tuple(out)


def fusion_kinds(fusion: str) -> set[str]:
    """The group kinds a fusion value tries: all for auto/groups, the named ones, none otherwise."""
    if fusion in ("auto", "groups"):
        return set(GROUP_KINDS)
    if fusion in ("none", "chain"):
        return set()
    return {k.split(":")[0] for k in fusion.split("+")}


def pipelined_kinds(fusion: str) -> set[str]:
    """The group kinds a fusion value asks to run as pipelines ("KIND:pipeline")."""
    if fusion in MODES:
        return set()
    return {k.split(":")[0] for k in fusion.split("+") if k.endswith(":" + PIPELINE)}


def valid_fusion(fusion) -> bool:
    def token(k):
        kind, _, how = k.partition(":")
        return kind in GROUP_KINDS and (not how or (how == PIPELINE and kind in PIPELINABLE))

    return isinstance(fusion, str) and (fusion in MODES or all(token(k) for k in fusion.split("+")))


@dataclass(frozen=True)
class OnChip:
    """How one op instance moves its activations: input and/or output on chip, the most bytes
    an on-chip buffer holds (0: whole), and the group it runs in (None: alone)."""

    x: bool = False
    y: bool = False
    window_bytes: int = 0
    group: Group | None = None

    @property
    def any(self) -> bool:
        return self.x or self.y


def chain_groups(graph: OpGraph, dispatch: list[int]) -> list[Group]:
    """One chain per dispatch, holding every op of it."""
    members: dict[int, list[int]] = {}
    for i, d in enumerate(dispatch):
        members.setdefault(d, []).append(i)
    return [Group(CHAIN, (tuple(ops),), d) for d, ops in sorted(members.items())]


def on_chip_flags(graph: OpGraph, group_of: list[Group | None], flash: set[int], traits: dict) -> list[OnChip]:
    """Per op: whether its activation input comes from, and its output stays in, its group
    (only activations can stay on chip; a kind whose designs read and write DDR, as a conv's do,
    keeps its edges there: ``KindTraits.ddr_edges`` in ``traits``, ``mappers.KIND_TRAITS``).
    ``flash``: ops that run flash-style when fused."""
    consumers = graph.consumers
    ddr = [traits[op.kind].ddr_edges for op in graph.ops]
    flags = []
    for i, op in enumerate(graph.ops):
        g = group_of[i]
        ps, cs = graph.producers[i], consumers[i]
        x = g is not None and bool(ps) and not ddr[i] and all(group_of[j] is g and not ddr[j] for j in ps)
        y = (g is not None and op.y.kind == "activations" and bool(cs) and not ddr[i]
             and all(group_of[j] is g and not ddr[j] for j in cs))
        window = FLASH_WINDOW_BYTES if runs_flash(g, i, flash) else 0
        flags.append(OnChip(x, y, window, g))
    return flags


def runs_flash(group: Group | None, i: int, flash: set[int]) -> bool:
    """Whether op i runs flash-style (scores in a ring of KV blocks, online softmax): an op of a
    flash-attention match fused as such or inside a chain."""
    return group is not None and i in flash and group.kind in (FLASH_ATTENTION, CHAIN)


def intermediate_bytes_per_token(graph: OpGraph, group: Group) -> float:
    """The widest hand-off of a group per token: the outputs of one stage that the next reads."""
    return max((sum(graph.ops[i].n * graph.ops[i].y.elem_bytes for i in stage) for stage in group.stages[:-1]),
               default=0.0)


def block_tokens(tokens: int, width_bytes: float, l2_bytes: int) -> int:
    """All ``tokens`` if their widest intermediate (``width_bytes`` per token) fits in
    ``BLOCK_L2_SHARE`` of the array's mem tiles, else the largest power-of-two block that does; 0 if
    not even one token fits."""
    budget = BLOCK_L2_SHARE * l2_bytes
    if tokens * width_bytes <= budget:
        return tokens
    if width_bytes > budget:
        return 0
    return 1 << int(budget // width_bytes).bit_length() - 1
