"""Lower one mapped matmul to a Design: the buffers, BDs, locks, routes, core programs and host
runtime sequence that ``plan.evaluate`` counted.

Data paths (per used column ``h``, mlir-aie ObjectFifo patterns):

- each operand part (an A[M-part, K-part] or B[K-part, N-part] slice) is hosted by one mem tile.
  The hosting column's shim streams its parts (A on MM2S1, B on MM2S0) into one mem-tile S2MM that
  deals them round-robin into per-part buffers (distribute); one mem-tile MM2S per part broadcasts
  it to every core that needs it (along a core row, down a column, or to all cores);
- a part resident in L2 is received once and re-sent ``reps`` times by BD iterations; otherwise
  the mem tile forwards L1-sized units and the shim re-reads the part from DDR every repetition;
- the last core of each K-split group sends C tiles to its column's mem tile, which joins them and
  drains them to the shim (ObjectFifo join). Cores of a group hand partial sums to the next core
  through shared memory (neighbour lock hand-off, no DMA), which adds them.
"""
from __future__ import annotations

from ..arch import Arch
from ..design import BD, Acquire, Channel, Compute, Design, Loop, Release, Tile, fifo_endpoint, mm2s, s2mm
from .ddr_runs import shim_bd
from .paths import join_outputs, push_round, stream_rates
from .plan import Structure, check, host_columns
from .space import Mapping, Matmul, local_operands, producer_parts

NOOP_DROPS = ("conversion", "cast")  # kernels a NOOP design leaves out (the rest take 1 cycle), in program order
B_CH, A_CH = 0, 1  # shim MM2S and mem-tile S2MM channel per operand (C drains to shim S2MM0)


def matmul_design(op: Matmul, mp: Mapping, arch: Arch, noop: bool = False, planned: tuple | None = None) -> Design:
    """The design of ``op`` under mapping ``mp``; ``noop`` keeps every byte moving but replaces
    each kernel by a 1-cycle pass (ablation). ``planned``: the mapping's (structure, plan), when the
    caller has them (``plan.check``)."""
    s, ev = check(op, mp, arch, planned)
    d = Design(arch, f"{op.name} {op.m}x{op.k}x{op.n} {mp.label()}")
    consumers = _consumers(d, op, mp, s)
    hosted = _hosted_parts(consumers, mp, arch, s.cols)
    ends, chip_sends = {"A": {}, "B": {}}, {}
    for ci in range(s.cols):
        _operand_paths(d, op, mp, ev, ci, consumers, hosted, ends, chip_sends)
    drains, keeps = _cores(d, op, mp, s, ev, hosted, ends, noop)
    _host_sequence(d, op, mp, ev, hosted, s.groups, drains, chip_sends, keeps)
    return d


def _consumers(d: Design, op: Matmul, mp: Mapping, s: Structure) -> dict[str, dict[int, list[Tile]]]:
    """The core tiles that need each A and B part (static weights need no B path): the split
    decides which parts a core's column and group take, its row in the group the K part."""
    groups, pk = s.groups, s.pk

    def part_ids(ci: int, g: int, j: int) -> tuple[int, int]:
        pm, pn = producer_parts(mp.split, ci, g, groups)
        return pm * pk + j, j * s.pn + pn

    consumers = {"A": {}, "B": {}}  # part -> [core tiles]
    for ci in range(s.cols):
        for g in range(groups):
            for j in range(pk):
                a, b = part_ids(ci, g, j)
                tile = d.compute(mp.col0 + ci, g * pk + j)
                consumers["A"].setdefault(a, []).append(tile)
                if not op.static_b:
                    consumers["B"].setdefault(b, []).append(tile)
    return consumers


def _hosted_parts(consumers: dict, mp: Mapping, arch: Arch, cols: int) -> dict[str, dict[int, list[int]]]:
    """The parts each used column's mem tile hosts, as ``plan`` counted them: a part only one
    column needs stays in that column, a part every column needs goes where the stream split
    deals it."""
    hosted = {key: {h: [] for h in range(cols)} for key in consumers}
    rates = stream_rates(arch, mp.col0, cols)
    for key, local in zip(("A", "B"), local_operands(mp.split)):
        shared = host_columns(len(consumers[key]), rates, mp.stream_split)
        for i, (p, tiles) in enumerate(sorted(consumers[key].items())):
            h = (tiles[0].col - mp.col0) if local else shared[i]
            hosted[key][h].append(p)
    return hosted


def _operand_paths(d: Design, op: Matmul, mp: Mapping, ev: dict, ci: int, consumers: dict, hosted: dict,
                   ends: dict, chip_sends: dict) -> None:
    """The paths of the parts column ``ci``'s mem tile hosts, B's before A's, each part on the
    mem tile's next MM2S: shim -> mem tile (distribute) -> per-part broadcast to cores. An on-chip
    A part is already in its mem tile: the host pushes its sends, no shim transfer runs. Fills
    ``ends`` (each core's endpoint, per operand) and ``chip_sends`` (per on-chip A part)."""
    col = mp.col0 + ci
    memt = d.mem(col)
    out_index = 0
    for key, ch in (("B", B_CH), ("A", A_CH)):
        parts = hosted[key][ci]
        if not parts:
            continue
        if key == "A" and op.a_on_chip:
            for p in parts:
                chip_sends[p] = _onchip_a_part(d, ev, mm2s(memt, out_index), p, consumers[key][p], ends[key])
                out_index += 1
            continue
        locks, bufs = _fill_l2(d, ev, col, ch, key, parts)
        for p in parts:
            _send_part(d, mp, ev, mm2s(memt, out_index), key, p, locks[p], bufs[p], consumers[key][p], ends[key])
            out_index += 1


def _onchip_a_part(d: Design, ev: dict, out: Channel, p: int, tiles: list[Tile], ends: dict) -> BD:
    """An A part a fused producer left in the mem tile, broadcast from its buffer over ``out`` to
    its cores; returns the send BD, which the host pushes."""
    memt = out.tile
    held = d.buffer(memt, ev["chip_a"], f"A{p}_onchip")
    send = d.bd(out, held, ev["l1_a"], name=f"A{p}_send")
    dsts = [s2mm(t, 0) for t in tiles]
    d.route(out, *dsts)
    for t, dst in zip(tiles, dsts):
        ends[t] = fifo_endpoint(d, dst, ev["depth_a"], ev["l1_a"], f"A{p}_{t.col}_{t.row}")
    return send


def _fill_l2(d: Design, ev: dict, col: int, ch: int, key: str, parts: list[int]) -> tuple[dict, dict]:
    """Column ``col``'s mem-tile buffers and locks for the parts of one operand it hosts, filled
    by one S2MM chain that deals the shim's stream into them round-robin (distribute). Returns
    each part's (producer lock, consumer lock) and buffers."""
    memt = d.mem(col)
    x = key.lower()
    unit, depth = ev[f"mem_unit_{x}"], ev[f"mem_depth_{x}"]
    bufs, locks = {}, {}
    for p in parts:
        locks[p] = (d.lock(memt, depth, f"{key}{p}_l2_prod"), d.lock(memt, 0, f"{key}{p}_l2_cons"))
        bufs[p] = [d.buffer(memt, unit, f"{key}{p}_l2_{i}") for i in range(depth)]
    fill = [d.bd(s2mm(memt, ch), bufs[p][i], unit, acquire=(locks[p][0], 1), release=(locks[p][1], 1),
                 name=f"{key}{p}_in{i}") for i in range(depth) for p in parts]
    d.start_chain(s2mm(memt, ch), d.chain(*fill, cyclic=True))
    d.route(mm2s(d.shim(col), ch), s2mm(memt, ch))
    return locks, bufs


def _send_part(d: Design, mp: Mapping, ev: dict, out: Channel, key: str, p: int, locks: tuple, bufs: list,
               tiles: list[Tile], ends: dict) -> None:
    """Broadcast one hosted part over ``out`` to the cores that need it. A part resident in L2 is
    re-sent ``reps`` times by BD iterations (chunked where one BD's iterations wrap), so the shim
    reads it once; otherwise each buffer is sent once per fill."""
    x = key.lower()
    unit, depth, reps = ev[f"mem_unit_{x}"], ev[f"mem_depth_{x}"], ev[f"reps_{x}"]
    resident = x in mp.l2
    prod, cons = locks
    sends = []
    for i in range(depth):
        chunks = _chunks(reps if resident else 1, d.arch.bd_iterations_max)
        for c, its in enumerate(chunks):
            sends.append(d.bd(out, bufs[i], unit, iterations=its,
                              acquire=(cons, 1) if c == 0 else None,
                              release=(prod, 1) if c == len(chunks) - 1 else None,
                              name=f"{key}{p}_send{i}.{c}"))
    d.start_chain(out, d.chain(*sends, cyclic=True))
    core_ch = 0 if key == "A" else 1
    dsts = [s2mm(t, core_ch) for t in tiles]
    d.route(out, *dsts)
    size, core_depth = ev[f"l1_{x}"], ev[f"depth_{x}"]
    for t, dst in zip(tiles, dsts):
        ends[t] = fifo_endpoint(d, dst, core_depth, size, f"{key}{p}_{t.col}_{t.row}")


def _cores(d: Design, op: Matmul, mp: Mapping, s: Structure, ev: dict, hosted: dict, ends: dict,
           noop: bool) -> tuple[list[int], dict]:
    """Per used column, the join of its groups' C tiles (or their on-chip buffers) and every
    core's program, which needs the join's locks. Returns the columns that drain C and each
    column's receive BDs of an on-chip C (empty otherwise)."""
    kernels = _kernels(ev, noop)
    drains, keeps = [], {}
    for ci in range(s.cols):
        c = mp.col0 + ci
        producers = [g * s.pk + s.pk - 1 for g in range(s.groups)]
        drain_ch = len(hosted["A"][ci]) + len(hosted["B"][ci])
        drains.append(c)
        y_locks, keeps[c] = join_outputs(d, c, producers, ev["c_tile"], drain_ch, "C",
                                         keep_bytes=ev["chip_c"] if op.c_on_chip else 0, core_buffers=mp.c_buffers)
        for g in range(s.groups):
            _group_programs(d, op, mp.dataflow, ev, c, g, s.pk, y_locks[g], ends, kernels)
    return drains, keeps


def _kernels(ev: dict, noop: bool) -> tuple:
    """Cycles of the microkernel, the extra kernels run before it, and the partial-sum add: a
    NOOP design keeps one cycle for each and leaves the ``NOOP_DROPS`` kernels out."""
    mm = 1 if noop else ev["matmul_cycles"]
    extra = [] if noop else [Compute(ev[f"{kind}_cycles"], kind) for kind in NOOP_DROPS if ev[f"{kind}_cycles"]]
    add = 1 if noop else max(1, ev["add_cycles"])
    return mm, extra, add


def _group_programs(d: Design, op: Matmul, flow: str, ev: dict, c: int, g: int, pk: int, y_locks: tuple,
                    ends: dict, kernels: tuple) -> None:
    """The cores of one K-split group: each but the last hands its partial sums to the next
    through shared memory (neighbour lock hand-off, no DMA), which adds them; the last sends C
    tiles to the column's join (``y_locks``)."""
    mm, extra, add = kernels
    psum = []
    for j in range(pk):
        tile = d.compute(c, g * pk + j)
        if j < pk - 1:
            free, full = d.lock(tile, 2, f"psum{c}_{g}_{j}_free"), d.lock(tile, 0, f"psum{c}_{g}_{j}_full")
            for i in range(2):
                d.buffer(tile, ev["psum_tile"], f"psum{c}_{g}_{j}_{i}")
            out_locks = (free, full)
        else:
            out_locks = y_locks
        if op.static_b:
            d.buffer(tile, ev["l1_b"], f"B_static_{c}_{tile.row}")
        reduce = (Acquire(psum[-1][1]), Compute(add, "reduce"), Release(psum[-1][0])) if j else ()
        d.core_program(tile, *_program(flow, ev, ends["A"][tile], ends["B"].get(tile), out_locks,
                                       reduce, mm, extra))
        psum.append(out_locks)


def _chunks(reps: int, most: int) -> list[int]:
    """Split ``reps`` re-sends into BD iteration counts of at most ``most``."""
    out = [most] * (reps // most)
    if reps % most:
        out.append(reps % most)
    return out


def _program(flow, ev, a, b, out_locks, reduce, mm, extra) -> list:
    """One core's loop nest; ``out_locks`` = (acquire before accumulating, release when done)."""
    take, give = out_locks
    stream_a = flow != "is"
    stream_b = flow != "ws" and b is not None

    def k_loop():
        acq = ([Acquire(a["cons_lock"])] if stream_a else []) + ([Acquire(b["cons_lock"])] if stream_b else [])
        rel = ([Release(a["prod_lock"])] if stream_a else []) + ([Release(b["prod_lock"])] if stream_b else [])
        return Loop(ev["kt"], (*acq, *extra, Compute(mm, "matmul"), *rel))

    def tile(count):
        return Loop(count, (Acquire(take), k_loop(), *reduce, Release(give)))

    if flow == "os":
        return [tile(ev["mt"] * ev["nt"])]
    if flow == "ws":
        hold = (Acquire(b["cons_lock"]),) if b is not None else ()
        free = (Release(b["prod_lock"]),) if b is not None else ()
        return [Loop(ev["nt"], (*hold, tile(ev["mt"]), *free))]
    return [Loop(ev["mt"], (Acquire(a["cons_lock"]), tile(ev["nt"]), Release(a["prod_lock"])))]


def _steps(mp: Mapping, ev: dict) -> list[tuple[int, int]]:
    """The host's steps as (m tile, n tile) in the order cores consume them (-1: every one)."""
    mt, nt = ev["mt"], ev["nt"]
    if mp.dataflow == "ws":
        return [(-1, j) for j in range(nt)]
    if mp.dataflow == "is":
        return [(i, -1) for i in range(mt)]
    if mp.order == "m":
        return [(i, j) for i in range(mt) for j in range(nt)]
    return [(i, j) for j in range(nt) for i in range(mt)]


def _host_sequence(d: Design, op: Matmul, mp: Mapping, ev: dict, hosted: dict, groups: int, drains: list[int],
                   chip_sends: dict, keeps: dict) -> None:
    """Push each step's transfers on every shim channel, steps in consumption order; a resident
    operand's block is read once, when first needed. On-chip operands are sent (A) or received (C)
    by their mem tiles' channels instead, on tasks pushed the same way. Identical consecutive steps
    are merged and every step's chunks are interleaved over channels (no queue fills while another
    starves)."""
    flow = mp.dataflow
    c_per_step = {"os": 1, "ws": ev["mt"], "is": ev["nt"]}[flow]
    piece = {"a": ev["part_a"] if flow == "ws" else ev["kt"] * ev["a_tile"],
             "b": ev["part_b"] if flow == "is" else ev["kt"] * ev["b_tile"]}
    bds: dict[tuple, object] = {}

    def bd_for(col: int, ch, key: str, length: int):
        if (col, key, length) not in bds:
            bds[(col, key, length)] = shim_bd(d, ch, key, length, f"{key}{col}_ddr", op, mp, ev)
        return bds[(col, key, length)]

    # an operand's entries are the same at every step that sends it (its unit when it is resident in
    # L2, its piece otherwise): made once, in the order the first step makes its BDs (B, A, C)
    sends = {}
    for x, ch in (("b", B_CH), ("a", A_CH)):
        if x == "a" and chip_sends:
            sends[x] = [(chip_sends[p], piece["a"] // ev["l1_a"]) for parts in hosted["A"].values() for p in parts]
            continue
        nbytes = ev[f"unit_{x}"] if x in mp.l2 else piece[x]
        sends[x] = [(bd_for(mp.col0 + ci, mm2s(d.shim(mp.col0 + ci), ch), x.upper(), len(parts) * nbytes), 1)
                    for ci, parts in hosted[x.upper()].items() if parts]
    drained = []
    for col in drains:
        if keeps[col]:
            drained += [(bd, c_per_step) for bd in keeps[col]]
        else:
            drained.append((bd_for(col, s2mm(d.shim(col), 0), "C", groups * ev["c_tile"]), c_per_step))
    seen = {"a": set(), "b": set()}
    rounds = []
    for i, j in _steps(mp, ev):
        entries = []
        for x in ("b", "a"):
            if x in mp.l2 and not (x == "a" and chip_sends):  # a resident unit is read once, when first needed
                unit_id = (i if (flow == "os" and mp.order == "m") else 0) if x == "a" else \
                    (j if (flow == "os" and mp.order == "n") else 0)
                if unit_id in seen[x]:
                    continue
                seen[x].add(unit_id)
            entries += sends[x]
        rounds.append(entries + drained)
    merged = []
    for entries in rounds:
        if merged and [bd for bd, _ in merged[-1][0]] == [bd for bd, _ in entries] and \
                [n for _, n in merged[-1][0]] == [n for _, n in entries]:
            merged[-1][1] += 1
        else:
            merged.append([entries, 1])
    for entries, times in merged:
        push_round(d, [(bd, count * times) for bd, count in entries])
    for col in drains:
        for bd in keeps[col] or [None]:
            d.wait(bd.channel if bd is not None else s2mm(d.shim(col), 0))
