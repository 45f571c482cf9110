"""What a user fixes about how a graph runs; everything left open is searched."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GraphPins:
    """Pins of one graph evaluation. ``dataflow``/``columns``: (key, value) pairs whose key names
    an op, a fusion pattern kind or an op class (the first that matches wins, in that order);
    ``fusion``: auto, none, groups, chain or pattern kinds joined by "+" (``mapping.fusion``);
    ``cuts``: dispatch cuts after these layers (None: the greedy feasible cut); ``noop``: op
    classes (and "cast") replaced by data-only passes; ``pipelines``: also try fused groups as
    spatial pipelines (worth it when many tokens flow through them, as in prefill);
    ``static_weights_resident``: one dispatch keeps static weights on chip from one pass to the
    next (decode steps), so they are loaded once, not per pass."""

    compute_dtype: str = "bf16"
    dataflow: tuple[tuple[str, str], ...] = ()
    columns: tuple[tuple[str, int], ...] = ()
    residency: str = "streamed"  # or "static": weights preloaded once per dispatch (ws ops)
    fusion: str = "auto"
    cuts: tuple[int, ...] | None = None
    noop: tuple[str, ...] = ()
    kernel_efficiency: float | None = None  # None: the arch's measured figure per datapath
    kernel_overhead_cycles: int = 0  # per kernel call, on top of the MAC cycles
    stream_split: str = "auto"  # auto: proportional for element-wise ops, searched for matmuls
    pipelines: bool = False
    static_weights_resident: bool = False

    def pinned(self, table: tuple, name: str, kind: str, op_class: str):
        """A pin by op name, else by fusion pattern kind (overlays place groups), else by class."""
        found = dict(table)
        return found.get(name) or found.get(kind) or found.get(op_class)
