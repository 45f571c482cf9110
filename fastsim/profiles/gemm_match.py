"""GEMM measurements (a sweep CSV, harness logs) against fastsim's GEMM runs: each measured shape
simulated as ``fastsim run gemm`` would (``gemm_mapping``, then ``report.summarize``: kernel time
plus one host dispatch, as the harness times it), with the tile and columns the measured design
was built with pinned where the CSV gives them; the search picks the rest."""
from __future__ import annotations

from ..arch import Arch
from ..dtypes import OUT_DTYPE
from ..errors import ConfigError
from ..report import summarize
from ..simulation import simulate
from ..workloads.gemm import Gemm, gemm_mapping
from .compare import HINTS, Comparison, Pair, refuse_kinds
from .profile import Profile, Row, bad


def gemm_of(r: Row, budget: int | None) -> Gemm:
    """The Gemm of a measured row: its shape and dtype, its pins (tile m,k,n and columns)."""
    m, k, n, dtype = r.shape
    pins = dict(r.pins)
    tile = pins.get("tile", (None, None, None))
    return Gemm(m, k, n, dtype, *tile, cols=pins.get("cols"), budget=budget)


def simulate_gemm_row(r: Row, arch: Arch, budget: int | None) -> tuple[dict, dict]:
    """``fastsim run gemm``'s summary of the row's GEMM, and the simulated run in the sweep CSV's
    columns (``gemm_csv.COLUMNS``, the chosen tile and columns); a GEMM fastsim refuses names the row."""
    g = gemm_of(r, budget)
    try:
        found = gemm_mapping(g, arch)
        ds = found.best_simulation if found.best_simulation is not None else simulate(found.best_design)
    except ConfigError as e:
        raise bad(r.source, r.line, r.name, r.pins or r.shape, "; ".join(e.problems)) from None
    s = summarize(ds, 0, arch, g.ops, g.dtype)
    tile = found.best.tile
    record = {"M": g.m, "K": g.k, "N": g.n, "m": tile[0], "k": tile[1], "n": tile[2], "dtype_in": g.dtype,
              "dtype_out": g.out_dtype or OUT_DTYPE.get(g.dtype, g.dtype), "cols": found.best.cols,
              "avg_us": s["seconds"] * 1e6, "avg_gflops": s["ops_per_s"] / 1e9, "tops": s["ops_per_s"] / 1e12,
              "pct_peak": 100 * s["peak_fraction"], "status": "ok"}
    return s, record


def compare_gemm(profile: Profile, arch: Arch, *, budget: int | None = 3) -> Comparison:
    """Every GEMM row of ``profile`` against its simulation on ``arch`` (``budget``: candidates
    each search simulates; None: until proven best). A shape measured twice is one pair, the
    rows' mean measured."""
    refuse_kinds(profile, ("gemm",), "a GEMM comparison", HINTS)
    groups: dict[tuple, list[Row]] = {}
    for r in profile.rows:
        groups.setdefault((r.shape, r.pins), []).append(r)
    pairs, records = [], []
    for (shape, pins), rows in groups.items():
        s, record = simulate_gemm_row(rows[0], arch, budget)
        records.append(record)
        measured = sum(r.seconds_at(arch.clock_hz) for r in rows) / len(rows)
        label = rows[0].name + "".join(f" {k} {'x'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in pins)
        pairs.append(Pair(label, measured, float(s["seconds"]), "exact" if len(rows) == 1 else "split",
                          f"gemm {shape[3]}", str(s["bound_by"]), tuple(f"{r.name}@{r.where}" for r in rows),
                          f"mean of {len(rows)} runs" if len(rows) > 1 else ""))
    return Comparison(f"{len(pairs)} GEMM shape(s)", profile.path, profile.fmt, tuple(pairs), arch.clock_hz,
                      f"{arch.name}'s clock (the GEMM rows are in seconds)", notes=profile.notes,
                      records=tuple(records))
