"""One op of a graph as it runs (``Placed``): what every op kind's mapper is asked to design, and
the weight its search gives a candidate's control there."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..arch import Arch
from ..errors import ConfigError
from ..graph import Op
from .dispatch import ControlWeight, charged_runs
from .fusion import OnChip


@dataclass(frozen=True)
class Placed:
    """One op as it runs: its (possibly token-blocked) shape, its on-chip hand-offs, and the fusion
    pattern it belongs to whether fused or not (``kind``: pins and overlays may name it)."""

    op: Op
    chip: OnChip = OnChip()
    pipelined: tuple = ()  # (group kind, columns, first column, blocks) when its group is a pipeline
    kind: str = ""
    # (tile, datapath) a matmul is held to where its dispatch shares kernels (``evaluation.sharing``)
    kernel: tuple = ()
    # times its design is set up in its dispatch: once, or once per token block where a fused group
    # runs block by block (its ops take turns); a pipeline's blocks run inside one design
    runs: int = 1

    @property
    def reruns(self) -> int:
        """Times its design is re-run on new operands after its set-ups: each gathered repeat (an
        expert) beyond them; strided repeats (heads, sequences) are iterations of one task."""
        return self.op.repeat - self.runs if self.op.gathered else 0

    @cached_property
    def key(self) -> tuple:
        """Instances with equal keys have identical designs (simulated once): their repeats and
        runs are in it too, as they weigh the search's control (``control_weight``). An evaluation
        looks its ops' results up thousands of times: the key and its hash are made once."""
        return _HashedKey(self.op.shape_key + (self.op.name, self.kind, self.chip.x, self.chip.y,
                                               self.chip.window_bytes, self.pipelined, self.kernel,
                                               self.op.repeat, self.op.gathered, self.runs))


class _HashedKey(tuple):
    """A tuple whose hash is computed once (a plain tuple rehashes its nested dataclasses on every
    dict lookup); equal to, and printed as, the plain tuple."""

    def __new__(cls, items):
        key = super().__new__(cls, items)
        key._hash = tuple.__hash__(key)
        return key

    def __hash__(self):
        return self._hash

    def __reduce__(self):  # string hashes differ between processes: another one hashes anew
        return _HashedKey, (tuple(self),)


def control_weight(p: Placed, pins):
    """The weight of a candidate's control in ``p``'s search (``branch_bound.objective``), as
    ``Evaluation.total`` charges it per simulated run of its design: ``runs`` set-ups for ``repeat``
    runs, and where its repeats are gathered (experts) a re-run on new operands for each other
    run (every run a re-run where the dispatch's programs stay resident: ``charged_runs``); 0 where
    the graph's pins (``evaluation.GraphPins``) rank by cycles alone (``search_control``)."""
    if not pins.search_control:
        return 0.0
    w = charged_runs(p.runs, p.reruns, pins.resident_programs)
    return ControlWeight(w.setups / p.op.repeat, w.reruns / p.op.repeat)


def columns_pin(p: Placed, pins, arch: Arch) -> int | None:
    """The column count ``pins``' ``columns`` table gives ``p`` (None: open), at most the arch's."""
    cols = pins.pinned(pins.columns, p.op.name, p.kind, p.op.op_class)
    if cols is not None and cols > arch.columns:
        raise ConfigError([f"columns[{p.op.name}] = {cols}: the arch has {arch.columns} columns"], "mapping")
    return cols
