"""What the per-op results of an LLM run need from one simulated op design."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..arch import Arch
from ..design import buffer_peaks, compute_cycles_by_kernel
from ..mapping.dispatch import host_counts
from ..report import utilizations


@dataclass(frozen=True)
class OpResult:
    """One op instance's engine result (one repeat; ``assemble`` multiplies by the op's repeat)."""

    cycles: int
    bound_by: str  # resource with the highest utilization
    dataflow: str  # ws, is, os, or stream (vector ops)
    level_bytes: np.ndarray  # per results.LEVELS
    channel_state_cycles: np.ndarray  # summed over channels, per results.CHANNEL_STATES
    core_state_cycles: np.ndarray  # summed over cores, per results.CORE_STATES
    cast_share: float  # share of the first core's kernel cycles spent dequantizing
    shim_bytes: dict  # DDR bytes by shim channel role (see ``shim_bytes``)
    compute_cycles: int  # kernel cycles of the busiest core
    movement_cycles: int  # the NOOP twin's cycles: the op with every kernel a 1-cycle pass
    l1_peak_bytes: float
    l2_peak_bytes: float
    host_steps: tuple  # (distinct BDs pushed, syncs) of its runtime sequence
    columns: int
    kernels: frozenset


def design_result(sim: xr.Dataset, i: int, design, flow: str, kernels, arch: Arch) -> OpResult:
    """Design i of engine result ``sim`` as an ``OpResult``; its movement time is its own until a
    twin's is known (a NOOP design is its own twin)."""
    util = utilizations(sim, i, arch, 0.0)
    per_core = [compute_cycles_by_kernel(prog) for prog in design.cores.values()]
    busy = sum(per_core[0].values()) if per_core else 0
    l1, l2 = buffer_peaks(design)
    cycles = int(sim["total_cycles"].values[i])
    return OpResult(cycles=cycles, bound_by=max(util, key=util.get), dataflow=flow,
                    level_bytes=sim["level_bytes"].values[i], channel_state_cycles=sim["channel_cycles"].values[i].sum(axis=0),
                    core_state_cycles=sim["core_cycles"].values[i].sum(axis=0),
                    cast_share=per_core[0].get("cast", 0) / busy if busy else 0.0, shim_bytes=shim_bytes(sim, i),
                    compute_cycles=max((sum(c.values()) for c in per_core), default=0), movement_cycles=cycles,
                    l1_peak_bytes=l1, l2_peak_bytes=l2, host_steps=host_counts(design),
                    columns=len({t.col for t in design.cores}), kernels=frozenset(kernels))


def shim_bytes(sim: xr.Dataset, i: int) -> dict[str, float]:
    """DDR bytes of design i by shim channel role: MM2S0 carries W (stream ops: X), MM2S1 carries
    X, S2MM0 carries Y (see the design builders)."""
    shim = sim["channel_row"].values[i] == 0
    way, index = sim["channel_direction"].values[i], sim["channel_index"].values[i]
    moved = sim["channel_bytes"].values[i]
    return {role: float(moved[shim & (way == w) & (index == k)].sum())
            for role, (w, k) in {"mm2s0": ("mm2s", 0), "mm2s1": ("mm2s", 1), "s2mm0": ("s2mm", 0)}.items()}
