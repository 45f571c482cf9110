"""Model families by ``model_type``: a Hugging Face ``config.json`` becomes a ``ModelConfig`` with
the family's real structure, or a clear error. Never a plausible number for the wrong model:

- an unknown ``model_type`` is refused, naming the families that are modelled;
- every key is known: it either sets the structure (read and checked), or does not change the work
  (token ids, RoPE frequencies, dropout, dtypes: accepted), or changes the work in a way fastsim
  does not model (multi-head latent attention, cross-attention, ...: refused by name). A key
  fastsim has never seen is refused too, since it cannot tell which of these it is.

Defaults for keys a real config omits are those of the family's ``transformers`` configuration
class (real configs rely on them, e.g. Gemma 3's ``text_config`` omits its head counts).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..errors import ConfigError, Problems, shown
from .checkpoint import tensor_kind
from .model import Experts, ModelConfig, Quantization

# keys of any config that do not change the work of a forward pass
INERT = frozenset({
    "architectures", "model_type", "_name_or_path", "name_or_path", "transformers_version", "torch_dtype", "dtype",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "cls_token_id", "unk_token_id",
    "initializer_range", "initializer_factor", "rms_norm_eps", "layer_norm_eps", "use_cache", "rope_theta",
    "rope_scaling", "rope_parameters", "rope_local_base_freq", "max_position_embeddings",
    "original_max_position_embeddings", "attention_dropout", "hidden_dropout", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "classifier_dropout", "embd_pdrop", "resid_pdrop", "pretraining_tp",
    "id2label", "label2id", "finetuning_task", "problem_type", "tokenizer_class",
    "task_specific_params", "return_dict", "output_hidden_states", "output_attentions", "torchscript",
    "auto_map", "gradient_checkpointing", "_attn_implementation", "attn_implementation", "is_decoder",
    "tie_encoder_decoder", "chunk_size_feed_forward", "output_router_logits", "router_aux_loss_coef",
    "router_jitter_noise", "norm_topk_prob", "query_pre_attn_scalar", "cache_implementation",
    "partial_rotary_factor", "use_qk_norm", "swiglu_limit", "router_z_loss_coef", "experts_implementation",
    "pad_vocab_size_multiple", "final_norm", "lm_head_bias", "prefix", "bad_words_ids", "decoder_start_token_id",
    "use_mrope", "initial_context_length",
})
# keys that change the work in a way fastsim does not model, when they are set (not null/false/0)
REFUSED = {
    "kv_lora_rank": "multi-head latent attention",
    "q_lora_rank": "multi-head latent attention",
    "add_cross_attention": "cross-attention",
    "is_encoder_decoder": "encoder-decoder models",
    "num_nextn_predict_layers": "multi-token prediction layers",
    "linear_attn_config": "linear attention",
    "full_attn_interval": "hybrid linear attention",
    "use_bidirectional_attention": "bidirectional attention in a decoder",
    "altup_num_inputs": "AltUp layers (Gemma 3n)",
    "first_k_dense_replace": "DeepSeek-style dense-then-MoE layers",
}
# quantization_config: quant_method -> {bits: the dtype fastsim models its weights as} (None: any bits)
QUANT_METHODS = {"gptq": {4: "int4", 8: "int8"}, "awq": {4: "int4"}, "fp8": {None: "fp8"},
                 "fbgemm_fp8": {None: "fp8"}, "mxfp4": {None: "mxfp4"}}
QUANT_BITS = {"fp8": 8, "fbgemm_fp8": 8, "mxfp4": 4}  # the bits of formats whose config does not say
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}  # torch_dtype -> kept kinds' dtype
ACTIVATION_NAMES = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
                    "gelu_tanh": "gelu_tanh", "gelu": "gelu"}
SIZE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")


class _Reader:
    """Reads one config's keys: each one checked and marked as used, every problem collected."""

    def __init__(self, cfg: dict, where: str, defaults: dict):
        self.cfg, self.defaults, self.p, self.used = cfg, defaults, Problems(where), set()

    def raw(self, key, default=None):
        """The key's value as written (null stays None: "off" for windows and soft-capping, as
        in transformers); absent: the family's default, else ``default``."""
        self.used.add(key)
        if key in self.cfg:
            return self.cfg[key]
        return self.defaults.get(key, default)

    def int(self, key, lo=1, hi=2**24, default=None, required=True) -> int:
        """An integer key; null or absent without a family default: ``default`` (a value derived
        from others, e.g. head_dim), else missing."""
        v = self.raw(key)
        v = default if v is None else v
        if v is None:
            if required:
                self.p.add(key, "missing", "a required key of this family's config.json")
            return 0
        return v if self.p.number(key, v, integer=True, lo=lo, hi=hi) else 0

    def flag(self, key, default=False) -> bool:
        v = self.raw(key, default)
        if v is None:
            return default
        return v if self.p.check(isinstance(v, bool), key, v, "true or false") else default

    def float(self, key) -> float:
        v = self.raw(key)
        if v is None:
            return 0.0
        return float(v) if self.p.number(key, v, lo=0) else 0.0

    def activation(self, key, allowed) -> str:
        v = self.raw(key)
        name = ACTIVATION_NAMES.get(v) if isinstance(v, str) else None
        self.p.check(name in allowed, key, v, f"one of {', '.join(k for k, a in ACTIVATION_NAMES.items() if a in allowed)}"
                     " (the activations this family is modelled with)")
        return name or allowed[0]

    def finish(self, family: str, extra_inert=frozenset()) -> None:
        for key, what in REFUSED.items():
            if self.cfg.get(key) not in (None, False, 0, []):
                self.p.add(key, self.cfg[key], f"{what} is not modelled (fastsim models: {', '.join(FAMILIES)})")
        known = INERT | extra_inert | self.used | set(REFUSED)
        for key in sorted(set(self.cfg) - known):
            self.p.add(key, self.cfg[key], f"not a {family} config key fastsim knows; it cannot tell whether it "
                                           "changes the computation (remove it if it does not)")
        self.p.raise_if_any()


def _modelled_formats() -> str:
    return ", ".join(f"{m} {'/'.join(str(b) for b in bits)}-bit" if None not in bits else m
                     for m, bits in QUANT_METHODS.items())


def _quantization(r: _Reader, model: ModelConfig) -> Quantization | None:
    """``quantization_config`` as the dtype fastsim simulates the weights in (``QUANT_METHODS``):
    GPTQ/AWQ 4-bit is int4 with its ``group_size`` (-1, one scale per output channel: a group of
    the hidden size), 8-bit GPTQ int8, FP8 fp8, MXFP4 mxfp4; ``modules_to_not_convert`` keeps whole
    kinds at ``torch_dtype``. Any other format is refused by quant_method and bits."""
    qc = r.raw("quantization_config")
    if qc is None:
        return None
    if not r.p.check(isinstance(qc, dict), "quantization_config", qc, "a table with quant_method"):
        return None
    method = qc.get("quant_method")
    bits = qc.get("bits", qc.get("w_bit", QUANT_BITS.get(method)))
    dtypes = QUANT_METHODS.get(method, {})
    dtype = dtypes.get(None) or dtypes.get(bits) if isinstance(bits, int) or None in dtypes else None
    if dtype is None:
        r.p.add("quantization_config", f"quant_method={method!r}, bits={bits!r}",
                f"not a format fastsim models ({_modelled_formats()}); remove quantization_config to simulate "
                "the model at --weights")
        return None
    group = qc.get("group_size", qc.get("q_group_size", 128)) if dtype == "int4" else 128
    if group == -1:
        group = model.hidden_size
    if not r.p.number("quantization_config.group_size", group, integer=True, lo=1, hi=2**20):
        return None
    kept_dtype = TORCH_DTYPES.get(r.raw("torch_dtype") or r.raw("dtype"), "bf16")
    return Quantization(method, bits, dtype, group, _kept_kinds(r, qc.get("modules_to_not_convert"), model, kept_dtype))


def _kept_kinds(r: _Reader, modules, model: ModelConfig, dtype: str) -> tuple[tuple[str, str], ...]:
    """The weight kinds ``modules_to_not_convert`` leaves unquantized (every layer's, or none: a
    precision per layer is not modelled; vision modules are not simulated)."""
    if modules is None:
        return ()
    where = "quantization_config.modules_to_not_convert"
    if not r.p.check(isinstance(modules, list) and all(isinstance(m, str) for m in modules), where, modules,
                     "a list of module names"):
        return ()
    have, kinds = model.weights_by_kind(), []
    for name in modules:
        kind = tensor_kind(name.replace("*", "0") + ".weight")
        if kind == "vision" or kind is not None and not have.get(kind):
            continue  # a tower fastsim does not run, or a kind this model does not read (a tied head)
        one_layer = any(part.isdigit() for part in name.split("."))
        if r.p.check(kind is not None and not one_layer, where, name,
                     "a module fastsim can place: every layer's attention, mlp, router, or the embedding or "
                     "lm_head (a precision per layer is not modelled)") and kind not in kinds:
            kinds.append(kind)
    return tuple((kind, dtype) for kind in kinds)


def _base(r: _Reader, name: str, family: str, gqa: bool = True, **over) -> dict:
    """The fields every family reads the same way (``gqa``: the family has KV-head and head_dim
    keys; BERT has neither, and a config that sets them is not BERT's)."""
    h, heads = r.int("hidden_size"), r.int("num_attention_heads", hi=4096)
    derived = (h // heads) if heads else None
    kv = r.int("num_key_value_heads", hi=4096, default=heads) if gqa else heads
    head_dim = r.int("head_dim", hi=2**14, default=derived) if gqa else derived
    return dict(name=name, family=family, hidden_size=h, num_layers=r.int("num_hidden_layers", hi=4096),
                num_heads=heads, num_kv_heads=kv, head_dim=head_dim, ffn_size=r.int("intermediate_size", hi=2**22),
                vocab_size=r.int("vocab_size"), tie_word_embeddings=r.flag("tie_word_embeddings"),
                max_context=r.int("max_position_embeddings", required=False), **over)


def _windows_from_types(r: _Reader, layers: int, window: int) -> tuple[int, ...] | None:
    """Per-layer windows from ``layer_types`` ("sliding_attention" / "full_attention"), if given."""
    types = r.raw("layer_types")
    if types is None:
        return None
    allowed = ("sliding_attention", "full_attention")
    if not r.p.check(isinstance(types, list) and len(types) == layers and all(t in allowed for t in types),
                     "layer_types", types, f"a list of {layers} entries, each one of {allowed}"):
        return ()
    if "sliding_attention" in types and not window:
        r.p.add("sliding_window", r.raw("sliding_window"), "must be set (and enabled) when layer_types has sliding layers")
    return tuple(window if t == "sliding_attention" else 0 for t in types)


def _llama(r: _Reader, name: str) -> ModelConfig:
    bias = r.flag("attention_bias")
    r.activation("hidden_act", ("silu",))
    return ModelConfig(**_base(r, name, "llama", qkv_bias=bias, o_bias=bias, mlp_bias=r.flag("mlp_bias")))


def _mistral(r: _Reader, name: str, family="mistral") -> ModelConfig:
    r.activation("hidden_act", ("silu",))
    base = _base(r, name, family)
    window = r.int("sliding_window", required=False)
    windows = (window,) * base["num_layers"] if window else ()
    return ModelConfig(**base, windows=windows)


def _qwen_windows(r: _Reader, layers: int, family: str) -> tuple[int, ...]:
    """Qwen2/3: with ``use_sliding_window``, layers from ``max_window_layers`` on slide (Qwen3-MoE:
    every layer; Qwen2-MoE: transformers versions disagree on which, so refused), or as
    ``layer_types`` says."""
    on = r.flag("use_sliding_window")
    window = r.int("sliding_window", required=False, lo=0)
    first = r.int("max_window_layers", lo=0, required=False)  # read: newer exports carry it beside layer_types
    by_type = _windows_from_types(r, layers, window if on else 0)
    if by_type is not None:
        return by_type if any(by_type) else ()
    if not on:
        return ()
    if family == "qwen2_moe":
        r.p.add("use_sliding_window", True, "qwen2_moe's sliding layers differ between transformers versions: "
                                            "give layer_types instead")
        return ()
    if not window:
        r.p.add("sliding_window", window, "must be set when use_sliding_window is true")
        return ()
    if family == "qwen3_moe":
        return (window,) * layers
    return tuple(window if i >= first else 0 for i in range(layers))


def _qwen(r: _Reader, name: str, family: str) -> ModelConfig:
    r.activation("hidden_act", ("silu",))
    qwen3 = family.startswith("qwen3")
    # Qwen2 always has q/k/v biases (qkv_bias in newer qwen2_moe exports says so)
    bias = r.flag("attention_bias") if qwen3 else r.flag("qkv_bias", default=True)
    base = _base(r, name, family, qkv_bias=bias, o_bias=bias and qwen3, qk_norm=qwen3)
    base["windows"] = _qwen_windows(r, base["num_layers"], family)
    if family.endswith("_moe"):
        base.update(_qwen_experts(r, base["num_layers"], shared=not qwen3))
    return ModelConfig(**base)


def _qwen_experts(r: _Reader, layers: int, shared: bool) -> dict:
    count, k = r.int("num_experts"), r.int("num_experts_per_tok")
    step = r.int("decoder_sparse_step", default=1)
    only_mlp = r.raw("mlp_only_layers", [])
    if not r.p.check(isinstance(only_mlp, list) and all(isinstance(i, int) and 0 <= i < max(layers, 1) for i in only_mlp),
                     "mlp_only_layers", only_mlp, f"a list of layer indices in [0, {layers})"):
        only_mlp = []
    shared_size = r.int("shared_expert_intermediate_size", lo=0, required=shared) if shared else 0
    experts = Experts(count, k, r.int("moe_intermediate_size"), shared_size, shared_gate=shared and shared_size > 0)
    moe = tuple(i for i in range(layers) if i not in only_mlp and step and (i + 1) % step == 0)
    if not moe:  # every layer dense: a dense model, whatever its expert keys say
        return dict(experts=None, moe_layers=())
    return dict(experts=experts, moe_layers=moe if len(moe) < layers else ())


def _gemma(r: _Reader, name: str, family: str) -> ModelConfig:
    r.activation("hidden_activation", ("gelu_tanh",))
    r.raw("hidden_act")  # older Gemma configs name the activation twice; hidden_activation wins
    bias = r.flag("attention_bias")
    base = _base(r, name, family, post_norms=True, activation="gelu_tanh", embed_scale=True, qkv_bias=bias, o_bias=bias,
                 attn_softcap=r.float("attn_logit_softcapping"), final_softcap=r.float("final_logit_softcapping"),
                 qk_norm=family != "gemma2")
    layers, window = base["num_layers"], r.int("sliding_window")
    pattern = r.int("sliding_window_pattern", default=6) if family != "gemma2" else 0
    r.raw("_sliding_window_pattern")  # newer exports keep the pattern beside layer_types
    windows = _windows_from_types(r, layers, window)
    if windows is None:
        if family == "gemma2":  # even layers slide (transformers Gemma2: not layer_idx % 2)
            windows = tuple(window if i % 2 == 0 else 0 for i in range(layers))
        else:  # every pattern-th layer is global (transformers Gemma3: (i + 1) % pattern)
            pattern = r.int("_sliding_window_pattern", default=pattern)
            windows = tuple(window if pattern and (i + 1) % pattern else 0 for i in range(layers))
    return ModelConfig(**base, windows=windows)


def _phi3(r: _Reader, name: str) -> ModelConfig:
    r.activation("hidden_act", ("silu",))
    base = _base(r, name, "phi3", fused_qkv=True, fused_gate_up=True)
    window = r.int("sliding_window", required=False)
    return ModelConfig(**base, windows=(window,) * base["num_layers"] if window else ())


def _mixtral(r: _Reader, name: str) -> ModelConfig:
    r.activation("hidden_act", ("silu",))
    base = _base(r, name, "mixtral")
    experts = Experts(r.int("num_local_experts"), r.int("num_experts_per_tok"), base["ffn_size"])
    window = r.int("sliding_window", required=False)
    return ModelConfig(**base, experts=experts, windows=(window,) * base["num_layers"] if window else ())


def _gpt_oss(r: _Reader, name: str) -> ModelConfig:
    r.raw("hidden_act")  # the clamped SwiGLU of gpt-oss whatever this says
    bias = r.flag("attention_bias", default=True)
    base = _base(r, name, "gpt_oss", qkv_bias=bias, o_bias=bias, attention_sinks=True, activation="swiglu_clamped")
    k = r.int("num_experts_per_tok")
    legacy = r.raw("experts_per_token")  # an older spelling of the same count
    r.p.check(legacy is None or legacy == k, "experts_per_token", legacy, f"must equal num_experts_per_tok ({k})")
    experts = Experts(r.int("num_local_experts"), k, base["ffn_size"], router_bias=True, expert_bias=True)
    window = r.int("sliding_window", required=False)
    windows = _windows_from_types(r, base["num_layers"], window)
    if windows is None:  # transformers: even layers slide, odd layers are global
        windows = tuple(window if (i + 1) % 2 else 0 for i in range(base["num_layers"])) if window else ()
    return ModelConfig(**base, experts=experts, windows=windows)


def _bert(r: _Reader, name: str) -> ModelConfig:
    act = r.activation("hidden_act", ("gelu", "gelu_tanh"))
    kind = r.raw("position_embedding_type", "absolute")
    r.p.check(kind == "absolute", "position_embedding_type", kind, "absolute (relative positions are not modelled)")
    r.p.check(not r.flag("is_decoder"), "is_decoder", True, "a causal BERT decoder is not modelled (encoders only)")
    base = _base(r, name, "bert", gqa=False, qkv_bias=True, o_bias=True, mlp_bias=True, norm="layer", activation=act,
                 gated_ffn=False, encoder=True, pooler=True)
    return ModelConfig(**base, positions=r.int("max_position_embeddings"), token_types=r.int("type_vocab_size", lo=0, default=2))


QWEN_WINDOWS = {"hidden_act": "silu", "sliding_window": 4096, "max_window_layers": 28}
# model_type -> (builder, defaults of keys real configs omit, extra keys that do not change the work)
FAMILIES = {
    "llama": (_llama, {"tie_word_embeddings": False, "hidden_act": "silu"}, frozenset()),
    "mistral": (_mistral, {"hidden_act": "silu", "sliding_window": 4096}, frozenset()),
    "qwen2": (lambda r, n: _qwen(r, n, "qwen2"), QWEN_WINDOWS, frozenset()),
    "qwen3": (lambda r, n: _qwen(r, n, "qwen3"), {**QWEN_WINDOWS, "head_dim": 128}, frozenset()),
    "gemma2": (lambda r, n: _gemma(r, n, "gemma2"),
               {"head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
                "sliding_window": 4096, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0}, frozenset()),
    "gemma3_text": (lambda r, n: _gemma(r, n, "gemma3"),
                    {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                     "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                     "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4096, "tie_word_embeddings": True,
                     "max_position_embeddings": 131072},
                    frozenset()),
    "phi3": (_phi3, {"hidden_act": "silu"}, frozenset({"attention_bias"})),  # Phi-3's projections have no
    # bias whatever attention_bias says (transformers hard-codes it)
    "mixtral": (_mixtral, {"hidden_act": "silu"}, frozenset()),
    "qwen2_moe": (lambda r, n: _qwen(r, n, "qwen2_moe"), QWEN_WINDOWS, frozenset()),
    "qwen3_moe": (lambda r, n: _qwen(r, n, "qwen3_moe"), QWEN_WINDOWS, frozenset()),
    "gpt_oss": (_gpt_oss, {"head_dim": 64, "sliding_window": 128}, frozenset()),
    "bert": (_bert, {"hidden_act": "gelu"}, frozenset()),
}
# multimodal wrappers whose text model fastsim simulates (text prompts only; the vision tower is
# not run), with the keys of the wrapper that do not change text-only work
WRAPPERS = {"gemma3": ("text_config", "gemma3_text", frozenset({
    "vision_config", "boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image"}))}


def from_dict(cfg: dict, name: str, where: str = "config.json") -> ModelConfig:
    """The model a ``config.json`` object describes (module docstring)."""
    if not isinstance(cfg, dict):
        raise ConfigError([f"{where}: must hold a JSON object"], "model config")
    family = cfg.get("model_type")
    if family is not None and not isinstance(family, str):
        raise ConfigError([f"model_type = {shown(family)}: must be a family name (a string)"], "model config")
    if family in WRAPPERS:
        inner_key, inner_family, wrapper_keys = WRAPPERS[family]
        inner = cfg.get(inner_key)
        extra = set(cfg) - INERT - wrapper_keys - {inner_key, "quantization_config"} - set(REFUSED)
        problems = [f"{k} = {shown(cfg[k])}: not a {family} config key fastsim knows" for k in sorted(extra)]
        problems += [f"{k} = {shown(cfg[k])}: {what} is not modelled" for k, what in REFUSED.items()
                     if cfg.get(k) not in (None, False, 0, [])]
        if not isinstance(inner, dict):
            problems.append(f"{inner_key} = {shown(inner)}: a {family} config must hold its text model here")
        elif inner.get("model_type", inner_family) != inner_family:
            problems.append(f"{inner_key}.model_type = {shown(inner['model_type'])}: a {family} text model is "
                            f"{inner_family}")
        if problems:
            raise ConfigError(problems, where)
        stored = {"quantization_config": cfg["quantization_config"]} if "quantization_config" in cfg else {}
        model = from_dict({**inner, **stored, "model_type": inner_family}, name, f"{where} ({inner_key})")
        return ModelConfig(**{**model.__dict__, "vision_tower": True})
    if "model_type" not in cfg:
        raise ConfigError([f"model_type: missing; fastsim reads it to know the family ({', '.join([*FAMILIES, *WRAPPERS])})"],
                          where)
    if family not in FAMILIES:
        raise ConfigError([f"model_type = {shown(family)}: not a family fastsim models "
                           f"({', '.join([*FAMILIES, *WRAPPERS])}); refusing rather than simulating it as another"],
                          where)
    build, defaults, extra_inert = FAMILIES[family]
    r = _Reader(cfg, where, defaults)
    model = build(r, name)
    quantization = _quantization(r, model)
    r.finish(family, extra_inert)
    return replace(model, quantization=quantization).validate()


def from_hf_config(path: str | Path) -> ModelConfig:
    """Read a Hugging Face ``config.json`` (any family of ``FAMILIES``)."""
    path = Path(path)
    try:
        cfg = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError([f"{path}: not a readable JSON config ({e})"], "model config")
    name = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    return from_dict(cfg, str(name or path.parent.name or path.stem), str(path))
