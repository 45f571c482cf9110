"""Closed-form arithmetic of a mapping: loop counts, bytes per buffer and level, capacity and
resource checks, and lower bounds on cycles.

Every function takes the tile sizes ``m, k, n`` as numpy arrays (the search evaluates a whole grid of
tiles per structure at once) or as plain integers (the design builder plans one candidate); the
rest of the mapping is scalar. The design builder lays out exactly the buffers, BDs and streams
counted here, so the legality checks and the simulated design cannot disagree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arch import Arch
from .space import Matmul, Mapping

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
    pm, pn = {"2d": (groups, cols), "n": (1, cols * groups), "m": (cols * groups, 1)}[mp.split]
    # parts needed by one column are hosted by that column's mem tile; parts every column needs
    # are hosted round-robin (one mem tile broadcasts each along the core rows)
    a_parts, b_parts = pm * pk, pk * pn
    a_local, b_local = mp.split == "m", mp.split in ("2d", "n")
    hosted_a = _hosting(a_parts, cols, a_local)
    hosted_b = _hosting(0 if op.static_b else b_parts, cols, b_local)
    return Structure(mp, cols, rows, groups, pm, pn, pk, hosted_a, hosted_b, options[key], key, op.static_b)


def _hosting(parts: int, cols: int, local: bool) -> tuple[int, ...]:
    if local:  # parts split evenly: column c hosts its own
        return tuple(parts // cols for _ in range(cols))
    return tuple(len(range(c, parts, cols)) for c in range(cols))


def matmul_cycles(op: Matmul, key: str, arch: Arch, m, k, n):
    """Cycles of one m x k x n microkernel call (same arithmetic as ``fastsim.cost``)."""
    if arch.core_mesh_rows:
        from ..cost import matmul_cycles as one

        f = np.vectorize(lambda a, b, c: one(int(a), int(b), int(c), key, arch, op.kernel_efficiency,
                                             op.kernel_overhead_cycles, op.macs_scale))
        return f(m, k, n).astype(np.float64)
    r, s_, t = arch.mmul_shapes.get(key, (1, 1, 1))
    m, k, n = cdiv(m, r) * r, cdiv(k, s_) * s_, cdiv(n, t) * t
    macs = np.ceil(np.asarray(m * k * n, dtype=np.float64) * op.macs_scale)
    rate = arch.macs_per_cycle[key] * op.kernel_efficiency
    return np.maximum(1, np.ceil(macs / rate) + op.kernel_overhead_cycles)


def evaluate(op: Matmul, s: Structure, arch: Arch, m, k, n) -> dict:
    """Everything the search and the design need for tiles ``(m, k, n)`` under structure ``s``."""
    mp = s.mapping
    m, k, n = (np.asarray(x, dtype=np.int64) for x in (m, k, n))
    mt, nt, kt = cdiv(op.m, s.pm * m), cdiv(op.n, s.pn * n), cdiv(op.k, s.pk * k)
    a_tile, b_tile = words(m * k * op.a_elem_bytes), words(k * n * op.b_elem_bytes)
    c_tile = words(m * n * op.c_elem_bytes)
    flow = mp.dataflow
    # per part: the whole operand slice, how often it is streamed, and its repeated block (unit)
    part_a, part_b = mt * kt * a_tile, nt * kt * b_tile
    reps_a = nt if flow in ("os", "ws") else np.ones_like(mt)
    reps_b = mt if flow in ("os", "is") else np.ones_like(nt)
    if flow == "os" and mp.order == "m":
        unit_a, units_a, unit_b, units_b = kt * a_tile, mt, part_b, np.ones_like(nt)
    elif flow == "os":
        unit_a, units_a, unit_b, units_b = part_a, np.ones_like(mt), kt * b_tile, nt
    else:
        unit_a, units_a, unit_b, units_b = part_a, np.ones_like(mt), part_b, np.ones_like(nt)
    res_a, res_b = "a" in mp.l2, "b" in mp.l2
    # what one core receives: tiles, or resident blocks (is: A block, ws: B block)
    l1_a = kt * a_tile if flow == "is" else a_tile
    l1_b = kt * b_tile if flow == "ws" else b_tile
    core_a = mt * kt * a_tile * (1 if flow == "is" else nt)
    core_b = 0 * nt if op.static_b else nt * kt * b_tile * (1 if flow == "ws" else mt)
    core_c = mt * nt * c_tile
    # core memory: streamed tiles double-buffered; a resident block double-buffered if it fits
    # the last core of a K-split group holds C tiles, the others partial-sum buffers
    psum_tile = m * n * ACC_BYTES
    fixed = np.maximum(2 * c_tile, 2 * psum_tile) if s.pk > 1 else 2 * c_tile
    depth_a = 2 * np.ones_like(m)
    depth_b = (1 if op.static_b else 2) * np.ones_like(m)
    l1 = fixed + depth_a * l1_a + depth_b * l1_b
    over = l1 > arch.compute.memory_bytes
    if flow == "is":
        depth_a = np.where(over, 1, depth_a)
    if flow == "ws" and not op.static_b:
        depth_b = np.where(over, 1, depth_b)
    l1 = fixed + depth_a * l1_a + depth_b * l1_b
    # mem tiles: resident units (double-buffered when several and they fit) or forwarded L1 units
    ha, hb = max(s.hosted_a), max(s.hosted_b)
    mdepth_a = np.where(units_a > 1, 2, 1) if res_a else 2 * np.ones_like(m)
    mdepth_b = np.where(units_b > 1, 2, 1) if res_b else 2 * np.ones_like(m)
    mem_unit_a = unit_a if res_a else l1_a
    mem_unit_b = unit_b if res_b else l1_b
    join = 2 * s.groups * c_tile

    def mem_bytes(da, db):
        return ha * da * mem_unit_a + hb * db * mem_unit_b + join

    l2 = mem_bytes(mdepth_a, mdepth_b)
    shrink = l2 > arch.mem.memory_bytes
    if res_a:
        mdepth_a = np.where(shrink, 1, mdepth_a)
    if res_b:
        mdepth_b = np.where(shrink, 1, mdepth_b)
    l2 = mem_bytes(mdepth_a, mdepth_b)
    itmax = arch.bd_iterations_max
    send_bds_a = cdiv(reps_a, itmax) if res_a else np.ones_like(m)
    send_bds_b = cdiv(reps_b, itmax) if res_b else np.ones_like(m)
    mem_bds = (ha * mdepth_a * (1 + send_bds_a) + hb * mdepth_b * (1 + send_bds_b)
               + 4 * s.groups)
    # DDR traffic: each part once if resident in L2, else once per repetition
    ddr_a_part = part_a * np.where(res_a, 1, reps_a)
    ddr_b_part = 0 * nt if op.static_b else part_b * np.where(res_b, 1, reps_b)
    ddr_read = sum(s.hosted_a) * ddr_a_part + sum(s.hosted_b) * ddr_b_part
    ddr_write = s.producers * core_c
    # compute: microkernel + datapath conversion + dequantization per call, partial-sum adds
    # a call reads A and B while it computes and reads and writes its C tile around it
    load, store = arch.core_load_bytes_per_cycle, arch.core_store_bytes_per_cycle
    mm = (np.maximum(matmul_cycles(op, s.macs_key, arch, m, k, n), np.ceil((a_tile + b_tile) / load))
          + np.ceil(c_tile / load) + np.ceil(c_tile / store))
    conv = np.ceil((m * k + k * n) * s.conv_cycles_per_elem)
    cast = np.ceil(k * n * op.cast_cycles_per_weight)
    add = np.ceil(m * n / arch.accumulate_elems_per_cycle) if s.pk > 1 else 0 * m
    core_cycles = mt * nt * (kt * (mm + conv + cast) + add)
    # lower bounds (cycles) per resource
    stream = arch.stream_bytes_per_cycle
    col_rates_r = np.array(arch.shim_read_bytes_per_cycle[mp.col0:mp.col0 + s.cols])
    col_rates_w = np.array(arch.shim_write_bytes_per_cycle[mp.col0:mp.col0 + s.cols])
    shim_col = np.zeros(np.broadcast(m, k, n).shape)
    for c in range(s.cols):
        read = s.hosted_a[c] * ddr_a_part + s.hosted_b[c] * ddr_b_part
        shim_col = np.maximum(shim_col, read / col_rates_r[c])
        shim_col = np.maximum(shim_col, s.groups * core_c / min(col_rates_w[c], stream))
    # every DMA channel moves its bytes at the stream rate and also spends BD chaining and lock
    # cycles on every transfer: (bytes, transfers) per busiest channel of each kind
    per_bd = arch.bd_chain_cycles + arch.lock_acquire_cycles + arch.lock_release_cycles
    mem_out_a = units_a * send_bds_a if res_a else core_a / l1_a
    mem_out_b = units_b * send_bds_b if res_b else core_b / l1_b
    channels = [(core_a, core_a / l1_a), (core_c, mt * nt), (core_a, mem_out_a),
                (s.groups * core_c, s.groups * mt * nt),
                (ha * ddr_a_part, ha * ddr_a_part / mem_unit_a)]
    if not op.static_b:
        channels += [(core_b, core_b / l1_b), (core_b, mem_out_b), (hb * ddr_b_part, hb * ddr_b_part / mem_unit_b)]
    dma = np.maximum.reduce([nbytes / stream + per_bd * count for nbytes, count in channels])
    ddr = (ddr_read + ddr_write) / arch.ddr_bytes_per_cycle
    bounds = np.stack(np.broadcast_arrays(core_cycles, ddr, shim_col, dma)).astype(np.float64)
    cores = s.cols * s.rows
    padded_macs = (s.pm * m * mt) * (s.pk * k * kt) * (s.pn * n * nt)
    psum_bytes = (s.pk - 1) * s.producers * mt * nt * psum_tile
    mem_compute = cores * (core_a + core_b) + ddr_write
    e = arch.pj_per_byte
    energy = (padded_macs * op.macs_scale * arch.pj_per_mac.get(op.dtype, 0.0)
              + (ddr_read + ddr_write) * e.get("ddr", 0.0) + (ddr_read + ddr_write) * e.get("shim_mem", 0.0)
              + mem_compute * e.get("mem_compute", 0.0) + psum_bytes * e.get("compute_compute", 0.0))
    return dict(
        mt=mt, nt=nt, kt=kt, a_tile=a_tile, psum_tile=psum_tile, b_tile=b_tile, c_tile=c_tile,
        l1_a=l1_a, l1_b=l1_b, depth_a=depth_a, depth_b=depth_b, l1_bytes=l1,
        unit_a=unit_a, unit_b=unit_b, units_a=units_a, units_b=units_b, reps_a=reps_a, reps_b=reps_b,
        mem_unit_a=mem_unit_a, mem_unit_b=mem_unit_b, mem_depth_a=mdepth_a, mem_depth_b=mdepth_b,
        l2_bytes=l2, mem_bds=mem_bds, send_bds_a=send_bds_a, send_bds_b=send_bds_b,
        part_a=part_a, part_b=part_b, ddr_a_part=ddr_a_part, ddr_b_part=ddr_b_part,
        ddr_read_bytes=ddr_read, ddr_write_bytes=ddr_write,
        shim_mem_bytes=ddr_read + ddr_write,
        mem_compute_bytes=mem_compute, psum_bytes=psum_bytes, energy_pj=energy,
        transfers=core_a / l1_a + core_b / l1_b + mt * nt,
        matmul_cycles=mm, conversion_cycles=conv, cast_cycles=cast, add_cycles=add,
        core_cycles=core_cycles, bounds=bounds, lower_bound_cycles=bounds.max(axis=0),
        padded_macs=padded_macs, padding_waste=padded_macs / max(1, op.macs) - 1,
        useful=_useful(mp, reps_a, reps_b),
    )


def _useful(mp: Mapping, reps_a, reps_b):
    """False where an L2 choice re-sends nothing (the same candidate without it is enumerated)."""
    ok = np.ones(np.shape(reps_a), bool)
    if "a" in mp.l2:
        ok &= np.asarray(reps_a) > 1
    if "b" in mp.l2:
        ok &= np.asarray(reps_b) > 1
    return ok


def problems(s: Structure, ev: dict, arch: Arch) -> list[tuple[np.ndarray, str]]:
    """(violated mask, reason) for every capacity and resource limit a candidate must meet."""
    ha, hb = max(s.hosted_a), max(s.hosted_b)
    out = [
        (ev["l1_bytes"] > arch.compute.memory_bytes,
         f"core memory: needs {{l1_bytes}} bytes; {arch.compute.memory_bytes} available"),
        (ev["l2_bytes"] > arch.mem.memory_bytes,
         f"mem tile: needs {{l2_bytes}} bytes; {arch.mem.memory_bytes} available"),
        (ev["mem_bds"] > arch.mem.bd_count, f"mem tile: needs {{mem_bds}} BDs; {arch.mem.bd_count} available"),
        (np.maximum(ev["mem_unit_a"], ev["mem_unit_b"]) / 4 >= 2 ** arch.mem.bd_length_bits,
         f"mem tile BD length field holds < 2**{arch.mem.bd_length_bits} words"),
        (np.maximum(ev["l1_a"], ev["l1_b"]) / 4 >= 2 ** arch.compute.bd_length_bits,
         f"compute tile BD length field holds < 2**{arch.compute.bd_length_bits} words"),
    ]
    limits = [
        (ha + hb + 1 > arch.mem.mm2s_channels,
         f"mem tile: needs {ha + hb + 1} MM2S channels; {arch.mem.mm2s_channels} available"),
        ((ha > 0) + (hb > 0) + s.groups > arch.mem.s2mm_channels,
         f"mem tile: needs {(ha > 0) + (hb > 0) + s.groups} S2MM channels; {arch.mem.s2mm_channels} available"),
        (ha + hb > arch.stream_ports_down,
         f"stream ports: {ha + hb} streams down one column; {arch.stream_ports_down} available"),
        (s.groups > arch.stream_ports_up,
         f"stream ports: {s.groups} streams up one column; {arch.stream_ports_up} available"),
        (2 * ha + 2 * hb + 2 * s.groups > arch.mem.lock_count,
         f"mem tile: needs {2 * ha + 2 * hb + 2 * s.groups} locks; {arch.mem.lock_count} available"),
    ]
    shape = np.shape(ev["l1_bytes"])
    out += [(np.full(shape, bad), why) for bad, why in limits]
    static = (np.asarray(ev["nt"]) > 1) if s.static_b else np.full(shape, False)
    out.append((static, "static weights: the B slice of a core must be resident for the whole op "
                        "({nt} rounds needed)"))
    return out


def reason_text(template: str, plan: dict) -> str:
    """Fill a problem template with one candidate's numbers."""
    keys = ("l1_bytes", "l2_bytes", "mem_bds", "nt")
    return template.format(**{k: f"{plan[k]:.0f}" for k in keys if "{" + k + "}" in template})


def plan_one(op: Matmul, s: Structure, arch: Arch, tile: tuple[int, int, int]) -> dict:
    """``evaluate`` for one tile, as plain Python numbers (``bounds`` stays an array)."""
    out = {}
    for key, v in evaluate(op, s, arch, *tile).items():
        if np.ndim(v) == 0:
            v = np.asarray(v).item()
            v = int(v) if isinstance(v, float) and v.is_integer() else v
        out[key] = v
    return out


def check(op: Matmul, mp: Mapping, arch: Arch) -> tuple[Structure, dict]:
    """Plan one candidate; raise ConfigError with every violated limit if it is illegal."""
    from ..errors import ConfigError

    s = structure(op, mp, arch)
    if isinstance(s, str):
        raise ConfigError([s], f"mapping {mp.label()}")
    if min(mp.tile) < 1:
        raise ConfigError([f"tile = {mp.tile}: every size must be >= 1"], f"mapping {mp.label()}")
    plan = plan_one(op, s, arch, mp.tile)
    broken = [reason_text(why, plan) for bad, why in problems(s, plan, arch) if bool(np.asarray(bad))]
    if broken:
        raise ConfigError(broken, f"mapping {mp.label()}")
    return s, plan
