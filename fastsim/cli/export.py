"""``fastsim export gemm|vector ... --out design.mlir``: a design fastsim's mapper builds, written as
physical-form ``aie`` MLIR that ``fastsim run design`` reads back to the same cycles (docs/mlir.md)."""
from __future__ import annotations

from pathlib import Path

import click

from ..errors import ConfigError, SimulationError
from .common import fail, gemm_from, gemm_options, load_arch

_ARCH = click.option("--arch", "arch_name", default="npu2", show_default=True,
                     help="an arch preset (npu1, npu2) or an arch TOML; the device is named after it")
_OUT = click.option("--out", "out_path", type=click.Path(dir_okay=False), required=True,
                    help="the .mlir file to write")
_KERNELS_OUT = click.option("--kernels-out", "kernels_path", type=click.Path(dir_okay=False), default=None,
                            help="also write each kernel's cycles per call as a [kernels] TOML (editable, "
                                 "for fastsim run design --kernels)")


@click.group("export")
def export_group():
    """Write a design fastsim builds as mlir-aie's physical aie dialect (buffers, locks, flows, BD
    chains, cores, runtime sequence), readable by fastsim run design."""


@export_group.command("gemm")
@gemm_options
@_ARCH
@_OUT
@_KERNELS_OUT
def export_gemm(m, k, n, dtype, tile, l2, split, k_panel, cols, gemm_dataflow, efficiency, stream_split, overlay_path, budget, out_dtype,
                arch_name, out_path, kernels_path):
    """The searched (or pinned) mapping of C = A @ B.

    Example: fastsim export gemm --m 256 --k 256 --n 256 --arch npu1 --out gemm.mlir"""
    from ..workloads.gemm import gemm_design

    arch = load_arch(arch_name)
    try:
        g = gemm_from(m, k, n, dtype, tile, l2, split, k_panel, cols, gemm_dataflow, efficiency, stream_split, overlay_path, budget,
                      out_dtype)
        _write(gemm_design(g, arch), out_path, kernels_path)
    except (ConfigError, SimulationError) as e:
        fail(e)


@export_group.command("vector")
@click.option("--m", "m", default=256, show_default=True, type=click.IntRange(min=1), help="rows")
@click.option("--n", "n", default=1024, show_default=True, type=click.IntRange(min=1), help="elements per row")
@click.option("--cycles-per-elem", default=0.5, show_default=True, type=click.FloatRange(min=0),
              help="core cycles per output element")
@click.option("--inputs", default=1, show_default=True, type=click.IntRange(1, 4), help="input tensors")
@click.option("--cols", default=None, type=click.IntRange(min=1), help="columns used (default: all)")
@_ARCH
@_OUT
@_KERNELS_OUT
def export_vector(m, n, cycles_per_elem, inputs, cols, arch_name, out_path, kernels_path):
    """An element-wise op streamed through the array (fastsim.mapping.vector).

    Example: fastsim export vector --m 256 --n 4096 --arch npu2 --out silu.mlir"""
    from ..mapping.vector import VectorOp, vector_design

    arch = load_arch(arch_name)
    try:
        op = VectorOp(m, n, vector_cycles_per_elem=cycles_per_elem, x_inputs=inputs, cols=cols, name="vector")
        _write(vector_design(op, arch), out_path, kernels_path)
    except (ConfigError, SimulationError) as e:
        fail(e)


def _write(design, out_path: str, kernels_path: str | None) -> None:
    """Write the files and say what they hold, with fastsim's cycles for the design to compare."""
    from ..simulation import simulate
    from ..mlir import write_design, write_kernel_costs

    Path(out_path).write_text(write_design(design))
    if kernels_path:
        Path(kernels_path).write_text(write_kernel_costs(design))
    cycles = int(simulate(design).total_cycles[0])
    click.echo(f"wrote {out_path}: {design.name} on {design.arch.name}, {len(design.cores)} cores, "
               f"{len(design.bds)} BDs, {len(design.host)} host steps; fastsim: {cycles:,} cycles")
    if kernels_path:
        click.echo(f"wrote {kernels_path}: cycles per call of each kernel")
