"""mlir-aie designs read as written: kernels that take their locks as arguments, the older forms
and one-line regions the reader once misread, files that are not MLIR, static checks as aie-opt
makes them, and the runtime sequence's raw register writes and scalar arguments."""
from pathlib import Path

import pytest
from click.testing import CliRunner

from fastsim.design import Push
from fastsim.errors import ConfigError
from fastsim.mlir import MlirError, load_kernel_costs, read_design, read_text, simulate_design
from fastsim.mlir.run import summary
from fastsim.results import LEVELS

HERE = Path(__file__).parent / "mlir"
HELD = {"cycles": 300, "acquire": [[2, 1], [3, 1]], "release": [[4, 1], [5, 1]]}


def run(name_or_text, kernels) -> tuple:
    info = read_design(HERE / f"{name_or_text}.mlir", kernels) if "\n" not in name_or_text \
        else read_text(name_or_text, kernels)
    ds = simulate_design(info)
    return int(ds.total_cycles[0]), ds.level_bytes.values[0].tolist(), ds.kernel_calls.values[0].tolist()


@pytest.mark.parametrize("kernel_cycles", [1, 300, 2000])
def test_kernel_locks__declared_locks_run_as_the_use_locks_around_the_call(kernel_cycles):
    """The kernel acquires and releases what physical_passthrough's core does around its call."""
    held = run("kernel_held_locks", {"kernel": {**HELD, "cycles": kernel_cycles}})
    assert held == run("physical_passthrough", {"kernel": kernel_cycles})
    assert held[2] == [4]


def test_kernel_locks__undeclared_locks_are_refused_by_name_not_a_deadlock():
    with pytest.raises(MlirError) as e:
        read_design(HERE / "kernel_held_locks.mlir", {"kernel": 300})
    text = str(e.value)
    assert "kernel_held_locks.mlir:30: func.call: kernel 'kernel' is passed lock(s) %in_full (operand 2)" in text
    assert "[kernels.kernel] cycles = N, acquire = [[OPERAND, VALUE], ...]" in text


def test_kernel_locks__a_declared_operand_that_passes_no_lock_is_refused():
    with pytest.raises(MlirError, match=r"kernels.kernel declares lock operand\(s\) \[0\], but this call passes "
                                        r"locks at operand\(s\) \[2, 3, 4, 5\] only"):
        read_design(HERE / "kernel_held_locks.mlir", {"kernel": {**HELD, "acquire": [[0, 1]]}})


def test_kernel_locks__toml_entries_keep_their_locks_and_bad_lists_are_refused(tmp_path):
    good = tmp_path / "k.toml"
    good.write_text("[kernels.kernel]\ncycles = 300\nacquire = [[2, 1], [3, 1]]\nrelease = [[4, 1], [5, 1]]\n")
    assert load_kernel_costs(good) == {"kernel": HELD}
    assert run("kernel_held_locks", good) == run("physical_passthrough", {"kernel": 300})
    bad = tmp_path / "bad.toml"
    bad.write_text("[kernels.kernel]\ncycles = 300\nacquire = [[2]]\nrelease = [[-1, 1]]\n")
    with pytest.raises(ConfigError) as e:
        load_kernel_costs(bad)
    assert [p.split(" = ")[0] for p in e.value.problems] == ["kernels.kernel.acquire", "kernels.kernel.release"]


ADD_ONE = (HERE / "add_one_link.mlir").read_text()
MODERN_COPIES = """      aiex.npu.dma_memcpy_nd(%out[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 1 : i64, metadata = @out0} : memref<64xi32>
      aiex.npu.dma_memcpy_nd(%in[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 0 : i64, metadata = @in0} : memref<64xi32>"""
OLDER_COPIES = """      %c0 = arith.constant 0 : i64
      %c1 = arith.constant 1 : i64
      %c64 = arith.constant 64 : i64
      aiex.npu.dma_memcpy_nd (0, 0, %out[%c0,%c0,%c0,%c0][%c1,%c1,%c1,%c64][%c0,%c0,%c0]) { metadata = @out0, id = 1 : i64 } : memref<64xi32>
      aiex.npu.dma_memcpy_nd (0, 0, %in[%c0,%c0,%c0,%c0][%c1,%c1,%c1,%c64][%c0,%c0,%c0]) { metadata = @in0, id = 0 : i64 } : memref<64xi32>"""


def test_memcpy__the_older_three_stride_form_reads_as_the_four_stride_form():
    """``dma_memcpy_nd(x, y, %buf[4 offsets][4 sizes][3 strides])`` (add_one_objFifo as mlir-aie
    wrote it until 2024): the three outer strides, the innermost 1."""
    assert MODERN_COPIES in ADD_ONE
    older = ADD_ONE.replace(MODERN_COPIES, OLDER_COPIES)
    assert run(older, None) == run("add_one_link", None)


def test_memcpy__lists_of_other_lengths_are_named_not_a_python_error():
    bad = ADD_ONE.replace(MODERN_COPIES, MODERN_COPIES.replace("[0, 0, 0, 1])", "[0, 1])", 1))
    with pytest.raises(MlirError) as e:
        read_text(bad)
    text = str(e.value)
    assert "offsets [0, 0, 0, 0], sizes [1, 1, 1, 64], strides [0, 1]: expected as many" in text
    assert "Error" not in text.replace("MlirError", "")


PHYSICAL = (HERE / "physical_passthrough.mlir").read_text()
CIRCUIT = "    aie.flow(%shim, DMA : 0, %core_tile, DMA : 0)\n"


@pytest.mark.parametrize("packet_flow", [
    "    aie.packet_flow(0x3) { aie.packet_source<%shim, DMA : 0> aie.packet_dest<%core_tile, DMA : 0> }\n",
    "    aie.packet_flow(3) {\n      aie.packet_source<%shim, DMA : 0>\n      aie.packet_dest<%core_tile, DMA : 0>\n    }\n",
    "    aie.packet_flow(3) {aie.packet_source<%shim, DMA : 0>\n      aie.packet_dest<%core_tile, DMA : 0>}\n"])
def test_packet_flow__on_one_line_or_several_reads_as_its_one_source_circuit(packet_flow):
    assert CIRCUIT in PHYSICAL
    text = PHYSICAL.replace(CIRCUIT, packet_flow)
    assert run(text, {"kernel": 300}) == run("physical_passthrough", {"kernel": 300})


def test_attribute_dictionaries__with_dotted_names_stay_attributes():
    """``{fastsim.cycles = 5}`` and a unit attribute ``{aie.flag}`` are attributes, not regions."""
    text = PHYSICAL.replace('{sym_name = "in_a"}', '{sym_name = "in_a", fastsim.note = 5, aie.flag}')
    assert run(text, {"kernel": 300}) == run("physical_passthrough", {"kernel": 300})


@pytest.mark.parametrize("content, why", [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text: byte 0x89 at offset 0"),
    (b"import numpy as np\nprint(1)\n", "it starts with 'import numpy as np', which starts no MLIR operation"),
    (b"// a comment\n{\"kernels\": 1}\n", "it starts with '{\"kernels\": 1}'"),
    (b"module {\x00}\n", "it holds NUL bytes"),
])
def test_files__that_are_not_mlir_text_are_one_clean_error(tmp_path, content, why):
    path = tmp_path / "design.mlir"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        read_design(path)
    assert len(e.value.problems) == 1
    assert e.value.problems[0] == f"{path}: not an MLIR text file ({why})" or \
        e.value.problems[0].startswith(f"{path}: not an MLIR text file ({why}")


FIFO = (HERE / "objectfifo_passthrough.mlir").read_text()


def test_static__an_undefined_value_is_refused_with_op_and_line():
    text = PHYSICAL.replace("aie.use_lock(%in_free, AcquireGreaterEqual, 1)",
                            "aie.use_lock(%in_fre, AcquireGreaterEqual, 1)", 1)
    assert text != PHYSICAL
    with pytest.raises(MlirError) as e:
        read_text(text, {"kernel": 300}, source="d.mlir")
    line = text[:text.index("%in_fre,")].count("\n") + 1
    assert e.value.problems == [f"d.mlir:{line}: aie.use_lock: use of undeclared SSA value %in_fre (no op, "
                                "argument or loop defines it; aie-opt rejects the file)"]
    assert e.value.stops == [("aie.use_lock", line)]


def test_static__a_call_of_an_undeclared_function_is_refused():
    text = PHYSICAL.replace("    func.func private @kernel(memref<256xi32>, memref<256xi32>)\n", "")
    with pytest.raises(MlirError, match=r"d.mlir:\d+: func.call: calls @kernel, which no func.func declares"):
        read_text(text, {"kernel": 300}, source="d.mlir")


def test_static__loop_indices_block_arguments_and_signatures_define_values():
    text = PHYSICAL.replace("    %core = aie.core(%core_tile) {\n", "    %core = aie.core(%core_tile) {\n"
                            "      cf.br ^start(%in_a : memref<256xi32>)\n    ^start(%arg: memref<256xi32>):\n")
    assert "^start" in text
    assert run(text, {"kernel": 300}) == run("physical_passthrough", {"kernel": 300})


def test_static__acquiring_more_objects_than_the_depth_is_refused():
    assert "@in_cons(Consume, 1)" in FIFO or "(Consume, 1)" in FIFO
    text = FIFO.replace("(Consume, 1) :", "(Consume, 3) :", 1)
    with pytest.raises(MlirError, match=r"objectfifo.acquire: acquires 3 objects of @\w+, more than its depth at "
                                        r"this end \(2\): aie-opt rejects it"):
        read_text(text, {"kernel": 300})


TRACED = HERE / "trace_setup_iron.mlir"


def test_trace_setup__iron_register_writes_take_instructions_and_move_no_data():
    """IRON's raw trace set-up (writes, a block write, a masked write to the trace channel's
    control register, a trace BD pushed to its task queue) reads; the data's cycles and bytes are
    the untraced design's; each write is counted as a command-processor instruction."""
    assert run("trace_setup_iron", {"kernel": 300}) == run("objectfifo_passthrough", {"kernel": 300})
    info = read_design(TRACED, {"kernel": 300})
    assert {"aiex.npu.write32", "aiex.npu.maskwrite32", "aiex.npu.blockwrite"} <= {n for n, _ in info.untimed}
    text = TRACED.read_text()
    writes = sum(text.count(f"aiex.npu.{w}") for w in ("write32 ", "maskwrite32 ", "blockwrite("))
    seq = summary(simulate_design(info), info)["runtime_sequence"]
    assert seq["register_writes"] == writes == 13
    assert seq["instruction_cycles"] == (seq["host_steps"] + writes) * info.design.arch.runtime_instruction_cycles


@pytest.mark.parametrize("change, stop, address", [
    (("address = 213204 : ui32, column = 0 : i32, row = 2", "address = 204800 : ui32, column = 0 : i32, row = 2"),
     "aiex.npu.write32", "0x32000"),
    (("blockwrite(%events) {address = 213216", "blockwrite(%events) {address = 126976"),
     "aiex.npu.blockwrite", "0x1F000"),
    (("maskwrite32 {address = 119304 : ui32, column = 0 : i32, mask = 7936 : ui32, row = 0 : i32, value = 3840",
      "maskwrite32 {address = 119296 : ui32, column = 0 : i32, mask = 2 : ui32, row = 0 : i32, value = 2"),
     "aiex.npu.maskwrite32", "0x1D200"),
])
def test_trace_setup__a_write_that_could_change_modelled_state_is_refused_naming_it(change, stop, address):
    """Core control (0x32000), a block write over a lock register (0x1F000) or a reset by the control
    register of a channel that carries the design's data (shim S2MM 0) stays outside the subset,
    named with the register (a channel control's Controller_ID field alone, where task tokens go,
    and a write32 setting a lock before the host's first wait are read: tests/test_mlir_raw_dma.py)."""
    text = TRACED.read_text()
    assert change[0] in text
    with pytest.raises(MlirError) as e:
        read_text(text.replace(*change), {"kernel": 300})
    assert stop in {name for name, _ in e.value.stops}
    assert f"register {address}" in str(e.value)


SCALAR = (HERE / "objectfifo_passthrough.mlir").read_text().replace(
    "aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>) {",
    "aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>, %objects: i32) {\n"
    "      %n = arith.index_cast %objects : i32 to i64").replace(
    "[%c4, %c1, %c1, %c256]", "[%n, %c1, %c1, %c256]")


def test_runtime_scalar__a_given_value_reads_as_the_constant():
    assert SCALAR.count("[%n, %c1, %c1, %c256]") == 2
    given = read_text(SCALAR, {"kernel": 300}, args={"objects": 4})
    assert given.runtime_args == {"objects": 4}
    ds = simulate_design(given)
    assert (int(ds.total_cycles[0]), ds.kernel_calls.values[0].tolist()) == \
        run("objectfifo_passthrough", {"kernel": 300})[::2]


def test_runtime_scalar__a_missing_value_is_named_an_unused_one_refused():
    with pytest.raises(MlirError) as e:
        read_text(SCALAR, {"kernel": 300})
    assert "%objects is a runtime argument (i32) whose value the host passes at run time: give it" in str(e.value)
    assert e.value.stops[0][0] == "arith.index_cast"
    with pytest.raises(MlirError, match=r"args.count = 4: names no scalar argument of the runtime sequence "
                                        r"\(it has \['objects'\]\)"):
        read_text(SCALAR, {"kernel": 300}, args={"objects": 4, "count": 4})
    with pytest.raises(MlirError, match=r"args.objects = 'four': must be a whole number"):
        read_text(SCALAR, {"kernel": 300}, args={"objects": "four"})


def test_runtime_scalar__a_sequence_loop_over_dma_tasks_runs_once_per_given_pass():
    """tests/mlir/dynamic_tasks.mlir (mlir-aie's dynamic_pingpong form): the scf.for of the
    runtime sequence pushes one input task per object, its iter_args carrying the previous task;
    the output task's length comes from arith.trunci and arith.muli of %n."""
    runs = {}
    for n in (1, 2, 4):
        info = read_design(HERE / "dynamic_tasks.mlir", {"kernel": 300}, args={"n": n, "go": 1})
        ds = simulate_design(info)
        level = dict(zip(LEVELS, ds.level_bytes.values[0]))
        assert level["ddr_read"] == level["ddr_write"] == 1024 * n and ds.kernel_calls.values[0].tolist() == [n]
        assert sum(isinstance(op, Push) for op in info.design.host) == n + 1
        runs[n] = int(ds.total_cycles[0])
    assert runs[1] < runs[2] < runs[4]


def test_runtime_scalar__an_scf_if_on_a_given_flag_takes_its_branch_and_unknown_values_are_named():
    assert read_design(HERE / "dynamic_tasks.mlir", {"kernel": 300}, args={"n": 4, "go": 0}).design.host == []
    with pytest.raises(MlirError) as e:
        read_design(HERE / "dynamic_tasks.mlir", {"kernel": 300}, args={"go": 1})
    assert "%n is a runtime argument (i64)" in str(e.value) and e.value.stops[0] == ("arith.index_cast", 34)
    with pytest.raises(MlirError) as e:
        read_design(HERE / "dynamic_tasks.mlir", {"kernel": 300}, args={"n": 4})
    assert "%go is a runtime argument (i1)" in str(e.value) and e.value.stops[0] == ("scf.if", 31)


def test_runtime_scalar__trunci_keeps_the_low_bits_and_a_huge_sequence_loop_is_named():
    with pytest.raises(MlirError, match=r"dynamic_tasks.mlir:47: scf.for: a runtime-sequence loop of 4,294,967,298 passes"):
        read_design(HERE / "dynamic_tasks.mlir", {"kernel": 300}, args={"n": 2**32 + 3, "go": 1})


def test_cli__arg_gives_a_scalar_and_the_trace_writes_are_reported(tmp_path):
    from fastsim.cli import main  # the whole CLI: imported by the one test that needs it

    design, costs = tmp_path / "scalar.mlir", tmp_path / "k.toml"
    design.write_text(SCALAR)
    costs.write_text("[kernels]\nkernel = 300\n")
    runner = CliRunner()
    out = runner.invoke(main, ["run", "design", str(design), "--kernels", str(costs), "--arg", "objects=4", "--json"])
    assert out.exit_code == 0, out.output
    assert '"total_cycles": ' + str(run("objectfifo_passthrough", {"kernel": 300})[0]) in out.output
    missing = runner.invoke(main, ["run", "design", str(design), "--kernels", str(costs)])
    assert missing.exit_code != 0 and "--arg objects=VALUE" in missing.output
    assert "Traceback" not in missing.output
    bad = runner.invoke(main, ["run", "design", str(design), "--kernels", str(costs), "--arg", "objects"])
    assert bad.exit_code != 0 and "--arg objects: give NAME=VALUE" in bad.output
    traced = runner.invoke(main, ["run", "design", str(TRACED), "--kernels", str(costs)])
    assert traced.exit_code == 0, traced.output
    assert "3 host steps + 13 register writes (set-up, no data)" in traced.output


@pytest.mark.parametrize("write", [
    '      aiex.npu.maskwrite32 {address = 1024 : ui32, column = 0 : i32, row = 2 : i32, mask = 255 : ui32, value = 7 : ui32}\n',
    '      aiex.npu.write32 {address = 4 : ui32, value = 42 : ui32, buffer = @in_a}\n',
])
def test_register_writes__into_data_memory_or_a_buffer_set_values_and_move_nothing(write):
    """A write into a compute tile's data memory (below its 64 KiB) or into an aie.buffer sets data
    values, which fastsim does not model: an instruction, no data, the same cycles."""
    anchor = "    aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>) {\n"
    assert anchor in PHYSICAL
    text = PHYSICAL.replace(anchor, anchor + write)
    assert run(text, {"kernel": 300}) == run("physical_passthrough", {"kernel": 300})


def test_register_writes__a_lock_register_set_after_a_wait_is_refused_naming_it():
    """0x1F000 is above the data memory: lock 0's value register. Set before the host's first wait
    it is the lock's initial value (tests/test_mlir_raw_dma.py); after a wait it would change the
    lock while the design runs, which fastsim's host steps do not model."""
    anchor = "      aiex.npu.dma_wait {symbol = @from_core}\n"
    write = "      aiex.npu.write32 {address = 126976 : ui32, column = 0 : i32, row = 2 : i32, value = 1 : ui32}\n"
    assert anchor in PHYSICAL
    with pytest.raises(MlirError, match=r"aiex.npu.write32.*sets lock in_free of tile\(0,2\), and the host waited before it"):
        read_text(PHYSICAL.replace(anchor, anchor + write), {"kernel": 300})


def test_packet_flow__several_sources_in_one_flow_read_as_packet_routes_into_one_channel():
    fan_in = ("    aie.packet_flow(3) {\n      aie.packet_source<%shim, DMA : 0>\n      aie.packet_source<%core_tile, DMA : 1>\n"
              "      aie.packet_dest<%core_tile, DMA : 0>\n    }\n")
    routes = read_text(PHYSICAL.replace(CIRCUIT, fan_in), {"kernel": 300}).design.routes
    into = [r for r in routes if any(d.tile.row == 2 and d.direction == "s2mm" for d in r.dsts)]
    assert len(into) == 2 and all(r.packet for r in into)
    assert all(not r.packet for r in routes if r not in into)


def test_packet_flow__fan_in_design_reads_packet_routes_and_delivers_every_object():
    """tests/mlir/packet_fan_in.mlir: two cores' packets share the shim's S2MM 0; all eight
    objects (2 KiB) arrive, every kernel call runs, and the bytes count once per producer."""
    info = read_design(HERE / "packet_fan_in.mlir", {"kernel": 100})
    assert [(str(r.src), [str(d) for d in r.dsts], r.packet) for r in info.design.routes] == [
        ("tile(0,2).mm2s0", ["tile(0,0).s2mm0"], True), ("tile(0,3).mm2s0", ["tile(0,0).s2mm0"], True)]
    cycles, level_bytes, calls = run("packet_fan_in", {"kernel": 100})
    level = dict(zip(LEVELS, level_bytes))
    assert level["ddr_write"] == level["shim_compute"] == 2048 and calls == [8]
    slow, _, _ = run("packet_fan_in", {"kernel": 2000})
    assert 4 * 2000 < slow < 5 * 2000  # two cores compute side by side; the port shares only the sends


def test_packet_flow__fan_out_by_packet_id_reads_a_packet_route_per_id_and_the_bds_ids():
    """tests/mlir/packet_fan_out.mlir: the shim's MM2S 0 sends ids 3 and 7 to two cores; the
    runtime sequence's memcpys carry the ids (``packet = <pkt_id = N>``)."""
    info = read_design(HERE / "packet_fan_out.mlir", {"kernel": 300})
    fan = [(str(r.src), [str(d) for d in r.dsts], r.packet, r.packet_id) for r in info.design.routes
           if str(r.src) == "tile(0,0).mm2s0"]
    assert fan == [("tile(0,0).mm2s0", ["tile(0,2).s2mm0"], True, 3), ("tile(0,0).mm2s0", ["tile(0,3).s2mm0"], True, 7)]
    pushed = [op.bd.packet_id for op in info.design.host if isinstance(op, Push) and str(op.channel) == "tile(0,0).mm2s0"]
    assert pushed == [3, 7, 3, 7]


def test_packet_flow__fan_out_design_runs_each_cores_share():
    cycles, level_bytes, calls = run("packet_fan_out", {"kernel": 300})
    level = dict(zip(LEVELS, level_bytes))
    assert level["ddr_read"] == level["ddr_write"] == 1024 and level["shim_compute"] == 2048 and calls == [4]
    slow, _, _ = run("packet_fan_out", {"kernel": 3000})
    assert 2 * 3000 < slow < 3 * 3000  # the cores work side by side, two calls each


def test_packet_flow__one_id_to_several_channels_is_refused_naming_the_op():
    multicast = CIRCUIT.replace("aie.flow(%shim, DMA : 0, %core_tile, DMA : 0)",
                                "aie.packet_flow(1) { aie.packet_source<%shim, DMA : 0> aie.packet_dest<%core_tile, DMA : 0> }\n"
                                "    aie.packet_flow(1) { aie.packet_source<%shim, DMA : 0> aie.packet_dest<%core_tile, DMA : 1> }")
    with pytest.raises(MlirError) as e:
        read_text(PHYSICAL.replace(CIRCUIT, multicast), {"kernel": 300})
    assert "multicast" in str(e.value) and e.value.stops[0][0] == "aie.packet_flow"


def test_packet_flow__sharing_a_channel_with_a_circuit_flow_is_refused():
    both = CIRCUIT + "    aie.packet_flow(1) { aie.packet_source<%core_tile, DMA : 1> aie.packet_dest<%core_tile, DMA : 0> }\n"
    with pytest.raises(MlirError) as e:
        read_text(PHYSICAL.replace(CIRCUIT, both), {"kernel": 300})
    assert "a circuit flow also feeds" in str(e.value) and e.value.stops[0][0] == "aie.packet_flow"


def test_static__parallel_and_forall_indices_are_defined_and_only_the_undefined_value_is_named():
    from fastsim.mlir.syntax import parse
    from fastsim.mlir.verify import static_problems

    text = """module {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %x = arith.addi %i, %j : index
  }
  scf.forall (%k) in (4) {
    %y = arith.addi %k, %k : index
  }
  %z = arith.addi %q, %c1 : index
}"""
    found = static_problems(parse(text))
    assert [(op.name, op.line) for op, _ in found] == [("arith.addi", 11)]
    assert "%q" in found[0][1]


@pytest.mark.parametrize("op, value", [("arith.divsi %m7, %c2", -3), ("arith.remsi %m7, %c2", -1),
                                       ("arith.floordivsi %m7, %c2", -4), ("arith.ceildivsi %m7, %c2", -3),
                                       ("arith.muli %objects, %c2", 8)])
def test_runtime_scalar__integer_arith_over_known_values_is_evaluated(monkeypatch, op, value):
    """The sequence evaluates what MLIR's arith ops define (divsi rounds toward zero)."""
    from fastsim.mlir.sequence import SequenceReader

    text = SCALAR.replace("      %n = arith.index_cast %objects : i32 to i64",
                          "      %m7 = arith.constant -7 : i64\n      %c2 = arith.constant 2 : i64\n"
                          f"      %v = {op} : i64\n      %n = arith.index_cast %objects : i32 to i64")
    seen = {}
    original = SequenceReader._arith

    def spy(self, o):
        original(self, o)
        seen[o.results[0]] = self.r.env[o.results[0]]

    monkeypatch.setattr(SequenceReader, "_arith", spy)
    info = read_text(text, {"kernel": 300}, args={"objects": 4})
    assert info.runtime_args == {"objects": 4}
    assert seen["%v"] == value and seen["%n"] == 4


def test_runtime_scalar__a_division_by_zero_is_named():
    text = SCALAR.replace("      %n = arith.index_cast %objects : i32 to i64",
                          "      %z = arith.constant 0 : i64\n      %bad = arith.divsi %z, %z : i64\n"
                          "      %n = arith.index_cast %objects : i32 to i64")
    with pytest.raises(MlirError, match=r"arith.divsi: divides by zero"):
        read_text(text, {"kernel": 300}, args={"objects": 4})


def test_buffer_clear__zeroes_data_memory_as_an_instruction_and_moves_nothing():
    anchor = "    aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>) {\n"
    text = PHYSICAL.replace(anchor, anchor + "      aiex.buffer_clear(%core_tile, 0, 256)\n")
    assert run(text, {"kernel": 300}) == run("physical_passthrough", {"kernel": 300})
    info = read_text(text, {"kernel": 300})
    assert summary(simulate_design(info), info)["runtime_sequence"]["register_writes"] == 1
    with pytest.raises(MlirError, match=r"aiex.buffer_clear.*tile\(0,0\) is a shim tile"):
        read_text(text.replace("buffer_clear(%core_tile", "buffer_clear(%shim"), {"kernel": 300})


def test_unrouted__a_channel_given_work_that_no_flow_leaves_is_refused_naming_the_op():
    """No flow leaves the core's MM2S: the op that gives it work is named with its line (it was a
    validation error naming only the channel)."""
    text = PHYSICAL.replace("    aie.flow(%core_tile, DMA : 0, %shim, DMA : 0)\n", "")
    with pytest.raises(MlirError) as e:
        read_text(text, {"kernel": 300}, source="d.mlir")
    line = text[:text.index("aie.dma_start(MM2S, 0")].count("\n") + 1
    assert e.value.stops == [("aie.dma_start", line)]
    assert "tile(0,2).mm2s0 is given work, but no flow leaves it" in str(e.value)


def test_fifo__a_consumer_element_type_of_its_own_is_refused_not_misread():
    text = FIFO.replace("aie.objectfifo @to_core(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<256xi32>>",
                        "aie.objectfifo @to_core(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<256xi32>> "
                        "-> !aie.objectfifo<memref<64xi32>>")
    assert text != FIFO
    with pytest.raises(MlirError, match="object FIFO to_core: a consumer element type of its own"):
        read_text(text, {"kernel": 300})


def test_packet_flow__fan_out_beside_a_circuit_flow_or_into_a_shared_channel_is_refused_naming_the_op():
    text = (HERE / "packet_fan_out.mlir").read_text()
    circuit = text.replace("    aie.flow(%t0, DMA : 0, %shim, DMA : 0)\n",
                           "    aie.flow(%t0, DMA : 0, %shim, DMA : 0)\n    aie.flow(%shim, DMA : 0, %t0, DMA : 1)\n")
    with pytest.raises(MlirError, match=r"packet_fan_out.mlir:\d+: op 'aie.packet_flow' .*a circuit flow also leaves it"):
        read_text(circuit, {"kernel": 300}, source=str(HERE / "packet_fan_out.mlir"))
    shared = text.replace("    aie.flow(%t0, DMA : 0, %shim, DMA : 0)\n",
                          "    aie.flow(%t0, DMA : 0, %shim, DMA : 0)\n"
                          "    aie.packet_flow(9) { aie.packet_source<%t1, DMA : 1> aie.packet_dest<%t0, DMA : 0> }\n")
    with pytest.raises(MlirError, match=r"op 'aie.packet_flow' .*which another source also feeds"):
        read_text(shared, {"kernel": 300})
