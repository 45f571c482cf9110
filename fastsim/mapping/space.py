"""The mapping space of a matmul-like op: what the op is, and one way to put it on the array.

A ``Matmul`` is C[M,N] = A[M,K] @ B[K,N] (A: activations, B: weights or the KV cache, C: the
output). A ``Mapping`` says how it runs:

- **spatial split**: ``rows`` x ``cols`` cores (columns ``col0 ..``); K is split over ``k_split``
  vertically adjacent cores of a column (they add their partial sums through shared memory), which
  leaves ``groups = rows / k_split`` output producers per column. ``split`` assigns M and N to them:
  ``2d`` (groups split M, columns split N: A along core rows, B down columns, as mlir-aie's
  whole_array), ``2dt`` (its transpose: columns split M, groups split N: A down columns, B along core
  rows, as mlir-air's GEMM herd runs, herd x on the columns), ``n`` (every producer owns a slice of N,
  A broadcast to all) or ``m`` (every producer owns a slice of M, B broadcast to all).
- **temporal dataflow** per core: ``os`` (C tile resident, A and B tiles stream along K), ``ws`` (a
  K x n block of B resident in core memory while every A row streams past, one round per n tile),
  ``is`` (an m x K block of A resident while B streams past, one round per m tile). ``order`` picks
  the outer loop of ``os`` (``m``: A panels outer, ``n``: B panels outer).
- **L1 tile** ``(m, k, n)``: the microkernel's shape, double-buffered in core memory (``buffers`` 1: A
  and B single; ``c_buffers`` 1: each producer's C tile single, so it waits for each drain: a pin).
- **K panel** ``k_panel`` (os): the L1 K tiles one mem-tile buffer of a streamed operand stages (mlir-air's
  ``tile_k_l2 / tile_k_l1``): the shim fills it in one piece (a row-major operand's DDR runs as long as
  the panel's K extent) and the mem tile sends it on as L1 tiles. The largest divisor of a core's K
  tiles at most ``k_panel`` is used; 1 (the default, searched this way): one L1 tile per buffer.
- **L2 residency** ``l2``: operands whose repeated block a mem tile holds and re-sends (BD iterations)
  instead of reading it from DDR again: ``""``, ``"a"``, ``"b"`` or ``"ab"``.
- **on-chip operands** (``Matmul.a_on_chip``/``c_on_chip``, set by fusion): A is read from, or C
  written to, a mem-tile buffer instead of DDR; the hosting mem tile's DMA sends or receives it on
  tasks the runtime sequence pushes (no shim transfer).
- **stream split** ``stream_split``: which columns' shims stream the parts every column needs (a
  broadcast operand): ``equal`` deals them round-robin, ``proportional`` in proportion to each
  column's shim read bandwidth (one stream's width at most) (asymmetric arrays; the same on symmetric ones). Parts one column
  needs always come through its own shim: they follow the compute split.
- **datapath**: the MAC-rate key (``bf16`` natively, or ``bfp16`` after an on-core conversion).

Any M, K, N >= 1 maps: every loop count is rounded up and the padded work is reported.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arch import Arch
from ..dtypes import DTYPE_BYTES, OUT_DTYPE
from ..errors import Problems
from .paths import STREAM_SPLITS
from .pins import PinRules, Pins, check_sizes

DATAFLOWS = ("os", "ws", "is")
SPLITS = ("2d", "2dt", "n", "m")
K_PANEL_MAX = 256  # L1 K tiles per mem-tile buffer (tile_k_l2 512 over tile_k_l1 32 is 16)
# what the search tries unpinned: 2dt (2d's transpose, the orientation of mlir-air's GEMM herds) is a
# pin for as-built designs. Searched too, it left the answers of a 2048^3 bf16 and a 512x2048x8192
# int8 GEMM and of a 2k-token Llama-3.2-1B prefill on npu2 unchanged and made the cold 2048^3 search
# about 30 % slower (bench/cold_runs.py gemm, 2026-12-06)
SEARCHED_SPLITS = ("2d", "n", "m")


def split_parts(split: str, cols: int, groups: int) -> tuple[int, int]:
    """(M parts, N parts) of the output producers (``cols`` x ``groups``) under ``split``."""
    return {"2d": (groups, cols), "2dt": (cols, groups), "n": (1, cols * groups), "m": (cols * groups, 1)}[split]


def producer_parts(split: str, col: int, group: int, groups: int) -> tuple[int, int]:
    """(M part, N part) that the producer of group ``group`` in column ``col`` computes."""
    return {"2d": (group, col), "2dt": (col, group), "n": (0, col * groups + group),
            "m": (col * groups + group, 0)}[split]


def local_operands(split: str) -> tuple[bool, bool]:
    """(A local, B local): whether each part of the operand is needed by one column only (its own
    shim streams it) rather than by every column (hosted where the stream split deals it)."""
    return split in ("m", "2dt"), split in ("2d", "n")
L2_CHOICES = ("", "a", "b", "ab")


def _check_pins(pins: Pins, p: Problems, arch: Arch) -> None:
    if p.check(isinstance(pins.dataflow, tuple), "dataflow", pins.dataflow, "a tuple of dataflows"):
        for f in pins.dataflow:
            p.check(isinstance(f, str) and f in DATAFLOWS, "dataflow", f, f"one of {DATAFLOWS}")
    p.check(pins.split in (None, *SPLITS), "split", pins.split, f"one of {SPLITS}")
    if pins.tile is not None:
        p.check(isinstance(pins.tile, (tuple, list)) and len(pins.tile) == 3
                and all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 4096 for x in pins.tile),
                "tile", pins.tile, "three sizes m,k,n in 1..4096")
    check_sizes(pins, p, (("cols", 1, arch.columns), ("rows", 1, arch.compute_rows), ("col0", 0, arch.columns - 1),
                          ("k_split", 1, 64)))
    p.check(pins.order in (None, "m", "n"), "order", pins.order, "m or n")
    p.check(pins.datapath is None or (isinstance(pins.datapath, str) and pins.datapath in arch.macs_per_cycle),
            "datapath", pins.datapath, f"one of {sorted(arch.macs_per_cycle)}")
    p.check(pins.l2 is None or pins.l2 in L2_CHOICES, "l2", pins.l2, "'', a, b or ab")
    p.check(pins.stream_split in (None, *STREAM_SPLITS), "stream_split", pins.stream_split,
            f"one of {STREAM_SPLITS}")
    p.check(pins.buffers in (None, 1, 2) and not isinstance(pins.buffers, bool), "buffers", pins.buffers,
            "1 or 2 (buffers per streamed A/B transfer)")
    p.check(pins.c_buffers in (None, 1, 2) and not isinstance(pins.c_buffers, bool), "c_buffers", pins.c_buffers,
            "1 or 2 (buffers per producer's C tile in core memory)")
    check_sizes(pins, p, (("k_panel", 1, K_PANEL_MAX),))
    if pins.k_panel not in (None, 1):
        p.check(pins.dataflow == ("os",), "k_panel", pins.k_panel,
                "1 unless the dataflow is pinned to os (a K panel stages the operands os streams along K)")


# what a matmul's search takes of ``Pins``
MATMUL_PINS = PinRules("matmul", ("dataflow", "split", "tile", "cols", "rows", "col0", "k_split", "order", "l2",
                                  "datapath", "stream_split", "buffers", "c_buffers", "k_panel"),
                          _check_pins)


@dataclass(frozen=True)
class Matmul:
    """One matmul-like op. Element sizes default to the dtype's; B may be narrower (int4 weights
    with scales: 0.5625 bytes) and is then dequantized on the core (``cast_cycles_per_weight``)."""

    m: int
    k: int
    n: int
    dtype: str = "bf16"
    a_bytes: float | None = None
    b_bytes: float | None = None
    c_bytes: float | None = None
    kernel_efficiency: float | None = None  # None: the arch's measured figure for the datapath
    kernel_overhead_cycles: int = 0
    cast_cycles_per_weight: float = 0.0
    macs_scale: float = 1.0  # e.g. 0.5 for causal attention
    static_b: bool = False  # B preloaded for the dispatch (weight-stationary only)
    name: str = "matmul"
    # fused groups: A already sits in the mem tiles (written by the previous op of the group) and/or
    # C stays there for the next op; an on-chip buffer holds at most ``onchip_window_bytes`` (0: the
    # whole part; a streamed hand-off such as flash attention's needs only a block)
    a_on_chip: bool = False
    c_on_chip: bool = False
    onchip_window_bytes: int = 0
    # A, B and C lie in DDR row-major and shim BDs read them in runs of a tile row, each paying the
    # DDR cost per run (fastsim.mapping.ddr_runs): an implementation's layout, set where an as-built
    # description says so. False (the default): each operand laid out in the order its design reads
    # it, one run per BD, as a deployment that owns its layouts does (and tile-row runs would keep
    # the engine stepping: the exact 2048^3 search's winner stepped 685k of its 3.8M cycles)
    row_major_ddr: bool = False
    # C stays on chip but goes on to another column's mem tile (a pipeline stage's output): the
    # hand-off takes one MM2S channel of each producer mem tile, which the design must leave free
    c_handoff: bool = False
    # who wrote the kernel (``kernel_model.matmul.CODEGENS``): "external", a hand-written mm.cc, or
    # "direct", the matmul mlir-air's compiler generates (fitted: docs/kernel_model.md); an
    # implementation fact, never searched
    codegen: str = "external"

    @property
    def a_elem_bytes(self) -> float:
        return self.a_bytes if self.a_bytes is not None else DTYPE_BYTES.get(self.dtype, 2)

    @property
    def b_elem_bytes(self) -> float:
        return self.b_bytes if self.b_bytes is not None else DTYPE_BYTES.get(self.dtype, 2)

    @property
    def c_elem_bytes(self) -> float:
        if self.c_bytes is not None:
            return self.c_bytes
        return DTYPE_BYTES.get(OUT_DTYPE.get(self.dtype, self.dtype), 4)

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n


@dataclass(frozen=True, order=True)
class Mapping:
    """One point of the mapping space (see the module docstring). ``cols``/``rows`` 0: all."""

    dataflow: str = "os"
    split: str = "2d"
    tile: tuple[int, int, int] = (64, 64, 64)
    cols: int = 0
    rows: int = 0
    col0: int = 0
    k_split: int = 1
    order: str = "m"
    l2: str = ""
    datapath: str = ""
    stream_split: str = "equal"
    buffers: int = 2  # buffers per streamed A/B transfer in core and mem tile: 2 (where it fits) or 1
    k_panel: int = 1  # L1 K tiles per mem-tile buffer of a streamed operand (os), at most
    c_buffers: int = 2  # buffers per producer's C tile in core memory: 1 = the core waits for each drain

    def label(self) -> str:
        m, k, n = self.tile
        parts = [f"{self.dataflow}/{self.split}", f"{m}x{k}x{n}", f"{self.cols}c{self.rows}r"]
        if self.col0:
            parts.append(f"@{self.col0}")
        if self.k_split > 1:
            parts.append(f"ks{self.k_split}")
        if self.dataflow == "os":
            parts.append(f"{self.order}-outer")
        if self.l2:
            parts.append(f"L2:{self.l2}")
        if self.datapath:
            parts.append(self.datapath)
        if self.stream_split != "equal":
            parts.append(f"split:{self.stream_split}")
        if self.buffers == 1:
            parts.append("single-buffered")
        if self.c_buffers == 1:
            parts.append("C single-buffered")
        if self.k_panel > 1:
            parts.append(f"panel:{self.k_panel}k")
        return " ".join(parts)


def baseline_mapping(arch) -> Mapping:
    """The mapping fastsim used before it searched: whole-array output-stationary 64^3 tiles, no
    L2 residency (mlir-aie whole_array). Searches simulate it when it is legal and its bound says it
    could win, so their answer is never slower."""
    return Mapping("os", "2d", (64, 64, 64), arch.columns, arch.compute_rows)
