"""The typed op graph every workload becomes: front ends (a transformer, a single GEMM) build an
``OpGraph``; mapping, fusion and evaluation read only its types and edges, never op names."""
from .ops import (MATMUL, OP_CLASSES, OP_KINDS, TENSOR_KINDS, VECTOR, Op, OpGraph, Operand)

__all__ = ["MATMUL", "OP_CLASSES", "OP_KINDS", "TENSOR_KINDS", "VECTOR", "Op", "OpGraph", "Operand"]
