"""mlir-aie designs read as written: kernels that take their locks as arguments, the older forms
and one-line regions the reader once misread, files that are not MLIR, static checks as aie-opt
makes them, and the runtime sequence's raw register writes and scalar arguments."""
from pathlib import Path

import pytest

from fastsim.errors import ConfigError
from fastsim.mlir import MlirError, load_kernel_costs, read_design, read_text, simulate_design

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
