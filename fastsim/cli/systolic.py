"""``fastsim systolic``: SCALE-Sim-compatible timing of every layer on a systolic PE mesh."""
from __future__ import annotations

import dataclasses
import json
import os

import click

from ..errors import ConfigError
from .common import fail

# Runs that need closed forms only (unlimited bandwidth, no DRAM detail, no traces) finish faster
# as plain Python than numba starts (docs/systolic.md) when there are at most this many
# (layers x dataflows)
PLAIN_PYTHON_RUNS = 2000
OPERANDS = ("ifmap", "filter", "ofmap")


@click.command("systolic")
@click.option("-c", "config_path", required=True, type=click.Path(dir_okay=False), help="SCALE-Sim .cfg file")
@click.option("-t", "topology_path", required=True, type=click.Path(dir_okay=False),
              help="SCALE-Sim topology CSV (conv or GEMM form)")
@click.option("--dataflow", default=None, help="override: one or more of ws,is,os (comma separated)")
@click.option("--json", "as_json", is_flag=True)
@click.option("--dram-detail", is_flag=True,
              help="without a bandwidth limit also run SCALE-Sim's estimate buffers (exact DRAM writes, "
                   "access windows, peak rates; request-level cost)")
@click.option("--threads", default=None, type=click.IntRange(min=1),
              help="threads for the request-level buffer models (default: one per core)")
@click.option("--trace", "trace_path", default=None, type=click.Path(dir_okay=False),
              help="write a Perfetto per-layer fold timeline (open in ui.perfetto.dev)")
@click.option("--traces", "traces_dir", default=None, type=click.Path(file_okay=False),
              help="also write SCALE-Sim-format traces under DIR/<run name>[_<dataflow>]/layer<i>/ (large)")
def systolic_cmd(config_path, topology_path, dataflow, as_json, dram_detail, threads, trace_path, traces_dir):
    """Systolic PE-mesh timing of every layer: SCALE-Sim v3's numbers, compute in closed form and,
    with InterfaceBandwidth USER, its request-level buffer model for stalls and DRAM traffic.

    Example: fastsim systolic -c bench/scalesim/mesh32_os.cfg -t bench/scalesim/resnet50.csv --dataflow ws,os"""
    from ..systolic.inputs import read_config, read_topology

    try:
        cfg = read_config(config_path)
        layers = read_topology(topology_path)
        flows = [f.strip() for f in dataflow.split(",")] if dataflow else [cfg.dataflow]
        m, fold_kinds = _metrics(cfg, layers, flows, dram_detail, threads, traces_dir)
        if traces_dir:
            _write_traces(cfg, layers, flows, traces_dir)
    except ConfigError as e:
        fail(e)
    rows = _rows(cfg, layers, flows, m, fold_kinds, _keys(cfg, dram_detail))
    if trace_path:
        _write_trace(rows, trace_path)
    if as_json:
        click.echo(json.dumps({"config": dataclasses.asdict(cfg), "layers": rows}))
    else:
        _echo_table(cfg, rows)


def _metrics(cfg, layers, flows, dram_detail, threads, traces_dir):
    """(the mesh model's metrics, its tile-mismatch fold kinds). Small closed-form runs use the
    plain-Python kernels unless a JIT choice was made (``fastsim.settings``, ``$FASTSIM_JIT``)."""
    from ..settings import resolve_jit
    from ..systolic import model

    closed_forms_only = not (cfg.bandwidth_limited or dram_detail or traces_dir)
    jit = resolve_jit(default=not (closed_forms_only and len(layers) * len(flows) <= PLAIN_PYTHON_RUNS))
    m = model.mesh_metrics(layers, [dataclasses.replace(cfg, dataflow=f) for f in flows], dram_detail=dram_detail,
                           threads=threads or os.cpu_count() or 1, jit=jit)
    return m, model.MISMATCH


def _write_traces(cfg, layers, flows, traces_dir) -> None:
    from ..systolic.traces import write_traces

    for f in flows:
        name = cfg.name if len(flows) == 1 else f"{cfg.name}_{f}"
        write_traces(layers, dataclasses.replace(cfg, dataflow=f, name=name), traces_dir)


def _keys(cfg, dram_detail: bool) -> list[str]:
    """The metrics a row reports (DRAM windows and peaks only where a buffer model ran)."""
    keys = ["compute_cycles", "stall_cycles", "total_cycles", "folds", "fill_drain_cycles_per_fold",
            "mapping_efficiency", "compute_utilization", "overall_utilization", "sram_ifmap_reads",
            "sram_filter_reads", "sram_ofmap_writes", "dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes",
            "avg_dram_words_per_cycle", "weight_reuse", "activation_reuse", "off_array_bytes_per_tera_op"]
    keys += [f"avg_dram_{op}_words_per_cycle" for op in OPERANDS]
    if cfg.bandwidth_limited or dram_detail:
        keys += ["total_cycles_incl_prefetch"]
        keys += [f"dram_{op}_{edge}_cycle" for op in OPERANDS for edge in ("start", "stop")]
        keys += [f"peak_dram_{op}_words_per_cycle" for op in OPERANDS]
    return keys


def _rows(cfg, layers, flows, m: dict, fold_kinds, keys: list[str]) -> list[dict]:
    """One row per (dataflow, layer), dataflows outer."""
    rows = []
    for j, flow in enumerate(flows):
        for i, layer in enumerate(layers):
            row = {"layer": layer.name, "dataflow": flow, "rows": cfg.rows, "cols": cfg.cols}
            row.update({k: m[k][i, j].item() for k in keys})
            row["tile_mismatch"] = dict(zip(fold_kinds, m["tile_mismatch"][i, j].tolist()))
            row["stall_operand"] = str(m["stall_operand"][i, j])
            row["stall_cycles_by_operand"] = dict(zip(OPERANDS, m["stall_cycles_by_operand"][i, j].tolist()))
            rows.append(row)
    return rows


def _write_trace(rows: list[dict], trace_path: str) -> None:
    from pathlib import Path

    from ..trace import systolic_trace

    Path(trace_path).write_text(json.dumps(systolic_trace(rows)))
    click.echo(f"trace: {trace_path} (open in ui.perfetto.dev)", err=True)


def _echo_table(cfg, rows: list[dict]) -> None:
    dram = ("unlimited DRAM bandwidth" if not cfg.bandwidth_limited else
            f"DRAM reads {cfg.ifmap_read_words_per_cycle}/{cfg.filter_read_words_per_cycle} (ifmap/filter), "
            f"writes {cfg.bandwidth_words_per_cycle} words/cycle")
    click.echo(f"{cfg.rows}x{cfg.cols} mesh, {dram}")
    click.echo(f"  {'layer':<16}{'df':<4}{'cycles':>15}{'stalls':>15}{'stalled by':>11}{'folds':>8}"
               f"{'map eff %':>11}{'util %':>9}")
    for row in rows:
        click.echo(f"  {row['layer']:<16}{row['dataflow']:<4}{row['total_cycles']:>15,}{row['stall_cycles']:>15,}"
                   f"{row['stall_operand'] or '-':>11}{row['folds']:>8,}{row['mapping_efficiency']:>11.1f}"
                   f"{row['overall_utilization']:>9.1f}")
