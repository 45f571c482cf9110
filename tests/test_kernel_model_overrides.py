"""Kernel-model parameters a user or a calibration sets on an arch (``Arch.kernel_model``)."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from fastsim.arch import KERNEL_MODEL_KEYS, NPU1, NPU2
from fastsim.errors import ConfigError
from fastsim.kernel_model import conv as C, matmul as M, vector as V


def test_kernel_model_keys__name_fields_of_the_model_tables():
    tables = {"matmul": M.AIE2, "vector": V.AIE2, "conv": C.CONV_UNITS["aie2"]}
    for key in KERNEL_MODEL_KEYS:
        family, name = key.split(".", 1)
        assert name in {f.name for f in dataclasses.fields(tables[family])}, key


def test_kernel_model__a_setting_reaches_every_family():
    arch = NPU2.replace(kernel_model={"matmul.call_cycles": 14, "vector.row_scalar_cycles": 99,
                                      "conv.realign_per_mmul": 4})
    assert M.units(arch).call_cycles == 14 and M.units(NPU2).call_cycles == M.AIE2P.call_cycles
    assert V.core_of(arch).row_scalar_cycles == 99 and C.conv_units(arch).realign_per_mmul == 4
    # a call's fixed cost moves the call by exactly the difference
    extra = 14 - M.AIE2P.call_cycles
    assert M.call_cycles(arch, "bfp16", 64, 64, 64) == M.call_cycles(NPU2, "bfp16", 64, 64, 64) + extra


def test_kernel_model__unknown_keys_and_bad_values_are_refused_by_name():
    with pytest.raises(ConfigError, match="kernel_model key = 'matmul.bogus': one of matmul.call_cycles"):
        NPU2.replace(kernel_model={"matmul.bogus": 1})
    with pytest.raises(ConfigError, match="kernel_model.vector.call_cycles"):
        NPU2.replace(kernel_model={"vector.call_cycles": -3})


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([NPU1, NPU2]), st.floats(0, 200), st.floats(0, 200))
def test_kernel_model__more_call_overhead_never_fewer_cycles(arch, a, b):
    lo, hi = sorted((a, b))
    key = "bfp16" if arch is NPU2 else "int8"
    cheap, dear = (arch.replace(kernel_model={"matmul.call_cycles": c}) for c in (lo, hi))
    assert M.call_cycles(cheap, key, 64, 32, 64) <= M.call_cycles(dear, key, 64, 32, 64)
