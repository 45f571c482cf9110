"""Decoder-only transformer descriptions (grouped-query attention) and their precisions."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..dtypes import DTYPE_BYTES
from ..errors import ConfigError, Problems, shown


@dataclass(frozen=True)
class ModelConfig:
    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    tie_word_embeddings: bool = False

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.num_heads // self.num_kv_heads

    @property
    def layer_params(self) -> int:
        h, hd = self.hidden_size, self.head_dim
        attn = h * self.num_heads * hd + 2 * h * self.num_kv_heads * hd + self.num_heads * hd * h
        return attn + 3 * h * self.ffn_size + 2 * h

    @property
    def params(self) -> int:
        embed = self.vocab_size * self.hidden_size
        head = 0 if self.tie_word_embeddings else embed
        return self.num_layers * self.layer_params + embed + head + self.hidden_size

    def validate(self) -> "ModelConfig":
        p = Problems(f"model {self.name}")
        limits = {"hidden_size": 2**20, "num_layers": 4096, "num_heads": 4096, "num_kv_heads": 4096,
                  "head_dim": 2**14, "ffn_size": 2**22, "vocab_size": 2**24}
        ok = all([p.number(f, getattr(self, f), integer=True, lo=1, hi=most) for f, most in limits.items()])
        if ok:
            p.check(self.num_heads % self.num_kv_heads == 0, "num_heads", self.num_heads,
                    f"must be a multiple of num_kv_heads ({self.num_kv_heads})")
        p.raise_if_any()
        return self


# Values from each model's Hugging Face config.json (meta-llama/Llama-3.2-1B, -3B, Llama-3.1-8B).
MODELS = {
    "llama-3.2-1b": ModelConfig("llama-3.2-1b", 2048, 16, 32, 8, 64, 8192, 128256, True),
    "llama-3.2-3b": ModelConfig("llama-3.2-3b", 3072, 28, 24, 8, 128, 8192, 128256, True),
    "llama-3.1-8b": ModelConfig("llama-3.1-8b", 4096, 32, 32, 8, 128, 14336, 128256, False),
}


def from_hf_config(path: str | Path) -> ModelConfig:
    """Read a Hugging Face ``config.json`` (Llama-style keys)."""
    path = Path(path)
    try:
        cfg = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError([f"{path}: not a readable JSON config ({e})"], "model config")
    if not isinstance(cfg, dict):
        raise ConfigError([f"{path}: must hold a JSON object"], "model config")
    p = Problems(f"{path}")
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"):
        if p.check(key in cfg, key, "missing", "required key of a Llama-style config.json"):
            p.number(key, cfg[key], integer=True, lo=1)
    for key in ("num_key_value_heads", "head_dim"):
        if cfg.get(key) is not None:
            p.number(key, cfg[key], integer=True, lo=1)
    p.raise_if_any()
    heads = cfg["num_attention_heads"]
    return ModelConfig(
        name=str(cfg.get("_name_or_path") or path.parent.name or path.stem),
        hidden_size=cfg["hidden_size"], num_layers=cfg["num_hidden_layers"], num_heads=heads,
        num_kv_heads=cfg.get("num_key_value_heads", heads),
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads,
        ffn_size=cfg["intermediate_size"], vocab_size=cfg["vocab_size"],
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
    ).validate()


def get_model(name_or_path: str) -> ModelConfig:
    if not isinstance(name_or_path, (str, Path)):
        raise ConfigError([f"model = {shown(name_or_path)}: a preset name or a config.json path"], "model")
    if name_or_path in MODELS:
        return MODELS[name_or_path]
    path = Path(name_or_path)
    if path.is_dir():
        path = path / "config.json"
    if path.exists():
        return from_hf_config(path)
    raise ConfigError([f"model {shown(name_or_path)}: not a preset ({', '.join(MODELS)}) and no such config.json"],
                      "model")


@dataclass(frozen=True)
class Precision:
    """Storage precisions. int4 weights carry one ``scale_dtype`` scale per ``group_size`` weights."""

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

    def validate(self) -> "Precision":
        p = Problems("precision")
        p.check(self.weights in ("int4", "int8", "bf16"), "weights", self.weights, "int4, int8 or bf16")
        p.check(self.activations in ("bf16", "int8"), "activations", self.activations, "bf16 or int8")
        p.check(self.kv in ("bf16", "int8"), "kv", self.kv, "bf16 or int8")
        p.number("group_size", self.group_size, integer=True, lo=1, hi=2**20)
        for f in ("weight_compression", "kv_compression"):
            v = getattr(self, f)
            p.check(isinstance(v, (int, float)) and 1.0 <= v <= 64.0, f, v,
                    "must be in 1..64 (stored bytes / compressed bytes)")
        p.raise_if_any()
        return self

    @property
    def weight_bytes(self) -> float:
        """Bytes per weight, group scales included."""
        b = DTYPE_BYTES[self.weights]
        if self.weights == "int4":
            b += DTYPE_BYTES[self.scale_dtype] / self.group_size
        return b / self.weight_compression

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
