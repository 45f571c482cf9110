"""Transformer LLM workloads (prefill and decode) mapped onto the engine."""
from .model import MODELS, ModelConfig, Precision, from_hf_config, get_model
from .run import simulate_llm
from .study import LlmStudy
