"""What one LLM simulation point is: model, regime, shapes, precision, mapping pins, fusion and
dispatch cuts (``LlmStudy``), with every field checked at once."""
from __future__ import annotations

from dataclasses import InitVar, dataclass, field, replace

from ..errors import ConfigError, Problems
from ..graph import OP_CLASSES
from ..mapping.layout import Layout, layout_of
from .parameters import study_checks
from .routing import Routing
from .transformer import REGIMES, VectorCosts, check_regime
from .model import ModelConfig, Precision
from .presets import get_model


@dataclass(frozen=True)
class LlmStudy:
    """Everything that defines one LLM simulation point."""

    model: str | ModelConfig = "llama-3.2-1b"
    regime: str = "decode"
    context: int = 4096
    prompt: int = 2048
    prefill_context: int = 0  # prefill: tokens already cached before the prompt (chunked prefill)
    batch: int = 1
    # None: the precision the model's checkpoint stores (config.json's quantization_config, e.g.
    # gpt-oss's mxfp4), else Precision(); a given ``weights`` wins over that storage (see __post_init__)
    precision: Precision | None = None
    dataflow: dict = field(default_factory=dict)  # op class or op name -> "ws" | "is" | "os"
    columns: dict = field(default_factory=dict)  # op class or op name -> columns it runs on
    datapath: dict = field(default_factory=dict)  # op class or op name -> MAC datapath (as built)
    tiles: dict = field(default_factory=dict)  # op class or op name -> (m, k, n) per kernel call
    l2: dict = field(default_factory=dict)  # op class or op name -> "", "a", "b" or "ab"
    rows: dict = field(default_factory=dict)  # op class or op name -> compute rows per column (as built)
    split: dict = field(default_factory=dict)  # op class or op name -> how M and N split (as built: 2dt)
    buffers: dict = field(default_factory=dict)  # op class or op name -> 1 single- or 2 double-buffered (as built)
    c_buffers: dict = field(default_factory=dict)  # op class or op name -> 1: C tile single-buffered (as built)
    k_panel: dict = field(default_factory=dict)  # op class or op name -> L1 K tiles per mem-tile buffer (as built)
    host: dict = field(default_factory=dict)  # op name or class -> seconds per instance on the host CPU
    cast_launch: dict = field(default_factory=dict)  # matmul op name or class -> true: f32 C, then a cast launch
    dequant_launch: dict = field(default_factory=dict)  # matmul op name or class -> true: bf16 weights from a launch
    codegen: dict = field(default_factory=dict)  # matmul op name or class -> external | direct (who wrote its kernel)
    residency: str = "streamed"  # or "static": weights preloaded once per dispatch (ws ops)
    cuts: tuple[int, ...] | None = None  # cut into dispatches after these layers; () one dispatch;
    # None: the greedy feasible cut
    fusion: str = "auto"  # auto (searched), none, groups (norm_qkv, flash_attention, ffn) or chain
    noop: tuple[str, ...] = ()  # op classes replaced by a data-only pass
    kernel_efficiency: float | None = None  # None: the arch's measured figure per datapath
    # how streamed tensors are shared among columns: auto = proportional for element-wise ops and
    # searched (equal or proportional) for matmuls; or pin equal / proportional everywhere
    stream_split: str = "auto"
    costs: VectorCosts | None = None  # None: the arch's vector-unit rates (Arch.vector_cycles_per_elem)
    causal_halving: bool = True
    row_major_ddr: bool = False  # tensors row-major in DDR, read in tile rows (an as-built fact)
    resident_programs: bool = False  # a dispatch is one resident program (an as-built fact)
    launches_reconfigure: bool = False  # each op a launch that reconfigures the array inline (an as-built fact)
    lm_head_last_only: bool = True
    routing: Routing = Routing()  # which experts tokens select (mixture-of-experts models)
    # candidates each matmul's mapping search simulates; None: until proven the best of its space
    search_budget: int | None = 3
    # how the host submits the pass's dispatches: "single" commands or one "chained" run list
    dispatch_commands: str = "single"
    # the CLI's and sweep specs' names for the storage precisions: LlmStudy(weights="int8", kv="int8")
    # is LlmStudy(precision=Precision(weights="int8", kv="int8")); not stored apart (see __post_init__)
    weights: InitVar[str | None] = None
    kv: InitVar[str | None] = None
    activations: InitVar[str | None] = None

    def __post_init__(self, weights, kv, activations):
        given = {k: v for k, v in (("weights", weights), ("kv", kv), ("activations", activations)) if v is not None}
        if self.precision is None:
            # a given weights dtype is a what-if of the whole model: the checkpoint's storage is not used
            stored = Precision() if "weights" in given else self._stored_precision()
            object.__setattr__(self, "precision", replace(stored, **given))
            return
        if not given:
            return
        if not isinstance(self.precision, Precision):
            return  # validate() reports the bad precision
        clash = [k for k in given if getattr(self.precision, k) != getattr(Precision(), k)]
        if clash:
            raise ConfigError([f"{k} = {given[k]!r} and precision.{k} = {getattr(self.precision, k)!r}: give it in "
                               "one place" for k in clash], "llm study")
        object.__setattr__(self, "precision", replace(self.precision, **given))

    def _stored_precision(self) -> Precision:
        """The model's stored precision; ``Precision()`` for a model that cannot be read (``validate``
        reports why)."""
        try:
            return self.model_config().stored_precision()
        except ConfigError:
            return Precision()

    @property
    def layout(self) -> Layout:
        """The study's layout pins as the one layout record (``mapping.layout``)."""
        return layout_of(self)

    def model_config(self) -> ModelConfig:
        return self.model if isinstance(self.model, ModelConfig) else get_model(self.model)

    def validate(self, model: ModelConfig) -> None:
        p = Problems("llm study")
        study_checks(p, self)  # the scalar fields, against their declarations (parameters.py)
        regime_ok = isinstance(self.regime, str) and self.regime in REGIMES
        if regime_ok:
            try:
                check_regime(model, self.regime)
            except ConfigError as e:
                p.items += e.problems
                regime_ok = False  # its tokens (a decode's context on an encoder) would be a second, confusing problem
        if isinstance(self.precision, Precision):
            _check_weight_kinds(p, self.precision, model)
            _check_kv(p, self.precision, model)
        if regime_ok and model.max_context and isinstance(self.context, int) and isinstance(self.prompt, int):
            tokens = (self.context + 1 if self.regime == "decode" else self.prefill_context + self.prompt)
            p.check(tokens <= model.max_context, "context" if self.regime == "decode" else "prompt", tokens,
                    f"{model.name} was trained for at most {model.max_context} positions (max_position_embeddings)")
        if isinstance(self.routing, Routing):
            try:
                self.routing.validate(model.experts, model.num_layers)
            except ConfigError as e:
                p.items += e.problems
            # a routing that cannot change the answer is refused, not ignored
            p.check(model.experts is not None or self.routing == Routing(), "routing", self.routing,
                    f"applies to mixture-of-experts models; {model.name} has none")
        else:
            p.add("routing", self.routing, "a Routing")
        self.layout.problems(p, model.num_layers, scalars=False)  # the one check of a layout
        if p.check(isinstance(self.noop, (tuple, list)), "noop", self.noop, "a list of op classes"):
            for c in self.noop:
                p.check(isinstance(c, str) and c in OP_CLASSES, "noop", c, f"one of {OP_CLASSES}")
        p.raise_if_any()


def _check_kv(p: Problems, precision: Precision, model: ModelConfig) -> None:
    """An encoder keeps no KV cache: a KV dtype or KV compression for it would change nothing."""
    if not model.encoder:
        return
    why = f"{model.name} is an encoder (bidirectional attention, no KV cache): nothing is stored at it"
    p.check(precision.kv == Precision().kv, "kv", precision.kv, why)
    p.check(precision.kv_compression == 1.0, "kv_compression", precision.kv_compression, why)


def _check_weight_kinds(p: Problems, precision: Precision, model: ModelConfig) -> None:
    """A precision for a weight kind the model does not have would change nothing: refused."""
    have = model.weights_by_kind()
    for kind in ("embedding", "lm_head", "attention", "ffn", "router"):
        if getattr(precision, kind) is not None and not have[kind]:
            why = ("an encoder has no LM head" if model.encoder and kind == "lm_head" else
                   "its LM head is tied to the embedding: set embedding" if kind == "lm_head" else
                   "it has no mixture of experts" if kind == "router" else f"it has no {kind} weights")
            p.add(f"precision.{kind}", getattr(precision, kind), f"{model.name}: {why}")
    for kind, _ in precision.measured:
        if kind in have and not have[kind] or kind == "norm":
            p.add(f"precision.measured[{kind}]", kind, f"{model.name} reads no {kind} weights at a measured size "
                  "(norms stay bf16; a tied LM head is the embedding)")
