"""Evaluate layers on systolic meshes: one batched kernel call over layers x mesh configs."""
from __future__ import annotations

import numpy as np
import xarray as xr

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
MISMATCH = ["full", "rows_short", "cols_short", "both_short"]


def simulate_mesh(layers: list[Layer], configs: list[MeshConfig], occupancy_bins: int = 64) -> xr.Dataset:
    """Every layer on every mesh config; dims (layer, config)."""
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
    data = {name: (("layer", "config"), out[:, col].reshape(shape), {"units": u, "description": d})
            for name, (col, u, d) in INT_OUTPUTS.items()}
    data.update({name: (("layer", "config"), fout[:, col].reshape(shape), {"units": u, "description": d})
                 for name, (col, u, d) in FLOAT_OUTPUTS.items()})
    data["tile_mismatch"] = (("layer", "config", "fold_kind"),
                             out[:, K.O_FOLDS_FULL:K.O_FOLDS_BOTH_SHORT + 1].reshape(shape + (4,)),
                             {"units": "folds", "description": "folds by how they fill the mesh"})
    data["occupancy"] = (("layer", "config", "time_bin"), occ.reshape(shape + (occupancy_bins,)),
                         {"units": "1", "description": "mean fraction of busy PEs in equal time bins"})
    ds = xr.Dataset(data, coords={
        "layer": [layer.name for layer in layers], "fold_kind": MISMATCH,
        "rows": ("config", [c.rows for c in configs]), "cols": ("config", [c.cols for c in configs]),
        "dataflow": ("config", [c.dataflow for c in configs]),
    })
    _bandwidth(ds, configs)
    return ds


def _bandwidth(ds: xr.Dataset, configs: list[MeshConfig]) -> None:
    """DRAM traffic over time and, with a bandwidth limit, an estimate of feed stalls.

    Estimate (not SCALE-Sim's request-level buffer model; docs/systolic.md compares them): operands
    that fit their SRAM are prefetched before compute, larger ones stream during compute; ofmap
    writes beyond what the ofmap SRAM holds must drain at the DRAM bandwidth during compute.
    Stalls = the cycles that traffic needs beyond the compute cycles.
    """
    cycles = np.maximum(ds.compute_cycles, 1).astype(float)
    dram = ds.dram_ifmap_reads + ds.dram_filter_reads + ds.dram_ofmap_writes
    ds["avg_dram_words_per_cycle"] = (dram / cycles).assign_attrs(units="words/cycle",
                                                                 description="DRAM traffic / compute cycles")
    ds["avg_sram_words_per_cycle"] = ((ds.sram_ifmap_reads + ds.sram_filter_reads + ds.sram_ofmap_writes)
                                      / cycles).assign_attrs(units="words/cycle", description="SRAM traffic / compute cycles")
    words = xr.DataArray([[c.ifmap_sram_kb * 1024 / c.word_bytes, c.filter_sram_kb * 1024 / c.word_bytes,
                           c.ofmap_sram_kb * 1024 / c.word_bytes] for c in configs], dims=("config", "operand"))
    streamed_if = xr.where(ds.dram_ifmap_reads > words.isel(operand=0), ds.dram_ifmap_reads, 0)
    streamed_fi = xr.where(ds.dram_filter_reads > words.isel(operand=1), ds.dram_filter_reads, 0)
    drained_of = np.maximum(ds.dram_ofmap_writes - words.isel(operand=2), 0)
    bw = xr.DataArray([c.bandwidth_words_per_cycle or np.inf for c in configs], dims="config")
    need = np.ceil((streamed_if + streamed_fi + drained_of) / bw)
    stalls = np.maximum(need - cycles, 0).where(np.isfinite(bw), 0).astype(np.int64)
    ds.attrs["stall_model"] = "estimate: prefetch what fits, stream the rest at the DRAM bandwidth"
    ds["stall_cycles"] = stalls.assign_attrs(units="cycles", description="estimated feed stalls (0 when unlimited)")
    ds["total_cycles"] = (ds.compute_cycles + stalls).assign_attrs(units="cycles")
    parts = xr.concat([streamed_if, streamed_fi, drained_of], dim="operand")
    names = np.array(["ifmap", "filter", "ofmap"])
    ds["stall_operand"] = xr.where(stalls > 0, xr.DataArray(names[parts.argmax("operand").values],
                                                            dims=("layer", "config")), "").assign_attrs(
        description="operand with the most DRAM traffic during compute, when stalled")
    tera_ops = 2 * ds.macs / 1e12
    word = xr.DataArray([c.word_bytes for c in configs], dims="config")
    ds["weight_reuse"] = (ds.macs / ds.dram_filter_reads).assign_attrs(units="MAC/word")
    ds["activation_reuse"] = (ds.macs / ds.dram_ifmap_reads).assign_attrs(units="MAC/word")
    ds["off_array_bytes_per_tera_op"] = (dram * word / tera_ops).assign_attrs(units="bytes/Top")
