"""Where does every byte go? (``fastsim study traffic``)

The traffic decomposition sheet of a run, per layer and op: DDR bytes by tensor kind (activations,
weights, KV, partial sums), bytes per level of the hierarchy (shim to mem tile, mem tile to core,
core to core, ...), where the activations live (read from and kept in mem tiles when fused, else
DDR), the buffer pressure (the most core and mem-tile memory any tile of the op uses) and the
refill cadence: how many times the op's core (mem-tile) memory is filled over, bytes delivered into
those tiles over their peak occupancy. Every number is the simulated run's; the sheet only lays
them out (Markdown, CSV, and a buffer-pressure figure).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..llm import LlmStudy, simulate_llm
from ..version import __version__
from .declaration import Command, Study
from .regimes import parse_regimes
from .report import ms, regime_panels, save_figure, table
from .variables import StudyVariable as Output, build

INTO_CORES = ("mem_compute", "shim_compute")  # levels whose bytes land in core memory from outside
INTO_MEM_TILES = ("shim_mem", "mem_mem")


def traffic(base: LlmStudy, regimes=None, arch: Arch = NPU2) -> xr.Dataset:
    """The sheet of each regime's searched layout (one whole run per regime)."""
    regimes = parse_regimes(regimes)
    runs = [simulate_llm(r.study(base), arch) for r in regimes]
    first = runs[0]
    for r, run in zip(regimes, runs):
        if list(run.op_name.values) != list(first.op_name.values):
            raise ValueError(f"{r.label}: its ops differ from {regimes[0].label}'s; run the regimes apart")
    level = [str(x) for x in first.level.values]
    cores = np.array([[int(c) * arch.compute_rows for c in run.op_columns.values] for run in runs])
    mem_tiles = np.array([[int(c) * arch.mem_rows for c in run.op_columns.values] for run in runs])
    stack = {name: np.stack([run[name].values for run in runs]) for name in
             ("ddr_bytes", "level_bytes", "l1_peak_bytes", "l2_peak_bytes", "op_seconds")}
    into_cores = stack["level_bytes"][..., [level.index(x) for x in INTO_CORES]].sum(-1)
    into_mem = stack["level_bytes"][..., [level.index(x) for x in INTO_MEM_TILES]].sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        l1_fills = np.where(stack["l1_peak_bytes"] > 0, into_cores / (stack["l1_peak_bytes"] * cores), np.nan)
        l2_fills = np.where(stack["l2_peak_bytes"] > 0, into_mem / (stack["l2_peak_bytes"] * mem_tiles), np.nan)
    data = {**stack, "l1_fills": l1_fills, "l2_fills": l2_fills,
            "input_on_chip": np.stack([run.input_on_chip.values.astype(bool) for run in runs]),
            "output_on_chip": np.stack([run.output_on_chip.values.astype(bool) for run in runs])}
    coords = {"regime": ("regime", [r.label for r in regimes]), "op_name": ("op", first.op_name.values.astype(str)),
              "layer": ("op", first.layer.values), "op_class": ("op", first.op_class.values.astype(str)),
              "tensor_kind": first.tensor_kind.values, "level": first.level.values}
    return build(OUTPUTS, data, coords,
                 {"study": "traffic", "model": str(first.attrs["model"]), "arch": arch.name,
                  "weights": base.precision.weights, "kv": base.precision.kv, "version": __version__,
                  "l1_bytes": arch.compute.memory_bytes, "l2_bytes": arch.mem.memory_bytes,
                  "fusion": ";".join(f"{r.label} {run.attrs['fusion']}" for r, run in zip(regimes, runs))})


def sheet_rows(ds: xr.Dataset) -> tuple[list[str], list[list]]:
    """The sheet as (header, rows): one row per regime, layer and op (layer -1: outside the layers)."""
    kinds, levels = [str(k) for k in ds.tensor_kind.values], [str(x) for x in ds.level.values]
    header = (["regime", "layer", "op", "class", "seconds"] + [f"ddr_{k}_bytes" for k in kinds]
              + [f"{x}_bytes" for x in levels]
              + ["activations_in", "activations_out", "l1_peak_bytes", "l2_peak_bytes", "l1_fills", "l2_fills"])
    rows = []
    for g in ds.regime.values:
        r = ds.sel(regime=g)
        for i in range(ds.sizes["op"]):
            x = r.isel(op=i)
            rows.append([str(g), int(x.layer), str(x.op_name.values), str(x.op_class.values), float(x.op_seconds)]
                        + [float(v) for v in x.ddr_bytes.values] + [float(v) for v in x.level_bytes.values]
                        + ["mem tile" if bool(x.input_on_chip) else "DDR",
                           "mem tile" if bool(x.output_on_chip) else "DDR",
                           float(x.l1_peak_bytes), float(x.l2_peak_bytes), float(x.l1_fills), float(x.l2_fills)])
    return header, rows


def sheet_csv(ds: xr.Dataset) -> str:
    header, rows = sheet_rows(ds)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def by_op(ds: xr.Dataset, regime: str) -> xr.Dataset:
    """One regime's sheet summed over the layers per op name (peaks and fills: their largest)."""
    r = ds.sel(regime=regime)
    names = list(dict.fromkeys(str(n) for n in r.op_name.values))
    parts = []
    for name in names:
        x = r.isel(op=np.flatnonzero(r.op_name.values.astype(str) == name))
        parts.append(xr.Dataset({
            **{k: x[k].sum("op") for k in ("ddr_bytes", "level_bytes", "op_seconds")},
            **{k: x[k].max("op", skipna=True) for k in ("l1_peak_bytes", "l2_peak_bytes", "l1_fills", "l2_fills")},
            "input_on_chip": x.input_on_chip.all("op"), "output_on_chip": x.output_on_chip.all("op"),
            "layers": xr.DataArray(int((x.layer.values >= 0).sum()))}))
    return xr.concat(parts, dim="op").assign_coords(op=names)


def traffic_markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    """The report: per regime one row per op, summed over its layers (``traffic.csv`` has each layer)."""
    a = ds.attrs
    out = [f"# Traffic decomposition: {a['model']} on {a['arch']} ({a['weights']} weights, {a['kv']} KV)", "",
           "Per op, summed over the layers (`traffic.csv` beside this file has every layer): DDR bytes by tensor "
           "kind, bytes into the mem tiles and into the cores, where the activations live, the buffer pressure "
           f"(largest peak of any tile; capacity L1 {a['l1_bytes'] // 1024} KiB, L2 {a['l2_bytes'] // 1024} KiB) and "
           "the refill cadence (times the cores' or mem tiles' memory is filled over). Fusion: "
           f"{a['fusion']}.", ""]
    for g in ds.regime.values:
        r = by_op(ds, str(g))
        level = [str(x) for x in ds.level.values]
        rows = []
        for op in r.op.values:
            x = r.sel(op=op)
            ddr = " / ".join(f"{float(x.ddr_bytes.sel(tensor_kind=k)) / 1e6:.3g}" for k in ("activations", "weights",
                                                                                          "kv", "psum"))
            into_mem = sum(float(x.level_bytes.isel(level=level.index(k))) for k in INTO_MEM_TILES)
            into_cores = sum(float(x.level_bytes.isel(level=level.index(k))) for k in INTO_CORES)
            rows.append([op, int(x.layers) or "outside", ms(float(x.op_seconds)), ddr, f"{into_mem / 1e6:.3g}",
                         f"{into_cores / 1e6:.3g}", f"{'mem tile' if bool(x.input_on_chip) else 'DDR'} -> "
                         f"{'mem tile' if bool(x.output_on_chip) else 'DDR'}",
                         f"{float(x.l1_peak_bytes) / 1024:.3g} / {float(x.l2_peak_bytes) / 1024:.3g}",
                         f"{float(x.l1_fills):.3g} / {float(x.l2_fills):.3g}"])
        out += [f"## {g}", "", table(["op", "layers", "ms", "DDR MB act/wgt/kv/psum", "into mem tiles MB",
                                      "into cores MB", "activations in -> out", "L1 / L2 peak KiB",
                                      "L1 / L2 fills"], rows), ""]
    if figure:
        out += [f"![buffer pressure per op]({figure})", ""]
    return "\n".join(out)


def traffic_figure(ds: xr.Dataset, path: Path | None = None):
    """Buffer pressure per op (largest over the layers) against each memory's capacity, per regime."""
    plt, fig, panels = regime_panels(ds, 3.6)
    for ax, g in panels:
        r = by_op(ds, str(g))
        y = np.arange(r.sizes["op"])
        ax.barh(y - 0.2, r.l1_peak_bytes.values / 1024, 0.4, label="core (L1)")
        ax.barh(y + 0.2, r.l2_peak_bytes.values / 1024, 0.4, label="mem tile (L2)")
        ax.axvline(ds.attrs["l1_bytes"] / 1024, color="C0", ls="--", lw=0.8)
        ax.axvline(ds.attrs["l2_bytes"] / 1024, color="C1", ls="--", lw=0.8)
        ax.set_yticks(y, [str(o) for o in r.op.values], fontsize=6)
        ax.invert_yaxis()
        ax.set_xscale("log", base=2)
        ax.set_xlabel("peak KiB (dashed: capacity)")
        ax.set_title(str(g), fontsize=9)
    panels[-1][0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(f"Buffer pressure: {ds.attrs['model']} on {ds.attrs['arch']}", fontsize=10)
    return save_figure(plt, fig, path)


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "ddr_bytes": Output(("regime", "op", "tensor_kind"), "bytes",
        "DDR traffic of the op (this layer) by tensor kind: weights, activations, kv, psum"),
    "level_bytes": Output(("regime", "op", "level"), "bytes",
        "traffic of the op (this layer) per level of the hierarchy (DDR read and write, shim to mem tile, "
        "mem tile to core, core to core, shim to core, mem tile to mem tile)"),
    "l1_peak_bytes": Output(("regime", "op"), "bytes", "buffer pressure: most core memory any core of the op uses"),
    "l2_peak_bytes": Output(("regime", "op"), "bytes",
        "buffer pressure: most mem-tile memory any mem tile of the op uses"),
    "l1_fills": Output(("regime", "op"), "1",
        "refill cadence: bytes delivered into the op's cores (from mem tiles and shims) over the peak "
        "occupancy times the cores of the op's columns: how many times core memory is filled over (an op "
        "that leaves some of those cores idle reads low; NaN: no core buffer)"),
    "l2_fills": Output(("regime", "op"), "1",
        "refill cadence: bytes delivered into the op's mem tiles over their peak occupancy, times the number "
        "of mem tiles (NaN: no mem-tile buffer)"),
    "input_on_chip": Output(("regime", "op"), "1", "activation residency: the input is read from mem tiles (fused), "
                                               "not DDR"),
    "output_on_chip": Output(("regime", "op"), "1", "activation residency: the output stays in mem tiles for the "
                                                "next op"),
    "op_seconds": Output(("regime", "op"), "s", "time of the op (this layer)"),
}


def _write_sheet(ds: xr.Dataset, out: Path) -> None:
    """Every layer's row beside the report, where the Markdown sums them per op."""
    (out / "traffic.csv").write_text(sheet_csv(ds))


STUDY = Study(
    "traffic", traffic, OUTPUTS, traffic_markdown, traffic_figure, _write_sheet,
    command=Command("""Where does every byte go? The traffic decomposition sheet per layer and op: DDR bytes by
    tensor kind (activations, weights, KV, partial sums), bytes per level, where the activations
    live, buffer pressure (core and mem-tile peaks) and refill cadence. --report writes it as
    Markdown (per op), CSV (every layer: traffic.csv) and a buffer-pressure figure.

    Example: fastsim study traffic --regime decode:4096 --regime prefill:1024 --report out/
    """, traffic))
