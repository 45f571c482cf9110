"""Cascade streams (``aie.cascade_flow``): a core's accumulator stream to its neighbour's core.

A kernel writes the cascade (``put_mcd``) and its neighbour's kernel reads it (``get_scd``) while
both run: each blocks when the other is not there, so a put call and its get call run together.
fastsim models this at kernel-call granularity as a rendezvous. The n-th cascade call on the
producing core and the n-th on the consuming core start together, when the later of the two
arrives, and each then takes its own cost. Calls linked through a chain of flows (a middle core
that gets and puts in one call) start together too: the rendezvous is a two-phase barrier along the
chain, built from a pair of locks per flow, so the engine needs nothing new.

Which calls use the cascade: on a core that ends a cascade flow, a call of a kernel whose name has
the word ``put`` uses its outgoing flow and one with ``get`` its incoming flow (mlir-aie's
``matmul_scalar_put_get_*``, IRON's ``cascade_put_only``); when no kernel called on that core is
so named, every call there uses every flow the core ends (mlir-aie's ``cascade_flows`` test, whose
kernels are ``extern_kernel1..3``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..design import Acquire, Lock, Release, Tile
from .values import Unreadable, groups, split


@dataclass
class CascadeFlow:
    """One ``aie.cascade_flow(%producer, %consumer)``. ``ready`` counts consumer-side arrivals (the
    consumer and every core downstream of it have reached their calls); ``go`` lets the consumer
    start once the producer side has. Both locks are made on first use."""

    producer: Tile
    consumer: Tile
    line: int
    ready: Lock | None = None
    go: Lock | None = None

    @property
    def name(self) -> str:
        p, c = self.producer, self.consumer
        return f"cascade_{p.col}_{p.row}_to_{c.col}_{c.row}"


class Cascades:
    """The device's cascade flows, at most one into and one out of each core (an AIE-ML core has
    one cascade input and one output)."""

    def __init__(self, reader):
        self.r = reader
        self.out: dict[Tile, CascadeFlow] = {}
        self.into: dict[Tile, CascadeFlow] = {}

    def declare(self, op) -> None:
        """``aie.cascade_flow(%a, %b)``: neighbouring compute tiles, each end used once."""
        args = split(groups(op, "(")[0].items)
        if len(args) != 2:
            raise Unreadable("expected aie.cascade_flow(%producer, %consumer)")
        src, dst = self.r.value(args[0], Tile), self.r.value(args[1], Tile)
        arch = self.r.design.arch
        if abs(src.col - dst.col) + abs(src.row - dst.row) != 1:
            raise Unreadable(f"a cascade joins neighbouring tiles; {src} and {dst} are not neighbours")
        if dst.col < src.col or dst.row > src.row:
            raise Unreadable(f"an AIE-ML cascade runs east or south (its input is North or West); {src} -> {dst} "
                             "does not")
        if any(arch.tile_kind_name(t.row) != "compute" for t in (src, dst)):
            raise Unreadable(f"a cascade joins compute tiles' cores ({src} -> {dst})")
        if src in self.out or dst in self.into:
            raise Unreadable(f"a second cascade flow out of {src} or into {dst}: a core has one cascade "
                             "output and one input")
        flow = CascadeFlow(src, dst, op.line)
        self.out[src] = flow
        self.into[dst] = flow

    def ends(self, tile: Tile) -> bool:
        return tile in self.out or tile in self.into

    def flows_of_call(self, tile: Tile, kernel: str, named: bool) -> tuple:
        """(incoming flow or None, outgoing flow or None) the call of ``kernel`` on ``tile`` uses.
        ``named``: some kernel called on this core says ``put`` or ``get`` in its name."""
        if not self.ends(tile):
            return None, None
        if not named:
            return self.into.get(tile), self.out.get(tile)
        words = cascade_words(kernel)
        into = self.into.get(tile) if "get" in words else None
        out = self.out.get(tile) if "put" in words else None
        if "get" in words and into is None:
            raise Unreadable(f"kernel '{kernel}' gets from a cascade, but no aie.cascade_flow goes into {tile}")
        if "put" in words and out is None:
            raise Unreadable(f"kernel '{kernel}' puts onto a cascade, but no aie.cascade_flow leaves {tile}")
        return into, out

    def rendezvous(self, into: CascadeFlow | None, out: CascadeFlow | None) -> list:
        """Core ops before a cascade call: wait until the consumer side has arrived (``ready`` of the
        outgoing flow), tell the producer side (``ready`` of the incoming flow), wait for its go,
        pass the go on. The head of a chain goes once everything downstream has arrived, so every
        call of the chain starts in the same few cycles."""
        ops = []
        if out is not None:
            ops.append(Acquire(self._locks(out)[0], 1))
        if into is not None:
            ops.append(Release(self._locks(into)[0], 1))
            ops.append(Acquire(self._locks(into)[1], 1))
        if out is not None:
            ops.append(Release(self._locks(out)[1], 1))
        return ops

    def _locks(self, flow: CascadeFlow) -> tuple[Lock, Lock]:
        """The flow's (ready, go) locks, on whichever end holds fewer locks: both cores reach
        locks of their own and their neighbour's tile."""
        if flow.ready is None:
            d = self.r.design
            count = {t: sum(lk.tile == t for lk in d.locks) for t in (flow.consumer, flow.producer)}
            tile = min((flow.consumer, flow.producer), key=lambda t: count[t])
            flow.ready = d.lock(tile, 0, flow.name + "_ready")
            flow.go = d.lock(tile, 0, flow.name + "_go")
        return flow.ready, flow.go


def cascade_words(kernel: str) -> set:
    """The words ``put`` and ``get`` among a kernel name's ``_``-separated words."""
    return {w for w in kernel.lower().split("_") if w in ("put", "get")}
