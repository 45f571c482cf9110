"""The wider subset of mlir-aie's aie dialect: zero padding, queued and repeated DMA chains, cf.br
core loops, configuration loads and tokens with no modelled time, runtime arguments sized by their
accesses, stranded cores, and kernel ablation."""
import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from click.testing import CliRunner

from fastsim.errors import SimulationError
from fastsim.mlir import MlirError, read_design, read_text, simulate_design
from fastsim.mlir.ablate import ablate

HERE = Path(__file__).parent / "mlir"
COSTS = {"scale": 100}


def levels(ds) -> dict:
    return dict(zip(map(str, ds.level.values), ds.level_bytes.values[0].tolist()))


def test_padding__mem_tile_mm2s_sends_the_padded_bytes():
    ds = simulate_design(read_design(HERE / "padded_queue.mlir", COSTS))
    got = levels(ds)
    assert (got["ddr_read"], got["shim_mem"]) == (4 * 52, 4 * 52)
    assert got["mem_compute"] == got["ddr_write"] == 4 * 64


def test_dma_start__queued_and_repeated_chains_run_one_after_the_other():
    d = read_design(HERE / "padded_queue.mlir", COSTS).design
    chain, bd = [], d.static_chains[next(c for c in d.static_chains if c.tile.row == 1 and c.direction == "s2mm")]
    while bd is not None:
        chain.append(bd)
        bd = bd.next
    assert [b.length_bytes for b in chain] == [52] * 4


def test_cf_br__a_block_that_jumps_to_itself_is_an_endless_core():
    info = read_design(HERE / "padded_queue.mlir", COSTS)
    assert info.endless_cores == {info.design.compute(0, 0)}
    assert simulate_design(info).attrs["persistent_cores"] == 1


def test_cf_br__a_jump_back_to_an_earlier_block_is_named():
    text = (HERE / "padded_queue.mlir").read_text().replace("      cf.br ^loop\n    }", "      cf.br ^bb9\n    ^bb9:\n"
                                                            "      cf.br ^loop\n    }")
    with pytest.raises(Exception, match="branch back to an earlier block"):
        read_text(text, COSTS)


def test_sequence__configuration_loads_tokens_and_bus_writes_take_no_time():
    text = (HERE / "padded_queue.mlir").read_text()
    info = read_text(text, COSTS)
    assert {name for name, _ in info.untimed} >= {"aiex.configure", "aiex.npu.load_pdi", "aiex.npu.maskwrite32",
                                                  "aie.packet_flow"}
    bare = text.replace("      aiex.npu.load_pdi {device_ref = @dev}\n", "").replace(
        "      aiex.npu.maskwrite32(%bus, %one, %one) {column = 0 : i32, row = 2 : i32} : i32, i32, i32\n", "")
    assert int(simulate_design(read_text(bare, COSTS)).total_cycles[0]) == \
        int(simulate_design(info).total_cycles[0])


def test_sequence__a_register_write_fastsim_does_not_know_is_named():
    text = (HERE / "padded_queue.mlir").read_text().replace("0x32038", "0x1F000")
    with pytest.raises(Exception, match="aiex.npu.maskwrite32"):
        read_text(text, COSTS)


def test_arguments__grow_to_the_furthest_byte_the_host_reads():
    info = read_design(HERE / "padded_queue.mlir", COSTS)
    src = next(b for b in info.design.buffers if b.name == "src")
    assert src.size_bytes == 4 * 52
    assert info.notes == ["runtime argument %src: declared 52 bytes, accessed up to byte 208: sized to the access"]


def stranded(text: str) -> str:
    """The object-FIFO passthrough with a core that loops over 64 objects of the 4 the host sends."""
    return text.replace("%c4 = arith.constant 4 : index", "%c4 = arith.constant 64 : index")


def test_stranded__cores_that_expect_more_data_end_with_the_hosts_last_wait():
    text = (HERE / "objectfifo_passthrough.mlir").read_text()
    want = simulate_design(read_text(text, {"kernel": 300}))
    ds = simulate_design(read_text(stranded(text), {"kernel": 300}))
    assert (ds.attrs["stranded_cores"], ds.attrs["persistent_cores"]) == (1, 0)
    assert int(ds.total_cycles[0]) == int(want.total_cycles[0]) and levels(ds) == levels(want)


def test_stranded__cores_waiting_for_data_no_one_sends_leave_no_data_behind():
    ds = simulate_design(read_text(stranded((HERE / "objectfifo_passthrough.mlir").read_text()), {"kernel": 300}))
    assert ds.attrs["cores_left"] == ["tile(0,2)"] and ds.attrs["data_left"] == []


def test_stranded__a_core_stuck_with_data_still_on_its_way_names_the_channels_holding_it():
    """The host sends 8 objects and takes 2 back: the core stops on its full output FIFO while the
    shim still has input to send (what a lost object or an unbalanced FIFO looks like)."""
    text = (HERE / "objectfifo_passthrough.mlir").read_text().replace(
        "%c4 = arith.constant 4 : index", "%c4 = arith.constant 8 : index").replace(
        "%c4 = arith.constant 4 : i64", "%c4 = arith.constant 8 : i64\n      %c2 = arith.constant 2 : i64").replace(
        "%dst[%c0, %c0, %c0, %c0][%c4,", "%dst[%c0, %c0, %c0, %c0][%c2,")
    ds = simulate_design(read_text(text, {"kernel": 300}))
    assert ds.attrs["stranded_cores"] == 1 and "tile(0,0).mm2s0" in ds.attrs["data_left"]


def test_stranded__without_a_host_wait_it_stays_a_deadlock():
    text = stranded((HERE / "objectfifo_passthrough.mlir").read_text())
    no_wait = "\n".join(line for line in text.splitlines() if "dma_wait" not in line)
    with pytest.raises(SimulationError, match="deadlock"):
        simulate_design(read_text(no_wait, {"kernel": 300}))


def test_ablate__ranks_kernels_by_the_cycles_a_one_cycle_pass_saves():
    from test_mlir_export import hand_design

    from fastsim.mlir import write_design

    info = read_text(write_design(hand_design()))
    base, rows = ablate(info)
    assert [a.kernel for a in rows] == ["k", "setup"]
    assert rows[0].calls == 8 and rows[0].saved_cycles > 0
    assert rows[1].saved_cycles == 0  # the 50-cycle setup runs while the first object arrives
    assert all(a.cycles + a.saved_cycles == base for a in rows)


def test_cli__run_design_ablate_prints_and_returns_the_ranking(tmp_path):
    from fastsim.cli import main

    costs = tmp_path / "costs.toml"
    costs.write_text("[kernels]\nscale = 100\n")
    path = str(HERE / "padded_queue.mlir")
    out = CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs), "--ablate"])
    assert out.exit_code == 0, out.output
    assert "ablation" in out.output and "scale" in out.output
    js = json.loads(CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs), "--ablate",
                                              "--json"]).output)
    assert [a["kernel"] for a in js["ablation"]] == ["scale"] and js["ablation"][0]["saved_cycles"] > 0


def bd_reuse(groups: int, per_group: int, wait_between: bool = True) -> str:
    """dma_task.mlir's design with its host streaming ``groups`` x ``per_group`` objects, each in
    and out by a task of its own BD; with ``wait_between`` each group is awaited (both channels)
    before the next group's tasks are configured, so later groups reuse the slots of earlier ones."""
    text = (HERE / "dma_task.mlir").read_text()
    head, rest = text.split("    aie.runtime_sequence", 1)
    n = groups * per_group * 64
    lines = [f"    aie.runtime_sequence @seq(%x: memref<{n}xi32>, %y: memref<{n}xi32>) {{"]
    for g in range(groups):
        for j in range(per_group):
            k = g * per_group + j
            for fifo, buf in (("in", "x"), ("out", "y")):
                lines += [f"      %t{fifo}{k} = aiex.dma_configure_task_for @{fifo} {{",
                          f"        aie.dma_bd(%{buf} : memref<{n}xi32> offset = {k * 64} len = 64)",
                          "        aie.end", "      }", f"      aiex.dma_start_task(%t{fifo}{k})"]
        if wait_between or g == groups - 1:
            last = g * per_group + per_group - 1
            lines += [f"      aiex.dma_await_task(%tin{last})", f"      aiex.dma_await_task(%tout{last})"]
    return head + "\n".join(lines) + "\n    }\n  }\n}\n"


def test_shim_bd_reuse__host_bds_count_while_their_tasks_may_run():
    from fastsim.validate import host_bds_at_once, validate_design

    info = read_text(bd_reuse(3, 6), {"add_one": 10})
    shim = info.design.shim(1)
    assert sum(b.channel.tile == shim for b in info.design.bds) == 36
    assert host_bds_at_once(info.design) == {shim: 12}
    validate_design(info.design)
    assert int(simulate_design(info).total_cycles[0]) > 0


def test_shim_bd_reuse__without_waits_every_pushed_bd_is_resident():
    from fastsim.errors import ConfigError
    from fastsim.validate import host_bds_at_once, validate_design

    design = read_text(bd_reuse(3, 6, wait_between=False), {"add_one": 10}).design
    assert host_bds_at_once(design) == {design.shim(1): 36}
    with pytest.raises(ConfigError, match=r"tile\(1,0\) BDs = 36: at most 16 BDs"):
        validate_design(design)


def test_shim_bd_reuse__a_bd_pushed_again_after_a_wait_stays_resident():
    from fastsim import NPU2, Design, mm2s
    from fastsim.validate import host_bds_at_once

    def peak(push_a_again: bool) -> int:
        d = Design(NPU2)
        ch = mm2s(d.shim(0), 0)
        buf = d.ddr_buffer(256)
        a, b = d.bd(ch, buf, 64), d.bd(ch, buf, 64, offset_bytes=64)
        d.push(ch, a)
        d.wait(ch)
        d.push(ch, b)
        if push_a_again:
            d.push(ch, a)
        return host_bds_at_once(d)[d.shim(0)]

    assert (peak(False), peak(True)) == (1, 2)


def test_sequence__a_scalar_runtime_argument_stops_only_the_op_that_needs_its_value():
    """``%n: i64`` is a value the host passes at run time, not a DDR buffer: a sequence that only
    receives it reads; one whose host code computes with it stops at that op, named."""
    design = """module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %core = aie.tile(0, 2)
    aie.objectfifo @in(%shim, {%core}, 2 : i32) : !aie.objectfifo<memref<16xi32>>
    aie.runtime_sequence(%a: memref<16xi32>, %n: i64) {
      BODY
      aiex.npu.dma_memcpy_nd(%a[0, 0, 0, 0][1, 1, 1, 16][0, 0, 0, 1]) {id = 0 : i64, metadata = @in} : memref<16xi32>
    }
  }
}"""
    read_text(design.replace("BODY", ""), source="passes_n")
    with pytest.raises(MlirError) as e:
        read_text(design.replace("BODY", "%i = arith.index_cast %n : i64 to index"), source="uses_n")
    assert e.value.stops == [("arith.index_cast", 7)]
    assert "%n is a runtime argument (i64) whose value the host passes at run time: give it (fastsim run " \
           "design --arg n=VALUE" in str(e.value)


def _resident_peaks_step_by_step(d, pushed: set) -> dict:
    """The obvious reference of ``host_bds_at_once``: walk the sequence, add each pushed BD (its
    chain's, those in ``pushed``) at its push, drop the BDs of a channel at a wait that comes after
    their last push."""
    from collections import Counter

    from fastsim.design import Push, Wait
    from fastsim.validate import chain_of

    last = {}
    for i, op in enumerate(d.host):
        if isinstance(op, Push):
            for b in chain_of(op.bd)[0]:
                last[b.id] = i
    live, count, peak = {}, Counter(), {}
    for i, op in enumerate(d.host):
        if isinstance(op, Push):
            for b in chain_of(op.bd)[0]:
                if b.id not in pushed:
                    continue
                here = live.setdefault(b.channel, set())
                if b.id not in here:
                    here.add(b.id)
                    count[b.channel.tile] += 1
                    peak[b.channel.tile] = max(peak.get(b.channel.tile, 0), count[b.channel.tile])
        elif isinstance(op, Wait):
            done = {b for b in live.get(op.channel, set()) if last[b] < i}
            live[op.channel] = live.get(op.channel, set()) - done
            count[op.channel.tile] -= len(done)
    return peak


@settings(deadline=None, max_examples=150)
@given(steps=st.lists(st.tuples(st.sampled_from(["push", "wait"]), st.integers(0, 3), st.integers(0, 3),
                                st.integers(1, 3), st.integers(1, 2)), max_size=40),
       skipped=st.sets(st.integers(0, 3), max_size=2))
def test_host_bds_at_once__equals_the_step_by_step_walk(steps, skipped):
    """Random sequences of pushes (chains of 1-3 BDs, pushed again or not, with another repeat
    count: another Push of the same BDs) and waits on four shim channels, two per column (a wait
    ends its own channel's BDs, not its tile's), the BDs of some heads not host-pushed (a static
    chain's): the interval count equals walking the sequence step by step."""
    from fastsim import NPU2, Design, mm2s, s2mm
    from fastsim.validate import chain_of, host_bds_at_once

    d = Design(NPU2)
    channels = [way(d.shim(c), 0) for c in range(2) for way in (mm2s, s2mm)]
    buf = d.ddr_buffer(4096)
    heads = {}
    for c, ch in enumerate(channels):
        for j in range(4):
            for n in (1, 2, 3):
                bds = [d.bd(ch, buf, 64, offset_bytes=64 * k) for k in range(n)]
                heads[c, j, n] = d.chain(*bds) if n > 1 else bds[0]
    for what, c, j, n, repeat in steps:
        if what == "push":
            d.push(channels[c], heads[c, j, n], repeat)
        else:
            d.wait(channels[c])
    pushed = {b.id for (c, j, n), head in heads.items() if j not in skipped
              for b in chain_of(head)[0]}
    assert host_bds_at_once(d, pushed) == _resident_peaks_step_by_step(d, pushed)
