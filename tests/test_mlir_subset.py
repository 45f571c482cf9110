"""The wider subset of mlir-aie's aie dialect: zero padding, queued and repeated DMA chains, cf.br
core loops, configuration loads and tokens with no modelled time, runtime arguments sized by their
accesses, stranded cores, and kernel ablation."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fastsim.errors import SimulationError
from fastsim.mlir import read_design, read_text, simulate_design
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
