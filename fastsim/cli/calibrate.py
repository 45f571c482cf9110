"""``fastsim calibrate``: fit an arch's parameters to measured runs."""
from __future__ import annotations

import json

import click

from ..calibration import RESIDUAL_LIMIT, calibrate, read_measurements, report, summary, write_toml
from ..errors import ConfigError, SimulationError
from .common import fail, load_arch


@click.command("calibrate")
@click.argument("measurements", type=click.Path(dir_okay=False, exists=True))
@click.option("--arch", "arch_name", default="npu2", show_default=True,
              help="the starting arch: a preset or a TOML file with an [arch] table")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default="calibrated.toml", show_default=True,
              help="the fitted arch TOML (use it anywhere with --arch)")
@click.option("--fit", "fit", multiple=True,
              help="fit only these parameters (repeatable; default: every one a measurement depends on)")
@click.option("--no-loo", is_flag=True, help="skip the leave-one-out refits")
@click.option("--allow-underdetermined", is_flag=True,
              help="fit even with more parameters than measurements that depend on them (refused otherwise; "
                   "flagged either way)")
@click.option("--residual-limit", type=click.FloatRange(min=0, min_open=True), default=RESIDUAL_LIMIT,
              show_default=True, help="relative residual beyond which a measurement is reported as abandoned")
@click.option("--json", "as_json", is_flag=True, help="print the fit as JSON")
def calibrate_cmd(measurements, arch_name, out_path, fit, no_loo, allow_underdetermined, residual_limit, as_json):
    """Fit kernel efficiency per datapath, dispatch overhead, design-switch times, sustained DDR
    bandwidth, BD setup and lock costs to your own measurements (CSV: name,workload,seconds; see
    docs/calibration.md) by bounded least squares; prints each value with a 95 % interval and each
    measurement's residual and leave-one-out error, and writes an arch TOML. Refuses more parameters
    than measurements unless --allow-underdetermined. Warns, by name, of an ill-posed fit (as many
    parameters as measurements or more), parameters at a bound, outside the part's plausible range
    or with intervals wider than their value, measurements the fit abandons (residual beyond
    --residual-limit) and measurements faster than the part's peak (in the output, in --json's
    diagnostics and in the TOML's comments).

    Example: fastsim calibrate measured.csv --arch npu2 --out calibrated.toml
    """
    try:
        arch = load_arch(arch_name)
        cal = calibrate(read_measurements(measurements), arch, list(fit) or None, leave_one_out=not no_loo,
                        allow_underdetermined=allow_underdetermined, residual_limit=residual_limit)
    except (ConfigError, SimulationError) as e:
        fail(e)
    path = write_toml(cal, out_path)
    if as_json:
        click.echo(json.dumps({"arch": str(path), **summary(cal)}))
    else:
        click.echo(report(cal))
        click.echo(f"\narch TOML: {path}")
