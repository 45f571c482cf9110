"""Systolic PE-mesh model (ws / is / os) that reproduces SCALE-Sim v3's numbers.

The model (and with it the kernel modules) loads on first use, so reading inputs stays light;
``mesh_metrics(..., jit=False)`` runs the kernels as plain Python, without importing numba.
"""
from .inputs import Layer, MeshConfig, read_config, read_topology


def __getattr__(name):
    if name in ("mesh_metrics", "simulate_mesh"):
        from . import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
