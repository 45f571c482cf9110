"""Whole-run choice of the ops' mappings: each matmul op's search finds the fastest mapping of that
op alone, but the ops of a dispatch share the cores' program memory. When their distinct kernels
(one per tile shape and datapath) outgrow it, the cores reload their programs every layer, and an
op that gives up its own best tile for one another op already uses can make the whole run faster.
The default evaluation already does this per dispatch, with op times taken one op at a time
(``fastsim.evaluation.sharing``); this search judges each move by a whole run instead (fusion and
cuts found again), for the reloads the default leaves.

The search is a coordinate descent judged by whole-run simulations: seeded from the per-op
choices, it tries each op that is the only user of its kernel (moving any other op leaves as many
kernels), pinned to each kernel the other ops use; keeps the move that makes the whole run
fastest; and repeats until a round finds none or no reload is left. A pin only narrows an op's own
space, so sharing kernels pays through the program reloads it saves: a run without reloads keeps
its per-op choices, untried. (Under a search budget a pinned op may also come out faster than
its budgeted unpinned search found; the judge takes that too.)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..errors import ConfigError, Problems
from ..llm import LlmStudy, simulate_llm
from ..mapping.dispatch import DispatchLimits


@dataclass(frozen=True)
class Move:
    """One accepted step: ``op`` pinned to another op's kernel, and the whole run after it."""

    op: str
    tile: tuple[int, int, int]
    datapath: str
    seconds: float


@dataclass(frozen=True)
class WholeRun:
    """The whole-run choice: ``study`` replays it (its tiles and datapaths pinned per op);
    ``dataset`` is its simulated pass."""

    study: LlmStudy
    dataset: xr.Dataset
    per_op_seconds: float  # the run with each op's own best mapping
    seconds: float
    moves: tuple[Move, ...]
    runs: int  # whole-run simulations the search made (the seed included)
    reload_seconds: float  # program reloads of the per-op run: what kernel sharing can save at most

    def to_json(self) -> dict:
        return {"summary": self.summary(), "per_op_seconds": self.per_op_seconds, "seconds": self.seconds,
                "reload_seconds": self.reload_seconds, "runs": self.runs,
                "moves": [{"op": m.op, "tile": list(m.tile), "datapath": m.datapath, "seconds": m.seconds}
                          for m in self.moves]}

    @property
    def gain_seconds(self) -> float:
        return self.per_op_seconds - self.seconds

    def summary(self) -> str:
        """One line for reports."""
        if not self.moves:
            why = ("no program reloads: per-op choices are kept" if self.reload_seconds == 0
                   else f"no shared kernel pays ({self.runs - 1} tried)")
            return f"whole-run search: {self.per_op_seconds * 1e3:.4g} ms, as per-op choices ({why})"
        steps = ", ".join(f"{m.op} -> {'x'.join(map(str, m.tile))} {m.datapath}" for m in self.moves)
        return (f"whole-run search: {self.per_op_seconds * 1e3:.4g} -> {self.seconds * 1e3:.4g} ms "
                f"({100 * self.gain_seconds / self.per_op_seconds:.1f} % faster; {steps}; "
                f"{self.runs} whole-run simulations)")


def whole_run_search(study: LlmStudy, arch: Arch = NPU2, limits: DispatchLimits = DispatchLimits(),
                     rounds: int = 3, seed: xr.Dataset | None = None, strict: bool = True) -> WholeRun:
    """Coordinate descent over the ops' kernels (module docstring), at most ``rounds`` rounds.
    ``seed``: the study's pass when the caller has simulated it already (with ``strict``, as
    ``simulate_llm`` takes it)."""
    p = Problems("whole-run search")
    p.number("rounds", rounds, integer=True, lo=1)
    p.raise_if_any()
    seed = simulate_llm(study, arch, limits, strict) if seed is None else seed
    best, best_s, runs, moves = study, float(seed.total_seconds), 1, []
    reload_s = float(seed.program_reload_seconds)
    current = seed
    for _ in range(rounds):
        if float(current.program_reload_seconds) == 0:
            break
        tried, found = _best_move(best, current, arch, limits, strict, best_s)
        runs += tried
        if found is None:
            break
        best, current, move = found
        best_s = move.seconds
        moves.append(move)
    return WholeRun(best, current, float(seed.total_seconds), best_s, tuple(moves), runs, reload_s)


def _best_move(study: LlmStudy, ds: xr.Dataset, arch: Arch, limits: DispatchLimits, strict: bool, best_s: float):
    """(runs tried, (study, Dataset, Move) of the fastest whole run that beats ``best_s``, or None)."""
    kernels = _kernels_by_op(ds)
    users = {k: [op for op in kernels if kernels[op] == k] for k in set(kernels.values())}
    tried, found = 0, None
    for op in _slowest_first(ds, kernels):
        if len(users[kernels[op]]) > 1:  # moving it leaves as many kernels
            continue
        for tile, datapath in sorted(k for k in users if k != kernels[op]):
            trial = replace(study, tiles={**study.tiles, op: tile}, datapath={**study.datapath, op: datapath})
            try:
                run = simulate_llm(trial, arch, limits, strict)
            except ConfigError:  # the tile does not fit this op (or its datapath cannot run it)
                continue
            finally:
                tried += 1
            seconds = float(run.total_seconds)
            if seconds < best_s * (1 - 1e-12) and (found is None or seconds < found[2].seconds):
                found = (trial, run, Move(op, tile, datapath, seconds))
    return tried, found


def _kernels_by_op(ds: xr.Dataset) -> dict[str, tuple[tuple[int, int, int], str]]:
    """Each matmul op name's (tile, datapath); an op name whose instances differ keeps its first."""
    out = {}
    for name, tile, datapath in zip(ds.op_name.values, ds.matmul_tile.values, ds.matmul_datapath.values):
        if datapath:
            out.setdefault(str(name), (tuple(int(x) for x in tile), str(datapath)))
    return out


def _slowest_first(ds: xr.Dataset, kernels: dict) -> list[str]:
    seconds = {name: float(ds.op_seconds.values[np.asarray(ds.op_name.values == name)].sum()) for name in kernels}
    return sorted(kernels, key=lambda name: (-seconds[name], name))
