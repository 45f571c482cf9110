"""A mapping search as an xarray Dataset: ranked candidates and rejected ones, units on every
variable."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from .pins import Pins
from .search import search
from .search_result import SearchResult
from .space import Matmul

# candidate variables: (key in the search rows, units, description)
CANDIDATE_VARS = {
    "dataflow": ("", "os, ws or is: which operand stays in core memory"),
    "split": ("", "2d, n or m: how M and N are divided over the cores"),
    "cols": ("", "columns used"),
    "rows": ("", "compute rows used per column"),
    "col0": ("", "first column used"),
    "k_split": ("", "cores of a column that split K and add partial sums"),
    "order": ("", "os only: m (A panels outer) or n (B panels outer)"),
    "l2": ("", "operands a mem tile holds and re-sends instead of re-reading DDR"),
    "datapath": ("", "MAC datapath (bfp16: bf16 converted on the core)"),
    "lower_bound_cycles": ("cycles", "closed-form lower bound (compute, DDR, shim column, DMA streams)"),
    "bound_resource": ("", "resource that sets the lower bound"),
    "simulated_cycles": ("cycles", "cycle-exact engine result (-1: not simulated)"),
    "simulated_bound_by": ("", "busiest resource in the simulation"),
    "status": ("", "ok; cycle_limit: stopped once slower than the answer (simulated_cycles is where it "
                   "stopped); or why the simulation failed ('' = not simulated)"),
    "chosen": ("", "the search's answer: fastest simulated, then least energy"),
    "energy_pj": ("pJ", "MACs (padded) and bytes moved times the arch energy table"),
    "ddr_read_bytes": ("bytes", "DDR reads"),
    "ddr_write_bytes": ("bytes", "DDR writes"),
    "shim_mem_bytes": ("bytes", "shim <-> mem tile stream bytes"),
    "mem_compute_bytes": ("bytes", "mem tile <-> core stream bytes"),
    "psum_bytes": ("bytes", "partial sums handed between cores through shared memory (K split)"),
    "l1_bytes": ("bytes", "core memory used by the busiest core"),
    "l2_bytes": ("bytes", "mem tile memory used by the busiest mem tile"),
    "padding_waste": ("1", "padded MACs / useful MACs - 1"),
    "core_cycles": ("cycles", "busiest core's kernel cycles (matmul, conversion, dequantization, adds)"),
}


def to_dataset(result: SearchResult, arch: Arch) -> xr.Dataset:
    ranked, rejected = result.ranked, result.rejected
    data = {}
    for key, (units, desc) in CANDIDATE_VARS.items():
        values = [r[key] for r in ranked]
        arr = np.array(values, dtype=object if isinstance(values[0], str) else None)
        data[key] = (("candidate",), arr, {"units": units, "description": desc} if units else {"description": desc})
    for axis, name in enumerate(("tile_m", "tile_k", "tile_n")):
        data[name] = (("candidate",), np.array([r["tile"][axis] for r in ranked]),
                      {"units": "elements", "description": "L1 tile (microkernel call) size"})
    data["rejected_reason"] = (("rejected",), np.array([r["reason"] for r in rejected], dtype=object),
                               {"description": "first capacity or resource limit the candidate breaks"})
    data["rejected_lower_bound_cycles"] = (("rejected",), np.array([r["lower_bound_cycles"] for r in rejected]),
                                           {"units": "cycles", "description": "its bound had it been legal"})
    op = result.op
    return xr.Dataset(
        data,
        coords={"candidate": np.array([r["label"] for r in ranked], dtype=object),
                "rejected": np.array([r["label"] for r in rejected], dtype=object)},
        attrs={"m": op.m, "k": op.k, "n": op.n, "dtype": op.dtype, "arch": arch.name,
               "best": result.best.label(), "best_cycles": result.best_cycles,
               "enumerated": result.enumerated, "legal": result.legal, "simulated": result.simulated,
               "optimal": int(result.optimal), "gap": result.gap, "search": result.optimality(),
               "rejected_by_reason": ", ".join(f"{k}: {v}" for k, v in sorted(result.rejected_by_reason.items()))},
    )


def map_dataset(m: int, k: int, n: int, dtype: str = "bf16", arch: Arch = NPU2, *, pins: Pins = Pins(),
                top: int = 6, keep: int = 50, budget: int | None = None, **op_fields) -> xr.Dataset:
    """Search the mapping of an m x k x n ``dtype`` matmul on ``arch``; Dataset over ``candidate``
    (ranked by lower bound, plus every simulated one) and ``rejected``. The search simulates until
    its answer is proven the best of the space, or ``budget`` candidates (attrs ``optimal``,
    ``gap``)."""
    return to_dataset(search(Matmul(m, k, n, dtype, **op_fields), arch, pins, top=top, keep=keep, budget=budget),
                      arch)
