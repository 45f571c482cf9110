"""``fastsim run design FILE.mlir [--kernels costs.toml] [--device NAME] [--ablate]``: simulate an
mlir-aie design, and with ``--ablate`` rank its kernels by the time each costs it; a run list
(``aiex.configure`` of other devices with ``aiex.run``) runs its configurations in order
(docs/mlir.md)."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import fail, run_options_here


@click.command("design")
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@click.option("--kernels", "kernels_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="TOML with a [kernels] table: kernel name = cycles per call (without it, fastsim guesses "
                   "matmul and vector kernels it recognises and names the rest)")
@click.option("--device", default=None, help="the aie.device @NAME to run, for a file that holds several")
@click.option("--ablate", is_flag=True, help="also rank the kernels: each in turn a 1-cycle pass, by cycles saved")
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE",
              help="a scalar argument of the runtime sequence (%NAME: i32) and the value the host passes; repeat")
@click.option("--reconfigure-cycles", type=int, default=0, show_default=True,
              help="a run list: cycles each switch to another configuration takes (not modelled)")
@run_options_here
@click.pass_context
def design_cmd(ctx, path, kernels_path, device, ablate, args, reconfigure_cycles):
    """Simulate an mlir-aie design: the aie dialect's physical or object-FIFO form with its runtime
    sequence. The device's name picks the arch (npu1*, npu2*; others: --arch).

    Example: fastsim run design aie.mlir --kernels costs.toml --json (--ablate: rank the kernels)"""
    from ..mlir import read_design, simulate_design
    from ..mlir.run import format_design_summary, summary

    opts = ctx.obj
    explicit = _arch_given(ctx)
    try:
        info = read_design(path, kernels_path, arch=opts["arch"] if explicit else None, device=device,
                           args=_runtime_args(args))
        if info.run_list:
            _run_list(info, opts, reconfigure_cycles, ablate)
            return
        ds = simulate_design(info, skip=opts["skip"], trace=bool(opts["trace"]))
    except (ConfigError, SimulationError) as e:
        fail(e)
    s = summary(ds, info)
    if ablate:
        from ..mlir.ablate import ablate as run_ablation

        try:
            base, rows = run_ablation(info, skip=opts["skip"])
        except (ConfigError, SimulationError) as e:
            fail(e)
        s["ablation"] = [{"kernel": a.kernel, "calls": a.calls, "cycles": a.cycles, "saved_cycles": a.saved_cycles}
                         for a in rows]
    if opts["trace"]:
        from ..trace import write_trace

        from ..mlir.aie_trace import aie_trace_path, write_aie_trace

        s["trace_events"] = write_trace(ds, opts["trace"], raw=opts["trace_raw"])
        s["aie_trace"] = str(aie_trace_path(opts["trace"]))  # mlir-aie's trace parser's shape, beside it
        write_aie_trace(ds, info.design.arch, s["aie_trace"])
    if opts["json"]:
        click.echo(json.dumps(s))
        return
    click.echo(format_design_summary(s))
    if ablate:
        from ..mlir.ablate import format_ablation

        click.echo(format_ablation(s["total_cycles"], rows))
    if opts["trace"]:
        click.echo(f"  trace           {opts['trace']} ({s['trace_events']} slices); mlir-aie's shape: {s['aie_trace']}")


def _run_list(info, opts, reconfigure_cycles: int, ablate: bool) -> None:
    """A run list: each configuration simulated in turn, and the sum."""
    from ..mlir import simulate_run_list
    from ..mlir.runlist import format_run_list, run_list_summary

    if ablate or opts["trace"]:
        raise ConfigError([f"{info.design.name} is a run list: --ablate and --trace take one of its devices "
                           f"(--device {', '.join(s.device for s in info.run_list)})"], "command")
    s = run_list_summary(simulate_run_list(info, reconfigure_cycles=reconfigure_cycles, skip=opts["skip"]), info)
    click.echo(json.dumps(s) if opts["json"] else format_run_list(s))


def _runtime_args(pairs) -> dict[str, str]:
    """``--arg NAME=VALUE`` options as {name: value text} (the reader checks the values); a pair
    without ``=`` is refused by name."""
    bad = [p for p in pairs if "=" not in p or not p.split("=", 1)[0].strip()]
    if bad:
        raise ConfigError([f"--arg {p}: give NAME=VALUE (a scalar argument of the runtime sequence and its value)"
                           for p in bad], "command")
    return {p.split("=", 1)[0].strip().lstrip("%"): p.split("=", 1)[1].strip() for p in pairs}


def _arch_given(ctx) -> bool:
    """Whether --arch was given (before or after ``design``); otherwise the device names the arch."""
    parent = ctx.parent
    given = parent is not None and parent.get_parameter_source("arch_name") == click.core.ParameterSource.COMMANDLINE
    return given or ctx.get_parameter_source("arch_here") == click.core.ParameterSource.COMMANDLINE
