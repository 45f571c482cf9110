"""Overlays and as-built descriptions: how a model is laid out, as a plain object that prints and
stores as TOML.

An overlay says, for one regime, how the model is laid out: the fusion mode, how many columns each
fused group kind, op class or op name runs on, and dataflow pins. An as-built description is the
same file saying everything a real implementation fixes, so that fastsim simulates that design and
not its own searched optimum (``docs/as_built.md``)::

    [model]                      # how the implementation stores the model (every regime)
    weights = "int4"             # and group_size, scale_dtype, kv, activations
    tensors = { lm_head = "bf16", embedding = "bf16" }
    bytes_per_weight = { ffn = 0.625 }    # stored bytes per weight (scales, zero points) when no dtype says it

    [decode]
    fusion = "chain"             # auto (searched), none, groups, chain or kinds joined by +
    cuts = []                    # dispatch boundaries after these layers; [] one dispatch
    columns = { gemm = 8 }       # group kind, op class or op name -> columns
    dataflow = { gemm = "ws" }   # op class or op name -> ws | is | os
    datapath = { gemm = "bfp16" }     # -> the MAC datapath (e.g. bf16 natively or bfp16)
    tiles = { gemm = [32, 64, 64] }   # -> the L1 tile m, k, n of each kernel call
    host = { attention = 2e-4 }       # op name or class -> seconds per instance on the host CPU
    l2 = { gemm = "b" }               # -> operands held in the mem tiles: "", a, b or ab
    residency = "streamed"       # or "static": weights loaded once into on-chip memory
    causal_halving = false       # prefill: the attention kernel computes the masked tiles too
    row_major_ddr = true         # tensors row-major in DDR, read in tile rows (not laid out per design)
    resident_programs = true     # one program per dispatch: each op after the first re-runs on new
                                 # operands (shim tasks, sends, waits) instead of being set up
    launches_reconfigure = true  # each op a launch of an ELF that rewrites the array's configuration
                                 # first (expanded load_pdis: Arch.launch_reconfiguration_s per op)
    codegen = { ffn_gate = "direct" }  # matmul op name or class -> who wrote its kernel: external (mm.cc,
                                 # the default) or direct (mlir-air's compiler-generated matmul)

    [gemm]                       # for ``fastsim run gemm --overlay``: one GEMM as built
    tile = [64, 64, 64]          # and cols, rows, split, dataflow, l2, datapath, k_split, stream_split, out_dtype, buffers,
                                 # c_buffers, k_panel (L1 K tiles a mem-tile buffer stages), row_major_ddr (A, B, C
                                 # row-major in DDR: read in tile rows), cast_launch, codegen ("direct": mlir-air's
                                 # compiler-generated matmul kernel; default "external", a hand-written mm.cc)

    [sources]                    # where each choice comes from (shown in reports)
    "decode.cuts" = "repo/path/file.py:123"

Whatever a table leaves out is searched, and reported as searched. Switching overlays between
regimes (``--regime generate``) costs ``Arch.reconfiguration_s`` when every core keeps its
programs (only routes and BDs change) and ``Arch.elf_reload_s`` when some core needs a new program
(its kernels differ).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

import tomli_w

from ..errors import ConfigError, Problems, shown
from .layout import FACT_TABLES, FACTS, TABLES, Layout, layout_of

REGIMES = ("prefill", "decode", "encode")
REGIME_KEYS = tuple(f.name for f in fields(Layout))  # a regime table's keys are the Layout's fields, in order
MODEL_KEYS = ("weights", "kv", "activations", "group_size", "scale_dtype", "tensors", "bytes_per_weight")
GEMM_KEYS = ("tile", "cols", "rows", "split", "dataflow", "l2", "datapath", "k_split", "stream_split", "out_dtype", "buffers",
             "c_buffers", "k_panel", "row_major_ddr", "cast_launch", "codegen")
TENSOR_KINDS = ("embedding", "lm_head", "attention", "ffn", "router")


@dataclass(frozen=True, kw_only=True)
class Overlay(Layout):
    """One regime's layout (``Layout``, checked by its one validator). ``cuts`` None and empty
    tables are open: searched."""

    regime: str

    def validate(self) -> "Overlay":
        p = Problems(f"overlay [{self.regime}]")
        p.check(self.regime in REGIMES, "regime", self.regime, f"one of {REGIMES}")
        self.problems(p, dotted=True)  # named as the file spells them
        # only a prefill's causal attention has masked tiles (decode sees every cached key, encode is
        # bidirectional): the key elsewhere would be accepted and change nothing
        p.check(self.causal_halving is None or self.regime == "prefill", "causal_halving", self.causal_halving,
                "a [prefill] key only (decode and encode attention have no masked tiles)")
        p.raise_if_any()
        return self

    @property
    def layout(self) -> Layout:
        return layout_of(self)

    def __str__(self) -> str:
        return dumps({self.regime: self})


@dataclass(frozen=True)
class AsBuilt:
    """A whole file: the model's storage (``precision``: Precision fields, ``tensors``: per weight
    kind), one overlay per regime it describes, and the source of each choice."""

    precision: dict
    overlays: dict
    sources: dict
    gemm: dict = field(default_factory=dict)  # mapping Pins fields of one GEMM as built

    def check_read_by(self, workload: str, path) -> "AsBuilt":
        """Refuse the tables ``workload`` ("llm": a model's regimes, or "gemm": one GEMM) would not
        read: a layout silently dropped would run another design under the file's name."""
        unread = (["gemm"] if self.gemm else []) if workload == "llm" else \
            [*self.overlays, *(["model"] if self.precision else [])]
        if unread:
            run, other = (("a GEMM run", "an LLM run: run llm, study ablate") if workload == "gemm" else
                          ("an LLM run", "fastsim run gemm --overlay"))
            raise ConfigError([f"[{t}]: {path} describes it, but {run} does not read it (it is for {other}); "
                               "give one file per workload" for t in unread], "overlay file")
        return self

    def pinned(self, regime: str) -> list[str]:
        o = self.overlays.get(regime)
        set_ = [] if o is None else [k for k in REGIME_KEYS if k not in o.open_choices()
                                     and (k not in FACT_TABLES or getattr(o, k))
                                     and (k not in FACTS or getattr(o, k) is not None)]
        return [f"model.{'bytes_per_weight' if k == 'measured' else k}" for k in self.precision] + set_

    def report(self, path, regime: str) -> dict:
        """What the file (read from ``path``) fixed for ``regime``, what it left to the search, and
        the sources of its choices: what a run as built reports beside its numbers."""
        layout = self.overlays.get(regime)
        return {"file": str(path), "pinned": self.pinned(regime),
                "searched": ["layout (no table for this regime)"] if layout is None else layout.open_choices(),
                "sources": {k: v for k, v in self.sources.items() if k.split(".")[0] in ("model", regime)}}


def dumps(overlays: dict[str, Overlay]) -> str:
    """TOML text with one table per regime."""
    return tomli_w.dumps({regime: o.table() for regime, o in overlays.items()})


def save(overlays: dict[str, Overlay], path: str | Path) -> None:
    Path(path).write_text(dumps(overlays))


def load(path: str | Path) -> dict[str, Overlay]:
    """Overlays by regime from a TOML file; every problem reported at once."""
    return load_as_built(path).overlays


def load_as_built(path: str | Path) -> AsBuilt:
    """The model table, the regime tables and the sources of a file; every problem at once."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError([f"{path}: {e}"], "overlay file") from None
    p = Problems(f"overlay file {path}")
    for key in data:
        p.check(key in (*REGIMES, "model", "sources", "gemm"), key, "table",
                f"tables must be named {', '.join(REGIMES)}, model, gemm or sources")
    p.check(any(k in data for k in (*REGIMES, "gemm")), "tables", "none",
            f"at least one of [{'], ['.join(REGIMES)}] or [gemm]")
    overlays = {r: _regime(p, r, data[r]) for r in REGIMES if r in data}
    precision = _model(p, data.get("model", {}))
    gemm = _gemm(p, data.get("gemm", {}))
    sources = data.get("sources", {})
    if p.check(isinstance(sources, dict), "sources", sources, "a table: choice -> where it comes from"):
        for key, value in sources.items():
            head, _, choice = key.partition(".")
            named = "measured" if choice == "bytes_per_weight" else choice
            ok = ((head == "model" and named in precision) or (head == "gemm" and choice in gemm)
                  or (overlays.get(head) is not None and _makes(overlays[head], choice)))
            p.check(ok and isinstance(value, str), f"sources.{key}", value,
                    "names a choice the file makes (model.KEY or REGIME.KEY[.OP]) and says where it comes from")
    p.raise_if_any()
    return AsBuilt(precision, {r: o for r, o in overlays.items() if o is not None}, dict(sources), gemm)


def _gemm(p: Problems, table) -> dict:
    """The [gemm] table as ``Gemm`` pins (values checked by ``Gemm`` when used)."""
    if not p.check(isinstance(table, dict), "[gemm]", table, "a table"):
        return {}
    for k in sorted(set(table) - set(GEMM_KEYS)):
        p.add(f"[gemm].{k}", table[k], f"unknown key ({', '.join(GEMM_KEYS)})")
    out = {k: v for k, v in table.items() if k in GEMM_KEYS}
    if "tile" in out:
        out["tile"] = tuple(out["tile"]) if isinstance(out["tile"], list) else out["tile"]
    return out


def _makes(o: Overlay, choice: str) -> bool:
    """Whether overlay ``o`` makes ``choice`` (KEY, or KEY.OP for a per-op table)."""
    key, _, op = choice.partition(".")
    if key not in REGIME_KEYS or key in o.open_choices():
        return False
    return not op or (isinstance(getattr(o, key), dict) and op in getattr(o, key))


def _regime(p: Problems, regime: str, table) -> Overlay | None:
    if not p.check(isinstance(table, dict), f"[{regime}]", table, "a table"):
        return None
    for k in sorted(set(table) - set(REGIME_KEYS)):
        p.add(f"[{regime}].{k}", table[k], f"unknown key ({', '.join(REGIME_KEYS)})")
    tables = {k: table.get(k, {}) for k in TABLES}
    for k, v in tables.items():
        p.check(isinstance(v, dict), f"[{regime}].{k}", v, "a table: op class or op name -> value")
    if p.items:
        return None
    cuts = table.get("cuts")
    try:
        return Overlay(regime=regime, fusion=table.get("fusion", "auto"), residency=table.get("residency"),
                       cuts=None if cuts is None else tuple(cuts) if isinstance(cuts, list) else cuts,
                       tiles={k: tuple(v) if isinstance(v, list) else v for k, v in tables["tiles"].items()},
                       **{k: dict(v) for k, v in tables.items() if k != "tiles"},
                       **{k: table.get(k) for k in FACTS}).validate()
    except ConfigError as e:
        p.items += e.problems
        return None


def _model(p: Problems, table) -> dict:
    """Precision fields of the [model] table (checked by ``Precision.validate`` when applied)."""
    if not p.check(isinstance(table, dict), "[model]", table, "a table"):
        return {}
    for k in sorted(set(table) - set(MODEL_KEYS)):
        p.add(f"[model].{k}", table[k], f"unknown key ({', '.join(MODEL_KEYS)})")
    out = {k: v for k, v in table.items() if k in MODEL_KEYS and k not in ("tensors", "bytes_per_weight")}
    measured = table.get("bytes_per_weight", {})
    if p.check(isinstance(measured, dict), "[model].bytes_per_weight", measured, "a table: weight kind -> bytes"):
        for kind, b in measured.items():
            p.check(kind in TENSOR_KINDS, f"[model].bytes_per_weight.{kind}", shown(b),
                    f"a weight kind: {', '.join(TENSOR_KINDS)}")
        if measured:
            out["measured"] = tuple(sorted(measured.items()))
    tensors = table.get("tensors", {})
    if p.check(isinstance(tensors, dict), "[model].tensors", tensors, "a table: weight kind -> dtype"):
        for kind, dtype in tensors.items():
            if p.check(kind in TENSOR_KINDS, f"[model].tensors.{kind}", shown(dtype),
                       f"a weight kind: {', '.join(TENSOR_KINDS)}"):
                out[kind] = dtype
    return out


def switch_seconds(kernels_a: set, kernels_b: set, arch) -> tuple[float, str]:
    """Cost of switching between two overlays, and what changes."""
    if kernels_a == kernels_b:
        return arch.reconfiguration_s, "routes and BDs"
    return arch.elf_reload_s, "core programs (ELF reload)"
