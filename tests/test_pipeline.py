"""Concurrent groups on disjoint columns: merged designs and token-block pipelines."""
from dataclasses import replace

import pytest
from hypothesis import assume
from hypothesis import strategies as st

import fastsim
from fastsim.arch import NPU2
from fastsim.lower import lower
from fastsim.mapping import Mapping, Matmul, matmul_design
from fastsim.mapping.pipeline import merge, pipeline, stage_columns
from fastsim.mapping.vector import VectorOp, vector_design
from helpers import two_tiers
from reference_model import ReferenceSim
from test_engine_vs_reference import LIMITS, assert_same, run_kernel

FOUR = NPU2.replace(name="four", columns=4)


def _stage(draw, arch, col0, x_on_chip, y_on_chip):
    """A random matmul or vector stage on column ``col0`` of ``arch``."""
    if draw(st.booleans()):
        op = VectorOp(draw(st.integers(1, 24)), draw(st.integers(1, 120)), 2, 2, draw(st.sampled_from([0, 1 / 8])),
                      draw(st.integers(1, 2)), False, 1, "v", x_on_chip, y_on_chip, col0=col0)
        return vector_design(op, arch)
    op = Matmul(draw(st.integers(1, 24)), draw(st.integers(1, 24)), draw(st.integers(1, 24)), "bf16",
                a_on_chip=x_on_chip, c_on_chip=y_on_chip)
    flow = draw(st.sampled_from(["os", "ws", "is"]))
    mp = Mapping(flow, "2d", tuple(draw(st.sampled_from([2, 4, 8])) for _ in range(3)), 1, 2, col0)
    return matmul_design(op, mp, arch)


@st.composite
def multi_group_designs(draw):
    arch = NPU2.replace(name="tiny", columns=2, compute_rows=2, clock_hz=1e9,
                        bd_setup_cycles=draw(st.integers(0, 4)), lock_acquire_cycles=draw(st.integers(0, 2)),
                        task_queue_depth=draw(st.integers(1, 4)))
    try:
        if draw(st.booleans()):
            return merge([_stage(draw, arch, 0, False, False), _stage(draw, arch, 1, False, False)])
        first, second = _stage(draw, arch, 0, False, True), _stage(draw, arch, 1, True, False)
        return pipeline([[first], [second]], draw(st.integers(1, 3)))
    except fastsim.ConfigError:
        return None


def _multi_group_designs_match_reference(design):
    """Concurrent groups and pipelines with mem-tile hand-offs: cycle for cycle, and they finish."""
    assume(design is not None)
    lowered = lower(design, **{**LIMITS, "max_cycles": 400_000, "livelock_cycles": 20_000})
    ref = ReferenceSim(lowered).run()
    assert_same(run_kernel([lowered]), 0, ref, lowered)
    assert ref.status == 0


test_engine__matches_reference_on_multi_group_designs, test_engine__matches_reference_on_multi_group_designs__more = (
    two_tiers(15, 40, multi_group_designs())(_multi_group_designs_match_reference))


def _ddr(ds, i):
    return (float(ds.level_bytes.sel(level="ddr_read").values[i]),
            float(ds.level_bytes.sel(level="ddr_write").values[i]))


def test_merge__runs_groups_at_once_and_moves_every_byte_of_each():
    op = Matmul(128, 256, 256, "bf16", row_major_ddr=False)  # laid out per design, as a graph op is
    mp = Mapping("os", "2d", (32, 64, 32), 2, 4)
    a, b = matmul_design(op, mp, FOUR), matmul_design(op, replace(mp, col0=2), FOUR)
    ds = fastsim.simulate([a, b, merge([a, b])])
    alone, _, both = ds.total_cycles.values
    assert alone <= both < 1.2 * alone  # concurrent: about one op's time, not two
    assert _ddr(ds, 2) == tuple(x + y for x, y in zip(_ddr(ds, 0), _ddr(ds, 1)))
    with pytest.raises(fastsim.ConfigError, match="both use column 1"):
        merge([a, matmul_design(op, replace(mp, col0=1), FOUR)])


def test_pipeline__hands_over_on_chip_and_overlaps_blocks():
    """DDR sees only the first stage's input and the last stage's output, once per block; the
    hand-off is a mem-tile transfer; with more blocks the pace is the slowest stage, not the sum."""
    op = Matmul(128, 256, 256, "bf16", row_major_ddr=False)  # laid out per design, as a graph op is
    mp = Mapping("os", "2d", (32, 64, 32), 2, 4)
    vec = VectorOp(128, 256, 2, 2, 1 / 8, 1, cols=2, col0=2)
    first, second = matmul_design(replace(op, c_on_chip=True), mp, FOUR), vector_design(replace(vec, x_on_chip=True), FOUR)
    alone = fastsim.simulate([matmul_design(op, mp, FOUR), vector_design(vec, FOUR)])
    t_mm, t_vec = alone.total_cycles.values
    runs = {n: pipeline([[first], [second]], n) for n in (1, 4)}
    ds = fastsim.simulate(list(runs.values()))
    mm_read = _ddr(alone, 0)[0]
    vec_write = _ddr(alone, 1)[1]
    for i, n in enumerate(runs):
        assert _ddr(ds, i) == (n * mm_read, n * vec_write)
        # the hand-off carries exactly what the matmul alone writes to DDR
        assert float(ds.level_bytes.sel(level="mem_mem").values[i]) == n * _ddr(alone, 0)[1]
    one, four = ds.total_cycles.values
    assert 4 * max(t_mm, t_vec) < four < 4 * (t_mm + t_vec)
    assert four - one < 3 * (t_mm + t_vec) * 0.9  # each further block costs about the slower stage


def test_pipeline__says_what_is_missing():
    mp = Mapping("os", "2d", (32, 64, 32), 2, 4)
    first = matmul_design(Matmul(64, 64, 64, "bf16"), mp, FOUR)  # output not kept on chip
    second = vector_design(VectorOp(64, 64, x_on_chip=True, cols=2, col0=2), FOUR)
    with pytest.raises(fastsim.ConfigError, match="keeps no output on chip"):
        pipeline([[first], [second]], 2)
    with pytest.raises(fastsim.ConfigError, match="blocks"):
        pipeline([[first], [second]], 0)


@pytest.mark.parametrize("weights, cols, expected", [
    ([1, 1], 8, [4, 4]), ([3, 1], 8, [6, 2]), ([100, 1, 1], 8, [6, 1, 1]), ([1, 2, 1, 4], 8, [1, 2, 1, 4]),
])
def test_stage_columns__balance_the_slowest_stage_with_one_column_at_least(weights, cols, expected):
    assert stage_columns(weights, cols) == expected


def test_stage_columns__respect_what_a_stage_can_receive():
    # the second stage needs as many columns as the first (one free receive channel per column)
    assert stage_columns([3, 1], 8, lambda s: s[1] >= s[0]) == [4, 4]
    with pytest.raises(fastsim.ConfigError, match="no split"):
        stage_columns([1, 1], 2, lambda s: False)


@pytest.mark.slow
def test_llm__pipelines_are_searched_in_prefill_and_a_forced_one_runs_on_its_own_columns():
    from fastsim.llm import LlmStudy, simulate_llm
    from fastsim.llm.model import ModelConfig

    from fastsim.mapping.dispatch import DispatchLimits

    model = ModelConfig("small", 512, 2, 8, 2, 64, 1024, 1000)
    # program memory to spare: no kernel sharing after the fusion choice, which compares op times
    roomy = DispatchLimits(program_memory_bytes=1 << 20)
    auto = simulate_llm(LlmStudy(model=model, regime="prefill", prompt=256), limits=roomy)
    alternatives = dict(a.rsplit(" ", 2)[:2] for a in auto.attrs["fusion_alternatives"].split("; "))
    assert {"ffn:pipeline", "norm_qkv:pipeline"} <= set(alternatives)
    chosen = float(auto.op_seconds.sum()) * 1e3
    assert chosen <= min(float(v) for v in alternatives.values()) * 1.001  # auto keeps the fastest
    forced = simulate_llm(LlmStudy(model=model, regime="prefill", prompt=256, fusion="ffn:pipeline"))
    assert forced.attrs["fusion"] == "ffn:pipeline"
    names = list(forced.op_name.values)
    for layer in (0, 1):
        ffn = (forced.fusion_group.values == f"ffn@{layer}")
        assert ffn.sum() == 5 and forced.op_columns.values[ffn].sum() == NPU2.columns  # disjoint columns
        inner = [i for i, n in enumerate(names) if forced.layer.values[i] == layer and n == "silu_mul"]
        assert float(forced.ddr_bytes.values[inner].sum()) == 0  # hand-offs never touch DDR
    assert float(forced.level_bytes.sel(level="mem_mem").sum()) > 0


def test_handoff__a_producer_stage_leaves_a_mem_tile_mm2s_free():
    """A pipeline stage whose output goes on to the next stage's columns (``Matmul.c_handoff``) is
    searched among designs that leave one MM2S channel of each of its mem tiles free for the
    hand-off; kept on chip for the same columns, it may use all of them (the ffn pipeline's gate
    projection on its one column, as a pipeline stage tries it: the best-bounded candidate)."""
    from fastsim.mapping import Pins, search
    from fastsim.mapping.pipeline import MM2S, _free

    op = Matmul(64, 512, 1024, "bf16", a_on_chip=True, c_on_chip=True)
    free = {}
    for handoff in (False, True):
        d = search(replace(op, c_handoff=handoff), NPU2, Pins(cols=1, col0=1), top=1, budget=1).best_design
        mem_tiles = {bd.channel.tile for bd in d.bds if bd.channel.tile.row == 1}  # the mem-tile row
        free[handoff] = min(len(_free(d, t, MM2S)) for t in mem_tiles)
    assert free[False] == 0 and free[True] >= 1
