"""``fastsim optimize``: the whole checklist of studies, then the combined plan."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import base_study, fail, load_arch, model_options


@click.command("optimize")
@model_options
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
    from ..studies.optimize import optimize

    def say(step, text):
        click.echo(f"[{step}] {text}", err=True)

    try:
        plan = optimize(base_study(model, weights, kv, activations), regimes, list(mix) or None, load_arch(arch_name),
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
