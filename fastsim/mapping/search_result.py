"""What an exact mapping search answers, for every op kind."""
from __future__ import annotations

from dataclasses import dataclass

import xarray as xr


@dataclass
class SearchResult:
    """The chosen mapping of an op (a ``Matmul`` and its ``Mapping``, or a ``Conv2d`` and its
    ``ConvMapping``), its simulated cycles, every ranked and rejected candidate, and how sure the
    search is: one record for every op kind's exact search."""

    op: object
    best: object
    best_cycles: int
    ranked: list[dict]  # legal candidates by lower bound (simulated ones carry their cycles)
    rejected: list[dict]  # the best-bounded illegal candidates with their reasons (conv: none kept)
    enumerated: int
    legal: int
    rejected_by_reason: dict[str, int]
    best_design: object = None  # the Design of ``best``
    best_run: object = None  # its engine result, for reuse: a ``KeptRun``, or a Dataset with one design
    best_lowered: object = None  # its lowered tables (None when read from disk: lower the design)
    simulated: int = 0  # candidates whose cycles are known (one that builds an earlier one's design counts too)
    # smallest lower bound of the legal candidates left unsimulated (inf: none left)
    unexplored_bound_cycles: float = float("inf")
    kind: str = "matmul"  # or the conv's kind: depthwise, dense, pointwise
    best_plan: dict | None = None  # the chosen candidate's closed-form plan (conv)
    gemm: "SearchResult | None" = None  # a pointwise conv's: the matmul search that answered it
    validated: bool = False  # ``best_design`` passed ``validate_design`` (see ``checked``)
    # what the search's objective added to ``best_cycles``: its control's cycles, weighted
    # (``branch_bound.objective``; 0 for an op that is a dispatch of its own)
    best_control_cycles: float = 0.0

    @property
    def best_simulation(self):
        """The answer's engine result as the Dataset ``simulate`` returns (None: not kept)."""
        run = self.best_run
        return run.dataset() if run is not None and not isinstance(run, xr.Dataset) else run

    @property
    def best_arrays(self):
        """The answer's engine result as ``DesignArrays`` (None: not kept), without a Dataset."""
        from ..results import arrays_of

        run = self.best_run
        if run is None:
            return None
        return arrays_of(run, 0) if isinstance(run, xr.Dataset) else run.arrays()

    def checked(self) -> "SearchResult":
        """This result with its design validated. A search simulates its candidates unvalidated
        (a loser cannot change the answer) and leaves its answer's checks to the caller that uses
        it: an evaluation weighs many answers and reports few."""
        if not self.validated and self.best_design is not None:
            from ..validate import validate_design

            validate_design(self.best_design)
            self.validated = True
        return self

    @property
    def optimal(self) -> bool:
        """No unsimulated candidate can be faster: the answer is the best of the space."""
        return self.unexplored_bound_cycles >= self.best_objective

    @property
    def gap(self) -> float:
        """At most how much faster than the answer an unsimulated candidate may be, as a fraction
        of the answer's objective (its cycles, plus its weighted control inside a graph; 0 when optimal)."""
        return max(0.0, 1.0 - self.unexplored_bound_cycles / self.best_objective)

    @property
    def best_objective(self) -> float:
        """What the search ranked the answer by (``branch_bound.objective``)."""
        return self.best_cycles + self.best_control_cycles

    def summary(self) -> dict:
        """How sure the search is of its answer: proven the best of its space, or within a gap."""
        return {"optimal": self.optimal, "gap": self.gap, "simulated": self.simulated, "legal": self.legal,
                "enumerated": self.enumerated, "best_unsimulated_bound_cycles": self.unexplored_bound_cycles
                if self.unexplored_bound_cycles != float("inf") else None, "statement": self.optimality()}

    def optimality(self) -> str:
        """One line for reports: optimal, or the gap left by a budget."""
        if self.gemm is not None:
            return f"pointwise: the GEMM mapper's answer; {self.gemm.optimality()}"
        if self.optimal:
            return f"optimal within the space ({self.simulated:,} of {self.legal:,} legal candidates simulated)"
        return (f"within {100 * self.gap:.1f} % of the best of the space (budget: {self.simulated:,} of "
                f"{self.legal:,} legal candidates simulated; the best unsimulated bound is "
                f"{self.unexplored_bound_cycles:,.0f} cycles)")
