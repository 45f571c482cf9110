"""mlir-aie designs read into fastsim Designs: each construct of tests/mlir/ simulated, with cycles
checked against a hand-built Design of the same hardware program (identical cycles)."""
from pathlib import Path

import pytest
from click.testing import CliRunner

import fastsim
from fastsim import NPU1, NPU2, Acquire, Compute, Design, Loop, Release, mm2s, object_fifo, s2mm
from fastsim.errors import ConfigError
from fastsim.mlir import MlirError, load_kernel_costs, read_design, read_text, simulate_design

HERE = Path(__file__).parent / "mlir"


def cycles(name: str, kernels=None) -> int:
    ds = simulate_design(read_design(HERE / f"{name}.mlir", kernels))
    return int(ds.total_cycles[0])


def hand_passthrough(kernel_cycles: int) -> Design:
    """What both passthrough fixtures mean, built with the Python API."""
    d = Design(NPU2, "passthrough")
    sh, ct = d.shim(0), d.compute(0, 0)
    src, dst = d.ddr_buffer(4096, "src"), d.ddr_buffer(4096, "dst")
    fin = object_fifo(d, mm2s(sh, 0), [s2mm(ct, 0)], 2, 1024, "in")
    fout = object_fifo(d, mm2s(ct, 0), [s2mm(sh, 0)], 2, 1024, "out")
    c = fin["consumers"][0]
    d.core_program(ct, Loop(4, (Acquire(c["cons_lock"]), Acquire(fout["producer_prod_lock"]),
                                Compute(kernel_cycles, "kernel"), Release(c["prod_lock"]),
                                Release(fout["producer_cons_lock"]))))
    d.push(mm2s(sh, 0), d.bd(mm2s(sh, 0), src, 1024, iterations=4))
    d.push(s2mm(sh, 0), d.bd(s2mm(sh, 0), dst, 1024, iterations=4))
    d.wait(s2mm(sh, 0))
    return d


@pytest.mark.parametrize("kernel_cycles", [1, 300, 2000])
def test_physical__passthrough_matches_the_hand_built_design(kernel_cycles):
    hand = int(fastsim.simulate(hand_passthrough(kernel_cycles)).total_cycles[0])
    assert cycles("physical_passthrough", {"kernel": kernel_cycles}) == hand


@pytest.mark.parametrize("kernel_cycles", [1, 300, 2000])
def test_objectfifo__passthrough_equals_its_physical_form(kernel_cycles):
    k = {"kernel": kernel_cycles}
    assert cycles("objectfifo_passthrough", k) == cycles("physical_passthrough", k)


def test_physical__shim_allocation_by_column_is_the_same_channel():
    """``shim_dma_allocation @s(MM2S, 0, 0)`` (direction, channel, column: the form before the tile
    operand) names the channel ``(%shim, MM2S, 0)`` names; a PLIO allocation is refused."""
    text = (HERE / "physical_passthrough.mlir").read_text()
    old = text.replace("@to_core (%shim, MM2S, 0)", "@to_core(MM2S, 0, 0)").replace(
        "@from_core (%shim, S2MM, 0)", "@from_core(S2MM, 0, 0)")
    assert old != text
    k = {"kernel": 300}
    assert int(simulate_design(read_text(old, k)).total_cycles[0]) == cycles("physical_passthrough", k)
    with pytest.raises(MlirError, match="plio"):
        read_text(old.replace("@to_core(MM2S, 0, 0)", "@to_core(MM2S, 0, 0) {plio = true}"), k)


def test_physical__reads_buffers_locks_bds_and_host_steps():
    info = read_design(HERE / "physical_passthrough.mlir", {"kernel": 300})
    d = info.design
    assert d.arch is NPU2
    assert {b.name: b.size_bytes for b in d.buffers if b.tile is not None} == {
        "in_a": 1024, "in_b": 1024, "out_a": 1024, "out_b": 1024}
    assert [(lk.name, lk.init) for lk in d.locks] == [("in_free", 2), ("in_full", 0), ("out_free", 2),
                                                       ("out_full", 0)]
    ring = d.static_chains[s2mm(d.compute(0, 0), 0)]
    assert ring.next.next is ring and ring.acquire[0].name == "in_free"
    pushes = [op for op in d.host if hasattr(op, "bd")]
    assert [(p.bd.length_bytes, p.bd.iterations) for p in pushes] == [(1024, 4), (1024, 4)]


def test_link__distribute_and_join_move_every_byte_through_the_mem_tile():
    ds = simulate_design(read_design(HERE / "link_distribute.mlir", {"scale": 500}))
    level = dict(zip(ds.level.values, ds.level_bytes.values[0]))
    assert level["ddr_read"] == level["ddr_write"] == 8 * 2048
    assert level["shim_mem"] == level["mem_compute"] == 2 * 8 * 2048
    # two cores share the work: 8 calls each of 500 cycles, overlapped with the streams
    assert 8 * 500 < int(ds.total_cycles[0]) < 2 * 8 * 500


def test_link__distribute_gives_each_output_its_own_slice_and_locks():
    d = read_design(HERE / "link_distribute.mlir", {"scale": 500}).design
    mem = d.mem(0)
    sends = [b for b in d.bds if b.channel.tile == mem and b.channel.direction == "mm2s"
             and b.acquire[0].name.startswith("half_in")]
    assert {b.length_bytes for b in sends} == {1024}
    assert {(b.channel.index, b.offset_bytes, b.acquire[0].name) for b in sends} == {
        (0, 0, "half_in0_link_cons_lock"), (1, 1024, "half_in1_link_cons_lock")}


def test_shared_memory__adjacent_cores_use_locks_without_dma():
    info = read_design(HERE / "shared_memory.mlir")
    d = info.design
    assert d.arch is NPU1 and not d.bds and not d.routes
    hand = Design(NPU1)
    a, b = hand.compute(0, 0), hand.compute(0, 1)
    prod, cons = hand.lock(a, 1), hand.lock(a, 0)
    hand.core_program(a, Loop(3, (Acquire(prod), Compute(16 * 3, "inline"), Release(cons))))
    hand.core_program(b, Loop(3, (Acquire(cons), Release(prod))))
    assert cycles("shared_memory") == int(fastsim.simulate(hand).total_cycles[0])


def test_inline__ops_cost_one_cycle_each_and_constants_none():
    info = read_design(HERE / "shared_memory.mlir")
    prog = info.design.cores[info.design.compute(0, 0)]
    assert prog == [Loop(3, (Acquire(info.design.locks[0]), Compute(48, "inline"), Release(info.design.locks[1])))]


def test_dma_task__persistent_core_ends_when_data_stops():
    info = read_design(HERE / "dma_task.mlir", {"add_one": 100})
    assert info.endless_cores == {info.design.compute(1, 0)}
    ds = simulate_design(info)
    assert ds.attrs["persistent_cores"] == 1
    level = dict(zip(ds.level.values, ds.level_bytes.values[0]))
    assert level["ddr_read"] == level["ddr_write"] == 1024
    assert 4 * 100 < int(ds.total_cycles[0]) < 4 * 100 + 400
    # four objects of 64 came, so four calls completed (the endless loop's static total is useless)
    assert ds.kernel_calls.sel(kernel="add_one").values.tolist() == [4]
    assert ds.kernel_cycles.sel(kernel="add_one").values.tolist() == [400]
    from fastsim.mlir.ablate import ablate
    _, rows = ablate(info)
    assert [(a.kernel, a.calls) for a in rows] == [("add_one", 4)]


def test_unsupported__op_is_named_with_its_line():
    with pytest.raises(MlirError) as e:
        read_design(HERE / "unsupported_op.mlir")
    assert e.value.stops == [("aie.switchbox", 6)]
    assert "unsupported_op.mlir:6: op 'aie.switchbox'" in str(e.value)
    assert isinstance(e.value, ConfigError)


def test_kernels__a_call_without_a_cost_is_an_error_naming_the_kernel():
    with pytest.raises(MlirError, match="kernel 'kernel' has no cost"):
        read_design(HERE / "physical_passthrough.mlir")


def test_kernels__toml_costs_are_read_and_checked(tmp_path):
    good = tmp_path / "costs.toml"
    good.write_text('[kernels]\nkernel = { cycles = 300 }\n')
    assert load_kernel_costs(good) == {"kernel": 300}
    assert cycles("physical_passthrough", good) == cycles("physical_passthrough", {"kernel": 300})
    bad = tmp_path / "bad.toml"
    bad.write_text('[kernels]\nkernel = 0\nother = "fast"\nhuge = 9223372036854775807\n')
    with pytest.raises(ConfigError) as e:
        load_kernel_costs(bad)
    assert [p.split(" = ")[0] for p in e.value.problems] == ["kernels.kernel", "kernels.other", "kernels.huge"]


@pytest.mark.parametrize("text,problems", [
    ("[kernel]\nkernel = 300\n", ["[kernel] = 'kernel': not a table of kernel costs"]),
    ("kernel = 300\n[kernels]\n", ["kernel = 300: a key outside [kernels]"]),
    ("[kernels]\nkernel = { cycle = 300 }\n", ["kernels.kernel.cycle = 300: unknown key",
                                               "kernels.kernel.cycles = 'missing'"]),
    ("", ["[kernels] = 'missing'"]),
    ("[kernels]\nkernel = 300\n[kernels.extra]\ncycles = 5\n", ["kernels.extra = 5: names no kernel"]),
    ("[kernels]\nkernel = -1\n[notes]\nx = 1\n", ["[notes] = 'notes': not a table", "kernels.kernel = -1"]),
])
def test_kernels__costs_outside_the_kernels_table_are_refused_by_name(tmp_path, text, problems):
    """A misspelled table or a key outside [kernels] would leave the design at guessed costs:
    each is named; every problem of the file's form at once (then, once it reads, its entries
    against the design's calls)."""
    path = tmp_path / "costs.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        read_design(HERE / "physical_passthrough.mlir", path)
    assert len(e.value.problems) == len(problems)
    for got, want in zip(e.value.problems, problems):
        assert want in got, e.value.problems


def test_kernels__an_entry_for_a_kernel_the_design_never_calls_is_refused():
    """A misspelled name is refused with the kernels the design calls, beside the design's own
    problems (here, the kernel it meant has no cost)."""
    with pytest.raises(MlirError) as e:
        read_design(HERE / "matmul_default_costs.mlir", {"matmul_bf16_f32": 900, "zero": 10})
    assert e.value.problems == ["kernels.zero = 10: names no kernel of the design (the design calls "
                                "matmul_bf16_f32, zero_f32)"]
    with pytest.raises(MlirError) as e:
        read_design(HERE / "physical_passthrough.mlir", {"kernal": 300})
    assert len(e.value.problems) == 2 and "kernels.kernal = 300: names no kernel" in e.value.problems[0]
    assert "kernel 'kernel' has no cost" in e.value.problems[1]
    with pytest.raises(MlirError, match="the design calls no kernel"):
        read_design(HERE / "shared_memory.mlir", {"kernel": 3})


def test_kernels__cli_refuses_a_misspelled_table_instead_of_guessing(tmp_path):
    from fastsim.cli import main

    costs = tmp_path / "costs.toml"
    costs.write_text("[kernel]\nmatmul_bf16_f32 = 900\n")
    path = str(HERE / "matmul_default_costs.mlir")
    out = CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs)])
    assert out.exit_code == 2 and "[kernel]" in out.output and "guessed" not in out.output, out.output
    costs.write_text("[kernels]\nmatmul_bf16_f32 = 900\nzero_f32 = 64\n")
    out = CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs), "--json"])
    assert out.exit_code == 0, out.output
    import json

    assert json.loads(out.output)["kernels"]["defaulted"] == []


def test_devices__a_file_of_several_devices_needs_a_choice():
    text = (HERE / "shared_memory.mlir").read_text().replace("aie.device(npu1_1col)", "aie.device(npu1_1col) @one")
    two = text.replace("module {", "module {\n  aie.device(npu2) @empty {\n  }", 1)
    with pytest.raises(MlirError, match="2 aie.device ops"):
        read_text(two)
    assert read_text(two, device="one").design.cores


def test_cli__run_design_prints_the_summary_and_json(tmp_path):
    from fastsim.cli import main

    costs = tmp_path / "costs.toml"
    costs.write_text("[kernels]\nkernel = 300\n")
    path = str(HERE / "objectfifo_passthrough.mlir")
    out = CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs)])
    assert out.exit_code == 0, out.output
    assert f"cycles          {cycles('physical_passthrough', {'kernel': 300}):,}" in out.output
    js = CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs), "--json"])
    import json

    s = json.loads(js.output)
    assert s["kernels"]["cycles_per_call"] == {"kernel": 300} and s["design"]["cores"] == 1
    missing = CliRunner().invoke(main, ["run", "design", path])
    assert missing.exit_code == 2 and "kernel 'kernel' has no cost" in missing.output


def test_static_if__the_branch_a_known_condition_takes_is_read():
    info = read_design(HERE / "static_if.mlir")
    d = info.design
    free = next(lk for lk in d.locks if lk.name == "free")
    # the loop that runs once is its body: a compare, the then-branch (a load and a store inline,
    # 1 cycle each, between the lock's acquire and release), then the second compare; neither
    # branch on the never-released lock is read
    assert d.cores[d.compute(0, 0)] == [Compute(1, "inline"), Acquire(free), Compute(2, "inline"), Release(free),
                                        Compute(1, "inline")]
    assert int(simulate_design(info).total_cycles[0]) > 0


def test_static_if__a_condition_computed_at_run_time_is_refused(tmp_path):
    text = (HERE / "static_if.mlir").read_text().replace("scf.for %k = %c0 to %c1 step %c1",
                                                         "scf.for %k = %c0 to %c3 step %c1")
    path = tmp_path / "dynamic_if.mlir"
    path.write_text(text)
    with pytest.raises(MlirError, match="scf.if on %first: only a condition known before the run"):
        read_design(path)


def test_static_if__an_unsigned_compare_of_a_negative_value_is_not_guessed(tmp_path):
    """Its result depends on the operands' width: the scf.if on it is refused, not read either way."""
    text = (HERE / "static_if.mlir").read_text().replace('%small = arith.cmpi "sgt", %c1, %c3 : index',
                                                         '%m1 = arith.constant -1 : i32\n'
                                                         '      %small = arith.cmpi ugt, %m1, %c3 : i32')
    path = tmp_path / "unsigned_if.mlir"
    path.write_text(text)
    with pytest.raises(MlirError, match="scf.if on %small: only a condition known before the run"):
        read_design(path)
