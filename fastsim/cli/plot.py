"""``fastsim plot``: a figure of a sweep, a run's JSON or a run's trace."""
from __future__ import annotations

import click

from .common import load_arch


@click.command("plot")
@click.argument("result", type=click.Path(exists=True))
@click.option("--kind", type=click.Choice(["sweep", "kv", "classes", "stalls", "roofline", "mismatch", "occupancy"]),
              default=None,
              help="figure kind (default: chosen from the result)")
@click.option("--var", default=None, help="sweep: the output to plot (default: the first)")
@click.option("--x", "x_axis", default=None, help="sweep: the axis along x (default: the first)")
@click.option("--y", "y_axis", default=None, help="sweep: a second axis (one line per value, or --heatmap)")
@click.option("--heatmap", is_flag=True, help="sweep: a heatmap over --x and --y")
@click.option("--arch", "arch_name", default=None, help="roofline: the arch (default: the run's)")
@click.option("--batch", "batches", multiple=True, type=int,
              help="kv on a store with a batch axis: the batch to draw a panel for (repeatable; default: each)")
@click.option("--out", "out_path", default="figure.png", show_default=True, type=click.Path(dir_okay=False),
              help="PNG or SVG, by suffix")
def plot_cmd(result, kind, var, x_axis, y_axis, heatmap, arch_name, batches, out_path):
    """A figure of a sweep's zarr store, a run's JSON or a run's trace: KV vs weight traffic, time by
    class and layer, stalls, roofline, any output over one or two sweep axes, systolic tile
    mismatch, occupancy of every core and DMA channel over time (a --trace file).

    Example: fastsim run --json llm > run.json && fastsim plot run.json --out classes.svg
    """
    from ..plot import load_result, plot

    fig = plot(load_result(result), kind, var, x_axis, y_axis, load_arch(arch_name) if arch_name else None, heatmap,
               batch=list(batches) or None)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    click.echo(f"figure: {out_path}")
