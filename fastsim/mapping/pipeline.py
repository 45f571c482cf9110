"""Concurrent groups on disjoint columns: merged designs and token-block pipelines.

``merge`` puts independent designs that use disjoint tiles into one design, so that the engine
runs them at the same time (sharing only what the array shares: the DDR interface). ``pipeline``
chains stages of such designs over token blocks, the way a spatial design streams a prefill:

- every stage design is built for one block, on its own columns, with its activation input
  already in its mem tiles (``a_on_chip`` / ``x_on_chip``) and its output kept there
  (``c_on_chip`` / ``y_on_chip``); its cores loop once per block;
- a stage's kept output is handed to the next stage's mem tiles by a mem-tile to mem-tile DMA
  transfer (a free MM2S of the producer's mem tile routed to a free S2MM of a consumer's), tile by
  tile as the producer kept it: on-chip bytes, no DDR;
- the runtime sequence runs in rounds: in round r stage i computes block r - 2i and the hand-off
  after it moves block r - 2i - 1; every round ends with the waits of everything it started (a
  barrier, as a host-synchronised pipeline has). Buffers on both sides of a hand-off are doubled
  (the producer writes the next block while the hand-off reads the last one).

Each byte crosses from one stage's mem tiles to the next once; how the bytes are then laid out
across the consumer's mem tiles (a re-distribution when the two stages split the tensor
differently) is not modelled beyond that transfer.
"""
from __future__ import annotations

from itertools import combinations

from ..design import MM2S, S2MM, Acquire, Design, Loop, Push, Release, Tile, Wait, mm2s, s2mm
from ..errors import ConfigError


def _tiles(d: Design) -> set[Tile]:
    out = {b.tile for b in d.buffers if b.tile is not None} | {lk.tile for lk in d.locks}
    out |= {bd.channel.tile for bd in d.bds} | set(d.cores)
    out |= {r.src.tile for r in d.routes} | {c.tile for r in d.routes for c in r.dsts}
    return out


def _columns(d: Design) -> set[int]:
    return {t.col for t in _tiles(d)}


class _Copier:
    """Copies designs into one target design, renumbering buffers, locks and BDs."""

    def __init__(self, target: Design):
        self.d = target

    def add(self, src: Design) -> dict:
        d = self.d
        bufs = {b.id: (d.buffer(b.tile, b.size_bytes, b.name) if b.tile is not None
                       else d.ddr_buffer(b.size_bytes, b.name)) for b in src.buffers}
        locks = {lk.id: d.lock(lk.tile, lk.init, lk.name) for lk in src.locks}

        def lock(spec):
            return None if spec is None else (locks[spec[0].id], spec[1])

        bds = {}
        for b in src.bds:
            bds[b.id] = d.bd(b.channel, bufs[b.buffer.id], b.length_bytes, offset_bytes=b.offset_bytes,
                             dims=b.dims, acquire=lock(b.acquire), release=lock(b.release),
                             compression_ratio=b.compression_ratio, name=b.name, iterations=b.iterations)
        for b in src.bds:
            if b.next is not None:
                bds[b.id].next = bds[b.next.id]
        for r in src.routes:
            d.route(r.src, *r.dsts, packet=r.packet)
        for ch, bd in src.static_chains.items():
            d.start_chain(ch, bds[bd.id])

        def program(ops):
            out = []
            for op in ops:
                if isinstance(op, Acquire):
                    out.append(Acquire(locks[op.lock.id], op.value))
                elif isinstance(op, Release):
                    out.append(Release(locks[op.lock.id], op.value))
                elif isinstance(op, Loop):
                    out.append(Loop(op.count, tuple(program(op.body))))
                else:
                    out.append(op)
            return out

        for tile, ops in src.cores.items():
            d.core_program(tile, *program(ops))
        host = [d.push_op(op.channel, bds[op.bd.id], op.repeat) if isinstance(op, Push) else op for op in src.host]
        return {"host": host, "bds": bds}


def _check_disjoint(designs: list[Design], what: str) -> None:
    problems, owner = [], {}
    for i, d in enumerate(designs):
        if d.arch != designs[0].arch:
            problems.append(f"{what}[{i}] ({d.name}): built for arch {d.arch.name}, not {designs[0].arch.name}")
        for col in sorted(_columns(d)):
            if col in owner and owner[col] != i:
                problems.append(f"{what}[{i}] ({d.name}) and {what}[{owner[col]}] ({designs[owner[col]].name}) "
                                f"both use column {col}: concurrent groups need disjoint columns")
            owner.setdefault(col, i)
    if problems:
        raise ConfigError(problems, "concurrent groups")


def _interleave(hosts: list[list]) -> list:
    """One runtime sequence running several: pushes taken in turn (each sequence keeps its order),
    then every wait. Valid for sequences that wait only at their end (all builders' do)."""
    pushes = [[op for op in h if isinstance(op, Push)] for h in hosts]
    for h in hosts:
        first_wait = next((i for i, op in enumerate(h) if isinstance(op, Wait)), len(h))
        if any(isinstance(op, Push) for op in h[first_wait:]):
            raise ConfigError(["a runtime sequence pushes after a wait: it cannot run concurrently "
                               "(merge needs sequences that wait only at their end)"], "concurrent groups")
    out = []
    longest = max((len(p) for p in pushes), default=0)
    for i in range(longest):
        out += [p[i] for p in pushes if i < len(p)]
    out += [op for h in hosts for op in h if isinstance(op, Wait)]
    return out


def merge(designs: list[Design], name: str = "concurrent") -> Design:
    """Independent designs on disjoint columns as one design: they run at the same time."""
    designs = list(designs)
    if not designs:
        raise ConfigError(["merge needs at least one design"], "concurrent groups")
    _check_disjoint(designs, "design")
    out = Design(designs[0].arch, name, output_on_chip=any(d.output_on_chip for d in designs))
    copier = _Copier(out)
    hosts = [copier.add(d)["host"] for d in designs]
    out.host = _interleave(hosts)
    return out


def _mem_tiles(d: Design, tiles) -> list[Tile]:
    first = d.arch.first_compute_row
    return sorted({t for t in tiles if 0 < t.row < first})


def _pushed(host: list, direction: str, mem_tiles: set[Tile]) -> list[Push]:
    """Host pushes of mem-tile tasks in one direction: S2MM = kept outputs, MM2S = on-chip inputs."""
    return [op for op in host if isinstance(op, Push) and op.channel.tile in mem_tiles
            and op.channel.direction == direction]


def _free(d: Design, tile: Tile, direction: str) -> list[int]:
    used = {bd.channel.index for bd in d.bds if bd.channel.tile == tile and bd.channel.direction == direction}
    used |= {c.index for r in d.routes for c in (r.src, *r.dsts) if c.tile == tile and c.direction == direction}
    kind = d.arch.tile_kind(tile.row)
    n = kind.mm2s_channels if direction == MM2S else kind.s2mm_channels
    return [i for i in range(n) if i not in used]


def pipeline(stages: list[list[Design]], blocks: int, name: str = "pipeline") -> Design:
    """Stages (each a list of concurrent designs, every design built for one token block) run as a
    pipeline over ``blocks`` blocks on disjoint columns, handing activations over through mem tiles
    (see the module docstring). Stage 0 reads its input from DDR and the last stage writes its
    output there, as their designs say."""
    if not isinstance(blocks, int) or blocks < 1:
        raise ConfigError([f"blocks = {blocks!r}: must be an integer >= 1"], "pipeline")
    if not stages or any(not s for s in stages):
        raise ConfigError(["every pipeline stage needs at least one design"], "pipeline")
    flat = [d for s in stages for d in s]
    _check_disjoint(flat, "stage design")
    out = Design(flat[0].arch, name, output_on_chip=any(d.output_on_chip for d in stages[-1]))
    copier = _Copier(out)
    stage_hosts, stage_tiles = [], []
    for s in stages:
        hosts, tiles = [], set()
        for d in s:
            hosts.append(copier.add(d)["host"])
            tiles |= _tiles(d)
        stage_hosts.append(hosts)
        stage_tiles.append(set(_mem_tiles(out, tiles)))
    for tile, ops in list(out.cores.items()):
        out.cores[tile] = [Loop(blocks, tuple(ops))]
    handoffs = [_handoff(out, stage_hosts[i], stage_tiles[i], stage_tiles[i + 1], i)
                for i in range(len(stages) - 1)]
    host = []
    for r in range(blocks + 2 * (len(stages) - 1)):
        active = []
        for i, hosts in enumerate(stage_hosts):
            if 0 <= r - 2 * i < blocks:
                active += hosts
            if i < len(handoffs) and 0 <= r - 2 * i - 1 < blocks:
                active.append(handoffs[i])
        host += _interleave(active)
    out.host = host
    return out


def _handoff(d: Design, producer_hosts: list[list], producer_mem: set[Tile], consumer_mem: set[Tile],
             stage: int) -> list:
    """The runtime sequence of one block's hand-off from a stage's mem tiles to the next stage's
    (building its buffers, BDs and routes in ``d``)."""
    kept = [p for h in producer_hosts for p in _pushed(h, S2MM, producer_mem)]
    if not kept:
        raise ConfigError([f"stage {stage} keeps no output on chip: build its designs with their "
                           "output on chip (c_on_chip / y_on_chip)"], "pipeline")
    targets = []
    for t in sorted(consumer_mem):
        targets += [(t, i) for i in _free(d, t, S2MM)]
    sources = sorted({p.channel.tile for p in kept})
    if not consumer_mem:
        raise ConfigError([f"stage {stage + 1} has no mem tile to receive the hand-off"], "pipeline")
    problems = []
    if len(targets) < len(sources):
        problems.append(f"stage {stage} -> {stage + 1}: {len(sources)} producer mem tiles but only "
                        f"{len(targets)} free S2MM channels on the consumer's mem tiles")
    links = {}
    for j, src in enumerate(sources):
        free_out = _free(d, src, MM2S)
        if not free_out:
            problems.append(f"stage {stage}: mem tile {src} has no free MM2S channel for the hand-off")
            continue
        if j < len(targets):
            links[src] = (mm2s(src, free_out[0]), s2mm(*targets[j]))
    if problems:
        raise ConfigError(problems, "pipeline")
    for out, dst in links.values():
        d.route(out, dst)
    seq, bufs, bds = [], {}, {}
    for p in kept:
        src = p.channel.tile
        out, dst = links[src]
        if src not in bufs:  # the whole block, once on each side (the doubles of the kept buffers)
            size = sum(q.bd.length_bytes * q.repeat for q in kept if q.channel.tile == src)
            bufs[src] = (d.buffer(src, size, f"handoff{stage}_{src.col}_src"),
                         d.buffer(dst.tile, size, f"handoff{stage}_{src.col}_dst"))
        key = (src, p.bd.length_bytes)
        if key not in bds:
            bds[key] = (d.bd(out, bufs[src][0], p.bd.length_bytes, name=f"handoff{stage}_{src.col}_send"),
                        d.bd(dst, bufs[src][1], p.bd.length_bytes, name=f"handoff{stage}_{src.col}_recv"))
        send, recv = bds[key]
        seq += [Push(out, send, p.repeat), Push(dst, recv, p.repeat)]
    seq += [Wait(dst) for _, dst in links.values()]
    return seq


def stage_columns(weights: list[float], columns: int, feasible=None) -> list[int]:
    """Columns per stage (at least one each, all ``columns`` used) that make the slowest stage,
    which sets the pipeline's pace, fastest, taking stage i's time as ``weights[i] / columns_i``;
    ties go to the most even split. Every split is tried (compositions of ``columns``), keeping
    those ``feasible(split)`` accepts."""
    n = len(weights)
    if not 1 <= n <= columns:
        raise ConfigError([f"{n} stages need at least {n} columns; the arch has {columns}"], "pipeline")
    best, best_key = None, None
    for cuts in combinations(range(1, columns), n - 1):
        split = [b - a for a, b in zip((0, *cuts), (*cuts, columns))]
        if feasible is not None and not feasible(split):
            continue
        key = (max(w / c for w, c in zip(weights, split)), max(split) - min(split))
        if best_key is None or key < best_key:
            best, best_key = split, key
    if best is None:
        raise ConfigError([f"no split of {columns} columns over {n} stages lets every stage receive its "
                           "input (too few free mem-tile channels)"], "pipeline")
    return best
