"""The DDR cost per contiguous run of a shim BD (``Arch.ddr_run_overhead_s``, engine ``_share_ddr``)."""
import sys
from pathlib import Path

import pytest
import tomli_w
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fastsim
from fastsim import NPU1, NPU2, Design, mm2s, s2mm
from fastsim.errors import ConfigError
from fastsim.lower import run_bytes
from strategies import pipelines, small_arch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from fit_ddr_runs import fit  # noqa: E402

CLOCK_HZ = 1e9
FAST = NPU2.replace(name="runs", clock_hz=CLOCK_HZ, bd_setup_cycles=0, bd_chain_cycles=0, lock_acquire_cycles=0,
                    lock_release_cycles=0, ddr_bytes_per_s=8 * CLOCK_HZ, ddr_run_overhead_s=0.0)


def _reads(arch, columns: int, nbytes: int, run_words: int) -> Design:
    """``columns`` shim channels each reading ``nbytes`` from DDR into their mem tile, in runs of
    ``run_words`` words (every other run skipped over: the rows of a strided block)."""
    d = Design(arch, "reads")
    words = nbytes // 4
    for col in range(columns):
        src, dst = mm2s(d.shim(col), 0), s2mm(d.mem(col), 0)
        d.route(src, dst)
        d.start_chain(dst, d.bd(dst, d.buffer(d.mem(col), nbytes), nbytes))
        rows = words // run_words  # powers of two: split into two dims within the 10-bit wrap
        inner_rows = min(rows, 256)
        dims = ((run_words, 1), (inner_rows, 2 * run_words), (rows // inner_rows, 2 * run_words * inner_rows))
        dims = dims if run_words < words else ()
        d.push(src, d.bd(src, d.ddr_buffer(2 * nbytes), nbytes, dims=dims))
    for col in range(columns):
        d.wait(mm2s(d.shim(col), 0))
    return d


def _cycles(design: Design) -> int:
    ds = fastsim.simulate(design)
    assert str(ds.status.values[0]) == "ok"
    return int(ds.total_cycles[0])


def test_run_bytes__no_dims_is_one_run():
    d = Design(NPU2)
    ch = mm2s(d.shim(0), 0)
    assert run_bytes(d.bd(ch, d.ddr_buffer(4096), 4096)) == 4096


def test_run_bytes__dims_that_continue_each_other_merge_and_a_gap_ends_the_run():
    d = Design(NPU2)
    ch, buf = mm2s(d.shim(0), 0), d.ddr_buffer(1 << 16)
    assert run_bytes(d.bd(ch, buf, 1024, dims=((64, 1), (4, 64)))) == 1024  # whole rows: one run
    assert run_bytes(d.bd(ch, buf, 1024, dims=((64, 1), (4, 128)))) == 256  # rows of a wider matrix
    assert run_bytes(d.bd(ch, buf, 1024, dims=((16, 1), (4, 16), (4, 512)))) == 256
    assert run_bytes(d.bd(ch, buf, 1024, dims=((64, 2), (4, 128)))) == 4  # every word its own run


def test_ddr_runs__a_ddr_bound_design_takes_bytes_plus_runs_over_the_rate():
    """Eight channels on a DDR of 8 B/cycle: the DDR is the bottleneck, and a run costs 2 ns x 8 B
    = 16 B of its time, so 64 KiB in runs of 64 B takes (65536 + 1024 x 16) / 8 cycles."""
    arch = FAST.replace(ddr_run_overhead_s=2e-9)
    total = 8 * 8192
    runs = total // 64
    assert _cycles(_reads(arch, 8, 8192, 16)) == pytest.approx((total + runs * 16) / 8, rel=0.01)
    assert _cycles(_reads(FAST, 8, 8192, 16)) == pytest.approx(total / 8, rel=0.01)


def test_ddr_runs__one_channel_below_the_cap_pays_nothing():
    """The cost takes shared DDR capacity, not a per-channel stall: one 4 B/cycle stream on a DDR
    of 64 B/cycle in 256 B runs (each costing 4 ns x 64 B = 256 B of DDR time) uses 8 B/cycle of
    it and keeps its stream rate; in 4 B runs it would need 260 B/cycle and is held to the cap."""
    arch = FAST.replace(ddr_bytes_per_s=64 * CLOCK_HZ, ddr_run_overhead_s=4e-9)
    free = _cycles(_reads(FAST.replace(ddr_bytes_per_s=64 * CLOCK_HZ), 1, 8192, 64))
    assert _cycles(_reads(arch, 1, 8192, 64)) == free
    assert _cycles(_reads(arch, 1, 8192, 1)) == pytest.approx(free * 260 / 4 / 16, rel=0.02)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.sampled_from([1024, 4096]), st.sampled_from([1, 4, 16, 64]),
       st.sampled_from([1e-9, 4e-9, 2e-8]), st.sampled_from([2.0, 8.0, 40.0]))
def test_ddr_runs__bytes_and_runs_over_the_bound_rate_never_exceed_the_cycles(columns, nbytes, run_words, overhead_s,
                                                                              ddr_bytes_per_cycle):
    """What the search's DDR bound relies on (``ddr_runs.bound_run_bytes``, ``bound_rate``): the
    engine's shares never serve more bytes and runs a cycle than the DDR's capacity in units and
    one unit per shim channel."""
    from fastsim.mapping.ddr_runs import bound_rate, bound_run_bytes

    arch = FAST.replace(ddr_run_overhead_s=overhead_s, ddr_bytes_per_s=ddr_bytes_per_cycle * CLOCK_HZ)
    run = bound_run_bytes(arch)
    assume(run > 0)
    runs = columns * nbytes // (4 * run_words)
    assert _cycles(_reads(arch, columns, nbytes, run_words)) >= (columns * nbytes + runs * run) / bound_rate(arch, columns)


def test_bound_run_bytes__charges_the_presets_and_not_where_a_share_could_round_up():
    """A run costs the presets 4 ns of the DDR; a cost so dear that a share could be held at one
    unit a cycle (and then take more than its part of the DDR) is left out of the bounds."""
    from fastsim.mapping.ddr_runs import bound_run_bytes

    for arch in (NPU1, NPU2):
        assert bound_run_bytes(arch) == pytest.approx(arch.ddr_run_overhead_s * arch.ddr_bytes_per_s, abs=0.01)
    assert bound_run_bytes(NPU2.replace(ddr_run_overhead_s=1e-6)) == 0
    assert bound_run_bytes(NPU2.replace(ddr_run_overhead_s=0.0)) == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.sampled_from([1024, 4096]), st.sampled_from([1, 4, 16, 64]),
       st.sampled_from([0.0, 1e-9, 4e-9, 2e-8]), st.sampled_from([1e-9, 1e-8]))
def test_ddr_runs__larger_run_overhead_is_never_faster(columns, nbytes, run_words, overhead_s, more_s):
    low = _cycles(_reads(FAST.replace(ddr_run_overhead_s=overhead_s), columns, nbytes, run_words))
    high = _cycles(_reads(FAST.replace(ddr_run_overhead_s=overhead_s + more_s), columns, nbytes, run_words))
    assert high >= low


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.sampled_from([1024, 4096]), st.sampled_from([1, 2, 8, 32]), st.sampled_from([2, 4, 8]),
       st.sampled_from([1e-9, 4e-9, 2e-8]))
def test_ddr_runs__fewer_longer_runs_of_the_same_bytes_are_never_slower(columns, nbytes, run_words, longer,
                                                                        overhead_s):
    arch = FAST.replace(ddr_run_overhead_s=overhead_s)
    short = _cycles(_reads(arch, columns, nbytes, run_words))
    assert _cycles(_reads(arch, columns, nbytes, run_words * longer)) <= short


@settings(max_examples=40, deadline=None)
@given(pipelines(max_objects=6), st.sampled_from([1e-9, 4e-9, 3e-8]))
def test_ddr_runs__larger_run_overhead_never_speeds_a_pipeline(design, more_s):
    """Random ObjectFifo pipelines (shim BDs with short runs among them): more DDR time per run
    never finishes sooner."""
    ds = fastsim.simulate(design)
    assume(str(ds.status.values[0]) == "ok")
    slower = design.arch.replace(ddr_run_overhead_s=design.arch.ddr_run_overhead_s + more_s)
    assert _cycles(_retarget(design, slower)) >= int(ds.total_cycles[0])


def _retarget(design: Design, arch) -> Design:
    """The same design on another arch (the tables are the design's; only the DDR costs change)."""
    import copy

    twin = copy.copy(design)
    twin.arch = arch
    return twin


def test_ddr_run_overhead__presets_carry_the_fit_and_npu1_the_assumption():
    fitted, errors = fit(NPU2.ddr_bytes_per_s)
    assert NPU2.ddr_run_overhead_s == pytest.approx(fitted, rel=0.02)
    assert max(abs(e) for e in errors) < 0.2
    assert NPU1.ddr_run_overhead_s == NPU2.ddr_run_overhead_s  # no npu1 measurement: an assumption
    assert "assumption" in NPU1.notes["ddr_run_overhead_s"] and "fit" in NPU2.notes["ddr_run_overhead_s"]


def test_ddr_run_overhead__out_of_range_is_refused_with_the_field():
    with pytest.raises(ConfigError, match="ddr_run_overhead_s"):
        fastsim.arch.validate(NPU2.replace(ddr_run_overhead_s=-1e-9))
    with pytest.raises(ConfigError, match="ddr_run_overhead_s"):
        fastsim.arch.validate(NPU2.replace(ddr_run_overhead_s=1.0))


def test_small_arch__draws_a_run_overhead():
    """The engine-vs-reference strategies exercise the rule (a non-zero overhead is drawn)."""
    seen = set()

    @settings(max_examples=40, deadline=None)
    @given(small_arch())
    def collect(arch):
        seen.add(arch.ddr_run_overhead_s > 0)

    collect()
    assert seen == {True, False}


@pytest.mark.parametrize("value, accepted", [(2e-9, True), (0.0, True), (-1e-9, False), (1.0, False), ("4ns", False)])
def test_arch_toml__ddr_run_overhead_is_a_field_like_the_others(tmp_path, value, accepted):
    file = tmp_path / "arch.toml"
    file.write_text(tomli_w.dumps({"arch": {"base": "npu2", "name": "mine", "ddr_run_overhead_s": value}}))
    if accepted:
        assert fastsim.arch.load(file).ddr_run_overhead_s == value
    else:
        with pytest.raises(ConfigError, match="ddr_run_overhead_s"):
            fastsim.arch.load(file)


def test_arch_toml__a_misspelt_run_overhead_is_refused_by_name(tmp_path):
    file = tmp_path / "arch.toml"
    file.write_text(tomli_w.dumps({"arch": {"base": "npu2", "name": "mine", "ddr_run_overhead": 2e-9}}))
    with pytest.raises(ConfigError, match="ddr_run_overhead"):
        fastsim.arch.load(file)
