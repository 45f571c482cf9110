"""``fastsim run transpose``: one 2-D transpose on its searched mapping (``docs/onnx.md``,
Transpose)."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import SEARCH_BUDGET, fail, run_options_here, with_options

_SIZE = click.IntRange(min=1)


def _options(fn):
    return with_options([
        click.option("--m", default=2048, show_default=True, type=_SIZE, help="rows of the input"),
        click.option("--n", default=2048, show_default=True, type=_SIZE, help="columns of the input"),
        click.option("--unit", default=1, show_default=True, type=_SIZE,
                     help="contiguous elements moved as one (1: an element transpose)"),
        click.option("--batch", default=1, show_default=True, type=_SIZE, help="instances, one after another"),
        click.option("--dtype", default="bf16", show_default=True,
                     type=click.Choice(["int8", "bf16", "int16", "int32", "f32"])),
        click.option("--cols", default=None, type=_SIZE, help="pin the columns used"),
        click.option("--rows", default=None, type=_SIZE, help="pin the compute rows used per column"),
        click.option("--tile", default=None, help="pin the tile: TM,TN (dividing m and n)"),
        click.option("--search-budget", "budget", default="exact", show_default=True, type=SEARCH_BUDGET,
                     help="candidates the search simulates before it stops; exact: until proven the best"),
    ])(fn)


@click.command("transpose")
@_options
@run_options_here
@click.pass_context
def transpose_cmd(ctx, m, n, unit, batch, dtype, cols, rows, tile, budget):
    """A 2-D transpose (row-major m x n to n x m) on its searched mapping.

    Example: fastsim run transpose --m 2048 --n 2048 --dtype bf16"""
    from ..dtypes import DTYPE_BYTES
    from ..mapping.pins import Pins
    from ..mapping.transpose import Transpose
    from ..workloads.transpose import run_transpose

    opts = ctx.obj
    arch = opts["arch"]
    try:
        sizes = tuple(int(x) for x in tile.split(",")) if tile else None
        if sizes is not None and len(sizes) != 2:
            raise ValueError
    except ValueError:
        fail(ConfigError([f"tile = {tile!r}: two sizes TM,TN"], "transpose"))
    try:
        op = Transpose(m, n, unit, DTYPE_BYTES[dtype])
        summary, ds = run_transpose(op, arch, batch, Pins(cols=cols, rows=rows, tile=(*sizes, 1) if sizes else None),
                                    budget, skip=opts["skip"], trace=bool(opts["trace"]))
    except (ConfigError, SimulationError) as e:
        fail(e)
    if opts["trace"]:
        from ..trace import write_trace

        summary["trace_events"] = write_trace(ds, opts["trace"], raw=opts["trace_raw"])
    if opts["json"]:
        click.echo(json.dumps(summary))
        return
    unit_text = f" of {unit}-element runs" if unit > 1 else ""
    click.echo(f"transpose {m}x{n}{unit_text} {dtype}" + (f" x{batch}" if batch > 1 else "") + f" on {arch.name}")
    click.echo(f"  cycles          {summary['total_cycles']:,}")
    click.echo(f"  time            {summary['seconds'] * 1e6:,.1f} us  (kernel "
               f"{summary['kernel_seconds'] * 1e6:,.1f} us + dispatch {summary['dispatch_overhead_s'] * 1e6:,.1f} us)")
    click.echo(f"  bandwidth       {summary['bytes_per_s'] / 1e9:.2f} GB/s (bytes read and written)")
    for k, v in sorted(summary["utilization"].items(), key=lambda kv: -kv[1])[:4]:
        click.echo(f"    {k:<16}{100 * v:5.1f} %")
    click.echo(f"  bound by        {summary['bound_by']}")
    mp = summary["mapping"]
    click.echo(f"  mapping         {mp['label']} ({mp['runs_per_tile']} DDR runs per tile, {mp['call_cycles']:,} "
               f"cycles per call, {mp['padding_tiles']} padding tiles)")
    click.echo(f"  search          {summary['search']['statement']}")
