"""SCALE-Sim's memory models over layers x mesh configs: stall cycles, total cycles, DRAM traffic,
access windows and peak rates, exactly as SCALE-Sim v3 reports them. Configs with a bandwidth limit
run its USER-mode buffers; without one (CALC mode) the estimate buffers run only when asked
(``dram_detail``), since closed forms already give every cycle count there.

The kernel (``fastsim.kernels.systolic_memory``) works request by request, so its cost grows with
the layer (about (R + 2C) requests per compute cycle). Items can run on threads (the kernel
releases the GIL); each thread's scratch is sized for the largest item it runs and reused.
"""
from __future__ import annotations

import math

import numpy as np

from fastsim.errors import SimulationError
from fastsim.kernels import scalesim_addresses as KA
from fastsim.kernels import scalesim_buffers as KB
from fastsim.kernels import systolic as KS
from fastsim.kernels import systolic_memory as KM
from fastsim.settings import resolve_jit

from .inputs import DATAFLOWS, OPERANDS, Layer, MeshConfig

OUTPUTS = {
    "total_cycles": (KM.Y_TOTAL, "cycles", "SCALE-Sim 'Total Cycles': cycle the last ofmap row is written"),
    "stall_cycles": (KM.Y_STALLS, "cycles", "cycles the mesh waits for its SRAM buffers"),
    "dram_ifmap_reads": (KM.Y_DRAM_IFMAP, "words", "ifmap words fetched from DRAM (whole prefetch lines)"),
    "dram_filter_reads": (KM.Y_DRAM_FILTER, "words", "filter words fetched from DRAM (whole prefetch lines)"),
    "dram_ofmap_writes": (KM.Y_DRAM_OFMAP, "words", "ofmap words written to DRAM"),
    "dram_ifmap_start_cycle": (KM.Y_IFMAP_START, "cycles", "first ifmap DRAM response (negative: before compute)"),
    "dram_ifmap_stop_cycle": (KM.Y_IFMAP_STOP, "cycles", "last ifmap DRAM response"),
    "dram_filter_start_cycle": (KM.Y_FILTER_START, "cycles", "first filter DRAM response"),
    "dram_filter_stop_cycle": (KM.Y_FILTER_STOP, "cycles", "last filter DRAM response"),
    "dram_ofmap_start_cycle": (KM.Y_OFMAP_START, "cycles", "first ofmap DRAM write"),
    "dram_ofmap_stop_cycle": (KM.Y_OFMAP_STOP, "cycles", "last ofmap DRAM write"),
    "peak_dram_ifmap_words_per_cycle": (KM.Y_PEAK_IFMAP, "words/cycle", "highest ifmap DRAM rate of any "
                                        "cycle (limited: the interface; unlimited: the largest prefetch rate needed)"),
    "peak_dram_filter_words_per_cycle": (KM.Y_PEAK_FILTER, "words/cycle", "highest filter DRAM rate (as ifmap)"),
    "peak_dram_ofmap_words_per_cycle": (KM.Y_PEAK_OFMAP, "words/cycle", "highest ofmap DRAM rate (a line per "
                                        "cycle while draining)"),
}
STALL_OPERANDS = list(OPERANDS)


def _item(layer: Layer, cfg: MeshConfig) -> np.ndarray:
    ih, iw, fh, fw, ch, nf, sh, sw = layer.geometry
    x = np.zeros(KM.X_NCOL, np.int64)
    x[[KM.X_IFMAP_H, KM.X_IFMAP_W, KM.X_FILTER_H, KM.X_FILTER_W, KM.X_CHANNELS, KM.X_FILTERS]] = ih, iw, fh, fw, ch, nf
    x[KM.X_STRIDE], x[KM.X_STRIDE_W] = sh, sw
    x[KM.X_ROWS], x[KM.X_COLS], x[KM.X_DF] = cfg.rows, cfg.cols, DATAFLOWS.index(cfg.dataflow)
    x[KM.X_IFMAP_WORDS], x[KM.X_FILTER_WORDS], x[KM.X_OFMAP_WORDS] = cfg.sram_words
    if cfg.bandwidth_limited:
        x[KM.X_IFMAP_BW] = cfg.ifmap_read_words_per_cycle
        x[KM.X_FILTER_BW] = cfg.filter_read_words_per_cycle
        x[KM.X_OFMAP_BW] = cfg.bandwidth_words_per_cycle
    else:  # SCALE-Sim's CALC mode: estimate buffers start at 10 words/cycle, the ofmap drains a row
        x[KM.X_ESTIMATE] = 1
        x[KM.X_IFMAP_BW] = x[KM.X_FILTER_BW] = 10
        x[KM.X_OFMAP_BW] = cfg.cols
    return x


def _scratch_sizes(layer: Layer, cfg: MeshConfig) -> tuple[int, int, int, int, int, int, int]:
    """(ifmap address space, filter address space, ifmap prefetch, filter prefetch, ofmap writes,
    ofmap pixels, window)."""
    ih, iw, fh, fw, ch, nf, _, _ = layer.geometry
    m, n, k, r, c = layer.m, layer.n, layer.k, cfg.rows, cfg.cols
    tiles = lambda extent, size: math.ceil(extent / size) * size  # noqa: E731 - padded extent
    if cfg.dataflow == "os":
        pre_if, pre_fi, writes = tiles(m, r) * k, tiles(n, c) * k, m * n
    elif cfg.dataflow == "ws":
        pre_if, pre_fi, writes = tiles(k, r) * m, tiles(n, c) * k, math.ceil(k / r) * m * n
    else:
        pre_if, pre_fi, writes = tiles(m, c) * k, tiles(k, r) * n, math.ceil(k / r) * m * n
    return ih * iw * ch, k * nf, pre_if, pre_fi, writes, m, k


def _folds(layer: Layer, cfg: MeshConfig) -> tuple[int, int, int, int, int, int]:
    """(row tiles, column tiles, last row tile, last column tile, streamed length T, mesh PEs)."""
    sr, sc, t = {"os": (layer.m, layer.n, layer.k), "ws": (layer.k, layer.n, layer.m),
                 "is": (layer.k, layer.m, layer.n)}[cfg.dataflow]
    nr, nc = math.ceil(sr / cfg.rows), math.ceil(sc / cfg.cols)
    return nr, nc, sr - (nr - 1) * cfg.rows, sc - (nc - 1) * cfg.cols, t, cfg.rows * cfg.cols


def occupancy(layer: Layer, cfg: MeshConfig, fold_start: np.ndarray, bins: int, jit: bool | None = None) -> np.ndarray:
    """Mean busy-PE fraction in `bins` equal time bins of the stalled timeline: each fold's busy
    PE-cycles spread evenly over the cycles from its start to the next fold's (stalls included);
    the closed form bins folds the same way (``kernels/systolic.py``). ``jit``: compiled kernel or
    plain Python (default: ``fastsim.settings``)."""
    nr, nc, last_r, last_c, t, pes = _folds(layer, cfg)
    used_r = np.where(np.arange(nr) < nr - 1, cfg.rows, last_r)
    used_c = np.where(np.arange(nc) < nc - 1, cfg.cols, last_c)
    busy = (used_c[:, None] * used_r[None, :] * t / pes).ravel()  # column tiles outer, as the kernel runs them
    occ = np.zeros(bins)
    KS.fold_occupancy.variant(resolve_jit(jit))(fold_start, busy, occ)
    return occ


def _run(inp: np.ndarray, sizes, trace: np.ndarray, fold_start: np.ndarray, fill: np.ndarray | None = None,
         jit: bool | None = None):
    out = np.zeros((len(inp), KM.Y_NCOL), np.int64)
    fill = np.zeros((sizes[4] + 1, 2), np.int64) if fill is None else fill
    run = KM.memory_batch.variant(resolve_jit(jit))
    run(inp, out, np.zeros(KA.G_NCOL, np.int64), np.zeros((2, KB.RB_NCOL), np.int64),
        np.zeros(KB.WB_NCOL, np.int64),
        np.zeros(sizes[0] + 1, np.int64), np.zeros(sizes[0] + 1, np.int64),
        np.zeros(max(sizes[2], sizes[0]), np.int64),  # CSR lines, or a line per address
        np.zeros(sizes[1] + 1, np.int64), np.zeros(sizes[1] + 1, np.int64),
        np.zeros(max(sizes[3], sizes[1]), np.int64),
        fill, trace, fold_start, np.zeros((sizes[5], 3), np.int64), np.zeros((sizes[6], 3), np.int64),
        np.zeros((2, KB.EB_NCOL), np.int64))
    return out


def trace_run(layer: Layer, cfg: MeshConfig, demand_rows: int) -> dict:
    """One layer, keeping what traces need: ``served`` int64[demand_rows, 3] (the cycle each demand
    row is served: ifmap, filter, ofmap), ``ofmap_lines`` int64[lines, 2] (words, DRAM write cycle)
    and the scalar outputs."""
    trace = np.zeros((demand_rows, 3), np.int64)
    nr, nc = _folds(layer, cfg)[:2]
    sizes = _scratch_sizes(layer, cfg)
    fill = np.zeros((sizes[4] + 1, 2), np.int64)
    out = _run(_item(layer, cfg)[None, :], sizes, trace, np.zeros(nr * nc + 1, np.int64), fill)[0]
    if out[KM.Y_STATUS] or out[KM.Y_ROWS] != demand_rows:
        raise SimulationError(f"systolic memory model: {layer.name} did not serve its {demand_rows} demand rows")
    result = {name: int(out[col]) for name, (col, _, _) in OUTPUTS.items()}
    return {**result, "served": trace, "ofmap_lines": fill[:out[KM.Y_OFMAP_LINES]]}


def _cost(layer: Layer, cfg: MeshConfig) -> int:
    """Requests an item walks (demand rows x mesh ports): to balance items over threads."""
    nr, nc, _, _, t, _ = _folds(layer, cfg)
    fold_len = t + cfg.rows + cfg.cols if cfg.dataflow == "os" else 2 * cfg.rows + cfg.cols + t
    return nr * nc * fold_len * (cfg.rows + 2 * cfg.cols)


def _run_threaded(inp: np.ndarray, sizes_by_item: np.ndarray, costs: list[int], fold_start: np.ndarray,
                  threads: int, jit: bool) -> np.ndarray:
    """Items split over threads, longest first to the least loaded (the kernel releases the GIL);
    each thread has its own scratch, and writes disjoint rows of ``fold_start``. ``jit`` is
    resolved here: pool threads do not see the caller's settings."""
    threads = max(1, min(threads, len(inp)))
    groups, loads = [[] for _ in range(threads)], [0] * threads
    for item in sorted(range(len(inp)), key=lambda i: -costs[i]):
        t = loads.index(min(loads))
        groups[t].append(item)
        loads[t] += costs[item]
    groups = [sorted(g) for g in groups if g]
    out = np.zeros((len(inp), KM.Y_NCOL), np.int64)

    def work(group):
        out[group] = _run(inp[group], sizes_by_item[group].max(axis=0), np.zeros((0, 3), np.int64), fold_start,
                          jit=jit)

    if len(groups) == 1:
        work(groups[0])
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(groups)) as pool:
            list(pool.map(work, groups))
    return out


def memory_metrics(layers: list[Layer], configs: list[MeshConfig], occupancy_bins: int = 64,
                   dram_detail: bool = False, threads: int = 1, jit: bool | None = None) -> dict:
    """Every output of the memory models as an int64 array (layers, configs); configs without a
    bandwidth limit get zeros unless ``dram_detail``. ``stall_cycles_by_operand`` adds a trailing
    axis (ifmap, filter, ofmap), ``occupancy`` one of time bins (NaN where the model did not run).
    ``threads`` > 1 runs items on that many threads (sweep workers keep 1: they are the parallelism).
    ``jit``: compiled kernels or plain Python (default: ``fastsim.settings``)."""
    pairs = [(i, j) for j, cfg in enumerate(configs) if cfg.bandwidth_limited or dram_detail
             for i in range(len(layers))]
    shape = (len(layers), len(configs))
    result = {name: np.zeros(shape, np.int64) for name in OUTPUTS}
    result["stall_cycles_by_operand"] = np.zeros(shape + (3,), np.int64)
    result["occupancy"] = np.full(shape + (occupancy_bins,), np.nan)
    if not pairs:
        return result
    inp = np.stack([_item(layers[i], configs[j]) for i, j in pairs])
    folds = np.array([np.prod(_folds(layers[i], configs[j])[:2]) + 1 for i, j in pairs])
    inp[:, KM.X_FOLD_BASE] = np.concatenate([[0], np.cumsum(folds)[:-1]])
    sizes = np.array([_scratch_sizes(layers[i], configs[j]) for i, j in pairs])
    fold_start = np.zeros(folds.sum(), np.int64)
    jit = resolve_jit(jit)
    out = _run_threaded(inp, sizes, [_cost(layers[i], configs[j]) for i, j in pairs], fold_start, threads, jit)
    reasons = {1: "a demanded address is missing from its prefetch order (SCALE-Sim would loop forever)",
               2: "an estimate-mode prefetch does not fit its cycles (SCALE-Sim fails there; SRAM < 100 words?)"}
    failed = [f"{layers[i].name} on {configs[j].rows}x{configs[j].cols} {configs[j].dataflow}: "
              f"{reasons[int(row[KM.Y_STATUS])]}" for (i, j), row in zip(pairs, out) if row[KM.Y_STATUS]]
    if failed:
        raise SimulationError("systolic memory model: " + "; ".join(failed))
    rows, cols = np.array(pairs).T
    for name, (col, _, _) in OUTPUTS.items():
        result[name][rows, cols] = out[:, col]
    result["stall_cycles_by_operand"][rows, cols] = out[:, [KM.Y_STALL_IFMAP, KM.Y_STALL_FILTER, KM.Y_STALL_OFMAP]]
    for (i, j), base, n in zip(pairs, inp[:, KM.X_FOLD_BASE], folds):
        result["occupancy"][i, j] = occupancy(layers[i], configs[j], fold_start[base:base + n], occupancy_bins, jit)
    return result
