"""Model families: each preset's structure against its published size, the ops each family's
layers hold, KV bytes per layer (sliding windows cap them), mixture-of-experts bytes against the
closed form of the experts the routing selects, and every refused input refused by name."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from fastsim.errors import ConfigError
from fastsim.llm import MODELS, LlmStudy, Precision, from_hf_config, simulate_llm
from fastsim.llm.families import from_dict
from fastsim.llm.presets import SOURCES, preset_config
from fastsim.llm.routing import Routing, expert_loads
from fastsim.llm.forward import build_graph
from fastsim.llm.transformer import Pass, kv_cache_bytes

# total parameters as published (model cards and papers; total and, for MoE, active per token)
PUBLISHED = {
    "llama-3.2-1b": 1.23e9, "llama-3.2-3b": 3.21e9, "llama-3.1-8b": 8.03e9,
    "qwen2.5-0.5b": 0.49e9, "qwen2.5-7b": 7.61e9, "qwen3-0.6b": 0.6e9, "qwen3-8b": 8.2e9,
    "gemma-2-2b": 2.61e9, "gemma-3-1b": 999_885_952, "gemma-3-4b": 3_880_099_328,  # 4b: its text model
    "phi-3.5-mini": 3.8e9, "mistral-7b-v0.1": 7.24e9, "mixtral-8x7b": 46.7e9, "qwen1.5-moe-a2.7b": 14.3e9,
    "qwen3-30b-a3b": 30.5e9, "gpt-oss-20b": 20.9e9, "bert-base": 110e6,
}
ACTIVE = {"mixtral-8x7b": 12.9e9, "qwen1.5-moe-a2.7b": 2.7e9, "qwen3-30b-a3b": 3.3e9}
P = Precision()


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_presets__parameter_counts_match_published(name):
    assert MODELS[name].params == pytest.approx(PUBLISHED[name], rel=0.01)
    if name in ACTIVE:
        assert MODELS[name].active_params == pytest.approx(ACTIVE[name], rel=0.02)


def test_presets__gpt_oss_active_excludes_the_input_embedding():
    """OpenAI's 3.6 B active leaves the input embedding (a row gather) out."""
    m = MODELS["gpt-oss-20b"]
    assert m.active_params - m.weights_by_kind()["embedding"] == pytest.approx(3.6e9, rel=0.01)


def test_presets__every_preset_is_its_stored_config(tmp_path):
    assert set(SOURCES) == set(MODELS)
    for name in MODELS:
        (tmp_path / "config.json").write_text(json.dumps(preset_config(name)))
        m = from_hf_config(tmp_path / "config.json")
        assert replace(m, name=name) == MODELS[name]


def _count(graph, layer, name_part=""):
    return [op.name for op in graph.ops if op.layer == layer and name_part in op.name]


def test_graph__ops_per_layer_follow_the_family():
    names = {n: _count(build_graph(MODELS[n], P, Pass("decode", context=64)), 0) for n in
             ("llama-3.2-1b", "qwen3-0.6b", "gemma-3-1b", "phi-3.5-mini", "mixtral-8x7b", "qwen1.5-moe-a2.7b")}
    assert names["llama-3.2-1b"] == ["attn_norm", "q_proj", "k_proj", "v_proj", "rope", "kv_append", "attn_scores",
                                     "softmax", "attn_v", "o_proj", "attn_residual", "ffn_norm", "ffn_gate", "ffn_up",
                                     "silu_mul", "ffn_down", "ffn_residual"]
    assert "qk_norm" in names["qwen3-0.6b"] and len(names["qwen3-0.6b"]) == 18
    assert {"qk_norm", "post_attn_norm", "post_ffn_norm"} <= set(names["gemma-3-1b"])
    assert "qkv_proj" in names["phi-3.5-mini"] and "ffn_gate_up" in names["phi-3.5-mini"]
    assert "q_proj" not in names["phi-3.5-mini"]
    assert {"router", "top_k", "expert_gate", "expert_down", "moe_combine"} <= set(names["mixtral-8x7b"])
    assert {"shared_gate", "shared_down"} <= set(names["qwen1.5-moe-a2.7b"])
    bert = build_graph(MODELS["bert-base"], P, Pass("encode", prompt=16))
    assert "kv_append" not in {op.name for op in bert.ops} and "lm_head" not in {op.name for op in bert.ops}


def test_graph__weights_read_equal_the_models_weights():
    """Every weight matmul and the LM head read, in a dense decode step, what weights_by_kind counts
    (biases, norms and the embedding table aside: a row gather reads one row per token)."""
    for name in ("llama-3.2-1b", "qwen3-0.6b", "gemma-3-1b", "phi-3.5-mini", "bert-base"):
        m = MODELS[name]
        regime = "encode" if m.encoder else "decode"
        g = build_graph(m, Precision(weights="bf16"), Pass(regime, context=64, prompt=8))
        read = sum(op.k * op.n * op.repeat for op in g.ops if op.streams_weights)
        kinds = m.weights_by_kind()
        expected = kinds["attention"] + kinds["ffn"] + kinds["router"] + kinds["lm_head"]
        if m.tie_word_embeddings and not m.encoder:
            expected += m.vocab_size * m.hidden_size
        biases = m.num_layers * ((m.num_heads + 2 * m.num_kv_heads) * m.head_dim * m.qkv_bias
                                 + m.hidden_size * m.o_bias + m.num_heads * m.attention_sinks)
        if m.mlp_bias:
            biases += m.num_layers * (m.ffn_size + m.hidden_size) + m.hidden_size  # + the pooler's
        assert read == expected - biases, name


@pytest.mark.parametrize("name", ["mistral-7b-v0.1", "gemma-3-1b", "gpt-oss-20b"])
def test_sliding_window__caps_kv_reads(name):
    m = MODELS[name]
    windows = [m.window(i) for i in range(m.num_layers)]
    w = max(windows)
    short, long_ = (build_graph(m, P, Pass("decode", context=c)) for c in (w // 2, 8 * w))
    for layer, win in enumerate(windows):
        kv = [sum(op.k * op.n * op.repeat for op in g.ops if op.layer == layer and op.w.kind == "kv")
              for g in (short, long_)]
        if win:  # K (head_dim x keys) and V (keys x head_dim): 2 * head_dim * kv_heads per key
            assert kv[1] == 2 * m.head_dim * m.num_kv_heads * win
        else:
            assert kv[1] == 2 * m.head_dim * m.num_kv_heads * (8 * w + 1)
    assert kv_cache_bytes(m, P, 8 * w) < kv_cache_bytes(m, P, 8 * w + 1000) or all(windows)
    per_layer = 2 * m.num_kv_heads * m.head_dim * P.kv_bytes
    assert kv_cache_bytes(m, P, 10**6) == sum(per_layer * (x or 10**6) for x in windows)


def test_sliding_window__prefill_sees_at_most_the_window():
    """Prefill of a chunk after a long cached context: each query sees ``window`` keys, and the
    cached part read is window - 1 tokens."""
    m = MODELS["mistral-7b-v0.1"]
    g = build_graph(m, P, Pass("prefill", prompt=512, prefill_context=20_000))
    scores = next(op for op in g.ops if op.name == "attn_scores")
    assert scores.n == 4095 + 512
    assert scores.m * scores.n * scores.macs_scale == pytest.approx(scores.m * 4096)


def test_moe__bytes_per_token_equal_the_closed_form_for_the_active_experts():
    m = MODELS["mixtral-8x7b"]
    e, h = m.experts, m.hidden_size
    per_expert = 3 * h * e.ffn_size
    for batch, active in ((1, 2), (8, 7)):  # 8 experts, 2 per token: E(1 - (1 - 2/8)^8) = 7.2 -> 7
        g = build_graph(m, P, Pass("decode", batch=batch, context=64))
        expert_weights = sum(op.k * op.n * op.repeat for op in g.ops if op.layer == 0 and op.name.startswith("expert_")
                             and op.streams_weights)
        assert expert_weights == active * per_expert
        routed = sum(op.m * op.repeat for op in g.ops if op.layer == 0 and op.name.startswith("expert_gate"))
        assert routed == batch * e.per_token  # every token's picks, no more


def test_moe__prefill_runs_every_expert_on_its_tokens():
    m = MODELS["qwen3-30b-a3b"]
    loads = expert_loads(m.experts, 1024, Routing(), 0)
    assert sum(t * n for t, n in loads) == 1024 * 8 and sum(n for _, n in loads) == 128
    assert max(t for t, _ in loads) - min(t for t, _ in loads) <= 1


def test_routing__sampled_is_seeded_and_histogram_skews_the_load():
    m = MODELS["mixtral-8x7b"]
    a = expert_loads(m.experts, 64, Routing("sampled", seed=3), 5)
    assert a == expert_loads(m.experts, 64, Routing("sampled", seed=3), 5)
    assert sum(t * n for t, n in a) == 128
    skew = Routing(histogram=((10, 1, 1, 1, 1, 1, 1, 1),))
    loads = expert_loads(m.experts, 64, skew, 0)
    assert max(t for t, _ in loads) == 64  # the favourite is picked by every token (p capped at 1)


def test_simulate__families_run_and_sliding_window_saturates():
    short = simulate_llm(LlmStudy(model="gemma-3-1b", context=1024))
    long_ = simulate_llm(LlmStudy(model="gemma-3-1b", context=2048))
    layer = short.layer.values
    kv = [d.ddr_bytes.sel(tensor_kind="kv").values for d in (short, long_)]
    grew = {int(i): float(kv[1][layer == i].sum() - kv[0][layer == i].sum()) for i in set(layer) if i >= 0}
    per_token_layer = 2 * 256 * 1 * 2  # K,V x head_dim x 1 KV head x bf16
    assert sorted(i for i, g in grew.items() if g) == [5, 11, 17, 23]  # only the global layers grow
    # by the 1,024 more tokens each reads, up to the padding of each context's searched tiles (either
    # context's tiles may pad: the shorter one's too)
    assert all(0.9 * 1024 * per_token_layer <= grew[i] <= 1.1 * 1024 * per_token_layer for i in (5, 11, 17, 23))
    assert short.attrs["family"] == "gemma3"
    bert = simulate_llm(LlmStudy(model="bert-base", regime="encode", prompt=64, batch=2))
    assert float(bert.ddr_bytes.sel(tensor_kind="kv").sum()) == 0 and float(bert.total_seconds) > 0


def test_simulate__batch_scales_moe_weights_sublinearly():
    one, eight = (simulate_llm(LlmStudy(model="qwen1.5-moe-a2.7b", context=256, batch=b)) for b in (1, 8))
    w1, w8 = (float(d.ddr_bytes.sel(tensor_kind="weights").sum()) for d in (one, eight))
    assert w1 < w8 < 8 * w1
    assert float(eight.total_seconds) >= float(one.total_seconds)


BAD = [
    ({"model_type": "falcon_mamba"}, "model_type"),
    ({"hidden_size": 64}, "model_type: missing"),
    ({"model_type": "deepseek_v3"}, "deepseek_v3"),
    ({"kv_lora_rank": 512}, "kv_lora_rank"),
    ({"add_cross_attention": True}, "add_cross_attention"),
    ({"frobnicate": 1}, "frobnicate"),
    ({"hidden_act": "relu"}, "hidden_act"),
    ({"num_attention_heads": "32"}, "num_attention_heads"),
    # the config.json keys the user wrote, not ModelConfig's fields (num_heads, num_kv_heads)
    ({"num_key_value_heads": 3}, "num_attention_heads = 4: must be a multiple of num_key_value_heads (3)"),
]
TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512}


@pytest.mark.parametrize("change,named", BAD)
def test_config__refused_by_name(change, named):
    cfg = {**TINY, **change}
    if "hidden_size" in change and len(change) == 1:
        cfg.pop("model_type")
    with pytest.raises(ConfigError) as e:
        from_dict(cfg, "tiny")
    assert named in str(e.value)


def test_config__contradictory_experts_and_windows_are_refused():
    moe = {**TINY, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 6}
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        from_dict(moe, "tiny")
    gpt = {**TINY, "model_type": "gpt_oss", "num_local_experts": 4, "num_experts_per_tok": 2,
           "experts_per_token": 3, "layer_types": ["sliding_attention"]}
    with pytest.raises(ConfigError) as e:
        from_dict(gpt, "tiny")
    assert "experts_per_token" in str(e.value) and "layer_types" in str(e.value)
    qwen = {**TINY, "model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2}
    with pytest.raises(ConfigError, match="moe_intermediate_size"):
        from_dict(qwen, "tiny")


def test_config__inert_keys_accepted_and_context_limit_enforced():
    m = from_dict({**TINY, "rope_theta": 5e5, "torch_dtype": "bfloat16", "bos_token_id": 1,
                   "max_position_embeddings": 1024}, "tiny")
    with pytest.raises(ConfigError, match="max_position_embeddings"):
        LlmStudy(model=m, context=4096).validate(m)


def test_regime__encoder_and_decoder_refuse_each_others_regimes():
    with pytest.raises(ConfigError, match="encode"):
        simulate_llm(LlmStudy(model="bert-base", regime="decode"))
    with pytest.raises(ConfigError, match="regime"):
        simulate_llm(LlmStudy(model="llama-3.2-1b", regime="encode"))


def test_precision__per_kind_dtypes_change_only_their_tensors():
    m = MODELS["llama-3.1-8b"]
    base = build_graph(m, P, Pass("decode", context=64))
    wide = build_graph(m, Precision(lm_head="bf16", embedding="bf16"), Pass("decode", context=64))
    for a, b in zip(base.ops, wide.ops):
        same = a.w.elem_bytes == b.w.elem_bytes and a.x.elem_bytes == b.x.elem_bytes
        assert same == (a.weight_kind not in ("lm_head", "embedding")), a.name
    measured = Precision(measured=(("ffn", 0.6),))
    assert measured.bytes_of("ffn") == 0.6 and measured.bytes_of("attention") == P.bytes_of("attention")
    with pytest.raises(ConfigError, match="measured"):
        Precision(measured=(("frob", 0.5),)).validate()
    assert np.isclose(Precision(weights="mxfp4").bytes_of("ffn"), 0.5 + 1 / 32)


def _cfg(name, **change):
    cfg = {**preset_config(name), **change}
    return {k: v for k, v in cfg.items() if v is not REMOVE}


REMOVE = object()


def test_config__absent_and_null_keys_follow_transformers():
    """Absent: the family class's default; null: off (windows, soft-capping)."""
    assert set(from_dict(_cfg("mistral-7b-v0.1", sliding_window=REMOVE), "m").windows) == {4096}
    assert from_dict(_cfg("mistral-7b-v0.1", sliding_window=None), "m").windows == ()
    gpt = from_dict(_cfg("gpt-oss-20b", layer_types=REMOVE), "g")
    assert gpt.windows == MODELS["gpt-oss-20b"].windows  # even layers slide by default
    gemma = from_dict(_cfg("gemma-2-2b", attn_logit_softcapping=None, final_logit_softcapping=None), "g")
    assert (gemma.attn_softcap, gemma.final_softcap) == (0.0, 0.0)
    qwen = from_dict(_cfg("qwen3-8b", use_sliding_window=True, sliding_window=REMOVE, max_window_layers=REMOVE), "q")
    assert qwen.windows == tuple(4096 if i >= 28 else 0 for i in range(36))
    moe = from_dict(_cfg("qwen3-30b-a3b", use_sliding_window=True, sliding_window=2048), "q")
    assert set(moe.windows) == {2048}  # Qwen3-MoE slides every layer
    newer = from_dict(_cfg("qwen3-8b", layer_types=["full_attention"] * 36), "q")  # newer exports
    assert newer.windows == ()


def test_config__moe_keys_without_moe_layers_give_a_dense_model():
    dense = from_dict(_cfg("qwen1.5-moe-a2.7b", mlp_only_layers=list(range(24))), "q")
    assert dense.experts is None and dense.params < MODELS["qwen1.5-moe-a2.7b"].params / 5


@pytest.mark.parametrize("name,change,named", [
    ("bert-base", {"num_key_value_heads": 4}, "num_key_value_heads"),
    ("bert-base", {"is_decoder": True}, "is_decoder"),
    ("gemma-3-4b", {"kv_lora_rank": 512}, "kv_lora_rank"),
    ("qwen1.5-moe-a2.7b", {"use_sliding_window": True}, "use_sliding_window"),
])
def test_config__more_refusals(name, change, named):
    with pytest.raises(ConfigError, match=named):
        from_dict(_cfg(name, **change), name)


def test_routing__sampled_picks_each_expert_with_its_probability():
    from fastsim.llm.routing import probabilities

    m = MODELS["mixtral-8x7b"]
    skew = Routing("sampled", histogram=((8, 4, 1, 1, 1, 1, 0.5, 0.5),))
    p = probabilities(m.experts, skew, 0)
    tokens = 40_000
    # loads are (count, experts with it), busiest first: compare sorted shares with sorted p
    counts = sorted((t for t, n in expert_loads(m.experts, tokens, skew, 0) for _ in range(n)), reverse=True)
    assert np.allclose(np.array(counts) / tokens, np.sort(p)[::-1], atol=0.01)
    with pytest.raises(ConfigError, match="at least 2"):
        Routing(histogram=((1, 0, 0, 0, 0, 0, 0, 0),)).validate(m.experts, m.num_layers)


def test_routing__refused_for_a_dense_model():
    """A routing cannot change a dense model's answer: refused, not ignored (sweeps and Python too)."""
    with pytest.raises(ConfigError, match="mixture-of-experts"):
        simulate_llm(LlmStudy(context=64, routing=Routing("sampled", seed=3)))
