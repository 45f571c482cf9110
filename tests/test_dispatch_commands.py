"""The host side of a pass's dispatches: single commands (a round trip each) or one chained run list."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsim.arch import NPU1, NPU2
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.mapping.dispatch import host_seconds_per_dispatch


def test_host_seconds_per_dispatch__single_pays_each_round_trip_chained_only_the_first():
    assert host_seconds_per_dispatch(NPU1, 3, "single") == [NPU1.dispatch_overhead_s] * 3
    assert host_seconds_per_dispatch(NPU1, 3, "chained") == [NPU1.dispatch_overhead_s, NPU1.chained_dispatch_s,
                                                             NPU1.chained_dispatch_s]
    assert host_seconds_per_dispatch(NPU2, 0, "chained") == []


def test_host_seconds_per_dispatch__refuses_an_unknown_mode():
    with pytest.raises(ConfigError, match="dispatch_commands = 'runlist': one of single, chained"):
        host_seconds_per_dispatch(NPU2, 2, "runlist")


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 200), st.sampled_from([NPU1, NPU2]))
def test_host_seconds_per_dispatch__chained_never_slower(count, arch):
    assert sum(host_seconds_per_dispatch(arch, count, "chained")) <= sum(host_seconds_per_dispatch(arch, count, "single"))


def test_simulate_llm__chained_dispatches_save_the_round_trips_after_the_first():
    base = dict(model="llama-3.2-1b", regime="prefill", prompt=64, cuts=(4, 8, 12), search_budget=1)
    single = simulate_llm(LlmStudy(**base))
    chained = simulate_llm(LlmStudy(**base, dispatch_commands="chained"))
    n = int(single.attrs["dispatches"])
    assert n == 4 and chained.attrs["dispatch_commands"] == "chained"
    np.testing.assert_array_equal(single.op_seconds.values, chained.op_seconds.values)
    saved = (n - 1) * (NPU2.dispatch_overhead_s - NPU2.chained_dispatch_s)
    assert float(single.total_seconds) - float(chained.total_seconds) == pytest.approx(saved, rel=1e-9)
    # one dispatch: nothing to chain
    one = dict(base, cuts=())
    assert float(simulate_llm(LlmStudy(**one)).total_seconds) == float(
        simulate_llm(LlmStudy(**one, dispatch_commands="chained")).total_seconds)
