"""SRAM traces in SCALE-Sim's format, for users who need every address (slow and large by nature).

``<dir>/<run name>/layer<i>/{IFMAP,FILTER,OFMAP}_SRAM_TRACE.csv``: one line per demand row, the
cycle it is served and then the address at each mesh edge port (-1: idle), as SCALE-Sim writes
them. Served cycles come from the bandwidth-limited memory model when the config has a limit;
otherwise reads are served one cycle after the request and writes at once (SCALE-Sim's CALC mode).
SCALE-Sim's DRAM traces are not written.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .demand import demand_matrices
from .inputs import Layer, MeshConfig
from .memory import served_cycles

FILES = ("IFMAP_SRAM_TRACE.csv", "FILTER_SRAM_TRACE.csv", "OFMAP_SRAM_TRACE.csv")


def write_sram_traces(layers: list[Layer], cfg: MeshConfig, directory: str | Path) -> list[Path]:
    """Write every layer's SRAM traces; returns the layer directories."""
    cfg = cfg.validate()
    written = []
    for i, layer in enumerate(layers):
        demands = demand_matrices(layer, cfg.rows, cfg.cols, cfg.dataflow)
        rows = demands[0].shape[0]
        if cfg.bandwidth_limited:
            cycles = served_cycles(layer, cfg, rows)
        else:
            cycles = np.arange(rows)[:, None] + np.array([1, 1, 0])[None, :]
        layer_dir = Path(directory) / cfg.name / f"layer{i}"
        layer_dir.mkdir(parents=True, exist_ok=True)
        for k, (name, demand) in enumerate(zip(FILES, demands)):
            np.savetxt(layer_dir / name, np.column_stack([cycles[:, k], demand]), fmt="%i", delimiter=",")
        written.append(layer_dir)
    return written
