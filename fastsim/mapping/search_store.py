"""A mapping search's result as the cache's disk tier stores it: JSON for the op, the chosen
mapping and the candidate tables, plain arrays for the chosen design's engine result; the design
itself is rebuilt from the op and mapping (the builder is deterministic), never pickled."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ..cache import Codec, dataset_from_plain, dataset_to_plain
from .search_result import SearchResult
from .space import Mapping, Matmul


_TUPLES = ("tile",)  # candidate fields that are tuples (JSON keeps them as lists)


def encode(result) -> tuple[dict, dict[str, np.ndarray]]:
    simulation, arrays = dataset_to_plain(result.best_simulation, "simulation")
    plain = {"op": asdict(result.op), "best": asdict(result.best), "best_cycles": result.best_cycles,
             "ranked": result.ranked, "rejected": result.rejected, "enumerated": result.enumerated,
             "legal": result.legal, "rejected_by_reason": result.rejected_by_reason, "simulation": simulation,
             "simulated": result.simulated, "unexplored_bound_cycles": result.unexplored_bound_cycles,
             "best_control_cycles": result.best_control_cycles}
    return plain, arrays


def decode(plain: dict, arrays: dict[str, np.ndarray], arch):
    from .design import matmul_design

    op = Matmul(**plain["op"])
    best = Mapping(**_tuples(plain["best"]))
    return SearchResult(op, best, plain["best_cycles"], [_tuples(r) for r in plain["ranked"]],
                        [_tuples(r) for r in plain["rejected"]], plain["enumerated"], plain["legal"],
                        plain["rejected_by_reason"], matmul_design(op, best, arch),
                        dataset_from_plain(plain["simulation"], arrays, "simulation"), None,
                        plain["simulated"], plain["unexplored_bound_cycles"],
                        best_control_cycles=plain["best_control_cycles"])


def _tuples(row: dict) -> dict:
    return {k: tuple(v) if k in _TUPLES else v for k, v in row.items()}


CODEC = Codec(encode, decode)
