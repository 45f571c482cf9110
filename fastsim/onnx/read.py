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

from ..errors import ConfigError

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
    (by name; every one must be given), and infer shapes if some node output lacks one."""
    if not isinstance(model, onnx.ModelProto):
        path = Path(model)
        if not path.is_file():
            raise ConfigError([f"model = {str(model)!r}: no such file"], "onnx model")
        try:
            model = onnx.load_model(str(path), load_external_data=False)
        except Exception as e:  # protobuf says little more than "error parsing"
            raise ConfigError([f"model = {str(model)!r}: not an ONNX model ({type(e).__name__}: {e})"],
                              "onnx model") from e
    model = _with_dims(model, dims or {})
    g = model.graph
    inits = frozenset(t.name for t in g.initializer)
    tensors = _tensors(model)
    if any(y and y not in tensors for node in g.node for y in node.output):
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        except Exception as e:  # onnx raises its own InferenceError, and ValueError for large models
            raise ConfigError([f"shape inference failed ({type(e).__name__}: {e}); give the file its "
                               "value_info shapes"], "onnx model") from e
        tensors = _tensors(model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return OnnxModel(g.name or "onnx", tuple(model.graph.node), tensors, inits,
                     tuple(i.name for i in g.input if i.name not in inits), opset)


def _with_dims(model: onnx.ModelProto, dims: dict[str, int]) -> onnx.ModelProto:
    """A copy with every symbolic dimension of the graph inputs set; all unknown ones at once."""
    inits = {t.name for t in model.graph.initializer}
    missing, used = [], set()
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
