"""fastsim export: designs fastsim builds, written as physical aie MLIR, read back to identical cycles
and identical bytes per level (the round trip of issue 31)."""
from dataclasses import fields

import pytest
from click.testing import CliRunner

import fastsim
from fastsim import NPU1, NPU2, Acquire, Compute, Design, Loop, Release, mm2s, object_fifo, s2mm
from fastsim.mapping import Mapping, matmul_design
from fastsim.mapping.vector import VectorOp, vector_design
from fastsim.mlir import ExportError, read_text, simulate_design, write_design, write_kernel_costs
from fastsim.workloads.gemm import Gemm, gemm_mapping


def levels(ds) -> dict:
    return dict(zip(map(str, ds.level.values), ds.level_bytes.values[0].tolist()))


def assert_round_trip(design: Design, kernels=None):
    text = write_design(design)
    back = read_text(text, kernels, arch=design.arch, source="export.mlir")
    want, got = fastsim.simulate(design), simulate_design(back)
    assert int(got.total_cycles[0]) == int(want.total_cycles[0])
    assert levels(got) == levels(want)
    return back


def searched(g: Gemm, arch, rank: int = 0) -> Design:
    """The design of the ``rank``-th candidate of the search by lower bound (0: the one chosen)."""
    found = gemm_mapping(g, arch)
    row = found.ranked[rank - 1]
    mp = Mapping(**{f.name: row[f.name] for f in fields(Mapping)}) if rank else found.best
    return matmul_design(g.matmul(), mp, arch)


@pytest.mark.slow
@pytest.mark.parametrize("arch,g,rank", [
    (NPU1, Gemm(64, 128, 64), 0),
    (NPU1, Gemm(256, 256, 256), 0),
    (NPU1, Gemm(256, 256, 256), 1),
    (NPU2, Gemm(128, 512, 256, dtype="int8"), 0),
    (NPU2, Gemm(256, 256, 256), 2),
])
def test_export__searched_gemm_reads_back_to_identical_cycles(arch, g, rank):
    back = assert_round_trip(searched(g, arch, rank))
    assert back.design.arch is arch


@pytest.mark.parametrize("arch", [NPU1, NPU2])
def test_export__vector_design_reads_back_to_identical_cycles(arch):
    assert_round_trip(vector_design(VectorOp(256, 1024, vector_cycles_per_elem=0.5, x_inputs=2), arch))


def hand_design() -> Design:
    """A passthrough with what the mapper never uses: a shim BD with iterations and dims, a
    strided innermost dimension, per-call cycles that differ, nested and one-pass loops."""
    d = Design(NPU2, "hand")
    sh, ct = d.shim(0), d.compute(0, 0)
    src, dst = d.ddr_buffer(8192, "src"), d.ddr_buffer(4096, "dst")
    fin = object_fifo(d, mm2s(sh, 0), [s2mm(ct, 0)], 2, 1024, "in")
    fout = object_fifo(d, mm2s(ct, 0), [s2mm(sh, 0)], 2, 1024, "out")
    c = fin["consumers"][0]
    step = (Acquire(c["cons_lock"]), Acquire(fout["producer_prod_lock"]), Compute(300, "k"),
            Compute(7, "k"), Release(c["prod_lock"]), Release(fout["producer_cons_lock"]))
    d.core_program(ct, Compute(50, "setup"), Loop(1, (Loop(2, step),)), Loop(2, step))
    d.push(mm2s(sh, 0), d.bd(mm2s(sh, 0), src, 1024, dims=((128, 2), (2, 1)), iterations=4))
    d.push(s2mm(sh, 0), d.bd(s2mm(sh, 0), dst, 1024, iterations=4))
    d.wait(s2mm(sh, 0))
    return d


def test_export__hand_design_with_dims_iterations_and_call_costs_reads_back():
    back = assert_round_trip(hand_design())
    shim_in = next(b for b in back.design.bds if b.channel == mm2s(back.design.shim(0), 0))
    assert (shim_in.length_bytes, shim_in.iterations, shim_in.dims) == (1024, 4, ((128, 2), (2, 1)))


def test_export__packet_fan_in_reads_back_as_packet_routes():
    """Two cores' packets share the shim's S2MM 0: written as aie.packet_flow ops (and packet ids
    on the senders' BDs), read back as packet routes to identical cycles and bytes."""
    d = Design(NPU2, "fan-in")
    dst = s2mm(d.shim(0), 0)
    for row in (0, 1):
        tile = d.compute(0, row)
        free, full = d.lock(tile, 2, f"free{row}"), d.lock(tile, 0, f"full{row}")
        bds = [d.bd(mm2s(tile, 0), d.buffer(tile, 512, f"b{row}{i}"), 512, acquire=(full, 1), release=(free, 1))
               for i in range(2)]
        d.start_chain(mm2s(tile, 0), d.chain(*bds, cyclic=True))
        d.route(mm2s(tile, 0), dst, packet=True)
        d.core_program(tile, Loop(3, (Acquire(free), Compute(200 + 50 * row, f"k{row}"), Release(full))))
    d.push(dst, d.bd(dst, d.ddr_buffer(3072), 3072))
    d.wait(dst)
    text = write_design(d)
    assert text.count("aie.packet_flow(") == 2 and "pkt_id = 1>" in text
    back = assert_round_trip(d)
    assert [r.packet for r in back.design.routes] == [True, True]


def test_export__bd_fields_survive_the_text():
    """Offsets and lengths in bytes, compression and iterations beside four dimensions (fastsim.*
    attributes) come back as written."""
    d = Design(NPU2, "fields")
    mem, ct = d.mem(0), d.compute(0, 0)
    odd = d.buffer(mem, 1030, "odd")
    words = d.buffer(mem, 4096, "words")
    l1 = d.buffer(ct, 2048, "l1")
    d.start_chain(mm2s(mem, 0), d.bd(mm2s(mem, 0), odd, 1026, offset_bytes=2, iterations=3))
    four = d.bd(mm2s(mem, 1), words, 128, dims=((2, 1), (4, 8), (2, 32), (2, 64)), iterations=2)
    d.start_chain(mm2s(mem, 1), four)
    d.start_chain(mm2s(ct, 0), d.bd(mm2s(ct, 0), l1, 1024, compression_ratio=2.0))
    for src, dst in ((mm2s(mem, 0), s2mm(ct, 0)), (mm2s(mem, 1), s2mm(ct, 1)), (mm2s(ct, 0), s2mm(mem, 0))):
        d.route(src, dst)  # a channel given work that no flow leaves is refused when read
    back = read_text(write_design(d), arch=NPU2).design
    got = {b.buffer.name: b for b in back.bds}
    assert (got["odd"].offset_bytes, got["odd"].length_bytes, got["odd"].iterations) == (2, 1026, 3)
    assert got["words"].total_bytes == four.total_bytes
    assert got["l1"].compression_ratio == 2.0
    assert {b.name: b.size_bytes for b in back.buffers} == {"odd": 1030, "words": 4096, "l1": 2048}


def test_export__kernel_costs_file_wins_over_the_written_cycles():
    d = hand_design()
    text = write_design(d)
    assert write_kernel_costs(d).splitlines()[1:] == ["[kernels]", "k = 300", "setup = 50"]
    slow = simulate_design(read_text(text, {"k": 3000}, arch=NPU2))
    assert int(slow.total_cycles[0]) > int(fastsim.simulate(d).total_cycles[0]) + 4 * 2600


def test_export__cyclic_chains_and_output_on_chip_survive():
    d = hand_design()
    d.output_on_chip = True
    back = read_text(write_design(d), arch=NPU2).design
    assert back.output_on_chip
    ring = back.static_chains[s2mm(back.compute(0, 0), 0)]
    assert ring.next.next is ring


def test_export__shim_static_chain_is_refused():
    d = Design(NPU2, "bad")
    src = d.ddr_buffer(64, "src")
    d.start_chain(mm2s(d.shim(0), 0), d.bd(mm2s(d.shim(0), 0), src, 64))
    with pytest.raises(ExportError, match="static BD chain on a shim channel"):
        write_design(d)


def test_export__cli_writes_a_design_that_run_design_reads(tmp_path):
    from fastsim.cli import main

    out, costs = tmp_path / "g.mlir", tmp_path / "costs.toml"
    r = CliRunner().invoke(main, ["export", "gemm", "--m", "64", "--k", "128", "--n", "64", "--arch", "npu1",
                                  "--out", str(out), "--kernels-out", str(costs)])
    assert r.exit_code == 0, r.output
    written = int(r.output.split("fastsim: ")[1].split(" cycles")[0].replace(",", ""))
    r = CliRunner().invoke(main, ["run", "design", str(out), "--kernels", str(costs), "--json"])
    assert r.exit_code == 0, r.output
    import json

    assert json.loads(r.output)["total_cycles"] == written
