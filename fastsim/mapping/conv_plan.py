"""Closed-form arithmetic of one conv mapping: which core computes what, the input windows each
mem tile re-sends, bytes per buffer and level, capacity and resource checks, and lower bounds on
cycles. The design builder (``conv_design``) lays out exactly what is counted here, so the checks
and the simulated design cannot disagree."""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from ..arch import Arch
from ..kernel_model import conv as KC
from ..kernel_model import matmul as KM
from .branch_bound import Broken
from .conv import Conv2d, ConvMapping, cdiv, check_mapping, words
from .dispatch import ControlCounts
from .paths import deal, stream_rates

RESOURCES = ("compute", "ddr", "dma")
ACC_BYTES = 4  # partial sums (ci weights) are int32 / fp32 accumulators
WINDOW_LAG = 4  # windows one stream may run ahead of another sharing its mem tile's fill (ring sizing)


@dataclass(frozen=True)
class Rows:
    """The input rows of one row part, as its mem tile sees them: per window (output row block)
    how many ring rows it acquires and releases (a row is released after the last window that
    reads it), the rows the shim sends per image (``ring_rows``, the same for every part: short
    parts get dummy rows at their end) and the ring slots that keep every part moving."""

    windows: tuple[tuple[tuple[int, int], ...], ...]  # [part][window] = (acquire, release)
    ring_rows: int
    slots: int  # ring rows where a mem tile fills several rings in step
    slots_alone: int  # ring rows where it fills one (one window of prefetch)
    real_rows: int  # rows of the image all parts read, counted once per part (no dummies)


def row_windows(op: Conv2d, ph: int, ohp: int, bt: int, rpc: int) -> Rows:
    """The windows of every row part (``ph`` parts of ``ohp`` output rows, ``bt`` windows of ``rpc``
    rows each). Padding rows (outside the image) are zeros the mem tile's MM2S inserts: they are
    sent, never received."""
    parts, counts = [], []
    for p in range(ph):
        needed = []
        for j in range(bt):
            o0 = p * ohp + j * rpc
            rows = {o * op.stride - op.padding + i * op.dilation for o in range(o0, o0 + rpc) for i in range(op.r)}
            needed.append(sorted(x for x in rows if 0 <= x < op.h))
        ring = sorted(set().union(*needed))
        index = {x: i for i, x in enumerate(ring)}
        last_use = {}
        for j, rows in enumerate(needed):
            for x in rows:
                last_use[x] = j
        got, windows = 0, []
        for j, rows in enumerate(needed):
            top = max((index[x] + 1 for x in rows), default=0)
            acq = max(0, top - got)
            got += acq
            windows.append([acq, sum(1 for x in ring if last_use[x] == j)])
        parts.append(windows)
        counts.append(len(ring))
    most = max(counts)
    for windows, n in zip(parts, counts):  # dummy rows keep every part's fill in step
        windows[-1][0] += most - n
        windows[-1][1] += most - n
    frozen = tuple(tuple((a, r) for a, r in w) for w in parts)
    return Rows(frozen, most, _slots(frozen, WINDOW_LAG), max(_slots((w,), 1) for w in frozen), sum(counts))


def _slots(parts, lag: int) -> int:
    """Ring rows that let every part take its next ``lag`` windows while any other part still
    holds what it has not released (two images in a row: the boundary counts too)."""
    acq = np.array([[a for a, _ in w] * 2 for w in parts])
    rel = np.array([[r for _, r in w] * 2 for w in parts])
    a_cum, r_cum = np.cumsum(acq, axis=1), np.cumsum(rel, axis=1)
    r_before = np.concatenate([np.zeros((len(parts), 1), int), r_cum[:, :-1]], axis=1)
    ahead = a_cum[:, np.minimum(np.arange(acq.shape[1]) + lag, acq.shape[1] - 1)]
    return int(max(1, (ahead.max(axis=0) - r_before.min(axis=0)).max()))


@dataclass(frozen=True)
class Layout:
    """Which core computes which (row part, output-channel part), and the streams that feed them."""

    cols: int
    rows: int
    ph: int  # output-row parts
    pk: int  # output-channel parts
    core_parts: tuple[tuple[int, int], ...]  # per core (column-major: ci * rows + ri): (row part, oc part)
    band_streams: tuple[tuple[int, int], ...]  # (row part, oc part or -1 when every oc part shares it)
    band_host: tuple[int, ...]  # column index (from 0) hosting each band stream
    weight_host: tuple[int, ...]  # column index hosting each oc part's weights


def layout(op: Conv2d, mp: ConvMapping, arch: Arch) -> Layout:
    cols, rows = mp.cols or arch.columns, mp.rows or arch.compute_rows
    cores = cols * rows
    ph, pk = {"rows": (cores, 1), "oc": (1, cores), "rows_by_col": (cols, rows), "oc_by_col": (rows, cols)}[mp.split]

    def parts(ci: int, ri: int) -> tuple[int, int]:
        i = ci * rows + ri
        return {"rows": (i, 0), "oc": (0, i), "rows_by_col": (ci, ri), "oc_by_col": (ri, ci)}[mp.split]

    core_parts = tuple(parts(ci, ri) for ci in range(cols) for ri in range(rows))
    shared = op.groups == 1  # a dense conv's every oc part reads every input channel
    streams = tuple((h, -1) for h in range(ph)) if shared else tuple((h, q) for h in range(ph) for q in range(pk))

    def host(consumers: list[int]) -> int:
        owners = {i // rows for i in consumers}
        return owners.pop() if len(owners) == 1 else -1

    rates = stream_rates(arch, 0, cols)
    band_cols = [host([i for i, (h, q) in enumerate(core_parts) if h == s[0] and s[1] in (-1, q)])
                 for s in streams]
    weight_cols = [host([i for i, (_, q) in enumerate(core_parts) if q == k]) for k in range(pk)]
    return Layout(cols, rows, ph, pk, core_parts, streams, _deal_shared(band_cols, rates),
                  _deal_shared(weight_cols, rates))


def _deal_shared(owner: list[int], rates) -> tuple[int, ...]:
    """Streams that one column alone needs stay there; the rest are dealt round-robin."""
    shared = [i for i, c in enumerate(owner) if c < 0]
    dealt = deal(len(shared), rates, "equal")
    out = list(owner)
    for i, c in zip(shared, dealt):
        out[i] = c
    return tuple(out)


def datapath(op: Conv2d, arch: Arch) -> tuple[str, float]:
    """The MAC datapath (fastest for the dtype, as the matmul mapper's default) and its conversion
    cycles per input element."""
    options = dict(arch.datapath_options(op.dtype))
    key = max(options, key=lambda x: arch.macs_per_cycle[x])
    return key, options[key]


def call_cycles(op: Conv2d, arch: Arch, rpc: int, kb: int, cin: int) -> int:
    """Cycles of one kernel call: ``rpc`` x ow output pixels by ``kb`` output channels, each a sum
    over ``cin`` input channels x r x s taps. On AIE-ML and AIE-ML v2 cores the conv kernel model
    (``fastsim.kernel_model.conv``: the matmul micro-kernel over k = cin r s, the window's
    realignment, depthwise as vector MACs; the datapath's conversion inside). Elsewhere: depthwise
    r*s multiply-accumulates per output element at the element-wise vector rate (assumption), the
    rest the matmul microkernel's cost for the same MACs (``plan.matmul_cycles``) plus the
    datapath's conversion of the call's inputs (XDNA2 bf16 -> bfp16)."""
    from .plan import matmul_cycles
    from .space import Matmul

    pixels = rpc * op.ow
    key, conv_per_elem = datapath(op, arch)
    if KM.micro_kernel(arch, key) is not None:
        eff = op.kernel_efficiency or arch.efficiency(key)
        tuning = KM.Tuning(eff, float(arch.call_cycles(key)), float(arch.block_cycles(key)))
        cycles = KC.conv_call_cycles(arch, key, op.kind, pixels, cin, kb, op.r, op.s, tuning=tuning,
                                     conv_cycles_per_elem=conv_per_elem, out_bytes=op.out_bytes)
        return max(1, math.ceil(float(cycles)))
    if op.kind == "depthwise":
        return max(1, math.ceil(pixels * kb * op.r * op.s * arch.vector_cost("elementwise")))
    mm = Matmul(1, 1, 1, op.dtype, kernel_efficiency=op.kernel_efficiency)
    k = cin * op.r * op.s
    cycles = float(np.asarray(matmul_cycles(mm, key, arch, pixels, k, kb)).reshape(-1)[0])
    window = (rpc - 1) * op.stride + (op.r - 1) * op.dilation + 1
    conversion = math.ceil(conv_per_elem * (window * op.ow * op.stride * cin + kb * k))
    return int(cycles) + conversion


def plan(op: Conv2d, mp: ConvMapping, arch: Arch, memo: dict | None = None, checked: bool = False) -> dict:
    """Everything the design and the search need for ``mp``; ``problems`` says what is illegal.
    ``memo`` (a search's own dict) keeps the parts many candidates share: layouts, row windows,
    call cycles. ``checked``: ``mp``'s fields are known to be in range (the search's own
    candidates, built in range from validated pins), so ``check_mapping`` is not run again."""
    if not checked:
        check_mapping(mp, arch)
    memo = {} if memo is None else memo

    def kept(key, make):
        if key not in memo:
            memo[key] = make()
        return memo[key]

    lay = kept(("layout", mp.split, mp.cols, mp.rows), lambda: layout(op, mp, arch))
    ohp, kp = cdiv(op.oh, lay.ph), cdiv(op.k, lay.pk)
    bt, kt = cdiv(ohp, mp.rpc), cdiv(kp, min(mp.kb, kp))
    kb = min(mp.kb, kp)
    cin_part = op.c if op.groups == 1 else min(op.c, cdiv(kt * kb, op.kg) * op.cg)
    cb = min(mp.cb, op.cg) if mp.weights == "ci" else op.cg
    ct = cdiv(op.cg, cb)
    cslice = cb if mp.weights == "ci" else cin_part
    rows = kept(("rows", lay.ph, ohp, bt, mp.rpc), lambda: row_windows(op, lay.ph, ohp, bt, mp.rpc))
    width_in = (op.ow - 1) * op.stride + (op.s - 1) * op.dilation + 1
    win_rows = kept(("win_rows", mp.rpc), lambda: len({o * op.stride + i * op.dilation for o in range(mp.rpc)
                                                        for i in range(op.r)}))
    taps = op.r * op.s
    w_unit = {"resident": kt * kb * op.cg * taps, "oc": kb * op.cg * taps, "ci": kb * cb * taps}[mp.weights]
    out = dict(layout=lay, rows=rows, ohp=ohp, kp=kp, bt=bt, kt=kt, kb=kb, ct=ct, cb=cb, cin_part=cin_part,
               passes=1 if mp.weights == "resident" else kt, width_in=width_in, win_rows=win_rows,
               row_bytes=words(op.w * cin_part * op.in_bytes),
               win_bytes=words(win_rows * width_in * cslice * op.in_bytes),
               w_unit=words(w_unit * op.in_bytes), out_tile=words(mp.rpc * op.ow * kb * op.out_bytes),
               acc_bytes=mp.rpc * op.ow * kb * ACC_BYTES if mp.weights == "ci" else 0,
               call_cycles=kept(("call", mp.rpc, kb, cb), lambda: call_cycles(op, arch, mp.rpc, kb, cb)))
    out["calls_per_out"] = kt if mp.weights == "resident" else 1  # output tiles per window
    _memories(op, mp, arch, out)
    _traffic(op, mp, arch, out)
    _bounds(op, arch, out)
    return out


def _memories(op: Conv2d, mp: ConvMapping, arch: Arch, pl: dict) -> None:
    """Core and mem-tile bytes, BDs, locks and channels of the busiest tiles."""
    lay = pl["layout"]
    w_depth = 1 if mp.weights == "resident" else 2
    l1_fixed = 2 * pl["win_bytes"] + 2 * pl["out_tile"] + pl["acc_bytes"]
    if mp.weights == "oc" and l1_fixed + 2 * pl["w_unit"] > arch.compute.memory_bytes:
        w_depth = 1  # one output-channel block at a time (mlir-aie's weight FIFOs have depth 1)
    pl["w_depth"] = w_depth
    pl["l1_bytes"] = l1_fixed + w_depth * pl["w_unit"]
    pl["w_l2_depth"] = 1 if mp.weights == "resident" else 2
    distinct = max(len(set(part)) for part in pl["rows"].windows)  # one window BD per distinct kind
    per_col = []
    for c in range(lay.cols):
        nb = sum(1 for h in lay.band_host if h == c)
        nw = sum(1 for h in lay.weight_host if h == c)
        slots = pl["rows"].slots if nb > 1 else pl["rows"].slots_alone
        # the ring also holds a whole window: the mem tile's MM2S inserts the zero padding as it sends
        ring = max(slots * pl["row_bytes"], pl["win_bytes"])
        per_col.append(dict(
            band=nb, weights=nw, slots=slots, ring_bytes=ring,
            l2=nb * ring + nw * pl["w_l2_depth"] * pl["w_unit"]
            + 2 * lay.rows * pl["out_tile"],
            bds=nb * (1 + distinct * pl["ct"]) + nw * 2 * pl["w_l2_depth"] + 4 * lay.rows,
            locks=2 * nb + 2 * nw + 2 * lay.rows, mm2s=nb + nw + 1,
            s2mm=(nb > 0) + (nw > 0) + lay.rows, ports_down=nb + nw))
    pl["columns"] = per_col
    pl["l2_bytes"] = max(c["l2"] for c in per_col)


def control_counts_of(pl: dict) -> ControlCounts:
    """``dispatch.control_counts`` of the design ``conv_design`` builds from plan ``pl``, without
    building it: per column, a shim task for its input rows and its weights where it hosts any and
    one for its outputs (one sync each); per band stream a ring fill BD, ``ct`` BDs per distinct
    window kind (each kind's first pushed by the host) and two locks; per weight part
    ``w_l2_depth`` fill and send BDs, a send chain and two locks; per column's join four BDs and two
    locks a core row, its chains and the fill chains; one parameter write a core."""
    lay, columns = pl["layout"], pl["columns"]
    kinds = [len(set(pl["rows"].windows[part])) for part, _ in lay.band_streams]
    banded, weighted = sum(c["band"] > 0 for c in columns), sum(c["weights"] > 0 for c in columns)
    streams, parts = len(lay.band_streams), len(lay.weight_host)
    return ControlCounts(
        shim_tasks=banded + weighted + lay.cols, tile_pushes=sum(kinds), syncs=lay.cols,
        mem_bds=streams + pl["ct"] * sum(kinds) + 2 * pl["w_l2_depth"] * parts + 4 * lay.rows * lay.cols,
        mem_starts=banded + weighted + parts + lay.cols * (lay.rows + 1),
        mem_locks=2 * streams + 2 * parts + 2 * lay.rows * lay.cols, cores=lay.cols * lay.rows)


def _traffic(op: Conv2d, mp: ConvMapping, arch: Arch, pl: dict) -> None:
    """Bytes per level over the op (``ddr_*``: shim <-> DDR; ``mem_core``: mem tiles -> cores)."""
    lay, rows = pl["layout"], pl["rows"]
    images = op.n * pl["passes"]
    streams = len(lay.band_streams)
    windows = pl["bt"] * pl["ct"]
    act_read = images * streams * rows.ring_rows * pl["row_bytes"]
    w_units = {"resident": 1, "oc": pl["kt"], "ci": pl["kt"] * op.n * pl["bt"] * pl["ct"]}[mp.weights]
    tiles = op.n * pl["bt"] * pl["kt"]  # per core
    cores = lay.cols * lay.rows
    pl.update(windows_per_core=images * windows, w_units=w_units, tiles_per_core=tiles,
              ddr_read_bytes=act_read + lay.pk * w_units * pl["w_unit"],
              ddr_write_bytes=cores * tiles * pl["out_tile"],
              mem_core_bytes=cores * (images * windows * pl["win_bytes"] + w_units * pl["w_unit"]),
              act_ddr_bytes=act_read)
    padded = cores * tiles * pl["ct"] * mp.rpc * op.ow * pl["kb"] * pl["cb"] * op.r * op.s
    pl["padded_macs"] = padded
    pl["padding_waste"] = padded / max(1, op.macs) - 1
    # the windows' bytes as the mem tiles send them (a broadcast counted once) over the input's:
    # about r / stride (times the padded width over the width); im2col would send r * s
    pl["window_bytes"] = images * streams * windows * pl["win_bytes"]
    pl["halo_factor"] = pl["window_bytes"] / max(1.0, op.input_bytes)


def _bounds(op: Conv2d, arch: Arch, pl: dict) -> None:
    """Lower bounds on the simulated cycles: the busiest core's kernel cycles with what it cannot
    overlap (its first input rows and window arriving whole, its last output tile leaving through
    two DMAs); DDR bytes at the DDR rate; the busiest DMA channel's bytes and per-BD cycles."""
    stream = arch.stream_bytes_per_cycle
    per_bd = arch.bd_chain_cycles + arch.lock_acquire_cycles + arch.lock_release_cycles
    first_rows = max(a for a, _ in (part[0] for part in pl["rows"].windows))
    first = max(first_rows * pl["row_bytes"] / stream + pl["win_bytes"] / stream, 2 * pl["w_unit"] / stream)
    core = pl["tiles_per_core"] * pl["ct"] * pl["call_cycles"]
    compute = first + core + 2 * pl["out_tile"] / stream
    ddr = (pl["ddr_read_bytes"] + pl["ddr_write_bytes"]) / arch.ddr_bytes_per_cycle
    lay = pl["layout"]
    images = op.n * pl["passes"]
    channels = [pl["windows_per_core"] * (pl["win_bytes"] / stream + per_bd),  # a window MM2S / core S2MM
                pl["w_units"] * (pl["w_unit"] / stream + per_bd),  # weights into a core
                pl["tiles_per_core"] * (pl["out_tile"] / stream + per_bd),  # a core's output MM2S
                lay.rows * pl["tiles_per_core"] * (pl["out_tile"] / stream + per_bd)]  # a column's drain
    reads, writes = arch.shim_read_bytes_per_cycle, arch.shim_write_bytes_per_cycle
    for c, col in enumerate(pl["columns"]):
        rows_in = images * col["band"] * pl["rows"].ring_rows
        channels.append(rows_in * (pl["row_bytes"] / stream + per_bd))  # the ring fill S2MM
        act = rows_in * pl["row_bytes"]
        w = col["weights"] * pl["w_units"] * pl["w_unit"]
        channels += [act / min(stream, reads[c]), w / min(stream, reads[c])]  # shim MM2S1, MM2S0
        channels.append((act + w) / reads[c])
        channels.append(lay.rows * pl["tiles_per_core"] * pl["out_tile"] / min(stream, writes[c]))
    bounds = (compute, ddr, max(channels))
    pl["bounds"] = bounds
    pl["core_cycles"] = core
    pl["lower_bound_cycles"] = max(bounds)
    pl["bound_resource"] = RESOURCES[max(range(len(bounds)), key=bounds.__getitem__)]  # the first largest


class Limit(Enum):
    """What a conv candidate can break: the search counts its rejections by these, not by text."""

    CORE_MEMORY = "core memory"
    INPUT_RING = "input ring"
    MEM_TILE_BYTES = "mem tile bytes"
    MEM_TILE_BDS = "mem tile BDs"
    MEM_TILE_LOCKS = "mem tile locks"
    MEM_TILE_MM2S = "mem tile MM2S channels"
    MEM_TILE_S2MM = "mem tile S2MM channels"
    MEM_TILE_PORTS_DOWN = "mem tile streams down"
    COMPUTE_BD_LENGTH = "compute tile BD length"
    MEM_BD_LENGTH = "mem tile BD length"


_MEM_TILE = (("l2", "bytes", Limit.MEM_TILE_BYTES), ("bds", "bds", Limit.MEM_TILE_BDS),
             ("locks", "locks", Limit.MEM_TILE_LOCKS), ("mm2s", "mm2s", Limit.MEM_TILE_MM2S),
             ("s2mm", "s2mm", Limit.MEM_TILE_S2MM), ("ports_down", "ports_down", Limit.MEM_TILE_PORTS_DOWN))


def problems(pl: dict, arch: Arch) -> list[Broken]:
    """Every capacity and resource limit ``pl`` breaks, with its numbers (empty: legal)."""
    mem, core = arch.mem, arch.compute
    out = []
    if pl["l1_bytes"] > core.memory_bytes:
        out.append(Broken(Limit.CORE_MEMORY, f"core memory: needs {pl['l1_bytes']} bytes; {core.memory_bytes} available"))
    slots = max(c["slots"] for c in pl["columns"])
    if slots > arch.lock_max_value:
        out.append(Broken(Limit.INPUT_RING, f"input ring: needs {slots} rows; a lock counts to {arch.lock_max_value}"))
    most_of = {"l2": mem.memory_bytes, "bds": mem.bd_count, "locks": mem.lock_count, "mm2s": mem.mm2s_channels,
               "s2mm": mem.s2mm_channels, "ports_down": arch.stream_ports_down}
    for name, unit, limit in _MEM_TILE:
        need = max(c[name] for c in pl["columns"])
        if need > most_of[name]:
            out.append(Broken(limit, f"mem tile: needs {need} {unit}; {most_of[name]} available"))
    for what, nbytes, bits, limit in (
            ("compute", max(pl["win_bytes"], pl["w_unit"]), core.bd_length_bits, Limit.COMPUTE_BD_LENGTH),
            ("mem", max(pl["w_unit"], pl["row_bytes"]), mem.bd_length_bits, Limit.MEM_BD_LENGTH)):
        if nbytes / 4 >= 2 ** bits:
            out.append(Broken(limit, f"{what} tile BD length field holds < 2**{bits} words ({nbytes} bytes asked)"))
    return out
