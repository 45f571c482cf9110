"""Convolution micro-kernels: standard, pointwise and depthwise conv calls on one core.

mlir-aie's conv kernels (``aie_kernels/aie2/conv2dk1_i8.cc``, ``conv2dk3.cc``, ``conv2dk3_dw.cc``)
are matmuls over ``aie::mmul<4, 8, 8>`` (4 output pixels x 8 input channels x 8 output channels):

- **pointwise** (1 x 1): a matmul, m = pixels, k = input channels, n = output channels, whose
  accumulators hold ``expand`` pixel chunks of one 8-channel block, start from zero and are stored
  once (no C load): the matmul micro-kernel's formula (``matmul.matmul_call_cycles``) with that
  kernel, its k loop over the channels pipelined across blocks;
- **dense** (standard, r x s > 1): the same matmul over k = channels x r x s, plus the sliding-window
  realignment each tap's A vector needs (``vshift``/``vmov`` in the issue slots): per MAC
  instruction ``realign_per_mmul`` cycles;
- **depthwise**: each channel has its own filter, so no reduction over channels: vector MACs of
  ``depthwise_lanes`` output elements per cycle, one tap at a time, plus the same realignment.

Cycles per call (numpy-broadcast)::

    pointwise  = matmul(pixels, cin, kb)
    dense      = matmul(pixels, cin r s, kb) + ceil(padded MACs / (r0 s0 t0)) * realign_per_mmul
    depthwise  = call + ceil(pixels kb / lanes) * r s * (1 + realign_per_mmul) / efficiency
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..arch import Arch
from . import matmul as MM


@dataclass(frozen=True)
class ConvUnits:
    """Per generation: the dense/pointwise micro-kernel's expansion, sliding-window cost and the
    depthwise vector width."""

    expand: tuple[int, int]  # (pixel chunks, output-channel blocks) held in accumulators at once
    realign_per_mmul: float  # vshift/vmov cycles per MAC instruction of a windowed (r x s > 1) conv
    depthwise_lanes: int  # output elements one depthwise vector MAC computes


# AIE-ML: conv2dk3's main loop is 18 bundles holding 4 vmac, 6 vshift and 4 vmov (jdominick05/ryzen-ai-
# xdna1-quantization, "The open conv's 11.3x gap to the vendor is issue rate": train row R4), so
# 10 realignment cycles per 4 MACs = 2.5. Depthwise lanes: 32 int8 lanes of one 256-bit vector
# (assumption: AM020's int8 vector MAC, one tap per lane per cycle).
# Expansion: conv2dk1_i8_vector keeps accumulators over 4-pixel chunks of one 8-channel output block
# (MMUL4x8x8 acc_tmp[...]; at most 4 live in registers: jdominick05's rewrite, "max 4 live anywhere"),
# zeroed at the start and stored once with SRS: (4, 1), no C load.
CONV_UNITS = {"aie2": ConvUnits(expand=(4, 1), realign_per_mmul=2.5, depthwise_lanes=32),
              # AIE-ML v2: assumption, the AIE-ML structure on the 8x8x8 shape (no AIE-ML v2 conv read)
              "aie2p": ConvUnits(expand=(2, 1), realign_per_mmul=2.5, depthwise_lanes=32)}
KINDS = ("dense", "pointwise", "depthwise")  # dense: a standard (or grouped) conv, fastsim.mapping.conv


def conv_units(arch: Arch) -> ConvUnits | None:
    """The conv units of ``arch``'s generation; None where the matmul model has none."""
    return MM.with_settings(CONV_UNITS.get(MM.generation(arch)), "conv", arch) if MM.units(arch) else None


def conv_call_cycles(arch: Arch, key: str, kind: str, pixels, cin, kb, r: int, s: int, *,
                     tuning: MM.Tuning = MM.Tuning(), conv_cycles_per_elem: float = 0.0, out_bytes: float = 1.0):
    """Cycles of one conv call: ``pixels`` output pixels by ``kb`` output channels over ``cin``
    input channels and an r x s window, on datapath ``key`` (module docstring formulas). ``kind``
    one of ``KINDS`` (a 1 x 1 dense conv prices as pointwise); ``out_bytes`` per output element
    (stored once, after SRS)."""
    cu, kern, u = conv_units(arch), MM.micro_kernel(arch, key), MM.units(arch)
    if kind == "depthwise":
        vmacs = np.ceil(np.asarray(pixels, dtype=np.float64) * kb / cu.depthwise_lanes)
        return (u.call_cycles + tuning.call_extra_cycles
                + vmacs * (r * s) * (1 + cu.realign_per_mmul) / tuning.efficiency)
    k = np.asarray(cin) * r * s
    # the conv loops pipelined across blocks, their stores hidden (assumption: no conv trace read)
    kern = dataclasses.replace(kern, expand=cu.expand, c_load=False, overlap_c=True)
    cycles = MM.call_cycles(arch, key, pixels, k, kb, tuning=tuning, conv_cycles_per_elem=conv_cycles_per_elem,
                            kernel=kern, c_bytes=out_bytes)
    if kind == "pointwise" or r * s == 1:
        return cycles
    r0, s0, t0 = kern.shape
    mmuls = MM._cdiv(pixels, r0) * MM._cdiv(k, s0) * MM._cdiv(kb, t0)
    return cycles + mmuls * cu.realign_per_mmul
