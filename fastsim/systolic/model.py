"""Evaluate layers on systolic meshes: one batched kernel call over layers x mesh configs.

``mesh_metrics`` computes everything with numpy (the CLI uses it and starts fast);
``simulate_mesh`` wraps the same arrays in an xarray Dataset with units and descriptions.
"""
from __future__ import annotations

import numpy as np

from fastsim.kernels import systolic as K

from .inputs import DATAFLOWS, Layer, MeshConfig

INT_OUTPUTS = {
    "compute_cycles": (K.O_CYCLES, "cycles", "cycles with unlimited bandwidth (SCALE-Sim 'Total Cycles')"),
    "folds": (K.O_FOLDS, "1", "tiles of the operands mapped onto the mesh one after another"),
    "fold_cycles": (K.O_FOLD_CYCLES, "cycles", "length of one fold"),
    "fill_drain_cycles_per_fold": (K.O_FILL_DRAIN, "cycles", "fold cycles spent filling/draining, not streaming"),
    "sram_ifmap_reads": (K.O_SRAM_IFMAP, "words", "ifmap SRAM reads"),
    "sram_filter_reads": (K.O_SRAM_FILTER, "words", "filter SRAM reads"),
    "sram_ofmap_writes": (K.O_SRAM_OFMAP, "words", "ofmap SRAM writes"),
    "dram_ifmap_reads": (K.O_DRAM_IFMAP, "words", "ifmap DRAM reads (operands that fit their SRAM)"),
    "dram_filter_reads": (K.O_DRAM_FILTER, "words", "filter DRAM reads (operands that fit their SRAM)"),
    "dram_ofmap_writes": (K.O_DRAM_OFMAP, "words", "ofmap DRAM writes (partial sums included)"),
    "macs": (K.O_MACS, "MAC", "multiply-accumulates of the layer"),
}
FLOAT_OUTPUTS = {
    "mapping_efficiency": (K.F_MAPPING_EFF, "%", "mean over folds of used PEs / all PEs"),
    "compute_utilization": (K.F_COMPUTE_UTIL, "%", "mean over folds of busy PE-cycles / PE-cycles"),
    "overall_utilization": (K.F_OVERALL_UTIL, "%", "MACs / (compute_cycles x PEs)"),
}
DERIVED = {
    "stall_cycles": ("cycles", "estimated feed stalls with a bandwidth limit (0 when unlimited)"),
    "total_cycles": ("cycles", "compute_cycles + stall_cycles"),
    "stall_operand": ("", "operand with the most DRAM traffic during compute, when stalled"),
    "avg_dram_words_per_cycle": ("words/cycle", "DRAM traffic / compute cycles"),
    "avg_sram_words_per_cycle": ("words/cycle", "SRAM traffic / compute cycles"),
    "weight_reuse": ("MAC/word", "MACs per filter word read from DRAM"),
    "activation_reuse": ("MAC/word", "MACs per ifmap word read from DRAM"),
    "off_array_bytes_per_tera_op": ("bytes/Top", "DRAM bytes per 1e12 operations"),
}
MISMATCH = ["full", "rows_short", "cols_short", "both_short"]


def mesh_metrics(layers: list[Layer], configs: list[MeshConfig], occupancy_bins: int = 64) -> dict:
    """Every metric as a numpy array of shape (layers, configs[, extra])."""
    configs = [c.validate() for c in configs]
    n_l, n_c = len(layers), len(configs)
    inp = np.zeros((n_l * n_c, K.I_NCOL), np.int64)
    for i, layer in enumerate(layers):
        for j, cfg in enumerate(configs):
            row = inp[i * n_c + j]
            row[[K.I_M, K.I_N, K.I_K, K.I_R, K.I_C]] = layer.m, layer.n, layer.k, cfg.rows, cfg.cols
            row[K.I_DF] = DATAFLOWS.index(cfg.dataflow)
            row[K.I_IFMAP_UNIQUE] = layer.ifmap_unique
    out = np.zeros((len(inp), K.O_NCOL), np.int64)
    fout = np.zeros((len(inp), K.F_NCOL))
    occ = np.zeros((len(inp), occupancy_bins))
    K.systolic_batch(inp, out, fout, occ)
    shape = (n_l, n_c)
    m = {name: out[:, col].reshape(shape) for name, (col, _, _) in INT_OUTPUTS.items()}
    m.update({name: fout[:, col].reshape(shape) for name, (col, _, _) in FLOAT_OUTPUTS.items()})
    m["tile_mismatch"] = out[:, K.O_FOLDS_FULL:K.O_FOLDS_BOTH_SHORT + 1].reshape(shape + (4,))
    m["occupancy"] = occ.reshape(shape + (occupancy_bins,))
    m.update(_bandwidth(m, configs))
    return m


def _bandwidth(m: dict, configs: list[MeshConfig]) -> dict:
    """DRAM traffic over time and, with a bandwidth limit, an estimate of feed stalls.

    Estimate (not SCALE-Sim's request-level buffer model; docs/systolic.md compares them): operands
    that fit their SRAM are prefetched before compute, larger ones stream during compute; ofmap
    writes beyond what the ofmap SRAM holds must drain at the DRAM bandwidth during compute.
    Stalls = the cycles that traffic needs beyond the compute cycles.
    """
    cycles = np.maximum(m["compute_cycles"], 1).astype(float)
    dram = m["dram_ifmap_reads"] + m["dram_filter_reads"] + m["dram_ofmap_writes"]
    sram = m["sram_ifmap_reads"] + m["sram_filter_reads"] + m["sram_ofmap_writes"]
    words = np.array([[c.ifmap_sram_kb * 1024 / c.word_bytes, c.filter_sram_kb * 1024 / c.word_bytes,
                       c.ofmap_sram_kb * 1024 / c.word_bytes] for c in configs])
    streamed_if = np.where(m["dram_ifmap_reads"] > words[:, 0], m["dram_ifmap_reads"], 0)
    streamed_fi = np.where(m["dram_filter_reads"] > words[:, 1], m["dram_filter_reads"], 0)
    drained_of = np.maximum(m["dram_ofmap_writes"] - words[:, 2], 0)
    bw = np.array([c.bandwidth_words_per_cycle or np.inf for c in configs])
    need = np.ceil((streamed_if + streamed_fi + drained_of) / bw)
    stalls = np.where(np.isfinite(bw), np.maximum(need - cycles, 0), 0).astype(np.int64)
    parts = np.stack([streamed_if, streamed_fi, drained_of])
    names = np.array(["ifmap", "filter", "ofmap"])
    word = np.array([c.word_bytes for c in configs])
    return {
        "stall_cycles": stalls,
        "total_cycles": m["compute_cycles"] + stalls,
        "stall_operand": np.where(stalls > 0, names[parts.argmax(0)], ""),
        "avg_dram_words_per_cycle": dram / cycles,
        "avg_sram_words_per_cycle": sram / cycles,
        "weight_reuse": m["macs"] / m["dram_filter_reads"],
        "activation_reuse": m["macs"] / m["dram_ifmap_reads"],
        "off_array_bytes_per_tera_op": dram * word / (2 * m["macs"] / 1e12),
    }


def simulate_mesh(layers: list[Layer], configs: list[MeshConfig], occupancy_bins: int = 64):
    """Every layer on every mesh config: an xarray Dataset with dims (layer, config)."""
    import xarray as xr

    configs = [c.validate() for c in configs]
    m = mesh_metrics(layers, configs, occupancy_bins)
    dims = ("layer", "config")
    data = {}
    for name, (_, units, desc) in {**INT_OUTPUTS, **FLOAT_OUTPUTS}.items():
        data[name] = (dims, m[name], {"units": units, "description": desc})
    for name, (units, desc) in DERIVED.items():
        data[name] = (dims, m[name], {"units": units, "description": desc})
    data["tile_mismatch"] = (dims + ("fold_kind",), m["tile_mismatch"],
                             {"units": "folds", "description": "folds by how they fill the mesh"})
    data["occupancy"] = (dims + ("time_bin",), m["occupancy"],
                         {"units": "1", "description": "mean fraction of busy PEs in equal time bins"})
    return xr.Dataset(data, coords={
        "layer": [layer.name for layer in layers], "fold_kind": MISMATCH,
        "rows": ("config", [c.rows for c in configs]), "cols": ("config", [c.cols for c in configs]),
        "dataflow": ("config", [c.dataflow for c in configs]),
    }, attrs={"stall_model": "estimate: prefetch what fits, stream the rest at the DRAM bandwidth"})
