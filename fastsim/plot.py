"""``fastsim plot RESULT [--kind K]`` (PNG or SVG by the output's suffix): open a result and pick
its figure.

A result is a sweep's zarr store or a run's JSON (``fastsim run ... --json``, ``fastsim systolic
--json``). Each kind is a function of ``figures.py`` that draws on a matplotlib Figure and returns
it, so that tests can check axes, series and labels, and study reports can reuse them:

- ``sweep``: any output over one axis (lines, one per value of a second axis) or two (a heatmap);
- ``kv``: KV-cache vs weight DDR bytes over context (an LLM sweep): with a ``model`` axis one curve
  per model coloured by family, one panel per ``batch`` value (``batch=`` picks some), the crossover
  interpolated between grid points and sliding windows marked (``figures.kv_figure``);
- ``classes``: time by op class and by layer (an LLM run);
- ``stalls``: stall attribution per op, what its DMA channels did, for the ops taking the most time
  (an LLM run);
- ``roofline``: achieved ops/s against ops per DDR byte with the arch's compute and DDR ceilings
  (a GEMM run);
- ``mismatch``: the systolic tile-mismatch histogram (a systolic run);
- ``occupancy``: busy share of every core and DMA channel over time (a run's ``--trace`` file).
"""
from __future__ import annotations

import json
from pathlib import Path

from .errors import ConfigError
from .figures import (classes_figure, heatmap_figure, kv_figure, mismatch_figure, occupancy_figure,
                      roofline_figure, stalls_figure, sweep_figure)

KINDS = ("sweep", "kv", "classes", "stalls", "roofline", "mismatch", "occupancy")


def load_result(path: str | Path):
    """A zarr store (xarray Dataset) or a run's JSON (dict)."""
    path = Path(path)
    if path.is_dir():
        from .sweeping.store import open_store

        try:
            return open_store(path)
        except Exception as e:
            raise ConfigError([f"{path}: not a readable zarr store ({type(e).__name__}: {e})"], "plot")
    try:
        text = path.read_text()
        return json.loads(text[text.index("{"):])
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise ConfigError([f"{path}: neither a zarr store nor a run's JSON ({e})"], "plot")


def default_kind(result) -> str:
    if isinstance(result, dict):
        if "traceEvents" in result:
            return "occupancy"
        if "by_class" in result:
            return "classes"
        if "ops_per_s" in result:
            return "roofline"
        if "layers" in result:
            return "mismatch"
        raise ConfigError(["this JSON is not a run of fastsim run llm/gemm or fastsim systolic"], "plot")
    if "kv_bytes" in result and "weight_bytes" in result and "context" in result.dims:
        return "kv"
    return "sweep"


def plot(result, kind: str | None = None, var: str | None = None, x: str | None = None, y: str | None = None,
         arch=None, heatmap: bool = False, batch=None):
    """The figure of ``result`` (see the module docstring); returns the matplotlib Figure.
    ``batch`` (kind kv): the batch value, or list of values, to draw a panel for (default: each)."""
    kind = kind or default_kind(result)
    if kind not in KINDS:
        raise ConfigError([f"kind = {kind!r}: one of {KINDS}"], "plot")
    if batch is not None and kind != "kv":
        raise ConfigError([f"batch = {batch}: applies to kind kv only (this is kind {kind})"], "plot")
    if kind in ("classes", "stalls", "roofline", "mismatch", "occupancy") and not isinstance(result, dict):
        raise ConfigError([f"kind {kind} takes a run's JSON, not a sweep store"], "plot")
    if kind in ("sweep", "kv") and isinstance(result, dict):
        raise ConfigError([f"kind {kind} takes a sweep's zarr store"], "plot")
    if kind == "occupancy":
        return occupancy_figure(result)
    if kind == "classes":
        return classes_figure(result)
    if kind == "stalls":
        return stalls_figure(result)
    if kind == "mismatch":
        return mismatch_figure(result)
    if kind == "roofline":
        from .arch import load

        return roofline_figure(result, arch or load(result.get("arch", "npu2")))
    if kind == "kv":
        return kv_figure(result, x or "context", batch)
    dims = [d for d in result.dims if d in result.coords]
    var = var or next((v for v in result.data_vars if v not in ("status", "message", "done")
                       and set(result[v].dims) <= set(dims)), None)
    x = x or (dims[0] if dims else None)
    if var is None or x is None:
        raise ConfigError(["the store has no output over its axes to plot"], "plot")
    if heatmap and y:
        return heatmap_figure(result, var, x, y)
    return sweep_figure(result, var, x, y)
