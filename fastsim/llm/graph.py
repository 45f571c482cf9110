"""The op graph of one forward pass: every op with its class, shape, MACs and operand bytes.

Conventions (also parameters): decode processes one new token per sequence against ``context``
cached tokens; prefill processes ``prompt`` tokens with causal attention, whose score and
attention-times-V MACs are halved (``causal_halving``); the LM head runs on the last token only in
prefill (``lm_head_last_only``). Attention ops stream the KV cache from DDR as their "weight"
operand, so KV read traffic grows with context.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import ModelConfig, Precision

OP_CLASSES = ("embedding", "norm", "gemm", "rope", "kv", "attention", "softmax", "elementwise", "cast")


@dataclass(frozen=True)
class VectorCosts:
    """Core cycles per element of the vector ops (assumptions: AIE-ML vector units process 16-32
    bf16 lanes per cycle; norm and softmax need extra passes and reductions)."""

    norm: float = 1 / 8
    elementwise: float = 1 / 32
    rope: float = 1 / 8
    softmax: float = 1 / 4
    silu_mul: float = 1 / 8
    kv: float = 1 / 32  # KV append: a copy (quantize when the KV dtype is narrower)
    dequant_int4: float = 1 / 32  # per weight element, int4 -> bf16 (with scale)
    dequant_int8: float = 1 / 64


@dataclass(frozen=True)
class Op:
    """One op. Matmul ops compute X[m x k] @ W[k x n]; vector ops process m x n elements."""

    name: str
    op_class: str
    layer: int  # -1: before the layers (embedding) or after them (final norm, LM head)
    kind: str  # "matmul" or "vector"
    m: int
    k: int
    n: int
    x_bytes: float
    w_bytes: float
    y_bytes: float
    w_kind: str = "weights"  # what the W operand is: "weights", "kv" or "none"
    y_kind: str = "activations"
    x_kind: str = "activations"  # what the X operand is (embedding: weight rows)
    x_inputs: int = 1
    vector_cycles_per_elem: float = 0.0
    cast_cycles_per_weight: float = 0.0
    macs_scale: float = 1.0
    repeat: int = 1  # identical instances run one after another (e.g. per attention head)

    @property
    def macs(self) -> int:
        return int(self.m * self.k * self.n * self.macs_scale) * self.repeat if self.kind == "matmul" else 0

    @property
    def shape_key(self) -> tuple:
        """Ops with equal keys have identical designs (simulated once)."""
        return (self.op_class, self.kind, self.m, self.k, self.n, self.x_bytes, self.w_bytes, self.y_bytes,
                self.w_kind, self.x_kind, self.y_kind, self.x_inputs, self.vector_cycles_per_elem, self.cast_cycles_per_weight,
                self.macs_scale)


def build_graph(model: ModelConfig, precision: Precision, regime: str, *, batch: int = 1,
                context: int = 4096, prompt: int = 2048, costs: VectorCosts = VectorCosts(),
                causal_halving: bool = True, lm_head_last_only: bool = True,
                prefill_context: int = 0) -> list[Op]:
    """Every op of one forward pass (decode: one token per sequence; prefill: the whole prompt,
    attending to ``prefill_context`` previously cached tokens plus itself, as in chunked prefill)."""
    model.validate()
    precision.validate()
    h, hd, nh, nkv, f = model.hidden_size, model.head_dim, model.num_heads, model.num_kv_heads, model.ffn_size
    a, w, kvb = precision.activation_bytes, precision.weight_bytes, precision.kv_bytes
    cast = {"int4": costs.dequant_int4, "int8": costs.dequant_int8}.get(precision.weights, 0.0)
    if precision.compute_dtype == "int8":
        cast = 0.0
    decode = regime == "decode"
    if regime not in ("decode", "prefill"):
        raise ValueError(f"regime = {regime!r}: allowed decode or prefill")
    t = 1 if decode else prompt
    tokens = batch * t

    def gemm(name, k, n, layer, m=tokens):
        return Op(name, "gemm", layer, "matmul", m, k, n, a, w, a, cast_cycles_per_weight=cast)

    def vec(name, cls, n, layer, cost, m=tokens, inputs=1, y_kind="activations", y_bytes=a, scale=1.0):
        return Op(name, cls, layer, "vector", m, 1, n, a, 0.0, y_bytes, "none", y_kind, "activations",
                  inputs, cost * scale)

    ops = [Op("embedding", "embedding", -1, "vector", tokens, 1, h, w, 0.0, a, "none", "activations",
              "weights", 1, 0.0)]
    scale = 0.5 if (causal_halving and not decode) else 1.0
    for layer in range(model.num_layers):
        ops += [
            vec("attn_norm", "norm", h, layer, costs.norm),
            gemm("q_proj", h, nh * hd, layer),
            gemm("k_proj", h, nkv * hd, layer),
            gemm("v_proj", h, nkv * hd, layer),
            vec("rope", "rope", (nh + nkv) * hd, layer, costs.rope),
            vec("kv_append", "kv", 2 * nkv * hd, layer, costs.kv, y_kind="kv", y_bytes=kvb),
        ]
        if decode:
            ctx = context + 1
            ops += [
                Op("attn_scores", "attention", layer, "matmul", batch * model.group, hd, nkv * ctx, a, kvb, a, "kv"),
                vec("softmax", "softmax", ctx, layer, costs.softmax, m=batch * nh),
                Op("attn_v", "attention", layer, "matmul", batch * model.group, ctx, nkv * hd, a, kvb, a, "kv"),
            ]
        else:
            span = prefill_context + t  # keys each new token may attend to
            # causal: full attention to cached tokens, half of the new chunk (on average)
            frac = (prefill_context + t * scale) / span
            # one KV head at a time with its group of query heads stacked: K and V are read once
            # per KV head, not once per query head (grouped-query attention)
            g = model.group
            ops += [
                Op("attn_scores", "attention", layer, "matmul", g * t, hd, span, a, kvb, a, "kv",
                   macs_scale=frac, repeat=batch * nkv),
                vec("softmax", "softmax", span, layer, costs.softmax, m=batch * nh * t, scale=frac),
                Op("attn_v", "attention", layer, "matmul", g * t, span, hd, a, kvb, a, "kv",
                   macs_scale=frac, repeat=batch * nkv),
            ]
        ops += [
            gemm("o_proj", nh * hd, h, layer),
            vec("attn_residual", "elementwise", h, layer, costs.elementwise, inputs=2),
            vec("ffn_norm", "norm", h, layer, costs.norm),
            gemm("ffn_gate", h, f, layer),
            gemm("ffn_up", h, f, layer),
            vec("silu_mul", "elementwise", f, layer, costs.silu_mul, inputs=2),
            gemm("ffn_down", f, h, layer),
            vec("ffn_residual", "elementwise", h, layer, costs.elementwise, inputs=2),
        ]
    head_tokens = batch if (lm_head_last_only or decode) else tokens
    ops += [vec("final_norm", "norm", h, -1, costs.norm, m=head_tokens),
            gemm("lm_head", h, model.vocab_size, -1, m=head_tokens)]
    return ops


def kv_bytes_per_token(model: ModelConfig, precision: Precision) -> float:
    """K and V of one token over all layers: 2 * layers * KV heads * head_dim * bytes."""
    return 2 * model.num_layers * model.num_kv_heads * model.head_dim * precision.kv_bytes
