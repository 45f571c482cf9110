"""Hand-checked semantics: task queues, broadcast, DDR sharing, compute cost, monotonicity."""
import pytest
import xarray as xr

import fastsim
from fastsim import NPU1
from fastsim import NPU2, Compute, Design, Release, mm2s, s2mm
from fastsim.cost import kernel_cycles
from helpers import passthrough


def events(ds, track):
    sel = ds.isel(design=0)
    mask = sel.event_track.values == track
    return list(zip(sel.event_start_cycles.values[mask], sel.event_end_cycles.values[mask]))


def test_queue__full_task_queue_blocks_the_host():
    arch = NPU2.replace(task_queue_depth=2, bd_setup_cycles=0, bd_chain_cycles=0)
    d = Design(arch)
    a, b = mm2s(d.shim(0), 0), mm2s(d.shim(1), 0)
    buf = d.ddr_buffer(4096)
    for ch, col in ((a, 0), (b, 1)):
        d.route(ch, s2mm(d.mem(col), 0))
        sink = d.buffer(d.mem(col), 256)
        d.start_chain(s2mm(d.mem(col), 0), d.chain(d.bd(s2mm(d.mem(col), 0), sink, 256), cyclic=True))
    bd_a, bd_b = d.bd(a, buf, 256), d.bd(b, buf, 256)
    for _ in range(4):
        d.push(a, bd_a)  # depth 2: the 4th push waits until a's 2nd task started
    d.push(b, bd_b)
    d.wait(a)
    d.wait(b)
    ds = fastsim.simulate(d, trace=True)
    ta, tb = events(ds, str(a)), events(ds, str(b))
    assert len(ta) == 4 and len(tb) == 1
    assert tb[0][0] >= ta[0][1], "b's push had to wait behind a's full queue"


def test_broadcast__waits_for_the_slowest_consumer():
    d = Design(NPU2.replace(bd_setup_cycles=0))
    src = mm2s(d.mem(0), 0)
    fast, slow = s2mm(d.compute(0, 0), 0), s2mm(d.compute(0, 1), 0)
    buf = d.buffer(d.mem(0), 2048)
    d.start_chain(src, d.bd(src, buf, 2048))
    gate = d.lock(slow.tile, 0, "gate")
    for ch, lock in ((fast, None), (slow, gate)):
        sink = d.buffer(ch.tile, 2048)
        d.start_chain(ch, d.bd(ch, sink, 2048, acquire=(lock, 1) if lock else None))
    d.route(src, fast, slow)
    d.core_program(slow.tile, Compute(1000), Release(gate, 1))
    ds = fastsim.simulate(d, trace=True)
    (start, end), = events(ds, str(src))
    assert end > 1000 + 2048 // 4 - 64, "producer stalled until the slow consumer accepted data"
    bp = ds.channel_cycles.isel(design=0).sel(channel_state="backpressure")
    names = list(ds.channel_name.isel(design=0).values)
    assert int(bp[names.index(str(src))]) > 900


def _two_column_reads(arch, size=8192):
    d = Design(arch)
    channels = [mm2s(d.shim(col), 0) for col in range(2)]
    for col, ch in enumerate(channels):
        dst = s2mm(d.mem(col), 0)
        d.route(ch, dst)
        sink = d.buffer(d.mem(col), size)
        d.start_chain(dst, d.bd(dst, sink, size))
        d.push(ch, d.bd(ch, d.ddr_buffer(size), size))
    for ch in channels:
        d.wait(ch)
    return fastsim.simulate(d, trace=True)


def test_ddr__shim_channels_share_the_ddr_cap():
    base = NPU2.replace(bd_setup_cycles=0, lock_acquire_cycles=0)
    free = _two_column_reads(base.replace(ddr_bytes_per_s=64 * base.clock_hz))
    capped = _two_column_reads(base.replace(ddr_bytes_per_s=4 * base.clock_hz))
    t_free, t_capped = int(free.total_cycles[0]), int(capped.total_cycles[0])
    assert 8192 / 4 <= t_free < 8192 / 4 + 100
    assert 8192 / 2 <= t_capped < 8192 / 2 + 100  # each channel gets half of 4 B/cycle
    assert int(capped.channel_cycles.sel(channel_state="ddr_limited").sum()) > 2 * 4000


def test_ddr__columns_can_be_asymmetric():
    arch = NPU2.replace(bd_setup_cycles=0, shim_read_bytes_per_cycle=(1.0,) + (8.0,) * 7)
    ds = _two_column_reads(arch)
    (s0, e0), = events(ds, "tile(0,0).mm2s0")
    (s1, e1), = events(ds, "tile(1,0).mm2s0")
    assert e0 - s0 == pytest.approx(8192, abs=20) and e1 - s1 == pytest.approx(2048, abs=20)


def test_compute__cycles_follow_macs_rate_and_efficiency():
    assert kernel_cycles(64 * 64 * 64, "bf16", NPU1) == 2048
    assert kernel_cycles(64 * 64 * 64, "bf16", NPU1, efficiency=0.5, overhead_cycles=10) == 4106
    assert kernel_cycles(64 * 64 * 64, "int8", NPU2) == 512
    with pytest.raises(fastsim.ConfigError, match="efficiency"):
        kernel_cycles(1, "bf16", NPU2, efficiency=0)


def test_skip__gives_the_same_dataset_as_stepping():
    d = passthrough(n_obj=6)
    a = fastsim.simulate(d, trace=True)
    b = fastsim.simulate(d, trace=True, skip=False)
    speed = ["stepped_cycles", "fast_forwarded_cycles"]  # how the engine got there, not results
    assert a.stepped_cycles.values[0] < b.stepped_cycles.values[0]
    xr.testing.assert_identical(a.drop_vars(speed), b.drop_vars(speed))


def test_ddr__more_bandwidth_never_slows_a_design():
    slow = NPU2.replace(ddr_bytes_per_s=NPU2.ddr_bytes_per_s / 4)
    fast = NPU2.replace(ddr_bytes_per_s=NPU2.ddr_bytes_per_s * 2)
    t = [int(fastsim.simulate(passthrough(8, 4096, 100, arch=a)).total_cycles[0])
         for a in (slow, NPU2, fast)]
    assert t[0] >= t[1] >= t[2]


def test_outputs_that_never_leave_the_array_are_reported():
    """A GEMM whose host never drains C used to finish "ok" with 0 bytes written (issue 14)."""
    import warnings

    from fastsim.design import S2MM, Push, Wait
    from fastsim.mapping import Mapping, Matmul, matmul_design
    from fastsim.simulation import UndrainedOutputWarning

    d = matmul_design(Matmul(32, 32, 32), Mapping("os", "2d", (32, 32, 32), 1, 1), NPU2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fastsim.simulate(d)  # drained: no warning
    d.host = [h for h in d.host if not (isinstance(h, (Push, Wait)) and h.channel.tile.row == 0
                                        and h.channel.direction == S2MM)]
    with pytest.warns(UndrainedOutputWarning, match="never leaves the array"):
        ds = fastsim.simulate(d)
    assert "0 bytes" in ds.attrs["warnings"][0]
    with pytest.raises(fastsim.ConfigError, match="never leaves the array"):
        fastsim.simulate(d, strict=True)
    d.output_on_chip = True  # kept on purpose (a fused group's intermediate): nothing to report
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fastsim.simulate(d, strict=True)
