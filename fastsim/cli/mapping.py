"""``fastsim map gemm``: the mapping search's ranked and rejected candidates."""
from __future__ import annotations

import json

import click

from ..errors import ConfigError, SimulationError
from .common import fail, gemm_from, gemm_options, load_arch


@click.group("map")
def map_group():
    """Search mappings of an op and list the ranked and rejected candidates."""


@map_group.command("gemm")
@gemm_options
@click.option("--arch", "arch_name", default="npu2", show_default=True,
              help="a preset (npu1, npu2) or part (phoenix, hawk_point, strix, strix_halo, krackan), NAME[:mode][:cols=N] "
              "(e.g. strix:turbo, strix:cols=4), or a TOML file with an [arch] table")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1), help="candidates listed")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of a table")
def map_gemm(m, k, n, dtype, tile, l2, split, k_panel, cols, gemm_dataflow, efficiency, stream_split, overlay_path, budget, out_dtype,
             arch_name, top, as_json):
    """Rank mappings of C = A @ B: tiles, L2 residency, columns, dataflow, K split; each with its
    lower bound, simulated cycles, bytes per level and energy; rejected ones with their reason.

    Example: fastsim map gemm --m 2048 --k 2048 --n 2048 --dtype bf16 --top 5"""
    from ..workloads.gemm import gemm_mapping

    arch = load_arch(arch_name)
    try:
        g = gemm_from(m, k, n, dtype, tile, l2, split, k_panel, cols, gemm_dataflow, efficiency, stream_split, overlay_path, budget,
                      out_dtype)
        found = gemm_mapping(g, arch)
    except (ConfigError, SimulationError) as e:
        fail(e)
    # finished runs by cycles, then runs stopped once they could not win, then the unsimulated
    ranked = sorted(found.ranked, key=lambda r: (r["simulated_cycles"] < 0, r["status"] != "ok",
                                                 r["simulated_cycles"], r["lower_bound_cycles"]))[:top]
    if as_json:
        click.echo(json.dumps(_as_json(g, arch, found, ranked, top)))
    else:
        _echo_table(g, arch, found, ranked, top)


def _as_json(g, arch, found, ranked: list[dict], top: int) -> dict:
    def plain(r):
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in r.items()}

    return {"op": {"m": g.m, "k": g.k, "n": g.n, "dtype": g.dtype}, "arch": arch.name,
            "best": found.best.label(), "best_cycles": found.best_cycles,
            "enumerated": found.enumerated, "legal": found.legal, "search": found.summary(),
            "rejected_by_reason": found.rejected_by_reason,
            "ranked": [plain(r) for r in ranked],
            "rejected": [plain(r) for r in found.rejected[:top]]}


def _echo_table(g, arch, found, ranked: list[dict], top: int) -> None:
    click.echo(f"GEMM {g.m}x{g.k}x{g.n} {g.dtype} on {arch.name}: {found.enumerated:,} candidates, "
               f"{found.legal:,} legal; the answer (*) is {found.optimality()}")
    click.echo(f"  {'mapping':<44}{'bound cycles':>14}{'simulated cycles':>18}  {'bound by':<12}{'DDR MB':>8}"
               f"{'L1 KiB':>8}{'L2 KiB':>8}{'uJ':>8}")
    for r in ranked:
        sim = (f"{r['simulated_cycles']:,}" if r["status"] == "ok" else
               f">{r['simulated_cycles'] - 1:,}" if r["status"] == "cycle_limit" else r["status"] or "-")
        mark = "*" if r["chosen"] else " "
        click.echo(f"{mark} {r['label']:<44}{r['lower_bound_cycles']:>14,.0f}{sim:>18}  "
                   f"{r['simulated_bound_by'] or r['bound_resource']:<12}"
                   f"{(r['ddr_read_bytes'] + r['ddr_write_bytes']) / 1e6:>8.2f}{r['l1_bytes'] / 1024:>8.1f}"
                   f"{r['l2_bytes'] / 1024:>8.1f}{r['energy_pj'] / 1e6:>8.1f}")
    click.echo("  rejected (best bounds), and why:")
    for r in found.rejected[:min(top, 5)]:
        click.echo(f"    {r['label']:<44}{r['lower_bound_cycles']:>12,.0f} cycles  {r['reason']}")
    click.echo("  rejections by reason: " + ", ".join(f"{k} {v:,}" for k, v in sorted(found.rejected_by_reason.items())))
