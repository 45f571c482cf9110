"""The blocks of one transformer layer as ops: attention (grouped-query, sliding-window, fused or
separate projections, q/k norms, post-norms, soft-capping), the FFN (gated or not, fused gate/up)
and the mixture-of-experts FFN (router, top-k, the experts the routing selects, shared expert)."""
from __future__ import annotations

from ..graph import MATMUL, Op, Operand
from ..kernel_model.attention import calibrated_cycles_per_score, online_softmax_cycles_per_score
from ..mapping.fusion import FLASH_KV_BLOCK
from .routing import expert_loads
from .transformer import Builder

# Q rows of one flash-attention tile in prefill: tile_q = lkp = 64 (mlir-air kernel_registry
# FlashAttention_bf16.md, "tile_q is pinned to lkp (= 64)")
FLASH_Q_ROWS = 64


def attention_block(b: Builder, layer: int, last) -> tuple:
    """Pre-norm attention and its residual add; returns the residual's key."""
    m, c, rows = b.model, b.costs, b.rows
    hd, nh, nkv = m.head_dim, m.num_heads, m.num_kv_heads
    b.norm("attn_norm", layer, last)
    q, k, v = _projections(b, layer, ("attn_norm", layer))
    if m.qk_norm:  # one RMSNorm per head vector of head_dim
        b.add(b.vector("qk_norm", "norm", rows, (nh + nkv) * hd, layer, c.norm_cost("rms", hd)), q, k)
        q = k = ("qk_norm", layer)
    b.add(b.vector("rope", "rope", rows, (nh + nkv) * hd, layer, c.tile_cost("rope", rows, (nh + nkv) * hd)),
          *dict.fromkeys((q, k)))
    kv_cost = c.tile_cost("kv", rows, 2 * nkv * hd, out_bytes=b.precision.kv_bytes)
    b.add(b.vector("kv_append", "kv", rows, 2 * nkv * hd, layer, kv_cost, y=Operand("kv", b.precision.kv_bytes)),
          *dict.fromkeys((("rope", layer), v)))
    scores, softmax, attn_v = (decode_attention if b.run.regime == "decode" else prefill_attention)(b, layer)
    b.add(scores, ("rope", layer))
    b.add(softmax, ("attn_scores", layer))
    b.add(attn_v, ("softmax", layer))
    b.add(b.gemm("o_proj", rows, nh * hd, m.hidden_size, layer, "attention"), ("attn_v", layer))
    out = _post_norm(b, "post_attn_norm", layer, ("o_proj", layer))
    b.add(_residual(b, "attn_residual", layer), out, last)
    return ("attn_residual", layer)


def _residual(b: Builder, name: str, layer: int, inputs: int = 2):
    """An element-wise add of ``inputs`` tensors of rows x hidden."""
    n = b.model.hidden_size
    return b.vector(name, "elementwise", b.rows, n, layer, b.costs.tile_cost("elementwise", b.rows, n, inputs),
                    inputs=inputs)


def _projections(b: Builder, layer: int, source) -> tuple:
    """q, k and v projections (one fused qkv matmul for Phi-3); returns the keys of q, k, v."""
    m = b.model
    hd, nh, nkv = m.head_dim, m.num_heads, m.num_kv_heads
    if m.fused_qkv:
        b.add(b.gemm("qkv_proj", b.rows, m.hidden_size, (nh + 2 * nkv) * hd, layer, "attention"), source)
        return (("qkv_proj", layer),) * 3
    for name, n in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
        b.add(b.gemm(name, b.rows, m.hidden_size, n, layer, "attention"), source)
    return ("q_proj", layer), ("k_proj", layer), ("v_proj", layer)


def _post_norm(b: Builder, name: str, layer: int, source) -> tuple:
    if not b.model.post_norms:
        return source
    b.norm(name, layer, source)
    return (name, layer)


def _softmax(b: Builder, layer: int, rows: int, span: int, frac: float, q_rows: int, causal: bool) -> Op:
    """The softmax over ``rows`` rows of ``span`` scores (``frac`` of them computed), plus tanh
    soft-capping where the model has it. Its cost is a plain softmax over each row; run as flash
    attention (the evaluator adds ``online_rescale_cycles / FLASH_KV_BLOCK`` per element) it is
    the online softmax instead, priced per KV tile of FLASH_KV_BLOCK keys against a Q tile of
    ``q_rows`` rows (``kernel_model.attention``), plus what mlir-air's measured tile step costs
    beyond the model (``calibrated_cycles_per_score``; full 64-row tiles only). A user's own softmax constant keeps the old
    form: that constant per score, plus one element-wise multiply per head_dim per KV block."""
    c, hd = b.costs, b.model.head_dim
    cap = c.tile_cost("softcap", rows, span) if b.model.attn_softcap else 0.0
    if not c.modelled("softmax"):
        return b.vector("softmax", "softmax", rows, span, layer, (c.softmax + cap) * frac,
                        rescale=c.elementwise * hd)
    seen = max(1, round(span * frac))
    plain = c.softmax_cost(seen)
    online = (online_softmax_cycles_per_score(c.core, q_rows, FLASH_KV_BLOCK, hd, seen, causal)
              + calibrated_cycles_per_score(c.core, q_rows, hd))  # the measured step's remainder
    # the flash form's difference, per element per KV block: negative for rows shorter than about
    # 2k keys, where a plain softmax pays its per-row passes and tail over few keys
    extra = (online - plain) * frac * FLASH_KV_BLOCK
    return b.vector("softmax", "softmax", rows, span, layer, (plain + cap) * frac, rescale=extra)


def decode_attention(b: Builder, layer: int) -> tuple[Op, Op, Op]:
    """One new token per sequence: each sequence's query heads (all KV heads side by side) against
    its own cache (a sliding-window layer's ring of at most its window), one instance per sequence."""
    m, run, p = b.model, b.run, b.precision
    hd, nh, nkv, g = m.head_dim, m.num_heads, m.num_kv_heads, m.group
    act, kv = Operand("activations", b.a), Operand("kv", p.kv_bytes)
    ctx = run.context + 1
    if m.window(layer):
        ctx = min(ctx, m.window(layer))
    # flash decoding: a KV head's group of query heads is one Q tile (padded to 8-row blocks)
    return (Op("attn_scores", "attention", layer, MATMUL, g, hd, nkv * ctx, act, kv, act, repeat=run.batch),
            _softmax(b, layer, run.batch * nh, ctx, 1.0, g, False),
            Op("attn_v", "attention", layer, MATMUL, g, ctx, nkv * hd, act, kv, act, repeat=run.batch))


def prefill_attention(b: Builder, layer: int) -> tuple[Op, Op, Op]:
    """The prompt against the cached tokens and itself (causal; encode: every token against every
    token, K and V are this pass's activations), one KV head at a time with its group of query
    heads stacked: K and V are read once per KV head, not once per query head."""
    m, run = b.model, b.run
    hd, nh, nkv, g, t = m.head_dim, m.num_heads, m.num_kv_heads, m.group, run.tokens
    act = Operand("activations", b.a)
    kv = act if m.encoder else Operand("kv", b.precision.kv_bytes)
    span, frac = _keys_seen(run, m.window(layer), m.encoder)
    each = run.batch * nkv
    return (Op("attn_scores", "attention", layer, MATMUL, g * t, hd, span, act, kv, act, macs_scale=frac, repeat=each),
            _softmax(b, layer, run.batch * nh * t, span, frac, min(t, FLASH_Q_ROWS), not m.encoder),
            Op("attn_v", "attention", layer, MATMUL, g * t, span, hd, act, kv, act, macs_scale=frac, repeat=each))


def _keys_seen(run, window: int, bidirectional: bool) -> tuple[int, float]:
    """(keys the chunk's queries may attend to, the share of the query x key rectangle they do).
    A sliding window keeps at most ``window - 1`` cached keys and lets each query see ``window``."""
    t, cached = run.tokens, run.prefill_context
    if bidirectional:
        return t, 1.0
    if not window or window >= cached + t:
        span = cached + t
        # causal: full attention to cached tokens, half of the new chunk (on average)
        return span, (cached + t * (0.5 if run.causal_halving else 1.0)) / span
    cached = min(cached, window - 1)
    span = cached + t
    if not run.causal_halving:  # no masked block skipped: the whole rectangle, as for global layers
        return span, 1.0
    # query j sees min(cached + j + 1, window) keys
    ramp = max(0, min(t, window - cached))  # queries before the window is full
    seen = ramp * (cached + 1) + ramp * (ramp - 1) // 2 + (t - ramp) * window
    return span, seen / (t * span)


def ffn_block(b: Builder, layer: int, residual) -> tuple:
    """Pre-norm FFN (dense or mixture of experts) and its residual add; returns the residual's key."""
    m = b.model
    b.norm("ffn_norm", layer, residual)
    out = _experts(b, layer, ("ffn_norm", layer)) if m.is_moe(layer) else _dense_ffn(b, layer, ("ffn_norm", layer))
    out = _post_norm(b, "post_ffn_norm", layer, out)
    b.add(_residual(b, "ffn_residual", layer), out, residual)
    return ("ffn_residual", layer)


def _dense_ffn(b: Builder, layer: int, source, prefix: str = "ffn", size: int = 0) -> tuple:
    """Gate and up (fused for Phi-3; up only when not gated), the activation, down."""
    m, rows = b.model, b.rows
    h, f = m.hidden_size, size or m.ffn_size
    if not m.gated_ffn:
        b.add(b.gemm(f"{prefix}_up", rows, h, f, layer, "ffn"), source)
        b.activation(f"{prefix}_act", rows, f, layer, False, (f"{prefix}_up", layer))
    elif m.fused_gate_up:
        b.add(b.gemm(f"{prefix}_gate_up", rows, h, 2 * f, layer, "ffn"), source)
        b.activation(f"{prefix}_act", rows, f, layer, True, (f"{prefix}_gate_up", layer))
    else:
        b.add(b.gemm(f"{prefix}_gate", rows, h, f, layer, "ffn"), source)
        b.add(b.gemm(f"{prefix}_up", rows, h, f, layer, "ffn"), source)
        b.activation("silu_mul" if prefix == "ffn" else f"{prefix}_act", rows, f, layer, True,
                     (f"{prefix}_gate", layer), (f"{prefix}_up", layer))
    act = b.ops[-1].name
    b.add(b.gemm(f"{prefix}_down", rows, f, h, layer, "ffn"), (act, layer))
    return (f"{prefix}_down", layer)


def _experts(b: Builder, layer: int, source) -> tuple:
    """Router (gate matmul, with the shared expert's gate as one more column), top-k, each group
    of experts that receive the same number of tokens as one op repeated per expert (each
    instance reads its own expert's weights: gathered, set up anew), the shared expert, and the
    weighted combine."""
    m, c, rows = b.model, b.costs, b.rows
    e, h = m.experts, m.hidden_size
    b.add(b.gemm("router", rows, h, e.count + e.shared_gate, layer, "router"), source)
    b.add(b.vector("top_k", "softmax", rows, e.count, layer, c.softmax_cost(e.count)), ("router", layer))
    downs = []
    loads = expert_loads(e, rows, b.run.routing, layer)
    for tokens, experts in loads:
        tag = "" if len(loads) == 1 else f"@{tokens}"
        gate, up, act, down = (f"expert_{s}{tag}" for s in ("gate", "up", "act", "down"))
        b.add(b.gemm(gate, tokens, h, e.ffn_size, layer, "ffn", repeat=experts, gathered=True), source)
        b.add(b.gemm(up, tokens, h, e.ffn_size, layer, "ffn", repeat=experts, gathered=True), source)
        b.activation(act, tokens * experts, e.ffn_size, layer, True, (gate, layer), (up, layer))
        b.add(b.gemm(down, tokens, e.ffn_size, h, layer, "ffn", repeat=experts, gathered=True), (act, layer))
        downs.append((down, layer))
    if e.shared_ffn_size:
        downs.append(_dense_ffn(b, layer, source, "shared", e.shared_ffn_size))
    b.add(_residual(b, "moe_combine", layer, e.per_token + bool(e.shared_ffn_size)), *downs, ("top_k", layer))
    return ("moe_combine", layer)


def encoder_layer(b: Builder, layer: int, last) -> tuple:
    """A post-norm encoder layer (BERT): attention, add and norm, FFN, add and norm. K and V go to
    DDR as activations and attention reads them back (no cache outlives the pass)."""
    m, rows = b.model, b.rows
    q, k, v = _projections(b, layer, last)
    scores, softmax, attn_v = prefill_attention(b, layer)
    b.add(scores, q)
    b.add(softmax, ("attn_scores", layer))
    b.add(attn_v, ("softmax", layer))
    b.add(b.gemm("o_proj", rows, m.num_heads * m.head_dim, m.hidden_size, layer, "attention"), ("attn_v", layer))
    b.add(_residual(b, "attn_residual", layer), ("o_proj", layer), last)
    b.norm("attn_norm", layer, ("attn_residual", layer))
    out = _dense_ffn(b, layer, ("attn_norm", layer))
    b.add(_residual(b, "ffn_residual", layer), out, ("attn_norm", layer))
    b.norm("ffn_norm", layer, ("ffn_residual", layer))
    return ("ffn_norm", layer)
