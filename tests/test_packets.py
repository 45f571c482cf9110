"""Packet-switched fan-in: several MM2S channels share one S2MM, one packet (MM2S BD) at a time.

The engine (stepping, event skipping, fast-forward) against the reference model on random packet
designs; the arbitration order; byte totals; which route sets validation accepts.
"""
from pathlib import Path

import pytest
from hypothesis import given, settings

import fastsim
from fastsim.arch import NPU2
from fastsim.design import Acquire, Compute, Design, Loop, Release, mm2s, s2mm
from fastsim.errors import ConfigError
from fastsim.kernels import layout as L
from fastsim.lower import lower
from fastsim.mlir import read_design
from fastsim.results import LEVELS
from fastsim.validate import validate_design
from reference_model import ReferenceSim
from strategies import packet_designs, packet_fan_out_designs, packet_pipelines
from test_engine_vs_reference import LIMITS, assert_same, run_kernel

HERE = Path(__file__).parent / "mlir"
EVENTS = dict(LIMITS, max_events=64)
MODES = [dict(skip=False, fast_forward=False), dict(skip=True, fast_forward=False),
         dict(skip=True, fast_forward=True)]


def assert_modes_match_reference(design):
    """Stepping, event skipping and fast-forward, each against the reference, cycle for cycle."""
    ref = ReferenceSim(lower(design, **LIMITS)).run()
    for mode in MODES:
        lowered = lower(design, **mode, **LIMITS)
        assert_same(run_kernel([lowered]), 0, ref, lowered)


@settings(max_examples=80)
@given(packet_designs())
def test_packets__engine_matches_reference_on_random_fan_in(design):
    assert_modes_match_reference(design)


@settings(max_examples=80)
@given(packet_fan_out_designs())
def test_packets__engine_matches_reference_on_random_fan_out_by_packet_id(design):
    validate_design(design)
    assert_modes_match_reference(design)


def test_packets__mlir_fan_in_design_matches_the_reference_model():
    """tests/mlir/packet_fan_in.mlir (two cores' aie.packet_flows into the shim's S2MM 0, as
    mlir-aie's packet_flow_same_id_merge designs), read from MLIR: every engine mode against the
    reference model, cycle for cycle, with short and long kernels."""
    for cycles in (100, 2000):
        assert_modes_match_reference(read_design(HERE / "packet_fan_in.mlir", {"kernel": cycles}).design)


def test_packets__mlir_fan_out_design_matches_the_reference_model():
    """tests/mlir/packet_fan_out.mlir (the shim's MM2S fans out by packet id to two cores, as
    mlir-aie's packet_flow_fanout), read from MLIR: every engine mode against the reference model,
    and each core's S2MM takes the two packets of its id (512 B)."""
    for cycles in (100, 3000):
        design = read_design(HERE / "packet_fan_out.mlir", {"kernel": cycles}).design
        assert_modes_match_reference(design)
    lowered = lower(design, **EVENTS)
    out = run_kernel([lowered])
    got = {str(c): int(out["ch_bytes"][0, i]) // L.UNITS_PER_BYTE for i, c in enumerate(lowered.channels)}
    assert got["tile(0,2).s2mm0"] == got["tile(0,3).s2mm0"] == 512


@settings(max_examples=40)
@given(packet_pipelines())
def test_packets__engine_matches_reference_on_periodic_fan_in(design):
    assert_modes_match_reference(design)


def three_producers(n_bd: int = 2, size: int = 64) -> Design:
    """Three compute-tile MM2S channels, each chaining ``n_bd`` BDs of ``size`` bytes at cycle 0,
    all packet-routed into the mem tile's S2MM 0, which takes every byte in one pushed BD."""
    d = Design(NPU2, "three producers")
    dst = s2mm(d.mem(0), 0)
    for col, row in ((0, 0), (0, 1), (1, 0)):
        src = mm2s(d.compute(col, row), 0)
        buf = d.buffer(src.tile, size)
        d.start_chain(src, d.chain(*[d.bd(src, buf, size) for _ in range(n_bd)]))
        d.route(src, dst, packet=True)
    d.push(dst, d.bd(dst, d.buffer(dst.tile, 3 * n_bd * size), 3 * n_bd * size))
    d.wait(dst)
    return d


def test_packets__port_goes_round_robin_by_channel_index():
    """Packets end in the order A1 B1 C1 A2 B2 C2 (round-robin after the last owner), not each
    producer's packets back to back; a packet's bytes are never interleaved with another's."""
    lowered = lower(three_producers(), **EVENTS)
    out = run_kernel([lowered])
    assert out["res"][0, L.R_STATUS] == L.ST_OK
    producers = sorted(i for i, c in enumerate(lowered.channels) if c.direction == "mm2s")
    ev = out["events"][0, :out["res"][0, L.R_EVENTS]]
    ends = sorted((int(e[4]), int(e[1])) for e in ev if e[0] == L.EV_CHANNEL and int(e[1]) in producers)
    assert [c for _, c in ends] == producers * 2
    assert len({t for t, _ in ends}) == len(ends)  # one packet at a time


def test_packets__reference_agrees_on_the_arbitration_example():
    lowered = lower(three_producers(n_bd=3, size=40), **EVENTS)
    ref = ReferenceSim(lowered).run()
    assert_same(run_kernel([lowered]), 0, ref, lowered)


def test_packets__bytes_into_the_s2mm_are_the_producers_bytes():
    design = three_producers(n_bd=2, size=48)
    ds = fastsim.simulate(design)
    lowered = lower(design)
    out = run_kernel([lowered])
    ch_bytes = out["ch_bytes"][0, :len(lowered.channels)]
    into = [i for i, c in enumerate(lowered.channels) if c.direction == "s2mm"]
    sent = [i for i, c in enumerate(lowered.channels) if c.direction == "mm2s"]
    assert ch_bytes[into].sum() == ch_bytes[sent].sum() == 3 * 2 * 48 * L.UNITS_PER_BYTE
    # every producer's bytes counted once, at its own level (two from column 0, one from column 1)
    level = dict(zip(LEVELS, ds.level_bytes.values[0]))
    assert sum(level.values()) == 3 * 2 * 48
    assert ds.total_cycles.values[0] == out["res"][0, L.R_CYCLES]


def _two_into_one(first_packet: bool, second_packet: bool) -> Design:
    d = Design(NPU2, "two into one")
    dst = s2mm(d.mem(0), 0)
    for row, packet in ((0, first_packet), (1, second_packet)):
        src = mm2s(d.compute(0, row), 0)
        d.start_chain(src, d.bd(src, d.buffer(src.tile, 16), 16))
        d.route(src, dst, packet=packet)
    d.push(dst, d.bd(dst, d.buffer(dst.tile, 32), 32))
    return d


def test_packets__validation_accepts_fan_in_only_of_packet_routes():
    validate_design(_two_into_one(True, True))
    for flags in ((False, False), (True, False), (False, True)):
        with pytest.raises(ConfigError, match="only packet routes"):
            validate_design(_two_into_one(*flags))


def test_packets__validation_refuses_a_packet_route_with_two_destinations():
    d = Design(NPU2, "fan-out")
    src = mm2s(d.compute(0, 0), 0)
    d.start_chain(src, d.bd(src, d.buffer(src.tile, 16), 16))
    d.route(src, s2mm(d.mem(0), 0), s2mm(d.mem(0), 1), packet=True)
    for i in range(2):
        dst = s2mm(d.mem(0), i)
        d.push(dst, d.bd(dst, d.buffer(dst.tile, 16), 16))
    with pytest.raises(ConfigError, match="packet route has one s2mm"):
        validate_design(d)


def periodic_fan_in(n_obj: int = 40) -> Design:
    """Two cores make ``n_obj`` objects each (64 and 96 bytes, 60 cycles a call) and send each as a
    packet into the shim's S2MM 0, which the host drains one round (160 bytes) at a time."""
    d = Design(NPU2, "periodic fan-in")
    dst = s2mm(d.shim(0), 0)
    for row, size, cycles in ((0, 64, 60), (1, 96, 60)):
        tile = d.compute(0, row)
        free, full = d.lock(tile, 2), d.lock(tile, 0)
        bds = [d.bd(mm2s(tile, 0), d.buffer(tile, size), size, acquire=(full, 1), release=(free, 1)) for _ in range(2)]
        d.start_chain(mm2s(tile, 0), d.chain(*bds, cyclic=True))
        d.route(mm2s(tile, 0), dst, packet=True)
        d.core_program(tile, Loop(n_obj, (Acquire(free), Compute(cycles), Release(full))))
    d.push(dst, d.bd(dst, d.ddr_buffer(160), 160), repeat=n_obj)
    d.wait(dst)
    return d


def test_packets__fast_forward_jumps_periods_of_a_shared_port_exactly():
    design = periodic_fan_in()
    ref = ReferenceSim(lower(design, **EVENTS)).run()
    jumped = run_kernel([lower(design, skip=True, fast_forward=True, **EVENTS)])
    assert jumped["res"][0, L.R_FF_CYCLES] > 0 and ref.status == L.ST_OK
    assert_modes_match_reference(design)


def test_packets__a_deadlock_names_the_packet_port_a_producer_waits_for():
    """The S2MM takes 64 bytes and stops: the first packet holds the port with bytes left, so the
    other producer is stuck waiting for it, and the error says so."""
    d = Design(NPU2, "stuck port")
    dst = s2mm(d.mem(0), 0)
    for row in (0, 1):
        src = mm2s(d.compute(0, row), 0)
        d.start_chain(src, d.bd(src, d.buffer(src.tile, 256), 256))
        d.route(src, dst, packet=True)
    d.push(dst, d.bd(dst, d.buffer(dst.tile, 64), 64))
    with pytest.raises(fastsim.errors.DeadlockError) as e:
        fastsim.simulate(d)
    assert "waiting for the packet port of tile(0,1).s2mm0 (held by tile(0,2).mm2s0)" in str(e.value)


def shim_fan_out(sizes=(64, 128, 64), ids=(3, 7, 3), wait=True) -> Design:
    """mlir-aie's packet_flow_fanout: the shim's MM2S 0 has two packet routes, id 3 to the mem
    tile's S2MM 0 and id 7 to its S2MM 1; the host pushes BDs of ``sizes`` carrying ``ids``."""
    d = Design(NPU2, "fan-out")
    src, dsts = mm2s(d.shim(0), 0), {3: s2mm(d.mem(0), 0), 7: s2mm(d.mem(0), 1)}
    for pid, dst in dsts.items():
        d.route(src, dst, packet_id=pid)
        n = sum(s for s, i in zip(sizes, ids) if i == pid)
        if n:
            d.push(dst, d.bd(dst, d.buffer(dst.tile, n), n))
    buf = d.ddr_buffer(max(sizes))
    for n, pid in zip(sizes, ids):
        d.push(src, d.bd(src, buf, n, packet_id=pid))
    if wait:
        d.wait(src)
    return d


def test_packets__fan_out_sends_each_bd_to_the_route_its_packet_id_picks():
    design = shim_fan_out()
    validate_design(design)
    lowered = lower(design, **EVENTS)
    out = run_kernel([lowered])
    assert out["res"][0, L.R_STATUS] == L.ST_OK
    got = {str(c): int(out["ch_bytes"][0, i]) // L.UNITS_PER_BYTE for i, c in enumerate(lowered.channels)}
    assert got == {"tile(0,0).mm2s0": 256, "tile(0,1).s2mm0": 128, "tile(0,1).s2mm1": 128}
    assert_modes_match_reference(design)
    ds = fastsim.simulate(design)
    level = dict(zip(LEVELS, ds.level_bytes.values[0]))
    assert level["ddr_read"] == level["shim_mem"] == 256  # each byte counted once, at its level


def test_packets__fan_out_packets_of_one_source_go_one_after_the_other():
    """The BDs are one channel's: each packet (to either S2MM) starts after the one before it ends,
    so the two 64-byte packets to S2MM 0 add at least their stream time to the 128-byte one's."""
    one = lower(shim_fan_out(sizes=(128,), ids=(7,)), **EVENTS)
    three = lower(shim_fan_out(), **EVENTS)
    extra = 128 / NPU2.stream_bytes_per_cycle
    assert run_kernel([three])["res"][0, L.R_CYCLES] >= run_kernel([one])["res"][0, L.R_CYCLES] + extra


def test_packets__validation_refuses_a_fan_out_bd_without_a_routed_packet_id():
    design = shim_fan_out(ids=(3, 7, 5))
    with pytest.raises(ConfigError, match=r"packet_id.*one of the packet ids of the routes from tile\(0,0\).mm2s0 \(3, 7\)"):
        validate_design(design)


def test_packets__validation_refuses_a_fan_out_destination_shared_with_another_source():
    design = shim_fan_out()
    other = mm2s(design.compute(0, 0), 0)
    design.start_chain(other, design.bd(other, design.buffer(other.tile, 16), 16))
    design.route(other, s2mm(design.mem(0), 0), packet=True)
    with pytest.raises(ConfigError, match="fan-out by packet id shared with another source"):
        validate_design(design)


def test_packets__validation_refuses_two_packet_ids_of_one_source_to_one_destination():
    """Two ids of one source routed to one S2MM would list that source twice among the S2MM's
    producers, and its bytes would be counted twice at their level: refused, not modelled."""
    design = shim_fan_out()
    design.route(mm2s(design.shim(0), 0), s2mm(design.mem(0), 0), packet_id=9)
    with pytest.raises(ConfigError, match=r"already reached by another packet id of tile\(0,0\).mm2s0"):
        validate_design(design)


def test_packets__fan_out_exports_and_reads_back_to_the_same_cycles():
    from fastsim.mlir import read_text, simulate_design, write_design

    design = shim_fan_out()
    back = read_text(write_design(design)).design
    assert sorted((str(r.src), r.packet_id) for r in back.routes) == [("tile(0,0).mm2s0", 3), ("tile(0,0).mm2s0", 7)]
    assert int(simulate_design(read_text(write_design(design))).total_cycles[0]) == \
        int(fastsim.simulate(design).total_cycles.values[0])
