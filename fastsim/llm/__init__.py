"""Transformer LLM workloads (prefill and decode) mapped onto the engine."""
from .families import from_hf_config
from .model import ModelConfig, Precision
from .presets import MODELS, get_model
from .run import simulate_llm
from .study import LlmStudy
