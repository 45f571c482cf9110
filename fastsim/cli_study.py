"""``fastsim study NAME``: the optimization method's studies from the command line."""
from __future__ import annotations

import json
import sys

import click

from .errors import ConfigError, SimulationError


def fail(e: Exception) -> None:
    """End a command on bad input or a failed simulation: the message and exit status 2, or, under
    ``fastsim --debug``, the exception with its traceback."""
    if click.get_current_context().find_root().params.get("debug"):
        raise e
    click.echo(f"error: {e}", err=True)
    sys.exit(2)


def _model_options(fn):
    """What every LLM study takes: the model, its precision, the arch and the regimes."""
    for option in reversed([
        click.option("--model", default="llama-3.2-1b", show_default=True,
                     help="preset (llama-3.2-1b, llama-3.2-3b, llama-3.1-8b) or a Hugging Face config.json"),
        click.option("--weights", type=click.Choice(["int4", "int8", "bf16"]), default="int4", show_default=True),
        click.option("--kv", type=click.Choice(["bf16", "int8"]), default="bf16", show_default=True),
        click.option("--activations", type=click.Choice(["bf16", "int8"]), default="bf16", show_default=True),
        click.option("--arch", "arch_name", default="npu2", show_default=True,
                     help="preset (npu1, npu2) or a TOML file with an [arch] table"),
        click.option("--regime", "regimes", multiple=True,
                     help="decode:CONTEXT, prefill:PROMPT, optionally :BATCH (repeatable; default "
                          "decode:4096 and prefill:1024)"),
        click.option("--json", "as_json", is_flag=True, help="print the Dataset as JSON (xarray to_dict)"),
        click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
                     help="write <study>.md and <study>.png into this directory"),
    ]):
        fn = option(fn)
    return fn


def _base(model, weights, kv, activations):
    from .llm import LlmStudy, Precision

    return LlmStudy(model=model, precision=Precision(weights=weights, kv=kv, activations=activations))


def _run_study(compute, as_json: bool, report_dir: str | None) -> None:
    """Run one study (``compute()`` returns its Dataset), then write its report and print it or
    its JSON; bad input ends with a one-line error and exit status 2."""
    from .studies.report import WRITERS, write_report

    try:
        ds = compute()
    except (ConfigError, SimulationError, ValueError) as e:
        fail(e)
    if report_dir:
        click.echo(f"report: {write_report(ds, report_dir)}", err=as_json)
    if as_json:
        click.echo(json.dumps(ds.to_dict(data="list"), default=str))
    else:
        click.echo(WRITERS[ds.attrs["study"]][0](ds))


@click.group("study")
def study_group():
    """Studies of the optimization method (../shared/METHOD.md): each answers one question with
    evidence, as a Dataset (--json) and a Markdown report with figures (--report DIR)."""


@study_group.command("ablate")
@_model_options
def ablate_cmd(model, weights, kv, activations, arch_name, regimes, as_json, report_dir):
    """Which op class is worth optimizing? Each class in turn computes nothing while its data still
    moves; classes are ranked per regime by the end-to-end time that saves (whole-run differences,
    layout pinned). One more pass removes all compute: the pure data-movement time.

    Example: fastsim study ablate --regime decode:4096 --regime prefill:1024 --report out/
    """
    from .cli import _load_arch
    from .studies import ablate

    _run_study(lambda: ablate(_base(model, weights, kv, activations), regimes, _load_arch(arch_name)),
               as_json, report_dir)


@study_group.command("cuts")
@_model_options
@click.option("--max-dispatches", type=click.IntRange(min=1), default=None,
              help="most dispatches considered (default: one per layer)")
def cuts_cmd(model, weights, kv, activations, arch_name, regimes, as_json, report_dir, max_dispatches):
    """Where should the model be cut into dispatches? Dynamic programming over layer boundaries
    finds the fastest feasible cut set for every dispatch count (energy breaks ties), gives the
    Pareto front of dispatch count vs time, and prices each boundary of the best set: activations
    written out and read back, host round trip, weight and program reloads, against what it relieves.

    Example: fastsim study cuts --model llama-3.2-3b --regime prefill:1024 --report out/
    """
    from .cli import _load_arch
    from .studies import cuts

    _run_study(lambda: cuts(_base(model, weights, kv, activations), regimes, _load_arch(arch_name),
                            max_dispatches=max_dispatches), as_json, report_dir)


@study_group.command("overlays")
@_model_options
@click.option("--mix", "mix", multiple=True,
              help="a request kind PROMPT:NEW_TOKENS[:BATCH[:WEIGHT]] (repeatable; default 1024:128); its "
                   "regimes are prefill:PROMPT and decode at the mean context")
def overlays_cmd(model, weights, kv, activations, arch_name, regimes, as_json, report_dir, mix):
    """One placement per regime, or one for all? Finds each regime's best overlay (fusion, columns,
    dataflow, static or streamed weights), runs every overlay in every regime, and compares
    per-regime overlays (switch costs included) with the best single overlay on a request mix.
    Lists the op classes bound by different resources in different regimes. (--regime is not used:
    the mix sets the regimes.)

    Example: fastsim study overlays --mix 1024:128 --mix 4096:512:1:0.25 --report out/
    """
    from .cli import _load_arch
    from .studies import overlays

    _run_study(lambda: overlays(_base(model, weights, kv, activations), list(mix) or None, _load_arch(arch_name)),
               as_json, report_dir)


@study_group.command("dataflow")
@_model_options
def dataflow_cmd(model, weights, kv, activations, arch_name, regimes, as_json, report_dir):
    """Weight-, input- or output-stationary per op, or one style for all? Runs all-WS, all-IS,
    all-OS and a hybrid per-op choice (searched on measured whole runs) and judges them on latency
    and joules per inference (Pareto front, chosen point stated). Writes a playbook: per op the
    style, reuse factors, DDR traffic by tensor kind, buffer pressure, gain over the best single
    style, rejected styles with their numbers, and rules for how the choice moves with M.

    Example: fastsim study dataflow --regime decode:4096 --regime prefill:256 --regime prefill:2048 --report out/
    """
    from .cli import _load_arch
    from .studies import dataflow

    _run_study(lambda: dataflow(_base(model, weights, kv, activations), regimes, _load_arch(arch_name)),
               as_json, report_dir)


@study_group.command("bandwidth")
@click.option("--arch", "arch_name", default="npu2", show_default=True,
              help="preset (npu1, npu2) or a TOML file with an [arch] table (asymmetric columns, DDR cap)")
@click.option("--sizes", default="256,1024,4096,16384,65536", show_default=True,
              help="transfer sizes in bytes, comma-separated")
@click.option("--total-bytes", default=1 << 18, show_default=True, type=click.IntRange(min=4),
              help="bytes each channel moves per measurement")
@click.option("--json", "as_json", is_flag=True, help="print the Dataset as JSON (xarray to_dict)")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="write bandwidth.md and bandwidth.png into this directory")
def bandwidth_cmd(arch_name, sizes, total_bytes, as_json, report_dir):
    """What does each column and channel really deliver? Memcpy designs measure effective bandwidth
    per column and for all columns at once, reading, writing or both, over transfer sizes; then one
    tensor split equally over the columns is compared with a split in proportion to the measured
    bandwidths.

    Example: fastsim study bandwidth --arch my_asymmetric.toml --report out/
    """
    from .cli import _load_arch
    from .studies import bandwidth

    try:
        parsed = tuple(int(x) for x in sizes.split(","))
        if min(parsed) < 4:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"{sizes!r}: expected sizes >= 4 bytes like 256,4096", param_hint="--sizes")
    _run_study(lambda: bandwidth(_load_arch(arch_name), parsed, total_bytes), as_json, report_dir)


@study_group.command("compression")
@click.argument("weights", type=click.Path(dir_okay=False))
@click.option("--kv", "kv_path", type=click.Path(dir_okay=False), default=None,
              help="a .safetensors/.npz/.npy file of dumped K/V tensors")
@click.option("--group-size", default=128, show_default=True, type=click.IntRange(min=1),
              help="values per int8/int4 scale")
@click.option("--prune", default=None, help="N:M structured sparsity after magnitude pruning, e.g. 2:4")
@click.option("--include", default=r"^(?!.*embed).*", show_default=True,
              help="regular expression the weight tensors' names must match")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="write the ratios a run applies (fastsim run llm --compression FILE)")
@click.option("--json", "as_json", is_flag=True, help="print the Dataset as JSON (xarray to_dict)")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="write compression.md and compression.png into this directory")
def compression_cmd(weights, kv_path, group_size, prune, include, out_path, as_json, report_dir):
    """How much do weights and K/V really compress? Reads real tensors (.safetensors, .npz, .npy)
    and measures, per tensor and in total, the DMA's zero-value compression, N:M pruning and
    int8/int4 group quantization against their nominal ratios.

    Example: fastsim study compression model.safetensors --prune 2:4 --out measured.json
    """
    from .studies.compression import compression, run_ratios

    try:
        nm = None if prune is None else tuple(int(x) for x in prune.split(":"))
        if nm is not None and len(nm) != 2:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"{prune!r}: expected N:M like 2:4", param_hint="--prune")

    def compute():
        ds = compression(weights, kv_path, group_size, nm, include)
        if out_path:
            from pathlib import Path

            Path(out_path).write_text(json.dumps(run_ratios(ds), indent=1))
            click.echo(f"ratios for runs: {out_path}", err=True)
        return ds

    _run_study(compute, as_json, report_dir)


@click.command("optimize")
@_model_options
@click.option("--mix", "mix", multiple=True, help="request kinds for the overlays step, PROMPT:NEW_TOKENS[:BATCH"
              "[:WEIGHT]] (repeatable; default 1024:128)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="optimize", show_default=True,
              help="directory for report.md, plan.json, the studies' reports, figures and zarr Datasets")
def optimize_cmd(model, weights, kv, activations, arch_name, regimes, as_json, report_dir, mix, out_dir):
    """The whole checklist in order: ablate -> cuts -> overlays -> dataflow, then the combined plan
    simulated as a whole. Writes OUT/report.md (each decision with its evidence), OUT/plan.json
    (replay it: fastsim run llm --plan OUT/plan.json), the studies' reports and figures, and their
    Datasets as zarr. (--report is ignored: everything goes to --out.)

    Example: fastsim optimize --model llama-3.2-1b --regime decode:4096 --regime prefill:1024 --out opt/
    """
    from .cli import _load_arch
    from .studies.optimize import optimize

    def say(step, text):
        click.echo(f"[{step}] {text}", err=True)

    try:
        plan = optimize(_base(model, weights, kv, activations), regimes, list(mix) or None, _load_arch(arch_name),
                        out_dir, progress=say)
    except (ConfigError, SimulationError, ValueError) as e:
        fail(e)
    if as_json:
        click.echo(json.dumps(plan))
        return
    for label, r in plan["regimes"].items():
        b, p = r["baseline"], r["predicted"]
        click.echo(f"{label}: baseline {b['seconds'] * 1e3:,.3f} ms -> plan {p['seconds'] * 1e3:,.3f} ms "
                   f"({r['decisions']['dataflow_point']}, cuts [{r['decisions']['cuts']}], optimize first: "
                   f"{r['decisions']['top_class']})")


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
    measurement's residual and leave-one-out error, and writes an arch TOML.

    Example: fastsim calibrate measured.csv --arch npu2 --out calibrated.toml
    """
    from .calibration import calibrate, read_measurements, report, write_toml
    from .cli import _load_arch

    try:
        arch = _load_arch(arch_name)
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
                             for m, p, r, e in zip(cal.measurements, cal.predicted, cal.residuals, cal.loo_errors)]}))
    else:
        click.echo(report(cal))
        click.echo(f"\narch TOML: {path}")
