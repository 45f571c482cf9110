"""The one record of what a user fixes about an op's mapping (``Pins``), for every op kind."""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..arch import Arch
from ..errors import Problems
from .conv import SPLITS as CONV_SPLITS, WEIGHTS
from .paths import STREAM_SPLITS
from .space import DATAFLOWS, L2_CHOICES, SPLITS

# the pins of one op kind only
CONV_ONLY = ("rpc", "kb", "weights", "cb")
MATMUL_ONLY = ("dataflow", "tile", "col0", "k_split", "order", "l2", "datapath", "stream_split", "buffers")
# a transpose's: its columns, rows and tile (tm, tn, 1); nothing else of the other kinds'
TRANSPOSE_PINS = ("cols", "rows", "tile")
PIN_KINDS = ("matmul", "conv", "transpose")  # the op kinds that search a mapping


@dataclass(frozen=True)
class Pins:
    """Constraints on a mapping search, one record for every op kind: each set field fixes (or, for
    ``dataflow``, restricts) a choice. ``split``, ``cols`` and ``rows`` apply to every kind (a split's
    values are the kind's own); the others to one kind, and a search refuses another kind's pin."""

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
    # conv only: output rows and output channels per call, how weights reach the cores, input
    # channels per call (weights "ci")
    rpc: int | None = None
    kb: int | None = None
    weights: str | None = None
    cb: int | None = None

    def validate(self, arch: Arch, kind: str = "matmul") -> "Pins":
        """Every set field in its range on ``arch``; ``kind`` (matmul, conv or transpose): the op kind
        searched, whose pins alone may be set."""
        if kind not in PIN_KINDS:
            raise ValueError(f"Pins.validate: kind {kind!r} has no pins ({', '.join(PIN_KINDS)})")  # a caller's bug
        p = Problems({"matmul": "mapping pins"}.get(kind, f"{kind} mapping pins"))
        if kind == "transpose":
            for f in fields(self):
                if f.name not in TRANSPOSE_PINS and getattr(self, f.name) not in (None, ()):
                    p.add(f.name, getattr(self, f.name), f"not a transpose pin: a transpose pins {TRANSPOSE_PINS}")
            self._sizes(p, (("cols", 1, arch.columns), ("rows", 1, arch.compute_rows)))
            p.check(self.tile is None or (isinstance(self.tile, tuple) and len(self.tile) == 3 and all(
                isinstance(x, int) and x >= 1 for x in self.tile)), "tile", self.tile, "three sizes tm, tn, 1")
            p.raise_if_any()
            return self
        for name in (CONV_ONLY if kind == "matmul" else MATMUL_ONLY):
            if getattr(self, name) not in (None, ()):
                p.add(name, getattr(self, name), f"a {'conv' if kind == 'matmul' else 'matmul'} pin: this op is a {kind}")
        if kind == "conv":
            self._conv(p, arch)
        else:
            self._matmul(p, arch)
        p.raise_if_any()
        return self

    def _sizes(self, p: Problems, ranges: tuple) -> None:
        for name, lo, hi in ranges:
            if getattr(self, name) is not None:
                p.number(name, getattr(self, name), integer=True, lo=lo, hi=hi)

    def _conv(self, p: Problems, arch: Arch) -> None:
        p.check(self.split in (None, *CONV_SPLITS), "split", self.split, f"one of {CONV_SPLITS}")
        p.check(self.weights in (None, *WEIGHTS), "weights", self.weights, f"one of {WEIGHTS}")
        self._sizes(p, (("cols", 1, arch.columns), ("rows", 1, arch.compute_rows), ("rpc", 1, 4096),
                        ("kb", 1, 4096), ("cb", 1, 4096)))

    def _matmul(self, p: Problems, arch: Arch) -> None:
        if p.check(isinstance(self.dataflow, tuple), "dataflow", self.dataflow, "a tuple of dataflows"):
            for f in self.dataflow:
                p.check(isinstance(f, str) and f in DATAFLOWS, "dataflow", f, f"one of {DATAFLOWS}")
        p.check(self.split in (None, *SPLITS), "split", self.split, f"one of {SPLITS}")
        if self.tile is not None:
            p.check(isinstance(self.tile, (tuple, list)) and len(self.tile) == 3
                    and all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 4096 for x in self.tile),
                    "tile", self.tile, "three sizes m,k,n in 1..4096")
        self._sizes(p, (("cols", 1, arch.columns), ("rows", 1, arch.compute_rows), ("col0", 0, arch.columns - 1),
                        ("k_split", 1, 64)))
        p.check(self.order in (None, "m", "n"), "order", self.order, "m or n")
        p.check(self.datapath is None or (isinstance(self.datapath, str) and self.datapath in arch.macs_per_cycle),
                "datapath", self.datapath, f"one of {sorted(arch.macs_per_cycle)}")
        p.check(self.l2 is None or self.l2 in L2_CHOICES, "l2", self.l2, "'', a, b or ab")
        p.check(self.stream_split in (None, *STREAM_SPLITS), "stream_split", self.stream_split,
                f"one of {STREAM_SPLITS}")
        p.check(self.buffers in (None, 1, 2) and not isinstance(self.buffers, bool), "buffers", self.buffers,
                "1 or 2 (buffers per streamed A/B transfer)")
