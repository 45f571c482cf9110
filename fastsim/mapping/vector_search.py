"""How many columns a vector op streams through, chosen like every op kind's mapping: the column
counts its design takes (1, 2, 4, ... and the arch's), simulated best bound first by
``branch_bound`` until no bound left beats the best objective (cycles plus, inside a graph, the
weighted control that sets the design up).

Spread over every column, a small vector op spends more on its set-up than on its data: each
column adds two shim tasks, a wait, mem-tile BDs, chains and locks (the tiny decode's norm: under
0.1 us of data behind 12 us of set-up on 8 columns). A pinned column count is not searched, and an
op with an operand on chip keeps its fused neighbours' columns (the caller does not search it).

``MAPPER`` is the vector kind's door for the evaluator: a graph op becomes a ``VectorOp`` on the
columns this search (or a pin, or its pipeline stage) gives it."""
from __future__ import annotations

from dataclasses import replace

from ..arch import Arch
from ..cache import CACHE, Region
from ..graph import VECTOR
from .branch_bound import LegalInOrder, branch_and_bound, control_cycles
from .dispatch import ControlCounts, control_counts
from .op_mapper import KindTraits, Mapper, NoopTwin, OpDesign
from .placed import Placed, columns_pin, control_weight
from .vector import (VectorOp, lower_bound_cycles, lowered_vector_design, lowered_vector_shape, used_columns,
                     vector_design)

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

    def simulate(self, rows: list[dict], cap_cycles: int | None) -> list[dict]:
        """Each row's tables as the op's own are kept (``lowered_vector_shape``: checked, kept by
        shape, so the op the search answers for lowers nothing again), all simulated in one engine
        call, stopping past ``cap_cycles``; each row gets its ``design``, ``status`` and ``cycles``."""
        from ..kernels import layout as L
        from ..lower import capped
        from ..results import STATUS_NAMES
        from ..simulation import run_batch

        tables = [lowered_vector_shape(replace(self.op, cols=r["cols"]), self.arch) for r in rows]
        res = run_batch([capped(lw, cap_cycles, r["lower_bound_cycles"]) for lw, r in zip(tables, rows)]).outputs["res"]
        for i, (r, lw) in enumerate(zip(rows, tables)):
            r["design"], r["status"], r["cycles"] = lw.design, STATUS_NAMES[int(res[i, L.R_STATUS])], int(res[i, L.R_CYCLES])
        return rows

    def tie(self, row: dict) -> tuple:
        return (-row["cols"],)


def vector_op_design(p: Placed, arch: Arch, pins, noop: bool, at: tuple[int, int] | None = None,
                     validate: bool = True) -> OpDesign:
    """A vector op streamed over the columns a pin or its pipeline stage gives it, else the ones
    ``search_vector_columns`` picks for the op as it really computes (NOOP or not); an op with an
    operand on chip keeps its fused neighbours' columns; a deployed layout (``pins.mapped_on``)
    keeps the columns searched on the part it was mapped for. Lowering validates: on-chip buffers
    must fit next to the stream buffers, said now."""
    op = p.op
    cols, col0 = at if at else (columns_pin(p, pins, arch), None)
    spec = VectorOp(m=op.m, n=op.n, x_bytes=op.x.elem_bytes, y_bytes=op.y.elem_bytes,
                    vector_cycles_per_elem=op.vector_cycles_per_elem, x_inputs=op.x_inputs, noop=noop, cols=cols,
                    name=op.name, x_on_chip=p.chip.x, y_on_chip=p.chip.y,
                    onchip_window_bytes=p.chip.window_bytes, col0=col0 or 0,
                    stream_split="proportional" if pins.stream_split == "auto" else pins.stream_split)
    weight = control_weight(p, pins)
    if cols is None and weight and not (p.chip.x or p.chip.y):
        spec = replace(spec, cols=search_vector_columns(replace(spec, noop=False), pins.mapped_on or arch, weight))
    design, lowered = lowered_vector_design(spec, arch)
    twin = None if noop else NoopTwin(lambda: vector_design(replace(spec, noop=True), arch))
    return OpDesign(design, "stream", None, frozenset({("vector", op.op_class)}), twin, lowered)


MAPPER = Mapper(VECTOR, KindTraits(ddr_edges=False, kernel_size="vector", first_mm2s="x"), vector_op_design)
