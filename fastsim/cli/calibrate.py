"""``fastsim calibrate``: fit an arch's parameters to measured runs."""
from __future__ import annotations

import json

import click

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
@click.option("--json", "as_json", is_flag=True, help="print the fit as JSON")
def calibrate_cmd(measurements, arch_name, out_path, fit, no_loo, as_json):
    """Fit kernel efficiency per datapath, dispatch overhead, design-switch times, sustained DDR
    bandwidth, BD setup and lock costs to your own measurements (CSV: name,workload,seconds; see
    docs/calibration.md) by bounded least squares; prints each value with a 95 % interval and each
    measurement's residual and leave-one-out error, and writes an arch TOML. Warns, by name, of
    parameters at a bound, intervals wider than their value and measurements faster than the part's
    peak (in the output and in the TOML's comments).

    Example: fastsim calibrate measured.csv --arch npu2 --out calibrated.toml
    """
    from ..calibration import calibrate, read_measurements, report, write_toml

    try:
        arch = load_arch(arch_name)
        cal = calibrate(read_measurements(measurements), arch, list(fit) or None, leave_one_out=not no_loo)
    except (ConfigError, SimulationError) as e:
        fail(e)
    path = write_toml(cal, out_path)
    if as_json:
        click.echo(json.dumps({"arch": str(path), "parameters": {
            n: {"start": float(s), "fitted": float(v), "low95": float(lo), "high95": float(hi)}
            for n, s, v, lo, hi in zip(cal.names, cal.start, cal.values, cal.low95, cal.high95)},
            "measurements": [{"name": m.name, "measured_s": m.seconds, "predicted_s": float(p),
                              "residual": float(r), "loo_error": float(e)}
                             for m, p, r, e in zip(cal.measurements, cal.predicted, cal.residuals, cal.loo_errors)],
            "warnings": cal.warnings}))
    else:
        click.echo(report(cal))
        click.echo(f"\narch TOML: {path}")
