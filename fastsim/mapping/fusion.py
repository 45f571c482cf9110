"""Fusion: which ops of a model share one design and hand their activations over on chip.

A fusion group is a run of consecutive ops whose intermediate activations stay in the mem tiles
(written there by the producer's join, read from there by the consumer's mem-tile channels)
instead of going out to DDR and back. An op reads its activation input on chip when every
producer of that input is in its group, and keeps its output on chip when every consumer is.
The ops of a group run back to back on the same columns (each stage is its own engine design with
on-chip operands, see ``Matmul.a_on_chip``); DDR traffic drops by exactly the intermediates.

Groups of a transformer layer (``GROUPS``): ``norm_qkv`` (attn_norm -> q/k/v), ``flash_attention``
(scores -> softmax -> x V with an online softmax: the scores live in a ring of KV blocks, never a
whole row; the rescale of the running output costs core cycles) and ``ffn`` (ffn_norm -> gate/up ->
SiLU x mul -> down). ``chain`` fuses a whole dispatch: every activation stays on chip between ops
and layers (only weights, the KV cache and the dispatch's inputs and outputs touch DDR), possible
when every activation tensor fits (decode). Prefill groups other than flash attention run in token
blocks small enough for their intermediates to fit, which re-streams their weights once per block:
the search weighs that against the DDR round trip it saves.
"""
from __future__ import annotations

from dataclasses import dataclass

GROUPS = {
    "norm_qkv": ("attn_norm", "q_proj", "k_proj", "v_proj"),
    "flash_attention": ("attn_scores", "softmax", "attn_v"),
    "ffn": ("ffn_norm", "ffn_gate", "ffn_up", "silu_mul", "ffn_down"),
}
MODES = ("auto", "none", "groups", "chain")  # auto: the search picks per group (and chain when it fits);
# a fusion value may also name group kinds joined by "+" (e.g. "ffn+flash_attention"): exactly those;
# "KIND:pipeline" runs that group as a spatial pipeline in prefill (see fastsim.llm.pipelined)
PIPELINE = "pipeline"
# a pipelined group's stages in order (ops of one stage run side by side on their own columns)
PIPELINE_STAGES = {
    "norm_qkv": (("attn_norm",), ("q_proj", "k_proj", "v_proj")),
    "ffn": (("ffn_norm",), ("ffn_gate", "ffn_up"), ("silu_mul",), ("ffn_down",)),
}

# producers of each op's activation input: (op name, layer offset); "prev" = the previous layer's
# output (the first layer reads the embedding instead); attention reads K and V from DDR (the KV
# cache), which is never a fused edge
PRODUCERS = {
    "embedding": (),
    "attn_norm": ("prev",),
    "q_proj": ("attn_norm",), "k_proj": ("attn_norm",), "v_proj": ("attn_norm",),
    "rope": ("q_proj", "k_proj"),
    "kv_append": ("rope", "v_proj"),
    "attn_scores": ("rope",),
    "softmax": ("attn_scores",),
    "attn_v": ("softmax",),
    "o_proj": ("attn_v",),
    "attn_residual": ("o_proj", "prev"),
    "ffn_norm": ("attn_residual",),
    "ffn_gate": ("ffn_norm",), "ffn_up": ("ffn_norm",),
    "silu_mul": ("ffn_gate", "ffn_up"),
    "ffn_down": ("silu_mul",),
    "ffn_residual": ("ffn_down", "attn_residual"),
    "final_norm": ("prev",),
    "lm_head": ("final_norm",),
}

FLASH_KV_BLOCK = 64  # keys per online-softmax block (one microkernel's n; assumption)
FLASH_WINDOW_BYTES = 16384  # ring of score/probability blocks per on-chip buffer (assumption)
BLOCK_L2_SHARE = 0.25  # a token block's largest intermediate may fill this share of all mem tiles


def fusion_kinds(fusion: str) -> set[str]:
    """The group kinds a fusion value tries: all for auto/groups, the named ones, none otherwise."""
    if fusion in ("auto", "groups"):
        return set(GROUPS)
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
        return kind in GROUPS and (not how or (how == PIPELINE and kind in PIPELINE_STAGES))

    return isinstance(fusion, str) and (fusion in MODES or all(token(k) for k in fusion.split("+")))


@dataclass(frozen=True)
class OnChip:
    """How one op instance moves its activations: input and/or output on chip, and the most bytes
    an on-chip buffer holds (0: whole)."""

    x: bool = False
    y: bool = False
    window_bytes: int = 0
    group: str = ""

    @property
    def any(self) -> bool:
        return self.x or self.y


def group_ids(names: list[str], layers: list[int], dispatch: list[int], fused: set[str], chain: bool) -> list[str]:
    """A group label per op ("" = alone): each fused group of a layer, or one chain per dispatch."""
    out = []
    for name, layer, disp in zip(names, layers, dispatch):
        if chain:
            out.append(f"chain{disp}")
            continue
        kind = next((g for g, members in GROUPS.items() if name in members and g in fused), "")
        out.append(f"{kind}@{layer}" if kind else "")
    return out


def on_chip_flags(names: list[str], layers: list[int], groups: list[str], kinds: list[str]) -> list[OnChip]:
    """Per op: whether its activation input comes from, and its output stays in, its group.
    ``kinds`` says what each op's output is ("activations" only can stay on chip)."""
    index = {}
    for i, (name, layer) in enumerate(zip(names, layers)):
        index[(name, layer)] = i
    n_layers = 1 + max((x for x in layers), default=-1)
    producers = []
    for i, (name, layer) in enumerate(zip(names, layers)):
        found = []
        for p in PRODUCERS.get(name, ()):
            if p == "prev":
                # previous layer's last op, or the embedding; the head reads the last layer
                prev = layer - 1 if layer >= 0 else n_layers - 1
                j = index.get(("ffn_residual", prev)) if prev >= 0 else index.get(("embedding", -1))
            else:
                j = index.get((p, layer))
            if j is not None:
                found.append(j)
        producers.append(found)
    consumers = [[] for _ in names]
    for i, ps in enumerate(producers):
        for j in ps:
            consumers[j].append(i)
    flags = []
    for i, name in enumerate(names):
        g = groups[i]
        x = bool(g) and bool(producers[i]) and all(groups[j] == g for j in producers[i])
        y = (bool(g) and kinds[i] == "activations" and bool(consumers[i])
             and all(groups[j] == g for j in consumers[i]))
        window = FLASH_WINDOW_BYTES if is_flash(g, name) else 0
        flags.append(OnChip(x, y, window, g))
    return flags


def is_flash(group: str, name: str) -> bool:
    """Whether an op runs flash-style (its scores in a ring of KV blocks, online softmax)."""
    return bool(group) and name in GROUPS["flash_attention"] and group.startswith(("flash_attention", "chain"))


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
