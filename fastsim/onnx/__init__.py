"""The ONNX front end: a model file's nodes and shapes as an op graph (``build_graph``), simulated
on an arch (``simulate_onnx``) and summarized (``onnx_summary``); ``zoo`` writes real networks
(ResNet-50, MobileNetV2, an encoder layer, their QDQ int8 forms). ``docs/onnx.md``."""
from .graph import OnnxGraph, build_graph
from .read import read_model
from .run import onnx_summary, simulate_onnx

__all__ = ["OnnxGraph", "build_graph", "onnx_summary", "read_model", "simulate_onnx"]
