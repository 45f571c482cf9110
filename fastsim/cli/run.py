"""``fastsim run [--arch A] [--json] [--trace F] [gemm ...]``: the ``run`` group and ``run gemm``
(``run llm`` is in ``cli/llm.py``)."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import SOFT_LIMITS, fail, gemm_from, gemm_options, load_arch, run_options_here, too_big


@click.group("run", invoke_without_command=True)
@click.option("--arch", "arch_name", default="npu2", show_default=True,
              help="a preset (npu1, npu2) or part (phoenix, hawk_point, strix, strix_halo, krackan), NAME[:mode][:cols=N] "
              "(e.g. strix:turbo, strix:cols=4), or a TOML file with an [arch] table")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of a table")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False),
              help="write a Perfetto/Chrome trace JSON of every BD transfer and kernel call")
@click.option("--trace-raw", is_flag=True, help="with --trace: every event, no summary slices for periodic runs")
@click.option("--no-skip", is_flag=True, help="step every cycle (same result, slower)")
@click.option("--yes", is_flag=True, help="run sizes that take minutes or more to simulate without asking")
@click.pass_context
def run_group(ctx, arch_name, as_json, trace_path, trace_raw, no_skip, yes):
    """Simulate a workload (default: a 2048^3 bf16 GEMM on npu2). Options given here may also come
    after the workload.

    Example: fastsim run --arch npu1 --json gemm --m 1000 --k 97 --n 31 --dtype int8"""
    ctx.obj = {"arch": load_arch(arch_name), "json": as_json, "trace": trace_path, "skip": not no_skip, "yes": yes,
               "trace_raw": trace_raw}
    if ctx.invoked_subcommand is None:
        ctx.invoke(gemm)


@run_group.command("gemm")
@gemm_options
@run_options_here
@click.pass_context
def gemm(ctx, m, k, n, dtype, tile, l2, split, k_panel, cols, gemm_dataflow, efficiency, stream_split, overlay_path, budget, out_dtype):
    """C = A @ B, any size, on the searched mapping (``fastsim map gemm`` lists the candidates).

    Example: fastsim run gemm --m 256 --k 4096 --n 1000 --dtype int8 --tile 64,64,64"""
    from ..workloads.gemm import check_dtype, run_gemm

    opts = ctx.obj
    arch = opts["arch"]
    try:
        check_dtype(dtype, arch)
        g = gemm_from(m, k, n, dtype, tile, l2, split, k_panel, cols, gemm_dataflow, efficiency, stream_split, overlay_path, budget,
                      out_dtype)
        g.graph()  # validated before the size guard reads it
        _guard_size(g, arch, opts)
        summary, ds = run_gemm(g, arch, skip=opts["skip"], trace=bool(opts["trace"]), as_built=overlay_path)
    except (ConfigError, SimulationError) as e:
        fail(e)
    if opts["trace"]:
        from ..trace import write_trace

        summary["trace_events"] = write_trace(ds, opts["trace"], raw=opts["trace_raw"])
    _echo(summary, g, arch, opts)


def _guard_size(g, arch, opts: dict) -> None:
    if g.macs > SOFT_LIMITS["gemm_macs"]:
        floor = g.macs / (arch.compute_tiles * max(arch.macs_per_cycle.values()))
        too_big(opts, [f"{g.macs:,} MACs (more than 4096^3): at least {floor:,.0f} cycles on {arch.name}, and "
                       "the search simulates candidates until its answer is proven the best of the space "
                       "(--search-budget N stops sooner); expect minutes"])


def _echo(summary: dict, g, arch, opts: dict) -> None:
    if opts["json"]:
        click.echo(json.dumps(summary))
        return
    from ..report import format_summary

    click.echo(format_summary(f"GEMM {g.m}x{g.k}x{g.n} {g.dtype} on {arch.name}", summary))
    click.echo(f"  mapping         {summary['mapping']['label']} "
               f"(padding {100 * summary['mapping']['padding_waste']:.1f} %)")
    click.echo(f"  search          {summary['search']['statement']}")
    if "launches" in summary:
        click.echo("  launches        " + " + ".join(f"{x['name']} {x['cycles']:,}" for x in summary["launches"])
                   + " cycles, one dispatch")
    if "as_built" in summary:
        a = summary["as_built"]
        click.echo(f"  as built        {a['file']}: pinned {', '.join(a['pinned'])}; searched "
                   f"{', '.join(a['searched']) or 'nothing'}" + (f"; default {', '.join(a['default'])}"
                                                                 if a.get("default") else ""))
    if opts["trace"]:
        click.echo(f"  trace           {opts['trace']} ({summary['trace_events']} slices)")
