"""What one LLM simulation point is: model, regime, shapes, precision, mapping pins, fusion and
dispatch cuts (``LlmStudy``), with every field checked at once."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Problems
from ..mapping.fusion import GROUPS, MODES as FUSION_MODES, PIPELINE_STAGES, valid_fusion
from ..mapping.space import DATAFLOWS
from ..workloads.paths import STREAM_SPLITS
from .graph import OP_CLASSES, VectorCosts
from .model import ModelConfig, Precision, get_model


@dataclass(frozen=True)
class LlmStudy:
    """Everything that defines one LLM simulation point."""

    model: str | ModelConfig = "llama-3.2-1b"
    regime: str = "decode"
    context: int = 4096
    prompt: int = 2048
    prefill_context: int = 0  # prefill: tokens already cached before the prompt (chunked prefill)
    batch: int = 1
    precision: Precision = Precision()
    dataflow: dict = field(default_factory=dict)  # op class or op name -> "ws" | "is" | "os"
    columns: dict = field(default_factory=dict)  # op class or op name -> columns it runs on
    residency: str = "streamed"  # or "static": weights preloaded once per dispatch (ws ops)
    cuts: tuple[int, ...] | None = None  # cut into dispatches after these layers; () one dispatch;
    # None: the greedy feasible cut
    fusion: str = "auto"  # auto (searched), none, groups (norm_qkv, flash_attention, ffn) or chain
    noop: tuple[str, ...] = ()  # op classes replaced by a data-only pass
    kernel_efficiency: float | None = None  # None: the arch's measured figure per datapath
    # how streamed tensors are shared among columns: auto = proportional for element-wise ops and
    # searched (equal or proportional) for matmuls; or pin equal / proportional everywhere
    stream_split: str = "auto"
    costs: VectorCosts = VectorCosts()
    causal_halving: bool = True
    lm_head_last_only: bool = True

    def model_config(self) -> ModelConfig:
        return self.model if isinstance(self.model, ModelConfig) else get_model(self.model)

    def validate(self, model: ModelConfig) -> None:
        p = Problems("llm study")
        p.check(self.regime in ("decode", "prefill"), "regime", self.regime, "decode or prefill")
        p.check(self.context >= 0, "context", self.context, "must be >= 0 tokens")
        p.check(self.prompt >= 1, "prompt", self.prompt, "must be >= 1 token")
        p.check(self.prefill_context >= 0, "prefill_context", self.prefill_context, "must be >= 0 tokens")
        p.check(self.batch >= 1, "batch", self.batch, "must be >= 1")
        p.check(self.residency in ("streamed", "static"), "residency", self.residency, "streamed or static")
        for key, value in self.dataflow.items():
            p.check(value in DATAFLOWS, f"dataflow[{key}]", value, f"one of {DATAFLOWS}")
        for key, value in self.columns.items():
            p.check(isinstance(value, int) and 1 <= value, f"columns[{key}]", value, "must be >= 1")
        for c in self.noop:
            p.check(c in OP_CLASSES, "noop", c, f"one of {OP_CLASSES}")
        for c in self.cuts or ():
            p.check(0 <= c < model.num_layers - 1, "cuts", c, f"layer indices in 0..{model.num_layers - 2}")
        p.check(self.kernel_efficiency is None or 0 < self.kernel_efficiency <= 1, "kernel_efficiency",
                self.kernel_efficiency, "in (0, 1], or unset for the arch's figure")
        p.check(self.stream_split in ("auto", *STREAM_SPLITS), "stream_split", self.stream_split,
                f"auto or one of {STREAM_SPLITS}")
        p.check(valid_fusion(self.fusion), "fusion", self.fusion,
                f"one of {FUSION_MODES} or group kinds joined by + ({'+'.join(GROUPS)}), "
                f"KIND:pipeline for {', '.join(PIPELINE_STAGES)}")
        p.raise_if_any()
