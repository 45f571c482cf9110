"""Kernel cost model: mesh cores take their cycles from the systolic closed form, without the
systolic package (``fastsim.cost`` sits below it, docs/architecture.md)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim.arch import SYSTOLIC16
from fastsim.cost import matmul_cycles, mesh_cycles
from fastsim.systolic import Layer, MeshConfig, mesh_metrics


@settings(max_examples=100)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300), st.integers(1, 64), st.integers(1, 64),
       st.sampled_from(["ws", "is", "os"]))
def test_cost__mesh_cycles_equal_the_systolic_models_compute_cycles(m, k, n, rows, cols, dataflow):
    metrics = mesh_metrics([Layer.gemm("tile", m, n, k)], [MeshConfig(rows, cols, dataflow)], occupancy_bins=1)
    assert mesh_cycles(m, k, n, rows, cols, dataflow) == int(metrics["compute_cycles"][0, 0])


def test_cost__mesh_core_matmul_scales_the_mesh_cycles():
    # 16x16 output-stationary mesh, 32x64x64 tile: 2 x 4 folds of 64 + 16 + 16 - 2 = 94 cycles, less 1
    assert mesh_cycles(32, 64, 64, 16, 16, "os") == 2 * 4 * 94 - 1
    assert matmul_cycles(32, 64, 64, "int8", SYSTOLIC16, efficiency=0.5, overhead_cycles=3, macs_scale=0.5) == 751 + 3
