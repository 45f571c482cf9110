"""A GEMM's cast launch: the second launch of mlir-air's "fused-cast" GEMM, which converts the f32
C scratch the GEMM launch wrote to DDR into bf16 (``GEMM_bf16_in_bf16_out.md:68``, ``run.py:826-890``).

It reads M x N f32 and writes M x N bf16, a memory-bound pass: fastsim streams it through the
cores of the GEMM's columns as a vector op (``fastsim.mapping.vector``; the design's 8 x 1 herd uses
one core per column, which changes no byte) priced by the kernel model's f32 -> bf16 cast
(``kernel_model.vector.cast_cycles``). It runs after the GEMM launch in the same dispatch, so its
cycles add to the GEMM's and the dispatch is paid once.
"""
from __future__ import annotations

import xarray as xr

from ..arch import Arch
from ..design import Design
from ..dtypes import DTYPE_BYTES
from ..errors import ConfigError
from ..kernel_model.vector import cast_cycles, core_of
from ..mapping.vector import VectorOp, core_tile, vector_design
from ..report import utilizations

SCRATCH, TARGET = "f32", "bf16"  # the one conversion a cast launch makes (the kernel model's f32 -> bf16)


def check_cast_launch(dtype: str, out_dtype: str | None, arch: Arch) -> None:
    """A cast launch converts an f32 scratch C into a bf16 GEMM's output, on a part the kernel
    model prices: anything else is refused by name."""
    problems = []
    if dtype != TARGET or out_dtype != SCRATCH:
        problems.append(f"cast_launch = true: casts an f32 C scratch to a bf16 GEMM's output (dtype bf16, "
                        f"out_dtype f32); this GEMM has dtype {dtype}, out_dtype {out_dtype or 'unset'}")
    if core_of(arch) is None:
        problems.append(_no_core(arch, "cast_launch = true"))
    if problems:
        raise ConfigError(problems, "gemm")


def _no_core(arch: Arch, what: str) -> str:
    return f"{what}: {arch.name} has no documented vector core to price the cast on"


def cast_cycles_per_elem(m: int, n: int, arch: Arch, cores: int, what: str = "cast_launch") -> float:
    """Core cycles per element of the f32 -> bf16 cast of an m x n scratch spread over ``cores``,
    priced on the tile each core gets (``mapping.vector.core_tile``): the one price of a cast
    launch, for ``run gemm`` and for an LLM's cast ops alike."""
    core = core_of(arch)
    if core is None:
        raise ConfigError([_no_core(arch, what)], "cast launch")
    rows, elems = core_tile(m, n, 1, cores)
    return cast_cycles(core, rows * elems, SCRATCH, TARGET) / (rows * elems)


def cast_op(m: int, n: int, arch: Arch, cols: int, noop: bool = False) -> VectorOp:
    """The cast of an m x n scratch on ``cols`` columns."""
    per_elem = cast_cycles_per_elem(m, n, arch, cols * arch.compute_rows)
    return VectorOp(m, n, x_bytes=DTYPE_BYTES[SCRATCH], y_bytes=DTYPE_BYTES[TARGET],
                    vector_cycles_per_elem=per_elem, cols=cols, noop=noop, name="cast launch")


def cast_design(m: int, n: int, arch: Arch, cols: int, noop: bool = False) -> Design:
    return vector_design(cast_op(m, n, arch, cols, noop), arch)


def with_cast_launch(summary: dict, gemm_ds: xr.Dataset, cast_ds: xr.Dataset, arch: Arch) -> dict:
    """``summary`` (the GEMM launch's, ``report.summarize``) as the dispatch of both launches: cycles,
    time and bytes added, each resource's utilization weighted by its launch's share of the time,
    and ``launches`` listing each launch's cycles."""
    cast_cycles_ = int(cast_ds["total_cycles"].values[0])
    gemm_cycles = summary["total_cycles"]
    cycles = gemm_cycles + cast_cycles_
    kernel_s = cycles / arch.clock_hz
    seconds = kernel_s + summary["dispatch_overhead_s"]
    levels = {str(k): summary["bytes_by_level"][str(k)] + float(v)
              for k, v in zip(cast_ds["level"].values, cast_ds["level_bytes"].values[0])}
    util = {k: 0.0 for k in summary["utilization"]}
    for ds, launch_cycles in ((gemm_ds, gemm_cycles), (cast_ds, cast_cycles_)):
        for k, v in utilizations(ds, 0, arch, 0.0).items():
            util[k] += v * (launch_cycles / arch.clock_hz) / seconds
    util["dispatch"] = summary["dispatch_overhead_s"] / seconds
    out = dict(summary, total_cycles=cycles, kernel_seconds=kernel_s, seconds=seconds,
               ops_per_s=summary["ops"] / seconds, peak_fraction=summary["ops"] / seconds / summary["peak_ops_per_s"],
               ddr_bytes=levels["ddr_read"] + levels["ddr_write"], bytes_by_level=levels, utilization=util,
               bound_by=max(util, key=util.get))
    out["launches"] = [{"name": "gemm", "cycles": gemm_cycles}, {"name": "cast", "cycles": cast_cycles_}]
    return out
