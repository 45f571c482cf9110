"""Cascade streams between cores (``aie.cascade_flow``) as a rendezvous of kernel calls, and trace
set up by raw register writes read with no time."""
from pathlib import Path

import pytest

from fastsim.design import Tile
from fastsim.errors import SimulationError
from fastsim.mlir import MlirError, read_design, read_text, simulate_design, write_design

HERE = Path(__file__).parent / "mlir"
PAIR = (HERE / "cascade_pair.mlir").read_text()
CHAIN_COSTS = {"mm_put": 500, "mm_put_get": 500, "mm_get": 500}


def calls(ds) -> list[tuple[str, str, int, int]]:
    """(core, kernel, start, end) of every kernel call, from the trace."""
    v = ds.isel(design=0)
    return [(str(t), str(n), int(s), int(e)) for t, n, s, e in
            zip(v.event_track.values, v.event_name.values, v.event_start_cycles.values, v.event_end_cycles.values)
            if str(t).startswith("core")]


def call_of(ds, kernel: str, nth: int = 0) -> tuple[int, int]:
    return [(s, e) for _, k, s, e in calls(ds) if k == kernel][nth]


@pytest.mark.parametrize("work_p, work_c", [(1, 1), (100, 1), (1, 100), (50, 47), (50, 49), (50, 51)])
@pytest.mark.parametrize("put, get", [(10, 20), (20, 10)])
def test_cascade__pair_calls_start_together_after_the_later_arrival(work_p, work_c, put, get):
    """Hand-computed: the producer arrives at its put call after @work_p and @mark (1 cycle), the
    consumer at its get call after @work_c. The rendezvous is four lock operations: the consumer's
    release of `ready` is seen 2 cycles after it arrives, the producer's acquire of `ready` and
    release of `go` take a cycle each, and the consumer's acquire of `go` one more. Then each call
    takes its own cost."""
    ds = simulate_design(read_text(PAIR, {"work_p": work_p, "work_c": work_c, "mark": 1,
                                          "acc_put": put, "acc_get": get}), trace=True)
    arrive_p, arrive_c = work_p + 1, work_c
    put_start = max(arrive_p, arrive_c + 2) + 2
    assert call_of(ds, "acc_put") == (put_start, put_start + put)
    assert call_of(ds, "acc_get") == (put_start + 1, put_start + 1 + get)
    assert int(ds.total_cycles[0]) == max(put_start + put, put_start + 1 + get) + 1


def test_cascade__a_call_that_names_no_cascade_does_not_wait():
    ds = simulate_design(read_text(PAIR, {"work_p": 10, "work_c": 1000, "mark": 5, "acc_put": 10,
                                          "acc_get": 10}), trace=True)
    assert call_of(ds, "mark") == (10, 15)
    assert call_of(ds, "acc_put")[0] == 1000 + 2 + 2


def test_cascade__without_put_or_get_in_its_names_every_call_of_an_end_core_uses_it():
    """As mlir-aie's cascade_flows test (kernels extern_kernel1..3): the n-th call on one end
    meets the n-th on the other, so @work_p waits for @work_c's start and @acc_a for @acc_b's."""
    text = PAIR.replace("      func.call @mark() : () -> ()\n", "").replace("acc_put", "acc_a").replace(
        "acc_get", "acc_b")
    ds = simulate_design(read_text(text, {"work_p": 10, "work_c": 100, "acc_a": 7, "acc_b": 9}), trace=True)
    assert call_of(ds, "work_p") == (4, 14) and call_of(ds, "work_c") == (5, 105)
    assert call_of(ds, "acc_a") == (109, 116) and call_of(ds, "acc_b") == (110, 119)


def test_cascade__the_rendezvous_locks_are_named_and_placed_on_the_end_with_fewer_locks():
    costs = {"work_p": 1, "work_c": 1, "mark": 1, "acc_put": 1, "acc_get": 1}
    names = {"cascade_1_2_to_2_2_ready", "cascade_1_2_to_2_2_go"}
    info = read_text(PAIR, costs)
    assert {lk.name: lk.tile for lk in info.design.locks} == dict.fromkeys(names, Tile(2, 2))
    busy = PAIR.replace("    aie.cascade_flow", "    %l = aie.lock(%c, 0) {init = 0 : i32}\n    aie.cascade_flow")
    info = read_text(busy, costs)
    assert {lk.name: lk.tile for lk in info.design.locks if lk.name in names} == dict.fromkeys(names, Tile(1, 2))


def test_cascade__chain_calls_of_a_round_start_within_a_few_cycles_of_each_other():
    """Three cores: each round's calls start within 3 cycles (the go passes one hop per ~1.5
    cycles), and none starts before its data is there."""
    ds = simulate_design(read_design(HERE / "cascade_chain.mlir", CHAIN_COSTS), trace=True)
    rounds = [[call_of(ds, k, i)[0] for k in CHAIN_COSTS] for i in range(4)]
    for starts in rounds:
        assert max(starts) - min(starts) <= 3
    got = calls(ds)
    assert len(got) == 12 and all(e - s == 500 for _, _, s, e in got)
    assert int(ds.total_cycles[0]) == 2409  # golden: this model's cycles for the chain


def test_cascade__a_slow_consumer_holds_back_the_producer_s_next_round():
    ds = simulate_design(read_design(HERE / "cascade_chain.mlir", {**CHAIN_COSTS, "mm_get": 2000}), trace=True)
    for i in range(3):
        assert call_of(ds, "mm_put", i + 1)[0] > call_of(ds, "mm_get", i)[1]


def test_cascade__a_get_that_no_put_meets_is_a_deadlock_naming_the_cascade():
    text = PAIR.replace("      func.call @acc_get() : () -> ()\n", "      func.call @acc_get() : () -> ()\n" * 2)
    info = read_text(text, {"work_p": 1, "work_c": 1, "mark": 1, "acc_put": 10, "acc_get": 10})
    with pytest.raises(SimulationError, match=r"core tile\(2,2\).*cascade_1_2_to_2_2_go"):
        simulate_design(info)


@pytest.mark.parametrize("change, message", [
    (("%c = aie.tile(2, 2)", "%c = aie.tile(3, 2)"), r":9: op 'aie.cascade_flow' .*not neighbours"),
    (("aie.cascade_flow(%p, %c)", "aie.cascade_flow(%c, %p)"), r":9: op 'aie.cascade_flow' .*east or south"),
    (("%c = aie.tile(2, 2)", "%c = aie.tile(1, 1)"), r":9: op 'aie.cascade_flow' .*compute tiles"),
    (("aie.cascade_flow(%p, %c)", "aie.cascade_flow(%p, %c)\n    aie.cascade_flow(%p, %c)"),
     r":10: op 'aie.cascade_flow' .*a second cascade flow"),
    (("func.call @acc_get()", "func.call @acc_put()"), r":23: func.call: kernel 'acc_put' puts onto a cascade, "
                                                        r"but no aie.cascade_flow leaves tile\(2,2\)"),
])
def test_cascade__what_it_cannot_model_is_refused_with_op_and_line(change, message):
    with pytest.raises(MlirError, match=message):
        read_text(PAIR.replace(*change), {"work_p": 1, "work_c": 1, "mark": 1, "acc_put": 1, "acc_get": 1})


# -- trace set up by register writes -------------------------------------------------------------------
TRACE = (HERE / "trace_registers.mlir").read_text()
SETUP = TRACE[TRACE.index("      %trace_control0"):TRACE.index("      %c0 = arith.constant 0 : i64")]


def test_trace_setup__register_writes_and_a_trace_bd_take_no_time():
    info = read_text(TRACE, {"kernel": 300})
    assert {name for name, _ in info.untimed} >= {"aiex.npu.write32", "aiex.npu.writebd", "aiex.npu.address_patch"}
    bare = read_text(TRACE.replace(SETUP, ""), {"kernel": 300})
    assert int(simulate_design(info).total_cycles[0]) == int(simulate_design(bare).total_cycles[0])


@pytest.mark.parametrize("change, stop", [
    (("%trace_event0 = arith.constant 0x340E0", "%trace_event0 = arith.constant 0x1F000"), "aiex.npu.write32"),
    (("%s2mm1_task_queue = arith.constant 0x1D20C", "%s2mm1_task_queue = arith.constant 0x1D204"),
     "aiex.npu.write32"),
    (("      aiex.npu.write32(%s2mm1_task_queue, %bd15)", "      // "), "aiex.npu.writebd"),
    (("{addr = 0x1D1E4 : ui32", "{addr = 0x1D064 : ui32"), "aiex.npu.address_patch"),
])
def test_trace_setup__writes_that_could_change_modelled_state_are_refused(change, stop):
    """A lock register (0x1F000), a BD pushed to S2MM 0 (which carries the design's output: a data
    BD, refused at the queue write that starts it for its packet header), a BD never pushed, or an
    address patch into another BD (BD 3) stay outside the subset."""
    with pytest.raises(MlirError) as e:
        read_text(TRACE.replace(*change), {"kernel": 300})
    assert stop in {name for name, _ in e.value.stops}


def test_cascade__an_exported_cascade_design_reads_back_to_the_same_cycles():
    """Export writes the rendezvous as the locks it is made of; read back, the cycles are the same."""
    info = read_design(HERE / "cascade_chain.mlir", CHAIN_COSTS)
    again = read_text(write_design(info.design))
    assert int(simulate_design(again).total_cycles[0]) == int(simulate_design(info).total_cycles[0])
