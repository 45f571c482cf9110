"""``fastsim study NAME``: the optimization method's studies, one question each, answered with a
Dataset (--json) and a Markdown report with figures (--report DIR)."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import MODEL_HELP, base_study, fail, load_arch, model_options, with_options


def _run_study(compute, as_json: bool, report_dir: str | None) -> None:
    """Run one study (``compute()`` returns its Dataset), then write its report and print it or
    its JSON; bad input ends with a one-line error and exit status 2."""
    from ..studies.registry import markdown, write_report

    try:
        ds = compute()
    except (ConfigError, SimulationError, ValueError) as e:
        fail(e)
    if report_dir:
        click.echo(f"report: {write_report(ds, report_dir)}", err=as_json)
    if as_json:
        click.echo(json.dumps(ds.to_dict(data="list"), default=str))
    else:
        click.echo(markdown(ds))


class _Studies(click.Group):
    """The hand-written commands below, and one per study that declares its ``Command``
    (``fastsim.studies.declaration``), derived from the registry when ``fastsim study`` runs
    (reading it imports every study: other commands do not pay for that)."""

    def list_commands(self, ctx) -> list[str]:
        from ..studies.registry import COMMANDS

        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx, name: str):
        if name in self.commands:
            return self.commands[name]
        from ..studies.registry import COMMANDS

        return derived_command(name, COMMANDS[name]) if name in COMMANDS else None


def _click_option(o):
    """A declared ``Option`` as click's."""
    kind = click.IntRange(min=o.minimum) if o.kind == "int" and o.minimum is not None else (
        click.INT if o.kind == "int" else click.STRING)
    return click.option(o.flag, o.name, type=kind, default=o.default, multiple=o.multiple, help=o.help)


def derived_command(name: str, declared) -> click.Command:
    """``fastsim study NAME`` from the study's declared ``Command``: the model's options, its own,
    then ``_run_study`` over ``declared.run``."""
    def command(**given):
        def compute():
            precision = given.pop("weights"), given.pop("kv"), given.pop("activations")
            arch, models = load_arch(given.pop("arch_name")), given.pop("models", None)
            base = ([base_study(m, *precision) for m in dict.fromkeys(models)] if models is not None else
                    base_study(given.pop("model"), *precision))
            leading = (base, given.pop("regimes")) if declared.regimes else (base,)
            return declared.run(*leading, arch, **given)

        as_json, report_dir = given.pop("as_json"), given.pop("report_dir")
        _run_study(compute, as_json, report_dir)

    command = with_options([_click_option(o) for o in declared.options])(command)
    command = model_options(command, several=declared.models == "several", regimes=declared.regimes)
    return click.command(name, help=declared.help)(command)


@click.group("study", cls=_Studies)
def study_group():
    """Studies of the optimization method (docs/studies.md): each answers one question with
    evidence, as a Dataset (--json) and a Markdown report with figures (--report DIR)."""


@study_group.command("ablate")
@model_options
@click.option("--design", "design_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="an mlir-aie design (.mlir, docs/mlir.md): rank its kernels instead of a model's op classes")
@click.option("--kernels", "kernels_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="with --design: the kernels' cycles per call ([kernels] NAME = CYCLES)")
@click.option("--overlay", "overlay_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="an overlay or as-built TOML (docs/as_built.md): ablate the baseline as built, its [model] "
                   "precision and each regime's layout (every --regime must be one the file describes)")
@click.pass_context
def ablate_cmd(ctx, model, weights, kv, activations, arch_name, regimes, as_json, report_dir, design_path,
               kernels_path, overlay_path):
    """Which op class is worth optimizing? Each class in turn computes nothing while its data still
    moves; classes are ranked per regime by the end-to-end time that saves (whole-run differences,
    layout pinned). One more pass removes all compute: the pure data-movement time. With
    --overlay, the baseline is your design as built; with --design, the same question for the
    kernels of your own mlir-aie design.

    Example: fastsim study ablate --regime decode:4096 --regime prefill:1024 --report out/
    """
    if design_path or kernels_path:
        _ablate_design(ctx, design_path, kernels_path, arch_name, as_json)
        return
    from ..studies import ablate

    def compute():
        base, overlays = base_study(model, weights, kv, activations), None
        if overlay_path:
            base, overlays = _as_built(ctx, overlay_path, base)
        ds = ablate(base, regimes, load_arch(arch_name), overlays=overlays)
        ds.attrs["layout_file"] = overlay_path or ""
        return ds

    _run_study(compute, as_json, report_dir)


def _as_built(ctx, path: str, base):
    """``base`` with the as-built file's [model] precision, and the file's layouts by regime; a
    precision option the file also sets is refused (which one wins would be a guess)."""
    from ..llm.run import with_as_built
    from ..mapping.overlay import load_as_built
    from .llm_inputs import precision_clashes

    built = load_as_built(path).check_read_by("llm", path)
    clash = precision_clashes(ctx, built.precision)
    if clash:
        raise ConfigError([f"{', '.join(clash)}: {path} sets it too ([model]); give it in one place"], "study ablate")
    return with_as_built(base, built), built.overlays


def _ablate_design(ctx, design_path, kernels_path, arch_name, as_json: bool) -> None:
    """``study ablate --design``: each kernel of an mlir-aie design in turn a 1-cycle pass, ranked
    by the cycles that saves (``fastsim.mlir.ablate``); the model's options do not apply."""
    from ..mlir import read_design
    from ..mlir.ablate import ablate, format_ablation
    from .llm_inputs import given

    flags = {"model": "--model", "weights": "--weights", "kv": "--kv", "activations": "--activations",
             "regimes": "--regime", "report_dir": "--report", "overlay_path": "--overlay"}
    unused = [flag for name, flag in flags.items() if given(ctx, name)]
    problems = ([f"{', '.join(unused)}: a model's options do not apply to --design"] if unused else [])
    if not design_path:
        problems.append("--kernels: gives the kernel costs of --design; no design given")
    try:
        if problems:
            raise ConfigError(problems, "study ablate")
        arch = load_arch(arch_name) if given(ctx, "arch_name") else None
        base, rows = ablate(read_design(design_path, kernels_path, arch=arch))
    except (ConfigError, SimulationError) as e:
        fail(e)
    if as_json:
        click.echo(json.dumps({"design": design_path, "total_cycles": base, "ablation": [
            {"kernel": a.kernel, "calls": a.calls, "cycles": a.cycles, "saved_cycles": a.saved_cycles} for a in rows]}))
    else:
        click.echo(f"{design_path}: {base:,} cycles")
        click.echo(format_ablation(base, rows))


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

    Example: fastsim study bandwidth --arch examples/wide_array.toml --report out/
    """
    from ..studies import bandwidth

    try:
        parsed = tuple(int(x) for x in sizes.split(","))
        if min(parsed) < 4:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"{sizes!r}: expected sizes >= 4 bytes like 256,4096", param_hint="--sizes")
    _run_study(lambda: bandwidth(load_arch(arch_name), parsed, total_bytes), as_json, report_dir)


@study_group.command("compression")
@click.argument("weights", type=click.Path(dir_okay=False))
@click.option("--kv", "kv_path", type=click.Path(dir_okay=False), default=None,
              help="a .safetensors/.npz/.npy file of dumped K/V tensors")
@click.option("--group-size", default=128, show_default=True, type=click.IntRange(min=1),
              help="values per int8/int4 scale")
@click.option("--prune", default=None, help="N:M structured sparsity after magnitude pruning, e.g. 2:4")
@click.option("--include", default=r"^(?!.*embed).*", show_default=True,
              help="regular expression the weight tensors' names must match")
@click.option("--model", default=None,
              help=f"the model the weights are of, {MODEL_HELP}: recorded as measured_on, and the weights' "
                   "shapes must be its (default: the config.json beside the weights, if any; runs on another "
                   "model refuse the ratios)")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="write the ratios a run applies (fastsim run llm --compression FILE)")
@click.option("--json", "as_json", is_flag=True, help="print the Dataset as JSON (xarray to_dict)")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="write compression.md and compression.png into this directory")
def compression_cmd(weights, kv_path, group_size, prune, include, model, out_path, as_json, report_dir):
    """How much do weights and K/V really compress? Reads real tensors (.safetensors, .npz, .npy)
    and measures, per tensor and in total, the DMA's zero-value compression, N:M pruning and
    int8/int4 group quantization against their nominal ratios. The ratios belong to the model
    measured (--model, or the config.json beside the weights): runs apply them to it only.

    Example: fastsim study compression model.safetensors --model llama-3.2-1b --prune 2:4 --out measured.json
    """
    from ..llm import get_model
    from ..studies.compression import check_measured_on, compression, run_ratios

    try:
        nm = None if prune is None else tuple(int(x) for x in prune.split(":"))
        if nm is not None and len(nm) != 2:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"{prune!r}: expected N:M like 2:4", param_hint="--prune")

    def compute():
        config = get_model(model) if model is not None else None
        ds = compression(weights, kv_path, group_size, nm, include, model=config.name if config else None)
        ratios = run_ratios(ds)
        if config is not None:  # weights of another shape are not this model's: its runs would refuse them
            check_measured_on(ratios, config, weights)
        if out_path:
            from pathlib import Path

            Path(out_path).write_text(json.dumps(ratios, indent=1))
            on = ratios["measured_on"]["model"]
            click.echo(f"ratios for runs: {out_path} (measured on {on}'s tensors)" if on else
                       f"ratios for runs: {out_path} (no model named: give --model or put its config.json beside "
                       "the weights; runs check only the tensors' shapes)", err=True)
        return ds

    _run_study(compute, as_json, report_dir)
