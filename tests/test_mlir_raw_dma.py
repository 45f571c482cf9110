"""Data BDs written by register writes in the runtime sequence (``aiex.npu.writebd``, BD words by
``aiex.npu.blockwrite``, ``address_patch``) and started by a write to a channel's start or task
queue, the form of mlir-aie's ``tile_dmas`` and ``memtile_dmas`` tests: read as the host pushes
(``dma_configure_task`` + ``dma_start_task``) they are, checked against a physical twin; every
field fastsim does not model refused naming the op and its line."""
from pathlib import Path

import pytest

from fastsim.mlir import MlirError, read_design, read_text, simulate_design
from fastsim.mlir.raw_dma import decode, from_writebd

HERE = Path(__file__).parent / "mlir"
RAW = (HERE / "raw_bd_tile.mlir").read_text()


def outcome(ds) -> tuple:
    levels = dict(zip(map(str, ds.level.values), ds.level_bytes.values[0].tolist()))
    return int(ds.total_cycles[0]), levels


def test_raw_bd__tile_program_by_register_writes_equals_its_physical_twin():
    raw = simulate_design(read_design(HERE / "raw_bd_tile.mlir"))
    twin = simulate_design(read_design(HERE / "raw_bd_tile_physical.mlir"))
    assert outcome(raw) == outcome(twin)
    assert outcome(raw)[1]["ddr_read"] == outcome(raw)[1]["ddr_write"] == 1024 * 4


def _tile_words(length: int, bd_next: int, acq: tuple, rel: tuple) -> list[int]:
    """A compute tile BD's six words (AM025 DMA_BDn_0..5) that loops to ``bd_next``."""
    locks = (bd_next << 27 | 1 << 26 | 1 << 25 | (rel[1] & 0x7F) << 18 | rel[0] << 13 | 1 << 12
             | (acq[1] & 0x7F) << 5 | acq[0])
    return [length, 0, 0, 0, 0, locks]


def test_raw_bd__blockwritten_words_read_as_the_writebd_fields():
    fields = {"buffer_length": 1024, "lock_acq_enable": 1, "lock_acq_id": 0, "lock_acq_val": 1, "lock_rel_id": 1,
              "lock_rel_val": 1, "next_bd": 0, "use_next_bd": 1, "valid_bd": 1}
    assert decode("compute", _tile_words(1024, 0, (0, 1), (1, 1))) == from_writebd("compute", fields)
    # a mem tile's acquire of -1 (greater-or-equal, as mlir-aie encodes it) on its own lock 64
    mem = decode("mem", [1024, 1 << 19, 0, 0, 0, 0, 0, 0x8141FF40])
    assert (mem.acquire, mem.release, mem.use_next, mem.length_bytes) == ((64, -1), (65, 1), True, 4096)


def test_raw_bd__blockwrite_form_simulates_as_the_writebd_form():
    words = {0: _tile_words(1024, 0, (0, 1), (1, 1)), 1: _tile_words(1024, 1, (1, 1), (0, 1))}
    text = RAW
    for bd, line in ((0, "row = 2 : i32, lock_acq_enable = 1 : i32, lock_acq_id = 0"),
                     (1, "row = 2 : i32, lock_acq_enable = 1 : i32, lock_acq_id = 1")):
        start = text.index("aiex.npu.writebd", text.index(line) - 200)
        end = text.index("\n", start)
        data = ", ".join(str(w) for w in words[bd])
        text = (text[:start] + f"%w{bd} = memref.get_global @bd{bd} : memref<6xi32>\n      aiex.npu.blockwrite(%w{bd}) "
                f"{{address = {0x21D000 + 0x20 * bd} : ui32, column = 0 : i32, row = 2 : i32}} : memref<6xi32>"
                + text[end:])
        text = text.replace("    %shim = aie.tile(0, 0)\n",
                            f"    %shim = aie.tile(0, 0)\n    memref.global \"private\" constant @bd{bd} : "
                            f"memref<6xi32> = dense<[{data}]>\n", 1)
    assert "aiex.npu.blockwrite" in text and "row = 2 : i32, lock_acq" not in text
    assert outcome(simulate_design(read_text(text))) == outcome(simulate_design(read_design(HERE / "raw_bd_tile.mlir")))


def test_raw_bd__a_bd_with_dimensions_is_refused_naming_the_queue_write():
    text = RAW.replace("row = 2 : i32, lock_acq_enable = 1 : i32, lock_acq_id = 0",
                       "row = 2 : i32, d0_size = 4 : i32, lock_acq_enable = 1 : i32, lock_acq_id = 0")
    with pytest.raises(MlirError, match=r":26: op 'aiex.npu.write32' .*BD 0 of tile\(0,2\) has dimensions"):
        read_text(text)


def test_raw_bd__a_bd_no_queue_starts_is_refused_naming_the_writebd():
    text = RAW.replace("aiex.npu.write32(%q2, %v2)", "// not started")
    with pytest.raises(MlirError, match=r"op 'aiex.npu.writebd' is outside the subset .*none runs this one"):
        read_text(text)


def test_raw_bd__an_endless_chain_started_after_a_host_wait_is_refused():
    """A cyclic chain is the channel's static chain only where its queue write runs at cycle 0 in
    fastsim's host model (before the first wait): a static chain starts exactly as that push would.
    After a wait it would start while the design runs."""
    start = "      aiex.npu.writebd {bd_id = 0 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, column = 0 : i32, row = 2"
    wait = "      aiex.npu.sync {column = 0 : i32, row = 0 : i32, direction = 0 : i32, channel = 0 : i32, column_num = 1 : i32, row_num = 1 : i32}\n"
    assert RAW.count(start) == 1
    with pytest.raises(MlirError, match="cycles forever on tile\\(0,2\\).s2mm0, and the host waited before it"):
        read_text(RAW.replace(start, wait + start))


def test_raw_bd__an_endless_chain_after_pushing_the_shim_input_still_starts_at_cycle_zero():
    """Every host step before the first wait runs at cycle 0: pushing the shim's input before the
    tile's cyclic chains changes no cycle."""
    first = RAW.index("      aiex.npu.writebd {bd_id = 1 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, "
                      "column = 0 : i32, row = 0")
    end = RAW.index("      aiex.npu.sync")
    tile = RAW.index("      aiex.npu.writebd {bd_id = 0 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, "
                     "column = 0 : i32, row = 2")
    text = RAW[:tile] + RAW[first:end] + RAW[tile:first] + RAW[end:]
    assert outcome(simulate_design(read_text(text))) == outcome(simulate_design(read_text(RAW)))


def test_raw_bd__a_lock_no_aie_lock_declares_is_refused():
    text = RAW.replace("lock_rel_id = 1 : i32, lock_rel_val = 1", "lock_rel_id = 7 : i32, lock_rel_val = 1")
    with pytest.raises(MlirError, match="releases lock 7 of tile\\(0,2\\), which no aie.lock declares"):
        read_text(text)


def test_raw_bd__a_channel_reset_by_its_control_register_is_refused():
    text = RAW.replace("%c1 = arith.constant 256 : i32", "%c1 = arith.constant 2 : i32").replace(
        "%c2 = arith.constant 3840 : i32", "%c2 = arith.constant 2 : i32")
    with pytest.raises(MlirError, match="aiex.npu.maskwrite32.*register 0x1D200 of tile.*beyond the Controller_ID"):
        read_text(text)


# -- the host sets a lock (aiex.set_lock, a write to the lock's value register) --------------------
UNSET = RAW.replace('%prod = aie.lock(%t, 0) {init = 1 : i32', '%prod = aie.lock(%t, 0) {init = 0 : i32')
FIRST = "      aiex.npu.writebd {bd_id = 0 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, column = 0 : i32, row = 0"


@pytest.mark.parametrize("set_op", [
    "      aiex.set_lock(%prod, 1)\n",
    "      %lk = arith.constant 2224128 : i32\n      %one = arith.constant 1 : i32\n"
    "      aiex.npu.write32(%lk, %one) {column = 0 : i32, row = 2 : i32} : i32, i32\n",  # 0x21F000: lock 0's value
])
def test_set_lock__before_the_first_wait_it_is_the_locks_initial_value(set_op):
    """The host's steps before its first wait run at cycle 0, before any core or channel moves:
    a lock set there is the lock's initial value, cycle for cycle."""
    assert UNSET.count(FIRST) == 1
    text = UNSET.replace(FIRST, set_op + FIRST)
    info = read_text(text)
    assert next(lk for lk in info.design.locks if lk.name == "prod").init == 1
    assert any("set to 1 by the host" in n for n in info.notes)
    assert outcome(simulate_design(info)) == outcome(simulate_design(read_text(RAW)))


def test_set_lock__after_a_wait_is_refused_naming_the_op():
    text = UNSET.replace("      aiex.npu.sync {", "      aiex.npu.sync {column = 0 : i32, row = 0 : i32, direction = 0 : i32, "
                         "channel = 0 : i32, column_num = 1 : i32, row_num = 1 : i32}\n      aiex.set_lock(%prod, 1)\n"
                         "      aiex.npu.sync {", 1)
    with pytest.raises(MlirError, match=r"aiex.set_lock: sets lock prod of tile\(0,2\), and the host waited before it"):
        read_text(text)


def test_set_lock__in_a_sequence_a_run_list_runs_twice_is_refused():
    """The second run's set would land after the first run's waits, while the design runs."""
    text = (HERE / "run_list.mlir").read_text()
    core = "    %core_tile = aie.tile(0, 2)\n    aie.objectfifo @to_core"
    start = "    aie.runtime_sequence @stream(%buf: memref<1024xi32>) {\n"
    assert text.count(core) == 1 and text.count(start) == 1
    text = text.replace(core, "    %core_tile = aie.tile(0, 2)\n    %extra = aie.lock(%core_tile, 5) {init = 0 : i32, "
                        "sym_name = \"extra\"}\n    aie.objectfifo @to_core").replace(
        start, start + "      aiex.set_lock(%extra, 1)\n")
    with pytest.raises(MlirError, match="sets lock extra of tile\\(0,2\\), and a run list's configuration runs its"):
        read_text(text, {"scale": 100})
