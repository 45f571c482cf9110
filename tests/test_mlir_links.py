"""Object-FIFO links whose FIFOs differ in object size, lowered as mlir-aie's
``--aie-objectFifo-stateful-transform`` lowers them: the mem tile holds the buffers of one FIFO
(the larger of a one-to-one link, a distribute's input, a join's output) and its DMAs move whole
buffers or the slices between the link's offsets, so no word of an object is lost. Each design is
checked against a hand-lowered physical twin: cycles, bytes by level and kernel calls equal."""
from pathlib import Path

import pytest

import fastsim
from fastsim import NPU1, Acquire, Compute, Design, Loop, Release, mm2s, object_fifo, s2mm
from fastsim.design import Tile, fifo_endpoint
from fastsim.mlir import read_design, read_text, simulate_design

HERE = Path(__file__).parent / "mlir"
WORD = 4  # bytes of an i32


def outcome(ds, twin: Design | None = None) -> tuple:
    """What must match between a design and its twin: cycles, bytes by level, kernel calls (the
    run's own count for an MLIR design; a twin's programs, multiplied out, for a twin that ran to
    its end)."""
    levels = dict(zip(map(str, ds.level.values), ds.level_bytes.values[0].tolist()))
    if twin is None:
        calls = dict(zip(map(str, ds.kernel.values), ds.kernel_calls.values[0].tolist()))
    else:
        calls = {}
        for prog in twin.cores.values():
            for name, n in _calls(prog).items():
                calls[name] = calls.get(name, 0) + n
    return int(ds.total_cycles[0]), levels, calls


def _calls(ops, times: int = 1) -> dict:
    out: dict = {}
    for op in ops:
        inner = {op.name: times} if isinstance(op, Compute) else _calls(op.body, times * op.count) \
            if isinstance(op, Loop) else {}
        for name, n in inner.items():
            out[name] = out.get(name, 0) + n
    return out


def test_link__add_one_16_to_8_words_equals_its_lowered_physical_form():
    """mlir-aie's add-one design: 16-word objects in, 8-word objects to the core, back the same way."""
    fifo = simulate_design(read_design(HERE / "add_one_link.mlir"))
    physical = simulate_design(read_design(HERE / "add_one_link_physical.mlir"))
    assert outcome(fifo) == outcome(physical)
    cycles, levels, calls = outcome(fifo)
    assert calls == {"inline": 8}  # 64 words in 8-word objects: every object reaches the core
    assert levels["ddr_read"] == levels["ddr_write"] == 64 * WORD
    assert levels["mem_compute"] == 2 * 64 * WORD
    assert fifo.attrs["stranded_cores"] == 0


ONE_TO_ONE = """
module {{
  aie.device(npu1_1col) {{
    %shim = aie.tile(0, 0)
    %mem = aie.tile(0, 1)
    %core = aie.tile(0, 2)
    aie.objectfifo @in(%shim, {{%mem}}, {d_in} : i32) : !aie.objectfifo<memref<{n_in}xi32>>
    aie.objectfifo @to_core(%mem, {{%core}}, {d_out} : i32) : !aie.objectfifo<memref<{n_out}xi32>>
    aie.objectfifo.link [@in] -> [@to_core] ([] [])
    aie.objectfifo @back(%core, {{%shim}}, 2 : i32) : !aie.objectfifo<memref<{n_out}xi32>>
    func.func private @work(memref<{n_out}xi32>, memref<{n_out}xi32>)
    aie.core(%core) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant {calls} : index
      scf.for %i = %c0 to %n step %c1 {{
        %a = aie.objectfifo.acquire @to_core(Consume, 1) : !aie.objectfifosubview<memref<{n_out}xi32>>
        %b = aie.objectfifo.acquire @back(Produce, 1) : !aie.objectfifosubview<memref<{n_out}xi32>>
        func.call @work(%a, %b) : (memref<{n_out}xi32>, memref<{n_out}xi32>) -> ()
        aie.objectfifo.release @to_core(Consume, 1)
        aie.objectfifo.release @back(Produce, 1)
      }}
      aie.end
    }}
    aie.runtime_sequence(%src: memref<{total}xi32>, %dst: memref<{total}xi32>) {{
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 1, {total}][0, 0, 0, 1]) {{id = 1 : i64, metadata = @back}} : memref<{total}xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][1, 1, 1, {total}][0, 0, 0, 1]) {{id = 0 : i64, metadata = @in}} : memref<{total}xi32>
      aiex.npu.dma_wait {{symbol = @back}}
    }}
  }}
}}
"""


def ring(d: Design, ch, bufs, slices) -> None:
    """A mem tile's cyclic BD ring over ``bufs``: per buffer one BD per (lock pair, offset words,
    words) slice; an S2MM acquires the slice's producer lock, an MM2S its consumer lock."""
    bds = []
    for buf in bufs:
        for (prod, cons), offset, words in slices:
            acq, rel = ((prod, 1), (cons, 1)) if ch.direction == "s2mm" else ((cons, 1), (prod, 1))
            bds.append(d.bd(ch, buf, words * WORD, offset_bytes=offset * WORD, acquire=acq, release=rel))
    d.start_chain(ch, d.chain(*bds, cyclic=True))


def one_to_one_twin(n_in, n_out, d_in, d_out, total, kernel_cycles) -> Design:
    """The one-to-one link lowered by hand: mem-tile buffers of the larger FIFO in its own depth
    there, one lock pair, both DMA sides moving whole buffers."""
    d = Design(NPU1, "twin")
    sh, mem, ct = Tile(0, 0), Tile(0, 1), Tile(0, 2)
    src, dst = d.ddr_buffer(total * WORD, "src"), d.ddr_buffer(total * WORD, "dst")
    words, depth = (n_in, d_in) if n_in >= n_out else (n_out, d_out)
    bufs = [d.buffer(mem, words * WORD) for _ in range(depth)]
    pair = (d.lock(mem, depth), d.lock(mem, 0))
    ring(d, s2mm(mem, 0), bufs, [(pair, 0, words)])
    ring(d, mm2s(mem, 0), bufs, [(pair, 0, words)])
    d.route(mm2s(sh, 0), s2mm(mem, 0))
    d.route(mm2s(mem, 0), s2mm(ct, 0))
    end = fifo_endpoint(d, s2mm(ct, 0), d_out, n_out * WORD, "to_core")
    back = object_fifo(d, mm2s(ct, 0), [s2mm(sh, 0)], 2, n_out * WORD, "back")
    d.core_program(ct, Loop(total // n_out, (Acquire(end["cons_lock"]), Acquire(back["producer_prod_lock"]),
                                             Compute(kernel_cycles, "work"), Release(end["prod_lock"]),
                                             Release(back["producer_cons_lock"]))))
    d.push(s2mm(sh, 0), d.bd(s2mm(sh, 0), dst, total * WORD))
    d.push(mm2s(sh, 0), d.bd(mm2s(sh, 0), src, total * WORD))
    d.wait(s2mm(sh, 0))
    return d


@pytest.mark.parametrize("n_in, n_out, d_in, d_out", [(2048, 1024, 2, 2), (1024, 2048, 2, 2), (16, 8, 2, 3),
                                                      (8, 16, 3, 2), (48, 16, 1, 2)])
@pytest.mark.parametrize("kernel_cycles", [10, 3000])
def test_link__one_to_one_of_different_sizes_equals_its_lowered_twin(n_in, n_out, d_in, d_out, kernel_cycles):
    total = 4 * max(n_in, n_out)
    text = ONE_TO_ONE.format(n_in=n_in, n_out=n_out, d_in=d_in, d_out=d_out, total=total, calls=total // n_out)
    ds = simulate_design(read_text(text, {"work": kernel_cycles}))
    twin = one_to_one_twin(n_in, n_out, d_in, d_out, total, kernel_cycles)
    assert outcome(ds) == outcome(fastsim.simulate(twin), twin)
    assert outcome(ds)[2] == {"work": total // n_out}
    assert ds.attrs["stranded_cores"] == 0


SPLIT_JOIN = """
module {{
  aie.device(npu1_1col) {{
    %shim = aie.tile(0, 0)
    %mem = aie.tile(0, 1)
    %c02 = aie.tile(0, 2)
    %c03 = aie.tile(0, 3)
    aie.objectfifo @whole_in(%shim, {{%mem}}, 2 : i32) : !aie.objectfifo<memref<2048xi32>>
    aie.objectfifo @part_in0(%mem, {{%c02}}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo @part_in1(%mem, {{%c03}}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo.link [@whole_in] -> [@part_in0, @part_in1] ([] [0, {split}])
    aie.objectfifo @part_out0(%c02, {{%mem}}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo @part_out1(%c03, {{%mem}}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo @whole_out(%mem, {{%shim}}, 2 : i32) : !aie.objectfifo<memref<2048xi32>>
    aie.objectfifo.link [@part_out0, @part_out1] -> [@whole_out] ([0, {split}] [])
    func.func private @work(memref<512xi32>, memref<512xi32>)
{cores}
    aie.runtime_sequence(%src: memref<8192xi32>, %dst: memref<8192xi32>) {{
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 1, 8192][0, 0, 0, 1]) {{id = 1 : i64, metadata = @whole_out}} : memref<8192xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][1, 1, 1, 8192][0, 0, 0, 1]) {{id = 0 : i64, metadata = @whole_in}} : memref<8192xi32>
      aiex.npu.dma_wait {{symbol = @whole_out}}
    }}
  }}
}}
"""
CORE = """    aie.core(%{tile}) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant {calls} : index
      scf.for %i = %c0 to %n step %c1 {{
        %a = aie.objectfifo.acquire @part_in{k}(Consume, 1) : !aie.objectfifosubview<memref<512xi32>>
        %b = aie.objectfifo.acquire @part_out{k}(Produce, 1) : !aie.objectfifosubview<memref<512xi32>>
        func.call @work(%a, %b) : (memref<512xi32>, memref<512xi32>) -> ()
        aie.objectfifo.release @part_in{k}(Consume, 1)
        aie.objectfifo.release @part_out{k}(Produce, 1)
      }}
      aie.end
    }}
"""


def split_join_twin(split: int, kernel_cycles: int) -> Design:
    """The distribute and the join lowered by hand: the mem tile holds 2048-word buffers of
    whole_in (and of whole_out), one lock pair per slice; slice k runs from its offset to the next
    (the last to the buffer's end), so a core's 512-word FIFO receives ``len / 512`` objects of it."""
    d = Design(NPU1, "twin")
    sh, mem, cores = Tile(0, 0), Tile(0, 1), [Tile(0, 2), Tile(0, 3)]
    src, dst = d.ddr_buffer(8192 * WORD, "src"), d.ddr_buffer(8192 * WORD, "dst")
    slices = [(0, split), (split, 2048 - split)]
    for side, (s_ch, m_chs) in enumerate([(s2mm(mem, 0), [mm2s(mem, 0), mm2s(mem, 1)]),
                                          (mm2s(mem, 2), [s2mm(mem, 1), s2mm(mem, 2)])]):
        bufs = [d.buffer(mem, 2048 * WORD) for _ in range(2)]
        pairs = [(d.lock(mem, 2), d.lock(mem, 0)) for _ in slices]
        ring(d, s_ch, bufs, [(p, off, n) for p, (off, n) in zip(pairs, slices)])
        for ch, p, (off, n) in zip(m_chs, pairs, slices):
            ring(d, ch, bufs, [(p, off, n)])
    d.route(mm2s(sh, 0), s2mm(mem, 0))
    d.route(mm2s(mem, 2), s2mm(sh, 0))
    for k, ct in enumerate(cores):
        end = fifo_endpoint(d, s2mm(ct, 0), 2, 512 * WORD, f"part_in{k}")
        prod, cons = d.lock(ct, 2), d.lock(ct, 0)
        ring(d, mm2s(ct, 0), [d.buffer(ct, 512 * WORD) for _ in range(2)], [((prod, cons), 0, 512)])
        d.route(mm2s(mem, k), s2mm(ct, 0))
        d.route(mm2s(ct, 0), s2mm(mem, 1 + k))
        d.core_program(ct, Loop(4 * slices[k][1] // 512, (
            Acquire(end["cons_lock"]), Acquire(prod), Compute(kernel_cycles, "work"), Release(end["prod_lock"]),
            Release(cons))))
    d.push(s2mm(sh, 0), d.bd(s2mm(sh, 0), dst, 8192 * WORD))
    d.push(mm2s(sh, 0), d.bd(mm2s(sh, 0), src, 8192 * WORD))
    d.wait(s2mm(sh, 0))
    return d


@pytest.mark.parametrize("split", [1024, 512])
@pytest.mark.parametrize("kernel_cycles", [10, 3000])
def test_link__distribute_and_join_with_offsets_equal_their_lowered_twin(split, kernel_cycles):
    """Each 2048-word object is split at ``split`` between two cores whose FIFOs hold 512 words
    (a core takes several of its objects per slice), and joined back at the same offset."""
    calls = [4 * split // 512, 4 * (2048 - split) // 512]
    cores = "".join(CORE.format(tile=t, k=k, calls=n) for k, (t, n) in enumerate(zip(("c02", "c03"), calls)))
    ds = simulate_design(read_text(SPLIT_JOIN.format(split=split, cores=cores), {"work": kernel_cycles}))
    twin = split_join_twin(split, kernel_cycles)
    assert outcome(ds) == outcome(fastsim.simulate(twin), twin)
    cycles, levels, got = outcome(ds)
    assert got == {"work": sum(calls)} and ds.attrs["stranded_cores"] == 0
    assert levels["ddr_read"] == levels["ddr_write"] == 8192 * WORD


def test_link__offsets_that_do_not_rise_within_the_object_are_refused():
    cores = "".join(CORE.format(tile=t, k=k, calls=8) for k, t in enumerate(("c02", "c03")))
    with pytest.raises(Exception, match=r"link offsets \[0, 4096\] must rise within the 2048 elements"):
        read_text(SPLIT_JOIN.format(split=4096, cores=cores), {"work": 10})


PADDED = """
module {
  aie.device(npu1_1col) {
    %shim = aie.tile(0, 0)
    %mem = aie.tile(0, 1)
    aie.objectfifo @in(%shim, {%mem}, 2 : i32) : !aie.objectfifo<memref<13xi32>>
    aie.objectfifo @out(%mem dimensionsToStream [<size = 13, stride = 1>], {%shim}, 2 : i32) {padDimensions = #aie<bd_pad_layout_array[<const_pad_before = 2, const_pad_after = 1>]>} : !aie.objectfifo<memref<16xi32>>
    aie.objectfifo.link [@in] -> [@out] ([] [])
    aie.runtime_sequence(%src: memref<52xi32>, %dst: memref<64xi32>) {
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 1 : i64, metadata = @out} : memref<64xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][1, 1, 1, 52][0, 0, 0, 1]) {id = 0 : i64, metadata = @in} : memref<52xi32>
      aiex.npu.dma_wait {symbol = @out}
    }
  }
}
"""


def test_link__an_output_padded_past_the_input_keeps_the_input_as_target_and_sends_the_padding():
    """mlir-aie keeps the unpadded input's buffers when only padding makes the output larger; the
    output side sends its padded 16 words per 13-word object (objectfifo_pad_value_i32)."""
    info = read_text(PADDED)
    mem = info.design.mem(0)
    sends = [b for b in info.design.bds if b.channel.tile == mem and b.channel.direction == "mm2s"]
    receives = [b for b in info.design.bds if b.channel.tile == mem and b.channel.direction == "s2mm"]
    assert {b.length_bytes for b in sends} == {16 * WORD} and {b.length_bytes for b in receives} == {13 * WORD}
    assert all(b.acquire[0].name.startswith("in_link") for b in sends + receives)
    _, levels, _ = outcome(simulate_design(info))
    assert (levels["ddr_read"], levels["ddr_write"]) == (4 * 13 * WORD, 4 * 16 * WORD)
