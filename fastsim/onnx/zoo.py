"""Real networks written layer for layer as ONNX graphs with ``onnx.helper``: ResNet-50 and
MobileNetV2 as torchvision builds them (NCHW, opset 20), a ViT/BERT-style encoder layer, a small
CNN of a few layers, and the QDQ int8 form a static quantizer produces (``quantize_qdq``).
Weights are zero-filled initializers of the real shapes (``shapes_only=True``: initializers with
shapes and no data, which fastsim reads but ONNX Runtime refuses); shapes are what fastsim reads.
No torch needed.

``save(name, path)`` writes one (``name`` one of ``MODELS``), e.g.
``python -c "from fastsim.onnx.zoo import save; save('resnet50', 'resnet50.onnx')"``.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..errors import ConfigError

OPSET = 20


def _shape_only(name: str, dtype: int, dims) -> TensorProto:
    """An initializer with a shape and no data."""
    t = TensorProto(name=name, data_type=dtype)
    t.dims.extend(dims)
    return t


class _Net:
    """Nodes and initializers appended in order; a node's output tensor takes its name (given, as
    torchvision names its modules, or generated)."""

    def __init__(self, shapes_only: bool):
        self.nodes, self.inits, self.shapes_only, self.count = [], [], shapes_only, 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def init(self, stem: str, dims, dtype=TensorProto.FLOAT, values=None) -> str:
        name = self.name(stem)
        if values is not None:
            tensor = helper.make_tensor(name, dtype, dims, values)
        elif self.shapes_only:
            tensor = _shape_only(name, dtype, dims)
        else:
            np_type = helper.tensor_dtype_to_np_dtype(dtype)
            tensor = helper.make_tensor(name, dtype, dims, np.zeros(dims, np_type).tobytes(), raw=True)
        self.inits.append(tensor)
        return name

    def node(self, op_type: str, inputs: list[str], name: str = "", **attrs) -> str:
        out = name or self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, name: str, x: str, c: int, k: int, r: int, stride: int = 1, groups: int = 1,
                act: str = "") -> str:
        """Conv (no bias), BatchNormalization and an optional Relu or ReLU6 (Clip 0..6)."""
        w = self.init("w", [k, c // groups, r, r])
        p = r // 2
        y = self.node("Conv", [x, w], name, kernel_shape=[r, r], strides=[stride, stride], pads=[p, p, p, p],
                      group=groups)
        y = self.node("BatchNormalization", [y] + [self.init(s, [k]) for s in ("gamma", "beta", "mean", "var")],
                      f"{name}.bn")
        if act == "relu":
            y = self.node("Relu", [y], f"{name}.relu")
        elif act == "relu6":
            lo, hi = (self.init(s, [], values=[v]) for s, v in (("lo", 0.0), ("hi", 6.0)))
            y = self.node("Clip", [y, lo, hi], f"{name}.relu6")
        return y

    def head(self, x: str, c: int, classes: int = 1000) -> str:
        y = self.node("GlobalAveragePool", [x], "avgpool")
        y = self.node("Flatten", [y], "flatten", axis=1)
        return self.node("Gemm", [y, self.init("fc_w", [classes, c]), self.init("fc_b", [classes])], "fc", transB=1)

    def model(self, name: str, inputs: list, output: str, out_shape: list) -> onnx.ModelProto:
        out = helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)
        graph = helper.make_graph(self.nodes, name, inputs, [out], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="fastsim.zoo")


def resnet50(batch: int = 1, size: int = 224, shapes_only: bool = False) -> onnx.ModelProto:
    """torchvision's ResNet-50 (v1.5: the stride on the 3x3 conv of each bottleneck): 53 convs,
    16 bottlenecks, each with a residual Add; about 4.1 G MACs at 224 x 224."""
    net = _Net(shapes_only)
    x = net.conv_bn("conv1", "input", 3, 64, 7, 2, act="relu")
    x = net.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for i, (width, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), 1):
        for b in range(blocks):
            s, at = (stride if b == 0 else 1), f"layer{i}.{b}"
            y = net.conv_bn(f"{at}.conv1", x, c, width, 1, act="relu")
            y = net.conv_bn(f"{at}.conv2", y, width, width, 3, s, act="relu")
            y = net.conv_bn(f"{at}.conv3", y, width, 4 * width, 1)
            skip = net.conv_bn(f"{at}.downsample", x, c, 4 * width, 1, s) if b == 0 else x
            x = net.node("Relu", [net.node("Add", [y, skip], f"{at}.add")], f"{at}.relu")
            c = 4 * width
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])
    return net.model("resnet50", [inp], net.head(x, c), [batch, 1000])


# (expansion t, output channels c, blocks n, first stride s), as torchvision's MobileNetV2
_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                 (6, 320, 1, 1))


def mobilenet_v2(batch: int = 1, size: int = 224, shapes_only: bool = False) -> onnx.ModelProto:
    """torchvision's MobileNetV2: 17 inverted residuals (1x1 expand, 3x3 depthwise, 1x1 project,
    ReLU6 as Clip), 52 convs; about 0.3 G MACs at 224 x 224."""
    net = _Net(shapes_only)
    x = net.conv_bn("features.0", "input", 3, 32, 3, 2, act="relu6")
    c, f = 32, 1
    for t, out, n, stride in _MOBILENET_V2:
        for b in range(n):
            s, hidden, at = (stride if b == 0 else 1), c * t, f"features.{f}"
            y = net.conv_bn(f"{at}.expand", x, c, hidden, 1, act="relu6") if t != 1 else x
            y = net.conv_bn(f"{at}.dw", y, hidden, hidden, 3, s, groups=hidden, act="relu6")
            y = net.conv_bn(f"{at}.project", y, hidden, out, 1)
            x = net.node("Add", [x, y], f"{at}.add") if s == 1 and c == out else y
            c, f = out, f + 1
    x = net.conv_bn(f"features.{f}", x, c, 1280, 1, act="relu6")
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])
    return net.model("mobilenet_v2", [inp], net.head(x, 1280), [batch, 1000])


def encoder_layer(batch: int = 1, tokens: int = 128, hidden: int = 768, heads: int = 12, layers: int = 1,
                  shapes_only: bool = False) -> onnx.ModelProto:
    """``layers`` pre-norm ViT/BERT-style encoder layers as exporters write them: LayerNormalization,
    q/k/v MatMuls with bias Adds, Reshape and Transpose into heads, scores MatMul, scale Mul,
    Softmax, MatMul with V, back to tokens, output projection, residual Add, then LayerNorm,
    MatMul up (4x), Gelu, MatMul down and the residual Add."""
    net = _Net(shapes_only)
    hd = hidden // heads
    heads_shape = net.init("shape", [4], TensorProto.INT64, [batch, tokens, heads, hd])
    tokens_shape = net.init("shape", [3], TensorProto.INT64, [batch, tokens, hidden])
    x = "input"

    def linear(name, x, k, n):
        return net.node("Add", [net.node("MatMul", [x, net.init("w", [k, n])], name), net.init("b", [n])],
                        f"{name}.bias")

    def layer_norm(name, x):
        return net.node("LayerNormalization", [x, net.init("ln_g", [hidden]), net.init("ln_b", [hidden])], name,
                        axis=-1)

    for i in range(layers):
        at = f"layer{i}"
        h = layer_norm(f"{at}.norm1", x)
        q, k, v = (net.node("Reshape", [linear(f"{at}.{p}", h, hidden, hidden), heads_shape]) for p in "qkv")
        q = net.node("Transpose", [q], perm=[0, 2, 1, 3])
        k = net.node("Transpose", [k], perm=[0, 2, 3, 1])
        v = net.node("Transpose", [v], perm=[0, 2, 1, 3])
        scale = net.init("scale", [], values=[1.0 / hd ** 0.5])
        scores = net.node("Mul", [net.node("MatMul", [q, k], f"{at}.scores"), scale], f"{at}.scale")
        p = net.node("Softmax", [scores], f"{at}.softmax", axis=-1)
        a = net.node("Transpose", [net.node("MatMul", [p, v], f"{at}.context")], perm=[0, 2, 1, 3])
        a = linear(f"{at}.out", net.node("Reshape", [a, tokens_shape]), hidden, hidden)
        x = net.node("Add", [x, a], f"{at}.residual1")
        up = net.node("Gelu", [linear(f"{at}.up", layer_norm(f"{at}.norm2", x), hidden, 4 * hidden)], f"{at}.gelu")
        x = net.node("Add", [x, linear(f"{at}.down", up, 4 * hidden, hidden)], f"{at}.residual2")
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, tokens, hidden])
    return net.model("encoder", [inp], x, [batch, tokens, hidden])


def small_cnn(batch: int = 1, size: int = 32, shapes_only: bool = False) -> onnx.ModelProto:
    """A few layers for quick runs: a strided 3x3 conv, a residual pair of convs (3x3, 1x1), a
    depthwise 3x3, a max pool and the classifier."""
    net = _Net(shapes_only)
    x = net.conv_bn("conv1", "input", 3, 16, 3, 2, act="relu")
    y = net.conv_bn("conv2", x, 16, 16, 3, act="relu")
    y = net.conv_bn("conv3", y, 16, 16, 1)
    x = net.node("Relu", [net.node("Add", [x, y], "add")], "relu")
    x = net.conv_bn("dw", x, 16, 16, 3, groups=16, act="relu")
    x = net.node("MaxPool", [x], "maxpool", kernel_shape=[2, 2], strides=[2, 2])
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])
    return net.model("small_cnn", [inp], net.head(x, 16, 10), [batch, 10])


_QUANTIZED_WEIGHTS = {"Conv": (1,), "Gemm": (1,), "MatMul": (1,)}


def quantize_qdq(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model in QDQ int8 form, as a static quantizer writes it: every float activation a node
    reads passes through QuantizeLinear -> DequantizeLinear (int8, per tensor) once after its
    producer, except where only BatchNormalization reads it (a quantizer folds it into the conv
    first), and the weights of Conv, Gemm and MatMul are int8 initializers behind a
    DequantizeLinear (biases stay float: fastsim does not simulate bias adds). Scales are 1 and
    zero points 0: shapes and types are what matter."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consumers: dict[str, list] = {}
    for node in g.node:
        for x in node.input:
            consumers.setdefault(x, []).append(node)
    scale = helper.make_tensor("qdq_scale", TensorProto.FLOAT, [], [1.0])
    zero = helper.make_tensor("qdq_zero", TensorProto.INT8, [], [0])
    new_inits = [scale, zero]
    renamed, nodes = {}, []

    def qdq(x: str) -> list:
        renamed[x] = f"{x}_dq"
        return [helper.make_node("QuantizeLinear", [x, "qdq_scale", "qdq_zero"], [f"{x}_q"], name=f"{x}_q"),
                helper.make_node("DequantizeLinear", [f"{x}_q", "qdq_scale", "qdq_zero"], [f"{x}_dq"], name=f"{x}_dq")]

    def quantizes(x: str) -> bool:
        readers = consumers.get(x, [])
        return x not in inits and bool(readers) and any(n.op_type != "BatchNormalization" for n in readers)

    for inp in g.input:
        if quantizes(inp.name):
            nodes += qdq(inp.name)
    for node in g.node:
        for i in _QUANTIZED_WEIGHTS.get(node.op_type, ()):
            if node.input[i] not in inits:  # a MatMul of two activations
                continue
            w = inits.pop(node.input[i])
            q = (helper.make_tensor(f"{w.name}_q", TensorProto.INT8, w.dims, bytes(int(np.prod(w.dims))), raw=True)
                 if w.raw_data else _shape_only(f"{w.name}_q", TensorProto.INT8, w.dims))
            new_inits.append(q)
            nodes.append(helper.make_node("DequantizeLinear", [q.name, "qdq_scale", "qdq_zero"], [f"{w.name}_dq"],
                                          name=f"{w.name}_dq"))
            renamed[w.name] = f"{w.name}_dq"
        node.input[:] = [renamed.get(x, x) if node.op_type != "BatchNormalization" or i > 0 else x
                         for i, x in enumerate(node.input)]
        nodes.append(node)
        nodes += [n for y in node.output if quantizes(y) for n in qdq(y)]
    graph = helper.make_graph(nodes, g.name + "_qdq", list(g.input), list(g.output), list(inits.values()) + new_inits)
    return helper.make_model(graph, opset_imports=list(model.opset_import), producer_name="fastsim.zoo")


MODELS = {"resnet50": resnet50, "mobilenet_v2": mobilenet_v2, "encoder": encoder_layer, "small_cnn": small_cnn}


def build(name: str, int8: bool = False, **shape) -> onnx.ModelProto:
    """One of ``MODELS`` (``resnet50_int8`` and the like: its QDQ form)."""
    if name.endswith("_int8"):
        name, int8 = name[:-len("_int8")], True
    if name not in MODELS:
        raise ConfigError([f"model = {name!r}: one of {sorted(MODELS)} (or NAME_int8)"], "zoo")
    model = MODELS[name](**shape)
    return quantize_qdq(model) if int8 else model


def save(name: str, path: str, **shape) -> None:
    onnx.save_model(build(name, **shape), path)
