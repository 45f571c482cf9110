"""The one record of what a user fixes about an op's mapping (``Pins``), for every op kind, and
how an op kind declares which of its fields it takes and their ranges (``PinRules``: each
mapper declares its own, beside its space)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

from ..arch import Arch
from ..errors import Problems


@dataclass(frozen=True)
class Pins:
    """Constraints on a mapping search, one record for every op kind: each set field fixes (or, for
    ``dataflow``, restricts) a choice. Which fields an op kind takes, and their ranges, its mapper
    declares (``PinRules``); a search refuses a field its kind does not take."""

    dataflow: tuple[str, ...] = ()
    split: str | None = None
    tile: tuple[int, int, int] | None = None
    cols: int | None = None
    rows: int | None = None
    col0: int | None = None
    k_split: int | None = None
    order: str | None = None
    l2: str | None = None
    datapath: str | None = None
    stream_split: str | None = None
    buffers: int | None = None  # 1: single-buffered A and B (an implementation that double-buffers nothing)
    c_buffers: int | None = None  # 1: each producer's C tile single-buffered in core memory (default 2)
    k_panel: int | None = None  # L1 K tiles a mem-tile buffer of a streamed operand stages (os; default 1)
    # conv only: output rows and output channels per call, how weights reach the cores, input
    # channels per call (weights "ci")
    rpc: int | None = None
    kb: int | None = None
    weights: str | None = None
    cb: int | None = None

    def set_fields(self) -> dict:
        """The fields this record fixes (name -> value)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) not in (None, ())}


@dataclass(frozen=True)
class PinRules:
    """What ``Pins`` an op kind's search takes: ``names``, the fields it reads (any other set field
    is refused by name), and ``check``, which adds a problem for each value out of its range on
    an arch."""

    kind: str
    names: tuple[str, ...]
    check: Callable[[Pins, Problems, Arch], None]

    def validate(self, pins: Pins, arch: Arch) -> Pins:
        """``pins`` for a search of this kind on ``arch``: every problem reported at once."""
        p = Problems("mapping pins" if self.kind == "matmul" else f"{self.kind} mapping pins")
        for name, value in pins.set_fields().items():
            if name not in self.names:
                p.add(name, value, f"not a {self.kind} pin: this op is a {self.kind}, which pins "
                      + ", ".join(self.names))
        self.check(pins, p, arch)
        p.raise_if_any()
        return pins


def check_sizes(pins: Pins, p: Problems, ranges: tuple) -> None:
    """Each (name, lowest, highest) of ``ranges`` a whole number in its range where it is set."""
    for name, lo, hi in ranges:
        if getattr(pins, name) is not None:
            p.number(name, getattr(pins, name), integer=True, lo=lo, hi=hi)
