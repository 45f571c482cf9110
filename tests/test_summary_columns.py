"""A sweep point's summary is made from the evaluation's columns without building the Dataset
(``fastsim.llm.run.summarize_llm``): the columns equal the Dataset's, array for array, and the
summary equals ``llm_summary`` of the Dataset, number for number."""
import numpy as np
import pytest

from fastsim.evaluation.dataset import to_columns
from fastsim.evaluation.dataset import to_dataset
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.assemble import columns
from fastsim.llm.run import _evaluated, llm_summary, summarize_llm
from fastsim.mapping.dispatch import DispatchLimits
from fastsim.arch import NPU2

STUDIES = {
    "decode": LlmStudy(model="llama-3.2-1b", context=256, weights="int4"),
    "decode, norm NOOP, cuts": LlmStudy(model="qwen3-0.6b", context=512, batch=4, noop=("norm",), cuts=(3, 7)),
    "decode, sliding windows": LlmStudy(model="gemma-3-1b", context=1024, batch=2),
    "prefill, softmax NOOP": LlmStudy(model="llama-3.2-1b", regime="prefill", prompt=64, noop=("softmax",)),
}


@pytest.mark.parametrize("name", STUDIES)
def test_columns__equal_the_datasets_array_for_array(name):
    run = _evaluated(STUDIES[name], NPU2, DispatchLimits(), True, None, False)
    built, attrs = to_columns(*run.dataset_args)
    ds = to_dataset(*run.dataset_args)
    expected = columns(ds)
    assert sorted(built) == sorted(expected) and attrs == ds.attrs
    for key, values in expected.items():
        assert built[key].dtype == values.dtype and built[key].shape == values.shape, key
        assert np.array_equal(built[key], values, equal_nan=values.dtype.kind == "f"), key


@pytest.mark.parametrize("name", STUDIES)
@pytest.mark.parametrize("stalls", [True, False])
def test_summary__without_the_dataset_equals_llm_summary(name, stalls):
    study = STUDIES[name]
    got = summarize_llm(study, movement=False, stalls=stalls)
    assert got == llm_summary(simulate_llm(study, movement=False), stalls)
    assert ("stalls_by_op" in got) == stalls


def test_summary__of_ops_on_the_host_takes_the_datasets_way():
    study = LlmStudy(context=128, fusion="none", cuts=(), host={"attention": 1e-4, "softmax": 5e-5})
    assert summarize_llm(study) == llm_summary(simulate_llm(study))
