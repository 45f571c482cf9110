"""Ops, their operands and the graph of producer edges between them.

A matmul op computes Y[m x n] = X[m x k] @ W[k x n]; a vector op reads ``x_inputs`` operands of
m x n elements and writes one; a conv op is a 2-D convolution (``conv`` holds its geometry; m, k, n
are those of the GEMM it equals in MACs: m = n*oh*ow output pixels, k = (c/groups)*r*s, n = output
channels); a transpose op turns a row-major m x n tensor into its n x m transpose, each element a
run of ``k`` contiguous elements (1: an element transpose; a head's row when ONNX moves heads).
``repeat`` identical instances run one after another: per attention
head and, where every sequence of a batch has its own operand (its KV cache), per sequence. The W
operand of attention is the KV cache, so KV bytes and attention MACs scale with batch while a
weight is read once per step for the whole batch (its rows, M, grow with batch instead).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..errors import ConfigError

# The op kinds this module's own code reads (MACs, a conv's geometry, a transpose's element sizes)
# and the front ends build. An op's kind is a string: which kinds are modelled is the mapper's to say
# (each kind's module of ``fastsim.mapping`` declares its mapper and traits; the evaluator refuses
# an op of a kind none declares), so a new kind needs no line here unless it does MACs.
MATMUL, VECTOR, CONV, TRANSPOSE = "matmul", "vector", "conv", "transpose"
MAC_KINDS = (MATMUL, CONV)  # kinds whose m x k x n are multiply-accumulates (``Op.macs``)
# what ``fastsim.graph`` exports
__all__ = ["CONV", "MAC_KINDS", "MATMUL", "OP_CLASSES", "TENSOR_KINDS", "TRANSPOSE", "VECTOR",
           "ConvGeometry", "Op", "OpGraph", "Operand"]

OP_CLASSES = ("embedding", "norm", "gemm", "rope", "kv", "attention", "softmax", "elementwise", "cast", "conv",
              "pool", "cast_launch", "dequant_launch")
TENSOR_KINDS = ("weights", "activations", "kv", "psum")  # what DDR traffic is attributed to
NONE = "none"  # an operand the op does not have (a vector op's W)


@dataclass(frozen=True)
class Operand:
    """What a tensor operand holds (a ``TENSOR_KINDS`` entry or "none") and its element size."""

    kind: str
    elem_bytes: float


NO_OPERAND = Operand(NONE, 0.0)


def conv_out(extent: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output extent of a convolution along one axis (as ONNX and PyTorch define it)."""
    return (extent + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@dataclass(frozen=True)
class ConvGeometry:
    """A 2-D convolution over an NCHW input: ``k`` output channels of ``r`` x ``s`` filters,
    ``groups`` as in ONNX and PyTorch (``groups == c``: depthwise)."""

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int = 1
    padding: int = 0
    dilation: int = 1
    groups: int = 1

    @property
    def oh(self) -> int:
        return conv_out(self.h, self.r, self.stride, self.padding, self.dilation)

    @property
    def ow(self) -> int:
        return conv_out(self.w, self.s, self.stride, self.padding, self.dilation)

    def gemm_extents(self) -> tuple[int, int, int]:
        """(m, k, n) of the GEMM with the same MACs: output pixels, MACs per output, channels."""
        return self.n * self.oh * self.ow, (self.c // max(1, self.groups)) * self.r * self.s, self.k


@dataclass(frozen=True)
class Op:
    """One op of a graph (see the module docstring). ``layer`` -1: outside the repeated layers."""

    name: str
    op_class: str
    layer: int
    kind: str
    m: int
    k: int
    n: int
    x: Operand
    w: Operand = NO_OPERAND
    y: Operand = Operand("activations", 2.0)
    x_inputs: int = 1
    vector_cycles_per_elem: float = 0.0
    cast_cycles_per_weight: float = 0.0
    macs_scale: float = 1.0  # e.g. causal attention computes about half its rectangle
    repeat: int = 1
    # its repeats read operands at addresses chosen at run time (a mixture-of-experts layer's
    # experts): each instance's tasks are pushed anew (``dispatch.repeat_instructions``), where
    # strided repeats (heads, sequences) are iterations of one task
    gathered: bool = False
    # core cycles per element for each rescale of a running output when the op runs flash-style
    # (an online softmax rescales once per block of keys; the evaluator divides by the block)
    online_rescale_cycles: float = 0.0
    # which weight tensor the op reads (the front end's kinds, e.g. "attention", "ffn"); "" none.
    # Reports only: ops differing in it alone have identical designs
    weight_kind: str = ""
    conv: ConvGeometry | None = None  # a conv op's geometry (kind CONV only)

    @property
    def macs(self) -> int:
        return int(self.m * self.k * self.n * self.macs_scale) * self.repeat if self.kind in MAC_KINDS else 0

    @property
    def shape_key(self) -> tuple:
        """Ops with equal keys have identical designs (simulated once)."""
        return (self.op_class, self.kind, self.m, self.k, self.n, self.x, self.w, self.y, self.x_inputs,
                self.vector_cycles_per_elem, self.cast_cycles_per_weight, self.macs_scale, self.online_rescale_cycles,
                self.conv)

    @property
    def streams_weights(self) -> bool:
        """A matmul whose W operand is a model weight (not the KV cache)."""
        return self.kind == MATMUL and self.w.kind == "weights"


@dataclass(frozen=True)
class OpGraph:
    """Ops in execution order with their producer edges. ``producers[i]``: the ops whose outputs
    op i reads as activations (K/V read from the cache are not edges: they live in DDR).
    ``batch`` sequences each process ``tokens`` tokens in this pass. ``chain_live_bytes_per_token``:
    activation bytes per token live at once between ops when a whole dispatch runs fused (the
    front end knows which intermediates stream through a ring instead)."""

    ops: tuple[Op, ...]
    producers: tuple[tuple[int, ...], ...]
    batch: int = 1
    tokens: int = 1
    chain_live_bytes_per_token: float = 0.0

    def __post_init__(self):
        problems = []
        if len(self.producers) != len(self.ops):
            problems.append(f"producers: {len(self.producers)} entries for {len(self.ops)} ops")
        for i, ps in enumerate(self.producers):
            problems += [f"producers[{i}] = {j}: must be an earlier op (0 <= j < {i})"
                         for j in ps if not 0 <= j < i]
        problems += [f"ops[{i}].kind = {op.kind!r}: an op kind's name (a non-empty string)"
                     for i, op in enumerate(self.ops) if not (isinstance(op.kind, str) and op.kind)]
        # every report, ablation and sweep groups ops by class: a class outside OP_CLASSES would be
        # dropped from their tables without a word
        problems += [f"ops[{i}].op_class = {op.op_class!r}: one of {OP_CLASSES}" for i, op in enumerate(self.ops)
                     if op.op_class not in OP_CLASSES]
        for i, op in enumerate(self.ops):
            if (op.kind == CONV) != (op.conv is not None):
                problems.append(f"ops[{i}].conv: a conv op (and only one) has a geometry")
            elif op.conv is not None and (op.m, op.k, op.n) != op.conv.gemm_extents():
                problems.append(f"ops[{i}] (m, k, n) = {(op.m, op.k, op.n)}: a conv op's must be its geometry's "
                                f"{op.conv.gemm_extents()}")
        problems += [f"ops[{i}] {op.name}: a transpose reads and writes elements of one size "
                     f"(x {op.x.elem_bytes:g} bytes, y {op.y.elem_bytes:g})" for i, op in enumerate(self.ops)
                     if op.kind == TRANSPOSE and op.x.elem_bytes != op.y.elem_bytes]
        if problems:
            raise ConfigError(problems, "op graph")

    @cached_property
    def consumers(self) -> tuple[tuple[int, ...], ...]:
        """Per op: the ops that read its output (made once: fusion asks for them on every placement)."""
        out = [[] for _ in self.ops]
        for i, ps in enumerate(self.producers):
            for j in ps:
                out[j].append(i)
        return tuple(tuple(c) for c in out)

    @property
    def token_rows(self) -> int:
        """Rows of an op that runs once over every token of the pass (a weight matmul's M)."""
        return self.batch * self.tokens

    @property
    def layers(self) -> list[int]:
        return [op.layer for op in self.ops]
