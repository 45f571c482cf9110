"""Streamed tensors split equally or in proportion to each column's bandwidth (issue 13)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsim.arch import NPU2
from fastsim.design import MM2S
from fastsim.mapping import Mapping, Matmul, matmul_design
from fastsim.mapping.plan import structure
from fastsim.simulation import simulate
from fastsim.workloads.gemm import Gemm, gemm_mapping
from fastsim.mapping.paths import deal, shares
from fastsim.mapping.vector import VectorOp, vector_design

# four slow columns, four fast ones, and DDR wide enough not to cap them
ASYM = NPU2.replace(shim_read_bytes_per_cycle=(1.0,) * 4 + (4.0,) * 4,
                    shim_write_bytes_per_cycle=(1.0,) * 4 + (4.0,) * 4, ddr_bytes_per_s=1e12)


@given(st.integers(0, 200), st.lists(st.floats(0.5, 16), min_size=1, max_size=8))
@settings(max_examples=200, deadline=None)
def test_shares_add_up_and_follow_the_rates(units, rates):
    for how in ("equal", "proportional"):
        got = shares(units, rates, how)
        assert sum(got) == units
        assert np.bincount(deal(units, rates, how), minlength=len(rates)).sum() == units
    prop = shares(units, rates, "proportional")
    finish = max(n / r for n, r in zip(prop, rates))
    # no column's share could move to another and finish sooner than the slowest one does now
    assert all((n + 1) / r >= finish - 1e-12 for n, r in zip(prop, rates))


def test_equal_rates_deal_round_robin_either_way():
    assert deal(10, [4.0] * 4, "proportional") == deal(10, [4.0] * 4, "equal") == [i % 4 for i in range(10)]
    assert shares(10, [4.0] * 4, "proportional") == shares(10, [4.0] * 4, "equal") == [3, 3, 2, 2]


def test_vector_op_proportional_split_approaches_the_sum_of_column_bandwidths():
    op = VectorOp(256, 8192, vector_cycles_per_elem=0.01)
    equal = int(simulate(vector_design(op, ASYM)).total_cycles[0])
    prop = int(simulate(vector_design(VectorOp(256, 8192, vector_cycles_per_elem=0.01, stream_split="proportional"),
                                      ASYM)).total_cycles[0])
    # equal: 8 x the slowest column (8 B/cycle); proportional: up to the sum (20 B/cycle)
    assert equal / prop > 2.0


def test_proportional_split_changes_nothing_on_symmetric_columns():
    for op in (VectorOp(64, 2048), Matmul(128, 512, 512)):
        if isinstance(op, VectorOp):
            a = vector_design(op, NPU2)
            b = vector_design(VectorOp(64, 2048, stream_split="proportional"), NPU2)
        else:
            mp = Mapping("os", "2d", (32, 32, 32), 8, 4)
            a, b = (matmul_design(op, Mapping(**{**mp.__dict__, "stream_split": how}), NPU2)
                    for how in ("equal", "proportional"))
        ra, rb = simulate([a, b]).total_cycles.values
        assert ra == rb


def test_matmul_proportional_split_streams_shared_parts_from_the_fast_columns():
    op = Matmul(256, 1024, 1024)
    mp = Mapping("os", "2d", (32, 64, 32), 8, 4)
    prop = Mapping(**{**mp.__dict__, "stream_split": "proportional"})
    a_bytes = []
    for m in (mp, prop):
        d = matmul_design(op, m, ASYM)
        per_col = [0] * 8
        for bd in d.bds:  # A streams on shim MM2S1
            if bd.channel.tile.row == 0 and bd.channel.direction == MM2S and bd.channel.index == 1:
                per_col[bd.channel.tile.col] += 1
        a_bytes.append(per_col)
        s = structure(op, m, ASYM)
        assert [n > 0 for n in per_col] == [n > 0 for n in s.hosted_a]  # plan and design agree
    assert sum(a_bytes[0][:4]) > 0 and sum(a_bytes[1][:4]) == 0  # shared A parts leave the slow columns
    eq, pr = simulate([matmul_design(op, m, ASYM) for m in (mp, prop)]).total_cycles.values
    assert pr < eq


@pytest.mark.slow
def test_gemm_search_picks_the_split_and_a_pin_holds():
    found = gemm_mapping(Gemm(256, 2048, 2048), ASYM)
    pinned = gemm_mapping(Gemm(256, 2048, 2048, stream_split="equal"), ASYM)
    assert pinned.best.stream_split == "equal"
    assert found.best_cycles <= pinned.best_cycles
    on_symmetric = gemm_mapping(Gemm(256, 512, 512, stream_split="proportional"), NPU2)  # a pin always maps
    assert on_symmetric.best.stream_split == "proportional"


def test_bad_stream_split_is_a_config_error():
    from fastsim.errors import ConfigError
    with pytest.raises(ConfigError, match="stream_split"):
        vector_design(VectorOp(8, 64, stream_split="fair"), NPU2)
    with pytest.raises(ConfigError, match="stream_split"):
        gemm_mapping(Gemm(64, 64, 64, stream_split="fair"), NPU2)
