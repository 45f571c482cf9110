"""Transformer descriptions (every family fastsim models, as one typed record) and their precisions.

A ``ModelConfig`` states the structure that changes the work: attention shape (grouped-query
heads, head_dim, sliding-window layers), extra ops (q/k norms, post-norms, soft-capping, embedding
scale), fused projections, the FFN's activation and gating, mixture-of-experts blocks, and whether
the model is a causal decoder or a bidirectional encoder. ``fastsim.llm.families`` builds it from a
Hugging Face ``config.json``; ``fastsim.llm.presets`` names the common sizes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..dtypes import DTYPE_BYTES
from ..errors import Problems

WEIGHT_KINDS = ("embedding", "lm_head", "attention", "ffn", "router", "norm")  # per-tensor precision
ACTIVATIONS = ("silu", "gelu_tanh", "gelu", "swiglu_clamped")
NORMS = ("rms", "layer")


# ModelConfig's fields by the Hugging Face config.json keys a user writes, as errors name them
HF_KEYS = {"num_layers": "num_hidden_layers", "num_heads": "num_attention_heads",
           "num_kv_heads": "num_key_value_heads", "ffn_size": "intermediate_size"}


@dataclass(frozen=True)
class Experts:
    """A mixture-of-experts FFN: ``count`` routed experts of ``ffn_size``, ``per_token`` of them
    chosen per token by a router (a gate matmul and top-k), plus an optional shared expert every
    token runs (``shared_ffn_size``, with a sigmoid gate of its own when ``shared_gate``)."""

    count: int
    per_token: int
    ffn_size: int
    shared_ffn_size: int = 0
    shared_gate: bool = False
    router_bias: bool = False
    expert_bias: bool = False

    def problems(self, p: Problems) -> None:
        if p.number("num_experts", self.count, integer=True, lo=1, hi=4096):
            if p.number("num_experts_per_tok", self.per_token, integer=True, lo=1, hi=4096):
                p.check(self.per_token <= self.count, "num_experts_per_tok", self.per_token,
                        f"must be <= the number of experts ({self.count})")
        p.number("moe_intermediate_size", self.ffn_size, integer=True, lo=1, hi=2**22)
        p.number("shared_expert_intermediate_size", self.shared_ffn_size, integer=True, lo=0, hi=2**22)


@dataclass(frozen=True)
class ModelConfig:
    """One transformer. Per-layer tuples are empty when every layer is the same: ``windows``
    (KV window in tokens per layer, 0 = global attention) and ``moe_layers`` (layers whose FFN is
    the ``experts`` block; empty with ``experts`` set means every layer)."""

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    family: str = "llama"
    windows: tuple[int, ...] = ()
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False  # per-head RMSNorm of q and k before RoPE (Qwen3, Gemma 3)
    post_norms: bool = False  # norms after attention and after the FFN as well (Gemma 2/3)
    norm: str = "rms"
    activation: str = "silu"
    gated_ffn: bool = True
    fused_qkv: bool = False  # one qkv projection (Phi-3)
    fused_gate_up: bool = False  # one gate_up projection (Phi-3)
    attn_softcap: float = 0.0  # tanh soft-capping of attention scores (Gemma 2); 0: none
    final_softcap: float = 0.0  # of the logits
    embed_scale: bool = False  # embeddings multiplied by sqrt(hidden_size) (Gemma)
    attention_sinks: bool = False  # one learned logit per head joins each softmax row (gpt-oss)
    experts: Experts | None = None
    moe_layers: tuple[int, ...] = ()
    encoder: bool = False  # bidirectional attention over the input, no KV cache, no LM head (BERT)
    positions: int = 0  # learned absolute position embeddings (BERT)
    token_types: int = 0
    pooler: bool = False
    vision_tower: bool = False  # a multimodal checkpoint: text prompts only are simulated
    max_context: int = 0  # positions the model was trained for (max_position_embeddings); 0: unstated
    # how the checkpoint stores its weights (config.json's quantization_config); None: not quantized
    quantization: Quantization | None = None

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.num_heads // self.num_kv_heads

    def window(self, layer: int) -> int:
        """KV tokens layer ``layer`` attends to at most (0: all)."""
        return self.windows[layer] if self.windows else 0

    def is_moe(self, layer: int) -> bool:
        return self.experts is not None and (not self.moe_layers or layer in self.moe_layers)

    @property
    def attention_weights(self) -> int:
        """Weights of one layer's attention (projections, biases, sinks; its q/k norms are norms)."""
        h, hd, nh, nkv = self.hidden_size, self.head_dim, self.num_heads, self.num_kv_heads
        qkv = (nh + 2 * nkv) * hd
        out = h * qkv + nh * hd * h
        out += qkv * self.qkv_bias + h * self.o_bias + nh * self.attention_sinks
        return out

    def ffn_weights(self, layer: int, active: bool = False) -> tuple[int, int]:
        """(FFN or expert weights, router weights) of one layer; ``active``: only the experts one
        token runs."""
        h = self.hidden_size
        if not self.is_moe(layer):
            return _mlp(h, self.ffn_size, self.gated_ffn, self.mlp_bias), 0
        e = self.experts
        experts = (e.per_token if active else e.count) * _mlp(h, e.ffn_size, True, e.expert_bias)
        shared = _mlp(h, e.shared_ffn_size, True, False) if e.shared_ffn_size else 0
        router = h * e.count + e.count * e.router_bias + h * e.shared_gate
        return experts + shared, router

    def norms_per_layer(self) -> int:
        return 4 if self.post_norms else 2

    def weights_by_kind(self, active: bool = False) -> dict[str, int]:
        """Weights per ``WEIGHT_KINDS`` entry (``active``: per token, experts not chosen left out).
        An LM head tied to the embedding is counted once, as the embedding."""
        h, per_norm = self.hidden_size, 2 if self.norm == "layer" else 1
        ffn = router = 0
        for layer in range(self.num_layers):
            f, r = self.ffn_weights(layer, active)
            ffn, router = ffn + f, router + r
        embedding = (self.vocab_size + self.positions + self.token_types) * h
        norms = (self.num_layers * self.norms_per_layer() + 1) * h * per_norm  # + the final (or embedding) norm
        norms += self.num_layers * 2 * self.head_dim * self.qk_norm
        head = 0 if self.encoder or self.tie_word_embeddings else self.vocab_size * h
        pooler = (h * h + h) if self.pooler else 0
        return {"embedding": embedding, "lm_head": head, "attention": self.num_layers * self.attention_weights,
                "ffn": ffn + pooler, "router": router, "norm": norms}

    @property
    def params(self) -> int:
        return sum(self.weights_by_kind().values())

    @property
    def active_params(self) -> int:
        """Weights one token runs through (mixture of experts: only its chosen experts)."""
        return sum(self.weights_by_kind(active=True).values())

    @property
    def layer_params(self) -> int:
        """Weights of layer 0 (norms included)."""
        f, r = self.ffn_weights(0)
        return self.attention_weights + f + r + self.norms_per_layer() * self.hidden_size * (
            2 if self.norm == "layer" else 1)

    def stored_precision(self) -> "Precision":
        """The precision the checkpoint stores its weights in (``quantization``), else ``Precision()``."""
        return self.quantization.precision() if self.quantization else Precision()

    def validate(self) -> "ModelConfig":
        p = Problems(f"model {self.name}")
        limits = {"hidden_size": 2**20, "num_layers": 4096, "num_heads": 4096, "num_kv_heads": 4096,
                  "head_dim": 2**14, "ffn_size": 2**22, "vocab_size": 2**24}
        ok = all([p.number(HF_KEYS.get(f, f), getattr(self, f), integer=True, lo=1, hi=most)
                  for f, most in limits.items()])
        if ok:
            p.check(self.num_heads % self.num_kv_heads == 0, "num_attention_heads", self.num_heads,
                    f"must be a multiple of num_key_value_heads ({self.num_kv_heads}): grouped-query attention "
                    "shares each KV head among a whole number of query heads")
            p.check(not self.windows or len(self.windows) == self.num_layers, "windows", len(self.windows),
                    f"one window per layer ({self.num_layers})")
            for i, w in enumerate(self.windows):
                p.number(f"windows[{i}]", w, integer=True, lo=0, hi=2**24, unit="tokens (0: global)")
            for i in self.moe_layers:
                p.number("moe_layers", i, integer=True, lo=0, hi=self.num_layers - 1)
        p.check(self.norm in NORMS, "norm", self.norm, f"one of {NORMS}")
        p.check(self.activation in ACTIVATIONS, "activation", self.activation, f"one of {ACTIVATIONS}")
        if self.experts is not None:
            self.experts.problems(p)
        p.raise_if_any()
        return self


def _mlp(h: int, f: int, gated: bool, bias: bool) -> int:
    """Weights of one FFN: gate, up and down (up and down when not gated), biases if any."""
    return (3 if gated else 2) * h * f + bias * ((2 if gated else 1) * f + h)


WEIGHT_DTYPES = ("int4", "mxfp4", "int8", "fp8", "bf16", "fp16", "fp32")
# stored bits per weight beyond the element itself: one shared 8-bit exponent per 32 (OCP MX)
_MX_BLOCK = 32


@dataclass(frozen=True)
class Precision:
    """Storage precisions. int4 weights carry one ``scale_dtype`` scale per ``group_size`` weights.

    ``weights`` is every weight tensor's precision unless a tensor kind says otherwise
    (``embedding``, ``lm_head``, ``attention``, ``ffn`` (experts included), ``router``): quantized
    checkpoints usually keep embeddings and the LM head wider. ``measured`` holds bytes per weight
    read from a real checkpoint's header (``fastsim.llm.checkpoint``), which win over dtypes.
    """

    weights: str = "int4"
    activations: str = "bf16"
    kv: str = "bf16"
    group_size: int = 128
    scale_dtype: str = "bf16"
    # zero-value compression of weight and KV streams, stored / compressed bytes (measure it on real
    # tensors: fastsim study compression). Compressed data stays compressed in DDR, on the streams
    # and in core memory, and is expanded at the core's load (AM020 Sparsity); the expansion is
    # assumed free (compressed-load intrinsics).
    weight_compression: float = 1.0
    kv_compression: float = 1.0
    embedding: str | None = None
    lm_head: str | None = None
    attention: str | None = None
    ffn: str | None = None
    router: str | None = None
    measured: tuple[tuple[str, float], ...] = ()  # (weight kind, bytes per weight) from a checkpoint

    def validate(self) -> "Precision":
        p = Problems("precision")
        p.check(self.weights in WEIGHT_DTYPES, "weights", self.weights, f"one of {', '.join(WEIGHT_DTYPES)}")
        for kind in ("embedding", "lm_head", "attention", "ffn", "router"):
            v = getattr(self, kind)
            p.check(v is None or v in WEIGHT_DTYPES, kind, v, f"one of {', '.join(WEIGHT_DTYPES)} (or unset: weights)")
        p.check(self.activations in ("bf16", "int8"), "activations", self.activations, "bf16 or int8")
        p.check(self.kv in ("bf16", "int8"), "kv", self.kv, "bf16 or int8")
        p.number("group_size", self.group_size, integer=True, lo=1, hi=2**20)
        for f in ("weight_compression", "kv_compression"):
            v = getattr(self, f)
            p.check(isinstance(v, (int, float)) and 1.0 <= v <= 64.0, f, v,
                    "must be in 1..64 (stored bytes / compressed bytes)")
        for kind, b in self.measured:
            p.check(kind in WEIGHT_KINDS, "measured", kind, f"a weight kind: {', '.join(WEIGHT_KINDS)}")
            p.number(f"measured[{kind}]", b, lo=0, lo_open=True, hi=8, unit="bytes per weight")
        p.raise_if_any()
        return self

    def dtype_of(self, kind: str) -> str:
        """The storage dtype of a weight kind (norms stay bf16)."""
        if kind == "norm":
            return "bf16"
        return getattr(self, kind, None) or self.weights

    def bytes_of(self, kind: str) -> float:
        """Bytes per weight of a kind, scales included (measured when a checkpoint said so)."""
        measured = dict(self.measured)
        if kind in measured:
            return measured[kind] / self.weight_compression
        return _dtype_bytes(self.dtype_of(kind), self.group_size, self.scale_dtype) / self.weight_compression

    @property
    def weight_bytes(self) -> float:
        """Bytes per weight of the bulk of the model (the FFN's)."""
        return self.bytes_of("ffn")

    @property
    def activation_bytes(self) -> float:
        return DTYPE_BYTES[self.activations]

    @property
    def kv_bytes(self) -> float:
        return DTYPE_BYTES[self.kv] / self.kv_compression

    @property
    def compute_dtype(self) -> str:
        """Matmuls run at bf16 unless both operands are int8."""
        return "int8" if self.weights == "int8" and self.activations == "int8" else "bf16"


def _dtype_bytes(dtype: str, group_size: int, scale_dtype: str) -> float:
    if dtype == "int4":
        return DTYPE_BYTES["int4"] + DTYPE_BYTES[scale_dtype] / group_size
    if dtype == "mxfp4":
        return 0.5 + 1 / _MX_BLOCK
    return {"fp8": 1.0, "fp16": 2.0, "fp32": 4.0}.get(dtype) or DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class Quantization:
    """How a quantized checkpoint stores its weights, read from ``quantization_config`` of its
    ``config.json`` (``fastsim.llm.families``): ``method`` and ``bits`` as written, the
    ``weights`` dtype fastsim models them as, int4's ``group_size``, and the kinds left unquantized
    (``modules_to_not_convert``) with the dtype they are stored in."""

    method: str
    bits: int
    weights: str
    group_size: int = 128
    kept: tuple[tuple[str, str], ...] = ()  # (weight kind, dtype) of kinds not quantized

    def precision(self, base: Precision = Precision()) -> Precision:
        """``base`` with this storage: weights, group size and the kept kinds' dtypes."""
        return replace(base, weights=self.weights, group_size=self.group_size, **dict(self.kept))

    def describe(self) -> str:
        """As a person says it: "gptq 4-bit, group 128 -> int4" or "mxfp4 (attention bf16, ...)"."""
        group = f", group {self.group_size}" if self.weights == "int4" else ""
        kept = f"; {', '.join(f'{k} {d}' for k, d in self.kept)} kept" if self.kept else ""
        return f"{self.method} {self.bits}-bit{group} -> {self.weights}{kept}"
