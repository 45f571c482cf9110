"""How many columns a vector op streams through, chosen like every op kind's mapping: the column
counts its design takes (1, 2, 4, ... and the arch's), simulated best bound first by
``branch_bound`` until no bound left beats the best objective (cycles plus, inside a graph, the
weighted control that sets the design up).

Spread over every column, a small vector op spends more on its set-up than on its data: each
column adds two shim tasks, a wait, mem-tile BDs, chains and locks (the tiny decode's norm: under
0.1 us of data behind 12 us of set-up on 8 columns). A pinned column count is not searched, and an
op with an operand on chip keeps its fused neighbours' columns (the caller does not search it)."""
from __future__ import annotations

from dataclasses import replace

from ..arch import Arch
from ..cache import CACHE, Region
from .branch_bound import LegalInOrder, branch_and_bound, control_cycles
from .dispatch import ControlCounts, control_counts
from .vector import VectorOp, lower_bound_cycles, used_columns, vector_design

REGION = "vector_columns"
CACHE.add_region(Region(REGION, 4096))


def column_choices(arch: Arch) -> list[int]:
    return sorted({c for c in (1, 2, 4, 8, 16) if c <= arch.columns} | {arch.columns})


def search_vector_columns(op: VectorOp, arch: Arch, control_weight=0.0) -> int:
    """The column count of ``op`` (its ``cols`` ignored) with the least objective; ties go to more
    columns (the design as it was before the search). Kept in the one cache (memory only)."""
    key = (replace(op, name="", cols=None), repr(arch), control_weight)
    found = CACHE.get(REGION, key)
    if found is None:
        found = _search(replace(op, name="", cols=None), arch, control_weight)
        CACHE.put(REGION, key, found)
    return found


def _search(op: VectorOp, arch: Arch, control_weight) -> int:
    one_column = control_counts(vector_design(replace(op, cols=1), arch))  # each used column sets up alike
    legal = []
    for cols in sorted(column_choices(arch), reverse=True):
        one = replace(op, cols=cols)
        counts = ControlCounts(*(n * used_columns(one, arch) for n in one_column))
        bound = lower_bound_cycles(one, arch)
        legal.append({"cols": cols, "lower_bound_cycles": bound,
                      "objective_bound": bound + control_cycles(counts, arch, control_weight)})
    legal.sort(key=lambda r: (r["objective_bound"], -r["cols"]))
    space = _Space(op, arch, legal)
    best, _, _ = branch_and_bound(space, space.take(1, float("inf")), None, control_weight=control_weight)
    return best["cols"]


class _Space(LegalInOrder):
    group = "vector column search"
    bound = "objective_bound"

    def __init__(self, op: VectorOp, arch: Arch, legal: list[dict]):
        super().__init__(f"vector op {op.name}", legal)
        self.op, self.arch = op, arch

    def design_of(self, row: dict):
        return vector_design(replace(self.op, cols=row["cols"]), self.arch)  # built only when taken

    def tie(self, row: dict) -> tuple:
        return (-row["cols"],)
