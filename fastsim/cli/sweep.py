"""``fastsim sweep``: run or resume a sweep spec into a zarr store."""
from __future__ import annotations

import sys

import click

from ..errors import ConfigError
from .common import fail


@click.command("sweep")
@click.argument("spec_path", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="zarr store (created or resumed)")
@click.option("--workers", type=int, default=None,
              help="worker processes of a local dask cluster (default: one per core; 0: run in this process)")
@click.option("--scheduler", default=None,
              help="address (tcp://host:8786) or scheduler file of a running dask scheduler (dask-jobqueue, "
                   "a Kubernetes deployment); a new store's chunks are sized so that every worker gets one")
@click.option("--no-progress", is_flag=True, help="no progress line (points done, ETA, points/s, failed points)")
def sweep_cmd(spec_path, out, workers, scheduler, no_progress):
    """Run or resume a sweep spec (TOML) into a zarr store; open it with xarray.open_zarr(OUT).
    Ctrl-C stops it, keeping the points stored; the same command resumes (exit status 130). A
    running scheduler that goes away stops it the same way (exit status 75: run it again).

    Example: fastsim sweep sweeps/gemm_quick.toml --out quick.zarr --workers 2"""
    from ..sweeping import sweep
    from ..sweeping.engine import SchedulerLost, SweepInterrupted

    report = []
    try:
        sweep(spec_path, out, workers=workers, scheduler=scheduler, progress=not no_progress, report=report)
    except ConfigError as e:
        fail(e)
    except SweepInterrupted as e:
        click.echo(str(e), err=True)
        sys.exit(130)
    except SchedulerLost as e:
        click.echo(str(e), err=True)
        sys.exit(75)  # EX_TEMPFAIL (sysexits.h): try again
    click.echo(str(report[0]))
