"""Traces in SCALE-Sim's format, for users who need every address (slow and large by nature).

``<dir>/<run name>/layer<i>/{IFMAP,FILTER,OFMAP}_SRAM_TRACE.csv``: one line per demand row, the
cycle it is served and then the address at each mesh edge port (-1: idle). Served cycles come
from the bandwidth-limited memory model when the config has a limit; otherwise reads are served
one cycle after the request and writes at once (SCALE-Sim's CALC mode).

With a bandwidth limit also ``{IFMAP,FILTER,OFMAP}_DRAM_TRACE.csv``: every DRAM line request (the
cycle it returns, then the addresses), rebuilt the way SCALE-Sim's buffers issue them, including
how its prefetches blank columns in place and restart from a fixed line. Without a limit SCALE-Sim
estimates DRAM traffic with another buffer model, whose traces are not written.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .demand import NULL, demand_matrices, prefetch_orders
from .inputs import Layer, MeshConfig
from .memory import trace_run

SRAM_FILES = ("IFMAP_SRAM_TRACE.csv", "FILTER_SRAM_TRACE.csv", "OFMAP_SRAM_TRACE.csv")
DRAM_FILES = ("IFMAP_DRAM_TRACE.csv", "FILTER_DRAM_TRACE.csv", "OFMAP_DRAM_TRACE.csv")


def read_dram_trace(order: np.ndarray, words: int, bw: int, accesses: int) -> np.ndarray:
    """DRAM requests of a read buffer: the active half first (returning before cycle 0), then one
    prefetch of the other half per window slide; `accesses` (words, from the model) counts slides."""
    rows = math.ceil(len(order) / bw)
    fetch = np.full(rows * bw, NULL, dtype=float)
    fetch[:len(order)] = order
    fetch = fetch.reshape(rows, bw)
    active = math.ceil(words * 0.5)
    n0 = min(math.ceil(active / bw), rows)
    first = fetch[:n0]  # a view: blanking it changes what later prefetches fetch, as in SCALE-Sim
    next_col = 0
    if n0 * bw > active:
        next_col = active % bw
        first[-1, next_col:] = NULL
    blocks = [np.column_stack([np.arange(n0) - n0, first])]
    n = math.ceil((words - active) / bw)
    start = n0 % rows if n0 * bw > active else (n0 + 1) % rows
    last = -1
    for _ in range((accesses - n0 * bw) // (n * bw)):
        if start + n > rows:
            lines = np.concatenate([fetch[start:], fetch[:min(start + n - rows, start)]])
        else:
            lines = fetch[start:start + n]
        if len(lines) != n:
            raise ValueError("a prefetch wraps past its own start (SCALE-Sim fails here too)")
        lines[0, :next_col] = NULL
        if n * bw > active:
            lines[-1, active % bw:] = NULL
        blocks.append(np.column_stack([last + 2 + np.arange(n), lines]))
        last += n + 1
        start = n % rows if n * bw > active else (n + 1) % rows
    return np.vstack(blocks)


def ofmap_dram_trace(ofmap_demand: np.ndarray, lines: np.ndarray, bw: int) -> np.ndarray:
    """Ofmap lines as the write buffer drains them: addresses in arrival order cut into lines of
    `lines[:, 0]` words (partial where a drain flushed a line early), each with its write cycle."""
    arrivals = ofmap_demand[ofmap_demand != NULL].astype(float)
    out = np.full((len(lines), bw + 1), NULL, dtype=float)
    out[:, 0] = lines[:, 1]
    ends = np.cumsum(lines[:, 0])
    for row, (end, count) in enumerate(zip(ends, lines[:, 0])):
        out[row, 1:1 + count] = arrivals[end - count:end]
    return out


def write_traces(layers: list[Layer], cfg: MeshConfig, directory: str | Path) -> list[Path]:
    """Write every layer's traces; returns the layer directories."""
    cfg = cfg.validate()
    ifmap_words, filter_words, _ = cfg.sram_words
    written = []
    for i, layer in enumerate(layers):
        demands = demand_matrices(layer, cfg.rows, cfg.cols, cfg.dataflow, cfg.address_offsets)
        rows = demands[0].shape[0]
        layer_dir = Path(directory) / cfg.name / f"layer{i}"
        layer_dir.mkdir(parents=True, exist_ok=True)
        if cfg.bandwidth_limited:
            run = trace_run(layer, cfg, rows)
            cycles = run["served"]
            orders = prefetch_orders(layer, cfg.rows, cfg.cols, cfg.dataflow, cfg.address_offsets)
            dram = [read_dram_trace(orders[0], ifmap_words, cfg.ifmap_read_words_per_cycle,
                                    run["dram_ifmap_reads"]),
                    read_dram_trace(orders[1], filter_words, cfg.filter_read_words_per_cycle,
                                    run["dram_filter_reads"]),
                    ofmap_dram_trace(demands[2], run["ofmap_lines"], cfg.bandwidth_words_per_cycle)]
            for name, trace in zip(DRAM_FILES, dram):
                np.savetxt(layer_dir / name, trace, fmt="%s", delimiter=",")
        else:
            cycles = np.arange(rows)[:, None] + np.array([1, 1, 0])[None, :]
        for k, (name, demand) in enumerate(zip(SRAM_FILES, demands)):
            np.savetxt(layer_dir / name, np.column_stack([cycles[:, k], demand]), fmt="%i", delimiter=",")
        written.append(layer_dir)
    return written
