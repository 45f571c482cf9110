"""Reading an ONNX model: the file (or a ``ModelProto``), its symbolic dimensions fixed, shapes
inferred where the file lacks them, and every tensor's shape and element type by name.

Weights are never decoded: fastsim reads an initializer's dims and type only, so a file whose
initializers carry shapes and no data reads as well as a full one.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import TensorProto

from ..errors import ConfigError, Problems

# The most elements one tensor may hold. Simulating an op costs time and memory linear in its
# elements beyond a few million (the vector mapper's host sequence holds one push round per tile;
# an element-wise op of 2**31 elements took 5.3 s and 323 MB here, 2**33 12 s and 470 MB, 2**35
# 36 s and 1.2 GB; 10**12 ran out of memory); 2**32 elements (8 GB in bf16) is past any model an
# NPU runs.
MAX_TENSOR_ELEMENTS = 2**32

# bytes per element on the array: float tensors run as bf16 (the NPUs' float datapath)
FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
ELEM_BYTES = {TensorProto.INT8: 1.0, TensorProto.UINT8: 1.0, TensorProto.INT4: 0.5, TensorProto.UINT4: 0.5,
              TensorProto.INT16: 2.0, TensorProto.UINT16: 2.0, TensorProto.INT32: 4.0, TensorProto.UINT32: 4.0,
              TensorProto.INT64: 8.0, TensorProto.UINT64: 8.0, TensorProto.BOOL: 1.0,
              TensorProto.FLOAT8E4M3FN: 1.0, TensorProto.FLOAT8E5M2: 1.0, **dict.fromkeys(FLOAT_TYPES, 2.0)}


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    elem_type: int

    @property
    def elem_bytes(self) -> float:
        return ELEM_BYTES.get(self.elem_type, 2.0)

    @property
    def numel(self) -> int:
        out = 1
        for d in self.shape:
            out *= d
        return out


@dataclass(frozen=True)
class OnnxModel:
    """A model ready to lower: its nodes in file order (ONNX requires topological order), the
    shapes and types of its tensors, the initializers' names and the default opset."""

    name: str
    nodes: tuple
    tensors: dict  # name -> TensorInfo (only tensors whose shape is fully known)
    initializers: frozenset
    inputs: tuple[str, ...]  # graph inputs that are not initializers
    opset: int


def read_model(model, dims: dict[str, int] | None = None) -> OnnxModel:
    """Load ``model`` (a path or a ``ModelProto``), set its symbolic input dimensions from ``dims``
    (by name; every one must be given), and infer shapes if some node output lacks one. Every
    name must be UTF-8 text and every tensor at most ``MAX_TENSOR_ELEMENTS`` elements, with no
    negative dimension: every problem at once, as one ConfigError."""
    if not isinstance(model, onnx.ModelProto):
        path = Path(model)
        if not path.is_file():
            raise ConfigError([f"model = {str(model)!r}: no such file"], "onnx model")
        try:
            model = onnx.load_model(str(path), load_external_data=False)
        except Exception as e:  # protobuf says little more than "error parsing"
            raise ConfigError([f"model = {str(model)!r}: not an ONNX model ({type(e).__name__}: {e})"],
                              "onnx model") from e
    _check_names(model)
    model = _with_dims(model, dims or {})
    g = model.graph
    inits = frozenset(t.name for t in g.initializer)
    tensors = _tensors(model)
    if any(y and y not in tensors for node in g.node for y in node.output):
        _check_sizes(tensors)  # before inference carries an absurd size into every tensor after it
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        except Exception as e:  # onnx raises its own InferenceError, and ValueError for large models
            raise ConfigError([f"shape inference failed ({type(e).__name__}: {e}); give the file its "
                               "value_info shapes"], "onnx model") from e
        tensors = _tensors(model)
    _check_sizes(tensors)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return OnnxModel(g.name or "onnx", tuple(model.graph.node), tensors, inits,
                     tuple(i.name for i in g.input if i.name not in inits), opset)


def _check_names(model: onnx.ModelProto) -> None:
    """Every name fastsim reads or writes back is text: protobuf hands a string field that is
    not UTF-8 over as bytes, which would reach error messages and JSON as such."""
    p = Problems("onnx model")
    g = model.graph

    def text(field: str, value) -> None:
        p.check(isinstance(value, str), field, value, "must be UTF-8 text")

    text("graph.name", g.name)
    for i, o in enumerate(model.opset_import):
        text(f"opset_import[{i}].domain", o.domain)
    for kind in ("input", "output", "value_info", "initializer"):
        for i, t in enumerate(getattr(g, kind)):
            text(f"graph.{kind}[{i}].name", t.name)
    for i, node in enumerate(g.node):
        for field in ("name", "op_type", "domain"):
            text(f"graph.node[{i}].{field}", getattr(node, field))
        for kind in ("input", "output"):
            for j, x in enumerate(getattr(node, kind)):
                text(f"graph.node[{i}].{kind}[{j}]", x)
        for a in node.attribute:
            text(f"graph.node[{i}].attribute.name", a.name)
    p.raise_if_any()


def _check_sizes(tensors: dict) -> None:
    p = Problems("onnx model")
    for name, t in tensors.items():
        if any(d < 0 for d in t.shape):
            p.add(f"tensor {name}.shape", list(t.shape), "dimensions must be >= 0")
        else:
            p.check(t.numel <= MAX_TENSOR_ELEMENTS, f"tensor {name}.shape", list(t.shape),
                    f"at most {MAX_TENSOR_ELEMENTS:,} elements (2**32) in one tensor; this one holds {t.numel:,}")
    p.raise_if_any()


def _with_dims(model: onnx.ModelProto, dims: dict[str, int]) -> onnx.ModelProto:
    """A copy with every symbolic dimension of the graph inputs set; all unknown ones at once."""
    inits = {t.name for t in model.graph.initializer}
    missing, used = [], set()
    p = Problems("onnx model")
    for k, v in dims.items():
        p.number(f"dims[{k}]", v, integer=True, lo=1, hi=MAX_TENSOR_ELEMENTS)
    p.raise_if_any()
    model = onnx.ModelProto.FromString(model.SerializeToString()) if dims else model
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        for i, d in enumerate(inp.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            if d.dim_param in dims:
                used.add(d.dim_param)
                d.dim_value = int(dims[d.dim_param])
            else:
                missing.append(f"input {inp.name} dim {i} ({d.dim_param or 'unnamed'}): give its size "
                               f"(dims={{'{d.dim_param or 'NAME'}': N}}, --dim NAME=N)")
    missing += [f"dims[{k}]: names no symbolic dimension of the model's inputs" for k in sorted(set(dims) - used)]
    if missing:
        raise ConfigError(missing, "onnx model")
    return model


def _tensors(model: onnx.ModelProto) -> dict[str, TensorInfo]:
    g = model.graph
    out = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = TensorInfo(tuple(d.dim_value for d in t.shape.dim), t.elem_type)
    for t in g.initializer:
        out[t.name] = TensorInfo(tuple(t.dims), t.data_type)
    for node in g.node:  # Constant nodes carry their own tensor
        if node.op_type == "Constant" and node.attribute and node.attribute[0].type == onnx.AttributeProto.TENSOR:
            t = node.attribute[0].t
            out[node.output[0]] = TensorInfo(tuple(t.dims), t.data_type)
    return out
