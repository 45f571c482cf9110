"""A NOOP twin derived from lowered tables (``fastsim.lower.noop_twin``) is exactly the lowering of
the design its builder makes with ``noop=True``: LLM runs take their data-movement times from it
without building, validating and lowering every design twice."""
from dataclasses import replace

import numpy as np
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import fastsim
from fastsim.lower import lower, noop_twin
from fastsim.mapping import Mapping, Matmul, matmul_design
from fastsim.mapping.design import NOOP_DROPS
from fastsim.mapping.vector import VectorOp, vector_design

TABLES = ("prm", "col_rates", "bds", "ch", "cons", "prog", "cores", "host", "lock_init")


def assert_same_tables(twin, built):
    for name in TABLES:
        np.testing.assert_array_equal(getattr(twin, name), getattr(built, name), err_msg=name)
    assert twin.kernel_names == built.kernel_names
    assert twin.channels == built.channels and twin.core_tiles == built.core_tiles


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["os", "ws", "is"]), st.sampled_from(["2d", "n", "m"]),
       st.sampled_from(["bf16", "int8"]), st.sampled_from([None, "bfp16"]),
       st.sampled_from([0.0, 0.5, 2.0]), st.integers(1, 4), st.integers(1, 8), st.sampled_from(["", "a", "b"]),
       st.sampled_from([1, 2]))
def test_noop_twin__equals_the_built_noop_matmul(flow, split, dtype, datapath, cast, rows, cols, l2, k_split):
    """Every kernel 1 cycle, the conversion and cast kernels gone (they shift the kernel numbering
    and every later instruction), over dataflows, splits, datapaths and K splits."""
    op = Matmul(256, 512, 256, dtype, b_bytes=0.5625 if cast else None, cast_cycles_per_weight=cast)
    mapping = Mapping(flow, split, (32, 64, 32), cols, rows, 0, k_split, "m", l2,
                      datapath if dtype == "bf16" else None)
    try:
        lowered = lower(matmul_design(op, mapping, fastsim.NPU2))
    except fastsim.ConfigError:  # an illegal mapping: not an example of the property
        reject()
    twin = noop_twin(lowered, NOOP_DROPS)
    assert_same_tables(twin, lower(matmul_design(op, mapping, fastsim.NPU2, noop=True)))


def test_noop_twin__drops_kernels_that_some_designs_run():
    """The property test above reaches designs with conversion and cast kernels (the drop is not vacuous)."""
    op = Matmul(256, 512, 256, "bf16", b_bytes=0.5625, cast_cycles_per_weight=2.0)
    design = matmul_design(op, Mapping("os", "2d", (32, 64, 32), 4, 4, datapath="bfp16"), fastsim.NPU2)
    lowered = lower(design)
    assert lowered.kernel_names == ["conversion", "cast", "matmul"]  # the k-loop's order, in every process
    twin = noop_twin(lowered, NOOP_DROPS)
    assert len(twin.prog) < len(lowered.prog) and twin.kernel_names[0] == "matmul"


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(4, 5000), st.sampled_from([0.25, 1.0, 3.0]), st.integers(1, 2),
       st.integers(1, 8), st.booleans(), st.booleans())
def test_noop_twin__equals_the_built_noop_vector_op(m, n, cycles, inputs, cols, x_on_chip, y_on_chip):
    op = VectorOp(m, n, vector_cycles_per_elem=cycles, x_inputs=inputs, cols=cols, x_on_chip=x_on_chip,
                  y_on_chip=y_on_chip)
    try:
        lowered = lower(vector_design(op, fastsim.NPU2))
    except fastsim.ConfigError:  # an on-chip buffer that does not fit: not an example of the property
        reject()
    assert_same_tables(noop_twin(lowered), lower(vector_design(replace(op, noop=True), fastsim.NPU2)))


def test_noop_twin__simulates_as_the_built_noop_design():
    """Through the public entry point too (it takes lowered designs as they are)."""
    op = VectorOp(64, 2048, vector_cycles_per_elem=2.0)
    twin = noop_twin(lower(vector_design(op, fastsim.NPU2)))
    built = vector_design(replace(op, noop=True), fastsim.NPU2)
    a, b = fastsim.simulate(twin), fastsim.simulate(built)
    assert int(a.total_cycles[0]) == int(b.total_cycles[0])
    assert int(a.total_cycles[0]) < int(fastsim.simulate(vector_design(op, fastsim.NPU2)).total_cycles[0])

