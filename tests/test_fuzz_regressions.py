"""Inputs the slow fuzz tier found ending in an internal exception, kept as fast cases: each is a
clean one-line error naming the field."""
import json

import pytest

from fastsim import NPU2, ConfigError
from fastsim.llm import from_hf_config
from fastsim.workloads.gemm import Gemm, gemm_design


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, 3])
def test_hf_config__a_model_type_that_is_not_a_name_is_refused(tmp_path, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": value, "hidden_size": 256}))
    with pytest.raises(ConfigError, match="model_type"):
        from_hf_config(path)


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, []])
def test_gemm__a_dtype_that_is_not_a_name_is_refused_before_the_arch_reads_it(value):
    with pytest.raises(ConfigError, match="dtype"):
        gemm_design(Gemm(m=8, k=8, n=8, dtype=value), NPU2)
