"""The Python API refuses what the CLI refuses: domain checks live in the API, the CLI only
formats (issue 50's "one door")."""
import pytest

from fastsim import NPU1, ConfigError
from fastsim.llm import LlmStudy, simulate_llm


def test_static_weights_that_cannot_fit_are_refused_in_one_line_by_the_api():
    with pytest.raises(ConfigError) as e:
        simulate_llm(LlmStudy(model="llama-3.1-8b", regime="decode", residency="static"), NPU1)
    assert len(e.value.problems) == 1
    assert "MB of weights do not fit in" in e.value.problems[0] and "residency streamed" in e.value.problems[0]
