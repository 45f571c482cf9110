"""The transformer front end: the op graph of one forward pass of a decoder-only model with
grouped-query attention (every op with its class, shapes, operands and producer edges).

Conventions (also parameters): decode processes one new token per sequence against ``context``
cached tokens; prefill processes ``prompt`` tokens with causal attention, whose score and
attention-times-V MACs are halved (``causal_halving``); the LM head runs on the last token only in
prefill (``lm_head_last_only``). Attention streams each sequence's own KV cache from DDR as its W
operand, one instance per (sequence, KV head) in prefill and per sequence in decode, so KV read
traffic grows with context and with batch; weights are read once per pass for the whole batch.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..graph import MATMUL, VECTOR, Op, OpGraph, Operand
from ..graph.ops import NO_OPERAND
from .model import ModelConfig, Precision

REGIMES = ("decode", "prefill")


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
class Pass:
    """One forward pass: regime and its shapes, and the modelling conventions of the module
    docstring."""

    regime: str = "decode"
    batch: int = 1
    context: int = 4096
    prompt: int = 2048
    prefill_context: int = 0
    costs: VectorCosts = VectorCosts()
    causal_halving: bool = True
    lm_head_last_only: bool = True

    @property
    def tokens(self) -> int:
        """New tokens per sequence."""
        return 1 if self.regime == "decode" else self.prompt


class _Builder:
    """Appends ops with their producers named by (op name, layer); names are local to the
    builder, the graph holds indices."""

    def __init__(self):
        self.ops, self.producers, self.index = [], [], {}

    def add(self, op: Op, *sources) -> None:
        self.producers.append(tuple(self.index[s] for s in sources))
        self.index[(op.name, op.layer)] = len(self.ops)
        self.ops.append(op)


def build_graph(model: ModelConfig, precision: Precision, run: Pass = Pass()) -> OpGraph:
    """Every op of one forward pass (decode: one token per sequence; prefill: the whole prompt,
    attending to ``prefill_context`` previously cached tokens plus itself, as in chunked prefill)."""
    model.validate()
    precision.validate()
    if run.regime not in REGIMES:
        raise ValueError(f"regime = {run.regime!r}: allowed decode or prefill")
    b = _Builder()
    h, f, a = model.hidden_size, model.ffn_size, precision.activation_bytes
    rows = run.batch * run.tokens
    act = Operand("activations", a)
    b.add(Op("embedding", "embedding", -1, VECTOR, rows, 1, h, Operand("weights", precision.weight_bytes), y=act))
    last = ("embedding", -1)
    for layer in range(model.num_layers):
        _attention_block(b, model, precision, run, layer, last)
        _ffn_block(b, model, precision, run, layer)
        last = ("ffn_residual", layer)
    head_rows = run.batch if (run.lm_head_last_only or run.regime == "decode") else rows
    b.add(_vector("final_norm", "norm", head_rows, h, -1, run.costs.norm, a), last)
    b.add(_gemm("lm_head", head_rows, h, model.vocab_size, -1, precision, run), ("final_norm", -1))
    # live at once between ops of a chained dispatch: the residual stream, a normed copy and the
    # FFN's two halves (attention's scores stream through a ring of KV blocks)
    live = (2 * h + 2 * f) * a
    return OpGraph(tuple(b.ops), tuple(b.producers), run.batch, run.tokens, live)


def _cast_cycles(precision: Precision, costs: VectorCosts) -> float:
    """Dequantization cycles per weight element on the core (none when computing in int8)."""
    if precision.compute_dtype == "int8":
        return 0.0
    return {"int4": costs.dequant_int4, "int8": costs.dequant_int8}.get(precision.weights, 0.0)


def _gemm(name, m, k, n, layer, precision: Precision, run: Pass) -> Op:
    a = Operand("activations", precision.activation_bytes)
    return Op(name, "gemm", layer, MATMUL, m, k, n, a, Operand("weights", precision.weight_bytes), a,
              cast_cycles_per_weight=_cast_cycles(precision, run.costs))


def _vector(name, op_class, m, n, layer, cost, a, *, inputs=1, y=None, rescale=0.0) -> Op:
    return Op(name, op_class, layer, VECTOR, m, 1, n, Operand("activations", a), NO_OPERAND,
              y or Operand("activations", a), inputs, cost, online_rescale_cycles=rescale)


def _rescale(model: ModelConfig, run: Pass) -> float:
    """Softmax run online (flash attention): the running output, head_dim per row, is rescaled
    once per block of keys."""
    return run.costs.elementwise * model.head_dim


def _attention_block(b: _Builder, model: ModelConfig, precision: Precision, run: Pass, layer: int, last) -> None:
    h, hd, nh, nkv = model.hidden_size, model.head_dim, model.num_heads, model.num_kv_heads
    a, c = precision.activation_bytes, run.costs
    rows = run.batch * run.tokens
    b.add(_vector("attn_norm", "norm", rows, h, layer, c.norm, a), last)
    for name, n in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
        b.add(_gemm(name, rows, h, n, layer, precision, run), ("attn_norm", layer))
    b.add(_vector("rope", "rope", rows, (nh + nkv) * hd, layer, c.rope, a), ("q_proj", layer), ("k_proj", layer))
    b.add(_vector("kv_append", "kv", rows, 2 * nkv * hd, layer, c.kv, a, y=Operand("kv", precision.kv_bytes)),
          ("rope", layer), ("v_proj", layer))
    scores, softmax, attn_v = (_decode_attention if run.regime == "decode" else _prefill_attention)(
        model, precision, run, layer)
    b.add(scores, ("rope", layer))
    b.add(softmax, ("attn_scores", layer))
    b.add(attn_v, ("softmax", layer))
    b.add(_gemm("o_proj", rows, nh * hd, h, layer, precision, run), ("attn_v", layer))
    b.add(_vector("attn_residual", "elementwise", rows, h, layer, c.elementwise, a, inputs=2),
          ("o_proj", layer), last)


def _decode_attention(model: ModelConfig, precision: Precision, run: Pass, layer: int) -> tuple[Op, Op, Op]:
    """One new token per sequence: each sequence's query heads (all KV heads side by side) against
    its own cache, one instance per sequence."""
    hd, nh, nkv, g = model.head_dim, model.num_heads, model.num_kv_heads, model.group
    act, kv = Operand("activations", precision.activation_bytes), Operand("kv", precision.kv_bytes)
    ctx = run.context + 1
    return (Op("attn_scores", "attention", layer, MATMUL, g, hd, nkv * ctx, act, kv, act, repeat=run.batch),
            _vector("softmax", "softmax", run.batch * nh, ctx, layer, run.costs.softmax, act.elem_bytes,
                    rescale=_rescale(model, run)),
            Op("attn_v", "attention", layer, MATMUL, g, ctx, nkv * hd, act, kv, act, repeat=run.batch))


def _prefill_attention(model: ModelConfig, precision: Precision, run: Pass, layer: int) -> tuple[Op, Op, Op]:
    """The prompt against the cached tokens and itself (causal), one KV head at a time with its
    group of query heads stacked: K and V are read once per KV head, not once per query head."""
    hd, nh, nkv, g, t = model.head_dim, model.num_heads, model.num_kv_heads, model.group, run.tokens
    act, kv = Operand("activations", precision.activation_bytes), Operand("kv", precision.kv_bytes)
    span = run.prefill_context + t  # keys each new token may attend to
    # causal: full attention to cached tokens, half of the new chunk (on average)
    scale = 0.5 if run.causal_halving else 1.0
    frac = (run.prefill_context + t * scale) / span
    each = run.batch * nkv
    return (Op("attn_scores", "attention", layer, MATMUL, g * t, hd, span, act, kv, act, macs_scale=frac, repeat=each),
            _vector("softmax", "softmax", run.batch * nh * t, span, layer, run.costs.softmax * frac, act.elem_bytes,
                    rescale=_rescale(model, run)),
            Op("attn_v", "attention", layer, MATMUL, g * t, span, hd, act, kv, act, macs_scale=frac, repeat=each))


def _ffn_block(b: _Builder, model: ModelConfig, precision: Precision, run: Pass, layer: int) -> None:
    h, f, a, c = model.hidden_size, model.ffn_size, precision.activation_bytes, run.costs
    rows = run.batch * run.tokens
    b.add(_vector("ffn_norm", "norm", rows, h, layer, c.norm, a), ("attn_residual", layer))
    b.add(_gemm("ffn_gate", rows, h, f, layer, precision, run), ("ffn_norm", layer))
    b.add(_gemm("ffn_up", rows, h, f, layer, precision, run), ("ffn_norm", layer))
    b.add(_vector("silu_mul", "elementwise", rows, f, layer, c.silu_mul, a, inputs=2),
          ("ffn_gate", layer), ("ffn_up", layer))
    b.add(_gemm("ffn_down", rows, f, h, layer, precision, run), ("silu_mul", layer))
    b.add(_vector("ffn_residual", "elementwise", rows, h, layer, c.elementwise, a, inputs=2),
          ("ffn_down", layer), ("attn_residual", layer))


def kv_bytes_per_token(model: ModelConfig, precision: Precision) -> float:
    """K and V of one token over all layers: 2 * layers * KV heads * head_dim * bytes."""
    return 2 * model.num_layers * model.num_kv_heads * model.head_dim * precision.kv_bytes
