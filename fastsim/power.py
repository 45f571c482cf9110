"""Average power of a simulated run, split at the boundaries public power figures use.

A rail figure covers one boundary: the NPU rail (the array, its DMAs and streams: what Linux cannot
report and Windows tools such as HWiNFO show as the NPU or IPU rail) or the whole package (DRAM,
fabric, CPU besides). fastsim's energy table (``Arch.pj_per_mac``, ``Arch.pj_per_byte``: assumptions,
no per-operation figure is published for AIE-ML) is dynamic energy only; DDR bytes are priced at the
DRAM interface, which no NPU rail carries. So a prediction is compared per boundary: the NPU rail
against the on-chip dynamic power (MACs and on-chip moves), the package delta against the whole.
The table holds no static power (clock tree, leakage, idle tiles): where the on-chip dynamic power
falls far below a measured NPU rail, that is the missing term, not a tuning target.
"""
from __future__ import annotations

import xarray as xr

from .arch import Arch


def power_split(ds: xr.Dataset, arch: Arch) -> dict:
    """Average watts of one simulated pass (an LLM or ONNX per-op Dataset with ``energy_pj``,
    ``ddr_bytes`` and ``total_seconds``): ``ddr_w`` (DDR bytes at ``pj_per_byte["ddr"]``, static
    weight loads included), ``on_chip_w`` (everything else: MACs and on-chip moves) and ``total_w``."""
    seconds = float(ds["total_seconds"])
    total_pj = float(ds["energy_pj"].sum()) + float(ds.get("preload_energy_pj", 0.0))
    ddr_bytes = float(ds["ddr_bytes"].sum()) + float(ds.get("preload_bytes", 0.0))
    ddr_pj = min(total_pj, ddr_bytes * arch.pj_per_byte["ddr"])
    return {"seconds": seconds, "total_w": total_pj * 1e-12 / seconds, "ddr_w": ddr_pj * 1e-12 / seconds,
            "on_chip_w": (total_pj - ddr_pj) * 1e-12 / seconds}
