"""``fastsim compare PROFILE --onnx MODEL | --design FILE.mlir | --gemm``: a profile measured on a
part (``fastsim.profiles`` reads it) beside fastsim's simulation of the same model, design or GEMM
shapes, op by op, with where the disagreement sits (docs/compare.md)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import click

from ..errors import ConfigError, SimulationError
from ..profiles import FORMATS
from .common import SEARCH_BUDGET, fail, load_arch

# option -> the inputs it applies to; one given with another input is refused by name
APPLIES = {"kernels_path": ("design",), "device": ("design",), "dims": ("onnx",), "fold_epilogues": ("onnx",),
           "fusion": ("onnx",), "matches": ("onnx",), "dtype": ("gemm",), "search_budget": ("onnx", "gemm")}
FLAGS = {"kernels_path": "--kernels", "device": "--device", "dims": "--dim", "fold_epilogues": "--fold-epilogues",
         "fusion": "--fusion", "matches": "--match", "dtype": "--dtype", "search_budget": "--search-budget"}


@click.command("compare")
@click.argument("profile", type=click.Path(exists=True))
@click.option("--onnx", "onnx_model", type=click.Path(dir_okay=False, exists=True), default=None,
              help="the ONNX model the profile measured (AI Analyzer run, op,measured_s CSV, onnx-benchmark report)")
@click.option("--design", "design_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="the mlir-aie design the profile measured (trace JSON, kernel,cycles CSV)")
@click.option("--gemm", "--gemm-csv", "gemm", is_flag=True,
              help="the profile is GEMM runs (sweep CSV, harness log): each shape simulated as run gemm")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default=None,
              help="the profile's format (default: told from the file)")
@click.option("--arch", "arch_name", default=None,
              help="preset or arch TOML (default npu2; a design: its device's)")
@click.option("--kernels", "kernels_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="--design: as run design --kernels")
@click.option("--device", default=None, help="--design: as run design --device")
@click.option("--dim", "dims", multiple=True, metavar="NAME=N", help="--onnx: as run onnx --dim")
@click.option("--fold-epilogues", is_flag=True, help="--onnx: as run onnx --fold-epilogues")
@click.option("--fusion", default="auto", show_default=True, help="--onnx: as run onnx --fusion")
@click.option("--match", "matches", multiple=True, metavar="ROW=OP",
              help="--onnx: match the profile row ROW to fastsim's op OP (repeatable; for ambiguous rows)")
@click.option("--dtype", default="bf16", show_default=True, help="--gemm with a harness log: the GEMMs' dtype")
@click.option("--search-budget", default="3", show_default=True, type=SEARCH_BUDGET,
              help="--onnx, --gemm: candidates each mapping search simulates; exact: until proven best")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="write compare.csv, compare.json and compare.png into this directory")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as one JSON object")
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=1), help="pairs printed")
@click.pass_context
def compare_cmd(ctx, profile, onnx_model, design_path, gemm, fmt, arch_name, out_dir, as_json, top, **options):
    """Your measurements beside fastsim's simulation, op by op: measured, simulated, error and
    binding resource per op, kernel, core tile or GEMM shape, the rows that matched nothing, and
    which op classes and mechanisms (compute, DMA, dispatch, control) carry the disagreement.

    Example: fastsim compare analyzer_run/ --onnx resnet50.onnx --out cmp/"""
    try:
        c = _compare(ctx, profile, onnx_model, design_path, gemm, fmt, arch_name, options)
    except (ConfigError, SimulationError) as e:
        fail(e)
    if out_dir:
        written = write_outputs(c, Path(out_dir))
        click.echo(f"written: {', '.join(str(p) for p in written)}", err=True)
    click.echo(json.dumps(c.to_dict()) if as_json else format_comparison(c, top))


def _compare(ctx, profile, onnx_model, design_path, gemm, fmt, arch_name, options):
    """Read the profile and run the comparison the chosen input asks for, after refusing, by name,
    the options that do not apply to it."""
    inputs = [name for name, given in (("onnx", onnx_model), ("design", design_path), ("gemm", gemm)) if given]
    if len(inputs) != 1:
        given = f" (given: {', '.join('--' + i for i in inputs)})" if inputs else ""
        raise ConfigError([f"give one of --onnx MODEL, --design FILE.mlir, --gemm{given}"], "compare")
    chosen = inputs[0]
    wrong = [f"{FLAGS[k]}: applies to {' and '.join('--' + x for x in APPLIES[k])} only, not --{chosen}"
             for k in APPLIES if chosen not in APPLIES[k]
             and ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE]
    if wrong:
        raise ConfigError(wrong, "compare options")
    from ..profiles import read_profile
    from ..profiles.gemm_csv import read_harness_log

    prof = read_profile(profile, fmt)
    if chosen == "design":
        from ..profiles.design_match import compare_design

        return compare_design(prof, design_path, kernels_path=options["kernels_path"], device=options["device"],
                              arch=load_arch(arch_name) if arch_name else None)
    arch = load_arch(arch_name or "npu2")
    if chosen == "gemm":
        from ..profiles.gemm_match import compare_gemm

        if prof.fmt == "harness_log":
            prof = read_harness_log(Path(profile), options["dtype"])
        return compare_gemm(prof, arch, budget=options["search_budget"])
    from ..profiles.onnx_match import compare_onnx
    from .onnx import _pairs

    return compare_onnx(prof, onnx_model, arch, dims=_pairs(options["dims"], "--dim", int) or None,
                        aliases=_pairs(options["matches"], "--match", str), fold_epilogues=options["fold_epilogues"],
                        fusion=options["fusion"], search_budget=options["search_budget"])


COLUMNS = ("name", "measured_s", "simulated_s", "error", "op_class", "bound_by", "mechanism", "match", "rows", "note")


def write_outputs(c, out: Path) -> list[Path]:
    """compare.csv (the table), compare.json (everything), compare.png (the figure) and, for GEMM
    runs, simulated_gemm.csv (fastsim's runs in the sweep CSV's columns) in ``out``."""
    from ..profiles.figure import compare_figure

    try:
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "compare.csv", out / "compare.json", out / "compare.png"]
        with paths[0].open("w", newline="") as f:
            w = csv.DictWriter(f, COLUMNS)
            w.writeheader()
            for r in c.table():
                w.writerow({**r, "rows": ";".join(r["rows"])})
        paths[1].write_text(json.dumps(c.to_dict(), indent=1))
        if c.records:  # GEMM runs: fastsim's side in the sweep CSV's columns, to diff as a profile
            from ..profiles.gemm_csv import write_gemm_csv

            paths.append(write_gemm_csv(c.records, out / "simulated_gemm.csv"))
        fig = compare_figure(c)
        fig.tight_layout()
        fig.savefig(paths[2], dpi=110)
    except OSError as e:
        raise ConfigError([f"--out = {str(out)!r}: cannot be written ({e.strerror or e})"], "compare options")
    return paths


def format_comparison(c, top: int) -> str:
    """The table (slowest measured first), the rows that matched nothing, and the summary."""
    lines = [f"{c.subject} against {c.profile} ({c.fmt}); cycles at {c.clock_hz / 1e6:,.0f} MHz: {c.clock_source}",
             f"  {'name':<42}{'measured us':>13}{'simulated us':>14}{'error':>9}  {'bound by':<12}match"]
    table = c.table()
    for r in table[:top]:
        lines.append(f"  {r['name'][:41]:<42}{r['measured_s'] * 1e6:13.3f}{r['simulated_s'] * 1e6:14.3f}"
                     f"{r['error']:+9.1%}  {r['bound_by']:<12}{r['match']}" + (f"  ({r['note']})" if r["note"] else ""))
    if len(table) > top:
        lines.append(f"  ... {len(table) - top} more (--top, or --out for all)")
    for title, items in (("unmatched profile rows", c.unmatched), ("ambiguous rows", c.ambiguous),
                         ("simulated but not measured", c.unmeasured), ("notes", c.notes)):
        if items:
            lines.append(f"  {title} ({len(items)}):")
            lines += [f"    {x}" for x in items[:top]]
            lines += [f"    ... {len(items) - top} more"] if len(items) > top else []
    s = c.summary()
    lines.append(f"  disagreement |simulated - measured| = {s['abs_error_s'] * 1e6:,.3f} us over {len(c.pairs)} pairs; "
                 f"carried by class {s['carried_by']['class']}, mechanism {s['carried_by']['mechanism']}")
    for key in ("by_mechanism", "by_class"):
        lines.append("    " + key.replace("_", " ") + ": " + ", ".join(
            f"{k} {g['share']:.0%} ({g['error_s'] * 1e6:+,.3f} us)" for k, g in s[key].items()))
    return "\n".join(lines)
