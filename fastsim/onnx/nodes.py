"""How each ONNX node type becomes ops (``docs/onnx.md`` states every rule and its assumptions).

A handler reads a node's tensors through the builder (``Lowering``): their shapes, and what each
name stands for on the array (``Source``: the ops that wrote it, its bytes per element, whether it
is a constant). It appends the node's ops, or none (views, BatchNormalization folded into its
conv, Q/DQ), and says what its outputs stand for.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ..graph import CONV, MATMUL, TRANSPOSE, VECTOR, ConvGeometry, Op, Operand
from ..errors import ConfigError, shown
from ..graph.ops import NO_OPERAND
from ..mapping.transpose import Transpose
from .read import ELEM_BYTES


class NodeProblem(Exception):
    """A node fastsim cannot lower as it stands (the message says why)."""


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _text(a: dict, name: str, default: str) -> str:
    """A string attribute as text (ONNX stores it as bytes, which need not be UTF-8)."""
    value = a.get(name, default)
    try:
        return value.decode() if isinstance(value, bytes) else str(value)
    except UnicodeDecodeError:
        raise NodeProblem(f"{name} = {shown(value)}: must be UTF-8 text") from None


def _rows(shape: tuple[int, ...]) -> tuple[int, int]:
    """(m, n) of an element-wise op over a tensor: an NCHW tensor as NHWC image rows (m = N*H,
    n = W*C), otherwise the last axis as the row."""
    if len(shape) == 4:
        return shape[0] * shape[2], shape[3] * shape[1]
    n = shape[-1] if shape else 1
    return math.prod(shape) // max(1, n), n


def conv(b, node, x: int = 0, w: int = 1, y_bytes: float | None = None) -> None:
    """Conv (and QLinearConv, ConvInteger through ``x``, ``w`` and ``y_bytes``) as a CONV op."""
    xs, ws = b.shape(node.input[x]), b.shape(node.input[w])
    if len(xs) != 4 or len(ws) != 4:
        raise NodeProblem(f"input of rank {len(xs)}, weight of rank {len(ws)}: fastsim's conv is 2-D (NCHW)")
    a = _attrs(node)
    strides, dil, group = a.get("strides", [1, 1]), a.get("dilations", [1, 1]), a.get("group", 1)
    problems = _conv_attr_problems(a, xs, ws)
    if problems:  # before the output's shape: inference leaves none for a conv it cannot size
        raise NodeProblem("; ".join(problems))
    ys = b.shape(node.output[0])
    pads = _pads(a, xs[2:], ws[2:], strides, dil)
    problems = [f"{what} = {v}: fastsim's conv takes one {what[:-1]} for both axes"
                for what, v in (("strides", strides), ("dilations", dil)) if len(set(v)) != 1]
    if len(set(pads)) != 1:
        problems.append(f"pads = {pads}: fastsim's conv takes symmetric padding, equal on both axes")
    if problems:
        raise NodeProblem("; ".join(problems))
    g = ConvGeometry(xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], strides[0], pads[0], dil[0], group)
    if (xs[0], ws[0], g.oh, g.ow) != tuple(ys):
        raise NodeProblem(f"output shape {list(ys)}: the geometry gives {[xs[0], ws[0], g.oh, g.ow]}")
    m, k, n = g.gemm_extents()
    op = Op(b.name(node), "conv", b.layer, CONV, m, k, n, b.operand(node.input[x]),
            Operand("weights", b.source(node.input[w]).elem_bytes),
            Operand("activations", y_bytes or b.out_bytes(node)), conv=g)
    b.add(node, op, node.input[x], node.input[w])


def _conv_attr_problems(a: dict, xs, ws) -> list[str]:
    """What is wrong with a 2-D conv's attributes, each named with its value and what ONNX allows:
    ``group`` an integer >= 1 that divides the input's and output's channels (the weight holds C /
    group input channels), ``strides`` and ``dilations`` two integers >= 1, ``pads`` four integers
    >= 0, ``kernel_shape`` (if given) the weight's spatial shape."""
    def ints(v, n, lo):
        return isinstance(v, list) and len(v) == n and all(isinstance(i, int) and i >= lo for i in v)

    problems = []
    group = a.get("group", 1)
    if not (isinstance(group, int) and group >= 1):
        problems.append(f"group = {shown(group)}: must be an integer >= 1")
    elif xs[1] != ws[1] * group or ws[0] % group:
        problems.append(f"group = {shown(group)}: must divide the input's {xs[1]} channels into groups of the "
                        f"weight's {ws[1]}, and its {ws[0]} output channels")
    for name, n, lo in (("strides", 2, 1), ("dilations", 2, 1), ("pads", 4, 0)):
        if name in a and not ints(a[name], n, lo):
            problems.append(f"{name} = {shown(a[name])}: must be {n} integers >= {lo}")
    if "kernel_shape" in a and list(a["kernel_shape"]) != list(ws[2:]):
        problems.append(f"kernel_shape = {shown(a['kernel_shape'])}: must be the weight's {list(ws[2:])}")
    return problems


def _pads(a: dict, hw, rs, strides, dil) -> list[int]:
    """[top, left, bottom, right] of a 2-D conv, ``auto_pad`` resolved as ONNX defines it."""
    auto = _text(a, "auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        total = [max(0, (-(-x // s) - 1) * s + (r - 1) * d + 1 - x) for x, r, s, d in zip(hw, rs, strides, dil)]
        first = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
        return first + [t - f for t, f in zip(total, first)]
    if auto == "VALID":
        return [0, 0, 0, 0]
    return list(a.get("pads", [0, 0, 0, 0]))


def matmul(b, node, x: int = 0, w: int = 1, y_bytes: float | None = None) -> None:
    """MatMul (and QLinearMatMul, MatMulInteger): a constant B is a weight (a batched A folds
    into M, the weight read once); two activations (attention's scores and context) are one
    instance per batch element (``repeat``)."""
    xs, ws, ys = b.shape(node.input[x]), b.shape(node.input[w]), b.shape(node.output[0])
    if len(xs) < 2 or len(ws) < 2:
        raise NodeProblem(f"inputs of rank {len(xs)} and {len(ws)}: fastsim's matmul needs rank >= 2")
    _matmul_op(b, node, node.input[x], node.input[w], xs[-2], xs[-1], ws[-1], xs, ws, ys, y_bytes)


def gemm(b, node) -> None:
    """Gemm: A (transA) times B (transB); the bias C and alpha, beta are not simulated."""
    a = _attrs(node)
    xs, ws, ys = b.shape(node.input[0]), b.shape(node.input[1]), b.shape(node.output[0])
    m, k = reversed(xs) if a.get("transA", 0) else xs
    n = ws[0] if a.get("transB", 0) else ws[1]
    _matmul_op(b, node, node.input[0], node.input[1], m, k, n, xs, ws, ys, None)


def _matmul_op(b, node, x: str, w: str, m: int, k: int, n: int, xs, ws, ys, y_bytes) -> None:
    if b.source(x).static:
        raise NodeProblem("a constant first input: fastsim reads B as the weight")
    weight = b.source(w).static
    batch = math.prod(ys[:-2])
    if len(ws) == 2:  # one B for every row: the batch joins M
        m, batch = math.prod(xs[:-1]), 1
    w_kind = "weights" if weight else "activations"
    op = Op(b.name(node), "gemm" if weight or len(ws) == 2 else "attention", b.layer, MATMUL, m, k, n,
            b.operand(x), Operand(w_kind, b.source(w).elem_bytes), Operand("activations", y_bytes or b.out_bytes(node)),
            repeat=batch)
    b.add(node, op, x, w)


def vector(b, node, op_class: str, cost: float, m: int, n: int, *, x_scale: float = 1.0, y_scale: float = 1.0,
           inputs: list[str] | None = None) -> None:
    """A VECTOR op over m x n elements reading ``inputs`` (default: the node's activations of the
    output's size). ``x_scale``/``y_scale`` scale the bytes per element of an operand smaller than
    the op's extent (a pool's output, a resize's input)."""
    size = math.prod(b.shape(node.output[0]))
    acts = [x for x in node.input if x and not b.source(x).static]
    streamed = inputs if inputs is not None else [x for x in acts if math.prod(b.shape(x)) == size] or acts[:1]
    x_bytes = b.source(streamed[0]).elem_bytes * x_scale
    op = Op(b.name(node), op_class, b.layer, VECTOR, m, 1, n, Operand("activations", x_bytes), NO_OPERAND,
            Operand("activations", b.out_bytes(node) * y_scale), len(dict.fromkeys(streamed)), cost)
    b.add(node, op, *acts, out_bytes=b.out_bytes(node))


# element-wise ops: (VectorCosts field, how many of its per-element costs) per element of output.
# HardSigmoid (multiply-add, clamp) and HardSwish (add, clamp, multiply by x and 1/6) count their
# element-wise vector instructions; Sigmoid costs SiLU's measured rate (its multiply included),
# Tanh and Erf GELU's (the same tanh polynomial)
ELEMENTWISE = {"Add": ("elementwise", 1), "Sub": ("elementwise", 1), "Mul": ("elementwise", 1),
               "Div": ("elementwise", 1), "Relu": ("elementwise", 1), "Clip": ("elementwise", 1),
               "LeakyRelu": ("elementwise", 1), "Max": ("elementwise", 1), "Min": ("elementwise", 1),
               "HardSigmoid": ("elementwise", 2), "HardSwish": ("elementwise", 3), "Sigmoid": ("silu_mul", 1),
               "Tanh": ("gelu", 1), "Erf": ("gelu", 1), "Gelu": ("gelu", 1)}


# activations a conv or matmul kernel applies to its output (mlir-aie's conv2dk1 and conv2dk3
# kernels end in ReLU) and a vector op applies before it stores (the bottleneck's skip add + ReLU)
EPILOGUES = ("Relu", "Clip", "LeakyRelu")


BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min")


def elementwise(b, node) -> None:
    """Priced per call of the tile each core gets (the kernel model where the arch has one)."""
    field, times = ELEMENTWISE[node.op_type]
    m, n = _rows(b.shape(node.output[0]))
    cost = times * b.costs.tile_cost(field, m, n, inputs=2 if node.op_type in BINARY else 1)
    if b.fold_epilogues and node.op_type in EPILOGUES and _epilogue(b, node, cost):
        return
    vector(b, node, "elementwise", cost, m, n)


def _epilogue(b, node, cost: float) -> bool:
    """Fold the activation into the op that writes its input (and nothing else reads): free in a
    conv or matmul kernel, its per-element cost added to a vector op's."""
    src = b.source(node.input[0])
    if src.owner is None or b.readers(node.input[0]) != 1:
        return False
    owner = b.ops[src.owner]
    if owner.kind == VECTOR:
        b.ops[src.owner] = replace(owner, vector_cycles_per_elem=owner.vector_cycles_per_elem + cost)
    b.alias(node.output[0], src)
    return True


def softmax(b, node) -> None:
    """Softmax over ``axis`` (opset 13 on: that axis; before: every axis from it on)."""
    shape = b.shape(node.output[0])
    axis = _attrs(node).get("axis", -1 if b.opset >= 13 else 1) % len(shape)
    n = shape[axis] if b.opset >= 13 else math.prod(shape[axis:])
    vector(b, node, "softmax", b.costs.softmax_cost(n), math.prod(shape) // n, n)


def layer_norm(b, node) -> None:
    shape = b.shape(node.output[0])
    n = math.prod(shape[_attrs(node).get("axis", -1) % len(shape):])
    vector(b, node, "norm", b.costs.norm_cost("layer", n), math.prod(shape) // n, n, inputs=[node.input[0]])


def batch_norm(b, node) -> None:
    """Folded into the conv that writes its input (and nothing else reads): the conv's weights and
    bias absorb it. Elsewhere an element-wise scale and shift (two element-wise costs)."""
    src = b.source(node.input[0])
    if src.owner is not None and b.ops[src.owner].kind == CONV and b.readers(node.input[0]) == 1:
        b.alias(node.output[0], src)
        return
    m, n = _rows(b.shape(node.output[0]))
    vector(b, node, "elementwise", 2 * b.costs.tile_cost("elementwise", m, n), m, n, inputs=[node.input[0]])


def pool(b, node) -> None:
    """A pool reads every input element once from DDR and each window element per output from
    core memory: its extent is the input, each element costs the element-wise rate times the
    windows it falls in (kernel area x outputs / inputs), the output's bytes scale by outputs /
    inputs."""
    xs, ys = b.shape(node.input[0]), b.shape(node.output[0])
    window = math.prod(xs[2:]) if node.op_type.startswith("Global") else math.prod(_attrs(node)["kernel_shape"])
    ratio = math.prod(ys) / math.prod(xs)
    m, n = _rows(xs)
    each = b.costs.tile_cost("elementwise", m, n)
    vector(b, node, "pool", each * window * ratio, m, n, y_scale=ratio, inputs=[node.input[0]])


def resize(b, node) -> None:
    """A copy to the output's size (nearest or linear: the element-wise rate per output element);
    the input's bytes scale by inputs / outputs."""
    mode = _text(_attrs(node), "mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise NodeProblem(f"mode {mode!r}: only nearest and linear resizes are costed")
    xs, ys = b.shape(node.input[0]), b.shape(node.output[0])
    m, n = _rows(ys)
    vector(b, node, "elementwise", b.costs.tile_cost("elementwise", m, n), m, n, x_scale=math.prod(xs) / math.prod(ys),
           inputs=[node.input[0]])


def transpose(b, node) -> None:
    """A view where ``perm`` only moves size-1 axes; else a TRANSPOSE op when ``perm``, once size-1
    axes are dropped and axes that stay neighbours in order are merged, swaps two axes: after
    the batch axis (``repeat``) if any, before a run of contiguous elements (``k``) if any. Any
    other perm is refused by name."""
    xs = b.shape(node.input[0])
    perm = list(_attrs(node).get("perm", range(len(xs) - 1, -1, -1)))
    swap = transpose_of(xs, perm)
    if swap is None:
        b.alias(node.output[0], b.source(node.input[0]))
        return
    batch, m, n, unit = swap
    x = b.operand(node.input[0])
    try:
        Transpose(m, n, unit, x.elem_bytes).validate()
    except ConfigError as e:
        raise NodeProblem(f"perm = {perm} of a {list(xs)} tensor: " + "; ".join(e.problems)) from None
    op = Op(b.name(node), "elementwise", b.layer, TRANSPOSE, m, unit, n, x, NO_OPERAND, x, repeat=batch)
    b.add(node, op, node.input[0])


def transpose_of(shape, perm) -> tuple[int, int, int, int] | None:
    """(batch, m, n, unit) of the 2-D transpose ``perm`` makes of a tensor of ``shape``; None when it
    moves no data (only size-1 axes move). A ``NodeProblem`` names a perm that is no such swap."""
    if sorted(perm) != list(range(len(shape))):
        raise NodeProblem(f"perm = {list(perm)}: must order the input's {len(shape)} axes")
    kept = [a for a in perm if shape[a] > 1]
    if kept == sorted(kept):
        return None
    after = dict(zip(sorted(kept), sorted(kept)[1:]))  # each kept axis's next one in the input
    groups = [[kept[0]]]
    for a in kept[1:]:  # axes that stay neighbours, in order, move as one
        if after.get(groups[-1][-1]) == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    order = sorted(range(len(groups)), key=lambda i: groups[i][0])  # the merged axes in input order
    q = [order.index(i) for i in range(len(groups))]
    sizes = [math.prod(shape[a] for a in groups[i]) for i in order]
    lead = 1 if q[0] == 0 else 0
    if q[lead:lead + 2] != [lead + 1, lead] or q[lead + 2:] not in ([], [lead + 2]) or len(q) > lead + 3:
        raise NodeProblem(f"perm = {list(perm)} of a {list(shape)} tensor: fastsim's transpose swaps two axes "
                          "(after a batch, before a contiguous run: size-1 axes dropped, neighbours merged); "
                          "this perm is no such swap")
    m, n = sizes[lead], sizes[lead + 1]
    return (sizes[0] if lead else 1), m, n, (sizes[lead + 2] if len(q) == lead + 3 else 1)


def view(b, node) -> None:
    """Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: the same bytes under a new shape."""
    b.alias(node.output[0], b.source(node.input[0]))


def concat(b, node) -> None:
    """Each producer writes its slice of the output in DDR (no copy): readers read them all."""
    srcs = [b.source(x) for x in node.input if x]
    b.alias(node.output[0], b.merged(srcs))


def split(b, node) -> None:
    """Each reader reads its slice of the input (no copy)."""
    src = b.merged([b.source(node.input[0])])
    for y in node.output:
        if y:
            b.alias(y, src)


def quantize(b, node) -> None:
    """QuantizeLinear: its producer writes the quantized type (requantized in its kernel)."""
    src = b.source(node.input[0])
    zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
    elem = b.tensor_type(node.output[0]) or (b.tensor_type(zp) if zp else None)
    nbytes = ELEM_BYTES.get(elem, 1.0) if elem else 1.0
    b.requantize(src, nbytes)
    b.alias(node.output[0], src._replace(elem_bytes=nbytes))


def dequantize(b, node) -> None:
    """DequantizeLinear: its readers read the quantized tensor (dequantized in their kernels)."""
    b.alias(node.output[0], b.source(node.input[0]))


def qlinear_conv(b, node) -> None:
    conv(b, node, 0, 3, _zero_point_bytes(b, node, 7))


def qlinear_matmul(b, node) -> None:
    matmul(b, node, 0, 3, _zero_point_bytes(b, node, 7))


def _zero_point_bytes(b, node, i: int) -> float:
    zp = node.input[i] if len(node.input) > i and node.input[i] else node.output[0]
    return ELEM_BYTES.get(b.tensor_type(zp), 1.0)


HANDLERS = {
    "Conv": conv, "ConvInteger": lambda b, n: conv(b, n, y_bytes=4.0), "QLinearConv": qlinear_conv,
    "MatMul": matmul, "MatMulInteger": lambda b, n: matmul(b, n, y_bytes=4.0), "QLinearMatMul": qlinear_matmul,
    "Gemm": gemm,
    **dict.fromkeys(ELEMENTWISE, elementwise),
    "Softmax": softmax, "LayerNormalization": layer_norm, "BatchNormalization": batch_norm,
    **dict.fromkeys(("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"), pool),
    "Resize": resize, "Upsample": resize, "Transpose": transpose,
    **dict.fromkeys(("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"), view),
    "Concat": concat, "Split": split,
    "QuantizeLinear": quantize, "DequantizeLinear": dequantize,
}
# op types whose output, when computed from constants only, keeps its input's bytes (a weight
# stored quantized, reshaped or transposed at load time is read as stored)
PASS_BYTES = {"DequantizeLinear", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose"}

UNSUPPORTED_NOTES = {
    "ConvTranspose": "a transposed conv is no conv of fastsim's (as a conv over the zero-stuffed input it would "
                     "count stride^2 times its MACs)",
    "Pad": "fold it into the next conv's pads, or run it on the host",
}
