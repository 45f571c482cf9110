"""Evaluate layers on systolic meshes: batched kernel calls over layers x mesh configs.

Compute timing comes in closed form (``kernels/systolic.py``); configs with a DRAM bandwidth limit
also run SCALE-Sim's request-level buffer model (``memory.py``) for stalls and DRAM traffic.
``mesh_metrics`` returns numpy arrays (the CLI uses it and starts fast); ``simulate_mesh`` wraps
the same arrays in an xarray Dataset with units and descriptions.
"""
from __future__ import annotations

import numpy as np

from fastsim.kernels import systolic as K
from fastsim.settings import resolve_jit

from .inputs import DATAFLOWS, Layer, MeshConfig
from .memory import OUTPUTS as MEMORY_OUTPUTS
from .memory import STALL_OPERANDS, memory_metrics

INT_OUTPUTS = {
    "compute_cycles": (K.O_CYCLES, "cycles", "cycles with unlimited bandwidth (SCALE-Sim 'Total Cycles')"),
    "folds": (K.O_FOLDS, "1", "tiles of the operands mapped onto the mesh one after another"),
    "fold_cycles": (K.O_FOLD_CYCLES, "cycles", "length of one fold"),
    "fill_drain_cycles_per_fold": (K.O_FILL_DRAIN, "cycles", "fold cycles spent filling/draining, not streaming"),
    "sram_ifmap_reads": (K.O_SRAM_IFMAP, "words", "ifmap SRAM reads"),
    "sram_filter_reads": (K.O_SRAM_FILTER, "words", "filter SRAM reads"),
    "sram_ofmap_writes": (K.O_SRAM_OFMAP, "words", "ofmap SRAM writes"),
    "dram_ifmap_reads": (K.O_DRAM_IFMAP, "words", "ifmap DRAM reads (unlimited: each element once; "
                         "limited: whole prefetch lines, refetches included)"),
    "dram_filter_reads": (K.O_DRAM_FILTER, "words", "filter DRAM reads (as dram_ifmap_reads)"),
    "dram_ofmap_writes": (K.O_DRAM_OFMAP, "words", "ofmap DRAM writes (partial sums included)"),
    "macs": (K.O_MACS, "MAC", "multiply-accumulates of the layer"),
}
FLOAT_OUTPUTS = {
    "mapping_efficiency": (K.F_MAPPING_EFF, "%", "mean over folds of used PEs / all PEs"),
    "compute_utilization": (K.F_COMPUTE_UTIL, "%", "mean over folds of busy PE-cycles / PE-cycles"),
    "overall_utilization": (K.F_OVERALL_UTIL, "%", "MACs / (total_cycles x PEs)"),
}
DERIVED = {
    "stall_cycles": ("cycles", "cycles the mesh waits on its SRAM buffers (0 when bandwidth is unlimited)"),
    "total_cycles": ("cycles", "SCALE-Sim 'Total Cycles': compute_cycles when unlimited, else the "
                               "cycle the last ofmap row is written"),
    "stall_operand": ("", "operand whose buffer set most of the stall cycles ('' without stalls)"),
    "avg_dram_words_per_cycle": ("words/cycle", "DRAM traffic / total cycles"),
    **{f"avg_dram_{op}_words_per_cycle": ("words/cycle", f"{op} DRAM words over its DRAM access window "
                                          "(SCALE-Sim's bandwidth report) where a buffer model ran, else "
                                          "over the total cycles") for op in ("ifmap", "filter", "ofmap")},
    **{f"peak_dram_{op}_words_per_cycle": ("words/cycle", f"highest {op} DRAM rate of any cycle: the "
                                           "interface when limited, the largest prefetch rate SCALE-Sim's "
                                           "estimate buffers need when unlimited (NaN unless a buffer "
                                           "model ran)") for op in ("ifmap", "filter", "ofmap")},
    "avg_sram_words_per_cycle": ("words/cycle", "SRAM traffic / total cycles"),
    "weight_reuse": ("MAC/word", "MACs per filter word read from DRAM"),
    "activation_reuse": ("MAC/word", "MACs per ifmap word read from DRAM"),
    "off_array_bytes_per_tera_op": ("bytes/Top", "DRAM bytes per 1e12 operations"),
}
MISMATCH = ["full", "rows_short", "cols_short", "both_short"]


def mesh_metrics(layers: list[Layer], configs: list[MeshConfig], occupancy_bins: int = 64,
                 dram_detail: bool = False, threads: int = 1, jit: bool | None = None) -> dict:
    """Every metric as a numpy array of shape (layers, configs[, extra]). ``dram_detail`` also runs
    SCALE-Sim's request-level estimate buffers on configs without a bandwidth limit: exact DRAM
    writes, access windows and peak rates there too, at request-level cost. ``threads`` spreads the
    request-level models over threads. ``jit=False`` runs the kernels as plain Python: a few
    closed-form layers finish before numba would have started (default: ``fastsim.settings``,
    else ``$FASTSIM_JIT``, else compiled; the numbers are the same)."""
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
    jit = resolve_jit(jit)
    K.systolic_batch.variant(jit)(inp, out, fout, occ)
    shape = (n_l, n_c)
    m = {name: out[:, col].reshape(shape) for name, (col, _, _) in INT_OUTPUTS.items()}
    m.update({name: fout[:, col].reshape(shape) for name, (col, _, _) in FLOAT_OUTPUTS.items()})
    m["tile_mismatch"] = out[:, K.O_FOLDS_FULL:K.O_FOLDS_BOTH_SHORT + 1].reshape(shape + (4,))
    m["occupancy"] = occ.reshape(shape + (occupancy_bins,))
    m.update(_memory(m, layers, configs, dram_detail, threads, jit))
    return m


def _memory(m: dict, layers: list[Layer], configs: list[MeshConfig], dram_detail: bool, threads: int,
            jit: bool) -> dict:
    """Stalls and DRAM traffic: closed forms with unlimited bandwidth (no stalls, each element
    read once), SCALE-Sim's request-level buffer models where a config sets a bandwidth (USER) or
    ``dram_detail`` asks for them (CALC's estimate buffers)."""
    modelled = np.array([c.bandwidth_limited or dram_detail for c in configs])
    mem = memory_metrics(layers, configs, m["occupancy"].shape[-1], dram_detail, threads, jit)
    m["occupancy"] = np.where(modelled[:, None], mem["occupancy"], m["occupancy"])
    # memory_metrics leaves zeros where no buffer model ran
    out = {name: mem[name] for name in MEMORY_OUTPUTS if name.endswith("_cycle")}
    out["stall_cycles"] = mem["stall_cycles"]
    out["stall_cycles_by_operand"] = mem["stall_cycles_by_operand"]
    out["total_cycles"] = np.where(modelled, mem["total_cycles"], m["compute_cycles"])
    first_read = np.minimum(mem["dram_ifmap_start_cycle"], mem["dram_filter_start_cycle"])
    out["total_cycles_incl_prefetch"] = mem["dram_ofmap_stop_cycle"] - first_read
    for name in ("dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes"):
        m[name] = np.where(modelled, mem[name], m[name])
    cycles = np.maximum(out["total_cycles"], 1).astype(float)
    for op, words in (("ifmap", "reads"), ("filter", "reads"), ("ofmap", "writes")):
        # SCALE-Sim's BANDWIDTH_REPORT: words over the operand's DRAM access window; else over the run
        window = out[f"dram_{op}_stop_cycle"] - out[f"dram_{op}_start_cycle"] + 1
        moved = m[f"dram_{op}_{words}"]
        out[f"avg_dram_{op}_words_per_cycle"] = np.where(modelled, moved / np.maximum(window, 1), moved / cycles)
        out[f"peak_dram_{op}_words_per_cycle"] = np.where(modelled, mem[f"peak_dram_{op}_words_per_cycle"], np.nan)
    m["overall_utilization"] = 100.0 * m["macs"] / (cycles * np.array([c.rows * c.cols for c in configs]))
    dram = m["dram_ifmap_reads"] + m["dram_filter_reads"] + m["dram_ofmap_writes"]
    sram = m["sram_ifmap_reads"] + m["sram_filter_reads"] + m["sram_ofmap_writes"]
    word = np.array([c.word_bytes for c in configs])
    by_operand = out["stall_cycles_by_operand"]
    out.update({
        "stall_operand": np.where(out["stall_cycles"] > 0, np.array(STALL_OPERANDS)[by_operand.argmax(-1)], ""),
        "avg_dram_words_per_cycle": dram / cycles,
        "avg_sram_words_per_cycle": sram / cycles,
        "weight_reuse": m["macs"] / m["dram_filter_reads"],
        "activation_reuse": m["macs"] / m["dram_ifmap_reads"],
        "off_array_bytes_per_tera_op": dram * word / (2 * m["macs"] / 1e12),
    })
    return out


def simulate_mesh(layers: list[Layer], configs: list[MeshConfig], occupancy_bins: int = 64,
                  dram_detail: bool = False, threads: int = 1):
    """Every layer on every mesh config: an xarray Dataset with dims (layer, config)."""
    import xarray as xr

    configs = [c.validate() for c in configs]
    m = mesh_metrics(layers, configs, occupancy_bins, dram_detail, threads)
    dims = ("layer", "config")
    data = {}
    for name, (_, units, desc) in {**INT_OUTPUTS, **FLOAT_OUTPUTS}.items():
        data[name] = (dims, m[name], {"units": units, "description": desc})
    for name, (units, desc) in DERIVED.items():
        data[name] = (dims, m[name], {"units": units, "description": desc})
    for name, (_, units, desc) in MEMORY_OUTPUTS.items():
        if name.endswith("_cycle"):
            data[name] = (dims, m[name], {"units": units, "description": desc + " (where a buffer model ran)"})
    data["total_cycles_incl_prefetch"] = (dims, m["total_cycles_incl_prefetch"], {
        "units": "cycles", "description": "SCALE-Sim 'Total Cycles (incl. prefetch)': first DRAM read to last "
                                          "DRAM write (where a buffer model ran)"})
    data["stall_cycles_by_operand"] = (dims + ("operand",), m["stall_cycles_by_operand"],
                                       {"units": "cycles", "description": "stall cycles by the operand "
                                        "whose buffer set each stalled cycle"})
    data["tile_mismatch"] = (dims + ("fold_kind",), m["tile_mismatch"],
                             {"units": "folds", "description": "folds by how they fill the mesh"})
    data["occupancy"] = (dims + ("time_bin",), m["occupancy"],
                         {"units": "1", "description": "mean fraction of busy PEs in equal time bins "
                                          "(stalls included when bandwidth-limited)"})
    return xr.Dataset(data, coords={
        "layer": [layer.name for layer in layers], "fold_kind": MISMATCH, "operand": STALL_OPERANDS,
        "rows": ("config", [c.rows for c in configs]), "cols": ("config", [c.cols for c in configs]),
        "dataflow": ("config", [c.dataflow for c in configs]),
        "bandwidth_words_per_cycle": ("config", [c.bandwidth_words_per_cycle or 0 for c in configs]),
    }, attrs={"memory_model": "SCALE-Sim v3 buffers request by request: USER mode where bandwidth > 0; "
                              "CALC (bandwidth 0): closed forms" + (" and its estimate buffers" if dram_detail else "")})
