"""The plain per-design arrays the evaluator reads (results.DesignArrays) are exactly what the
Dataset holds for that design, and the summaries computed from either are identical."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim.arch import NPU2
from fastsim.lower import lower
from fastsim.report import utilization_of, utilizations
from fastsim.results import arrays_of, design_arrays, to_dataset
from fastsim.simulation import run_batch
from strategies import designs, pipelines


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(designs(), pipelines()), min_size=1, max_size=4))
def test_design_arrays__equal_the_dataset_of_the_same_batch(batch_designs):
    batch = run_batch([lower(d) for d in batch_designs])
    ds = to_dataset(batch)
    for i, d in enumerate(batch_designs):
        plain, read = design_arrays(batch, i), arrays_of(ds, i)
        for name, value in plain._asdict().items():
            np.testing.assert_array_equal(np.asarray(getattr(read, name)), np.asarray(value), err_msg=name)
        assert utilization_of(plain, d.arch, 2e-6) == utilizations(ds, i, d.arch, 2e-6)
