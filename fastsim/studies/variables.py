"""Every study output variable, declared once: its dims, units and description. The studies build
their Datasets from it (``build``), so the Datasets, their zarr stores, the JSON (``--json``) and the
sweep kinds (``Variable``, ``sweep_output``: ``fastsim.studies.registry`` and
``fastsim.sweeping.variables``) carry the same units and words."""
from __future__ import annotations

from dataclasses import dataclass

import xarray as xr


@dataclass(frozen=True)
class StudyVariable:
    dims: tuple[str, ...]
    units: str
    description: str


_v = StudyVariable


@dataclass(frozen=True)
class Variable:
    """A variable a sweep point stores (``fastsim.sweeping.variables``): over the sweep's axes and
    ``extra_dim``, with its units, words and dtype."""
    name: str
    units: str
    description: str
    dtype: str = "float64"
    extra_dim: tuple[str, tuple[str, ...]] | None = None  # (dim name, labels) beyond the axes
    flags: tuple[str, ...] = ()  # an integer code's meanings (CF flag_values / flag_meanings)

    def attrs(self) -> dict:
        out = {"units": self.units, "description": self.description}
        if self.flags:
            out.update(flag_values=list(range(len(self.flags))), flag_meanings=" ".join(self.flags))
        return out


def sweep_output(study: str, name: str, **kw) -> Variable:
    """A study's output as its sweep kind stores it, with the units and words the study's own
    Dataset declares."""
    v = VARIABLES[study][name]
    return Variable(name, v.units, v.description, **kw)


VARIABLES = {
    "compression": {
        "baseline_bytes": _v(("tensor", "scheme"), "bytes", "the dense tensor in the scheme's baseline representation"),
        "bytes": _v(("tensor", "scheme"), "bytes", "bytes the scheme stores and streams"),
        "ratio": _v(("tensor", "scheme"), "1", "measured ratio: baseline bytes / scheme bytes"),
        "nominal_ratio": _v(("tensor", "scheme"), "1",
           "the scheme's nominal ratio (N:M: M/N; int8/int4: 2/4 against bf16; zero-value: skipping every zero "
           "byte without masks)"),
        "elements": _v(("tensor",), "1", "values in the tensor"),
        "total_ratio_weights": _v(("scheme",), "1", "measured ratio over all weight tensors"),
        "total_nominal_ratio_weights": _v(("scheme",), "1", "nominal ratio over all weight tensors"),
        "total_ratio_kv": _v(("scheme",), "1", "measured ratio over all K/V tensors (NaN: none given)"),
        "total_nominal_ratio_kv": _v(("scheme",), "1", "nominal ratio over all K/V tensors"),
    },
    "bandwidth": {
        "bytes_per_s": _v(("column", "direction", "channels", "size_bytes"), "bytes/s",
           "effective bandwidth of memcpy transfers (bytes over simulated time; column all: every column at "
           "once, summed)"),
        "split_bytes_per_s": _v(("split",), "bytes/s",
           "one tensor read over every column, its bytes split equally or in proportion to each column's "
           "measured bandwidth"),
        "split_share_bytes": _v(("split", "split_column"), "bytes", "bytes each column reads under each split"),
        "column_read_bytes_per_s": _v(("split_column",), "bytes/s",
           "each column's measured read bandwidth alone (one channel, largest transfer): the proportional "
           "split's weights"),
    },
    "ablate": {
        "delta_seconds": _v(("regime", "op_class"), "s",
           "end-to-end time saved when the class computes nothing (its data still moves)"),
        "share": _v(("regime", "op_class"), "1", "delta_seconds over baseline_seconds"),
        "op_seconds": _v(("regime", "op_class"), "s", "the class's op time in the baseline"),
        "time_share": _v(("regime", "op_class"), "1",
           "op_seconds over baseline_seconds: the class's share of the run, what a per-kernel profile "
           "shows (a class can take most of the time and save none of it: its time is data movement)"),
        "compute_seconds": _v(("regime", "op_class"), "s",
           "the class's kernel time in the baseline (busiest core per op)"),
        "movement_seconds": _v(("regime", "op_class"), "s",
           "the class's data-movement time in the baseline (its ops with 1-cycle kernels)"),
        "bound_by": _v(("regime", "op_class"), "1",
           "resource with the highest utilization over most of the class's time in the baseline"),
        "exposed_share": _v(("regime", "op_class"), "1",
           "delta_seconds over compute_seconds: the share of the class's kernel time on the critical "
           "path (0: hidden under data movement)"),
        "rank": _v(("regime", "op_class"), "1", "1 = largest delta_seconds in the regime; -1 absent"),
        "baseline_seconds": _v(("regime",), "s", "end-to-end time of the regime, nothing removed"),
        "data_movement_seconds": _v(("regime",), "s", "end-to-end time with every class's compute removed at once"),
        "top_class": _v(("regime",), "1", "the class to optimize first (rank 1)"),
        "fusion": _v(("regime",), "1", "the layout every run of the regime kept (the baseline's fusion: searched, or as built)"),
    },
    "cuts": {
        "seconds": _v(("regime", "dispatches"), "s",
           "fastest end-to-end time with this many dispatches (NaN: none fits)"),
        "energy_pj": _v(("regime", "dispatches"), "pJ", "energy of that cut set's ops"),
        "cuts": _v(("regime", "dispatches"), "1", "that cut set: layers after which a dispatch ends"),
        "pareto": _v(("regime", "dispatches"), "1", "no cut set with fewer dispatches is as fast"),
        "best_seconds": _v(("regime",), "s", "the best cut set's time"),
        "best_cuts": _v(("regime",), "1", "the best cut set (latency, then energy)"),
        "default_seconds": _v(("regime",), "s", "time with the default greedy cut"),
        "default_cuts": _v(("regime",), "1", "the default greedy cut (whole layers while everything fits)"),
        "fusion": _v(("regime",), "1", "the layout kept while cuts vary (the regime's searched fusion)"),
        "boundary_after_layer": _v(("regime", "boundary"), "layer",
           "a boundary of the best cut set: a dispatch ends after this layer (-1: none)"),
        "boundary_write_out_seconds": _v(("regime", "boundary"), "s",
           "extra time of the ops before it, control included (activations written to DDR), against the merged dispatch"),
        "boundary_read_back_seconds": _v(("regime", "boundary"), "s",
           "extra time of the ops after it, control included (activations read back from DDR), against the merged dispatch"),
        "boundary_host_round_trip_seconds": _v(("regime", "boundary"), "s", "one more dispatch's host round trip"),
        "boundary_setup_in_round_trip_seconds": _v(("regime", "boundary"), "s",
           "the set-up of the op after it, which the new dispatch does (negative: no op's control pays it)"),
        "boundary_weight_reload_seconds": _v(("regime", "boundary"), "s",
           "static weights loaded again (no longer resident)"),
        "boundary_program_reload_seconds": _v(("regime", "boundary"), "s", "program reloads added (negative: saved)"),
        "boundary_net_seconds": _v(("regime", "boundary"), "s",
           "what the boundary costs in all (negative: it pays for itself)"),
        "boundary_relieves": _v(("regime", "boundary"), "1", "the resource pressure the boundary relieves"),
    },
    "dataflow": {
        "seconds": _v(("regime", "point"), "s",
           "end-to-end time of the whole run (NaN: a style cannot map some op)"),
        "energy_j": _v(("regime", "point"), "J", "energy per inference (ops, arch energy table)"),
        "program_reload_seconds": _v(("regime", "point"), "s",
           "program reloads of the run (its distinct kernels exceed program memory)"),
        "pareto": _v(("regime", "point"), "1", "no other point is as fast and as frugal"),
        "baseline": _v(("regime",), "1", "the best single style by latency: the explicit baseline"),
        "chosen": _v(("regime",), "1", "the fastest point on the Pareto front"),
        "fusion": _v(("regime",), "1", "the pinned layout"),
        "m_rows": _v(("regime",), "rows", "M of the token-parallel ops (tokens x batch) in the regime"),
        "op_seconds": _v(("regime", "op", "style"), "s", "the op (all its layers) under each single style"),
        "op_energy_j": _v(("regime", "op", "style"), "J",
           "the op's energy (all its layers) under each single style"),
        "choice": _v(("regime", "op"), "1", "recommended style (least time; ties: less energy)"),
        "weight_reuse": _v(("regime", "op"), "MAC/byte",
           "MACs per byte of weights (or KV) fetched from DDR, chosen style"),
        "activation_reuse": _v(("regime", "op"), "MAC/byte",
           "MACs per byte of activations fetched from DDR, chosen style"),
        "l1_peak_bytes": _v(("regime", "op"), "bytes", "buffer pressure: most core memory any core uses"),
        "l2_peak_bytes": _v(("regime", "op"), "bytes", "buffer pressure: most mem-tile memory any mem tile uses"),
        "ddr_bytes": _v(("regime", "op", "tensor_kind"), "bytes",
           "DDR traffic of the op (all layers) by tensor kind, chosen style"),
        "level_bytes": _v(("regime", "op", "level"), "bytes",
           "traffic of the op (all layers) per level of the hierarchy (DDR, shim-mem, mem-core, core-core, "
           "mem-mem), chosen style"),
        "gain_seconds": _v(("regime", "op"), "s", "time the op saves against the baseline style"),
        "gain_j": _v(("regime", "op"), "J", "energy the op saves against the baseline style"),
    },
    "traffic": {
        "ddr_bytes": _v(("regime", "op", "tensor_kind"), "bytes",
           "DDR traffic of the op (this layer) by tensor kind: weights, activations, kv, psum"),
        "level_bytes": _v(("regime", "op", "level"), "bytes",
           "traffic of the op (this layer) per level of the hierarchy (DDR read and write, shim to mem tile, "
           "mem tile to core, core to core, shim to core, mem tile to mem tile)"),
        "l1_peak_bytes": _v(("regime", "op"), "bytes", "buffer pressure: most core memory any core of the op uses"),
        "l2_peak_bytes": _v(("regime", "op"), "bytes",
           "buffer pressure: most mem-tile memory any mem tile of the op uses"),
        "l1_fills": _v(("regime", "op"), "1",
           "refill cadence: bytes delivered into the op's cores (from mem tiles and shims) over the peak "
           "occupancy times the cores of the op's columns: how many times core memory is filled over (an op "
           "that leaves some of those cores idle reads low; NaN: no core buffer)"),
        "l2_fills": _v(("regime", "op"), "1",
           "refill cadence: bytes delivered into the op's mem tiles over their peak occupancy, times the number "
           "of mem tiles (NaN: no mem-tile buffer)"),
        "input_on_chip": _v(("regime", "op"), "1", "activation residency: the input is read from mem tiles (fused), "
                                                   "not DDR"),
        "output_on_chip": _v(("regime", "op"), "1", "activation residency: the output stays in mem tiles for the "
                                                    "next op"),
        "op_seconds": _v(("regime", "op"), "s", "time of the op (this layer)"),
    },
    "kv": {
        "kv_bytes": _v(("model", "batch", "context"), "bytes", "DDR bytes of the KV cache one decode step reads and writes"),
        "weight_bytes": _v(("model", "batch", "context"), "bytes", "DDR bytes of weights one decode step reads"),
        "seconds": _v(("model", "batch", "context"), "s", "time of one decode step"),
        "kv_crossover": _v(("model", "batch"), "tokens",
           "context where KV bytes overtake weight bytes, interpolated linearly in context between the two grid "
           "points that bracket it (NaN: not within the grid)"),
    },
    "overlays": {
        "seconds": _v(("regime", "overlay"), "s",
           "end-to-end time of the regime (rows) laid out as the overlay of a regime (columns); NaN: "
           "that layout cannot run the regime"),
        "cannot_run": _v(("regime", "overlay"), "1",
           "why the overlay (columns) cannot run the regime (rows): the first problem the simulation "
           "reported; '' where it runs"),
        "best_overlay": _v(("regime",), "1",
           "the overlay (named by the regime it was searched for) that runs the regime fastest"),
        "fusion": _v(("regime",), "1", "the regime's own (searched) overlay: fusion"),
        "residency": _v(("regime",), "1", "the regime's own overlay: static or streamed weights"),
        "residency_reason": _v(("regime",), "1", "why that residency (on-chip capacity, time)"),
        "bound_by": _v(("regime", "op_class"), "1",
           "per class, the resource with the highest utilization over most of its time"),
        "binding_differs": _v(("op_class",), "1",
           "the class is bound by different resources in different regimes: a placement tuned for one "
           "regime may not suit another (whether one overlay still serves them all is mix_seconds')"),
        "mix_seconds": _v(("plan",), "s",
           "the request mix's time: per_regime (each regime on its best overlay, switches included "
           "where they differ) or one single overlay for every regime (NaN: it cannot run some "
           "regime)"),
    },
}


def build(study: str, data: dict, coords: dict, attrs: dict) -> xr.Dataset:
    """The study's Dataset from plain arrays: dims, units and description of every variable from
    ``VARIABLES`` (a variable that is not declared there is an error)."""
    declared = VARIABLES[study]
    unknown = sorted(set(data) - set(declared))
    if unknown:
        raise KeyError(f"{study}: variables not declared in fastsim.studies.variables: {unknown}")
    return xr.Dataset({name: (declared[name].dims, value, {"units": declared[name].units,
                                                          "description": declared[name].description})
                       for name, value in data.items()}, coords=coords, attrs=attrs)
