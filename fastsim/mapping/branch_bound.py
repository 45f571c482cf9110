"""The one exact-search loop every op kind's mapping search runs: simulate candidates best-bounded
first, in batches that double (one engine call amortizes over more designs once bounds are loose),
until the smallest lower bound left unsimulated is no better than the fastest simulated cycles, so
the answer is the best of the space, or until a budget of simulations is spent.

An op kind plugs in a ``Space``: its legal candidates in bound order (rows: dicts with at least
``lower_bound_cycles``; simulation fills ``status`` and ``cycles``), how to simulate a batch, and
how ties between equally fast candidates break. Matmul (``search``) and conv (``conv_search``) are
the two spaces today."""
from __future__ import annotations

from typing import Protocol

from ..errors import ConfigError

FIRST_BATCH = 4  # candidates in the first engine call when the space chooses them (then 8, 16, ...)


class Space(Protocol):
    name: str  # what is searched, as errors name it (an op)
    group: str  # the search, as errors name it

    def take(self, size: int, below: float) -> list[dict]:
        """Up to ``size`` legal rows not simulated yet whose bound is below ``below``, best-bounded
        first; they count as simulated from now on."""

    def unexplored_bound(self) -> float:
        """The smallest bound of the legal rows not simulated yet (inf: none left)."""

    def simulate(self, rows: list[dict], cap_cycles: int | None) -> list[dict]:
        """Simulate ``rows`` (a run past ``cap_cycles`` cannot win and may stop there); returns
        them, and any rows of the same design answered without a run, in simulation order."""

    def tie(self, row: dict) -> tuple:
        """What breaks a tie in cycles (before simulation order)."""


def branch_and_bound(space: Space, first: list[dict], budget: int | None,
                     extra: dict | None = None) -> tuple[dict, list[dict], int]:
    """Simulate ``first``, then the best-bounded rest, until no unsimulated bound beats the fastest
    simulated cycles or ``budget`` simulations are spent. ``extra``: a row simulated after the first
    batch whenever its (valid) bound says it could still win or tie, budget or not (the matmul
    search's fixed whole-array baseline: the answer is never slower than it). Returns the fastest
    row, every simulated row in order, and how many were simulated."""
    rows: list[dict] = []
    batch, size = first, FIRST_BATCH
    while batch:
        rows += space.simulate(batch, _cap(rows))
        if extra is not None and extra["lower_bound_cycles"] <= _fastest(rows):
            rows += space.simulate([extra], _cap(rows))
        extra = None
        best = _fastest(rows)
        if space.unexplored_bound() >= best or (budget is not None and len(rows) >= budget):
            break
        size *= 2
        batch = space.take(size if budget is None else min(size, budget - len(rows)), best)
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        raise ConfigError([f"{space.name}: every simulated candidate failed: " + "; ".join(
            f"{r['mapping'].label()}: {r['status']}" for r in rows)], space.group)
    return min(ok, key=lambda r: (r["cycles"], *space.tie(r), rows.index(r))), rows, len(rows)


def _fastest(rows: list[dict]) -> float:
    """The fewest cycles simulated so far (inf before any candidate ran to its end)."""
    return min((r["cycles"] for r in rows if r["status"] == "ok"), default=float("inf"))


def _cap(rows: list[dict]) -> int | None:
    """Cycles past which a run cannot win (ties still run to the end: the tie-break may prefer them)."""
    fastest = _fastest(rows)
    return None if fastest == float("inf") else int(fastest) + 1
