"""A mapping search's result as the cache's disk tier stores it: JSON for the op, the chosen
mapping and the candidate tables, plain arrays for the chosen design's engine result; the design
itself is rebuilt from the op and mapping (the builder is deterministic), never pickled."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..cache import Codec, dataset_from_plain, dataset_to_plain
from .space import Mapping, Matmul


@dataclass
class SearchResult:
    """The chosen mapping, its simulated cycles, and every ranked and rejected candidate."""

    op: Matmul
    best: Mapping
    best_cycles: int
    ranked: list[dict]  # legal candidates by lower bound (simulated ones carry their cycles)
    rejected: list[dict]  # the best-bounded illegal candidates with their reasons
    enumerated: int
    legal: int
    rejected_by_reason: dict[str, int]
    best_design: object = None  # the Design of ``best``
    best_simulation: object = None  # its engine result (a Dataset with one design), for reuse
    best_lowered: object = None  # its lowered tables (None when read from disk: lower the design)
    simulated: int = 0  # candidates whose cycles are known (one that builds an earlier one's design counts too)
    # smallest lower bound of the legal candidates left unsimulated (inf: none left)
    unexplored_bound_cycles: float = float("inf")

    @property
    def optimal(self) -> bool:
        """No unsimulated candidate can be faster: the answer is the best of the space."""
        return self.unexplored_bound_cycles >= self.best_cycles

    @property
    def gap(self) -> float:
        """At most how much faster than the answer an unsimulated candidate may be, as a fraction
        of the answer's cycles (0 when optimal)."""
        return max(0.0, 1.0 - self.unexplored_bound_cycles / self.best_cycles)

    def optimality(self) -> str:
        """One line for reports: optimal, or the gap left by a budget."""
        if self.optimal:
            return f"optimal within the space ({self.simulated:,} of {self.legal:,} legal candidates simulated)"
        return (f"within {100 * self.gap:.1f} % of the best of the space (budget: {self.simulated:,} of "
                f"{self.legal:,} legal candidates simulated; the best unsimulated bound is "
                f"{self.unexplored_bound_cycles:,.0f} cycles)")


_TUPLES = ("tile",)  # candidate fields that are tuples (JSON keeps them as lists)


def encode(result) -> tuple[dict, dict[str, np.ndarray]]:
    simulation, arrays = dataset_to_plain(result.best_simulation, "simulation")
    plain = {"op": asdict(result.op), "best": asdict(result.best), "best_cycles": result.best_cycles,
             "ranked": result.ranked, "rejected": result.rejected, "enumerated": result.enumerated,
             "legal": result.legal, "rejected_by_reason": result.rejected_by_reason, "simulation": simulation,
             "simulated": result.simulated, "unexplored_bound_cycles": result.unexplored_bound_cycles}
    return plain, arrays


def decode(plain: dict, arrays: dict[str, np.ndarray], arch):
    from .design import matmul_design

    op = Matmul(**plain["op"])
    best = Mapping(**_tuples(plain["best"]))
    return SearchResult(op, best, plain["best_cycles"], [_tuples(r) for r in plain["ranked"]],
                        [_tuples(r) for r in plain["rejected"]], plain["enumerated"], plain["legal"],
                        plain["rejected_by_reason"], matmul_design(op, best, arch),
                        dataset_from_plain(plain["simulation"], arrays, "simulation"), None,
                        plain["simulated"], plain["unexplored_bound_cycles"])


def _tuples(row: dict) -> dict:
    return {k: tuple(v) if k in _TUPLES else v for k, v in row.items()}


CODEC = Codec(encode, decode)
