"""Lower one mapped convolution to a Design: exactly the buffers, BDs, locks, routes, core programs
and host steps that ``conv_plan`` counted.

Per used column ``c`` (mlir-aie conv2d / bottleneck / resnet patterns):

- **input rows**: shim(c) MM2S1 streams the rows of the band streams column ``c`` hosts, interleaved
  row by row, into mem(c) S2MM1, whose one-row BDs deal them into one ring of rows per stream
  (``free``/``full`` locks count rows). One mem-tile MM2S per stream sends its windows: each window
  (the input rows of one block of ``rpc`` output rows, zero rows and columns inserted for padding)
  acquires the rows it is first to read and releases those no later window reads, so the R-row halo
  is re-sent, never re-read from DDR. The host pushes each image's windows as tasks (first, middle,
  last windows differ);
- **weights**: shim(c) MM2S0 -> mem(c) S2MM0, dealt into per-part buffers, one MM2S per part
  broadcasts it to the cores of that output-channel part (core S2MM1);
- **outputs**: every core sends its tiles to its column's mem tile, which joins and drains them to
  shim(c) S2MM0 (ObjectFifo join).
"""
from __future__ import annotations

from ..arch import Arch
from ..design import Acquire, Compute, Design, Loop, Release, fifo_endpoint, mm2s, s2mm
from ..errors import ConfigError
from .conv import Conv2d, ConvMapping
from .conv_plan import plan, problems
from .paths import join_outputs

W_CH, X_CH = 0, 1  # shim MM2S / mem-tile S2MM channel of weights and of input rows


def checked_plan(op: Conv2d, mp: ConvMapping, arch: Arch) -> dict:
    """``plan`` of a legal mapping; a ConfigError lists every limit an illegal one breaks."""
    pl = plan(op, mp, arch)
    broken = problems(pl, arch)
    if broken:
        raise ConfigError([str(b) for b in broken], f"conv mapping {mp.label()}")
    return pl


def conv_design(op: Conv2d, mp: ConvMapping, arch: Arch, pl: dict | None = None) -> Design:
    """The design of ``op`` under mapping ``mp`` (see the module docstring)."""
    pl = pl or checked_plan(op, mp, arch)
    lay = pl["layout"]
    d = Design(arch, f"{op.name} conv {op.c}x{op.h}x{op.w}->{op.k} r{op.r}s{op.s} {mp.label()}")
    band_in, w_in, window_bds = {}, {}, {}
    drain_ch = [_bands(d, pl, c, _weights(d, pl, c, w_in), band_in, window_bds) for c in range(lay.cols)]
    for c in range(lay.cols):
        y_locks, _ = join_outputs(d, c, lay.rows, pl["out_tile"], drain_ch[c], "Y")
        for r in range(lay.rows):
            i = c * lay.rows + r
            h, q = lay.core_parts[i]
            s = lay.band_streams.index((h, q if (h, q) in lay.band_streams else -1))
            d.core_program(d.compute(c, r), *_program(op, mp, pl, band_in[(s, i)], w_in[(q, i)], y_locks[r]))
    _host(d, op, mp, pl, window_bds)
    return d


def _consumers(lay, stream: tuple[int, int] | None = None, part: int | None = None) -> list[int]:
    """Cores (column-major indices) that read a band stream or an output-channel part's weights."""
    if stream is not None:
        h, q = stream
        return [i for i, (ch, cq) in enumerate(lay.core_parts) if ch == h and q in (-1, cq)]
    return [i for i, (_, cq) in enumerate(lay.core_parts) if cq == part]


def _weights(d: Design, pl: dict, c: int, w_in: dict) -> int:
    """Column ``c``'s weight parts: one S2MM deals the shim's stream into per-part buffers, one
    MM2S per part broadcasts it to its cores. Returns the next free mem-tile MM2S."""
    lay, memt = pl["layout"], d.mem(c)
    parts = [q for q, h in enumerate(lay.weight_host) if h == c]
    if not parts:
        return 0
    depth, unit = pl["w_l2_depth"], pl["w_unit"]
    locks = {q: (d.lock(memt, depth, f"W{q}_l2_prod"), d.lock(memt, 0, f"W{q}_l2_cons")) for q in parts}
    bufs = {q: [d.buffer(memt, unit, f"W{q}_l2_{i}") for i in range(depth)] for q in parts}
    fill = [d.bd(s2mm(memt, W_CH), bufs[q][i], unit, acquire=(locks[q][0], 1), release=(locks[q][1], 1),
                 name=f"W{q}_in{i}") for i in range(depth) for q in parts]
    d.start_chain(s2mm(memt, W_CH), d.chain(*fill, cyclic=True))
    d.route(mm2s(d.shim(c), W_CH), s2mm(memt, W_CH))
    for out_index, q in enumerate(parts):
        out = mm2s(memt, out_index)
        sends = [d.bd(out, bufs[q][i], unit, acquire=(locks[q][1], 1), release=(locks[q][0], 1),
                      name=f"W{q}_send{i}") for i in range(depth)]
        d.start_chain(out, d.chain(*sends, cyclic=True))
        cores = _consumers(lay, part=q)
        dsts = [s2mm(_tile(d, lay, i), 1) for i in cores]
        d.route(out, *dsts)
        for i, dst in zip(cores, dsts):
            w_in[(q, i)] = fifo_endpoint(d, dst, pl["w_depth"], unit, f"W{q}_{i}")
    return len(parts)


def _tile(d: Design, lay, i: int):
    return d.compute(i // lay.rows, i % lay.rows)


def _bands(d: Design, pl: dict, c: int, out_index: int, band_in: dict, window_bds: dict) -> int:
    """Column ``c``'s band streams: a ring of input rows each, filled row by row from one S2MM,
    and one MM2S each that sends the windows (BDs per distinct window kind, pushed by the host)."""
    lay, memt, rows = pl["layout"], d.mem(c), pl["rows"]
    hosted = [s for s, h in enumerate(lay.band_host) if h == c]
    if not hosted:
        return out_index
    fill = []
    for s in hosted:
        free = d.lock(memt, pl["columns"][c]["slots"], f"X{s}_free")
        full = d.lock(memt, 0, f"X{s}_full")
        ring = d.buffer(memt, pl["columns"][c]["ring_bytes"], f"X{s}_ring")
        fill.append(d.bd(s2mm(memt, X_CH), ring, pl["row_bytes"], acquire=(free, 1), release=(full, 1),
                         name=f"X{s}_row"))
        out = mm2s(memt, out_index)
        out_index += 1
        part = rows.windows[lay.band_streams[s][0]]
        window_bds[s] = {key: _window(d, pl, out, ring, free, full, key, f"X{s}") for key in sorted(set(part))}
        cores = _consumers(lay, stream=lay.band_streams[s])
        dsts = [s2mm(_tile(d, lay, i), 0) for i in cores]
        d.route(out, *dsts)
        for i, dst in zip(cores, dsts):
            band_in[(s, i)] = fifo_endpoint(d, dst, 2, pl["win_bytes"], f"X{s}_{i}")
    d.start_chain(s2mm(memt, X_CH), d.chain(*fill, cyclic=True))
    d.route(mm2s(d.shim(c), X_CH), s2mm(memt, X_CH))
    return out_index


def _window(d: Design, pl: dict, out, ring, free, full, key: tuple[int, int], name: str):
    """One kind of window: ``ct`` slice sends (input-channel blocks) of the same rows; the first
    acquires the rows it is first to read, the last releases the rows no later window reads."""
    acq, rel = key
    ct = pl["ct"]
    bds = [d.bd(out, ring, pl["win_bytes"], acquire=(full, acq) if j == 0 and acq else None,
                release=(free, rel) if j == ct - 1 and rel else None, name=f"{name}_win{acq}.{rel}.{j}")
           for j in range(ct)]
    return d.chain(*bds)


def _program(op: Conv2d, mp: ConvMapping, pl: dict, x: dict, w: dict, y: tuple) -> list:
    """One core's loop nest, in the order the host pushes windows and weights."""
    y_prod, y_cons = y
    call = Compute(pl["call_cycles"], "conv")
    per_pass = op.n * pl["bt"]
    take_x, give_x = Acquire(x["cons_lock"]), Release(x["prod_lock"])
    take_w, give_w = Acquire(w["cons_lock"]), Release(w["prod_lock"])
    out = (Acquire(y_prod), call, Release(y_cons))
    if mp.weights == "resident":
        return [take_w, Loop(per_pass, (take_x, Loop(pl["kt"], out), give_x)), give_w]
    if mp.weights == "oc":
        return [Loop(pl["kt"], (take_w, Loop(per_pass, (take_x, *out, give_x)), give_w))]
    slices = Loop(pl["ct"], (take_x, take_w, call, give_w, give_x))
    return [Loop(pl["kt"], (Loop(per_pass, (Acquire(y_prod), slices, Release(y_cons))),))]


def _host(d: Design, op: Conv2d, mp: ConvMapping, pl: dict, window_bds: dict) -> None:
    """The runtime sequence: per pass (one, or one per output-channel block) and image, every
    column's input rows, its streams' windows, weights where they change, and output drains; then a
    wait on every drain."""
    lay, rows = pl["layout"], pl["rows"]
    act, wts, outs = {}, {}, {}
    for c, col in enumerate(pl["columns"]):
        if col["band"]:
            n = col["band"] * rows.ring_rows * pl["row_bytes"]
            act[c] = d.bd(mm2s(d.shim(c), X_CH), d.ddr_buffer(n, f"X{c}"), n, name=f"X{c}_ddr")
        if col["weights"]:
            n = col["weights"] * pl["w_unit"]
            wts[c] = d.bd(mm2s(d.shim(c), W_CH), d.ddr_buffer(n, f"W{c}"), n, name=f"W{c}_ddr")
        n = lay.rows * pl["out_tile"]
        outs[c] = d.bd(s2mm(d.shim(c), 0), d.ddr_buffer(n, f"Y{c}"), n, name=f"Y{c}_ddr")
    tiles = pl["bt"] * pl["calls_per_out"]
    image = [[(act[c], 1)] for c in act]
    for s, kinds in window_bds.items():
        image.append([(kinds[key], count) for key, count in _runs(rows.windows[lay.band_streams[s][0]])])
    image += [[(outs[c], tiles)] for c in outs]
    weights_once = [[(wts[c], 1)] for c in wts]
    if mp.weights == "resident":
        _push(d, weights_once)
        _push(d, image, op.n)
    elif mp.weights == "oc":
        for _ in range(pl["kt"]):
            _push(d, weights_once)
            _push(d, image, op.n)
    else:
        _push(d, image + [[(wts[c], pl["bt"] * pl["ct"])] for c in wts], op.n * pl["kt"])
    for c in outs:
        d.wait(s2mm(d.shim(c), 0))


def _runs(windows) -> list[tuple[tuple[int, int], int]]:
    """Consecutive equal windows as (kind, how many in a row)."""
    out: list = []
    for key in windows:
        if out and out[-1][0] == key:
            out[-1] = (key, out[-1][1] + 1)
        else:
            out.append((key, 1))
    return out


def _push(d: Design, channels: list[list], times: int = 1) -> None:
    """Push one round ``times`` over: every channel's tasks in its own order, chunks of at most
    ``max_task_repeat``, all channels interleaved by how far into their round each chunk starts
    (a channel's tasks never pass each other; no queue fills while what drains it is unpushed)."""
    cap = d.arch.max_task_repeat
    chunks = []
    for ci, tasks in enumerate(channels):
        total = sum(n for _, n in tasks)
        done = 0
        for bd, n in tasks:
            while n > 0:
                step = min(n, cap)
                chunks.append((done / total, ci, len(chunks), bd, step))
                done, n = done + step, n - step
    ops = [d.push_op(bd.channel, bd, step) for _, _, _, bd, step in sorted(chunks, key=lambda x: x[:3])]
    d.host.extend(ops * times)
