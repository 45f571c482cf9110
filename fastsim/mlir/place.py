"""``aie.logical_tile`` placed as mlir-aie's ``aie-opt --aie-place-tiles`` places it.

This follows the default placer of mlir-aie, ``SequentialPlacer``
(``lib/Dialect/AIE/Transforms/AIEPlacer.cpp``), step by step, so that a design written with
logical tiles runs on the tiles the compiler would give it:

1. Each compute tile's DMA demand: an object FIFO end on a tile that is not a compute-to-compute
   FIFO takes one channel (a link's mem tile takes one per linked FIFO instead), and so does each
   DMA end of a flow or packet flow (a channel counted once). A compute-to-compute FIFO needs no
   channel when its ends share memory, so a core with more of them than its spare channels needs
   that many compute peers on neighbouring tiles (its neighbour demand).
2. Compute tiles are placed fully pinned first, then partly pinned, then free; among equals the
   one with the highest neighbour demand (its own or a peer's) first. A free compute tile takes
   the first free compute tile in column-major order (column 0 bottom to top, then column 1 ...;
   a tile with neighbour demand prefers tiles with two compute neighbours) that keeps every
   cascade (to the tile below or east), every shared buffer (a neighbour whose memory the core
   can use) and every neighbour demand satisfiable, skipping tiles held back for another
   demanding tile's peers while any other tile fits.
3. Mem and shim tiles, heaviest DMA demand first, go to the column that minimises the distance to
   the compute tiles they exchange data with (directly, or through a mem tile), ties to the column
   nearest their mean; there the tile of that type with room for their channels that is nearest,
   then least loaded, then leftmost. Several logical tiles may share one physical tile while its
   channels last (``merge-logical-tiles``, the default).

The placer is greedy: nothing is revisited. A design that it cannot place is an error naming the
logical tile and its line, with mlir-aie's message.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .place_graph import PlaceGraph, values_of
from .tile_array import CORE, SHIM_PL, TileArray


class PlacementError(Exception):
    """A logical tile that cannot be placed: ``value`` names it, the message is mlir-aie's."""

    def __init__(self, value: str, message: str):
        self.value = value
        super().__init__(message)


@dataclass
class Adjacency:
    """Edges (first, second) between tile values, indexed by their logical-tile ends."""

    logical: frozenset
    edges: list = field(default_factory=list)
    by_tile: dict = field(default_factory=dict)

    def add(self, first: str, second: str) -> None:
        index = len(self.edges)
        self.edges.append((first, second))
        for end in (first, second):
            if end in self.logical:
                self.by_tile.setdefault(end, []).append(index)

    def peers(self, value: str):
        """(peer, value is the edge's first end) for each edge of ``value``."""
        for index in self.by_tile.get(value, ()):
            first, second = self.edges[index]
            yield (second, True) if first == value else (first, False)


def place(graph: PlaceGraph, array: TileArray, cores_per_col: int | None = None,
          merge: bool = True) -> dict[str, tuple[int, int]]:
    """{logical tile value: (col, row)}. ``cores_per_col`` and ``merge`` are the pass's options
    ``cores-per-col`` and ``merge-logical-tiles``."""
    return SequentialPlacer(graph, array, cores_per_col, merge).place()


class SequentialPlacer:
    """State of one placement: free tiles, channels used per tile, placements made."""

    def __init__(self, graph: PlaceGraph, array: TileArray, cores_per_col: int | None, merge: bool):
        self.g, self.array, self.merge = graph, array, merge
        self.cores_per_col = cores_per_col
        self.lto = {t.value: t for t in graph.logical}
        tiles = [(c, r) for c in range(array.columns) for r in range(array.rows)]
        self.comp = [t for t in tiles if array.tile_type(*t) == CORE]              # column-major
        self.non_comp = sorted((t for t in tiles if array.tile_type(*t) != CORE), key=lambda t: (t[1], t[0]))
        if cores_per_col is not None:
            self.comp = [t for t in self.comp if t[1] - 2 < cores_per_col]
        self.used_in: dict = {}
        self.used_out: dict = {}
        self.result: dict = {}
        self.assigned_non_core: set = set()
        self.reserved: dict = {}

    # -- positions and channels ------------------------------------------------------------------
    def position(self, value: str):
        """Where a tile is: placed, pinned, or physical; None while a logical tile is unplaced."""
        if value in self.result:
            return self.result[value]
        if value in self.g.physical:
            return self.g.physical[value]
        t = self.lto.get(value)
        return (t.col, t.row) if t is not None and t.col is not None and t.row is not None else None

    def has_channels(self, tile, need_in: int, need_out: int) -> bool:
        cap_in, cap_out = self.array.dma_channels(tile)
        return self.used_in.get(tile, 0) + need_in <= cap_in and self.used_out.get(tile, 0) + need_out <= cap_out

    def use_channels(self, tile, need_in: int, need_out: int) -> None:
        self.used_in[tile] = self.used_in.get(tile, 0) + need_in
        self.used_out[tile] = self.used_out.get(tile, 0) + need_out
        if not self.has_channels(tile, 0, 0):
            self._remove(tile)

    def _remove(self, tile) -> None:
        for free in (self.comp, self.non_comp):
            if tile in free:
                free.remove(tile)

    # -- the pass ------------------------------------------------------------------------------
    def place(self) -> dict:
        if self.cores_per_col is not None and self.cores_per_col > self.array.rows - 2:
            raise PlacementError("", f"requested cores-per-col ({self.cores_per_col}) exceeds device capacity "
                                     f"({self.array.rows - 2} cores per column)")
        self._verify()
        logical = frozenset(self.lto)
        self.buffers = self._buffer_adjacency(logical)
        self.peers = Adjacency(logical)
        for f in self.g.fifos:
            if self._kind(f.producer) == CORE and f.producer in self.lto:
                for c in f.consumers:
                    if c in self.lto and self._kind(c) == CORE and c != f.producer:
                        self.peers.add(f.producer, c)
        self.channels = self._channel_requirements()
        self.cascades = Adjacency(logical)
        for src, dst in self.g.cascades:
            if self.g.is_tile(src) and self.g.is_tile(dst):
                self.cascades.add(src, dst)
        self.need_in, self.need_out = {}, {}
        for t in self.g.logical:
            if t.kind == CORE:
                peer_in, peer_out = self._peer_counts(t.value)
                non_in, non_out = self.channels.get(t.value, (0, 0))
                cap_in, cap_out = self.array.dma_channels((0, 2))
                self.need_in[t.value] = max(0, peer_in - (cap_in - non_in))
                self.need_out[t.value] = max(0, peer_out - (cap_out - non_out))

        def rank(t):
            pinned = (t.col is not None) + (t.row is not None)
            return (2 - pinned, -self._priority(t.value), -self._demand(t.value))

        for t in sorted(self.g.logical, key=rank):
            if t.col is not None and t.row is not None:
                tile = (t.col, t.row)
                self._enforce(t, tile, self.buffers, self._buffer_ok, "shared-L1 buffer")
                self._enforce(t, tile, self.cascades, self.array.cascade_ok, "cascade")
                self._take_channels(t, tile, pinned=True)
                self._record(t, tile)
                continue
            if t.kind == CORE:
                tile = self._core_candidate(t)
                self._take_channels(t, tile, pinned=False)
                self._record(t, tile)
            if t.kind == SHIM_PL:
                raise PlacementError(t.value, "DMA channel-based SequentialPlacer does not support unplaced "
                                              "ShimPLTiles (no DMAs).")
        self._place_non_core()
        return dict(self.result)

    def _verify(self) -> None:
        """The checks of ``LogicalTileOp::verify`` on an NPU device."""
        for t in self.g.logical:
            if t.col is not None and t.col >= self.array.columns:
                raise PlacementError(t.value, f"column index ({t.col}) must be less than the number of columns "
                                              f"in the device ({self.array.columns})")
            if t.row is not None and t.row >= self.array.rows:
                raise PlacementError(t.value, f"row index ({t.row}) must be less than the number of rows in the "
                                              f"device ({self.array.rows})")
            if t.kind == SHIM_PL:
                raise PlacementError(t.value, "tile type 'ShimPLTile' does not exist on the target device")
            if t.col is not None and t.row is not None and self.array.tile_type(t.col, t.row) != t.kind:
                raise PlacementError(t.value, "declared logical tile type does not match the tile type at "
                                              f"coordinates ({t.col}, {t.row})")

    def _kind(self, value: str) -> str | None:
        t = self.lto.get(value)
        if t is not None:
            return t.kind
        return self.array.tile_type(*self.g.physical[value]) if value in self.g.physical else None

    # -- constraints -------------------------------------------------------------------------------
    def _buffer_adjacency(self, logical) -> Adjacency:
        """(core, owner) for each other tile whose ``aie.buffer`` the core's code uses."""
        adj = Adjacency(logical)
        for t in self.g.logical:
            core = self.g.cores.get(t.value)
            if t.kind != CORE or core is None:
                continue
            seen = set()
            for op in _ops_in(core):
                for v in values_of(op.items):
                    owner = self._buffer_tile(v)
                    if owner is None or owner == t.value or owner in seen or not self.g.is_tile(owner):
                        continue
                    seen.add(owner)
                    adj.add(t.value, owner)
        return adj

    def _buffer_tile(self, value: str):
        for _ in range(64):  # views of views, never a cycle in SSA form
            if value in self.g.buffer_owner:
                return self.g.buffer_owner[value]
            if value not in self.g.view_source:
                return None
            value = self.g.view_source[value]
        return None

    def _buffer_ok(self, core, owner) -> bool:
        return self.array.mem_affinity(core, owner)

    def _channel_requirements(self) -> dict:
        """{tile value: (S2MM, MM2S) channels} (``buildChannelRequirements`` and
        ``addChannelRequirementsFromFlows``)."""
        req: dict = {}

        def add(value, d_in, d_out):
            a, b = req.get(value, (0, 0))
            req[value] = (a + d_in, b + d_out)

        linked_in = {n for ins, _ in self.g.links for n in ins}
        linked_out = {n for _, outs in self.g.links for n in outs}
        for f in self.g.fifos:
            producer_dma = False
            for c in f.consumers:
                if f.producer in self.lto and c in self.lto and self._kind(f.producer) == CORE \
                        and self._kind(c) == CORE:
                    continue
                if f.name not in linked_in:
                    add(c, 1, 0)
                producer_dma = True
            if producer_dma and f.name not in linked_out:
                add(f.producer, 0, 1)
        by_name = {f.name: f for f in self.g.fifos}
        for ins, outs in self.g.links:
            tile = next((by_name[n].consumers[0] for n in ins if n in by_name and by_name[n].consumers), None)
            if tile is not None:
                add(tile, len(ins), len(outs))
        seen_src, seen_dst = set(), set()
        for port, is_out in _flow_ports(self.g):
            if port.tile not in self.lto or port.bundle != "DMA":
                continue
            seen = seen_src if is_out else seen_dst
            if (port.tile, port.channel) in seen:
                continue
            seen.add((port.tile, port.channel))
            add(port.tile, 0 if is_out else 1, 1 if is_out else 0)
        return req

    def _peer_counts(self, value: str) -> tuple[int, int]:
        """(compute peers feeding it, compute peers it feeds)."""
        n_in = n_out = 0
        for _, first in self.peers.peers(value):
            n_out += first
            n_in += not first
        return n_in, n_out

    def _demand(self, value: str) -> int:
        return self.need_in.get(value, 0) + self.need_out.get(value, 0)

    def _priority(self, value: str) -> int:
        return max([self._demand(value)] + [self._demand(p) for p, _ in self.peers.peers(value)])

    def _adjacent(self, value: str, candidate, adj: Adjacency, pred) -> bool:
        for peer, first in adj.peers(value):
            pos = self.position(peer)
            if pos is not None and not (pred(candidate, pos) if first else pred(pos, candidate)):
                return False
        return True

    def _enforce(self, t, tile, adj: Adjacency, pred, kind: str) -> None:
        if not self._adjacent(t.value, tile, adj, pred):
            raise PlacementError(t.value, f"tile ({tile[0]}, {tile[1]}) violates {kind} adjacency")

    def _reserved_for_other(self, value: str, candidate) -> bool:
        peers = {p for p, _ in self.peers.peers(value)}
        return any(owner != value and owner not in peers for owner in self.reserved.get(candidate, ()))

    def _peers_fit(self, value: str, candidate) -> bool:
        """``satisfiesComputePeer``: the compute peers that must share memory with this tile (and
        with each placed peer) still can, given where the placed ones are and what is free."""
        if value not in self.peers.by_tile:
            return True
        aff = self.array.mem_affinity
        near = {True: 0, False: 0}   # keyed by "this tile is the producer" (an out peer)
        far = {True: 0, False: 0}
        for peer, first in self.peers.peers(value):
            pos = self.position(peer)
            if pos is not None:
                (near if aff(candidate, pos) else far)[first] += 1
        total_in, total_out = self._peer_counts(value)
        need_in, need_out = self.need_in.get(value, 0), self.need_out.get(value, 0)
        if far[False] > total_in - need_in or far[True] > total_out - need_out:
            return False
        if need_in > 0 or need_out > 0:
            free = sum(nb in self.comp for nb in self.array.mem_affinity_neighbours(candidate))
            if max(0, need_in - near[False]) + max(0, need_out - near[True]) > free:
                return False
        for peer, first in self.peers.peers(value):
            peer_pos = self.position(peer)
            if peer not in self.lto or peer_pos is None:
                continue
            peer_out = not first   # this tile is the consumer: it is on the peer's out side
            p_in, p_out = self._peer_counts(peer)
            slack = (p_out - self.need_out.get(peer, 0)) if peer_out else (p_in - self.need_in.get(peer, 0))
            far_count = 0
            for other, peer_first in self.peers.peers(peer):
                if peer_out != peer_first:
                    continue
                if other == value:
                    far_count += not aff(peer_pos, candidate)
                    continue
                pos = self.position(other)
                if pos is not None and not aff(peer_pos, pos):
                    far_count += 1
            if far_count > slack:
                return False
        return True

    # -- compute tiles ------------------------------------------------------------------------------
    def _core_candidate(self, t):
        """``findUnconstrainedCoreCandidate``: the first free compute tile that fits."""
        candidates = list(self.comp)
        if self._demand(t.value) > 0:
            candidates.sort(key=lambda c: (c[0], -self.array.core_neighbour_count(c), c[1]))
        matched, adjacency_failed_all, peer_cause = False, True, False
        for allow_reserved in (False, True):
            for c in candidates:
                if t.col is not None and c[0] != t.col or t.row is not None and c[1] != t.row:
                    continue
                if not allow_reserved and self._reserved_for_other(t.value, c):
                    continue
                matched = True
                if not self._adjacent(t.value, c, self.buffers, self._buffer_ok):
                    continue
                adjacency_failed_all = False
                if not self._adjacent(t.value, c, self.cascades, self.array.cascade_ok):
                    continue
                if not self._peers_fit(t.value, c):
                    peer_cause = True
                    continue
                return c
        buffer_cause = matched and adjacency_failed_all and t.value in self.buffers.by_tile
        cascade = t.value in self.cascades.by_tile
        if t.col is not None or t.row is not None:
            text = (f"no compute tile available matching constraint ({'?' if t.col is None else t.col}, "
                    f"{'?' if t.row is None else t.row})" + (" and shared-L1 buffer adjacency" if buffer_cause else "")
                    + (" and cascade adjacency" if cascade else "")
                    + (" and compute-peer DMA budget" if peer_cause else ""))
        else:
            text = ("no available compute tiles for placement"
                    + (" (shared-L1 buffer adjacency unsatisfiable)" if buffer_cause else "")
                    + (" (cascade adjacency unsatisfiable)" if cascade else "")
                    + (" (compute-peer DMA budget unsatisfiable)" if peer_cause else ""))
        raise PlacementError(t.value, text)

    def _take_channels(self, t, tile, pinned: bool) -> None:
        need_in, need_out = self.channels.get(t.value, (0, 0))
        if not self.has_channels(tile, need_in, need_out):
            cap_in, cap_out = self.array.dma_channels(tile)
            raise PlacementError(t.value, f"tile ({tile[0]}, {tile[1]}) requires {need_in} input/{need_out} output "
                                          f"DMA channels, but only {cap_in - self.used_in.get(tile, 0)} input/"
                                          f"{cap_out - self.used_out.get(tile, 0)} output available"
                                 + ("" if pinned else " (placer selected this tile)"))
        if need_in or need_out:
            self.use_channels(tile, need_in, need_out)

    def _record(self, t, tile) -> None:
        self.result[t.value] = tile
        if t.kind == CORE:
            if tile in self.comp:
                self.comp.remove(tile)
            if self._demand(t.value) > 0:
                for nb in self.array.mem_affinity_neighbours(tile):
                    self.reserved.setdefault(nb, []).append(t.value)

    # -- mem and shim tiles ---------------------------------------------------------------------------
    def _place_non_core(self) -> None:
        rest = [t for t in self.g.logical if t.value not in self.result and t.kind not in (CORE, SHIM_PL)]
        rest.sort(key=lambda t: -sum(self.channels.get(t.value, (0, 0))))
        flows = _flow_membership(self.g, frozenset(self.lto))
        for t in rest:
            centroid = self._centroid_column(t.value, flows)
            target = t.col if t.col is not None else centroid
            need_in, need_out = self.channels.get(t.value, (0, 0))
            tile = self._tile_with_capacity(target, need_in, need_out, t.kind)
            if tile is None:
                where = f"at column {t.col}" if t.col is not None else f"near centroid column {centroid}"
                raise PlacementError(t.value, f"no {t.kind} has sufficient DMA capacity for {need_in} input/"
                                              f"{need_out} output channels {where}")
            self.result[t.value] = tile
            if not self.merge:
                self.assigned_non_core.add(tile)
            if need_in or need_out:
                self.use_channels(tile, need_in, need_out)

    def _core_column(self, value: str):
        if value in self.g.physical:
            pos = self.g.physical[value]
            return pos[0] if self.array.tile_type(*pos) == CORE else None
        t = self.lto.get(value)
        if t is not None and t.kind == CORE and value in self.result:
            return self.result[value][0]
        return None

    def _centroid_column(self, value: str, flows: dict) -> int:
        """``computeCentroidColumn``: the column with the least routing cost to the compute tiles
        this tile exchanges data with (a broadcast costs nothing inside its span), ties to the
        column nearest their mean."""
        per_flow = []
        for peers in flows.get(value, ()):
            dests = []
            for p in peers:
                col = self._core_column(p)
                if col is not None:
                    dests.append(col)
                elif p != value:
                    dests += [c for pl in flows.get(p, ()) for q in pl
                              for c in [self._core_column(q)] if c is not None]
            if dests:
                per_flow.append(dests)
        if not per_flow:
            return 0
        all_dests = [d for dests in per_flow for d in dests]
        mean = sum(all_dests) / len(all_dests)
        best, best_key = 0, None
        for s in range(self.array.columns):
            cost = sum(abs(s - d[0]) if len(d) == 1 else max(0, min(d) - s, s - max(d)) for d in per_flow)
            key = (cost, abs(s - mean))
            if best_key is None or key < best_key:
                best, best_key = s, key
        return best

    def _tile_with_capacity(self, target: int, need_in: int, need_out: int, kind: str):
        """The free tile of ``kind`` nearest ``target``, then least loaded, then leftmost."""
        best, best_key = None, None
        for tile in self.non_comp:
            if self.array.tile_type(*tile) != kind or not self.has_channels(tile, need_in, need_out):
                continue
            if not self.merge and tile in self.assigned_non_core:
                continue
            key = (abs(tile[0] - target), self.used_in.get(tile, 0) + self.used_out.get(tile, 0), tile[0], tile[1])
            if best_key is None or key < best_key:
                best, best_key = tile, key
        return best


def _flow_ports(graph: PlaceGraph):
    """(port, is a source) of each flow and packet flow end, flows first."""
    for src, dst in graph.flows:
        yield src, True
        yield dst, False
    for srcs, dsts in graph.packet_flows:
        for s in srcs:
            yield s, True
        for d in dsts:
            yield d, False


def _flow_membership(graph: PlaceGraph, logical: frozenset) -> dict:
    """{logical tile value: [peer values of each flow, packet flow and FIFO it is on]}."""
    out: dict = {}

    def add(value, peers):
        if value in logical and peers:
            out.setdefault(value, []).append(list(peers))

    for src, dst in graph.flows:
        add(src.tile, [dst.tile])
        add(dst.tile, [src.tile])
    for srcs, dsts in graph.packet_flows:
        for s in srcs:
            add(s.tile, [d.tile for d in dsts])
        for d in dsts:
            add(d.tile, [s.tile for s in srcs])
    for f in graph.fifos:
        add(f.producer, f.consumers)
        for c in f.consumers:
            add(c, [f.producer])
    return out


def _ops_in(op):
    for region in op.regions:
        for inner in region.ops:
            yield inner
            yield from _ops_in(inner)
