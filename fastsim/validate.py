"""Check a Design against its Arch and report every problem at once (one ConfigError)."""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter

from fastsim.kernels.layout import MAX_LOOP_DEPTH

from .design import BD, MM2S, S2MM, Acquire, Channel, Compute, Design, Loop, Push, Release, Tile, Wait, channel_order
from .errors import Problems


def chain_of(bd: BD) -> tuple[list[BD], bool]:
    """The BDs a chain starting at ``bd`` runs through, and whether it loops forever."""
    seen: list[BD] = []
    ids: set[int] = set()
    cur: BD | None = bd
    while cur is not None:
        if cur.id in ids:
            return seen, True
        ids.add(cur.id)
        seen.append(cur)
        cur = cur.next
    return seen, False


def endless_chains(bds: list[BD]) -> dict[int, bool]:
    """For every BD (by id), whether the chain starting there loops forever: one walk over all
    BDs together (a cyclic chain of L BDs, walked from each of them, would cost L^2)."""
    endless: dict[int, bool] = {}
    for start in bds:
        path, on_path, cur = [], set(), start
        while cur is not None and cur.id not in endless and cur.id not in on_path:
            path.append(cur.id)
            on_path.add(cur.id)
            cur = cur.next
        verdict = cur is not None and (cur.id in on_path or endless[cur.id])
        for i in path:
            endless[i] = verdict
    return endless


def _bd_name(b: BD) -> str:
    """How problems name a BD (formatted only for problems: a design has thousands of BDs)."""
    return f"bd {b.id}" + (f" ({b.name})" if b.name else "")


def validate_design(design: Design) -> None:
    """Raise one ConfigError listing every problem of ``design`` against its arch. The sections
    run in a fixed order and share one record of checked channels, so the same design always
    reports the same problems in the same order, and a bad channel only once."""
    v = _Checker(design.arch, Problems(f"design {design.name!r}"))
    _check_buffers(v, design)
    _check_locks(v, design)
    _check_bds(v, design)
    routed, producer_of = _check_routes(v, design)
    _check_channel_programs(v, design, routed, producer_of)
    _check_cores(v, design)
    v.p.raise_if_any()


class _Checker:
    """The problems found so far and the tile and channel checks every section needs.

    Messages are formatted only for problems: a large design has tens of thousands of checks, so
    the checks take the field's name as a function that builds it."""

    def __init__(self, arch, p: Problems):
        self.arch, self.p = arch, p
        self.checked: dict[Channel, bool] = {}

    def tile_ok(self, tile: Tile, field) -> bool:
        arch = self.arch
        if 0 <= tile.col < arch.columns and 0 <= tile.row < arch.rows:
            return True
        self.p.add(field(), str(tile), f"column must be in 0..{arch.columns - 1}, row in 0..{arch.rows - 1}")
        return False

    def channel_ok(self, ch: Channel, field) -> bool:
        """Checked once per channel (a runtime sequence pushes to the same few channels often)."""
        ok = self.checked.get(ch)
        if ok is None:
            ok = self.checked[ch] = self._channel_ok(ch, field)
        return ok

    def _channel_ok(self, ch: Channel, field) -> bool:
        arch, p = self.arch, self.p
        if not self.tile_ok(ch.tile, field):
            return False
        if ch.direction not in (MM2S, S2MM):
            p.add(field(), str(ch), "direction must be mm2s or s2mm")
            return False
        kind = arch.tile_kind(ch.tile.row)
        n = kind.mm2s_channels if ch.direction == MM2S else kind.s2mm_channels
        if not 0 <= ch.index < n:
            p.add(field(), str(ch), f"{arch.tile_kind_name(ch.tile.row)} tiles have {ch.direction} channels 0..{n - 1}")
            return False
        return True


def _check_buffers(v: _Checker, design: Design) -> None:
    """Buffer sizes, where buffers live, and whether each tile's buffers fit its memory (summed
    first: one tile's overflow is one problem, not one per buffer)."""
    arch, p = v.arch, v.p
    used = Counter()
    for b in design.buffers:
        if b.size_bytes <= 0:  # messages are formatted for problems only (thousands of buffers)
            p.add(f"buffer {b.name}.size_bytes", b.size_bytes, "must be > 0")
        if b.tile is None:
            continue
        if v.tile_ok(b.tile, lambda: f"buffer {b.name}.tile"):
            if arch.tile_kind_name(b.tile.row) == "shim":
                p.add(f"buffer {b.name}.tile", str(b.tile), "shim tiles have no memory; use ddr_buffer() for host memory")
            used[b.tile] += max(b.size_bytes, 0)
    for tile, total in sorted(used.items()):
        cap = arch.tile_kind(tile.row).memory_bytes
        p.over(total <= cap, f"{tile} buffers", total, f"must fit in the tile's {cap} bytes of memory")


def _check_locks(v: _Checker, design: Design) -> None:
    """Lock values, and how many locks each tile holds (counted first, one problem per tile)."""
    arch, p = v.arch, v.p
    per_tile = Counter()
    for lk in design.locks:
        if v.tile_ok(lk.tile, lambda: f"lock {lk.name}.tile"):
            per_tile[lk.tile] += 1
        if not 0 <= lk.init <= arch.lock_max_value:
            p.add(f"lock {lk.name}.init", lk.init, f"must be in 0..{arch.lock_max_value}")
    for tile, n in sorted(per_tile.items()):
        cap = arch.tile_kind(tile.row).lock_count
        p.check(n <= cap, f"{tile} locks", n, f"at most {cap} locks on this tile type")


def _check_bds(v: _Checker, design: Design) -> None:
    """Every BD against its tile kind's DMA, and how many BDs each tile holds at once (counted
    first, one problem per tile): every BD the host does not push is resident throughout; a BD
    the host pushes only while it may still run (``host_bds_at_once``)."""
    arch = v.arch
    bd_per_tile = Counter()
    kinds = {row: (arch.tile_kind_name(row), arch.tile_kind(row)) for row in range(arch.rows)}
    pushed = _host_pushed_bds(design)
    for b in design.bds:
        if not v.channel_ok(b.channel, lambda: f"{_bd_name(b)}.channel"):
            continue
        kind_name, kind = kinds[b.channel.tile.row]
        bd_per_tile[b.channel.tile] += b.id not in pushed
        _check_bd(v, b, kind_name, kind)
    at_once = host_bds_at_once(design, pushed)
    for tile in set(bd_per_tile) | set(at_once):
        bd_per_tile[tile] += at_once.get(tile, 0)
    for tile, n in sorted(bd_per_tile.items()):
        cap = arch.tile_kind(tile.row).bd_count
        v.p.check(n <= cap, f"{tile} BDs", n, f"at most {cap} BDs on this tile type"
                  + (" (host-pushed BDs counted while their tasks may run)" if tile in at_once else ""))


def _host_pushed_bds(design: Design) -> set[int]:
    """Ids of the BDs only the runtime sequence uses: those of its pushed chains that no static
    chain runs."""
    static: set[int] = set()
    for bd in design.static_chains.values():
        static.update(b.id for b in chain_of(bd)[0])
    seen: set[int] = set()  # Push objects (a sequence repeats a few of them many times)
    pushed: set[int] = set()
    for op in design.host:
        if type(op) is Push and id(op) not in seen:
            seen.add(id(op))
            pushed.update(b.id for b in chain_of(op.bd)[0] if b.id not in static)
    return pushed


def host_bds_at_once(design: Design, pushed: set[int] | None = None) -> dict[Tile, int]:
    """The most host-pushed BDs of each tile that are resident at one time. A BD is resident from
    its first push until the first ``Wait`` on its channel after its last push (every task pushed
    to a channel before a wait on it is done when the wait returns, so the host may write another
    BD into its slot, as mlir-aie's ``dma_free_task`` after ``dma_await_task`` does), or to the
    end of the sequence. One pass over the sequence notes where each distinct push first and last
    comes and where each channel's waits are; each BD's residency is then one interval, and a
    tile's peak is the most of its intervals open at once (a sequence repeats a few pushes
    thousands of times: per op only two dict writes)."""
    if pushed is None:
        pushed = _host_pushed_bds(design)
    first: dict[int, int] = {}  # id(Push) -> index of its first and last occurrence
    last: dict[int, int] = {}
    ops: dict[int, Push] = {}
    waits: dict[Channel, list[int]] = {}
    for i, op in enumerate(design.host):
        if type(op) is Push:
            key = id(op)
            if key not in first:
                first[key], ops[key] = i, op
            last[key] = i
        elif isinstance(op, Wait):
            waits.setdefault(op.channel, []).append(i)
    start: dict[int, int] = {}
    stop: dict[int, int] = {}
    bds: dict[int, BD] = {}
    for key, op in ops.items():
        for b in chain_of(op.bd)[0]:
            if b.id in pushed:
                bds[b.id] = b
                start[b.id] = min(start.get(b.id, first[key]), first[key])
                stop[b.id] = max(stop.get(b.id, last[key]), last[key])
    events: dict[Tile, list[tuple[int, int]]] = {}
    for bid, b in bds.items():
        w = waits.get(b.channel, ())
        k = bisect_right(w, stop[bid])
        events.setdefault(b.channel.tile, []).extend(((start[bid], 1), (w[k] if k < len(w) else len(design.host), -1)))
    peak: dict[Tile, int] = {}
    for tile, ev in events.items():
        ev.sort()
        count = best = 0
        for _, step in ev:
            count += step
            best = max(best, count)
        peak[tile] = best
    return peak


def _check_bd(v: _Checker, b: BD, kind_name: str, kind) -> None:
    """One BD's fields, in the order its problems are reported."""
    arch, p = v.arch, v.p
    if b.length_bytes <= 0:
        p.add(f"{_bd_name(b)}.length_bytes", b.length_bytes, "must be > 0")
    if b.offset_bytes < 0:
        p.add(f"{_bd_name(b)}.offset_bytes", b.offset_bytes, "must be >= 0")
    if not 1 <= b.iterations <= arch.bd_iterations_max:
        p.add(f"{_bd_name(b)}.iterations", b.iterations, f"must be in 1..{arch.bd_iterations_max} (BD iteration wrap)")
    words = -(-b.length_bytes // 4)
    if words >= 2**kind.bd_length_bits:
        p.add(f"{_bd_name(b)}.length_bytes", b.length_bytes,
              f"{kind_name} BD length field holds < 2**{kind.bd_length_bits} words")
    if kind_name == "shim":
        if b.buffer.tile is not None:
            p.add(f"{_bd_name(b)}.buffer", b.buffer.name, "shim BDs address DDR buffers")
    elif b.buffer.tile != b.channel.tile:
        p.add(f"{_bd_name(b)}.buffer", b.buffer.name, f"must be in {b.channel.tile}'s memory")
    extent = _bd_extent(p, b, kind_name, kind) if b.dims else b.length_bytes
    if b.offset_bytes + extent > b.buffer.size_bytes:
        p.add(f"{_bd_name(b)}.offset_bytes+extent", b.offset_bytes + extent,
              f"addresses outside buffer {b.buffer.name} ({b.buffer.size_bytes} bytes)")
    if b.compression_ratio != 1.0:
        p.check(kind.compression, f"{_bd_name(b)}.compression_ratio", b.compression_ratio,
                f"{kind_name} DMAs cannot compress (must be 1.0)")
        p.check(b.compression_ratio >= 1.0, f"{_bd_name(b)}.compression_ratio", b.compression_ratio,
                "must be >= 1.0")
    _check_bd_locks(v, b, kind_name)
    if b.next is not None and b.next.channel != b.channel:
        p.add(f"{_bd_name(b)}.next", b.next.id, f"must be a BD of the same channel ({b.channel})")


def _bd_extent(p: Problems, b: BD, kind_name: str, kind) -> int:
    """Bytes from the BD's offset to the last word its dimensions address (its length when the
    dimensions are unusable), so that the buffer check sees what a strided access reaches."""
    extent = b.length_bytes
    if len(b.dims) > kind.bd_dims:  # messages are formatted for problems only (thousands of BDs)
        p.add(f"{_bd_name(b)}.dims", b.dims, f"{kind_name} BDs address at most {kind.bd_dims} dimensions")
        return extent
    size_words = 1
    last_word = 0
    for i, (size, stride) in enumerate(b.dims):
        if not 1 <= size < 2**kind.bd_wrap_bits:
            p.add(f"{_bd_name(b)}.dims[{i}].size", size, f"must be in 1..{2**kind.bd_wrap_bits - 1}")
        if not 0 <= stride < 2**kind.bd_step_bits:
            p.add(f"{_bd_name(b)}.dims[{i}].stride", stride, f"must be in 0..{2**kind.bd_step_bits - 1} words")
        size_words *= max(size, 1)
        last_word += (max(size, 1) - 1) * max(stride, 0)
    if size_words * 4 != b.length_bytes:
        p.add(f"{_bd_name(b)}.dims", b.dims, f"sizes must multiply to length_bytes/4 = {b.length_bytes / 4:g} words")
    return (last_word + 1) * 4


def _check_bd_locks(v: _Checker, b: BD, kind_name: str) -> None:
    """A BD's acquire and release: values in range, locks its DMA can reach (a mem tile's DMA
    also reaches its neighbours')."""
    arch, p = v.arch, v.p
    for role, spec in (("acquire", b.acquire), ("release", b.release)):
        if spec is None:
            continue
        lk, value = spec
        if not 0 <= value <= arch.lock_max_value:
            p.add(f"{_bd_name(b)}.{role}.value", value, f"must be in 0..{arch.lock_max_value}")
        reach = abs(lk.tile.col - b.channel.tile.col) <= (1 if kind_name == "mem" else 0)
        if not (lk.tile.row == b.channel.tile.row and reach):
            p.add(f"{_bd_name(b)}.{role}.lock", lk.name, f"a {kind_name} DMA can only use locks of its own tile"
                  + (" or a neighbouring mem tile" if kind_name == "mem" else ""))


def _check_routes(v: _Checker, design: Design) -> tuple[set, dict]:
    """Routes: one per MM2S source, each S2MM fed by one circuit route or by any number of packet
    routes (fan-in; each packet route has one destination); or several packet routes from one
    source, each with its own packet id (fan-out by packet id), every BD of the source carrying
    one of those ids and no other source feeding their destinations. Returns the routed sources and
    each fed S2MM's first source, which the channel programs need to find channels nothing feeds."""
    p = v.p
    producer_of: dict[Channel, Channel] = {}
    packet_fed: set[Channel] = set()
    routed = set()
    pairs: set[tuple[Channel, Channel]] = set()  # (source, destination) of every route
    fan_out = _fan_out_sources(design)
    for r in design.routes:
        if not v.channel_ok(r.src, lambda: f"route {r.src}.src"):
            continue
        if r.src.direction != MM2S:
            p.add(f"route {r.src}.src", str(r.src), "must be an mm2s channel")
        if r.src in routed and r.src not in fan_out:
            p.add(f"route {r.src}.src", str(r.src), "has more than one route (several are packet routes "
                  "with distinct packet ids: fan-out by packet id)")
        if not r.dsts:
            p.add(f"route {r.src}.dsts", len(r.dsts), "needs at least one s2mm channel")
        if r.packet and len(r.dsts) > 1:
            p.add(f"route {r.src}.dsts", len(r.dsts), "a packet route has one s2mm channel "
                  "(several destinations: one packet route per packet id)")
        routed.add(r.src)
        for d in r.dsts:
            if v.channel_ok(d, lambda: f"route {r.src}.dst"):
                if d.direction != S2MM:
                    p.add(f"route {r.src}.dst", str(d), "must be an s2mm channel")
                if (r.src, d) in pairs:
                    p.add(f"route {r.src}.dst", str(d), f"already reached by another packet id of {r.src}: one "
                          "route per source and destination (two ids to one s2mm channel are not modelled)")
                pairs.add((r.src, d))
                if d in producer_of and not (r.packet and d in packet_fed):
                    p.add(f"route {r.src}.dst", str(d), f"already fed by {producer_of.get(d)}: only packet "
                          "routes (packet=True) may share an s2mm channel")
                elif d in producer_of and producer_of[d] != r.src and (r.src in fan_out or producer_of[d] in fan_out):
                    p.add(f"route {r.src}.dst", str(d), f"already fed by {producer_of.get(d)}: a destination "
                          "of fan-out by packet id shared with another source is not modelled")
                if r.src.tile.row == 0 and d.tile.row == 0:
                    p.add(f"route {r.src}.dst", str(d), "a shim-to-shim stream (DDR to DDR) is not modelled: "
                          "route it through a mem tile")
                if d not in producer_of and r.packet:
                    packet_fed.add(d)
                producer_of.setdefault(d, r.src)
    for src, ids in fan_out.items():
        for b in design.bds:
            if b.channel == src and b.packet_id not in ids:
                p.add(f"{_bd_name(b)}.packet_id", b.packet_id, f"one of the packet ids of the routes from {src} "
                      f"({', '.join(map(str, sorted(ids)))}): its packet must go somewhere")
    return routed, producer_of


def _fan_out_sources(design: Design) -> dict[Channel, set[int]]:
    """Sources with several routes, all packet routes with distinct packet ids: each source's ids."""
    by_src: dict[Channel, list] = {}
    for r in design.routes:
        by_src.setdefault(r.src, []).append(r)
    out = {}
    for src, routes in by_src.items():
        ids = [r.packet_id for r in routes]
        if len(routes) > 1 and all(r.packet for r in routes) and None not in ids and len(set(ids)) == len(ids):
            out[src] = set(ids)
    return out


def _check_channel_programs(v: _Checker, design: Design, routed: set, producer_of: dict) -> None:
    """Static chains and host pushes, then every channel with work needs a route: a pushed task
    must be able to complete, and data must have somewhere to come from and go to."""
    endless = endless_chains(design.bds)

    def loops_forever(bd: BD) -> bool:
        return endless[bd.id] if bd.id in endless else chain_of(bd)[1]  # (a BD of another design)

    used_channels, cyclic_static = _check_static_chains(v, design, loops_forever)
    used_channels |= _check_host(v, design, loops_forever, cyclic_static)
    unfed = [ch for ch in used_channels if ch not in (routed if ch.direction == MM2S else producer_of)]
    for ch in sorted(unfed, key=channel_order):
        if ch.direction == MM2S:
            v.p.add(f"channel {ch}", "no route", "an mm2s channel with work needs a route")
        else:
            v.p.add(f"channel {ch}", "no producer", "an s2mm channel with work needs a route from an mm2s channel")


def _check_static_chains(v: _Checker, design: Design, loops_forever) -> tuple[set, set]:
    """Static chains start on their own channel. Returns the channels they use and those whose
    chain loops forever (such a channel never takes queued tasks)."""
    used_channels, cyclic_static = set(), set()
    for ch, bd in design.static_chains.items():
        if not v.channel_ok(ch, lambda: f"static chain on {ch}"):
            continue
        used_channels.add(ch)
        if bd.channel != ch:
            v.p.add(f"static chain on {ch}", str(bd), "must start with a BD of that channel")
        if loops_forever(bd):
            cyclic_static.add(ch)
    return used_channels, cyclic_static


def _check_host(v: _Checker, design: Design, loops_forever, cyclic_static: set) -> set:
    """The runtime sequence: every push can complete, every wait follows a push. Returns the
    channels it pushes to. A sequence repeats a few Push objects up to ~10^5 times, so each one
    found fine is not checked again."""
    arch, p = v.arch, v.p
    used_channels: set[Channel] = set()
    pushed: set[Channel] = set()
    fine: set[int] = set()  # ids of Push objects already checked and found fine (a sequence repeats them)
    for i, op in enumerate(design.host):
        if id(op) in fine:
            continue
        if type(op) is Push:
            if not v.channel_ok(op.channel, lambda: f"host[{i}] push.channel"):
                continue
            used_channels.add(op.channel)
            pushed.add(op.channel)
            ok = (op.bd.channel == op.channel and 1 <= op.repeat <= arch.max_task_repeat
                  and not loops_forever(op.bd) and op.channel not in cyclic_static)
            if not ok:  # say which (messages are formatted only for problems)
                f = f"host[{i}] push"
                p.check(op.bd.channel == op.channel, f"{f}.bd", str(op.bd), f"must be a BD of {op.channel}")
                p.check(1 <= op.repeat <= arch.max_task_repeat, f"{f}.repeat", op.repeat,
                        f"must be in 1..{arch.max_task_repeat}")
                p.check(not loops_forever(op.bd), f"{f}.bd", str(op.bd),
                        "a pushed task's BD chain loops forever, so it can never complete")
                p.check(op.channel not in cyclic_static, f"{f}.channel", str(op.channel),
                        "runs a cyclic static chain and never takes queued tasks")
            else:
                fine.add(id(op))
        elif isinstance(op, Wait):
            if v.channel_ok(op.channel, lambda: f"host[{i}] wait.channel") and op.channel not in pushed:
                p.add(f"host[{i}] wait.channel", str(op.channel),
                      "waits on a channel that no earlier step pushed a task to")
        else:
            p.add(f"host[{i}]", type(op).__name__, "must be Push or Wait")
    return used_channels


def _check_cores(v: _Checker, design: Design) -> None:
    """Core programs run on compute tiles and stay within their ops' limits."""
    for tile, ops in design.cores.items():
        if not v.tile_ok(tile, lambda: f"core {tile}"):
            continue
        v.p.check(v.arch.tile_kind_name(tile.row) == "compute", f"core {tile}", str(tile),
                  "core programs run on compute tiles only")
        _check_ops(v.p, v.arch, tile, ops, f"core {tile}", 0)


def _check_ops(p: Problems, arch, tile: Tile, ops, where: str, depth: int) -> None:
    for i, op in enumerate(ops):
        f = f"{where}[{i}]"
        if isinstance(op, (Acquire, Release)):
            lk = op.lock
            near = abs(lk.tile.col - tile.col) + abs(lk.tile.row - tile.row) <= 1
            if not (near and arch.tile_kind_name(lk.tile.row) == "compute"):
                p.add(f"{f}.lock", lk.name, "a core reaches locks of its own tile and its neighbouring compute tiles")
            if not 0 <= op.value <= arch.lock_max_value:
                p.add(f"{f}.value", op.value, f"must be in 0..{arch.lock_max_value}")
        elif isinstance(op, Compute):
            if op.cycles < 1:
                p.add(f"{f}.cycles", op.cycles, "must be >= 1")
        elif isinstance(op, Loop):
            if op.count < 1:
                p.add(f"{f}.count", op.count, "must be >= 1")
            if p.check(depth + 1 <= MAX_LOOP_DEPTH, f"{f}", "loop", f"loops nest at most {MAX_LOOP_DEPTH} deep"):
                _check_ops(p, arch, tile, op.body, f"{f}.body", depth + 1)
        else:
            p.add(f, type(op).__name__, "must be Acquire, Release, Compute or Loop")
