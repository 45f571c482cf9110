"""What the per-op results of an LLM run need from one simulated op design."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arch import Arch
from ..design import buffer_peaks, compute_cycles_by_kernel
from ..mapping.dispatch import NO_CONTROL, ControlCounts, control_counts, host_counts
from ..report import utilization_of
from ..results import DesignArrays


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
    movement_cycles: int | None  # the NOOP twin's cycles: the op with every kernel a 1-cycle pass (None: not run)
    l1_peak_bytes: float
    l2_peak_bytes: float
    host_steps: tuple  # (distinct BDs pushed, syncs) of its runtime sequence
    columns: int
    kernels: frozenset
    control: ControlCounts = NO_CONTROL  # what setting its design up inside a dispatch writes
    search_gap: float = 0.0  # see ``OpDesign.search_gap``
    design_checked: bool = True  # see ``OpDesign.checked``

    @property
    def matmul_kernel(self) -> tuple | None:
        """("matmul", tile, datapath) of a matmul op's microkernel (None: an element-wise op): what
        its dispatch links into program memory for it."""
        return next((k for k in self.kernels if k[0] == "matmul"), None)


def design_result(a: DesignArrays, design, flow: str, kernels, arch: Arch) -> OpResult:
    """A simulated design's numbers as an ``OpResult``; its movement time is its own until a
    twin's is known (a NOOP design is its own twin)."""
    util = utilization_of(a, arch, 0.0)
    per_core = [compute_cycles_by_kernel(prog) for prog in design.cores.values()]
    busy = sum(per_core[0].values()) if per_core else 0
    l1, l2 = buffer_peaks(design)
    cycles = a.cycles
    return OpResult(cycles=cycles, bound_by=max(util, key=util.get), dataflow=flow,
                    level_bytes=a.level_bytes, channel_state_cycles=a.channel_cycles.sum(axis=0),
                    core_state_cycles=a.core_cycles.sum(axis=0),
                    cast_share=per_core[0].get("cast", 0) / busy if busy else 0.0, shim_bytes=shim_bytes(a),
                    compute_cycles=max((sum(c.values()) for c in per_core), default=0), movement_cycles=cycles,
                    l1_peak_bytes=l1, l2_peak_bytes=l2, host_steps=host_counts(design),
                    control=control_counts(design),
                    columns=len({t.col for t in design.cores}), kernels=frozenset(kernels))


def shim_bytes(a: DesignArrays) -> dict[str, float]:
    """DDR bytes of a design by shim channel role: MM2S0 carries W (stream ops: X), MM2S1 carries
    X, S2MM0 carries Y (see the design builders)."""
    shim = a.channel_row == 0
    return {role: float(a.channel_bytes[shim & (a.channel_mm2s == mm2s) & (a.channel_index == k)].sum())
            for role, (mm2s, k) in {"mm2s0": (True, 0), "mm2s1": (True, 1), "s2mm0": (False, 0)}.items()}
