"""Summaries of simulation results: achieved rate, bytes per level and the binding resource."""
from __future__ import annotations

import xarray as xr

from .arch import Arch
from .results import CHANNEL_STATES, CORE_STATES, LEVELS, DesignArrays, arrays_of


def utilizations(ds: xr.Dataset, i: int, arch: Arch, dispatch_s: float) -> dict[str, float]:
    """``utilization_of`` design ``i`` of a result Dataset."""
    return utilization_of(arrays_of(ds, i), arch, dispatch_s)


def utilization_of(a: DesignArrays, arch: Arch, dispatch_s: float) -> dict[str, float]:
    """Fraction of the run each resource was busy; the largest one binds.

    compute: the busiest core's MAC time; ddr: DDR bytes over the DDR cap; shim_column: the busiest
    column's shim bandwidth; dma_stream: the busiest tile DMA channel moving bytes; dispatch: host
    dispatch overhead's share of end-to-end time.
    """
    cycles = float(a.cycles)
    kernel_s = cycles / arch.clock_hz
    seconds = kernel_s + dispatch_s
    core_busy = a.core_cycles[:, CORE_STATES.index("busy")]
    moving = a.channel_cycles[:, [CHANNEL_STATES.index("busy"), CHANNEL_STATES.index("ddr_limited")]].sum(axis=1)
    col, tile_row, moved_bytes = a.channel_col, a.channel_row, a.channel_bytes
    ddr_bytes = float(a.level_bytes[[LEVELS.index("ddr_read"), LEVELS.index("ddr_write")]].sum())
    col_use = 0.0
    shim = tile_row == 0
    for c in range(arch.columns):
        for mm2s, rates in ((True, arch.shim_read_bytes_per_cycle), (False, arch.shim_write_bytes_per_cycle)):
            moved = float(moved_bytes[shim & (col == c) & (a.channel_mm2s == mm2s)].sum())
            col_use = max(col_use, moved / (rates[c] * cycles) if cycles else 0.0)
    tile_dma = moving[tile_row > 0]
    frac = (kernel_s / seconds) if seconds else 0.0
    return {
        "compute": frac * (float(core_busy.max()) / cycles if cycles and core_busy.size else 0.0),
        "ddr": frac * (ddr_bytes / (arch.ddr_bytes_per_cycle * cycles) if cycles else 0.0),
        "shim_column": frac * col_use,
        "dma_stream": frac * (float(tile_dma.max()) / cycles if cycles and tile_dma.size else 0.0),
        "dispatch": dispatch_s / seconds if seconds else 0.0,
    }


def binding_resource(ds: xr.Dataset, i: int, arch: Arch) -> str:
    """The most utilized resource of design ``i`` (no dispatch overhead)."""
    util = utilizations(ds, i, arch, 0.0)
    return max(util, key=util.get)


def summarize(ds: xr.Dataset, i: int, arch: Arch, ops: float, dtype: str,
              dispatches: int = 1) -> dict:
    """One design's headline numbers; ``seconds`` includes ``dispatches`` host dispatch overheads."""
    cycles = int(ds["total_cycles"].values[i])  # by position: scalar isel imports dask.array
    dispatch_s = dispatches * arch.dispatch_overhead_s
    kernel_s = cycles / arch.clock_hz
    seconds = kernel_s + dispatch_s
    ops_per_s = ops / seconds
    peak_ops_per_s = 2 * arch.peak_macs_per_s(dtype)
    util = utilizations(ds, i, arch, dispatch_s)
    levels = {str(k): float(v) for k, v in zip(ds["level"].values, ds["level_bytes"].values[i])}
    return {
        "arch": arch.name,
        "total_cycles": cycles,
        "kernel_seconds": kernel_s,
        "dispatch_overhead_s": dispatch_s,
        "seconds": seconds,
        "ops": ops,
        "ops_per_s": ops_per_s,
        "peak_ops_per_s": peak_ops_per_s,
        "peak_fraction": ops_per_s / peak_ops_per_s,
        "ddr_bytes": levels["ddr_read"] + levels["ddr_write"],
        "bytes_by_level": levels,
        "utilization": util,
        "bound_by": max(util, key=util.get),
    }


def format_summary(title: str, s: dict) -> str:
    def si(x, unit):
        for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(x) >= scale:
                return f"{x / scale:.3g} {prefix}{unit}"
        return f"{x:.3g} {unit}"

    lines = [title,
             f"  cycles          {s['total_cycles']:,}",
             f"  time            {s['seconds'] * 1e6:,.1f} us  (kernel {s['kernel_seconds'] * 1e6:,.1f} us"
             f" + dispatch {s['dispatch_overhead_s'] * 1e6:,.1f} us)",
             f"  achieved        {si(s['ops_per_s'], 'op/s')}  ({100 * s['peak_fraction']:.1f} % of "
             f"{si(s['peak_ops_per_s'], 'op/s')} peak)",
             "  bytes by level"]
    for level, b in s["bytes_by_level"].items():
        if b:
            lines.append(f"    {level:<16}{si(b, 'B')}")
    lines.append("  utilization")
    for k, v in sorted(s["utilization"].items(), key=lambda kv: -kv[1]):
        lines.append(f"    {k:<16}{100 * v:5.1f} %")
    lines.append(f"  bound by        {s['bound_by']}")
    return "\n".join(lines)


# Units of a run's JSON keys whose names do not say them (the rest follow their suffix, ``units_of``).
NAMED_UNITS = {"seconds": "s", "by_class": "s", "by_layer": "s", "time_by_bound": "s", "stalls_by_op": "s (seconds)",
               "context": "tokens", "prompt": "tokens", "new_tokens": "tokens", "prefill_context": "tokens",
               "batch": "requests", "macs": "MAC", "params": "weights", "active_params": "weights",
               "dispatches": "1", "control_instructions": "instructions", "cycles": "cycles", "ops_per_s": "ops/s", "trace_events": "slices"}
SUFFIX_UNITS = (("_seconds", "s"), ("_s", "s"), ("_bytes", "bytes"), ("_bytes_by_kind", "bytes"), ("_j", "J"),
                ("_cycles", "cycles"), ("_share", "1"), ("_pj", "pJ"))


def units_of(summary: dict) -> dict[str, str]:
    """The ``units`` block of a run's JSON: the unit of every numeric key (and of the numbers inside
    its dicts), from its name (``NAMED_UNITS``) or its suffix; ``tokens_per_s`` and the like are
    per second of what they count."""
    out = {}
    for key, value in summary.items():
        if key in NAMED_UNITS:
            out[key] = NAMED_UNITS[key]
        elif key.endswith("_per_s"):
            out[key] = key[:-len("_per_s")] + "/s"
        else:
            unit = next((u for suffix, u in SUFFIX_UNITS if key.endswith(suffix)), None)
            if unit and not isinstance(value, str):
                out[key] = unit
    return out
