"""A mapping search's result as the cache's disk tier stores it: JSON for the op, the chosen
mapping and the candidate tables, plain arrays for the chosen design's engine run (the engine's
outputs and their ``DesignArrays``: no Dataset is built only to be stored); the design itself is
rebuilt from the op and mapping (the builder is deterministic), never pickled."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ..cache import Codec
from ..results import DesignArrays
from .search_result import SearchResult
from .space import Mapping, Matmul


_TUPLES = ("tile",)  # candidate fields that are tuples (JSON keeps them as lists)
_SCALARS = ("cycles", "status")  # DesignArrays fields kept in the JSON; the rest are arrays


def encode(result) -> tuple[dict, dict[str, np.ndarray]]:
    from ..simulation import KeptRun

    run = result.best_run
    if not isinstance(run, KeptRun):  # ``cache._save`` then leaves it unstored
        raise TypeError(f"a search's answer is stored with its engine run, not {type(run).__name__}")
    outputs, numbers = run.stored()
    arrays = {f"outputs.{name}": a for name, a in outputs.items()}
    arrays.update({f"arrays.{name}": getattr(numbers, name) for name in DesignArrays._fields if name not in _SCALARS})
    simulation = {name: getattr(numbers, name) for name in _SCALARS}
    plain = {"op": asdict(result.op), "best": asdict(result.best), "best_cycles": result.best_cycles,
             "ranked": result.ranked, "rejected": result.rejected, "enumerated": result.enumerated,
             "legal": result.legal, "rejected_by_reason": result.rejected_by_reason, "simulation": simulation,
             "simulated": result.simulated, "unexplored_bound_cycles": result.unexplored_bound_cycles,
             "best_control_cycles": result.best_control_cycles}
    return plain, arrays


def decode(plain: dict, arrays: dict[str, np.ndarray], arch):
    from ..simulation import StoredRun
    from .design import matmul_design

    op = Matmul(**plain["op"])
    best = Mapping(**_tuples(plain["best"]))
    design = matmul_design(op, best, arch)
    outputs = {name.split(".", 1)[1]: a for name, a in arrays.items() if name.startswith("outputs.")}
    numbers = DesignArrays(**{name: plain["simulation"][name] if name in _SCALARS else arrays[f"arrays.{name}"]
                              for name in DesignArrays._fields})
    return SearchResult(op, best, plain["best_cycles"], [_tuples(r) for r in plain["ranked"]],
                        [_tuples(r) for r in plain["rejected"]], plain["enumerated"], plain["legal"],
                        plain["rejected_by_reason"], design, StoredRun(design, outputs, numbers), None,
                        plain["simulated"], plain["unexplored_bound_cycles"],
                        best_control_cycles=plain["best_control_cycles"])


def _tuples(row: dict) -> dict:
    return {k: tuple(v) if k in _TUPLES else v for k, v in row.items()}


CODEC = Codec(encode, decode)
