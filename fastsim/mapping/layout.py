"""The one record of how a graph is laid out (``Layout``): what the Python API (``LlmStudy``), the
overlay and as-built files (``Overlay``), sweep specs and plans pin about fusion, dispatch cuts,
columns, dataflow, datapath, L1 tiles, L2 residency, host ops, weight residency and the
implementation facts (buffers, K panels, cast and dequant launches, who wrote each kernel, ...).
One validator (``Layout.problems``) checks every field, wherever it came from; ``over`` lays one
layout on another (an overlay on a study). The evaluator reads it as ``GraphPins``
(``fastsim.evaluation``), the mapper's per-op search as ``mapping.Pins``: both are derived from it,
never declared again by hand.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..arch import MOST
from ..errors import Problems
from ..kernel_model.matmul import CODEGENS
from .fusion import GROUP_KINDS, MODES, PIPELINABLE, valid_fusion
from .space import DATAFLOWS, K_PANEL_MAX, L2_CHOICES, SPLITS

# per-op tables: op name, fusion pattern kind or op class -> value (the first that matches wins)
TABLES = ("columns", "dataflow", "datapath", "tiles", "l2", "rows", "split", "buffers", "c_buffers", "k_panel", "host",
          "cast_launch", "dequant_launch", "codegen")
# tables that state what the implementation does (never searched: an empty one pins nothing, and
# is not an open choice); every other table left empty is searched
FACT_TABLES = ("buffers", "c_buffers", "k_panel", "host", "cast_launch", "dequant_launch", "codegen")
# tables the front end reads to shape the graph (host ops, added cast launches), not the mapper
FRONT_END_TABLES = ("host", "cast_launch", "dequant_launch")
FACTS = ("causal_halving", "row_major_ddr", "resident_programs", "launches_reconfigure")  # implementation facts (bool or None: as the run says)
RESIDENCIES = ("streamed", "static")
# a pin beyond any part (``arch.MOST``); the arch's own counts are the evaluator's check
# (``GraphPins.check``) and the mapping pins' (``space.MATMUL_PINS``)
MAX_COLUMNS, MAX_ROWS = MOST["columns"], MOST["rows"]


@dataclass(frozen=True, kw_only=True)
class Layout:
    """How a graph is laid out. ``None`` and empty tables are open: searched (a fact left None is
    as the run says). Keywords only: a record of many optional pins, none of which a position names."""

    fusion: str = "auto"  # auto (searched), none, groups, chain, or pattern kinds joined by "+"
    cuts: tuple[int, ...] | None = None  # dispatch boundaries after these layers; () one dispatch; None: searched
    columns: dict = field(default_factory=dict)  # group kind, op class or op name -> columns
    dataflow: dict = field(default_factory=dict)  # op class or op name -> ws | is | os
    datapath: dict = field(default_factory=dict)  # op class or op name -> MAC datapath key
    tiles: dict = field(default_factory=dict)  # op class or op name -> (m, k, n) of one kernel call
    l2: dict = field(default_factory=dict)  # op class or op name -> "", "a", "b" or "ab"
    rows: dict = field(default_factory=dict)  # op class or op name -> compute rows per column it runs on
    split: dict = field(default_factory=dict)  # op class or op name -> how M and N split (2d, 2dt, n, m)
    # op class or op name -> 1: A and B single-buffered (an implementation that double-buffers
    # nothing); 2: double-buffered where it fits (the default). An implementation fact, never searched
    buffers: dict = field(default_factory=dict)
    # op class or op name -> 1: each core's C tile single-buffered (it waits for each drain); an
    # implementation fact, never searched
    c_buffers: dict = field(default_factory=dict)
    # op class or op name -> L1 K tiles one mem-tile buffer of A and B stages (os; mlir-air's
    # tile_k_l2 / tile_k_l1); an implementation fact, never searched (1 unless pinned)
    k_panel: dict = field(default_factory=dict)
    residency: str | None = None  # weights "streamed" from DDR or "static" in on-chip memory; None: open
    host: dict = field(default_factory=dict)  # op name or class -> seconds per instance on the host CPU
    # matmul op name or class -> true: C leaves as an f32 scratch and a launch of its own casts it to
    # the activations' dtype (mlir-air's fused-cast); an implementation fact
    cast_launch: dict = field(default_factory=dict)
    # matmul op name or class -> true: its packed weights are dequantized to bf16 in DDR by a launch
    # of its own each pass, and it reads those (FastFlowLM's prefill); an implementation fact
    dequant_launch: dict = field(default_factory=dict)
    # matmul op name or class -> who wrote its kernel: "external" (a hand-written mm.cc, the default)
    # or "direct" (mlir-air's compiler-generated matmul); an implementation fact
    codegen: dict = field(default_factory=dict)
    # whether causal attention skips the tiles above the diagonal: an implementation fact
    causal_halving: bool | None = None
    # whether the tensors lie row-major in DDR and are read in tile rows: an implementation fact
    row_major_ddr: bool | None = None
    # whether a dispatch is one program whose mem-tile and core programs stay resident (a fused
    # module: each op after the first re-runs on new operands) rather than each op's design set up
    # in turn: an implementation fact
    resident_programs: bool | None = None
    # whether each op (or fusion group) is a launch of an ELF whose load_pdi rewrites the array's
    # configuration inline (``Arch.launch_reconfiguration_s`` per launch): an implementation fact
    launches_reconfigure: bool | None = None

    def problems(self, p: Problems, layers: int | None = None, scalars: bool = True, dotted: bool = False) -> None:
        """Every field's problem into ``p``: the one check of a layout, wherever it was written.
        ``layers``: the graph's layer count, which bounds the cuts (None: not known here);
        ``scalars=False`` leaves residency and the facts to a caller that declares them as
        parameters of its own (``LlmStudy``: command-line options, never open). A per-op pin is
        named as its writer spelled it: ``tiles.gemm`` in a TOML file (``dotted``), else ``tiles[gemm]``."""
        p.check(isinstance(self.fusion, str) and valid_fusion(self.fusion), "fusion", self.fusion,
                f"one of {MODES} or group kinds joined by + ({'+'.join(GROUP_KINDS)}), "
                f"KIND:pipeline for {', '.join(PIPELINABLE)}")
        if scalars:
            p.check(self.residency in (None, *RESIDENCIES), "residency", self.residency, " or ".join(RESIDENCIES))
            for name in FACTS:
                value = getattr(self, name)
                p.check(value is None or isinstance(value, bool), name, value, "true or false")  # 1 == True: not a bool
        # programs that stay resident and launches that rewrite them contradict each other
        p.check(not (self.resident_programs is True and self.launches_reconfigure is True), "launches_reconfigure",
                True, "not with resident_programs (one keeps the cores' programs loaded, the other rewrites them "
                "at every launch)")
        if self.cuts is not None and p.check(isinstance(self.cuts, (tuple, list)), "cuts", self.cuts,
                                             "a list of layer indices (a dispatch ends after each); () for one "
                                             "dispatch, None for the searched cut"):
            for c in self.cuts:
                p.number("cuts", c, integer=True, lo=0, hi=None if layers is None else layers - 2,
                         unit="(layer indices)")
        for name in TABLES:
            table = getattr(self, name)
            if p.check(isinstance(table, dict), name, table, "a table: op class or op name -> value"):
                for key, value in table.items():
                    _check_pin(p, name, f"{name}.{key}" if dotted else f"{name}[{key}]", value)

    def over(self, base: "Layout") -> "Layout":
        """``base`` laid out as this layout says: its tables' pins added to, and winning over,
        ``base``'s; each open (None, "auto") choice left as ``base`` has it."""
        out = {name: {**getattr(base, name), **getattr(self, name)} for name in TABLES}
        out["fusion"] = base.fusion if self.fusion == "auto" else self.fusion
        for name in ("residency", "cuts", *FACTS):
            mine = getattr(self, name)
            out[name] = getattr(base, name) if mine is None else tuple(mine) if name == "cuts" else mine
        return Layout(**out)

    def fields(self) -> dict:
        """The layout's fields by name (as ``replace`` takes them)."""
        return {f.name: getattr(self, f.name) for f in fields(Layout)}

    def open_choices(self) -> list[str]:
        """What this layout leaves to the search."""
        out = [] if self.fusion != "auto" else ["fusion"]
        out += [] if self.cuts is not None else ["cuts"]
        out += [name for name in TABLES if name not in FACT_TABLES and not getattr(self, name)]
        out += [] if self.residency is not None else ["residency"]
        return out

    def table(self) -> dict:
        """The layout as a TOML table: what it pins, nothing it leaves open but fusion and the
        columns and dataflow tables (written, empty or not, so a saved overlay shows them)."""
        out = {"fusion": self.fusion, "columns": dict(self.columns), "dataflow": dict(self.dataflow)}
        if self.residency is not None:
            out["residency"] = self.residency
        if self.cuts is not None:
            out["cuts"] = list(self.cuts)
        for name in TABLES:
            if name not in out and getattr(self, name):
                out[name] = {k: list(v) if name == "tiles" else v for k, v in getattr(self, name).items()}
        out.update({name: getattr(self, name) for name in FACTS if getattr(self, name) is not None})
        return out


def layout_of(record) -> Layout:
    """The layout fields of ``record`` (an ``LlmStudy``, an ``Overlay``: anything that has them)."""
    return Layout(**{f.name: getattr(record, f.name) for f in fields(Layout)})


def _check_pin(p: Problems, name: str, where: str, value) -> None:
    """One per-op pin's value, named ``where`` (whether the arch has a datapath, or the columns,
    is the evaluator's check)."""
    if name == "dataflow":
        p.check(isinstance(value, str) and value in DATAFLOWS, where, value, f"one of {DATAFLOWS}")
    elif name == "columns":
        p.number(where, value, integer=True, lo=1, hi=MAX_COLUMNS)
    elif name == "datapath":
        p.check(isinstance(value, str), where, value, "a datapath name (e.g. bf16, bfp16, int8)")
    elif name == "tiles":
        p.check(isinstance(value, (tuple, list)) and len(value) == 3 and all(
            isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 4096 for x in value),
            where, value, "three sizes (m, k, n), each in 1..4096")
    elif name == "l2":
        p.check(value in L2_CHOICES, where, value, "'', a, b or ab")
    elif name == "rows":
        p.number(where, value, integer=True, lo=1, hi=MAX_ROWS)
    elif name == "buffers":
        p.check(value in (1, 2) and not isinstance(value, bool), where, value,
                "1 (A and B single-buffered) or 2 (double-buffered where they fit)")
    elif name == "c_buffers":
        p.check(value in (1, 2) and not isinstance(value, bool), where, value,
                "1 (each core's C tile single-buffered) or 2")
    elif name == "split":
        p.check(value in SPLITS, where, value, f"one of {SPLITS}")
    elif name == "cast_launch":
        p.check(value is True, where, value, "true (the op's C leaves as an f32 scratch a cast launch converts)")
    elif name == "dequant_launch":
        p.check(value is True, where, value, "true (a launch of its own dequantizes the op's weights to bf16 in DDR)")
    elif name == "codegen":
        p.check(value in CODEGENS, where, value, f"one of {CODEGENS} (a hand-written mm.cc, or mlir-air's "
                "compiler-generated matmul)")
    elif name == "k_panel":
        p.number(where, value, integer=True, lo=1, hi=K_PANEL_MAX, unit="(L1 K tiles per mem-tile buffer)")
    else:
        p.number(where, value, lo=0, hi=1000, unit="s per op instance on the host CPU (given, not simulated)")
