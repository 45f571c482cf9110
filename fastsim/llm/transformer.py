"""The transformer front end: the op graph of one forward pass of any modelled family (every op
with its class, shapes, operands and producer edges).

Conventions (also parameters): decode processes one new token per sequence against ``context``
cached tokens; prefill processes ``prompt`` tokens with causal attention, whose score and
attention-times-V MACs cover only the keys each query sees (``causal_halving``); the LM head runs
on the last token only in prefill (``lm_head_last_only``); encode (encoder models) runs ``prompt``
tokens with bidirectional attention and no KV cache. Attention streams each sequence's own KV
cache from DDR as its W operand, one instance per (sequence, KV head) in prefill and per sequence
in decode, so KV read traffic grows with context and with batch; a sliding-window layer keeps and
reads at most its window (a ring buffer). Weights are read once per pass for the whole batch.

Biases of linear layers and attention-sink logits are counted in the weights but their adds are
not simulated (at most one element per output element, against k MACs).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..arch import NPU1, NPU2, PRESETS
from ..errors import ConfigError
from ..graph import MATMUL, VECTOR, Op, Operand
from ..graph.ops import NO_OPERAND
from ..kernel_model import vector as V
from ..kernel_model.vector import VectorCore, core_of
from ..mapping.vector import core_tile
from .model import ModelConfig, Precision
from .routing import Routing

REGIMES = ("decode", "prefill", "encode")


@dataclass(frozen=True)
class VectorCosts:
    """Core cycles of the vector ops. The fields are per-element constants (``Arch.vector_cycles_per_elem``);
    where the arch's core generation has a kernel model (``fastsim.kernel_model``: AIE-ML, AIE-ML v2)
    the methods below price each op from its shape instead, except the kinds in ``fixed`` (a
    user's own ``vector_cycles_per_elem`` entries, which win). A study may set its own table
    (``core`` None: the constants alone, as before the kernel model)."""

    norm: float
    layer_norm: float
    elementwise: float
    rope: float
    softmax: float
    silu_mul: float
    gelu: float
    softcap: float
    kv: float  # KV append: a copy (quantize when the KV dtype is narrower)
    dequant_int4: float  # per weight element, int4 -> bf16 (with scale)
    dequant_int8: float
    core: VectorCore | None = None  # the kernel model's core; None: the constants above
    fixed: tuple[str, ...] = ()  # kinds held to their constant (the user overrode them)
    cores: int = 32  # compute tiles a vector op spreads over (the per-core tile a call sees)

    def __post_init__(self):
        if isinstance(self.core, dict):  # read back from a study's JSON
            object.__setattr__(self, "core", VectorCore(**self.core))
        object.__setattr__(self, "fixed", tuple(self.fixed))

    @classmethod
    def of(cls, arch) -> "VectorCosts":
        """The arch's costs: its kernel model where it has one, its table for the kinds a user set."""
        table = {f: arch.vector_cost(f) for f in KINDS}
        core = core_of(arch)
        return cls(**table, core=core, fixed=_overridden(arch) if core else (),
                   cores=arch.columns * arch.compute_rows)

    def modelled(self, kind: str) -> bool:
        return self.core is not None and kind not in self.fixed

    def norm_cost(self, kind: str, cols: int) -> float:
        """Per element of a norm over rows of ``cols`` (``kind`` rms or layer; one row per call)."""
        field = "layer_norm" if kind == "layer" else "norm"
        if not self.modelled(field):
            return getattr(self, field)
        return V.norm_cycles(self.core, 1, cols, "layer" if kind == "layer" else "rms") / cols

    def softmax_cost(self, cols: int) -> float:
        """Per element of a plain softmax over rows of ``cols`` (one row per call)."""
        if not self.modelled("softmax"):
            return self.softmax
        return V.softmax_cycles(self.core, 1, max(1, cols)) / max(1, cols)

    def tile_cost(self, kind: str, m: int, n: int, inputs: int = 1, out_bytes: float = 2.0) -> float:
        """Per element of an op priced per call of the tile each core gets (mapping.vector's
        tiling over every core): elementwise, rope, kv (``out_bytes`` per cached element),
        silu_mul, gelu, softcap."""
        if not self.modelled(kind):
            return getattr(self, kind)
        rows, cols = core_tile(m, n, inputs, self.cores)
        c = self.core
        call = {"elementwise": lambda: V.elementwise_cycles(c, rows * cols, inputs=max(1, inputs)),
                "rope": lambda: V.rope_cycles(c, rows, cols),
                "kv": lambda: V.kv_append_cycles(c, rows * cols, out_bytes),
                "silu_mul": lambda: V.activation_cycles(c, rows * cols, "silu_mul"),
                "gelu": lambda: V.activation_cycles(c, rows * cols, "gelu"),
                "softcap": lambda: V.activation_cycles(c, rows * cols, "tanh")}.get(kind)
        if call is None:
            raise ConfigError([f"vector op kind = {kind!r}: priced per tile are elementwise, rope, kv, "
                               "silu_mul, gelu, softcap"], "kernel model")
        return call() / (rows * cols)

    def dequant_cost(self, bits: int) -> float:
        """Per weight element converted to bf16 on the core, one call per weight tile."""
        field = "dequant_int4" if bits == 4 else "dequant_int8"
        if not self.modelled(field):
            return getattr(self, field)
        return V.dequant_cycles(self.core, DEQUANT_CALL_ELEMS, bits) / DEQUANT_CALL_ELEMS


KINDS = ("norm", "layer_norm", "elementwise", "rope", "softmax", "silu_mul", "gelu", "softcap", "kv",
         "dequant_int4", "dequant_int8")
# weights one dequantization call converts: one 64 x 64 weight tile (assumption: the 64x64x64
# tiles of mlir-aie's matmul examples)
DEQUANT_CALL_ELEMS = 64 * 64


def _overridden(arch) -> tuple[str, ...]:
    """Kinds whose per-element constant differs from the preset's of the same name (or, for a
    renamed array, of its generation): a user set them, and they win over the kernel model."""
    ref = PRESETS.get(arch.name) or {"aie2": NPU1, "aie2p": NPU2}.get(getattr(arch, "generation", ""), NPU2)
    mine, theirs = arch.vector_cycles_per_elem, ref.vector_cycles_per_elem
    return tuple(k for k in KINDS if k in theirs and mine.get(k) != theirs[k])


@dataclass(frozen=True)
class Pass:
    """One forward pass: regime and its shapes, and the modelling conventions of the module
    docstring."""

    regime: str = "decode"
    batch: int = 1
    context: int = 4096
    prompt: int = 2048
    prefill_context: int = 0
    costs: VectorCosts | None = None  # None: the npu2 preset's (simulate_llm passes the arch's)
    causal_halving: bool = True
    lm_head_last_only: bool = True
    routing: Routing = Routing()

    @property
    def tokens(self) -> int:
        """New tokens per sequence."""
        return 1 if self.regime == "decode" else self.prompt


class Builder:
    """Appends ops with their producers named by (op name, layer); names are local to the
    builder, the graph holds indices."""

    def __init__(self, model: ModelConfig, precision: Precision, run: Pass):
        self.model, self.precision, self.run = model, precision, run
        self.ops, self.producers, self.index = [], [], {}
        self.operands = {}  # each distinct operand once (``add``)
        self.rows = run.batch * run.tokens
        self.a = precision.activation_bytes
        if run.costs is None:
            self.costs = VectorCosts.of(NPU2)
        else:
            self.costs = run.costs

    def add(self, op: Op, *sources) -> None:
        """Append ``op`` reading the outputs of ``sources`` ((name, layer) pairs). Its operands are
        made the graph's one object of each value: every layer repeats the same op instances, whose
        keys (``Placed.key``) are then compared by identity, not field by field."""
        same = tuple(self.operands.setdefault(o, o) for o in (op.x, op.w, op.y))
        if any(a is not b for a, b in zip(same, (op.x, op.w, op.y))):
            op = replace(op, x=same[0], w=same[1], y=same[2])
        self.producers.append(tuple(self.index[s] for s in sources))
        self.index[(op.name, op.layer)] = len(self.ops)
        self.ops.append(op)

    def gemm(self, name, m, k, n, layer, weight_kind, repeat=1, stored_as=None, gathered=False) -> Op:
        """A matmul over a weight of ``weight_kind``, stored at the precision of ``stored_as``
        (a tied LM head is the embedding table); ``gathered``: its repeats are experts."""
        a = Operand("activations", self.a)
        w = Operand("weights", self.precision.bytes_of(stored_as or weight_kind))
        return Op(name, "gemm", layer, MATMUL, m, k, n, a, w, a, repeat=repeat, gathered=gathered,
                  cast_cycles_per_weight=_cast_cycles(self.precision, stored_as or weight_kind, self.costs),
                  weight_kind=weight_kind)

    def vector(self, name, op_class, m, n, layer, cost, *, inputs=1, y=None, rescale=0.0) -> Op:
        act = Operand("activations", self.a)
        return Op(name, op_class, layer, VECTOR, m, 1, n, act, NO_OPERAND, y or act, inputs, cost,
                  online_rescale_cycles=rescale)

    def norm(self, name, layer, source, m=None) -> None:
        cost = self.costs.norm_cost(self.model.norm, self.model.hidden_size)
        self.add(self.vector(name, "norm", m or self.rows, self.model.hidden_size, layer, cost), source)

    def activation(self, name, m, n, layer, gated, *sources) -> None:
        """The FFN's activation (times the gate's other half when gated). The measured SiLU rate
        includes its multiply; a gated GELU (Gemma) adds an element-wise multiply to GELU's."""
        c = self.costs
        if self.model.activation in ("silu", "swiglu_clamped"):
            cost = c.tile_cost("silu_mul", m, n, 2)
        else:
            cost = c.tile_cost("gelu", m, n) + (c.tile_cost("elementwise", m, n, 2) if gated else 0.0)
        self.add(self.vector(name, "elementwise", m, n, layer, cost, inputs=2 if gated else 1), *sources)


def check_regime(model: ModelConfig, regime: str) -> None:
    allowed = ("encode",) if model.encoder else ("decode", "prefill")
    if regime not in allowed:
        kind = "an encoder (bidirectional, no KV cache)" if model.encoder else "a causal decoder"
        raise ConfigError([f"regime = {regime!r}: {model.name} is {kind}; allowed {' or '.join(allowed)}"], "llm study")


def _cast_cycles(precision: Precision, kind: str, costs: VectorCosts) -> float:
    """Dequantization cycles per weight element on the core (none when computing in int8 or when
    the weight is already the compute dtype)."""
    dtype = precision.dtype_of(kind)
    if precision.compute_dtype == "int8" and dtype == "int8":
        return 0.0
    bits = {"int4": 4, "mxfp4": 4, "int8": 8, "fp8": 8}.get(dtype)
    return costs.dequant_cost(bits) if bits else 0.0


def kv_bytes_per_token(model: ModelConfig, precision: Precision) -> float:
    """K and V of one token over all layers: 2 * layers * KV heads * head_dim * bytes (0 for an
    encoder, which keeps no cache)."""
    if model.encoder:
        return 0.0
    return 2 * model.num_layers * model.num_kv_heads * model.head_dim * precision.kv_bytes


def kv_cache_bytes(model: ModelConfig, precision: Precision, context: int) -> float:
    """Bytes of one sequence's KV cache at ``context`` tokens: sliding-window layers keep at most
    their window."""
    if model.encoder:
        return 0.0
    per_layer = 2 * model.num_kv_heads * model.head_dim * precision.kv_bytes
    return sum(per_layer * (min(context, w) if w else context) for w in
               (model.window(i) for i in range(model.num_layers)))
