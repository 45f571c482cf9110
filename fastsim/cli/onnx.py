"""``fastsim run onnx MODEL.onnx``: one inference of an ONNX model (``fastsim.onnx``,
``docs/onnx.md``): whole-network latency, the top layers, bytes per level, binding resource and
energy."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from ..report import units_of
from .common import SEARCH_BUDGET, fail, run_options_here


def _pairs(values: tuple[str, ...], what: str, convert) -> dict:
    out, bad = {}, []
    for v in values:
        key, sep, text = v.partition("=")
        try:
            out[key.strip()] = convert(text)
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            bad.append(f"{what} = {v!r}: NAME=VALUE, e.g. {what} batch=1")
    if bad:
        raise ConfigError(bad, "onnx options")
    return out


def _host_seconds(values: tuple[str, ...]):
    """``--host-seconds TYPE=SECONDS`` (repeatable) or one TOML file."""
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    return _pairs(values, "--host-seconds", float)


@click.command("onnx")
@click.argument("model", type=click.Path(dir_okay=False))
@run_options_here
@click.option("--dim", "dims", multiple=True, metavar="NAME=N",
              help="size of a symbolic input dimension (repeatable), e.g. --dim batch=1 --dim seq=128")
@click.option("--cpu-fallback", "cpu_fallback", default="", metavar="OPS",
              help="op types run on the host CPU, comma-separated, e.g. NonMaxSuppression,TopK (each needs "
                   "--host-seconds)")
@click.option("--host-seconds", "host_seconds", multiple=True, metavar="TYPE=SECONDS|FILE.toml",
              help="seconds one op of a --cpu-fallback type takes on the host (repeatable; measured, never "
                   "guessed), or a TOML file of TYPE = SECONDS")
@click.option("--fold-epilogues", is_flag=True,
              help="run a Relu/Clip/LeakyRelu that alone reads a conv's, matmul's or vector op's output inside "
                   "that op, as fused deployments do (default: each is its own op through DDR)")
@click.option("--fusion", default="auto", show_default=True, help="as fastsim run llm --fusion")
@click.option("--search-budget", default="3", show_default=True, type=SEARCH_BUDGET,
              help="candidates each matmul's and conv's mapping search simulates; 'exact': until proven best")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1), help="layers listed by time")
@click.pass_context
def onnx_cmd(ctx, model, dims, cpu_fallback, host_seconds, fold_epilogues, fusion, search_budget, top):
    """One inference of an ONNX model (Conv, MatMul/Gemm, element-wise, pools, norms, QDQ int8);
    --trace writes its timeline (dispatches, ops, fused groups) as Perfetto JSON, as run llm's.

    Example: fastsim run --arch npu1 onnx resnet50.onnx --top 3"""
    from ..onnx import onnx_summary, simulate_onnx

    opts = ctx.obj
    try:
        fallback = tuple(t.strip() for t in cpu_fallback.split(",") if t.strip())
        ds = simulate_onnx(model, opts["arch"], dims=_pairs(dims, "--dim", int), cpu_fallback=fallback,
                           host_seconds=_host_seconds(host_seconds), fold_epilogues=fold_epilogues, fusion=fusion,
                           search_budget=search_budget)
    except (ConfigError, SimulationError) as e:
        fail(e)
    s = onnx_summary(ds, top)
    if opts["trace"]:
        from ..trace import write_trace

        try:
            s["trace_events"] = write_trace(ds, opts["trace"])
        except OSError as e:
            fail(ConfigError([f"--trace = {opts['trace']!r}: cannot be written ({e.strerror or e})"], "onnx options"))
        click.echo(f"trace: {opts['trace']} ({s['trace_events']} slices; open in ui.perfetto.dev)", err=True)
    if opts["json"]:
        click.echo(json.dumps({**s, "units": units_of(s)}))
        return
    _echo(s, ds)


def _echo(s: dict, ds) -> None:
    click.echo(f"{s['model']}: batch {s['batch']}, {s['compute_dtype']}, {s['ops']} ops on {s['arch']}")
    click.echo(f"  latency         {s['seconds'] * 1e3:,.3f} ms  ({s['inferences_per_s']:,.1f} inferences/s, "
               f"{s['macs'] / 1e9:,.3f} G MACs, {s['tops']:,.2f} TOPS)")
    click.echo(f"  bound by        {s['bound_by']}  (" + ", ".join(
        f"{k} {v * 1e3:,.3f} ms" for k, v in sorted(s["time_by_bound"].items(), key=lambda kv: -kv[1])) + ")")
    click.echo(f"  energy          {s['energy_j'] * 1e3:,.3f} mJ (energy table: assumptions)")
    click.echo(f"  dispatch        {s['dispatches']} x, {s['dispatch_seconds'] * 1e3:,.3f} ms; fusion {s['fusion']}")
    click.echo(f"  control         {s['control_seconds'] * 1e3:,.3f} ms ({s['control_instructions']:,} runtime-sequence "
               "instructions setting layers up inside the dispatch)")
    if s["host"]["ops"]:
        ops = ", ".join(f"{t} x{n}" for t, n in s["host"]["ops"].items())
        click.echo(f"  host            {s['host']['seconds'] * 1e3:,.3f} ms ({ops}; given, not simulated)")
    for label, table in (("bytes", s["bytes_by_level"]), ("DDR by kind", s["ddr_bytes_by_kind"])):
        click.echo(f"  {label:<16}" + ", ".join(f"{k} {b / 1e6:,.2f} MB" for k, b in table.items() if b))
    click.echo("  type            ms        share")
    for t, sec in sorted(s["by_type"].items(), key=lambda kv: -kv[1]):
        click.echo(f"    {t:<18}{sec * 1e3:9.3f}  {100 * sec / s['seconds']:5.1f} %")
    click.echo(f"  top {len(s['top_layers'])} layers     ms        share  bound by")
    for layer in s["top_layers"]:
        click.echo(f"    {layer['op'][:28]:<28} {layer['type']:<18}{layer['seconds'] * 1e3:9.3f}  "
                   f"{100 * layer['share']:5.1f} %  {layer['bound_by']}")
