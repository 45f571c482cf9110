"""``fastsim calibrate``: fit an arch's parameters to measured runs."""
from __future__ import annotations

import json
import statistics

import click

from ..calibration import RESIDUAL_LIMIT, calibrate, read_measurements, report, summary, write_toml
from ..errors import ConfigError, SimulationError
from .common import fail, load_arch


@click.command("calibrate")
@click.argument("measurements", type=click.Path(dir_okay=False, exists=True), required=False)
@click.option("--profile", "profile_path", type=click.Path(exists=True), default=None,
              help="fit to a profile's GEMM rows instead (a sweep CSV or harness log, docs/compare.md)")
@click.option("--held-out", "held_out", multiple=True, metavar="ROW",
              help="a row left out of the fit and predicted with its result (repeatable; a CSV row's name, or "
                   "a --profile row's name as fastsim compare prints it, e.g. '512x512x512 bf16')")
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
def calibrate_cmd(measurements, profile_path, held_out, arch_name, out_path, fit, no_loo, allow_underdetermined,
                  residual_limit, as_json):
    """Fit kernel efficiency per datapath, dispatch overhead, design-switch times, sustained DDR
    bandwidth and cost per contiguous run, BD setup and lock costs to your own measurements (CSV:
    name,workload,seconds[,source]; see docs/calibration.md) by bounded least squares; prints each value with a 95 % interval and each
    measurement's residual and leave-one-out error, and writes an arch TOML. Refuses more parameters
    than measurements unless --allow-underdetermined. Warns, by name, of an ill-posed fit (as many
    parameters as measurements or more), parameters at a bound, outside the part's plausible range
    or with intervals wider than their value, measurements the fit abandons (residual beyond
    --residual-limit) and measurements faster than the part's peak (in the output, in --json's
    diagnostics and in the TOML's comments).

    Rows named --held-out are left out of the fit and predicted with it, their errors reported apart;
    where rows name two sources or more, each source's rows are also predicted by a fit on the other
    sources (leave one source out). With --profile, the GEMM rows of a measured sweep
    (docs/compare.md) are the measurements.

    Example: fastsim calibrate measured.csv --arch npu2 --out calibrated.toml
    """
    held = None
    try:
        arch = load_arch(arch_name)
        if (measurements is None) == (profile_path is None):
            raise ConfigError(["give a measurements CSV or --profile PROFILE (one of them)"], "calibrate")
        options = dict(leave_one_out=not no_loo, allow_underdetermined=allow_underdetermined,
                       residual_limit=residual_limit)
        if profile_path:
            from ..profiles import read_profile
            from ..profiles.calibrate import calibrate_profile

            held = calibrate_profile(read_profile(profile_path), arch, list(held_out), fit=list(fit) or None,
                                     **options)
            cal = held.cal
        else:
            rows = read_measurements(measurements)
            if held_out or len({m.source for m in rows if m.source}) > 1:
                from ..calibration_split import calibrate_held_out

                held = calibrate_held_out(rows, arch, list(held_out), fit=list(fit) or None, **options)
                cal = held.cal
            else:
                cal = calibrate(rows, arch, list(fit) or None, **options)
    except (ConfigError, SimulationError) as e:
        fail(e)
    path = write_toml(cal, out_path)
    if as_json:
        click.echo(json.dumps({"arch": str(path), **summary(cal), **(held.summary() if held else {})}))
        return
    click.echo(report(cal))
    if held is not None:
        _print_split(held)
    click.echo(f"\narch TOML: {path}")


def _print_split(held) -> None:
    """The held-out rows' errors under the fit, and each source's rows under a fit without it."""
    if held.held_out:
        click.echo("\nheld out (not fitted; predicted with the fit):")
        for row in held.summary()["held_out"]:
            click.echo(f"  {row['name']:<28} measured {row['measured_s'] * 1e6:12.3f} us  predicted "
                       f"{row['predicted_s'] * 1e6:12.3f} us  error {row['error']:+.1%}")
    if held.by_source:
        click.echo("\nleave one source out (each source's rows predicted by a fit on the other sources):")
        for s in held.by_source:
            if s.refused:
                click.echo(f"  {s.source:<28} no fit without it: {s.refused}")
                continue
            errors = [abs(e) for e in s.errors]
            kept = f" ({', '.join(s.kept)} kept at the start: no other source's row reads it)" if s.kept else ""
            click.echo(f"  {s.source:<28} {len(errors)} rows: median |error| {statistics.median(errors):.1%}, "
                       f"worst {max(errors):.1%}{kept}")
