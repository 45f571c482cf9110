"""Convolution on the tile array: the op, one way to map it, and the closed form of that mapping.

A ``Conv2d`` is an NCHW convolution (``groups`` as in PyTorch). Three cases map differently
(``docs/conv.md``):

- **pointwise** (1x1, no padding, one group) is a GEMM: M = n*oh*ow pixels, K = c, N = k. It is
  mapped by the matmul mapper (``fastsim.mapping.search``) and nothing here;
- **depthwise** (groups == c) runs on the cores' vector units: every output element costs R*S
  multiply-accumulates at the arch's element-wise rate;
- everything else runs on the MAC datapath, one kernel call per (rows x ow pixels, kb output
  channels) block, as mlir-aie's conv2dk3 kernels do.

A ``ConvMapping`` lays the layer out the way mlir-aie's conv2d/bottleneck/resnet designs do:
input rows stream through the mem tiles, each of which keeps a ring of rows and re-sends the
R-row window (the halo) every time the output row block advances; weights stay in core memory
(``resident``), or stream one output-channel block at a time (``oc``: the input is re-sent per
block), or stream by (output-channel, input-channel) block when not even one output-channel block
fits (``ci``: partial sums stay in the core's accumulator); output rows and output channels are
split over cores and columns (``split``).

Any shape maps: output rows and channels are padded up to whole parts and blocks, and the padded
work is reported as ``padding_waste``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arch import Arch
from ..dtypes import DTYPE_BYTES
from ..errors import Problems
from ..graph.ops import ConvGeometry
from .pins import PinRules, Pins, check_sizes

SPLITS = ("rows", "oc", "rows_by_col", "oc_by_col")
WEIGHTS = ("resident", "oc", "ci")


def _check_pins(pins: Pins, p: Problems, arch: Arch) -> None:
    p.check(pins.split in (None, *SPLITS), "split", pins.split, f"one of {SPLITS}")
    p.check(pins.weights in (None, *WEIGHTS), "weights", pins.weights, f"one of {WEIGHTS}")
    check_sizes(pins, p, (("cols", 1, arch.columns), ("rows", 1, arch.compute_rows), ("rpc", 1, 4096),
                          ("kb", 1, 4096), ("cb", 1, 4096)))


# what a conv's search takes of ``Pins``
CONV_PINS = PinRules("conv", ("split", "cols", "rows", "rpc", "kb", "weights", "cb"), _check_pins)
MAX_EXTENT = 1 << 16  # per spatial or channel dimension
MAX_MACS = 1 << 40


@dataclass(frozen=True)
class Conv2d(ConvGeometry):
    """One 2-D convolution as the conv mapper searches it: the graph's geometry (``ConvGeometry``,
    NCHW: ``k`` output channels of ``r`` x ``s`` filters over ``c`` input channels, its stride,
    padding, dilation and groups; one record of it for the graph and the mapper) and how it
    computes. ``out_dtype`` defaults to ``dtype`` (the kernel requantizes, as mlir-aie's int8 conv
    kernels do); ``kernel_efficiency`` None takes the arch's matmul kernel figure."""

    dtype: str = "int8"
    out_dtype: str | None = None
    kernel_efficiency: float | None = None
    name: str = "conv"

    @property
    def cg(self) -> int:
        """Input channels per group (what one output channel sums over)."""
        return self.c // self.groups

    @property
    def kg(self) -> int:
        return self.k // self.groups

    @property
    def macs(self) -> int:
        return self.n * self.oh * self.ow * self.k * self.cg * self.r * self.s

    @property
    def kind(self) -> str:
        """``pointwise`` (a GEMM), ``depthwise`` (vector unit) or ``dense`` (MAC datapath)."""
        if self.r == 1 and self.s == 1 and self.padding == 0 and self.groups == 1:
            return "pointwise"
        return "depthwise" if self.groups == self.c else "dense"

    @property
    def in_bytes(self) -> float:
        return DTYPE_BYTES[self.dtype]

    @property
    def out_bytes(self) -> float:
        return DTYPE_BYTES[self.out_dtype or self.dtype]

    @property
    def input_bytes(self) -> float:
        """Bytes of the input activations (what im2col would multiply by R*S)."""
        return self.n * self.c * self.h * self.w * self.in_bytes

    def validate(self, arch: Arch | None = None) -> "Conv2d":
        """Every problem of the fields at once, each naming its field."""
        p = Problems(f"conv {self.name}")
        for f in ("n", "c", "h", "w", "k", "r", "s", "stride", "dilation", "groups"):
            p.number(f, getattr(self, f), integer=True, lo=1, hi=MAX_EXTENT)
        p.number("padding", self.padding, integer=True, lo=0, hi=MAX_EXTENT)
        for f in ("dtype", "out_dtype"):
            v = getattr(self, f)
            p.check((v is None and f == "out_dtype") or v in DTYPE_BYTES, f, v, f"one of {sorted(DTYPE_BYTES)}")
        if self.kernel_efficiency is not None:
            p.number("kernel_efficiency", self.kernel_efficiency, lo=0, lo_open=True, hi=1)
        p.raise_if_any()
        p.check(self.c % self.groups == 0, "groups", self.groups, f"must divide c = {self.c}")
        p.check(self.k % self.groups == 0, "groups", self.groups, f"must divide k = {self.k}")
        p.check(self.oh >= 1, "r", self.r, f"dilation*(r-1)+1 must be <= h + 2*padding = {self.h + 2 * self.padding}")
        p.check(self.ow >= 1, "s", self.s, f"dilation*(s-1)+1 must be <= w + 2*padding = {self.w + 2 * self.padding}")
        if not p.items:
            p.check(self.macs <= MAX_MACS, "n*oh*ow*k*c/groups*r*s", self.macs, f"at most {MAX_MACS:,} MACs")
        if arch is not None and self.kind != "depthwise":
            p.check(bool(arch.datapath_options(self.dtype)), "dtype", self.dtype,
                    f"{arch.name} has MAC datapaths for {sorted(arch.macs_per_cycle)}")
        p.raise_if_any()
        return self


@dataclass(frozen=True, order=True)
class ConvMapping:
    """One point of the conv mapping space (module docstring). ``cols``/``rows`` 0: all.

    ``split``: ``rows`` (every core its own output rows, weights broadcast), ``oc`` (every core its
    own output channels, input broadcast), ``rows_by_col`` (columns split output rows, the cores of
    a column split output channels and share the input: mlir-aie's layout), ``oc_by_col`` (columns
    split output channels, the cores of a column split output rows). ``rpc``: output rows per
    kernel call (and per input window); ``kb``: output channels per call; ``cb``: input channels
    per call (``ci`` weights only)."""

    split: str = "rows_by_col"
    cols: int = 0
    rows: int = 0
    rpc: int = 1
    kb: int = 16
    weights: str = "resident"
    cb: int = 0

    def label(self) -> str:
        parts = [self.split, f"{self.cols}c{self.rows}r", f"rpc{self.rpc}", f"kb{self.kb}", f"w:{self.weights}"]
        if self.weights == "ci":
            parts.append(f"cb{self.cb}")
        return " ".join(parts)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def words(nbytes: float) -> int:
    """Bytes rounded up to whole 32-bit words (DMAs move words), at least one word."""
    return max(4, cdiv(int(-(-nbytes // 1)), 4) * 4)


def check_mapping(mp: ConvMapping, arch: Arch) -> None:
    """The mapping's own fields, every problem at once (the plan checks what the op needs)."""
    p = Problems(f"conv mapping {mp.label()}")
    p.check(mp.split in SPLITS, "split", mp.split, f"one of {SPLITS}")
    p.check(mp.weights in WEIGHTS, "weights", mp.weights, f"one of {WEIGHTS}")
    p.number("cols", mp.cols, integer=True, lo=0, hi=arch.columns)
    p.number("rows", mp.rows, integer=True, lo=0, hi=arch.compute_rows)
    p.number("rpc", mp.rpc, integer=True, lo=1, hi=MAX_EXTENT)
    p.number("kb", mp.kb, integer=True, lo=1, hi=MAX_EXTENT)
    p.number("cb", mp.cb, integer=True, lo=1 if mp.weights == "ci" else 0, hi=MAX_EXTENT)
    p.raise_if_any()

