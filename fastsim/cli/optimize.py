"""``fastsim optimize``: the whole checklist of studies, then the combined plan."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import base_study, fail, load_arch, several_models_options
from .llm_inputs import given
from .onnx import _pairs

# options of the LLM checklist that a CNN (--onnx) does not take, by parameter name
LLM_ONLY = {"models": "--model", "weights": "--weights", "kv": "--kv", "activations": "--activations",
            "regimes": "--regime", "mix": "--mix", "workers": "--workers"}
ONNX_ONLY = {"dims": "--dim", "fold_epilogues": "--fold-epilogues"}


@click.command("optimize")
@several_models_options
@click.option("--mix", "mix", multiple=True, help="request kinds for the overlays step, PROMPT:NEW_TOKENS[:BATCH"
              "[:WEIGHT]] (repeatable; default 1024:128)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="optimize", show_default=True,
              help="directory for report.md, plan.json, the studies' reports, figures and zarr Datasets")
@click.option("--onnx", "onnx_file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="a CNN as an ONNX model instead of an LLM: baseline, ablation, fusion, dataflow per layer and "
                   "levers into OUT/report.md, report.html and plan.json (docs/onnx.md)")
@click.option("--dim", "dims", multiple=True, metavar="NAME=N",
              help="with --onnx: size of a symbolic input dimension (repeatable), e.g. --dim batch=1")
@click.option("--fold-epilogues", is_flag=True,
              help="with --onnx: the baseline runs a Relu/Clip read only by the op before it inside that op "
                   "(the fusion step tries both ways)")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="processes the four studies and the latency tails run in at once (default: one per core; 1: "
                   "one after another in this process; the same results either way)")
@click.pass_context
def optimize_cmd(ctx, models, weights, kv, activations, arch_name, regimes, as_json, report_dir, mix, out_dir,
                 onnx_file, dims, fold_epilogues, workers):
    """The whole checklist in order: ablate -> cuts -> overlays -> dataflow, then the combined plan
    simulated as a whole. Writes OUT/report.md and OUT/report.html (a memo: each decision with its
    numbers, the rejected alternatives, the biggest levers left simulated, latency tails), OUT/plan.json
    (replay it: fastsim run llm --plan OUT/plan.json), the studies' reports and figures, and their
    Datasets as zarr. With several --model: one such folder per model under OUT and OUT/report.md
    comparing their plans and dataflow playbooks regime by regime.

    With --onnx MODEL.onnx: a CNN's report instead (--arch, --out and --json apply; the LLM options
    do not).

    Example: fastsim optimize --model llama-3.2-1b --regime decode:4096 --regime prefill:1024 --out opt/

    Example: fastsim optimize --onnx resnet50_int8.onnx --arch npu2 --out opt-resnet/
    """
    from ..studies.families import optimize_models
    from ..studies.memo import duration
    from ..studies.optimize import optimize

    def say(step, text):
        click.echo(f"[{step}] {text}", err=True)

    wrong = _misplaced(ctx, onnx_file is not None)
    if wrong:
        fail(wrong)
    if onnx_file is not None:
        _optimize_onnx(onnx_file, dims, fold_epilogues, arch_name, out_dir, as_json, say)
        return
    if report_dir:
        fail(ValueError("--report does not apply to optimize: everything goes to --out"))
    try:
        bases = [base_study(m, weights, kv, activations) for m in dict.fromkeys(models)]
        arch = load_arch(arch_name)
        if len(bases) > 1:
            comparison = optimize_models(bases, regimes, list(mix) or None, arch, out_dir, progress=say,
                                         workers=workers)
            click.echo(json.dumps(comparison) if as_json else _compared(comparison))
            return
        plan = optimize(bases[0], regimes, list(mix) or None, arch, out_dir, progress=say, command=_command(),
                        workers=workers)
    except (ConfigError, SimulationError, ValueError) as e:
        fail(e)
    if as_json:
        click.echo(json.dumps(plan))
        return
    for label, r in plan["regimes"].items():
        b, p = r["baseline"], r["predicted"]
        click.echo(f"{label}: baseline {duration(b['seconds'])} -> plan {duration(p['seconds'])} "
                   f"({r['decisions']['dataflow_point']}, cuts [{r['decisions']['cuts']}], optimize first: "
                   f"{r['decisions']['top_class']})")


def _misplaced(ctx: click.Context, cnn: bool) -> ConfigError | None:
    """The options given that the other kind of run does not take (LLM options with --onnx, and
    --dim or --fold-epilogues without it), each by name; None if there are none."""
    if cnn:
        wrong = [opt for name, opt in LLM_ONLY.items() if given(ctx, name)]
        return ConfigError([f"{opt}: an LLM option; fastsim optimize --onnx takes --arch, --out, --json, --dim and "
                            "--fold-epilogues" for opt in wrong], "optimize --onnx") if wrong else None
    wrong = [opt for name, opt in ONNX_ONLY.items() if given(ctx, name)]
    return ConfigError([f"{opt}: applies only with --onnx MODEL.onnx" for opt in wrong], "optimize") if wrong else None


def _optimize_onnx(path, dims, fold_epilogues, arch_name, out_dir, as_json, say) -> None:
    """``optimize --onnx``: the CNN report (``studies.cnn_optimize``), then its headline or plan.json."""
    from ..studies.cnn_optimize import optimize_onnx
    from ..studies.memo import duration

    try:
        plan = optimize_onnx(path, load_arch(arch_name), out_dir, dims=_pairs(dims, "--dim", int),
                             fold_epilogues=fold_epilogues, progress=say,
                             command=_onnx_command(path, dims, fold_epilogues, arch_name, out_dir))
    except (ConfigError, SimulationError, ValueError) as e:
        fail(e)
    if as_json:
        click.echo(json.dumps(plan))
        return
    b, p, a = plan["baseline"], plan["plan"], plan["ablation"]
    click.echo(f"{b['model']} on {b['arch']}: baseline {duration(b['seconds'])} -> plan {duration(p['seconds'])} "
               f"({p['summary']['inferences_per_s']:,.1f} inferences/s, {p['summary']['tops']:,.2f} TOPS; fusion "
               f"{p['fusion']}, epilogues {'folded' if p['fold_epilogues'] else 'as ops'}); top class "
               f"{a['top_class']}, exposed compute {duration(a['exposed_compute_seconds'])}; "
               f"report {out_dir}/report.md")


def _onnx_command(path, dims, fold_epilogues, arch_name, out_dir) -> str:
    """The ``optimize --onnx`` command line that reproduces this run, from its options (quoted for a shell)."""
    import shlex

    words = ["fastsim", "optimize", "--onnx", str(path), "--arch", arch_name, "--out", str(out_dir)]
    for d in dims:
        words += ["--dim", d]
    return shlex.join(words + (["--fold-epilogues"] if fold_epilogues else []))


def _command() -> str:
    """This command line as typed (quoted for a shell), for the memo's reproducibility block."""
    import shlex
    import sys

    return shlex.join(["fastsim", *sys.argv[1:]])


def _compared(comparison: dict) -> str:
    """One line per model and regime, then the ops whose style differs between families."""
    lines = []
    for model, plan in comparison["plans"].items():
        for label, r in plan["regimes"].items():
            lines.append(f"{model} ({comparison['models'][model]['family']}) {label}: "
                         f"plan {r['predicted']['seconds'] * 1e3:,.3f} ms ({r['decisions']['dataflow_point']})")
    for label, r in comparison["regimes"].items():
        lines.append(f"{label}: styles differ for {', '.join(r['differs'])}" if r["differs"]
                     else f"{label}: every shared op gets the same style")
    return "\n".join(lines)
