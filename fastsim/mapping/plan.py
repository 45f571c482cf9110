"""Closed-form arithmetic of a mapping: loop counts, bytes per buffer and level, capacity and
resource checks, and lower bounds on cycles.

``evaluate`` takes a ``StructureBatch`` (structures sharing dataflow, loop order and L2 residency,
as (S, 1) columns) and tile sizes ``m, k, n`` broadcastable against it (the search evaluates every
structure and tile of a group in one call; ``plan_one`` evaluates one candidate for the design
builder). The design builder lays out exactly the buffers, BDs and streams counted here, so the
legality checks and the simulated design cannot disagree.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..arch import Arch
from ..cache import CACHE, Region
from ..cost import kernel_modelled
from ..kernel_model import matmul as KM
from .ddr_runs import bound_rate, bound_run_bytes, write_most
from .dispatch import ControlCounts
from .paths import STREAM_SPLITS, deal, onchip_bytes, stream_rates
from .space import Mapping, Matmul, local_operands, split_parts

ACC_BYTES = 4  # partial sums are fp32 / int32 accumulators

# resource names, in the order reported (bound_by)
RESOURCES = ("compute", "ddr", "shim_column", "dma_stream")


def words(nbytes):
    """Bytes rounded up to whole 32-bit words (DMAs move words), at least one word."""
    return np.maximum(4, np.ceil(np.asarray(nbytes, dtype=np.float64) / 4) * 4)


def cdiv(a, b):
    return -(-a // b)


@dataclass(frozen=True)
class Structure:
    """The tile-independent part of a mapping, resolved against an arch."""

    mapping: Mapping
    cols: int
    rows: int
    groups: int
    pm: int  # M parts
    pn: int  # N parts
    pk: int  # K parts (k_split)
    hosted_a: tuple[int, ...]  # A parts whose mem tile is column col0 + i
    hosted_b: tuple[int, ...]
    conv_cycles_per_elem: float
    macs_key: str
    static_b: bool

    @property
    def producers(self) -> int:
        return self.cols * self.groups


def structure(op: Matmul, mp: Mapping, arch: Arch) -> Structure | str:
    """Resolve the scalar part of ``mp``; a string says why it cannot exist on ``arch``."""
    cols = mp.cols or arch.columns
    rows = mp.rows or arch.compute_rows
    if not 1 <= cols or mp.col0 < 0 or mp.col0 + cols > arch.columns:
        return f"columns {mp.col0}..{mp.col0 + cols - 1}: the arch has columns 0..{arch.columns - 1}"
    if not 1 <= rows <= arch.compute_rows:
        return f"rows = {rows}: must be in 1..{arch.compute_rows}"
    if mp.c_buffers not in (1, 2):
        return f"c_buffers = {mp.c_buffers}: 1 or 2"
    if mp.k_panel < 1 or (mp.k_panel > 1 and mp.dataflow != "os"):
        return f"k_panel = {mp.k_panel}: 1, or more in the os dataflow only (it stages what os streams along K)"
    if mp.k_panel > 1 and mp.l2 == "ab":
        return f"k_panel = {mp.k_panel}: with l2 = ab both operands are resident in the mem tiles, so nothing is staged"
    if mp.k_split < 1 or rows % mp.k_split:
        return f"k_split = {mp.k_split}: must divide the {rows} rows used"
    options = dict(arch.datapath_options(op.dtype))
    # default: the fastest datapath (XDNA2 bf16: bfp16 after conversion, as IRON compiles it)
    key = mp.datapath or max(options, key=lambda x: arch.macs_per_cycle[x], default=op.dtype)
    if key not in options:
        return f"datapath {key!r}: {arch.name} runs {op.dtype} on {sorted(options) or 'nothing'}"
    if op.static_b and mp.dataflow != "ws":
        return "static weights stay in core memory only in the ws dataflow"
    groups = rows // mp.k_split
    pk = mp.k_split
    pm, pn = split_parts(mp.split, cols, groups)
    # parts needed by one column are hosted by that column's mem tile; parts every column needs
    # are hosted round-robin (one mem tile broadcasts each along the core rows)
    a_parts, b_parts = pm * pk, pk * pn
    a_local, b_local = local_operands(mp.split)
    if mp.stream_split not in STREAM_SPLITS:
        return f"stream_split = {mp.stream_split!r}: one of {STREAM_SPLITS}"
    rates = stream_rates(arch, mp.col0, cols)
    hosted_a = _hosting(a_parts, cols, a_local, rates, mp.stream_split)
    hosted_b = _hosting(0 if op.static_b else b_parts, cols, b_local, rates, mp.stream_split)
    return Structure(mp, cols, rows, groups, pm, pn, pk, hosted_a, hosted_b, options[key], key, op.static_b)


def _hosting(parts: int, cols: int, local: bool, rates, how: str) -> tuple[int, ...]:
    """How many parts each column hosts (a search asks for the same few thousands of times: the
    answers are kept in the one cache's "hosting" region)."""
    if local:  # parts split evenly: column c hosts its own
        return tuple(parts // cols for _ in range(cols))
    key = (parts, cols, tuple(rates), how)
    counts = CACHE.get(HOSTING, key)
    if counts is None:
        counts = tuple(np.bincount(host_columns(parts, rates, how), minlength=cols).tolist())
        CACHE.put(HOSTING, key, counts)
    return counts


HOSTING = "hosting"
CACHE.add_region(Region(HOSTING, 4096))


def same_as_equal_split(st: Structure, arch: Arch) -> bool:
    """A proportional stream split that hosts every shared part where the equal split does (a
    symmetric stretch of columns, or too few shared parts to matter): the same design."""
    if st.mapping.stream_split == "equal":
        return False
    rates = stream_rates(arch, st.mapping.col0, st.cols)
    a_local, b_local = local_operands(st.mapping.split)
    counts = [n for n, local in ((st.pm * st.pk, a_local), (0 if st.static_b else st.pk * st.pn, b_local))
              if not local]
    return all(host_columns(n, rates, st.mapping.stream_split) == host_columns(n, rates, "equal") for n in counts)


def host_columns(parts: int, rates, how: str) -> list[int]:
    """The column (from the mapping's first) whose shim streams each part every column needs."""
    return deal(parts, rates, how)


@dataclass(frozen=True)
class StructureBatch:
    """Structures that share dataflow, loop order, L2 residency and static weights, their numbers
    as (S, 1) columns (per-column numbers as (S, columns), padded with no parts and infinite
    bandwidth) so that one ``evaluate`` call covers all of them."""

    structures: tuple[Structure, ...]
    cols: np.ndarray
    groups: np.ndarray
    pm: np.ndarray
    pn: np.ndarray
    pk: np.ndarray
    hosted_a: np.ndarray
    hosted_b: np.ndarray
    read_rate: np.ndarray
    write_rate: np.ndarray
    conv_cycles_per_elem: np.ndarray
    keys: tuple[str, ...]

    @property
    def mapping(self) -> Mapping:
        return self.structures[0].mapping

    @property
    def static_b(self) -> bool:
        return self.structures[0].static_b


def stack(structures: list[Structure], arch: Arch) -> StructureBatch:
    """One batch of structures that agree on dataflow, order, l2 and static weights."""
    first = structures[0].mapping
    keys = ("dataflow", "order", "l2", "buffers", "k_panel", "c_buffers")
    assert all(all(getattr(x.mapping, key) == getattr(first, key) for key in keys)
               for x in structures), f"a batch shares {keys}"
    width = max(x.cols for x in structures)

    def column(name):
        return np.array([[getattr(x, name)] for x in structures])

    def per_col(values, fill):
        out = np.full((len(structures), width), fill, dtype=np.float64 if fill else np.int64)
        for i, v in enumerate(values):
            out[i, :len(v)] = v
        return out

    rates = [(arch.shim_read_bytes_per_cycle[x.mapping.col0:x.mapping.col0 + x.cols],
              arch.shim_write_bytes_per_cycle[x.mapping.col0:x.mapping.col0 + x.cols]) for x in structures]
    batch = StructureBatch(tuple(structures), column("cols"), column("groups"), column("pm"), column("pn"),
                           column("pk"), per_col([x.hosted_a for x in structures], 0),
                           per_col([x.hosted_b for x in structures], 0), per_col([r for r, _ in rates], np.inf),
                           per_col([w for _, w in rates], np.inf),
                           column("conv_cycles_per_elem").astype(np.float64),
                           tuple(x.macs_key for x in structures))
    for value in vars(batch).values():  # batches are cached and shared across searches: never written
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return batch


def matmul_cycles(op: Matmul, keys, arch: Arch, m, k, n, conversion: bool = False, memo: dict | None = None):
    """Cycles of one m x k x n microkernel call (the arithmetic of ``fastsim.cost.matmul_cycles``:
    the kernel model on AIE-ML and AIE-ML v2 cores, the plain rate model elsewhere); ``keys`` is one
    datapath key, or one per row of a batch. ``conversion``: include the datapath's operand
    conversion (bf16 -> bfp16), which the kernel model interleaves with the MACs. ``memo``: answers per (datapath, tile grid)
    for ``op``'s kernel and ``arch`` only (``candidates.call_cycle_memo``: structure batches and
    searches of the same kernel mostly share a grid)."""
    keys = (keys,) if isinstance(keys, str) else tuple(keys)
    if arch.core_mesh_rows:
        from ..cost import matmul_cycles as one

        KM.check_codegen(arch, op.codegen, keys[0])  # a generated kernel is refused: none on mesh cores
        assert len(set(keys)) == 1, "mesh cores have one datapath"
        f = np.vectorize(lambda a, b, c: one(int(a), int(b), int(c), keys[0], arch,
                                             op.kernel_efficiency or arch.efficiency(keys[0]),
                                             op.kernel_overhead_cycles, op.macs_scale))
        return f(m, k, n).astype(np.float64)
    # the cycles depend on the tile and the datapath only: computed once per distinct datapath
    # (most batches have one: then they keep the tiles' shape), then each structure takes its own
    distinct, which = _datapath_rows(keys)
    per_key = [_memoized(memo, (key, conversion, *(np.asarray(x).tobytes() for x in (m, k, n)), np.shape(m)),
                         lambda key=key: _call_cycles(op, key, arch, m, k, n, conversion)) for key in distinct]
    out = per_key[0]
    if len(distinct) > 1:
        for i in range(1, len(distinct)):
            out = np.where(which == i, per_key[i], out)
    return out


@functools.lru_cache(maxsize=1024)
def _datapath_rows(keys: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
    """The distinct datapaths of a batch's rows, and each row's index into them as (rows, 1): a
    batch's keys are ranked again by every search of the batch (two calls per ranking)."""
    distinct = sorted(set(keys))
    which = np.array([[distinct.index(key)] for key in keys])
    which.setflags(write=False)
    return distinct, which


def _memoized(memo: dict | None, key: tuple, compute):
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def modelled(arch: Arch, key: str) -> bool:
    """Whether the kernel model prices datapath ``key`` on ``arch`` (it then holds the C moves and
    the conversion; otherwise the plan adds them around the plain rate model)."""
    return kernel_modelled(arch, key)


def _call_cycles(op: Matmul, key: str, arch: Arch, m, k, n, conversion: bool = False):
    """``matmul_cycles`` on one datapath."""
    eff = op.kernel_efficiency or arch.efficiency(key)
    if modelled(arch, key):
        tuning = KM.Tuning(eff, float(arch.call_cycles(key)), float(arch.block_cycles(key)))
        conv = dict(arch.datapath_options(op.dtype)).get(key, 0.0) if conversion else 0.0
        cycles = KM.call_cycles(arch, key, m, k, n, tuning=tuning, conv_cycles_per_elem=conv,
                                c_bytes=op.c_elem_bytes, macs_scale=op.macs_scale, codegen=op.codegen)
        return np.maximum(1, np.ceil(cycles) + op.kernel_overhead_cycles)
    KM.check_codegen(arch, op.codegen, key)  # a generated kernel is refused: no kernel model prices it here
    r, s_, t = arch.mmul_shapes.get(key, (1, 1, 1))
    rate = arch.macs_per_cycle[key] * eff
    call, block = float(arch.call_cycles(key)), float(arch.block_cycles(key))
    fixed = call + cdiv(m, 2 * r) * cdiv(n, 2 * t) * block  # c_call + N_blk * c_blk (2x2 intrinsic blocks)
    m, k, n = cdiv(m, r) * r, cdiv(k, s_) * s_, cdiv(n, t) * t
    macs = np.ceil(np.asarray(m * k * n, dtype=np.float64) * op.macs_scale)
    return np.maximum(1, np.ceil(macs / rate + fixed) + op.kernel_overhead_cycles)


def evaluate(op: Matmul, b: StructureBatch, arch: Arch, m, k, n) -> dict:
    """Everything the search and the design need for tiles ``(m, k, n)`` under the structures of
    ``b``; every value broadcasts to (structures, tiles)."""
    m, k, n = (np.asarray(x, dtype=np.int64) for x in (m, k, n))
    t = _tiles(op, b, m, k, n)
    s = _streams(op, b.mapping, t)
    c = _core_memory(op, b, arch, t, m, n)
    mem = _mem_tile(op, b, arch, t, s, c)
    ddr = _ddr_traffic(op, b, t, s, c)
    cyc = _core_cycles(op, b, arch, t, m, k, n)
    ends = _pipeline_ends(op, b, arch, t, c, mem, cyc)
    bounds = np.stack(np.broadcast_arrays(_compute_bound(arch, b, t, c, cyc, ends), _ddr_bound(op, b, arch, t, s, ddr, ends),
                                          _shim_column_bound(op, b, arch, t, c, ddr, ends),
                                          _dma_bound(op, b, arch, t, s, c, mem, ddr, ends))).astype(np.float64)
    padded_macs, psum_bytes, mem_compute, energy = _energy(op, b, arch, t, c, ddr, m, k, n)
    a_chip, c_chip = op.a_on_chip, op.c_on_chip
    ha, hb = mem.ha, mem.hb
    return dict(
        mt=t.mt, nt=t.nt, kt=t.kt, a_tile=t.a_tile, psum_tile=c.psum_tile, b_tile=t.b_tile, c_tile=t.c_tile,
        l1_a=c.l1_a, l1_b=c.l1_b, depth_a=c.depth_a, depth_b=c.depth_b, l1_bytes=c.l1,
        unit_a=s.unit_a, unit_b=s.unit_b, units_a=s.units_a, units_b=s.units_b, reps_a=s.reps_a, reps_b=s.reps_b,
        mem_unit_a=mem.unit_a, mem_unit_b=mem.unit_b, mem_depth_a=mem.depth_a, mem_depth_b=mem.depth_b,
        l2_bytes=mem.l2, mem_bds=mem.bds, send_bds_a=mem.send_bds_a, send_bds_b=mem.send_bds_b,
        mem_mm2s=ha + hb + (0 if c_chip and not op.c_handoff else 1), mem_s2mm=(ha > 0) * (not a_chip) + (hb > 0) * 1 + b.groups,
        ports_down=ha + hb, ports_up=b.groups * 1,
        mem_locks=2 * ha * (not a_chip) + 2 * hb + 2 * b.groups * (not c_chip),
        chip_a=mem.chip_a, chip_c=mem.chip_c,
        part_a=s.part_a, part_b=s.part_b, ddr_a_part=ddr.a_part, ddr_b_part=ddr.b_part,
        ddr_read_bytes=ddr.read, ddr_write_bytes=ddr.write, shim_mem_bytes=ddr.read + ddr.write,
        mem_compute_bytes=mem_compute, psum_bytes=psum_bytes, energy_pj=energy,
        transfers=c.core_a / c.l1_a + c.core_b / c.l1_b + t.mt * t.nt,
        matmul_cycles=cyc.mm, conversion_cycles=cyc.conv, cast_cycles=cyc.cast, add_cycles=cyc.add,
        core_cycles=cyc.core_cycles, bounds=bounds, lower_bound_cycles=bounds.max(axis=0),
        padded_macs=padded_macs, padding_waste=padded_macs / max(1, op.macs) - 1,
        useful=_useful(op, b.mapping, s.reps_a, s.reps_b),
    )


class _Tiles(NamedTuple):
    """Loop counts of one core (M, N and K tiles of its part) and bytes of one tile per operand."""

    one: np.ndarray  # ones of the (structures, tiles) shape: broadcasts scalars to it
    mt: np.ndarray
    nt: np.ndarray
    kt: np.ndarray
    a_tile: np.ndarray
    b_tile: np.ndarray
    c_tile: np.ndarray


def _tiles(op: Matmul, b: StructureBatch, m, k, n) -> _Tiles:
    """Loop counts per core round up, so a part's last tile is padded: the bounds count that
    padding as work."""
    one = np.ones(np.broadcast_shapes(b.pm.shape, m.shape, k.shape, n.shape), np.int64)
    mt, nt, kt = cdiv(op.m, b.pm * m) * one, cdiv(op.n, b.pn * n) * one, cdiv(op.k, b.pk * k) * one
    a_tile, b_tile = words(m * k * op.a_elem_bytes), words(k * n * op.b_elem_bytes)
    c_tile = words(m * n * op.c_elem_bytes)
    return _Tiles(one, mt, nt, kt, a_tile, b_tile, c_tile)


class _Streams(NamedTuple):
    """Per operand part: the whole slice, how often it is streamed, its repeated block (unit) and
    how many units it has, and whether it stays resident in L2."""

    part_a: np.ndarray
    part_b: np.ndarray
    reps_a: np.ndarray
    reps_b: np.ndarray
    unit_a: np.ndarray
    units_a: np.ndarray
    unit_b: np.ndarray
    units_b: np.ndarray
    res_a: bool
    res_b: bool


def _streams(op: Matmul, mp: Mapping, t: _Tiles) -> _Streams:
    """The dataflow and loop order decide which operand is re-streamed and in which blocks: the
    mem tiles and the host sequence are laid out by these blocks."""
    flow, one, mt, nt, kt = mp.dataflow, t.one, t.mt, t.nt, t.kt
    part_a, part_b = mt * kt * t.a_tile, nt * kt * t.b_tile
    reps_a = nt if flow in ("os", "ws") else one
    reps_b = mt if flow in ("os", "is") else one
    if flow == "os" and mp.order == "m":
        unit_a, units_a, unit_b, units_b = kt * t.a_tile, mt, part_b, one
    elif flow == "os":
        unit_a, units_a, unit_b, units_b = part_a, one, kt * t.b_tile, nt
    else:
        unit_a, units_a, unit_b, units_b = part_a, one, part_b, one
    res_a, res_b = "a" in mp.l2 and not op.a_on_chip, "b" in mp.l2
    return _Streams(part_a, part_b, reps_a, reps_b, unit_a, units_a, unit_b, units_b, res_a, res_b)


class _CoreMemory(NamedTuple):
    """What one core receives and holds."""

    l1_a: np.ndarray  # bytes of one received A transfer (a tile, or the resident block under is)
    l1_b: np.ndarray
    core_a: np.ndarray  # A bytes one core receives over the op
    core_b: np.ndarray
    core_c: np.ndarray  # C bytes one producer sends
    psum_tile: np.ndarray
    depth_a: np.ndarray  # buffers per received A transfer
    depth_b: np.ndarray
    l1: np.ndarray  # core memory bytes


def _core_memory(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, m, n) -> _CoreMemory:
    """Streamed tiles are double-buffered; a resident block is double-buffered only if it fits;
    the last core of a K-split group holds C tiles, the others partial-sum buffers."""
    flow, static = b.mapping.dataflow, b.static_b
    one, mt, nt, kt, a_tile, b_tile, c_tile = t
    # what one core receives: tiles, or resident blocks (is: A block, ws: B block)
    l1_a = kt * a_tile if flow == "is" else a_tile * one
    l1_b = kt * b_tile if flow == "ws" else b_tile * one
    core_a = mt * kt * a_tile * (1 if flow == "is" else nt)
    core_b = 0 * nt if static else nt * kt * b_tile * (1 if flow == "ws" else mt)
    core_c = mt * nt * c_tile
    psum_tile = m * n * ACC_BYTES * one
    c_held = b.mapping.c_buffers * c_tile
    fixed = np.where(b.pk > 1, np.maximum(c_held, 2 * psum_tile), c_held)
    buffers = b.mapping.buffers
    depth_a = buffers * one
    depth_b = (1 if static else buffers) * one
    over = fixed + depth_a * l1_a + depth_b * l1_b > arch.compute.memory_bytes
    if flow == "is":
        depth_a = np.where(over, 1, depth_a)
    if flow == "ws" and not static:
        depth_b = np.where(over, 1, depth_b)
    l1 = fixed + depth_a * l1_a + depth_b * l1_b
    return _CoreMemory(l1_a, l1_b, core_a, core_b, core_c, psum_tile, depth_a, depth_b, l1)


class _MemTile(NamedTuple):
    """What the busiest mem tile holds and runs."""

    ha: np.ndarray  # most A parts one mem tile hosts
    hb: np.ndarray
    depth_a: np.ndarray  # buffers per hosted A part
    depth_b: np.ndarray
    unit_a: np.ndarray  # bytes of one such buffer
    unit_b: np.ndarray
    chip_a: np.ndarray  # bytes of an on-chip A part's buffer
    chip_c: np.ndarray
    l2: np.ndarray  # mem tile bytes
    send_bds_a: np.ndarray  # send BDs per A buffer (BD iterations wrap)
    send_bds_b: np.ndarray
    bds: np.ndarray


def panel_tiles(kt, k_panel: int):
    """The L1 K tiles one mem-tile buffer of a streamed operand stages: the largest divisor of a
    core's K tiles ``kt`` at most ``k_panel`` (so no panel straddles two C tiles' K loops)."""
    out = np.ones_like(kt)
    for d in range(2, k_panel + 1):
        out = np.where(kt % d == 0, d, out)
    return out


def _mem_tile(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, s: _Streams, c: _CoreMemory) -> _MemTile:
    """Resident units are double-buffered when there are several and they fit, else single;
    forwarded units (L1 tiles, or K panels of them) always double; on-chip operands (fused groups)
    take one buffer per part or producer, the whole of it or a window."""
    one = t.one
    res_a, res_b = s.res_a, s.res_b
    ha, hb = b.hosted_a.max(axis=1, keepdims=True), b.hosted_b.max(axis=1, keepdims=True)
    buffers = b.mapping.buffers
    mdepth_a = np.where(s.units_a > 1, buffers, 1) if res_a else buffers * one
    mdepth_b = np.where(s.units_b > 1, buffers, 1) if res_b else buffers * one
    panel = panel_tiles(t.kt, b.mapping.k_panel if b.mapping.dataflow == "os" else 1)
    mem_unit_a = s.unit_a if res_a else c.l1_a * (1 if op.a_on_chip else panel)
    mem_unit_b = s.unit_b if res_b else c.l1_b * panel
    a_chip, c_chip = op.a_on_chip, op.c_on_chip
    chip_a = onchip_bytes(s.part_a, op.onchip_window_bytes, c.l1_a)
    chip_c = onchip_bytes(t.mt * t.nt * t.c_tile, op.onchip_window_bytes, t.c_tile)
    c_bufs = b.mapping.c_buffers
    join = b.groups * chip_c if c_chip else c_bufs * b.groups * t.c_tile

    def mem_bytes(da, db):
        held_a = chip_a if a_chip else da * mem_unit_a
        return ha * held_a + hb * db * mem_unit_b + join

    shrink = mem_bytes(mdepth_a, mdepth_b) > arch.mem.memory_bytes
    if res_a:
        mdepth_a = np.where(shrink, 1, mdepth_a)
    if res_b:
        mdepth_b = np.where(shrink, 1, mdepth_b)
    l2 = mem_bytes(mdepth_a, mdepth_b)
    itmax = arch.bd_iterations_max
    send_bds_a = cdiv(s.reps_a, itmax) if res_a else one
    send_bds_b = cdiv(s.reps_b, itmax) if res_b else one
    bds_a = ha if a_chip else ha * mdepth_a * (1 + send_bds_a)
    mem_bds = bds_a + hb * mdepth_b * (1 + send_bds_b) + (1 if c_chip else 2 * c_bufs) * b.groups
    return _MemTile(ha, hb, mdepth_a, mdepth_b, mem_unit_a, mem_unit_b, chip_a, chip_c, l2, send_bds_a, send_bds_b,
                    mem_bds)


class _Ddr(NamedTuple):
    """DDR bytes: per streamed A and B part, and read and written by the whole op."""

    a_part: np.ndarray
    b_part: np.ndarray
    read: np.ndarray
    write: np.ndarray


def _ddr_traffic(op: Matmul, b: StructureBatch, t: _Tiles, s: _Streams, c: _CoreMemory) -> _Ddr:
    """Each part is read once if resident in L2, else once per repetition; on-chip operands and
    static weights never touch DDR."""
    a_part = 0 * t.mt if op.a_on_chip else s.part_a * (1 if s.res_a else s.reps_a)
    b_part = 0 * t.nt if b.static_b else s.part_b * (1 if s.res_b else s.reps_b)
    read = b.hosted_a.sum(axis=1, keepdims=True) * a_part + b.hosted_b.sum(axis=1, keepdims=True) * b_part
    producers = b.cols * b.groups
    write = 0 * c.core_c if op.c_on_chip else producers * c.core_c
    return _Ddr(a_part, b_part, read, write)


class _CoreCycles(NamedTuple):
    """Cycles per microkernel call and its extra kernels, and one core's total."""

    mm: np.ndarray
    conv: np.ndarray
    cast: np.ndarray
    add: np.ndarray
    core_cycles: np.ndarray


def _core_cycles(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, m, k, n) -> _CoreCycles:
    """Microkernel plus datapath conversion and dequantization per call, and partial-sum adds. With
    the kernel model the call's A, B and C moves are inside it; otherwise a call reads A and B while
    it computes and reads and writes its C tile around it."""
    if all(modelled(arch, key) for key in b.keys):
        # the kernel model holds the A, B and C moves and interleaves the conversion with the MACs:
        # the conversion's cycles are what it adds to the call
        mm = matmul_cycles(op, b.keys, arch, m, k, n)
        conv = (matmul_cycles(op, b.keys, arch, m, k, n, conversion=True) - mm
                if np.any(b.conv_cycles_per_elem) else 0 * mm)
    else:
        load, store = arch.core_load_bytes_per_cycle, arch.core_store_bytes_per_cycle
        mm = (np.maximum(matmul_cycles(op, b.keys, arch, m, k, n), np.ceil((t.a_tile + t.b_tile) / load))
              + np.ceil(t.c_tile / load) + np.ceil(t.c_tile / store))
        conv = np.ceil((m * k + k * n) * b.conv_cycles_per_elem)
    cast = np.ceil(k * n * op.cast_cycles_per_weight)
    add = np.where(b.pk > 1, np.ceil(m * n / arch.accumulate_elems_per_cycle), 0)
    core_cycles = t.mt * t.nt * (t.kt * (mm + conv + cast) + add)
    return _CoreCycles(mm, conv, cast, add, core_cycles)


class _PipelineEnds(NamedTuple):
    """Cycles no channel or core can avoid at the start and end of the op, because every buffer
    is handed on whole (a BD releases its lock when its last byte is in): the first call waits
    for a whole mem-tile unit and L1 transfer of each operand, and after the last input byte
    arrives one more call runs and its C tile crosses the DMAs to DDR (or to the mem tile, when C
    stays on chip)."""

    first_call: np.ndarray  # before the first core's first call can start
    last_first_call: np.ndarray  # before the last core's first call can start (its parts are filled last)
    first_c: np.ndarray  # before the first C tile is whole: K tiles of each operand in, K calls run
    call: np.ndarray  # one microkernel call with its conversion and dequantization
    c_out: np.ndarray  # a C tile from its core to where the op leaves it
    after_unit_a: np.ndarray  # after a mem-tile A unit is in: forward it whole, run what its last L1 transfer feeds, drain
    after_unit_b: np.ndarray
    after_read: np.ndarray  # after the last DDR byte is read: the least of the above that read DDR


def _pipeline_ends(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, c: _CoreMemory, mem: _MemTile,
                   cyc: "_CoreCycles") -> _PipelineEnds:
    stream = arch.stream_bytes_per_cycle
    one = t.one
    call = cyc.mm + cyc.conv + cyc.cast
    c_out = (1 if op.c_on_chip else 2) * t.c_tile / stream  # core -> mem tile (-> shim)
    # an on-chip A already sits in its mem tile; static weights already sit in core memory
    fill_a = (0 if op.a_on_chip else mem.unit_a / stream) + c.l1_a / stream
    fill_b = 0 * one if b.static_b else mem.unit_b / stream + c.l1_b / stream
    first_call = np.maximum(fill_a, fill_b) * one
    # one S2MM chain fills a mem tile's parts of an operand in turn: the last part's first unit
    # is in only after a unit of every part hosted there
    last_a = (0 if op.a_on_chip else mem.ha * mem.unit_a / stream) + c.l1_a / stream
    last_b = 0 * one if b.static_b else mem.hb * mem.unit_b / stream + c.l1_b / stream
    # and every core has started only once the DDR has served every part's first unit, the last of
    # them then forwarded to a core
    read_a, read_b = not op.a_on_chip, not b.static_b
    first_units = ((0 if op.a_on_chip else b.hosted_a.sum(axis=1, keepdims=True) * mem.unit_a)
                   + b.hosted_b.sum(axis=1, keepdims=True) * mem.unit_b)
    l1_in = _streamed_min(read_a, read_b, c.l1_a, c.l1_b, one)
    all_first = np.where(first_units > 0, first_units / arch.ddr_bytes_per_cycle + l1_in / stream, 0)
    last_first_call = np.maximum(np.maximum(last_a, last_b), all_first) * one
    # the calls an operand's last L1 transfer feeds run after it is in: one call for a streamed
    # tile, every call of its block for a resident one (ws: B, is: A)
    calls = t.mt * t.nt * t.kt
    after_a = mem.unit_a / stream + call * calls / np.maximum(c.core_a / c.l1_a, 1) + c_out
    after_b = mem.unit_b / stream + call * calls / np.maximum(c.core_b / c.l1_b, 1) + c_out
    after_read = _streamed_min(read_a, read_b, after_a, after_b, one)
    # a C tile is whole after the K calls that sum it, which need K tiles of each operand
    in_a = (0 if op.a_on_chip else mem.unit_a / stream) + t.kt * t.a_tile / stream
    in_b = 0 * one if b.static_b else mem.unit_b / stream + t.kt * t.b_tile / stream
    first_c = np.maximum(first_call + t.kt * call, np.maximum(in_a, in_b) + call)
    return _PipelineEnds(first_call, last_first_call, first_c, call, c_out, after_a * one, after_b * one,
                         after_read * one)


def _streamed_min(read_a: bool, read_b: bool, a, b, one):
    """The smaller of ``a`` and ``b`` over the operands read from DDR (0 when neither is); the
    compiled closed form's ``_streamed_min``."""
    if read_a and read_b:
        return np.minimum(a, b)
    return a if read_a else b if read_b else 0 * one


def _ddr_bound(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, s: _Streams, ddr: _Ddr, ends: _PipelineEnds):
    """Cycles of the DDR: its bytes at its rate; the reads end a unit's forwarding, calls and a C
    drain before the op can (``after_read``), and the writes start after the first C tile. With a
    cost per contiguous run (``ddr_runs.bound_run_bytes``), every shim BD's bytes and runs at the
    rate the DDR serves both (``ddr_runs.bound_rate``); each shim BD execution is one run at least
    (a row-major operand's BD reads several). After the last read only C writes can use it, at
    the shim S2MMs' rate at most (``ddr_runs.write_most``)."""
    bpc = arch.ddr_bytes_per_cycle
    read, write = ddr.read, ddr.write
    plain = np.maximum((read + write) / bpc,
                       np.maximum(read / bpc + ends.after_read, np.where(write > 0, ends.first_c + write / bpc, 0)))
    run = bound_run_bytes(arch)
    if not run > 0:
        return plain
    cols_a = (b.hosted_a > 0).sum(axis=1, keepdims=True) * (not op.a_on_chip)
    cols_b = (b.hosted_b > 0).sum(axis=1, keepdims=True)
    c_cols = 0 if op.c_on_chip else b.cols
    rate = bound_rate(arch, cols_a + cols_b + c_cols)
    # one shim BD per column and operand, as long as its hosted parts' pieces (``design``)
    flow = b.mapping.dataflow
    piece_a = s.unit_a if s.res_a else s.part_a if flow == "ws" else t.kt * t.a_tile
    piece_b = s.unit_b if s.res_b else s.part_b if flow == "is" else t.kt * t.b_tile
    read_load = read + run * (cols_a * (ddr.a_part / piece_a) + cols_b * (ddr.b_part / piece_b))
    write_load = write + run * (c_cols * (t.mt * t.nt))
    # a C run is one drain BD (a join of every group's tile) at least: load per write byte
    per_write = 1 + run / (b.groups * t.c_tile)
    tail = np.maximum(0, 1 - write_most(arch, b) * (not op.c_on_chip) * per_write / rate)
    loads = np.maximum((read_load + write_load) / rate + ends.after_read * tail,
                       np.maximum(read_load / rate + ends.after_read,
                                  np.where(write > 0, ends.first_c + write_load / rate, 0)))
    return np.maximum(plain, loads)


def _compute_bound(arch: Arch, b: StructureBatch, t: _Tiles, c: _CoreMemory, cyc: _CoreCycles, ends: _PipelineEnds):
    """Cycles of the last core to start (``start``): its calls, and the waits its L1 buffers
    impose on them. Say an operand arrives in ``n`` transfers into ``depth`` buffers, the calls of
    each transfer taking ``uses`` cycles in turn: transfer i cannot start before the calls of
    transfer i - depth have freed its buffer, and the transfers follow each other on one channel.
    Two chains follow: every ``depth``-th transfer waits for a buffer (a transfer and its calls
    each, the transfers in between add their calls); or, after the first transfer's calls, the
    remaining n - depth transfers and the last transfer's calls."""
    stream = arch.stream_bytes_per_cycle
    start = ends.last_first_call
    calls = t.mt * t.nt * t.kt
    bound = start + cyc.core_cycles + _lock_cycles(arch, b, t, calls) + ends.c_out
    # each call also acquires and releases every operand it streams; of a transfer's calls, only
    # the first's acquires of the other operands may come before the transfer is in
    operands = _streamed_operands(b.mapping.dataflow)
    lock_call = operands * (arch.lock_acquire_cycles + arch.lock_release_cycles)
    lock_use = (operands - 1) * arch.lock_acquire_cycles
    for moved, size, depth in ((c.core_a, c.l1_a, c.depth_a), (c.core_b, c.l1_b, c.depth_b)):
        n = moved / size
        uses = (ends.call + lock_call) * calls / np.maximum(n, 1) - lock_use  # cycles of the calls one transfer feeds
        xfer = size / stream
        waits = np.floor((n - 1) / depth)
        chained = start + uses + waits * xfer + (n - 1 - waits * (depth - 1)) * uses + ends.c_out
        streamed = start + uses + (n - depth) * xfer + uses + ends.c_out
        bound = np.maximum(bound, np.where(n >= 1, chained, 0))
        bound = np.maximum(bound, np.where(n > depth, streamed, 0))
    return bound


def _streamed_operands(dataflow: str) -> int:
    """Operands each call acquires and releases: both but the one a dataflow holds resident (ws: B,
    is: A; os streams both)."""
    return (dataflow != "is") + (dataflow != "ws")


def _lock_cycles(arch: Arch, b: StructureBatch, t: _Tiles, calls):
    """The lock latencies of the last core's program (``design._program``) after its first call
    starts: every call acquires and releases each operand it streams, every C tile its output
    buffer (C, or the partial sums the next core of a K-split group adds), every resident block
    (ws: B, is: A) its buffer; only the acquires before the first call may overlap the wait for
    its data. (The last core of a K-split group also locks the partial sums it adds; the last core
    to start may be another one.)"""
    acq, rel = arch.lock_acquire_cycles, arch.lock_release_cycles
    flow = b.mapping.dataflow
    streamed = _streamed_operands(flow)
    held = t.nt * (not b.static_b) if flow == "ws" else t.mt if flow == "is" else 0 * t.mt  # resident blocks
    before = streamed * acq + acq + np.where(held > 0, acq, 0)
    return calls * streamed * (acq + rel) + t.mt * t.nt * (acq + rel) + held * (acq + rel) - before


def _shim_column_bound(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, c: _CoreMemory, ddr: _Ddr,
                       ends: _PipelineEnds):
    """Cycles of the busiest shim column: columns differ in bandwidth and in the parts they host,
    so the slowest one bounds the op (padded columns host nothing at infinite bandwidth). Its
    reads end a unit's forwarding, a call and a C drain before the op can; its writes cannot
    start before the first call ends."""
    stream = arch.stream_bytes_per_cycle
    shape = t.one.shape
    # read cycles of column c: hosted_a[c] / rate[c] x A bytes per part + the same for B, as
    # (structures, columns, tiles) at once; the busiest column is their maximum
    per_a, per_b = _undominated(b.hosted_a / b.read_rate, b.hosted_b / b.read_rate)
    a_part, b_part = (np.broadcast_to(x, shape) for x in (ddr.a_part, ddr.b_part))
    read = per_a[:, :1] * a_part + per_b[:, :1] * b_part
    for col in range(1, per_a.shape[1]):
        np.maximum(read, per_a[:, col:col + 1] * a_part + per_b[:, col:col + 1] * b_part, out=read)
    # every column writes its producers' C at its own write rate: the slowest rate bounds
    finite = np.isfinite(b.write_rate)
    per_c = np.where(finite, b.groups / np.minimum(np.where(finite, b.write_rate, 1.0), stream), 0.0).max(
        axis=1, keepdims=True) * (not op.c_on_chip)
    write = c.core_c * per_c
    return np.maximum(np.where(read > 0, read + ends.after_read, 0), np.where(write > 0, ends.first_c + write, 0))


def _undominated(per_a, per_b):
    """Per structure (row), the columns whose A and B read cycles per byte no other column's
    match or exceed in both: parts are never negative, so only they can be the busiest column of
    any tile. As (S, P) arrays, rows padded with their first such column (most rows keep one or two
    of eight columns, which is what makes the busiest-column bound cheap)."""
    a_i, a_j = per_a[:, :, None], per_a[:, None, :]  # [s, i, j]: column i against column j
    b_i, b_j = per_b[:, :, None], per_b[:, None, :]
    covers = (a_j >= a_i) & (b_j >= b_i)
    earlier = np.arange(per_a.shape[1])[None, :] < np.arange(per_a.shape[1])[:, None]  # [i, j]: j < i
    # i is dropped when some j covers it and is larger in one, or is the same and comes first
    dropped = (covers & ((a_j > a_i) | (b_j > b_i) | earlier[None])).any(axis=2)
    order = np.argsort(dropped, axis=1, kind="stable")[:, :max(1, int((~dropped).sum(axis=1).max()))]
    kept = ~np.take_along_axis(dropped, order, 1)
    out_a, out_b = (np.take_along_axis(x, order, 1) for x in (per_a, per_b))
    return np.where(kept, out_a, out_a[:, :1]), np.where(kept, out_b, out_b[:, :1])


def _dma_bound(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, s: _Streams, c: _CoreMemory, mem: _MemTile,
               ddr: _Ddr, ends: _PipelineEnds):
    """Cycles of the busiest DMA channel of each kind: it moves its bytes at the stream rate and
    also spends BD chaining and lock cycles on every transfer, which bytes alone do not show;
    nor can it start before its first buffer is whole upstream, or end the op before what its
    last buffer feeds has run downstream."""
    stream = arch.stream_bytes_per_cycle
    mt, nt = t.mt, t.nt
    per_bd = arch.bd_chain_cycles + arch.lock_acquire_cycles + arch.lock_release_cycles
    mem_out_a = s.units_a * mem.send_bds_a if s.res_a else c.core_a / mem.unit_a
    mem_out_b = s.units_b * mem.send_bds_b if s.res_b else c.core_b / mem.unit_b
    drain = 0 if op.c_on_chip else 1
    unit_in_a = 0 if op.a_on_chip else mem.unit_a / stream  # before the mem tile can send A
    last_call = ends.call + ends.c_out  # after a core's last input byte
    channels = [(c.core_a, c.core_a / c.l1_a, unit_in_a, last_call),  # core A in
                (c.core_c, mt * nt, ends.first_c, ends.c_out - t.c_tile / stream),  # core C out
                (c.core_a, mem_out_a, unit_in_a, last_call),  # mem tile A out
                (drain * b.groups * c.core_c, drain * b.groups * mt * nt, ends.first_c + t.c_tile / stream, 0),
                (mem.ha * ddr.a_part, mem.ha * ddr.a_part / mem.unit_a, 0, ends.after_unit_a)]  # mem tile A in
    if not b.static_b:
        unit_in_b = mem.unit_b / stream
        channels += [(c.core_b, c.core_b / c.l1_b, unit_in_b, last_call), (c.core_b, mem_out_b, unit_in_b, last_call),
                     (mem.hb * ddr.b_part, mem.hb * ddr.b_part / mem.unit_b, 0, ends.after_unit_b)]
    busiest = None
    for nbytes, count, before, after in channels:  # before + bytes / stream + per_bd * count + after
        cycles = np.add(before, np.divide(nbytes, stream))
        cycles = np.add(cycles, np.multiply(per_bd, count), out=_fits(cycles, count))
        cycles = np.add(cycles, after, out=_fits(cycles, after))
        cycles = np.where(np.greater(nbytes, 0), cycles, 0)
        busiest = cycles if busiest is None else np.maximum(busiest, cycles, out=_fits(busiest, cycles))
    return busiest


def _fits(out, other):
    """``out`` when a result with ``other`` can be written into it in place, else None."""
    return out if np.ndim(out) and np.broadcast_shapes(np.shape(out), np.shape(other)) == out.shape else None


def _energy(op: Matmul, b: StructureBatch, arch: Arch, t: _Tiles, c: _CoreMemory, ddr: _Ddr, m, k, n) -> tuple:
    """Padded MACs (padding costs energy too), partial-sum bytes, mem-to-core bytes and the
    closed-form energy in pJ, which ranks candidates whose bounds tie."""
    cores = b.cols * (b.groups * b.pk)
    padded_macs = (b.pm * m * t.mt) * (b.pk * k * t.kt) * (b.pn * n * t.nt)
    producers = b.cols * b.groups
    psum_bytes = (b.pk - 1) * producers * t.mt * t.nt * c.psum_tile
    mem_compute = cores * (c.core_a + c.core_b) + ddr.write
    e = arch.pj_per_byte
    ddr_read, ddr_write = ddr.read, ddr.write
    energy = (padded_macs * op.macs_scale * arch.pj_per_mac.get(op.dtype, 0.0)
              + (ddr_read + ddr_write) * e.get("ddr", 0.0) + (ddr_read + ddr_write) * e.get("shim_mem", 0.0)
              + mem_compute * e.get("mem_compute", 0.0) + psum_bytes * e.get("compute_compute", 0.0))
    return padded_macs, psum_bytes, mem_compute, energy


def _useful(op: Matmul, mp: Mapping, reps_a, reps_b):
    """False where an L2 choice re-sends nothing (the same candidate without it is enumerated), or
    where A is on chip already."""
    ok = np.ones(np.shape(reps_a), bool)
    if "a" in mp.l2:
        ok &= (np.asarray(reps_a) > 1) & (not op.a_on_chip)
    if "b" in mp.l2:
        ok &= np.asarray(reps_b) > 1
    return ok


def problems(ev: dict, arch: Arch, static_b: bool) -> list[tuple[np.ndarray, str]]:
    """(violated mask, reason template) for every capacity and resource limit of a candidate;
    ``reason_text`` fills a template with one candidate's numbers."""
    mem, core = arch.mem, arch.compute
    masks = [
        ev["l1_bytes"] > core.memory_bytes,
        ev["l2_bytes"] > mem.memory_bytes,
        ev["mem_bds"] > mem.bd_count,
        np.maximum(ev["mem_unit_a"], ev["mem_unit_b"]) / 4 >= 2 ** mem.bd_length_bits,
        np.maximum(ev["l1_a"], ev["l1_b"]) / 4 >= 2 ** core.bd_length_bits,
        ev["mem_mm2s"] > mem.mm2s_channels,
        ev["mem_s2mm"] > mem.s2mm_channels,
        ev["ports_down"] > arch.stream_ports_down,
        ev["ports_up"] > arch.stream_ports_up,
        ev["mem_locks"] > mem.lock_count,
        (np.asarray(ev["nt"]) > 1) & static_b,
    ]
    return list(zip(masks, problem_templates(arch)))


def problem_templates(arch: Arch) -> list[str]:
    """The reason template of each limit ``problems`` checks, in its order (the compiled closed
    form, ``fastsim.kernels.closed_form``, reports a limit by its index here)."""
    mem, core = arch.mem, arch.compute
    return [
        f"core memory: needs {{l1_bytes}} bytes; {core.memory_bytes} available",
        f"mem tile: needs {{l2_bytes}} bytes; {mem.memory_bytes} available",
        f"mem tile: needs {{mem_bds}} BDs; {mem.bd_count} available",
        f"mem tile BD length field holds < 2**{mem.bd_length_bits} words",
        f"compute tile BD length field holds < 2**{core.bd_length_bits} words",
        f"mem tile: needs {{mem_mm2s}} MM2S channels; {mem.mm2s_channels} available",
        f"mem tile: needs {{mem_s2mm}} S2MM channels; {mem.s2mm_channels} available",
        f"stream ports: {{ports_down}} streams down one column; {arch.stream_ports_down} available",
        f"stream ports: {{ports_up}} streams up one column; {arch.stream_ports_up} available",
        f"mem tile: needs {{mem_locks}} locks; {mem.lock_count} available",
        "static weights: the B slice of a core must be resident for the whole op ({nt} rounds needed)",
    ]


def reason_text(template: str, plan: dict) -> str:
    """Fill a problem template with one candidate's numbers."""
    keys = ("l1_bytes", "l2_bytes", "mem_bds", "nt", "mem_mm2s", "mem_s2mm", "ports_down", "ports_up", "mem_locks")
    return template.format(**{k: f"{plan[k]:.0f}" for k in keys if "{" + k + "}" in template})


def control_counts_of(op: Matmul, b: StructureBatch, arch: Arch, m, k, n) -> ControlCounts:
    """``dispatch.control_counts`` of every (structure, tile) of ``b`` without building a design: the
    runtime-sequence set-up ``design.matmul_design`` lays out, counted from the structure (hosted
    parts per column, columns, K-split groups, cores, on-chip operands) and, for mem-tile BDs, from
    the tile (``_mem_tile``: a resident operand's buffers, one or ``buffers`` deep, and its re-sends
    chunked into ``cdiv(reps, bd_iterations_max)`` BDs each). Each field broadcasts to (S, T).
    Exact: the design is built from these same closed-form numbers (property-tested against
    ``control_counts(matmul_design(...))``), so it is a lower bound of a candidate's control too."""
    t = _tiles(op, b, m, k, n)
    s = _streams(op, b.mapping, t)
    mem = _mem_tile(op, b, arch, t, s, _core_memory(op, b, arch, t, m, n))
    a_chip, c_chip = bool(op.a_on_chip), bool(op.c_on_chip)
    ha, hb = b.hosted_a, b.hosted_b  # parts per column (S, columns); 0 past a structure's columns

    def total(per_column):
        return per_column.sum(axis=1, keepdims=True)

    parts_a, parts_b = total(ha), total(hb)
    cols_a, cols_b = total(ha > 0), total(hb > 0)  # columns whose shim streams (and mem tile fills) A, B
    # per column: a join BD in and one out per group and C buffer (a kept C: one receive BD per
    # group, pushed)
    join_bds, join_chains = (1, 0) if c_chip else (2 * b.mapping.c_buffers, 1)
    bds_a = parts_a if a_chip else parts_a * mem.depth_a * (1 + mem.send_bds_a)  # fill + sends per buffer
    bds_b = parts_b * mem.depth_b * (1 + mem.send_bds_b)
    one = t.one
    return ControlCounts(
        shim_tasks=(0 if a_chip else cols_a) + cols_b + (0 if c_chip else b.cols) * one,
        tile_pushes=(parts_a if a_chip else 0) + (b.cols * b.groups if c_chip else 0) * one,
        syncs=b.cols * (b.groups if c_chip else 1) * one,
        mem_bds=bds_a + bds_b + join_bds * b.cols * b.groups,
        # fill chain per operand a column hosts, a send chain per part, and the join's chains
        mem_starts=(0 if a_chip else cols_a + parts_a) + cols_b + parts_b
        + join_chains * b.cols * (b.groups + 1) * one,
        mem_locks=(0 if a_chip else 2 * parts_a) + 2 * parts_b + (0 if c_chip else 2) * b.cols * b.groups * one,
        cores=b.cols * b.groups * b.pk * one)


def plan_one(op: Matmul, s: Structure, arch: Arch, tile: tuple[int, int, int]) -> dict:
    """``evaluate`` for one tile, as plain Python numbers (``bounds`` stays an array)."""
    return plan_many(op, [(s, tile)], arch)[0]


def plan_many(op: Matmul, pairs: list[tuple[Structure, tuple[int, int, int]]], arch: Arch) -> list[dict]:
    """``plan_one`` of each (structure, tile) pair, with one ``evaluate`` per group of pairs that
    can share a batch (``stack``), each pair a row of its (S, 1) arrays: a single plan's time is
    numpy's per-call overhead, so a search planning the rows it simulates or reports pays it a few
    times instead of once per row. Every value is computed element-wise, so a row's numbers are
    its own plan's (tested)."""
    out: list[dict] = [{} for _ in pairs]
    groups: dict[tuple, list[int]] = {}
    for i, (s, _) in enumerate(pairs):
        mp = s.mapping
        groups.setdefault((mp.dataflow, mp.order, mp.l2, mp.buffers, mp.k_panel, mp.c_buffers, s.static_b),
                          []).append(i)
    for rows in groups.values():
        m, k, n = (np.array([[pairs[i][1][axis]] for i in rows], np.int64) for axis in range(3))
        shape = (len(rows), 1)
        for key, v in evaluate(op, stack([pairs[i][0] for i in rows], arch), arch, m, k, n).items():
            v = np.asarray(v)
            if key == "bounds":
                v = np.broadcast_to(v, (len(RESOURCES), *shape))
                for j, i in enumerate(rows):
                    out[i][key] = v[:, j, 0].copy()
                continue
            v = np.broadcast_to(v, shape)
            for j, i in enumerate(rows):
                x = v[j, 0].item()
                out[i][key] = int(x) if isinstance(x, float) and x.is_integer() else x
    return out


def check(op: Matmul, mp: Mapping, arch: Arch, planned: tuple | None = None) -> tuple[Structure, dict]:
    """Plan one candidate; raise ConfigError with every violated limit if it is illegal.
    ``planned``: its (structure, plan) when the caller made them already (a search has)."""
    from ..errors import ConfigError

    s = structure(op, mp, arch) if planned is None else planned[0]
    if isinstance(s, str):
        raise ConfigError([s], f"mapping {mp.label()}")
    if min(mp.tile) < 1:
        raise ConfigError([f"tile = {mp.tile}: every size must be >= 1"], f"mapping {mp.label()}")
    plan = plan_one(op, s, arch, mp.tile) if planned is None else planned[1]
    broken = [reason_text(why, plan) for bad, why in problems(plan, arch, s.static_b) if bool(np.asarray(bad))]
    if broken:
        raise ConfigError(broken, f"mapping {mp.label()}")
    return s, plan
