"""What tile placement reads from an ``aie.device``: its logical tiles and the ops that tie tiles
together (object FIFOs and their links, flows, packet flows, cascades, and the buffers of other
tiles that a core's code uses), each naming tiles by their SSA values.

The lists keep the order of the ops in the file, which is the order mlir-aie's placer collects
them in (``Placer::collectOperations`` walks the device), so placement decisions that depend on
order come out the same.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .syntax import Atom, Group, Op
from .tile_array import TILE_TYPES
from .values import Unreadable, groups, int_list, split, word

# ops whose result is a view of their first operand (MLIR's ViewLikeOpInterface among memref ops)
VIEW_OPS = frozenset({"memref.subview", "memref.reinterpret_cast", "memref.view", "memref.cast",
                      "memref.collapse_shape", "memref.expand_shape", "memref.transpose",
                      "memref.memory_space_cast"})


@dataclass
class LogicalTile:
    """``%v = aie.logical_tile<Kind>(col|?, row|?)``."""

    value: str
    kind: str
    col: int | None
    row: int | None
    op: Op


@dataclass
class Fifo:
    name: str
    producer: str
    consumers: list


@dataclass
class Port:
    """One end of a flow: tile value, bundle (``DMA``, ``Core``, ...) and channel."""

    tile: str
    bundle: str
    channel: int


@dataclass
class PlaceGraph:
    logical: list = field(default_factory=list)        # LogicalTile, in file order
    physical: dict = field(default_factory=dict)       # value -> (col, row) of each aie.tile
    fifos: list = field(default_factory=list)          # Fifo
    links: list = field(default_factory=list)          # (input FIFO names, output FIFO names)
    cascades: list = field(default_factory=list)       # (source tile, destination tile)
    flows: list = field(default_factory=list)          # (source Port, destination Port)
    packet_flows: list = field(default_factory=list)   # (source Ports, destination Ports)
    cores: dict = field(default_factory=dict)          # tile value -> aie.core op
    buffer_owner: dict = field(default_factory=dict)   # buffer value -> tile value
    view_source: dict = field(default_factory=dict)    # view value -> the value it views

    def is_tile(self, value: str) -> bool:
        return value in self.physical or any(t.value == value for t in self.logical)


def read_graph(device: Op) -> PlaceGraph:
    """The placement graph of one ``aie.device`` op."""
    g = PlaceGraph()
    for op in _walk(device.regions[0].ops if device.regions else ()):
        if op.name == "aie.logical_tile":
            g.logical.append(_logical_tile(op))
            continue
        try:
            _collect(g, op)
        except (Unreadable, IndexError, ValueError, StopIteration):
            pass  # an op the reader cannot read either: it reports it with its line
    return g


def has_logical_tiles(device: Op) -> bool:
    return any(op.name == "aie.logical_tile" for op in _walk(device.regions[0].ops if device.regions else ()))


def _walk(ops):
    for op in ops:
        yield op
        for region in op.regions:
            yield from _walk(region.ops)


def values_of(items) -> list[str]:
    """The SSA values among ``items``, through brackets (not regions), in order."""
    out = []
    for it in items:
        if isinstance(it, Atom) and it.kind == "VALUE":
            out.append(it.text)
        elif isinstance(it, Group):
            out += values_of(it.items)
    return out


def _collect(g: PlaceGraph, op: Op) -> None:
    name = op.name
    if name == "aie.tile" and op.results:
        g.physical[op.results[0]] = tuple(int_list(groups(op, "(")[0]))
    elif name == "aie.objectfifo":
        args = split(groups(op, "(")[0].items)
        sym = next(i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL")
        g.fifos.append(Fifo(sym, values_of(args[0])[0], values_of(args[1])))
    elif name == "aie.objectfifo.link":
        ins, outs = (
            [i.text.lstrip("@") for i in sq.items if isinstance(i, Atom) and i.kind == "SYMBOL"]
            for sq in groups(op, "[")[:2])
        g.links.append((ins, outs))
    elif name == "aie.cascade_flow":
        tiles = values_of(groups(op, "(")[0].items)
        g.cascades.append((tiles[0], tiles[1]))
    elif name == "aie.flow":
        a = split(groups(op, "(")[0].items)
        g.flows.append((_port(a[0], a[1]), _port(a[2], a[3])))
    elif name == "aie.packet_flow":
        inner = [i for r in op.regions for i in r.ops]
        ends = {kind: [_port(*split(groups(i, "<")[0].items)[:2]) for i in inner if i.name == kind]
                for kind in ("aie.packet_source", "aie.packet_dest")}
        g.packet_flows.append((ends["aie.packet_source"], ends["aie.packet_dest"]))
    elif name == "aie.core":
        g.cores.setdefault(values_of(groups(op, "(")[0].items)[0], op)
    elif name == "aie.buffer" and op.results:
        g.buffer_owner[op.results[0]] = values_of(groups(op, "(")[0].items)[0]
    elif name in VIEW_OPS and op.results:
        sources = values_of(op.items)
        if sources:
            g.view_source[op.results[0]] = sources[0]


def _logical_tile(op: Op) -> LogicalTile:
    kinds = groups(op, "<")
    kind = word(kinds[0].items) if kinds else ""
    if kind not in TILE_TYPES:
        raise Unreadable(f"unknown logical tile type {kind!r} (one of {', '.join(TILE_TYPES)})")
    coords = split(groups(op, "(")[0].items)
    col, row = (None if len(c) == 1 and isinstance(c[0], Atom) and c[0].kind == "QMARK" else int(c[0].text)
                for c in coords[:2])
    return LogicalTile(op.results[0], kind, col, row, op)


def _port(tile_items, port_items) -> Port:
    ints = [i for i in port_items if isinstance(i, Atom) and i.kind == "INT"]
    return Port(values_of(tile_items)[0], word(port_items), int(ints[-1].text, 0) if ints else 0)
