"""When does the KV cache become the bandwidth pole? (``fastsim study kv``)

A decode step reads every weight once and the whole KV cache once: weight bytes are fixed, KV bytes
grow with the context and the batch. Past the context where KV bytes overtake weight bytes,
compressing weights buys less than compressing (or windowing) the KV cache. Each model and batch is
simulated over a grid of contexts, and the crossover is interpolated linearly in context between
the two grid points that bracket it (``figures.kv_crossover``; exact where KV grows linearly), not
rounded to the next grid point.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..errors import ConfigError
from ..figures import kv_crossover, kv_figure as draw_kv_figure, pyplot
from ..llm import LlmStudy, simulate_llm
from ..llm.run import llm_summary
from ..version import __version__
from .declaration import Command, Option, Study
from .report import save_figure, table
from .variables import StudyVariable as Output, build

DEFAULT_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131071)  # 131,072 positions at most


def kv(bases: list[LlmStudy], contexts=DEFAULT_CONTEXTS, batches=(1,), arch: Arch = NPU2) -> xr.Dataset:
    """Decode steps of every model (``bases``: one LlmStudy each, their precision kept) at every
    batch and context; KV and weight bytes per step, step time, and the crossover per model and batch."""
    contexts, batches = sorted(set(int(c) for c in contexts)), sorted(set(int(b) for b in batches))
    problems = []
    if len(contexts) < 2 or contexts[0] < 1:
        problems.append(f"contexts = {contexts}: give at least two, each >= 1 (the crossover lies between two)")
    if not batches or batches[0] < 1:
        problems.append(f"batches = {batches}: give at least one, each >= 1")
    if problems:
        raise ConfigError(problems, "kv study")
    names = [b.model_config().name for b in bases]
    shape = (len(bases), len(batches), len(contexts))
    kv_bytes, weight_bytes, seconds = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    for i, base in enumerate(bases):
        for j, batch in enumerate(batches):
            for k, context in enumerate(contexts):
                s = llm_summary(simulate_llm(replace(base, regime="decode", context=context, batch=batch), arch))
                kv_bytes[i, j, k], weight_bytes[i, j, k], seconds[i, j, k] = s["kv_bytes"], s["weight_bytes"], s["seconds"]
    crossover = np.array([[kv_crossover(contexts, kv_bytes[i, j], weight_bytes[i, j]) for j in range(len(batches))]
                          for i in range(len(bases))])
    p = bases[0].precision
    return build(OUTPUTS, {"kv_bytes": kv_bytes, "weight_bytes": weight_bytes, "seconds": seconds,
                           "kv_crossover": crossover},
                 {"model": ("model", names), "batch": ("batch", batches, {"units": "requests"}),
                  "context": ("context", contexts, {"units": "tokens"})},
                 {"study": "kv", "arch": arch.name, "weights": p.weights, "kv": p.kv, "version": __version__})


def crossover_rows(ds: xr.Dataset) -> list[list[str]]:
    """Per model and batch: the crossover (or where KV stands against the weights on the grid),
    the grid points that bracket it, and the KV share of the step's bytes at the largest context."""
    rows = []
    for m in ds.model.values:
        for b in ds.batch.values:
            r = ds.sel(model=m, batch=b)
            c, kvb, w = ds.context.values, r.kv_bytes.values, r.weight_bytes.values
            x = float(r.kv_crossover)
            if np.isfinite(x):
                lo = int(c[c <= x].max())
                hi = int(c[c > x].min())
                where, bracket = f"{x:,.0f}", f"{lo:,} .. {hi:,}"
            else:
                where = ("KV above the weights from the first context" if kvb[0] > w[0] else
                         "KV below the weights over the whole grid")
                bracket = ""
            share = kvb[-1] / (kvb[-1] + w[-1])
            rows.append([str(m), int(b), where, bracket, f"{w[-1] / 1e6:,.1f}", f"{kvb[-1] / 1e6:,.1f}",
                         f"{100 * share:.0f} %"])
    return rows


def kv_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    """The report: the crossover per model and batch, and the grid it was read from."""
    contexts = ", ".join(f"{int(c):,}" for c in ds.context.values)
    out = [f"# KV cache vs weights: decode on {ds.attrs['arch']} ({ds.attrs['weights']} weights, "
           f"{ds.attrs['kv']} KV)", "",
           f"Decode steps simulated at contexts {contexts}. The crossover is where KV bytes per step overtake "
           "weight bytes, interpolated linearly in context between the grid points that bracket it; past it, the "
           "KV cache (its dtype, compression, sliding windows) is the bandwidth lever, not the weights.", "",
           table(["model", "batch", "KV > weights at context", "between grid points", "weights MB",
                  f"KV MB at {int(ds.context.values[-1]):,}", "KV share there"], crossover_rows(ds)), ""]
    if figure:
        out += [f"![KV vs weight bytes per step]({figure})", ""]
    return "\n".join(out)


def kv_figure(ds: xr.Dataset, path: Path | None = None):
    """KV and weight bytes per step over the contexts, the crossover marked (``figures.kv_figure``)."""
    fig = draw_kv_figure(ds, "context")
    return save_figure(pyplot(), fig, path)


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "kv_bytes": Output(("model", "batch", "context"), "bytes", "DDR bytes of the KV cache one decode step reads and writes"),
    "weight_bytes": Output(("model", "batch", "context"), "bytes", "DDR bytes of weights one decode step reads"),
    "seconds": Output(("model", "batch", "context"), "s", "time of one decode step"),
    "kv_crossover": Output(("model", "batch"), "tokens",
        "context where KV bytes overtake weight bytes, interpolated linearly in context between the two grid "
        "points that bracket it (NaN: not within the grid)"),
}


def _command(bases: list[LlmStudy], arch: Arch, contexts: tuple, batches: tuple) -> xr.Dataset:
    """``fastsim study kv``: options not given take the study's defaults."""
    return kv(bases, contexts or DEFAULT_CONTEXTS, batches or (1,), arch)


STUDY = Study(
    "kv", kv, OUTPUTS, kv_markdown, kv_figure,
    command=Command("""Where does KV-cache traffic overtake weight traffic? Simulates decode steps per model and
    batch over a grid of contexts and prints, per model and batch, the context where KV bytes per
    step overtake weight bytes, interpolated between the grid points that bracket it (--report
    also draws it).

    Example: fastsim study kv --model llama-3.2-1b --model llama-3.2-3b --batch 1 --batch 4 --report out/
    """, _command, models="several", regimes=False, options=(
        Option("--context", "contexts", "decode contexts to simulate (repeatable; default 1,024 to 131,071 in powers "
               "of two)", kind="int", minimum=1, multiple=True),
        Option("--batch", "batches", "batch sizes (repeatable; default 1)", kind="int", minimum=1, multiple=True))))
