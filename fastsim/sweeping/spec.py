"""Sweep specs: TOML data (never executed), validated with every error listed.

    [study]
    kind = "llm"                      # or "gemm", "systolic", or a study's kind: ablate, cuts, overlays, dataflow
    [study.base]                      # fixed parameters of every point
    model = "llama-3.2-1b"
    [arch]                            # optional: base preset and field overrides
    base = "npu2"
    [axes]                            # the cartesian product of these is the sweep
    context = [1024, 4096, 16384]
    ddr_bytes_per_s = {start = 30e9, stop = 120e9, num = 4}          # linear
    prompt = {start = 256, stop = 4096, num = 5, scale = "log2"}     # geometric
    [run]
    chunk_points = 8                  # points per zarr chunk (a task holds one or more)
    outputs = ["seconds", "by_class"]

Every table's unknown keys are refused by name (``[run]`` takes only ``chunk_points`` and
``outputs``). Instead of ``[axes]``, ``[[points]]`` tables list explicit points (dim ``point``). Axis and base
names are study parameters or arch fields (bare, or as ``arch.NAME``); ``dataflow.CLASS`` and
``columns.CLASS`` set one op class. LLM parameters have the names, values and types of
``LlmStudy`` and ``fastsim run llm`` (declared once in ``fastsim.llm.parameters``; values outside
the declared set are refused here). A prefill point's cached tokens are ``prefill_context``;
``context`` on a point whose regime is fixed to prefill is refused. Only a ``regime`` axis crossed
with ``context`` (and no ``prefill_context``) pairs them: each prefill point takes ``context`` as its
``prefill_context``. For encode points (encoder models such as ``bert-base``) ``context`` is the
input length unless ``prompt`` is given. LLM points also take ``routing`` ("expected" or
"sampled") and ``routing_seed`` for mixture-of-experts models, and per-kind weight dtypes
``embedding``, ``lm_head``, ``attention``, ``ffn``, ``router`` ("" or absent: as ``weights``). A
point whose model and regime do not go together (decode on an encoder) fails on its own (status
1), as any invalid point does.
A ``systolic`` study runs every layer of a SCALE-Sim topology CSV (``topology``, relative to the
spec file) on a mesh per point, named by ``MeshConfig``'s fields (``rows``, ``cols``, ``dataflow``,
SRAM kB, ``bandwidth_words_per_cycle`` with 0 = unlimited, ...); it has no arch.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..arch import PARTS, PRESETS, Arch, load as load_arch
from ..errors import ConfigError, Problems
from ..llm.parameters import BY_NAME as DECLARED, from_words
from ..studies.registry import SWEEP_KINDS
from ..systolic.inputs import MeshConfig
from .variables import REGISTRY

# the declared study parameters (fastsim.llm.parameters: the CLI's and LlmStudy's names) and the rest
LLM_PARAMS = set(DECLARED) | {
    "model", "group_size", "weight_compression", "kv_compression", "noop", "cuts",
    "routing", "routing_seed",  # mixture-of-experts routing: "expected" | "sampled", and its seed
    "embedding", "lm_head", "attention", "ffn", "router"}  # per-kind weight dtypes ("": as weights)
GEMM_PARAMS = {"m", "k", "n", "dtype", "tile_m", "tile_k", "tile_n", "cols", "kernel_efficiency",
               "kernel_overhead_cycles", "out_dtype", "stream_split", "budget"}
# a systolic point's parameters are MeshConfig's fields (one name in Python, specs and stores)
SYSTOLIC_PARAMS = {"topology"} | {f.name for f in dataclasses.fields(MeshConfig)} - {"name", "address_offsets"}
LATENCY_PARAMS = {"samples", "seed", "load"}  # llm points: latency quantiles (fastsim.llm.latency)
LLM_KINDS = ("llm", *SWEEP_KINDS)  # kinds whose points are LlmStudy's: llm and the studies' (their registry)
STUDY_PARAMS = {"llm": LLM_PARAMS | LATENCY_PARAMS, "gemm": GEMM_PARAMS, "systolic": SYSTOLIC_PARAMS,
                **{name: (LLM_PARAMS - kind.without) | set(kind.extra) for name, kind in SWEEP_KINDS.items()}}
_UNKNOWN = {name: sorted(kind.without - LLM_PARAMS) for name, kind in SWEEP_KINDS.items() if kind.without - LLM_PARAMS}
if _UNKNOWN:  # a misspelt name would leave the parameter it meant accepted
    raise ImportError(f"sweep kinds refusing parameters no LLM point takes: {_UNKNOWN}")
MAX_AXIS = 1_000_000  # values per range axis
# the keys each table of a spec is read for: any other key is refused by name (a misspelt
# ``chunk_point`` would otherwise run with the default)
STUDY_KEYS = ("kind", "base")
RUN_KEYS = ("chunk_points", "outputs")
RANGE_KEYS = ("start", "stop", "num", "scale")
MAX_POINTS = 10_000_000  # points per sweep
ARCH_FIELDS = {f.name for f in dataclasses.fields(Arch)} - {"name", "notes", "shim", "mem", "compute"}


@dataclass(frozen=True)
class SweepSpec:
    kind: str
    base: dict
    arch: dict
    axes: dict  # name -> list of values (ordered)
    points: list | None  # explicit points instead of axes
    chunk_points: int
    outputs: tuple[str, ...]
    source: str = field(default="", compare=False)

    @property
    def dims(self) -> tuple[str, ...]:
        return ("point",) if self.points is not None else tuple(self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.points),) if self.points is not None else tuple(len(v) for v in self.axes.values())

    @property
    def n_points(self) -> int:
        return math.prod(self.shape)

    def digest(self) -> str:
        """Identity of the sweep's content: a changed spec gets a different digest."""
        data = {"kind": self.kind, "base": self.base, "arch": self.arch, "axes": self.axes,
                "points": self.points, "chunk_points": self.chunk_points, "outputs": list(self.outputs)}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

    def point(self, index: tuple[int, ...]) -> dict:
        """Parameters of the point at ``index`` (base overridden by axis values)."""
        if self.points is not None:
            return {**self.base, **self.points[index[0]]}
        return {**self.base, **{name: values[i] for (name, values), i in zip(self.axes.items(), index)}}


def _axis_values(name, raw, p: Problems) -> list:
    if isinstance(raw, list):
        p.check(len(raw) >= 1, f"axes.{name}", raw, "needs at least one value")
        return raw
    if isinstance(raw, dict):
        ok = p.check({"start", "stop", "num"} <= set(raw), f"axes.{name}", raw,
                     "a range needs start, stop and num (and optionally scale = 'linear' | 'log2')")
        _check_keys(raw, RANGE_KEYS, f"axes.{name}", p)
        if not ok:
            return []
        num, scale = raw["num"], raw.get("scale", "linear")
        ok = p.number(f"axes.{name}.num", num, integer=True, lo=1, hi=MAX_AXIS)
        ok &= p.check(scale in ("linear", "log2"), f"axes.{name}.scale", scale, "linear or log2")
        ok &= p.number(f"axes.{name}.start", raw["start"]) & p.number(f"axes.{name}.stop", raw["stop"])
        if not ok:
            return []
        if scale == "log2" and (raw["start"] <= 0 or raw["stop"] <= 0):
            p.add(f"axes.{name}", raw, "log2 ranges need start and stop > 0")
            return []
        vals = (np.geomspace(raw["start"], raw["stop"], num) if scale == "log2"
                else np.linspace(raw["start"], raw["stop"], num))
        if all(isinstance(raw[k], int) for k in ("start", "stop")):
            return [int(round(v)) for v in vals]
        return [float(v) for v in vals]
    p.add(f"axes.{name}", raw, "a list of values or a {start, stop, num} range")
    return []


def _table_of(raw: dict, key: str, p: Problems) -> dict:
    """``raw[key]`` when it is a table (``[key]``); anything else (``[[key]]``, a value) is a problem."""
    value = raw.get(key, {})
    if not isinstance(value, dict):
        p.add(key, "an array of tables" if isinstance(value, list) else value, f"must be a [{key}] table")
        return {}
    return value


def _check_keys(table: dict, allowed: tuple[str, ...], where: str, p: Problems) -> None:
    """Refuse, by name, every key of ``table`` that the spec does not read."""
    for key in table:
        p.check(key in allowed, f"{where}.{key}", table[key], f"unknown key; {where} takes {', '.join(allowed)}")


def _check_name(kind: str, name: str, where: str, p: Problems) -> None:
    if kind not in STUDY_PARAMS:  # already reported; names cannot be judged without a kind
        return
    bare = name[5:] if name.startswith("arch.") else name
    if kind == "systolic":
        p.check(name in SYSTOLIC_PARAMS, where, name, f"not a systolic parameter ({sorted(SYSTOLIC_PARAMS)})")
        return
    if name.startswith(("dataflow.", "columns.")) and kind == "llm":
        return
    if name.startswith("arch."):
        p.check(bare in ARCH_FIELDS, where, name, f"unknown arch field; known: {sorted(ARCH_FIELDS)}")
        return
    p.check(name in STUDY_PARAMS.get(kind, set()) or name in ARCH_FIELDS, where, name,
            f"not a {kind} parameter ({sorted(STUDY_PARAMS.get(kind, set()))}) or arch field")


def _check_values(kind: str, name: str, values: list, where: str, p: Problems) -> None:
    """A declared LLM parameter's values against its declaration, before anything runs."""
    if kind in LLM_KINDS and name in DECLARED:
        for value in values:
            DECLARED[name].check(p, from_words({name: value})[name], where)


def prefill_context_refusal(params: dict) -> str | None:
    """Why a prefill point's ``context`` is refused, or None: tokens cached before a prompt are
    ``prefill_context``, as on the command line and in ``LlmStudy``; ``context`` is decode's."""
    if params.get("regime") == "prefill" and "context" in params and "prefill_context" not in params:
        return ("a prefill point's tokens cached before the prompt are prefill_context, as in LlmStudy and "
                "fastsim run llm (context is decode's): write prefill_context")
    return None


def _check_prefill_context(base: dict, axes: dict, points, p: Problems) -> None:
    """Refuse ``context`` where the spec fixes a point's regime to prefill. (A ``regime`` axis
    crossed with ``context`` is the one place context pairs with prefill: ``points.cached_tokens``.)"""
    if points is not None:
        for i, pt in enumerate(points):
            point = {**base, **pt}
            why = prefill_context_refusal(point)
            if why:
                p.add(f"points[{i}].context", point["context"], why)
    elif "regime" not in axes:
        why = prefill_context_refusal({**base, **axes})
        if why:
            where = "axes.context" if "context" in axes else "study.base.context"
            p.add(where, axes.get("context", base.get("context")), why)


def parse_spec(text: str, source: str = "<string>") -> SweepSpec:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([f"{source}: not valid TOML: {e}"], "sweep spec") from None
    return spec_from_dict(raw, source)


def spec_from_dict(raw: dict, source: str = "<dict>") -> SweepSpec:
    """A spec from the tables a TOML spec holds, as a dict (``{"study": {"kind": ...}, "axes":
    {...}}``): the same validation, every problem listed at once."""
    if not isinstance(raw, dict):
        raise ConfigError([f"{source}: a sweep spec is a dict of tables (study, arch, axes, points, run), "
                           f"not {type(raw).__name__}"], "sweep spec")
    p = Problems(f"sweep spec {source}")
    for key in raw:
        p.check(key in ("study", "arch", "axes", "points", "run"), key, "table", "known tables: study, arch, axes, points, run")
    study = _table_of(raw, "study", p)
    _check_keys(study, STUDY_KEYS, "study", p)
    kind = study.get("kind")
    p.check(isinstance(kind, str) and kind in STUDY_PARAMS, "study.kind", kind, f"one of {sorted(STUDY_PARAMS)}")
    kind = kind if isinstance(kind, str) else ""
    base = dict(_table_of(study, "base", p))
    for name in base:
        _check_name(kind, name, f"study.base.{name}", p)
        _check_values(kind, name, [base[name]], f"study.base.{name}", p)
    arch = dict(_table_of(raw, "arch", p))
    p.check(isinstance(arch.get("base", "npu2"), str) and _loads(arch.get("base", "npu2")), "arch.base", arch.get("base"),
            f"a preset or part, NAME[:mode][:cols=N]: one of {sorted({*PRESETS, *PARTS})}")
    for name in arch:
        if name != "base":
            p.check(name in ARCH_FIELDS, f"arch.{name}", arch[name], f"unknown arch field; known: {sorted(ARCH_FIELDS)}")
    axes, points = {}, None
    if "axes" in raw and "points" in raw:
        p.add("axes/points", "both", "give either [axes] or [[points]], not both")
    if "points" in raw:
        points = raw["points"] if isinstance(raw["points"], list) else []
        p.check(1 <= len(points) <= MAX_POINTS and all(isinstance(pt, dict) for pt in points), "points",
                f"{len(points)} entries", f"needs 1..{MAX_POINTS:,} [[points]] tables")
        points = [pt for pt in points if isinstance(pt, dict)]
        for i, pt in enumerate(points):
            for name in pt:
                _check_name(kind, name, f"points[{i}].{name}", p)
                _check_values(kind, name, [pt[name]], f"points[{i}].{name}", p)
    else:
        raw_axes = _table_of(raw, "axes", p)
        p.check(len(raw_axes) >= 1, "axes", "{}", "needs at least one axis (or [[points]])")
        for name, values in raw_axes.items():
            _check_name(kind, name, f"axes.{name}", p)
            axes[name] = _axis_values(name, values, p)
            _check_values(kind, name, axes[name], f"axes.{name}", p)
            if name in base:
                p.add(f"axes.{name}", name, "is also in study.base; give it in one place")
    if kind == "systolic":
        _check_topologies(base, axes, points, source, p)
    if kind in LLM_KINDS:
        _check_prefill_context(base, axes, points, p)
    if axes and all(axes.values()):
        total = math.prod(len(v) for v in axes.values())
        p.check(total <= MAX_POINTS, "axes", f"{total:,} points", f"at most {MAX_POINTS:,} points per sweep "
                "(split it into several specs)")
    run = _table_of(raw, "run", p)
    _check_keys(run, RUN_KEYS, "run", p)
    chunk_points = run.get("chunk_points", 8)
    p.check(isinstance(chunk_points, int) and chunk_points >= 1, "run.chunk_points", chunk_points, "integer >= 1")
    registry = REGISTRY.get(kind, {})
    outputs = run.get("outputs", [n for n in registry if n not in ("status", "message")])
    if not isinstance(outputs, list) or not all(isinstance(n, str) for n in outputs):
        p.add("run.outputs", outputs, "a list of output names")
        outputs = []
    outputs = tuple(outputs)
    for name in outputs:
        p.check(name in registry, "run.outputs", name, f"known outputs for {kind}: {sorted(registry)}")
    p.raise_if_any()
    outputs = ("status", "message") + tuple(n for n in outputs if n not in ("status", "message"))
    return SweepSpec(kind, base, arch, axes, points, chunk_points, outputs, source)


def spec_dir(source: str) -> Path:
    """Directory that relative paths in a spec are resolved against (its file's, else the cwd)."""
    path = Path(source)
    return path.parent if path.suffix == ".toml" else Path.cwd()


def _check_topologies(base: dict, axes: dict, points, source: str, p: Problems) -> None:
    for name in ("topology", "rows", "cols"):
        given = name in base or name in axes or (points is not None and all(name in pt for pt in points))
        p.check(given, f"study.base.{name}", "missing", "a systolic study needs topology, rows and cols "
                "(in study.base, an axis or every point)")
    values = [base["topology"]] if "topology" in base else list(axes.get("topology", []))
    values += [pt["topology"] for pt in points or [] if "topology" in pt]
    for value in values:
        p.check((spec_dir(source) / str(value)).is_file(), "topology", value,
                f"no such file (paths are relative to {spec_dir(source)})")


def load_spec(path: str | Path) -> SweepSpec:
    path = Path(path)
    if not path.is_file():
        raise ConfigError([f"{path}: no such sweep spec"], "sweep spec")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError([f"{path}: cannot be read as text ({e})"], "sweep spec")
    return parse_spec(text, str(path))


def _loads(base: str) -> bool:
    """A sweep's ``arch.base``: a preset or part by name (``strix:turbo``, ``npu2:cols=4``), not a file."""
    if base.split(":")[0] not in {*PRESETS, *PARTS}:
        return False
    try:
        load_arch(base)
    except ConfigError:
        return False
    return True

