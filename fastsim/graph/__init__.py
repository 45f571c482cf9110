"""The typed op graph every workload becomes: front ends (a transformer, a single GEMM) build an
``OpGraph``; mapping, fusion and evaluation read only its types and edges, never op names."""
from .ops import *  # noqa: F401,F403 (the names of ``ops.__all__``)
from .ops import __all__  # noqa: F401
