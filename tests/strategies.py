"""Hypothesis strategies: random valid designs on a small random array.

Designs are valid (they pass validation) but not necessarily sensible: many deadlock, overflow a
lock or run into the cycle limit, and the reference and the kernels must agree on those too.
"""
from __future__ import annotations

from hypothesis import strategies as st

from fastsim.arch import NPU2
from fastsim.design import MM2S, S2MM, Acquire, Channel, Compute, Design, Loop, Release, Tile, mm2s, s2mm


@st.composite
def small_arch(draw):
    clock = 1e9
    return NPU2.replace(
        name="tiny", columns=2, compute_rows=2, clock_hz=clock,
        stream_bytes_per_cycle=draw(st.sampled_from([1.0, 2.0, 4.0, 8.0])),
        switch_buffer_bytes=draw(st.integers(8, 64)),
        switch_hop_latency_cycles=draw(st.integers(1, 5)),
        bd_setup_cycles=draw(st.integers(0, 5)),
        bd_chain_cycles=draw(st.integers(0, 3)),
        lock_acquire_cycles=draw(st.integers(0, 2)),
        lock_release_cycles=draw(st.integers(0, 2)),
        task_queue_depth=draw(st.integers(1, 4)),
        lock_max_value=draw(st.sampled_from([3, 7, 63])),
        shim_read_bytes_per_cycle=tuple(draw(st.sampled_from([0.5, 1.0, 3.0, 8.0])) for _ in range(2)),
        shim_write_bytes_per_cycle=tuple(draw(st.sampled_from([0.5, 2.0, 8.0])) for _ in range(2)),
        ddr_bytes_per_s=draw(st.sampled_from([1.5, 4.0, 40.0])) * clock,
        # 0 to 1,200 bytes of DDR time per contiguous run (the npu2 fit is about 270 B)
        ddr_run_overhead_s=draw(st.sampled_from([0.0, 1e-9, 4e-9, 3e-8])),
    )


@st.composite
def shim_dims(draw, words):
    """Dims for a shim BD of ``words`` 32-bit words, or () (one run): an inner dimension of a
    divisor of ``words`` and an outer one whose stride either continues it (still one run) or
    skips (runs of the inner size: down to one word, the shortest a BD can make)."""
    if not draw(st.booleans()):
        return ()
    inner = draw(st.sampled_from([w for w in range(1, words + 1) if words % w == 0]))
    gap = draw(st.sampled_from([0, 1, inner]))
    return ((inner, 1), (words // inner, inner + gap))


def dims_extent(dims, length_bytes):
    """Bytes a BD with ``dims`` reaches from its offset."""
    return 4 * (1 + sum((size - 1) * stride for size, stride in dims)) if dims else length_bytes


def _channels(arch, direction):
    out = []
    for col in range(arch.columns):
        for row in range(arch.rows):
            kind = arch.tile_kind(row)
            n = kind.mm2s_channels if direction == MM2S else kind.s2mm_channels
            out += [Channel(Tile(col, row), direction, i) for i in range(min(n, 2))]
    return out


@st.composite
def designs(draw, arch=None):
    arch = arch or draw(small_arch())
    d = Design(arch, "random")
    # locks: a few per non-shim tile
    locks = {}
    for col in range(arch.columns):
        for row in range(1, arch.rows):
            t = Tile(col, row)
            locks[t] = [d.lock(t, draw(st.integers(0, 3))) for _ in range(draw(st.integers(0, 3)))]
    # routes
    producers = draw(st.lists(st.sampled_from(_channels(arch, MM2S)), min_size=1, max_size=4, unique=True))
    free_s2mm = _channels(arch, S2MM)
    packet_fed = []  # S2MMs only packet routes feed: a later packet route may share one
    for src in producers:
        # shim to shim (DDR to DDR) is refused by validation
        def reachable(chs):
            return [c for c in chs if c.tile != src.tile and not (c.tile.row == 0 and src.tile.row == 0)]
        options = reachable(free_s2mm)
        if draw(st.integers(0, 3)) == 0 and reachable(free_s2mm + packet_fed):
            dst = draw(st.sampled_from(reachable(free_s2mm + packet_fed)))
            if dst in free_s2mm:
                free_s2mm.remove(dst)
                packet_fed.append(dst)
            d.route(src, dst, packet=True)
            continue
        if not options:
            break
        dsts = draw(st.lists(st.sampled_from(options), min_size=1, max_size=min(3, len(options)), unique=True))
        for c in dsts:
            free_s2mm.remove(c)
        d.route(src, *dsts)
    used = sorted({r.src for r in d.routes} | {c for r in d.routes for c in r.dsts})

    def lock_spec(tile):
        if tile.row == 0 or not locks[tile] or not draw(st.booleans()):
            return None
        return (draw(st.sampled_from(locks[tile])), draw(st.integers(0, 2)))

    # BDs and channel programs
    pushes = []
    for ch in used:
        shim = ch.tile.row == 0
        n_bd = draw(st.integers(1, 3))
        # shim BDs: whole words, so that dims can split them into short DDR runs
        sizes = [4 * draw(st.integers(1, 12)) if shim else draw(st.integers(1, 48)) for _ in range(n_bd)]
        dims = [draw(shim_dims(n // 4)) if shim else () for n in sizes]
        extent = max(dims_extent(x, n) for x, n in zip(dims, sizes))
        buf = d.ddr_buffer(extent) if shim else d.buffer(ch.tile, extent)
        bds = [d.bd(ch, buf, n, dims=x, acquire=lock_spec(ch.tile), release=lock_spec(ch.tile),
                    compression_ratio=1.0 if shim else draw(st.sampled_from([1.0, 1.0, 2.0, 1.5])))
               for n, x in zip(sizes, dims)]
        static = not shim and draw(st.booleans())
        cyclic = static and draw(st.booleans())
        d.chain(*bds, cyclic=cyclic)
        if static:
            d.start_chain(ch, bds[0])
        else:
            for _ in range(draw(st.integers(1, 3))):
                pushes.append((ch, bds[0], draw(st.integers(1, 3))))
    order = draw(st.permutations(range(len(pushes))))
    for i in order:
        ch, bd, rep = pushes[i]
        d.push(ch, bd, rep)
        if draw(st.integers(0, 3)) == 0:
            d.wait(ch)
    for ch in sorted({p[0] for p in pushes}):
        if draw(st.booleans()):
            d.wait(ch)
    # cores
    for col in range(arch.columns):
        for r in range(arch.compute_rows):
            tile = d.compute(col, r)
            if not draw(st.booleans()):
                continue
            body = []
            for _ in range(draw(st.integers(1, 3))):
                if locks[tile] and draw(st.booleans()):
                    body.append(Acquire(draw(st.sampled_from(locks[tile])), draw(st.integers(0, 2))))
                body.append(Compute(draw(st.integers(1, 40)), draw(st.sampled_from(["mm", "add"]))))
                if locks[tile] and draw(st.booleans()):
                    body.append(Release(draw(st.sampled_from(locks[tile])), draw(st.integers(0, 2))))
            d.core_program(tile, Loop(draw(st.integers(1, 3)), tuple(body)))
    return d


@st.composite
def pipelines(draw, arch=None, max_objects=4):
    """Well-formed ObjectFifo pipelines (shim -> [mem ->] compute core -> shim) that usually finish.

    Sizes, depths, object counts, broadcast fan-out and DDR sharing are random; these exercise the
    steady streaming, backpressure and skipping paths that random designs rarely reach. With many
    objects (``max_objects``) they run into a periodic steady state, which fast-forward jumps.
    """
    from fastsim.design import fifo_endpoint, object_fifo

    arch = arch or draw(small_arch())
    d = Design(arch, "pipeline")
    used_cores = set()
    for col in range(arch.columns):
        if not draw(st.booleans()) and col > 0:
            continue
        n_obj = draw(st.integers(1, max_objects))
        size = draw(st.integers(1, 24)) * 4
        depth = draw(st.integers(1, 2))
        rows = draw(st.lists(st.integers(0, arch.compute_rows - 1), min_size=1, max_size=2, unique=True))
        via_mem = draw(st.booleans())
        shim, memt = d.shim(col), d.mem(col)
        in_dims = draw(shim_dims(size // 4))
        src = d.ddr_buffer(max(size, dims_extent(in_dims, size)) * n_obj)
        dst = d.ddr_buffer(size * n_obj * len(rows))
        consumers = [s2mm(d.compute(col, r), 0) for r in rows]
        if via_mem:
            stage = object_fifo(d, mm2s(shim, 0), [s2mm(memt, 0)], depth, size, f"in{col}")
            m = stage["consumers"][0]
            # forward from the mem tile: its MM2S drains the buffers the S2MM fills
            bds = [d.bd(mm2s(memt, 0), b, size, acquire=(m["cons_lock"], 1), release=(m["prod_lock"], 1))
                   for b in m["buffers"]]
            d.start_chain(mm2s(memt, 0), d.chain(*bds, cyclic=True))
            fifo = {"consumers": [fifo_endpoint(d, c, depth, size, f"fw{col}_{j}")
                                  for j, c in enumerate(consumers)]}
            d.route(mm2s(memt, 0), *consumers)
        else:
            fifo = object_fifo(d, mm2s(shim, 0), consumers, depth, size, f"in{col}")
        d.push(mm2s(shim, 0), d.bd(mm2s(shim, 0), src, size, dims=in_dims), repeat=n_obj)
        out_bds = []
        for j, r in enumerate(rows):
            tile = d.compute(col, r)
            out = object_fifo(d, mm2s(tile, 0), [s2mm(shim, 0)] if j == 0 else [s2mm(shim, 1)],
                              depth, size, f"out{col}_{r}")
            c = fifo["consumers"][j]
            d.core_program(tile, Loop(n_obj, (
                Acquire(c["cons_lock"]), Acquire(out["producer_prod_lock"]),
                Compute(draw(st.integers(1, 60))),
                Release(c["prod_lock"]), Release(out["producer_cons_lock"]))))
            used_cores.add(tile)
            ch = s2mm(shim, j)
            out_bds.append((ch, d.bd(ch, dst, size)))
        for ch, bd in out_bds:
            d.push(ch, bd, repeat=n_obj)
        for ch, _ in out_bds:
            d.wait(ch)
    return d


@st.composite
def packet_designs(draw, arch=None):
    """Packet fan-in: 2 to 4 MM2S channels on other tiles share one S2MM (a mem tile's or a
    shim's) through packet routes; each producer sends 1 to 3 BDs (packets) of random lengths,
    pushed by the host or chained at cycle 0. The S2MM's BDs usually take exactly the bytes sent
    (the run finishes); sometimes random lengths (it may stall, and the reference must agree)."""
    arch = arch or draw(small_arch())
    d = Design(arch, "packets")
    dst = draw(st.sampled_from([c for c in _channels(arch, S2MM) if c.tile.row <= 1]))
    options = [c for c in _channels(arch, MM2S) if c.tile != dst.tile and not (c.tile.row == 0 and dst.tile.row == 0)]
    producers = draw(st.lists(st.sampled_from(options), min_size=2, max_size=min(4, len(options)), unique=True))
    sent = 0
    for src in producers:
        d.route(src, dst, packet=True)
        shim = src.tile.row == 0
        sizes = [4 * draw(st.integers(1, 12)) if shim else draw(st.integers(1, 48)) for _ in range(draw(st.integers(1, 3)))]
        buf = d.ddr_buffer(max(sizes)) if shim else d.buffer(src.tile, max(sizes))
        first = d.chain(*[d.bd(src, buf, n) for n in sizes])
        if not shim and draw(st.booleans()):
            d.start_chain(src, first)
            sent += sum(sizes)
        else:
            repeat = draw(st.integers(1, 3))
            d.push(src, first, repeat)
            sent += repeat * sum(sizes)
    exact = draw(st.integers(0, 3)) > 0
    parts = draw(st.integers(1, 3))
    sizes = ([sent // parts] * (parts - 1) + [sent - (sent // parts) * (parts - 1)] if exact
             else [draw(st.integers(1, 64)) for _ in range(parts)])
    sizes = [n for n in sizes if n > 0]
    buf = d.ddr_buffer(max(sizes)) if dst.tile.row == 0 else d.buffer(dst.tile, max(sizes))
    d.push(dst, d.chain(*[d.bd(dst, buf, n) for n in sizes]))
    for ch in sorted({dst, *producers}):
        if draw(st.booleans()) and (ch == dst or ch.tile.row == 0):
            d.wait(ch)
    return d


@st.composite
def packet_pipelines(draw, arch=None, max_objects=12):
    """Cores that each fill ``depth`` buffers in a loop (a lock handshake with their MM2S's cyclic
    BD chain, as an ObjectFifo) and send every object as one packet into one shared S2MM, which
    the host drains object by object. Long loops reach a periodic steady state in which the port
    changes owner every period: fast-forward must carry the owner state across its jumps."""
    arch = arch or draw(small_arch())
    d = Design(arch, "packet pipeline")
    dst = s2mm(d.shim(0), 0) if draw(st.booleans()) else s2mm(d.mem(draw(st.integers(0, arch.columns - 1))), 0)
    tiles = [d.compute(c, r) for c in range(arch.columns) for r in range(arch.compute_rows)]
    chosen = draw(st.lists(st.sampled_from(tiles), min_size=2, max_size=4, unique=True))
    n_obj = draw(st.integers(1, max_objects))
    sizes = []
    for tile in chosen:
        src, depth, size = mm2s(tile, 0), draw(st.integers(1, 2)), draw(st.integers(1, 24)) * 4
        free, full = d.lock(tile, depth), d.lock(tile, 0)
        bds = [d.bd(src, d.buffer(tile, size), size, acquire=(full, 1), release=(free, 1)) for _ in range(depth)]
        d.start_chain(src, d.chain(*bds, cyclic=True))
        d.route(src, dst, packet=True)
        d.core_program(tile, Loop(n_obj, (Acquire(free), Compute(draw(st.integers(1, 60))), Release(full))))
        sizes.append(size)
    if dst.tile.row == 0:
        d.push(dst, d.bd(dst, d.ddr_buffer(sum(sizes)), sum(sizes)), repeat=n_obj)
        d.wait(dst)
    else:  # the mem tile takes each round of packets and lets it go (no consumer downstream)
        d.start_chain(dst, d.bd(dst, d.buffer(dst.tile, sum(sizes) * n_obj), sum(sizes) * n_obj))
    return d


@st.composite
def packet_fan_out_designs(draw, arch=None, max_objects=10):
    """Fan-out by packet id: one MM2S with 2 or 3 packet routes, each with its own packet id and
    S2MM (a shim's or a mem tile's). Either its 1 to 5 BDs carry random ids and are pushed by the
    host or chained at cycle 0, or a core fills ``depth`` buffers in a loop whose cyclic BD ring
    alternates ids (a periodic steady state in which the destination changes every object, for
    fast-forward). Each S2MM usually takes exactly the bytes its id's packets carry; sometimes
    random lengths (it may stall, and the reference must agree). Sometimes a second producer
    sends into another S2MM of its own by packet fan-in, to mix fan-out and fan-in ports."""
    arch = arch or draw(small_arch())
    d = Design(arch, "packet fan-out")
    periodic = draw(st.booleans())
    if periodic:
        tile = Tile(draw(st.integers(0, arch.columns - 1)), 2 + draw(st.integers(0, arch.compute_rows - 1)))
        src = mm2s(tile, 0)
    else:
        src = draw(st.sampled_from(_channels(arch, MM2S)))
    options = [c for c in _channels(arch, S2MM) if c.tile.row <= 1 and c.tile != src.tile
               and not (src.tile.row == 0 and c.tile.row == 0)]
    n_routes = draw(st.integers(2, min(3, len(options))))
    dsts = draw(st.lists(st.sampled_from(options), min_size=n_routes, max_size=n_routes, unique=True))
    for pid, dst in enumerate(dsts):
        d.route(src, dst, packet_id=pid)
    sent = [0] * n_routes
    if periodic:
        depth, n_obj = draw(st.integers(1, 2)), draw(st.integers(1, max_objects))
        size = 4 * draw(st.integers(1, 12))
        free, full = d.lock(tile, depth), d.lock(tile, 0)
        ids = [i % n_routes for i in range(depth)] if depth > 1 else [0]
        ring = [d.bd(src, d.buffer(tile, size), size, acquire=(full, 1), release=(free, 1), packet_id=pid)
                for pid in ids]
        d.start_chain(src, d.chain(*ring, cyclic=True))
        d.core_program(tile, Loop(n_obj, (Acquire(free), Compute(draw(st.integers(1, 60))), Release(full))))
        for k in range(n_obj):
            sent[ids[k % depth]] += size
    else:
        shim = src.tile.row == 0
        n_bd = draw(st.integers(1, 5))
        sizes = [4 * draw(st.integers(1, 12)) if shim else draw(st.integers(1, 48)) for _ in range(n_bd)]
        ids = [draw(st.integers(0, n_routes - 1)) for _ in range(n_bd)]
        buf = d.ddr_buffer(max(sizes)) if shim else d.buffer(src.tile, max(sizes))
        first = d.chain(*[d.bd(src, buf, n, packet_id=pid) for n, pid in zip(sizes, ids)])
        repeat = 1
        if not shim and draw(st.booleans()):
            d.start_chain(src, first)
        else:
            repeat = draw(st.integers(1, 3))
            d.push(src, first, repeat)
        for n, pid in zip(sizes, ids):
            sent[pid] += repeat * n
    exact = draw(st.integers(0, 3)) > 0
    for dst, n in zip(dsts, sent):
        n = n if exact else draw(st.integers(1, 64))
        if n == 0:
            continue
        buf = d.ddr_buffer(n) if dst.tile.row == 0 else d.buffer(dst.tile, n)
        d.push(dst, d.bd(dst, buf, n))
        if draw(st.booleans()):
            d.wait(dst)
    fan_in = [c for c in _channels(arch, MM2S) if c.tile.row <= 1 and c != src and c.tile not in {x.tile for x in dsts}]
    left = [c for c in options if c not in dsts]
    if fan_in and left and draw(st.booleans()):  # another producer's packets, into an S2MM of its own
        other, dst = draw(st.sampled_from(fan_in)), draw(st.sampled_from(left))
        if not (other.tile.row == 0 and dst.tile.row == 0):
            n = 4 * draw(st.integers(1, 12))
            d.route(other, dst, packet=True)
            d.push(other, d.bd(other, d.ddr_buffer(n) if other.tile.row == 0 else d.buffer(other.tile, n), n))
            d.push(dst, d.bd(dst, d.ddr_buffer(n) if dst.tile.row == 0 else d.buffer(dst.tile, n), n))
    return d
