"""``fastsim optimize``: the whole checklist of studies, then the combined plan."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import base_study, fail, load_arch, several_models_options


@click.command("optimize")
@several_models_options
@click.option("--mix", "mix", multiple=True, help="request kinds for the overlays step, PROMPT:NEW_TOKENS[:BATCH"
              "[:WEIGHT]] (repeatable; default 1024:128)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="optimize", show_default=True,
              help="directory for report.md, plan.json, the studies' reports, figures and zarr Datasets")
def optimize_cmd(models, weights, kv, activations, arch_name, regimes, as_json, report_dir, mix, out_dir):
    """The whole checklist in order: ablate -> cuts -> overlays -> dataflow, then the combined plan
    simulated as a whole. Writes OUT/report.md and OUT/report.html (a memo: each decision with its
    numbers, the rejected alternatives, the biggest levers left simulated, latency tails), OUT/plan.json
    (replay it: fastsim run llm --plan OUT/plan.json), the studies' reports and figures, and their
    Datasets as zarr. With several --model: one such folder per model under OUT and OUT/report.md
    comparing their plans and dataflow playbooks regime by regime.

    Example: fastsim optimize --model llama-3.2-1b --regime decode:4096 --regime prefill:1024 --out opt/
    """
    from ..studies.families import optimize_models
    from ..studies.optimize import optimize

    def say(step, text):
        click.echo(f"[{step}] {text}", err=True)

    if report_dir:
        fail(ValueError("--report does not apply to optimize: everything goes to --out"))
    try:
        bases = [base_study(m, weights, kv, activations) for m in dict.fromkeys(models)]
        arch = load_arch(arch_name)
        if len(bases) > 1:
            comparison = optimize_models(bases, regimes, list(mix) or None, arch, out_dir, progress=say)
            click.echo(json.dumps(comparison) if as_json else _compared(comparison))
            return
        plan = optimize(bases[0], regimes, list(mix) or None, arch, out_dir, progress=say, command=_command())
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
