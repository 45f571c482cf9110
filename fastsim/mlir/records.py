"""Records and forms the reader and its parts (FIFOs, the runtime sequence) share: kept apart so
that those parts need not import the reader that calls them."""
from __future__ import annotations

from dataclasses import dataclass

from ..design import BD, Channel
from .syntax import Group, Op
from .values import int_of, split, word

# ops that describe observation or configuration with no effect on the modelled timing
NO_TIMING = frozenset({
    "aie.trace", "aie.trace.event", "aie.trace.port", "aie.trace.mode", "aie.trace.packet",
    "aie.trace.start", "aie.trace.stop", "aie.trace.start_config", "aie.trace.host_config",
    "aie.end", "memref.global", "aiex.npu.rtp_write", "aiex.dma_free_task", "aie.device_property",
})


@dataclass(frozen=True)
class FifoObject:
    """The SSA value of an object a core acquired from an object FIFO (its ``acquire`` or
    ``subview.access``): what a kernel call's memref operand came through, so its layout in
    local memory (the producer's ``dimensionsToStream``) can be read."""

    fifo: str


@dataclass
class Task:
    """A runtime-sequence DMA task (``dma_configure_task``): its channel, first BD and repeats."""

    channel: Channel
    bd: BD
    repeat: int


@dataclass
class RunCall:
    """An ``aiex.configure`` of another device as the sequence reader finds it, resolved against
    the file's devices after the device is read."""

    device: str
    sequences: list
    op: Op


def pad_layout(group: Group) -> tuple:
    """``[<const_pad_before = b, const_pad_after = a>, ...]`` -> ((b, a), ...), outermost first."""
    out = []
    for entry in split(group.items):
        g = next((i for i in entry if isinstance(i, Group) and i.kind == "<"), None)
        if g is not None:
            kv = {word(part[:1]): int_of(part[2:]) for part in split(g.items) if len(part) >= 3}
            out.append((kv.get("const_pad_before", 0), kv.get("const_pad_after", 0)))
    return tuple(out)
