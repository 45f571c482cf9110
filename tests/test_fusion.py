"""Fusion (on-chip hand-offs), dispatch feasibility and cut costs, and per-op accounting."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fastsim
from fastsim.arch import NPU2
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.lower import lower
from fastsim.mapping import Mapping, Matmul, check_mapping, matmul_design
from fastsim.mapping.dispatch import DispatchLimits
from fastsim.mapping.vector import VectorOp, vector_design
from reference_model import ReferenceSim
from test_engine_vs_reference import LIMITS, assert_same, run_kernel

TINY = NPU2.replace(name="tiny", columns=2, compute_rows=2, clock_hz=1e9)


def _ddr(design):
    ds = fastsim.simulate(design)
    return (float(ds.level_bytes.sel(level="ddr_read").values[0]),
            float(ds.level_bytes.sel(level="ddr_write").values[0]))


@pytest.mark.parametrize("flow", ["os", "ws", "is"])
def test_fused_bytes__equal_unfused_bytes_minus_the_on_chip_intermediates(flow):
    """Same mapping, operands moved on chip: DDR reads drop by exactly what the plan says the
    unfused design reads for A, writes by exactly its C; B is untouched."""
    op = Matmul(96, 200, 136, "bf16")
    mp = Mapping(flow, "2d", (16, 32, 16), 2, 2)
    _, plan = check_mapping(op, mp, TINY)
    read, write = _ddr(matmul_design(op, mp, TINY))
    assert (read, write) == (plan["ddr_read_bytes"], plan["ddr_write_bytes"])
    fused = replace(op, a_on_chip=True, c_on_chip=True)
    _, fused_plan = check_mapping(fused, mp, TINY)
    f_read, f_write = _ddr(matmul_design(fused, mp, TINY))
    a_bytes = plan["ddr_read_bytes"] - fused_plan["ddr_read_bytes"]
    assert a_bytes > 0 and f_write == 0
    assert f_read == read - a_bytes
    only_a = replace(op, a_on_chip=True)
    assert _ddr(matmul_design(only_a, mp, TINY)) == (read - a_bytes, write)
    vec = VectorOp(64, 300, 2, 2, 1 / 8, 2)
    v_read, v_write = _ddr(vector_design(vec, TINY))
    assert _ddr(vector_design(replace(vec, x_on_chip=True, y_on_chip=True), TINY)) == (0, 0)
    assert _ddr(vector_design(replace(vec, x_on_chip=True), TINY)) == (0, v_write)
    assert v_read >= 64 * 300 * 2 * 2 and v_write >= 64 * 300 * 2


@st.composite
def on_chip_vector_designs(draw):
    arch = TINY.replace(bd_setup_cycles=draw(st.integers(0, 4)), task_queue_depth=draw(st.integers(1, 4)))
    op = VectorOp(draw(st.integers(1, 40)), draw(st.integers(1, 300)), 2, 2, draw(st.sampled_from([0, 1 / 8, 1])),
                  draw(st.integers(1, 2)), draw(st.booleans()), None, "v", draw(st.booleans()), draw(st.booleans()),
                  draw(st.sampled_from([0, 256])))
    return vector_design(op, arch)


@settings(max_examples=30)
@given(on_chip_vector_designs())
def test_engine__matches_reference_on_fused_vector_stages(design):
    # a 2-input tile of 32 x 76 bf16 takes ~2,400 cycles on one stream: a livelock window longer
    # than any one transfer
    lowered = lower(design, **{**LIMITS, "max_cycles": 400_000, "livelock_cycles": 20_000})
    ref = ReferenceSim(lowered).run()
    assert_same(run_kernel([lowered]), 0, ref, lowered)
    assert ref.status == 0


def test_llm__fusion_is_searched_per_group_and_unfused_stays_available():
    study = LlmStudy(regime="decode", context=1024)
    none = simulate_llm(replace(study, fusion="none"))
    groups = simulate_llm(replace(study, fusion="groups"))
    auto = simulate_llm(study)
    assert set(none.fusion_group.values) == {""}
    assert not none.input_on_chip.any() and groups.input_on_chip.any()
    act = {k: float(ds.ddr_bytes.sel(tensor_kind="activations").sum()) for k, ds in
           (("none", none), ("groups", groups))}
    assert act["groups"] < act["none"]
    # the search never picks a slower total of ops and their set-ups than either fixed choice (it
    # weighs both: a fused group that saves op time may cost more control, docs/hardware.md)
    def weighed(ds):
        return float(ds.op_seconds.sum()) + float(ds.op_control_seconds.sum())

    assert weighed(auto) <= min(weighed(none), weighed(groups)) + 1e-12
    assert "none" in auto.attrs["fusion_alternatives"]


def test_llm__flash_attention_keeps_long_scores_in_a_ring_of_blocks():
    """A 2k-token prefill over 8k cached tokens: the scores of one KV head (2k x 4 rows x 10k keys)
    are far larger than every mem tile together, yet flash attention moves none of them."""
    ds = simulate_llm(LlmStudy(regime="prefill", prompt=256, prefill_context=8192, fusion="groups"))
    att = ds.op_name.isin(["attn_scores", "softmax", "attn_v"]).values
    assert all(str(g).startswith("flash_attention") for g in ds.fusion_group.values[att])
    soft = ds.op_name.values == "softmax"
    assert float(ds.ddr_bytes.values[soft].sum()) == 0
    assert float(ds.l2_peak_bytes.max()) <= NPU2.mem.memory_bytes


def test_dispatch__default_cut_is_greedy_and_feasible_and_bad_cuts_say_what_does_not_fit():
    study = LlmStudy(regime="decode", context=512, fusion="none")
    one = simulate_llm(study)
    assert one.attrs["dispatches"] == 1
    words = int(one.sequence_words.sum())
    small = DispatchLimits(instruction_buffer_words=words // 3)
    ds = simulate_llm(study, limits=small)
    assert ds.attrs["dispatches"] >= 3
    assert (ds.sequence_words.values <= small.instruction_buffer_words).all()
    with pytest.raises(fastsim.ConfigError, match="runtime sequence"):
        simulate_llm(replace(study, cuts=(14,)), limits=small)


def test_cuts__more_cuts_mean_more_ddr_bytes_and_more_time():
    """Chained decode keeps the residual stream on chip inside a dispatch; every cut writes it out
    and reads it back and adds a host round trip. (Program memory is made ample here: a cut can also
    relieve kernel reloads, which would hide the cost.)"""
    roomy = DispatchLimits(program_memory_bytes=1 << 20)
    runs = [simulate_llm(LlmStudy(regime="decode", context=512, fusion="chain", cuts=cuts), limits=roomy)
            for cuts in ((), (7,), (3, 7, 11))]
    ddr = [float(ds.ddr_bytes.sum()) for ds in runs]
    seconds = [float(ds.total_seconds) for ds in runs]
    assert [ds.attrs["dispatches"] for ds in runs] == [1, 2, 4]
    assert ddr[0] < ddr[1] < ddr[2]
    assert seconds[0] < seconds[1] < seconds[2]


def test_noop__gemm_saves_its_exposed_compute_and_accounting_adds_up():
    """Each op's movement time is its NOOP twin's time, so the equality holds when the class-level
    NOOP run builds exactly the twins (same mappings, no cross-op effects): this guards that the
    two paths stay the same design."""
    study = LlmStudy(regime="prefill", prompt=256, fusion="none")
    base = simulate_llm(study)
    noop = simulate_llm(replace(study, noop=("gemm",)))
    gemm = base.op_class.values == "gemm"
    saved = float(base.total_seconds) - float(noop.total_seconds)
    assert saved == pytest.approx(float(base.exposed_compute_seconds.values[gemm].sum()), rel=1e-9, abs=1e-12)
    t, c, m = base.op_seconds.values, base.compute_seconds.values, base.movement_seconds.values
    assert base.exposed_compute_seconds.values == pytest.approx(np.maximum(0, t - m), abs=1e-12)
    assert (base.exposed_movement_seconds.values <= t + 1e-15).all()
    assert (c[gemm] > 0).all() and (base.l1_peak_bytes.values <= NPU2.compute.memory_bytes).all()


def test_prefill__gemms_are_compute_bound_where_compute_outlasts_movement():
    """Where an op's kernels take longer than its data movement alone (here at the 26-43 % kernel
    efficiency measured on one core, docs/calibration.md), the op binds on compute and its time is close
    to its compute time."""
    ds = simulate_llm(LlmStudy(regime="prefill", prompt=512, kernel_efficiency=0.35))
    gemm = ds.op_class.values == "gemm"
    c, m, t = (ds[v].values[gemm] for v in ("compute_seconds", "movement_seconds", "op_seconds"))
    heavy = c > 1.05 * m
    assert heavy.any()
    assert (ds.bound_by.values[gemm][heavy] == "compute").all()
    assert (t[heavy] <= 1.15 * c[heavy]).all()


@pytest.mark.long  # exact searches, 41 s; tests/test_as_built.py keeps loading and pinning overlays in the default tier
def test_overlay__prints_stores_loads_and_pins_a_run(tmp_path):
    from fastsim.llm.assemble import overlay_of
    from fastsim.llm.run import apply_overlay
    from fastsim.mapping import overlay as ov

    study = LlmStudy(regime="decode", context=256)
    layout = ov.Overlay(regime="decode", fusion="ffn+flash_attention", columns={"gemm": 4, "ffn": 2},
                        dataflow={"q_proj": "ws"})
    path = tmp_path / "o.toml"
    ov.save({"decode": layout}, path)
    assert ov.load(path) == {"decode": layout} and "[decode]" in str(layout)
    ds = simulate_llm(apply_overlay(study, layout))
    cols = dict(zip(ds.op_name.values, ds.op_columns.values))
    assert cols["ffn_gate"] <= 2 and cols["q_proj"] <= 4 and cols["o_proj"] <= 4
    assert set(g.split("@")[0] for g in ds.fusion_group.values if g) <= {"ffn", "flash_attention"}
    # a run's own layout reproduces it: exact searches, so that the narrower space of the pinned
    # re-run (columns per op) answers as the wider one did (a budget of 3 may stop elsewhere)
    exact = replace(study, search_budget=None)
    ds = simulate_llm(apply_overlay(exact, layout))
    again = overlay_of(ds)
    assert float(simulate_llm(apply_overlay(exact, again)).total_seconds) == float(ds.total_seconds)
    for text, field in (("[decod]\nfusion='none'", "decod"), ("[decode]\nfusion='fast'", "fusion"),
                        ("[decode]\ncolumns={gemm=0}", "columns.gemm"), ("[decode\n", "overlay file")):
        path.write_text(text)
        with pytest.raises(fastsim.ConfigError, match=field):
            ov.load(path)


def test_overlay__switch_cost_depends_on_what_changes():
    from fastsim.mapping.overlay import switch_seconds

    same = {("matmul", (64, 64, 64), "bfp16")}
    assert switch_seconds(same, set(same), NPU2) == (NPU2.reconfiguration_s, "routes and BDs")
    assert switch_seconds(same, same | {("vector", "norm")}, NPU2)[0] == NPU2.elf_reload_s
