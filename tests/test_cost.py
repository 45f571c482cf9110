"""Kernel cost model: mesh cores take their cycles from the systolic closed form, without the
systolic package (``fastsim.cost`` sits below it, docs/architecture.md); AIE cores from the kernel
model, priced alike by the mapper."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim.arch import PRESETS, SYSTOLIC16
from fastsim.cost import matmul_cycles, mesh_cycles
from fastsim.mapping.plan import matmul_cycles as plan_cycles
from fastsim.mapping.space import Matmul
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


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300), st.sampled_from(["npu1", "npu2"]),
       st.sampled_from(["int8", "bf16"]))
def test_cost__mapper_and_cost_price_a_call_alike(m, k, n, part, dtype):
    """The mapper's vectorised call cycles are ``fastsim.cost.matmul_cycles`` on the same datapath,
    C bytes and conversion (the kernel model on both AIE generations)."""
    arch = PRESETS[part]
    op = Matmul(m, k, n, dtype)
    for key, conv in arch.datapath_options(dtype):
        one = matmul_cycles(m, k, n, key, arch, arch.efficiency(key), conv_cycles_per_elem=conv,
                            c_bytes=op.c_elem_bytes)
        batch = plan_cycles(op, key, arch, np.array([m]), np.array([k]), np.array([n]), conversion=True)
        assert float(batch[0]) == one
