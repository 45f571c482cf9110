"""The one exact-search loop every op kind's mapping search runs: simulate candidates best-bounded
first, in batches that double (one engine call amortizes over more designs once bounds are loose;
the first batch's candidates bounded well above its best wait for the leaders, whose cycles may
rule them out),
until the smallest lower bound left unsimulated is no better than the fastest simulated cycles, so
the answer is the best of the space, or until a budget of simulations is spent.

The loop (``walk``) is a generator of the batches it wants simulated: ``drive`` runs one search,
``drive_together`` several, each step's batches of all of them in one engine call.

An op kind plugs in a ``Space``: its legal candidates in bound order (rows: dicts with at least
``lower_bound_cycles``; simulation fills ``status`` and ``cycles``), how to simulate a batch, and
how ties between equally fast candidates break. Matmul (``search``), conv (``conv_search``) and
transpose (``transpose``) are the spaces today. A space whose legal rows are all listed up front,
sorted by bound, takes its walk from ``LegalInOrder`` (conv, transpose, vector columns), and its
simulation from it too when it says how to build a row's design (``design_of``: transpose, vector columns).

What a candidate is ranked by (``objective``): its simulated cycles, plus, inside a graph, the
cycles of the runtime-sequence instructions that set its design up after another op's in the same
dispatch, weighted as the evaluation charges them (``control_weight``: set-ups per simulated run;
0 for an op that is a dispatch of its own). A space's bounds are lower bounds of the objective:
a closed-form bound on cycles plus the weighted control counted in closed form from the candidate
(the matmul and conv spaces count it exactly: ``plan.control_counts_of``,
``conv_plan.control_counts_of``); a candidate is taken best bound first and pruned only when its
bound is no better than the best objective simulated."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from ..errors import ConfigError
from .dispatch import ControlCounts, control_counts, weighted_instructions

FIRST_BATCH = 4  # candidates in the first engine call when the space chooses them (then 8, 16, ...)
LEAD_WITHIN = 0.05  # from the first-batch candidate this far (relative) above its best bound on, wait (_leaders)


class Space(Protocol):
    name: str  # what is searched, as errors name it (an op)
    group: str  # the search, as errors name it
    arch: object  # the Arch its candidates run on (their control's cycles, ``objective``)

    def take(self, size: int, below: float) -> list[dict]:
        """Up to ``size`` legal rows not simulated yet whose bound is below ``below``, best-bounded
        first; they count as simulated from now on."""

    def unexplored_bound(self) -> float:
        """The smallest bound of the legal rows not simulated yet (inf: none left)."""

    def simulate(self, rows: list[dict], cap_cycles: int | None) -> list[dict]:
        """Simulate ``rows`` (a run past ``cap_cycles`` cannot win and may stop there); returns
        them, and any rows of the same design answered without a run, in simulation order. A space
        may also split this in two for ``drive_together``: ``prepare(rows, cap_cycles)`` (an object
        with the lowered ``runs`` to simulate and whether to ``share`` them) and ``finish(prepared,
        batch, offset)`` (the rows, from the engine batch their runs start at ``offset`` of)."""

    def tie(self, row: dict) -> tuple:
        """What breaks a tie in cycles (before simulation order)."""


@dataclass(frozen=True)
class Broken:
    """One limit a candidate breaks (its kind's ``Limit`` enum: searches count rejections by it,
    never by text), with its numbers."""

    limit: Enum
    detail: str

    def __str__(self) -> str:
        return self.detail


class LegalInOrder:
    """A ``Space``'s walk over a list of legal rows already sorted by bound (conv, transpose): the
    plug-in adds ``group``, ``simulate`` and ``tie``."""

    bound = "lower_bound_cycles"  # the row key it is sorted and pruned by

    def __init__(self, name: str, legal: list[dict]):
        self.name, self.legal = name, legal
        self.done = 0  # legal[:done] are simulated

    def take(self, size: int, below: float) -> list[dict]:
        batch = [r for r in self.legal[self.done:self.done + size] if r[self.bound] < below]
        self.done += len(batch)
        return batch

    def unexplored_bound(self) -> float:
        return self.legal[self.done][self.bound] if self.done < len(self.legal) else float("inf")

    def design_of(self, row: dict):
        """The design of one legal row (a plug-in that keeps this ``simulate`` says how to build it)."""
        raise NotImplementedError(f"{type(self).__name__} builds no design: it must define design_of or simulate")

    def simulate(self, rows: list[dict], cap_cycles: int | None) -> list[dict]:
        """Each row's design (``design_of``), all simulated in one engine call: every row gets its
        ``design``, ``simulation``, ``status`` and ``cycles``."""
        from ..simulation import simulate

        designs = [self.design_of(r) for r in rows]
        ds = simulate(designs, on_error="record", max_cycles=cap_cycles or 2**40)
        for i, r in enumerate(rows):
            r["design"], r["simulation"] = designs[i], ds.isel(design=[i])
            r["status"] = str(ds.status.values[i])
            r["cycles"] = int(ds.total_cycles.values[i])
        return rows


def branch_and_bound(space: Space, first: list[dict], budget: int | None, extra: dict | None = None,
                     control_weight: float = 0.0) -> tuple[dict, list[dict], int]:
    """``walk`` run alone: each batch simulated by its space as it comes."""
    return drive(walk(space, first, budget, extra, control_weight))


def objective(cycles: float, control: ControlCounts, arch, control_weight: float) -> float:
    """What a candidate is ranked by: its ``cycles``, plus the cycles of the runtime-sequence
    instructions charged per simulated run of its design inside a dispatch (``control_cycles``).
    Exactly its cycles when ``control_weight`` is 0 (an op run as its own dispatch)."""
    return cycles + control_cycles(control, arch, control_weight)


def control_cycles(control: ControlCounts, arch, control_weight: float):
    """Cycles of the control instructions a search weighs per simulated run (``control``:
    ``dispatch.control_counts`` of the design, or arrays of them counted in closed form;
    ``dispatch.weighted_instructions`` at ``Arch.runtime_instruction_cycles`` each; 0 when
    ``control_weight`` is 0)."""
    if not control_weight:
        return 0
    return weighted_instructions(control, control_weight) * arch.runtime_instruction_cycles


def walk(space: Space, first: list[dict], budget: int | None, extra: dict | None = None,
         control_weight: float = 0.0):
    """Simulate ``first`` (its rows past ``_leaders`` after the others, and only those whose bound
    could still win or tie: the rest count as spent), then the best-bounded rest, until no
    unsimulated bound beats the fastest simulated objective or ``budget`` simulations are spent.
    ``extra``: a row simulated after the first batch whenever its (valid) bound says it could still
    win or tie, budget or not (the matmul search's fixed whole-array baseline: the answer is never
    slower than it). Each simulated row that ran to its end gets its ``objective`` (the module
    docstring). A generator: it yields
    each batch to simulate as (space, rows, cap cycles) and is sent the simulated rows back, so
    that a driver may run the batches of many searches in one engine call (``drive_together``).
    Returns the best row, every simulated row in order, and how many were simulated."""
    rows: list[dict] = []
    lead = _leaders(first)
    batch, waiting, size = first[:lead], first[lead:], FIRST_BATCH
    ruled_out = 0  # first-batch candidates not run: they count against a budget as if they had run
    while batch:
        rows += _ranked((yield space, batch, _cap(rows)), space, control_weight)
        if waiting:  # the rest of the first batch runs only where its bound could still win or tie
            batch = [r for r in waiting if r["lower_bound_cycles"] <= _fastest(rows)]
            ruled_out, waiting = len(waiting) - len(batch), []
            if batch:
                continue
        if extra is not None and extra["lower_bound_cycles"] <= _fastest(rows):
            rows += _ranked((yield space, [extra], _cap(rows)), space, control_weight)
        extra = None
        best = _fastest(rows)
        spent = len(rows) + ruled_out
        if space.unexplored_bound() >= best or (budget is not None and spent >= budget):
            break
        size *= 2
        batch = space.take(size if budget is None else min(size, budget - spent), best)
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        raise ConfigError([f"{space.name}: every simulated candidate failed: " + "; ".join(
            f"{r['mapping'].label()}: {r['status']}" for r in rows)], space.group)
    return min(ok, key=lambda r: (r["objective"], *space.tie(r), rows.index(r))), rows, len(rows)


def _leaders(first: list[dict]) -> int:
    """How many of the first batch's leading rows run at once: those up to the first whose bound is
    more than ``LEAD_WITHIN`` above the batch's best. The rest wait for their cycles, which often
    rule them out (bounds tight to a fraction of a percent: a prefill projection's candidate 11-16 %
    above the best bound runs tens of millions of cycles to lose); waiting costs a second engine
    call where they run anyway, so near-equal bounds run together."""
    if not first:
        return 0
    best = min(r["lower_bound_cycles"] for r in first)
    return next((i for i, r in enumerate(first) if i and r["lower_bound_cycles"] > best * (1 + LEAD_WITHIN)),
                len(first))


def _ranked(rows: list[dict], space: Space, control_weight: float) -> list[dict]:
    """``rows`` as simulated, each that ran to its end with its ``objective``."""
    for r in rows:
        if r["status"] == "ok":
            control = control_counts(r["design"]) if control_weight else None
            r["objective"] = objective(r["cycles"], control, space.arch, control_weight)
    return rows


def drive(walker):
    """Run a search (a generator of ``walk``'s requests) to its answer, one engine call a batch."""
    try:
        request = next(walker)
        while True:
            space, rows, cap = request
            request = walker.send(space.simulate(rows, cap))
    except StopIteration as done:
        return done.value


def drive_together(walkers: list, done=None) -> list:
    """Run several searches at once: the batches they ask for at the same step go to one engine
    call (two: candidates another process may be simulating too are claimed, the rest are not),
    so that the engine's threads share out the designs of many small searches. Each search sees
    exactly the rows it would see alone (designs are simulated independently). A space without
    ``prepare``/``finish`` simulates its batch itself. Returns each search's answer, in order (a
    ConfigError for a search that raised one); ``done()``, if given, is called as each one ends."""
    from ..simulation import run_batch

    answers: list = [None] * len(walkers)
    requests = {}
    for i, w in enumerate(walkers):
        _advance(w, i, None, requests, answers, done)
    while requests:
        replies, joint = {}, {True: [], False: []}  # by share
        for i, (space, rows, cap) in requests.items():
            try:
                if hasattr(space, "prepare"):
                    prepared = space.prepare(rows, cap)
                    joint[prepared.share].append((i, space, prepared))
                else:
                    replies[i] = space.simulate(rows, cap)
            except ConfigError as e:  # this search ends here, as it would alone
                answers[i] = e
                if done is not None:
                    done()
        for share, items in joint.items():
            if items:
                runs = [lw for _, _, p in items for lw in p.runs]
                batch, offset = run_batch(runs, share=share) if runs else None, 0
                for i, space, prepared in items:
                    replies[i] = space.finish(prepared, batch, offset)
                    offset += len(prepared.runs)
        requests = {}
        for i, reply in replies.items():
            _advance(walkers[i], i, reply, requests, answers, done)
    return answers


def _advance(walker, i: int, reply, requests: dict, answers: list, done) -> None:
    """Send ``reply`` to search ``i`` (None: start it); keep its next request, or its answer (a
    search that ends in a ConfigError answers that error: run alone, it would raise it)."""
    try:
        requests[i] = walker.send(reply) if reply is not None else next(walker)
        return
    except StopIteration as finished:
        answers[i] = finished.value
    except ConfigError as e:
        answers[i] = e
    if done is not None:
        done()


def _fastest(rows: list[dict]) -> float:
    """The best objective simulated so far (inf before any candidate ran to its end)."""
    return min((r["objective"] for r in rows if r["status"] == "ok"), default=float("inf"))


def _cap(rows: list[dict]) -> int | None:
    """Cycles past which a run cannot win (its objective is at least its cycles; ties still run to
    the end: the tie-break may prefer them)."""
    fastest = _fastest(rows)
    return None if fastest == float("inf") else int(fastest) + 1
