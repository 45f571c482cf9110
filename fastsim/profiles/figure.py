"""The comparison's figure: measured and simulated seconds per op, side by side, slowest measured
first, on a log axis (ops span orders of magnitude), drawn with the project's headless matplotlib
set-up (``figures.pyplot``) and returned for the caller to save or test."""
from __future__ import annotations

import numpy as np

from ..figures import pyplot
from .compare import Comparison


def compare_figure(c: Comparison, top: int = 40):
    """Horizontal bars, two per pair (the ``top`` slowest measured), labelled by name and error."""
    rows = c.table()
    rows = [r for r in rows if r["match"] != "whole"][:top]
    fig, ax = pyplot().subplots(figsize=(7.0, 1.2 + 0.32 * max(len(rows), 1)))
    y = np.arange(len(rows))[::-1]
    measured = [r["measured_s"] for r in rows]
    simulated = [r["simulated_s"] for r in rows]
    ax.barh(y + 0.2, measured, height=0.4, label="measured", color="tab:blue")
    ax.barh(y - 0.2, simulated, height=0.4, label="simulated (fastsim)", color="tab:orange")
    ax.set_yticks(y, [f"{r['name'][:32]}  ({r['error']:+.0%})" for r in rows], fontsize=7)
    if any(v > 0 for v in measured + simulated):
        ax.set_xscale("log")
    ax.set_xlabel("seconds per run (log)")
    ax.set_title(f"{c.subject}: measured vs simulated, slowest measured first", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig
