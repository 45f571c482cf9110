"""Systolic PE-mesh model (ws / is / os) that reproduces SCALE-Sim v3's cycle counts."""
from .inputs import Layer, MeshConfig, read_config, read_topology
from .model import mesh_metrics, simulate_mesh
