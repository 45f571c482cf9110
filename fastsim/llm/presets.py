"""Presets: the common sizes of each modelled family, by name.

Each preset is the model's public Hugging Face ``config.json``, stored in ``presets/models`` (its
repo is named in ``SOURCES``) and read by the same code as a user's file, so a preset and its
config cannot disagree.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConfigError, shown
from .families import from_dict, from_hf_config
from .model import ModelConfig

# preset name -> the Hugging Face repo whose config.json is stored as presets/models/<name>.json
SOURCES = {
    "llama-3.2-1b": "meta-llama/Llama-3.2-1B",
    "llama-3.2-3b": "meta-llama/Llama-3.2-3B",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B",
    "qwen2.5-0.5b": "Qwen/Qwen2.5-0.5B",
    "qwen2.5-7b": "Qwen/Qwen2.5-7B",
    "qwen3-0.6b": "Qwen/Qwen3-0.6B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "gemma-2-2b": "google/gemma-2-2b",
    "gemma-3-1b": "google/gemma-3-1b-it",
    "gemma-3-4b": "google/gemma-3-4b-it (its text model; the vision tower is not simulated)",
    "phi-3.5-mini": "microsoft/Phi-3.5-mini-instruct",
    "mistral-7b-v0.1": "mistralai/Mistral-7B-v0.1",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "qwen1.5-moe-a2.7b": "Qwen/Qwen1.5-MoE-A2.7B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "bert-base": "google-bert/bert-base-uncased",
}
CONFIG_DIR = Path(__file__).resolve().parent.parent / "presets" / "models"


def preset_config(name: str) -> dict:
    """The stored ``config.json`` of a preset."""
    return json.loads((CONFIG_DIR / f"{name}.json").read_text())


MODELS = {name: from_dict(preset_config(name), name, f"preset {name} ({source})") for name, source in SOURCES.items()}


def get_model(name_or_path) -> ModelConfig:
    """A preset by name, or the model a ``config.json`` (or a folder holding one) describes."""
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
