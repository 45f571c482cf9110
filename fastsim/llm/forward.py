"""One forward pass as an op graph: the embedding, each layer's blocks (``blocks``) and the head,
appended by a ``transformer.Builder`` (the conventions are ``transformer``'s)."""
from __future__ import annotations

from ..cache import CACHE, Region
from ..graph import VECTOR, Op, OpGraph, Operand
from .blocks import attention_block, encoder_layer, ffn_block
from .model import ModelConfig, Precision
from .transformer import Builder, Pass, check_regime


REGION = "graph"
CACHE.add_region(Region(REGION, 64))


def build_graph(model: ModelConfig, precision: Precision, run: Pass = Pass()) -> OpGraph:
    """Every op of one forward pass (decode: one token per sequence; prefill: the whole prompt,
    attending to ``prefill_context`` previously cached tokens plus itself, as in chunked prefill;
    encode: the whole input, every token attending to every other).

    Kept by its inputs (cache region ``graph``): a sweep's points that differ in what the graph does
    not hold (an ablation, cuts, fusion, DDR bandwidth) share one graph, so their ops are the same
    objects and every op key they compare is found by identity, not field by field."""
    key = (model, precision, run)
    graph = CACHE.get(REGION, key)
    if graph is None:
        graph = _build(model, precision, run)
        CACHE.put(REGION, key, graph)
    return graph


def _build(model: ModelConfig, precision: Precision, run: Pass) -> OpGraph:
    model.validate()
    precision.validate()
    check_regime(model, run.regime)
    b = Builder(model, precision, run)
    _embedding(b)
    last = b.ops[-1].name, -1
    for layer in range(model.num_layers):
        if model.encoder:
            last = encoder_layer(b, layer, last)
        else:
            last = ffn_block(b, layer, attention_block(b, layer, last))
    _head(b, last)
    h = model.hidden_size
    # live at once between ops of a chained dispatch: the residual stream, a normed copy and the
    # widest FFN's two halves (attention's scores stream through a ring of KV blocks)
    live = (2 * h + 2 * _widest_ffn(model)) * b.a
    return OpGraph(tuple(b.ops), tuple(b.producers), run.batch, run.tokens, live)


def _widest_ffn(model: ModelConfig) -> int:
    """The widest FFN intermediate a token holds: the dense FFN's if any layer is dense, else its
    experts' together (and the shared expert's)."""
    dense = [model.ffn_size] if any(not model.is_moe(i) for i in range(model.num_layers)) else []
    e = model.experts
    routed = [e.per_token * e.ffn_size + e.shared_ffn_size] if e is not None else []
    return max(dense + routed)


def _embedding(b: Builder) -> None:
    """Token rows gathered from the table (plus position and token-type rows for BERT); Gemma
    scales them by sqrt(hidden)."""
    m, c = b.model, b.costs
    tables = 3 if m.positions else 1
    cost = c.tile_cost("elementwise", b.rows, m.hidden_size, tables) if (m.embed_scale or tables > 1) else 0.0
    b.add(Op("embedding", "embedding", -1, VECTOR, b.rows, 1, m.hidden_size,
             Operand("weights", b.precision.bytes_of("embedding")), y=Operand("activations", b.a),
             x_inputs=tables, vector_cycles_per_elem=cost, weight_kind="embedding"))
    if m.encoder:
        b.norm("embed_norm", -1, ("embedding", -1))


def _head(b: Builder, last) -> None:
    """Decoders: final norm, LM head (tied: the embedding table, at its precision) and logit
    soft-capping; encoders: the pooler on each sequence's first token."""
    m, run = b.model, b.run
    if m.encoder:
        b.add(b.gemm("pooler", run.batch, m.hidden_size, m.hidden_size, -1, "ffn"), last)
        tanh = b.costs.tile_cost("softcap", run.batch, m.hidden_size)
        b.add(b.vector("pooler_tanh", "elementwise", run.batch, m.hidden_size, -1, tanh), ("pooler", -1))
        return
    head_rows = run.batch if (run.lm_head_last_only or run.regime == "decode") else b.rows
    b.norm("final_norm", -1, last, head_rows)
    stored = "embedding" if m.tie_word_embeddings else "lm_head"
    b.add(b.gemm("lm_head", head_rows, m.hidden_size, m.vocab_size, -1, "lm_head", stored_as=stored), ("final_norm", -1))
    if m.final_softcap:
        cap = b.costs.tile_cost("softcap", head_rows, m.vocab_size)
        b.add(b.vector("logit_softcap", "elementwise", head_rows, m.vocab_size, -1, cap), ("lm_head", -1))
