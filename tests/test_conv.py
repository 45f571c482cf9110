"""Convolution on the array: designs agree with the reference model cycle for cycle, the search's
answer is never slower than a pinned one nor faster than its bound, pointwise convs are the GEMM
mapper's answer, halos are re-sent by mem tiles (not re-read as im2col would), bad input names
its field."""
import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fastsim.arch import NPU1, NPU2
from fastsim.errors import ConfigError
from fastsim.lower import lower
from fastsim.mapping import search
from fastsim.mapping.conv import SPLITS, WEIGHTS, Conv2d, ConvMapping
from fastsim.mapping.conv_design import checked_plan, conv_design
from fastsim.mapping.conv_plan import plan, problems
from fastsim.mapping.conv_search import search_conv
from fastsim.mapping.pins import Pins
from fastsim.simulation import simulate
from fastsim.workloads.gemm import Gemm
from reference_model import ReferenceSim
from test_engine_vs_reference import assert_same, run_kernel

LIMITS = dict(max_cycles=60000, livelock_cycles=20000, max_events=4096)


@st.composite
def small_convs(draw):
    """A small conv (dense, grouped or depthwise) and a mapping of it on at most 2 x 2 cores."""
    c = draw(st.integers(1, 12))
    groups = draw(st.sampled_from([1, c] + ([2] if c % 2 == 0 else [])))
    k = groups * draw(st.integers(1, 12 // groups + 1))
    r, s = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    op = Conv2d(draw(st.integers(1, 2)), c, draw(st.integers(3, 9)), draw(st.integers(3, 9)), k, r, s,
                stride=draw(st.integers(1, 2)), padding=draw(st.integers(0, 1)), dilation=draw(st.integers(1, 2)),
                groups=groups, dtype="int8")
    assume(op.oh >= 1 and op.ow >= 1)
    weights = draw(st.sampled_from(WEIGHTS if groups == 1 else WEIGHTS[:2]))
    mp = ConvMapping(draw(st.sampled_from(SPLITS)), draw(st.integers(1, 2)), draw(st.integers(1, 2)),
                     draw(st.integers(1, 3)), draw(st.sampled_from([4, 8, 16])), weights,
                     draw(st.sampled_from([4, 8])) if weights == "ci" else 0)
    return op, mp


def test_conv__every_part_of_the_design_runs_on_the_engine():
    op = Conv2d(1, 16, 12, 12, 32, 3, 3, padding=1)
    for mp in (ConvMapping("rows_by_col", 2, 2, 1, 8, "resident"), ConvMapping("oc", 2, 2, 2, 8, "oc"),
               ConvMapping("rows", 2, 2, 1, 8, "ci", 8), ConvMapping("oc_by_col", 2, 2, 1, 16, "resident")):
        pl = checked_plan(op, mp, NPU1)
        ds = simulate(conv_design(op, mp, NPU1, pl))
        assert str(ds.status.values[0]) == "ok"
        assert int(ds.total_cycles.values[0]) >= pl["lower_bound_cycles"]


@settings(max_examples=12, deadline=None)
@given(small_convs())
def test_conv_design__engine_matches_reference_and_bound(case):
    op, mp = case
    pl = plan(op, mp, NPU1)
    assume(not problems(pl, NPU1))
    design = conv_design(op, mp, NPU1, pl)
    ref = ReferenceSim(lower(design, **LIMITS)).run()
    lowered = lower(design, **LIMITS)
    assert_same(run_kernel([lowered]), 0, ref, lowered)
    assert ref.status == 0, "a legal conv design finishes"
    assert ref.cycle >= pl["lower_bound_cycles"]


@pytest.mark.parametrize("pins", [Pins(split="rows"), Pins(weights="oc"), Pins(cols=1),
                                  Pins(rpc=1), Pins(kb=8), Pins(rows=2),
                                  Pins(weights="ci")])
def test_search__unpinned_is_never_slower_than_a_pinned_one(pins):
    op = Conv2d(1, 16, 14, 14, 32, 3, 3, padding=1)
    free = search_conv(op, NPU1)
    assert free.optimal
    assert free.best_cycles >= free.best_plan["lower_bound_cycles"]
    pinned = search_conv(op, NPU1, pins)
    assert free.best_cycles <= pinned.best_cycles
    for r in pinned.ranked[:pinned.simulated]:  # every simulated candidate is no faster than its bound
        if r["status"] == "ok":
            assert r["cycles"] >= r["lower_bound_cycles"]


def test_search__depthwise_runs_on_the_vector_unit_and_proves_its_answer():
    op = Conv2d(1, 32, 16, 16, 32, 3, 3, stride=2, padding=1, groups=32)
    found = search_conv(op, NPU2)
    assert found.kind == "depthwise" and found.optimal
    assert found.best_cycles >= found.best_plan["lower_bound_cycles"]


@pytest.mark.parametrize("stride", [1, 2])
def test_pointwise__is_the_gemm_search_answer(stride):
    op = Conv2d(1, 64, 14, 14, 96, 1, 1, stride=stride)
    found = search_conv(op, NPU2)
    gemm = search(Gemm(op.oh * op.ow, 64, 96, "int8", out_dtype="int8").matmul(), NPU2)
    assert found.kind == "pointwise"
    assert found.best == gemm.best and found.best_cycles == gemm.best_cycles


def test_halo__a_3x3_conv_moves_about_r_over_stride_times_its_input():
    """Each window re-sends its R input rows from the mem tile's ring: about R / stride times the
    input crosses mem tile -> core, where im2col would move R * S times; DDR reads it once."""
    for stride in (1, 2):
        op = Conv2d(1, 8, 16, 16, 8, 3, 3, stride=stride, padding=1)
        mp = ConvMapping("rows", 1, 1, 1, 8, "resident")
        pl = checked_plan(op, mp, NPU1)
        ds = simulate(conv_design(op, mp, NPU1, pl))
        level = dict(zip(ds.level.values, ds.level_bytes.values[0]))
        weights = op.k * op.c * op.r * op.s
        moved = level["mem_compute"] - weights - level["ddr_write"]  # mem tile -> core, less weights; not outputs
        assert 0.8 * 3 / stride < moved / op.input_bytes < 1.3 * 3 / stride, moved / op.input_bytes
        assert level["ddr_read"] - weights < 1.05 * op.input_bytes  # read once, halo rows not re-read
        assert pl["halo_factor"] == pytest.approx(moved / op.input_bytes)


@pytest.mark.parametrize("fields,name", [
    (dict(c=0), "c"), (dict(groups=4), "groups"), (dict(r=9, h=4), "r"), (dict(padding=-1), "padding"),
    (dict(dtype="fp8"), "dtype"), (dict(stride=0), "stride"), (dict(kernel_efficiency=2.0), "kernel_efficiency")])
def test_conv__bad_input_names_its_field(fields, name):
    with pytest.raises(ConfigError, match=name):
        search_conv(Conv2d(**{**dict(n=1, c=6, h=8, w=8, k=6, r=3, s=3), **fields}), NPU1)


def test_pins__bad_pins_name_their_field():
    with pytest.raises(ConfigError, match="split"):
        search_conv(Conv2d(1, 8, 8, 8, 8, 3, 3), NPU1, Pins(split="diagonal"))
    with pytest.raises(ConfigError, match="cols"):
        search_conv(Conv2d(1, 8, 8, 8, 8, 3, 3), NPU1, Pins(cols=9))


def test_any_shape__maps_and_reports_its_padding():
    op = Conv2d(1, 5, 11, 7, 13, 3, 2, stride=2, padding=1)
    found = search_conv(op, NPU1)
    assert found.best_plan["padding_waste"] >= 0 and found.best_cycles > 0


def test_cli__run_conv_prints_the_summary_and_topology_works(tmp_path):
    from fastsim.cli.conv import conv_cmd

    obj = {"arch": NPU1, "json": False, "trace": None, "skip": True, "yes": False, "trace_raw": False}
    out = CliRunner().invoke(conv_cmd, ["--c", "8", "--h", "10", "--w", "10", "--k", "16", "--padding", "1"], obj=obj)
    assert out.exit_code == 0, out.output
    assert "cycles" in out.output and "bound by" in out.output and "optimal within the space" in out.output
    topo = tmp_path / "t.csv"
    topo.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                    "Strides,\nc1, 10, 10, 3, 3, 4, 8, 1,\nc2, 8, 8, 1, 1, 8, 16, 1,\n")
    out = CliRunner().invoke(conv_cmd, ["--topology", str(topo)], obj=obj)
    assert out.exit_code == 0, out.output
    assert "(dense)" in out.output and "(pointwise)" in out.output and "2 layers" in out.output
    bad = CliRunner().invoke(conv_cmd, ["--groups", "5"], obj=obj)
    assert bad.exit_code == 2 and "groups" in bad.output


def test_systolic__one_call_on_a_mesh_core_is_the_systolic_models_compute_cycles():
    """Where a conv mapping reduces to a PE mesh (a ``core_mesh`` arch, the whole layer in one
    kernel call), its call costs exactly what the systolic model says for the same layer; the
    simulated run adds the array's data movement around it."""
    from fastsim.arch import SYSTOLIC16
    from fastsim.mapping.conv_plan import call_cycles
    from fastsim.systolic import Layer, MeshConfig, mesh_metrics

    op = Conv2d(1, 16, 18, 18, 32, 3, 3)
    mesh = mesh_metrics([Layer.conv("x", 18, 18, 3, 3, 16, 32, 1)], [MeshConfig(16, 16, "os")], jit=False)
    assert call_cycles(op, SYSTOLIC16, op.oh, op.k, op.c) == int(mesh["compute_cycles"][0, 0])
    mp = ConvMapping("rows", 1, 1, op.oh, op.k, "resident")
    ds = simulate(conv_design(op, mp, SYSTOLIC16))
    assert int(ds.total_cycles.values[0]) > int(mesh["compute_cycles"][0, 0])


@settings(max_examples=60, deadline=None)
@given(c=st.integers(1, 96), hw=st.integers(1, 40), k=st.integers(1, 96), rs=st.sampled_from([1, 3, 5, 7]),
       stride=st.integers(1, 2), depthwise=st.booleans(), arch=st.sampled_from([NPU1, NPU2]),
       pin=st.sampled_from([Pins(), Pins(cols=1), Pins(rows=2, rpc=3), Pins(kb=5, weights="ci", cb=4),
                            Pins(split="oc", weights="oc")]))
def test_candidates__are_in_range_so_the_search_plans_them_unchecked(c, hw, k, rs, stride, depthwise, arch, pin):
    """The search plans its own candidates with ``checked=True`` (no ``check_mapping`` per
    candidate): every one it enumerates must pass that check."""
    from fastsim.mapping.conv import check_mapping
    from fastsim.mapping.conv_search import candidates

    op = Conv2d(1, c, hw, hw, c if depthwise else k, rs, rs, stride=stride, padding=rs // 2,
                groups=c if depthwise else 1, dtype="bf16")
    for mp in candidates(op, arch, pin):
        check_mapping(mp, arch)
