"""The typed op graph every workload becomes: front ends (a transformer, a single GEMM) build an
``OpGraph``; mapping, fusion and evaluation read only its types and edges, never op names."""
from .ops import (CONV, KIND_TRAITS, MATMUL, OP_CLASSES, OP_KINDS, TENSOR_KINDS, TRANSPOSE, VECTOR, ConvGeometry, Op, OpGraph, Operand)

__all__ = ["CONV", "KIND_TRAITS", "MATMUL", "OP_CLASSES", "OP_KINDS", "TENSOR_KINDS", "TRANSPOSE", "VECTOR", "ConvGeometry", "Op", "OpGraph",
           "Operand"]
