"""Average power split at the boundaries rail figures use (fastsim.power)."""
from __future__ import annotations

import pytest

from fastsim.arch import NPU2
from fastsim.llm import LlmStudy, ModelConfig, simulate_llm
from fastsim.power import power_split

TINY = ModelConfig("tiny", 256, 2, 4, 2, 64, 512, 1024, True)


def test_power_split__parts_add_up_and_ddr_is_priced_at_the_ddr_rate():
    ds = simulate_llm(LlmStudy(model=TINY, regime="decode", context=256, search_budget=1))
    p = power_split(ds, NPU2)
    seconds = float(ds.total_seconds)
    assert p["seconds"] == seconds
    assert p["on_chip_w"] + p["ddr_w"] == pytest.approx(p["total_w"], rel=1e-12)
    assert p["total_w"] == pytest.approx((float(ds.energy_pj.sum()) + float(ds.preload_energy_pj)) * 1e-12 / seconds)
    ddr_bytes = float(ds.ddr_bytes.sum()) + float(ds.preload_bytes)
    assert p["ddr_w"] == pytest.approx(ddr_bytes * NPU2.pj_per_byte["ddr"] * 1e-12 / seconds)
    assert p["on_chip_w"] > 0 and p["ddr_w"] > 0
