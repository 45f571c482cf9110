"""``fastsim run conv``: one convolution, or every layer of a SCALE-Sim topology CSV, on its
searched mapping (``docs/conv.md``)."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import SEARCH_BUDGET, fail, run_options_here, with_options

_SIZE = click.IntRange(min=1)


def _conv_options(fn):
    return with_options([
        click.option("--n", default=1, show_default=True, type=_SIZE, help="batch"),
        click.option("--c", default=64, show_default=True, type=_SIZE, help="input channels"),
        click.option("--h", default=56, show_default=True, type=_SIZE, help="input height"),
        click.option("--w", default=56, show_default=True, type=_SIZE, help="input width"),
        click.option("--k", default=64, show_default=True, type=_SIZE, help="output channels"),
        click.option("--r", default=3, show_default=True, type=_SIZE, help="filter height"),
        click.option("--s", default=3, show_default=True, type=_SIZE, help="filter width"),
        click.option("--stride", default=1, show_default=True, type=_SIZE),
        click.option("--padding", default=0, show_default=True, type=click.IntRange(min=0)),
        click.option("--dilation", default=1, show_default=True, type=_SIZE),
        click.option("--groups", default=1, show_default=True, type=_SIZE, help="c for depthwise"),
        click.option("--dtype", default="int8", show_default=True),
        click.option("--out-dtype", default=None, help="output dtype (default: --dtype, requantized in the kernel)"),
        click.option("--efficiency", default=None, type=click.FloatRange(0, 1, min_open=True),
                     help="conv kernel efficiency (default: the arch's matmul kernel figure; an assumption)"),
        click.option("--topology", type=click.Path(dir_okay=False), default=None,
                     help="a SCALE-Sim topology CSV: run every layer (its sizes replace the shape options)"),
        click.option("--split", type=click.Choice(["rows", "oc", "rows_by_col", "oc_by_col"]), default=None,
                     help="pin how output rows and channels are split over cores and columns"),
        click.option("--cols", default=None, type=_SIZE, help="pin the columns used"),
        click.option("--rows", default=None, type=_SIZE, help="pin the compute rows used per column"),
        click.option("--rpc", default=None, type=_SIZE, help="pin the output rows per kernel call"),
        click.option("--kb", default=None, type=_SIZE, help="pin the output channels per kernel call"),
        click.option("--weights", type=click.Choice(["resident", "oc", "ci"]), default=None,
                     help="pin how weights reach the cores"),
        click.option("--cb", default=None, type=_SIZE, help="pin the input channels per call (--weights ci)"),
        click.option("--search-budget", "budget", default="exact", show_default=True, type=SEARCH_BUDGET,
                     help="candidates the conv search simulates before it stops; exact: until proven the best"),
    ])(fn)


@click.command("conv")
@_conv_options
@run_options_here
@click.pass_context
def conv_cmd(ctx, n, c, h, w, k, r, s, stride, padding, dilation, groups, dtype, out_dtype, efficiency, topology,
             split, cols, rows, rpc, kb, weights, cb, budget):
    """A 2-D convolution on the searched conv mapping (pointwise: the GEMM mapper's).

    Example: fastsim run --arch npu1 conv --c 64 --h 56 --w 56 --k 64 --r 3 --s 3 --padding 1"""
    from ..mapping.conv import Conv2d
    from ..mapping.pins import Pins
    from ..workloads.conv import layers_from_topology, run_conv

    opts = ctx.obj
    arch = opts["arch"]
    pins = Pins(split=split, cols=cols, rows=rows, rpc=rpc, kb=kb, weights=weights, cb=cb)
    try:
        ops = (layers_from_topology(topology, dtype) if topology else
               [Conv2d(n, c, h, w, k, r, s, stride, padding, dilation, groups, dtype, out_dtype, efficiency)])
        results = [run_conv(op, arch, pins, budget, skip=opts["skip"], trace=bool(opts["trace"]) and not topology)
                   for op in ops]
    except (ConfigError, SimulationError) as e:
        fail(e)
    if opts["trace"] and not topology:
        from ..trace import write_trace

        results[0][0]["trace_events"] = write_trace(results[0][1], opts["trace"], raw=opts["trace_raw"])
    summaries = [x for x, _ in results]
    if opts["json"]:
        click.echo(json.dumps(summaries[0] if not topology else {"layers": summaries}))
        return
    for op, summary in zip(ops, summaries):
        _echo(op, summary, arch)
    if topology:
        total = sum(x["seconds"] for x in summaries)
        click.echo(f"{len(ops)} layers: {sum(x['total_cycles'] for x in summaries):,} cycles, "
                   f"{total * 1e3:.3f} ms with one dispatch each")


def _echo(op, summary: dict, arch) -> None:
    from ..report import format_summary

    name = "" if op.name == "conv" else f" {op.name}"  # a topology layer's name; none for one conv
    title = (f"conv{name} {op.n}x{op.c}x{op.h}x{op.w} -> {op.k} r{op.r}s{op.s} stride {op.stride} "
             f"pad {op.padding} groups {op.groups} {op.dtype} ({summary['workload']['conv_kind']}) on {arch.name}")
    click.echo(format_summary(title, summary))
    mp = summary["mapping"]
    extra = f", halo {mp['halo_factor']:.2f}x input" if "halo_factor" in mp else ""
    click.echo(f"  mapping         {mp['label']} (padding {100 * mp['padding_waste']:.1f} %{extra})")
    click.echo(f"  search          {summary['search']['statement']}")
