"""What a user fixes about how a graph runs (``GraphPins``); everything left open is searched."""
from __future__ import annotations

from dataclasses import dataclass

from ..arch import Arch
from ..dtypes import DTYPE_BYTES
from ..errors import Problems
from ..graph import OpGraph
from ..mapping.layout import FRONT_END_TABLES, TABLES as LAYOUT_TABLES, Layout
from ..mapping.mappers import TABLE_KINDS
from ..mapping.pins import Pins


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
    datapath: tuple[tuple[str, str], ...] = ()  # as built: the MAC datapath of an op
    tiles: tuple[tuple[str, tuple[int, int, int]], ...] = ()  # as built: the L1 tile of an op's calls
    l2: tuple[tuple[str, str], ...] = ()  # as built: operands an op holds in the mem tiles
    rows: tuple[tuple[str, int], ...] = ()  # as built: compute rows per column of an op
    buffers: tuple[tuple[str, int], ...] = ()  # as built: 1 when an op double-buffers nothing
    split: tuple[tuple[str, str], ...] = ()  # as built: how an op's M and N split (2dt: mlir-air's herds)
    c_buffers: tuple[tuple[str, int], ...] = ()  # as built: 1 when an op's C tile is single-buffered
    k_panel: tuple[tuple[str, int], ...] = ()  # as built: L1 K tiles a mem-tile buffer of an op stages
    codegen: tuple[tuple[str, str], ...] = ()  # as built: who wrote an op's matmul kernel (external, direct)
    residency: str = "streamed"  # or "static": weights preloaded once per dispatch (ws ops)
    fusion: str = "auto"
    cuts: tuple[int, ...] | None = None
    noop: tuple[str, ...] = ()
    kernel_efficiency: float | None = None  # None: the arch's measured figure per datapath
    kernel_overhead_cycles: int = 0  # per matmul kernel call, on top of its MAC cycles (conv kernels refuse it)
    stream_split: str = "auto"  # auto: proportional for element-wise ops, searched for matmuls
    pipelines: bool = False
    static_weights_resident: bool = False
    # candidates each op's mapping search simulates (its best-bounded first); None: until the
    # answer is proven the best of its space (exact, slower); each op reports its optimality gap
    search_budget: int | None = 3
    # how the host submits a pass's dispatches: "single" commands or one "chained" run list
    # (``mapping.dispatch.host_seconds_per_dispatch``)
    dispatch_commands: str = "single"
    # the graph's tensors lie row-major in DDR, read in tile rows (``Matmul.row_major_ddr``): a
    # standalone GEMM's operands at the API boundary. False: a deployment lays each out as it reads it
    row_major_ddr: bool = False
    # a dispatch is one resident program: its ops after the first re-run instead of being set up
    # (``mapping.dispatch.control_instructions``; ``Layout.resident_programs``)
    resident_programs: bool = False
    # each op a launch whose load_pdi reconfigures the array (``Layout.launches_reconfigure``)
    launches_reconfigure: bool = False
    # the arch the searched mappings are chosen for (None: the one it runs on). A deployed design
    # keeps its mappings when the part runs with less DDR bandwidth (background traffic takes a
    # share): search on the nominal arch, build and simulate on the one given to ``evaluate``
    mapped_on: Arch | None = None
    # as built: an op's other mapping pins (``mapping.Pins``: a matmul's rows, K split, buffers, ...;
    # a conv's split, columns, rows, rpc, kb, weights, cb); their set fields override the tables above
    op_pins: tuple[tuple[str, Pins], ...] = ()
    # as built: the dtype a conv op writes (unpinned: int8 for a one-byte output, else bf16 for an
    # int8 conv, else its compute dtype; ``conv_search.conv_of``): a standalone conv's own out_dtype
    out_dtype: tuple[tuple[str, str], ...] = ()
    # each op's mapping search: the candidates it simulates first (its best-bounded ones) and the
    # ranked and rejected ones it keeps for reports. A standalone GEMM searches as ``map gemm`` lists (6, 50)
    search_top: int = 3
    search_keep: int = 0
    # each op's mapping search ranks a candidate by its cycles plus its weighted control: the
    # instructions that set its design up after another op's in the dispatch (``placed.control_weight``),
    # so that a slower op never wins on fewer mem-tile BDs picked by cycles alone. False: by cycles
    # alone, as a one-op workload (a dispatch of its own: its set-up is the dispatch's)
    search_control: bool = True

    @classmethod
    def of(cls, layout: Layout, **rest) -> "GraphPins":
        """The evaluator's pins of ``layout`` (``mapping.layout``, the one layout record): its tables as
        (key, value) pairs, an open residency streamed, an open DDR layout as each design reads it;
        ``rest``: the pins a layout does not hold (dtype, ablation, search budget, ...). The host
        table and causal halving are the front end's (they shape the graph, not its mapping)."""
        tables = {name: tuple((k, tuple(v) if name == "tiles" else v) for k, v in getattr(layout, name).items())
                  for name in LAYOUT_TABLES if name not in FRONT_END_TABLES}
        return cls(**tables, residency=layout.residency or "streamed", fusion=layout.fusion,
                   cuts=None if layout.cuts is None else tuple(layout.cuts), row_major_ddr=bool(layout.row_major_ddr),
                   resident_programs=bool(layout.resident_programs),
                   launches_reconfigure=bool(layout.launches_reconfigure),
                   **rest)

    def pinned(self, table: tuple, name: str, kind: str, op_class: str):
        """A pin by op name, else by fusion pattern kind (overlays place groups), else by class."""
        found = dict(table)
        return next((found[key] for key in (name, kind, op_class) if key in found), None)

    def check(self, graph: OpGraph, kinds: tuple[str, ...]) -> None:
        """Every pin must select something of this graph: a pin that names no op, fusion pattern
        kind or op class of it (a typo, another workload's op) would be silently ignored, and a
        table's pin must reach an op kind it applies to (as the kinds' mappers declare them,
        ``mappers.TABLE_KINDS``: a dataflow pin on vector ops, which stream, is refused).
        ``kinds``: each op's pattern kind."""
        p = Problems("pins")
        for what, for_kinds in TABLE_KINDS.items():
            for key, _ in getattr(self, what):
                chosen = [op for op, kind in zip(graph.ops, kinds) if key in (op.name, kind, op.op_class)]
                if not chosen:
                    p.add(f"{what}[{key}]", key, "names no op, fusion group kind or op class of this workload: one of "
                          + ", ".join(sorted({op.name for op in graph.ops} | set(kinds) - {""}
                                             | {op.op_class for op in graph.ops})))
                elif not any(op.kind in for_kinds for op in chosen):
                    p.add(f"{what}[{key}]", key, f"selects only {' and '.join(sorted({op.kind for op in chosen}))} "
                          f"ops: a {what} pin is for {' and '.join(for_kinds)} ops")
        for key, value in self.op_pins:
            p.check(isinstance(value, Pins), f"op_pins[{key}]", value, "a mapping.Pins")
        for key, value in self.out_dtype:
            p.check(value in DTYPE_BYTES, f"out_dtype[{key}]", value, f"one of {sorted(DTYPE_BYTES)}")
        p.number("search_top", self.search_top, integer=True, lo=1, hi=1000)
        p.number("search_keep", self.search_keep, integer=True, lo=0, hi=10_000)
        p.raise_if_any()

    def op_pins_of(self, name: str, kind: str, op_class: str) -> Pins:
        """An op's ``op_pins`` (no pin: ``Pins()``)."""
        return self.pinned(self.op_pins, name, kind, op_class) or Pins()
