"""Control costs inside one dispatch (docs/hardware.md "Control costs"): every op after the first in
a dispatch pays the runtime-sequence instructions that set its design up (shim tasks, syncs,
mem-tile BDs, chain starts and locks, one parameter write per core), each
``Arch.runtime_instruction_cycles``; the time is its own variable and in the total."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from fastsim.arch import NPU1, NPU2
from fastsim.evaluation import GraphPins, evaluate
from fastsim.graph import VECTOR, Op, OpGraph, Operand
from fastsim.llm import LlmStudy, ModelConfig, simulate_llm
from fastsim.mapping.dispatch import (ControlCounts, DispatchLimits, control_instructions, control_seconds_per_dispatch,
                                      ControlWeight, layer_instructions, repeat_instructions,
                                      weighted_instructions)

TINY = ModelConfig("tiny", 256, 2, 4, 2, 64, 512, 1024, True)
ROOMY = DispatchLimits(program_memory_bytes=1 << 20)

ACT = Operand("activations", 2.0)
ONE_COLUMN = GraphPins(columns=(("elementwise", 1),), fusion="none")


def _chain(n: int, m: int = 64, width: int = 256) -> OpGraph:
    """``n`` element-wise ops, each reading the one before, one layer each."""
    ops = tuple(Op(f"op{i}", "elementwise", i, VECTOR, m, 1, width, ACT, vector_cycles_per_elem=1.0) for i in range(n))
    return OpGraph(ops, tuple((i - 1,) if i else () for i in range(n)))


def test_control__two_layer_graph_counts_instructions_as_by_hand():
    # The second op: 64 x 256 bf16 on one column (four cores), its input and output through DDR.
    # Shim: X read on MM2S0, Y written on S2MM0, each a task of npu_writebd + npu_address_patch +
    # npu_push_queue = 2 x 3 = 6; one npu_sync on Y.
    # Mem tile: X lands in a ring of 2 buffers per core (8 BDs on S2MM0) and goes up to each core on
    # its own MM2S (2 BDs each, 8); Y comes down from each core on its own S2MM (2 each, 8) and
    # leaves on MM2S5 (8): 32 BDs, one blockwrite each; chains started: 1 + 4 + 4 + 1 = 10 queue
    # pushes; locks: a producer and a consumer lock per core for X and for Y, 16 set_locks.
    # Cores: one runtime-parameter write each, 4.
    # 6 + 1 + 32 + 10 + 16 + 4 = 69; the first op of the dispatch pays none.
    result = evaluate(_chain(2), NPU2, ONE_COLUMN)
    assert result.dispatch.of_op == [0, 0]
    second = result.results[result.placed[1].key].control
    assert second == ControlCounts(shim_tasks=2, tile_pushes=0, syncs=1, mem_bds=32, mem_starts=10, mem_locks=16,
                                   cores=4)
    assert result.control_instructions == (0, 69)


def test_control__seconds_are_instructions_at_the_command_processors_rate():
    from fastsim.evaluation import to_dataset

    result = evaluate(_chain(2), NPU2, ONE_COLUMN)
    ds = to_dataset(result, ONE_COLUMN, NPU2, DispatchLimits(), {})
    each = NPU2.runtime_instruction_cycles / NPU2.clock_hz
    assert float(ds.control_seconds) == float(ds.op_control_seconds.sum()) == 69 * each
    assert ds.op_control_seconds.attrs["units"] == "s" and ds.control_seconds.attrs["units"] == "s"
    pieces = (float(ds.op_seconds.sum()) + float(ds.dispatch_seconds) + float(ds.preload_seconds)
              + float(ds.control_seconds) + float(ds.program_reload_seconds))
    assert np.isclose(float(ds.total_seconds), pieces)
    assert np.isclose(float(ds.dispatch_total_seconds.sum()), float(ds.total_seconds))
    free = NPU2.replace(runtime_instruction_cycles=0)
    assert float(to_dataset(evaluate(_chain(2), free, ONE_COLUMN), ONE_COLUMN, free, DispatchLimits(),
                            {}).control_seconds) == 0.0


def test_control__each_dispatch_sets_its_own_first_op_up():
    counts = [ControlCounts(1, 0, 1, 2, 1, 2, 1)] * 4
    each = layer_instructions(counts[0])
    assert each == 3 + 1 + 2 + 1 + 2 + 1
    assert control_instructions(counts, [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 1]) == [0, each, 0, each]
    # a token-blocked group's ops take turns block by block: each block is set up anew
    assert control_instructions(counts[:2], [3, 3], [0, 0], [0, 0]) == [2 * each, 3 * each]
    assert control_seconds_per_dispatch([0, each, 0, each], [0, 0, 1, 1], 2, NPU1) == \
        [each * NPU1.runtime_instruction_cycles / NPU1.clock_hz] * 2


def test_control__a_repeated_ops_other_instances_push_their_tasks_again():
    # an op repeated per expert: set up once, then each other expert's instance re-pushes its shim
    # tasks (3 instructions each) and on-chip sends, restarts its mem-tile chains and waits; its
    # BDs, locks and core parameters stay
    c = ControlCounts(shim_tasks=2, tile_pushes=1, syncs=1, mem_bds=6, mem_starts=2, mem_locks=4, cores=4)
    again = repeat_instructions(c)
    assert again == 3 * 2 + 1 + 1 + 2
    assert control_instructions([c, c], [1, 1], [3, 0], [0, 0]) == [3 * again, layer_instructions(c)]
    # what a search weighs per simulated instance: set-ups and re-runs per instance
    assert weighted_instructions(c, ControlWeight(1 / 4, 3 / 4)) == (layer_instructions(c) + 3 * again) / 4
    assert weighted_instructions(c, 1 / 4) == layer_instructions(c) / 4  # strided repeats: one task
    assert not ControlWeight(0.0, 0.0) and ControlWeight(0.0, 0.5)


def test_control__an_expert_op_is_charged_per_expert_a_strided_repeat_once():
    from fastsim.evaluation import GraphPins
    from fastsim.mapping.placed import Placed, control_weight

    experts = Op("expert_up", "gemm", 0, "matmul", 2, 64, 64, Operand("activations", 2),
                 Operand("weights", 2), repeat=4, gathered=True)
    assert control_weight(Placed(experts), GraphPins()) == ControlWeight(1 / 4, 3 / 4)
    assert control_weight(Placed(replace(experts, gathered=False)), GraphPins()) == ControlWeight(1 / 4, 0.0)
    assert control_weight(Placed(experts), GraphPins(search_control=False)) == 0.0
    # a pass: the two ops after the first, one with 4 experts (set up once, re-run 3 times)
    graph = OpGraph((_chain(1).ops[0], replace(experts, layer=1), replace(experts, name="expert_down", layer=2)),
                    ((), (0,), (1,)))
    result = evaluate(graph, NPU2, ONE_COLUMN)
    assert result.dispatch.count == 1
    for p, charged in zip(result.placed[1:], result.control_instructions[1:]):
        c = result.results[p.key].control
        assert charged == layer_instructions(c) + 3 * repeat_instructions(c)


COUNTS = st.builds(ControlCounts, *[st.integers(0, 50)] * 7)


@examples(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(COUNTS, st.integers(1, 4)), min_size=1, max_size=8), COUNTS, st.integers(1, 4),
       st.data())
def test_control__one_more_layer_or_instance_in_a_dispatch_never_takes_less(ops, extra, runs, data):
    where = data.draw(st.integers(0, len(ops)))
    more = ops[:where] + [(extra, runs)] + ops[where:]
    reruns = [data.draw(st.integers(0, 3)) for _ in ops]

    def total(ops, reruns):
        return sum(control_instructions([c for c, _ in ops], [n for _, n in ops], reruns, [0] * len(ops)))

    before = total(ops, reruns)
    assert total(more, reruns[:where] + [0] + reruns[where:]) >= before
    one_more = data.draw(st.integers(0, len(ops) - 1))  # one more expert's instance of an op
    assert total(ops, [r + (i == one_more) for i, r in enumerate(reruns)]) >= before


def test_control__more_layers_in_a_dispatch_never_less_control_time():
    seconds = []
    for n in range(1, 5):
        result = evaluate(_chain(n), NPU2, ONE_COLUMN)
        assert result.dispatch.count == 1
        seconds.append(sum(control_seconds_per_dispatch(list(result.control_instructions), result.dispatch.of_op, 1,
                                                        NPU2)))
    assert seconds[0] == 0 and all(a < b for a, b in zip(seconds, seconds[1:]))


def test_control__llm_pass_reports_it_and_noop_keeps_it():
    study = LlmStudy(model=TINY, regime="decode", context=256)
    ds = simulate_llm(study, NPU2, ROOMY)
    assert float(ds.control_seconds) > 0 and ds.op_control_instructions.values[0] == 0
    noop = simulate_llm(replace(study, noop=("gemm",)), NPU2, ROOMY)
    assert float(noop.control_seconds) <= float(ds.control_seconds)
    assert float(noop.total_seconds) <= float(ds.total_seconds)


def test_control__host_ops_and_the_op_after_them_set_nothing_up():
    study = LlmStudy(model=TINY, regime="decode", context=256, fusion="none")
    ds = simulate_llm(replace(study, host={"softmax": 1e-5}), NPU2, ROOMY)
    plain = simulate_llm(study, NPU2, ROOMY)
    on_host = np.nonzero(ds.op_class.values == "softmax")[0]
    assert len(on_host) and (ds.op_control_instructions.values[on_host] == 0).all()
    assert (ds.op_control_instructions.values[on_host + 1] == 0).all()
    assert plain.op_control_instructions.values[on_host + 1].all()
    assert np.isclose(float(ds.control_seconds), float(ds.op_control_seconds.sum()))
    assert np.isclose(float(ds.control_seconds), float(ds.dispatch_control_seconds.sum()))


def test_search__ranks_by_cycles_plus_weighted_control_and_proves_it():
    from fastsim.mapping import Matmul, Pins, search
    from fastsim.mapping.branch_bound import objective
    from fastsim.mapping.dispatch import control_counts

    # a narrowed space (one column, os), so that the exact search with control stays small
    op, pins = Matmul(64, 128, 64), Pins(cols=1, dataflow=("os",))
    plain = search(op, NPU2, pins, budget=None)
    weighed = search(op, NPU2, pins, budget=None, control_weight=2.0)
    assert plain.best_control_cycles == 0 and plain.best_objective == plain.best_cycles
    assert weighed.optimal and weighed.gap == 0.0
    assert weighed.best_control_cycles == objective(0, control_counts(weighed.best_design), NPU2, 2.0) > 0
    # the exact answer under the objective is no worse than cycles' answer under it
    assert weighed.best_objective <= objective(plain.best_cycles, control_counts(plain.best_design), NPU2, 2.0)
    assert search(op, NPU2, pins, budget=None, control_weight=0.0) is plain  # weight 0: cycles alone, one key


def test_control__a_resident_program_rewrites_only_what_a_re_run_does():
    """One resident program per dispatch (a fused module): the second op re-runs on its operands,
    its shim tasks (2 x 3), its wait (1) and its mem-tile chain starts (10) written again, its 32
    mem-tile BDs, 16 locks and 4 core parameters left as loaded; the first op is the dispatch's."""
    pins = replace(ONE_COLUMN, resident_programs=True)
    result = evaluate(_chain(2), NPU2, pins)
    second = result.results[result.placed[1].key].control
    assert result.control_instructions == (0, repeat_instructions(second)) == (0, 6 + 1 + 10)


@examples(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(COUNTS, st.integers(1, 4), st.integers(0, 3)), min_size=1, max_size=8),
       st.lists(st.integers(0, 2), min_size=8, max_size=8))
def test_control__a_resident_program_never_charges_more_than_set_ups(ops, of_op):
    """A re-run writes a subset of what a set-up writes: resident control is never more, op by op,
    and equals the re-runs' instructions of every run but each dispatch's first."""
    counts, runs, reruns = [c for c, _, _ in ops], [n for _, n, _ in ops], [r for _, _, r in ops]
    dispatch = sorted(of_op[:len(ops)])
    per_op = control_instructions(counts, runs, reruns, dispatch)
    resident = control_instructions(counts, runs, reruns, dispatch, resident=True)
    assert all(0 <= r <= s for r, s in zip(resident, per_op))
    firsts = {dispatch.index(d) for d in set(dispatch)}
    assert resident == [repeat_instructions(c) * (n + again - (i in firsts))
                        for i, (c, n, again) in enumerate(zip(counts, runs, reruns))]


def test_control__a_resident_program_weighs_the_search_as_it_charges_the_run():
    """The mapping search weighs what the evaluation charges: with resident programs every run of
    an op is a re-run (no set-up), so the search's control weight moves to re-runs."""
    from fastsim.mapping.mappers import search_request
    from fastsim.mapping.placed import Placed

    op = Op("gemm", "gemm", 0, "matmul", 64, 64, 64, ACT, Operand("weights", 2.0), ACT, repeat=4)
    resident = GraphPins(resident_programs=True)
    assert search_request(Placed(op, runs=2), NPU2, resident)[6] == ControlWeight(0.0, 0.5)
    llm = LlmStudy(model=TINY, regime="decode", context=64, fusion="chain", cuts=())
    per_op, one = simulate_llm(llm), simulate_llm(replace(llm, resident_programs=True))
    assert int(one.op_control_instructions.sum()) < int(per_op.op_control_instructions.sum())
    assert float(one.total_seconds) <= float(per_op.total_seconds)


def test_search__control_weight_is_the_ops_set_ups_per_run_and_zero_standalone():
    from fastsim.mapping.mappers import search_request
    from fastsim.mapping.placed import Placed
    from fastsim.workloads.gemm import Gemm

    op = Op("gemm", "gemm", 0, "matmul", 64, 64, 64, ACT, Operand("weights", 2.0), ACT, repeat=4)
    assert search_request(Placed(op, runs=2), NPU2, GraphPins())[6] == ControlWeight(0.5)
    # gathered repeats (experts): the other runs re-run the design on new operands
    assert search_request(Placed(replace(op, gathered=True), runs=2), NPU2, GraphPins())[6] == ControlWeight(0.5, 0.5)
    assert search_request(Placed(op, runs=2), NPU2, GraphPins(search_control=False))[6] == 0.0
    g = Gemm(64, 64, 64)
    assert search_request(Placed(g.graph().ops[0]), NPU2, g.graph_pins())[6] == 0.0


def test_op_search__is_the_search_the_design_took_with_its_control_weight():
    """The one-op answer a run reports and the design it ran come from one search: a request passed
    whole (``search(*request)``) keeps its control weight (it once landed on ``validate``)."""
    from fastsim.mapping.mappers import op_design, op_search
    from fastsim.mapping.placed import Placed

    op = Op("gemm", "gemm", 0, "matmul", 64, 64, 64, ACT, Operand("weights", 2.0), ACT, repeat=4)
    p = Placed(op, runs=2)
    assert op_search(p, NPU2, GraphPins()).best_design is op_design(p, NPU2, GraphPins()).design


def _candidate(data, arch):
    """A random legal matmul candidate (op, mapping) on ``arch``: extents, on-chip operands, static
    weights, a structure the search enumerates and a power-of-two tile."""
    from hypothesis import assume

    from fastsim.errors import ConfigError
    from fastsim.mapping import Matmul, Pins
    from fastsim.mapping.plan import check
    from fastsim.mapping.search import structures

    dims = [data.draw(st.sampled_from([1, 3, 16, 40, 64, 96, 200, 256, 384, 1024, 4096])) for _ in range(3)]
    op = Matmul(*dims, data.draw(st.sampled_from(["bf16", "int8"])), static_b=data.draw(st.booleans()),
                a_on_chip=data.draw(st.booleans()), c_on_chip=data.draw(st.booleans()),
                onchip_window_bytes=data.draw(st.sampled_from([0, 0, 4096])))
    buffers = data.draw(st.sampled_from([1, 2]))
    mp = data.draw(st.sampled_from(structures(op, arch, Pins(buffers=buffers))))
    tile = tuple(data.draw(st.sampled_from([1, 4, 8, 16, 32, 64, 128, 256])) for _ in range(3))
    mp = replace(mp, tile=tile)
    try:
        check(op, mp, arch)
    except ConfigError:
        assume(False)
    return op, mp


@examples(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from([NPU1, NPU2, NPU2.replace(bd_iterations_max=4)]), st.data())
def test_search__control_bound_is_the_designs_control_without_building_it(arch, data):
    # the closed form the search bounds candidates with counts exactly what the built design sets up
    # (so it bounds it from below): shim tasks, pushes, syncs, mem BDs (the tile's chunked re-sends
    # included), chain starts, locks and cores
    from fastsim.mapping.design import matmul_design
    from fastsim.mapping.dispatch import control_counts
    from fastsim.mapping.plan import control_counts_of, stack, structure

    op, mp = _candidate(data, arch)
    closed = control_counts_of(op, stack([structure(op, mp, arch)], arch), arch,
                               *(np.array([[x]]) for x in mp.tile))
    built = control_counts(matmul_design(op, mp, arch))
    assert ControlCounts(*(int(np.asarray(x).item()) for x in closed)) == built


@examples(max_examples=100, deadline=None, derandomize=True)
@given(st.sampled_from([NPU1, NPU2]), st.data())
def test_conv_search__control_bound_is_the_designs_control_without_building_it(arch, data):
    # the conv search's closed form, from the plan alone: the built design's control exactly
    from hypothesis import assume

    from fastsim.mapping.conv import Conv2d
    from fastsim.mapping.conv_design import conv_design
    from fastsim.mapping.conv_plan import control_counts_of, plan, problems
    from fastsim.mapping.conv_search import candidates
    from fastsim.mapping.dispatch import control_counts
    from fastsim.mapping.pins import Pins

    c = data.draw(st.sampled_from([3, 8, 16, 32, 64]))
    groups = data.draw(st.sampled_from([1, c]))
    size = data.draw(st.integers(3, 20))
    op = Conv2d(data.draw(st.integers(1, 2)), c, size, size, groups * data.draw(st.sampled_from([1, 2, 8])),
                *[data.draw(st.integers(1, 3))] * 2, stride=data.draw(st.integers(1, 2)),
                padding=data.draw(st.integers(0, 1)), groups=groups)
    assume(op.oh >= 1 and op.ow >= 1)
    mp = data.draw(st.sampled_from(candidates(op, arch, Pins())))
    pl = plan(op, mp, arch)
    assume(not problems(pl, arch))
    assert control_counts_of(pl) == control_counts(conv_design(op, mp, arch, pl))


def _with_launches(graph, arch, on: bool):
    from fastsim.evaluation import to_dataset

    pins = replace(ONE_COLUMN, launches_reconfigure=on)
    return to_dataset(evaluate(graph, arch, pins), pins, arch, DispatchLimits(), {})


def test_launches__each_op_is_charged_one_inline_reconfiguration_as_by_hand():
    """An ELF built with expanded load_pdis rewrites the array's configuration at every launch: each
    op of the pass (alone: no fusion group) pays ``Arch.launch_reconfiguration_s`` once, in its own
    variable and in the total; off, nothing is charged."""
    arch = NPU2.replace(launch_reconfiguration_s=1e-3)
    plain, elf = (_with_launches(_chain(3), arch, on) for on in (False, True))
    assert float(plain.launch_seconds) == 0.0 and elf.attrs["launches_reconfigure"] == 1
    assert list(elf.op_launch_seconds.values) == [1e-3] * 3
    assert float(elf.launch_seconds) == 3e-3 == float(elf.dispatch_launch_seconds.sum())
    assert float(elf.program_reload_seconds) == float(plain.program_reload_seconds) == 0.0
    assert np.isclose(float(elf.total_seconds) - float(plain.total_seconds), 3e-3, rtol=1e-12)
    assert np.isclose(float(elf.dispatch_total_seconds.sum()), float(elf.total_seconds), rtol=1e-12)


@pytest.mark.parametrize("fusion", ["none", "chain", "auto"])
@pytest.mark.parametrize("program_memory_bytes", [1 << 20, 2048])
def test_launches__reconfiguring_launches_never_make_a_pass_faster(fusion, program_memory_bytes):
    """Whatever the fusion (a chained dispatch is one launch) and whether the kernels overflow
    program memory (a launch that holds more kernels than fit still reloads inside it)."""
    study = LlmStudy(model=replace(TINY, num_layers=4), regime="decode", context=128, fusion=fusion, cuts=())
    limits = DispatchLimits(program_memory_bytes=program_memory_bytes)
    off, on = (simulate_llm(replace(study, launches_reconfigure=x), limits=limits, movement=False) for x in (False, True))
    assert float(on.total_seconds) >= float(off.total_seconds)
    assert float(on.launch_seconds) >= NPU2.launch_reconfiguration_s


def test_launches__a_launch_reloads_only_where_its_own_kernels_overflow():
    """With launches reconfiguring, each op's launch loads its own kernels: a dispatch whose kernels
    together overflow program memory reloads nothing unless one launch's do (a chained group)."""
    tight = DispatchLimits(program_memory_bytes=1024 + 2048 + 512)  # the loop, one matmul and one vector kernel
    study = LlmStudy(model=replace(TINY, num_layers=4), regime="decode", context=128, fusion="none", cuts=())
    off, on = (simulate_llm(replace(study, launches_reconfigure=x), limits=tight, movement=False) for x in (False, True))
    assert float(off.program_reload_seconds) > 0 and float(on.program_reload_seconds) == 0.0
    chained = simulate_llm(replace(study, fusion="chain", launches_reconfigure=True), limits=tight, movement=False)
    assert float(chained.program_reload_seconds) > 0 and float(chained.launch_seconds) == NPU2.launch_reconfiguration_s


def test_launches__host_ops_start_no_launch():
    study = LlmStudy(model=TINY, regime="prefill", prompt=32, fusion="none", launches_reconfigure=True)
    npu, host = (simulate_llm(s, movement=False) for s in (study, replace(study, host={"norm": 1e-6})))
    on_host = [i for i, c in enumerate(host.op_class.values) if c == "norm"]
    assert on_host and all(host.op_launch_seconds.values[i] == 0 for i in on_host)
    assert np.isclose(float(npu.launch_seconds) - float(host.launch_seconds),
                      len(on_host) * NPU2.launch_reconfiguration_s, rtol=1e-12)


def test_launches__the_as_built_prefill_charges_each_launch_a_fused_group_one():
    from fastsim.llm.run import apply_overlay
    from fastsim.mapping.overlay import load_as_built

    built = load_as_built("examples/as_built/air_prefill_bf16.toml")
    ds = simulate_llm(apply_overlay(LlmStudy(model=TINY, regime="prefill", prompt=64), built.overlays["prefill"]))
    assert ds.attrs["launches_reconfigure"] == 1
    groups = [str(g) for g in ds.fusion_group.values]
    assert groups.count("flash_attention@0") == 3  # scores, softmax, attention x V: one launch
    launches = sum(1 for i, g in enumerate(groups) if not g or i == 0 or groups[i - 1] != g)
    assert launches == ds.sizes["op"] - 2 * TINY.num_layers
    assert np.isclose(float(ds.launch_seconds), launches * NPU2.launch_reconfiguration_s, rtol=1e-12)


def test_launches__auto_fusion_weighs_them():
    """A fused group is one launch: under launches that reconfigure, ``auto`` compares fusion choices
    with their launches charged (the chain that saves most of them wins where it fits)."""
    study = LlmStudy(model=replace(TINY, num_layers=4), regime="decode", context=128, cuts=(),
                     launches_reconfigure=True)
    auto = simulate_llm(study, movement=False)
    others = [simulate_llm(replace(study, fusion=f), movement=False) for f in ("none", "groups", "chain")]
    assert float(auto.total_seconds) <= min(float(o.total_seconds) for o in others) * (1 + 1e-9)


def test_arch__a_launch_reconfiguration_below_one_program_load_is_refused():
    from fastsim.arch import validate
    from fastsim.errors import ConfigError

    with pytest.raises(ConfigError, match="launch_reconfiguration_s"):
        validate(NPU2.replace(launch_reconfiguration_s=1e-6))


def test_launches__the_trace_and_the_dispatch_totals_add_up_with_host_ops():
    """Each launch's reconfiguration is a slice of the trace, and host ops' launches leave the
    per-dispatch totals too: both still add up to the run's total."""
    from fastsim.trace import llm_trace

    study = LlmStudy(model=TINY, regime="prefill", prompt=32, fusion="none", launches_reconfigure=True,
                     host={"norm": 1e-6})
    ds = simulate_llm(study, movement=False)
    trace = llm_trace(ds)
    slices = [e for e in trace["traceEvents"] if e.get("name") == "launch reconfiguration"]
    assert len(slices) == int(np.count_nonzero(ds.op_launch_seconds.values)) > 0
    assert trace["metadata"]["timeline_seconds"] == pytest.approx(float(ds.total_seconds))
    launches = float(ds.launch_seconds)
    assert float(ds.dispatch_launch_seconds.sum()) == pytest.approx(launches)
    plain = simulate_llm(replace(study, launches_reconfigure=False), movement=False)
    assert float(ds.dispatch_total_seconds.sum()) - float(plain.dispatch_total_seconds.sum()) == pytest.approx(launches)


def test_launches__not_with_resident_programs():
    from fastsim.errors import ConfigError

    with pytest.raises(ConfigError, match="launches_reconfigure = True: not with resident_programs"):
        simulate_llm(LlmStudy(model=TINY, regime="decode", context=64, resident_programs=True,
                              launches_reconfigure=True))
