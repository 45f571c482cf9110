"""A 2-D transpose on the tile array: the op, its mapping space, the closed form of a mapping (bytes,
DDR runs, capacities, a lower bound on cycles), its design and the exact search over the space.

A ``Transpose`` turns a row-major ``m`` x ``n`` tensor X into its row-major ``n`` x ``m`` transpose
Y; each element is a run of ``unit`` contiguous elements (1: an element transpose; more: a block
transpose, ONNX ``perm=[0, 2, 1, 3]`` moving whole heads' rows). A ``TransposeMapping`` cuts X into
``tm`` x ``tn`` tiles (divisors of m and n: every tile is whole, nothing is padded) and deals them
over ``rows`` cores of each of ``cols`` columns, as the streamed vector ops do
(``fastsim.mapping.vector``):

- **in**: shim(c) MM2S0 reads one tile per task from DDR, ``tm`` runs of ``tn`` units (one run when
  the tile spans whole rows: ``tn == n``), into mem(c) S2MM0, which deals tiles round-robin to its
  rows' double buffers; mem(c) MM2S r forwards each to core (c, r);
- **core**: one kernel call per tile transposes it in L1 (``kernel_model.vector.transpose_cycles``);
- **out**: every core's transposed tile goes to its column's mem tile (ObjectFifo join), which
  drains it to shim(c) S2MM0; one task per tile writes ``tn`` rows of the output, each a run of
  ``tm`` units (one run when ``tm == m``), so the DDR's cost per run
  (``Arch.ddr_run_overhead_s``) prices the short runs on both sides.

Every core gets the same number of tiles (``per_core``): where the cores outnumber a multiple of
the tiles, the last round moves padding tiles (``plan.padding_tiles``), which the design as built
moves and the bound counts. Not modelled: a DMA-only transpose (a 4-byte element could be
re-ordered by the shim or mem-tile BDs' 32-bit strides alone, a 2-byte one cannot), and a mem-tile
join that re-tiles several cores' tiles into longer output runs.

``MAPPER`` is the kind's door for the evaluator: a graph TRANSPOSE op becomes a ``Transpose`` and
its search's answer the op's design.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum

from ..arch import Arch
from ..cache import CACHE, Region
from ..design import Acquire, Compute, Design, Loop, Release, fifo_endpoint, mm2s, s2mm
from ..errors import ConfigError, Problems
from ..graph import TRANSPOSE
from ..kernel_model import vector as KV
from ..lower import lower, noop_twin
from .branch_bound import FIRST_BATCH, Broken, LegalInOrder, branch_and_bound, control_cycles
from .ddr_runs import bound_rate, bound_run_bytes
from .dispatch import ControlCounts
from .op_mapper import KindTraits, Mapper, NoopTwin, OpDesign
from .paths import join_outputs, push_round, stream_rates
from .pins import PinRules, Pins, check_sizes
from .placed import Placed, columns_pin, control_weight
from .search_result import SearchResult

MAX_EXTENT = 1 << 24
ELEM_BYTES = tuple(sorted(KV.TRANSPOSE_BLOCKS))
DRAIN_CHANNEL = 5  # mem-tile MM2S that drains the joined output (as the streamed vector ops)
REGION = "transpose_search"
CACHE.add_region(Region(REGION, 64))


@dataclass(frozen=True)
class Transpose:
    """Y[n, m] = X[m, n]^T, row-major, each element a run of ``unit`` elements of ``elem_bytes``."""

    m: int
    n: int
    unit: int = 1
    elem_bytes: int = 2
    name: str = "transpose"

    @property
    def unit_bytes(self) -> int:
        return self.unit * self.elem_bytes

    def validate(self) -> "Transpose":
        """Every problem of the fields at once, each naming its field."""
        p = Problems(f"transpose {self.name}")
        for f in ("m", "n", "unit"):
            p.number(f, getattr(self, f), integer=True, lo=1, hi=MAX_EXTENT)
        p.check(self.elem_bytes in ELEM_BYTES, "elem_bytes", self.elem_bytes, f"one of {ELEM_BYTES}")
        p.raise_if_any()
        p.check(self.unit == 1 or self.unit_bytes % KV.RUN_ALIGN_BYTES == 0, "unit", self.unit,
                f"1 (an element transpose) or runs of whole {KV.RUN_ALIGN_BYTES}-byte accesses "
                f"({self.unit_bytes} bytes asked)")
        p.raise_if_any()
        return self


@dataclass(frozen=True, order=True)
class TransposeMapping:
    """Tiles of ``tm`` x ``tn`` units of X, dealt over ``rows`` cores of ``cols`` columns."""

    tm: int
    tn: int
    cols: int
    rows: int

    def label(self) -> str:
        return f"{self.tm}x{self.tn} {self.cols}c{self.rows}r"


class Limit(Enum):
    """What a transpose candidate can break: the search counts its rejections by these."""

    NO_CORE = "no vector core"
    TILE_WORDS = "tile"
    DDR_READ = "DDR read"
    DDR_WRITE = "DDR write"
    CORE_MEMORY = "core memory"
    MEM_TILE_BYTES = "mem tile"
    MEM_TILE_CHANNELS = "mem tile channels"
    COMPUTE_BD_LENGTH = "compute tile BD length"


@dataclass(frozen=True)
class TransposePlan:
    """The closed form of one mapping: what the design moves and computes, what it needs, how
    fast it can be at best."""

    tiles: int  # tiles of X
    per_core: int  # tiles (kernel calls) of every core
    padding_tiles: int  # tiles the last round moves beyond X (every core takes per_core)
    tile_bytes: int
    call_cycles: int
    x_dims: tuple  # a shim read BD's dims, () for one run
    y_dims: tuple  # a shim write BD's dims, () for one run
    runs_per_tile: int  # DDR runs of one tile, read and write
    l1_bytes: int
    l2_bytes: int
    lower_bound_cycles: float
    problems: tuple[Broken, ...]


def _divisors(x: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(x) + 1) if x % d == 0]
    return sorted(set(small) | {x // d for d in small})


def _dims(run_bytes: int, runs: int, pitch_bytes: int, whole: bool) -> tuple:
    """A shim BD's dims reading ``runs`` runs of ``run_bytes`` at ``pitch_bytes`` apart (() where
    they are whole rows: one contiguous run)."""
    return () if whole or runs == 1 else ((run_bytes // 4, 1), (runs, pitch_bytes // 4))


def plan(op: Transpose, mp: TransposeMapping, arch: Arch) -> TransposePlan:
    """The closed form of ``op`` under ``mp`` (module docstring) with every limit it breaks."""
    ub, cores = op.unit_bytes, mp.cols * mp.rows
    tiles = (op.m // mp.tm) * (op.n // mp.tn)
    per_core = -(-tiles // cores)
    tile_bytes = mp.tm * mp.tn * ub
    x_run, y_run = mp.tn * ub, mp.tm * ub
    x_dims = _dims(x_run, mp.tm, op.n * ub, mp.tn == op.n)
    y_dims = _dims(y_run, mp.tn, op.m * ub, mp.tm == op.m)
    core = KV.core_of(arch)
    call = math.ceil(KV.transpose_cycles(core, mp.tm, mp.tn, op.elem_bytes, op.unit)) if core else 0
    l1, l2 = 4 * tile_bytes, 4 * mp.rows * tile_bytes  # double-buffered in and out, per core / per column
    broken = []
    if core is None:
        broken.append(Broken(Limit.NO_CORE, f"{arch.name}: no vector core documented for its generation "
                                            "(kernel_model.vector.CORES)"))
    if tile_bytes % 4:
        broken.append(Broken(Limit.TILE_WORDS, f"tile: {tile_bytes} bytes, not whole 32-bit words (DMAs move words)"))
    for limit, what, run, pitch, dims in ((Limit.DDR_READ, "read", x_run, op.n * ub, x_dims),
                                          (Limit.DDR_WRITE, "write", y_run, op.m * ub, y_dims)):
        if dims and (run % 4 or pitch % 4):
            broken.append(Broken(limit, f"DDR {what}: runs of {run} bytes {pitch} bytes apart, not whole 32-bit words"))
        elif dims and (any(size >= 2 ** arch.shim.bd_wrap_bits for size, _ in dims)
                       or dims[1][1] >= 2 ** arch.shim.bd_step_bits):
            broken.append(Broken(limit, f"DDR {what}: dims {dims} exceed a shim BD's wraps or step"))
    if l1 > arch.compute.memory_bytes:
        broken.append(Broken(Limit.CORE_MEMORY, f"core memory: needs {l1} bytes; {arch.compute.memory_bytes} available"))
    if l2 > arch.mem.memory_bytes:
        broken.append(Broken(Limit.MEM_TILE_BYTES, f"mem tile: needs {l2} bytes; {arch.mem.memory_bytes} available"))
    mem = arch.mem
    if mp.rows + 1 > mem.s2mm_channels or mp.rows > DRAIN_CHANNEL or DRAIN_CHANNEL >= mem.mm2s_channels \
            or 8 * mp.rows > mem.bd_count:
        broken.append(Broken(Limit.MEM_TILE_CHANNELS, f"mem tile channels: {mp.rows} rows need {mp.rows + 1} S2MM, "
                                                      f"MM2S 0..{mp.rows - 1} and {DRAIN_CHANNEL}, {8 * mp.rows} BDs"))
    if tile_bytes / 4 >= 2 ** arch.compute.bd_length_bits:
        broken.append(Broken(Limit.COMPUTE_BD_LENGTH,
                             f"compute tile BD length field holds < 2**{arch.compute.bd_length_bits} words"))
    runs = (1 if not x_dims else mp.tm) + (1 if not y_dims else mp.tn)
    bound = _bound(arch, mp, per_core, tile_bytes, call, runs)
    return TransposePlan(tiles, per_core, per_core * cores - tiles, tile_bytes, call, x_dims, y_dims, runs, l1, l2,
                         bound, tuple(broken))


def _bound(arch: Arch, mp: TransposeMapping, per_core: int, tile_bytes: int, call: int, runs: int) -> float:
    """Fewest cycles the design can take: a core's calls after its first tile came in through the
    mem tile and before its last went out through it; a column's tiles through its one shim read
    and one shim write channel; every byte and run through the DDR."""
    stream = arch.stream_bytes_per_cycle
    core = per_core * call + 4 * tile_bytes / stream
    col_bytes = mp.rows * per_core * tile_bytes
    shim = max(col_bytes / min(r, w) for r, w in zip(stream_rates(arch, 0, mp.cols, "read"),
                                                     stream_rates(arch, 0, mp.cols, "write")))
    moved = mp.cols * mp.rows * per_core
    nbytes = 2 * moved * tile_bytes
    ddr = nbytes / arch.ddr_bytes_per_cycle
    run = bound_run_bytes(arch)
    if run > 0:
        ddr = max(ddr, (nbytes + run * moved * runs) / bound_rate(arch, 2 * mp.cols))
    return max(core, shim, ddr)


def candidates(op: Transpose, arch: Arch, pins: Pins) -> list[TransposeMapping]:
    """Every whole tiling (divisors of m and n; ``pins.tile``'s first two sizes where pinned),
    on 1, 2, 4, ... columns and 1, 2, 4 or all rows (``pins.cols``, ``pins.rows`` where pinned)."""
    tms = [pins.tile[0]] if pins.tile else _divisors(op.m)
    tns = [pins.tile[1]] if pins.tile else _divisors(op.n)
    cols = [pins.cols] if pins.cols else sorted({c for c in (1, 2, 4, 8, 16) if c <= arch.columns} | {arch.columns})
    rows = [pins.rows] if pins.rows else sorted({r for r in (1, 2, 4) if r <= arch.compute_rows}
                                                | {arch.compute_rows})
    return [TransposeMapping(tm, tn, c, r) for tm in tms for tn in tns for c in cols for r in rows
            if tm * tn * op.unit_bytes * 4 <= arch.compute.memory_bytes or pins.tile]


def _check_pins(pins: Pins, p: Problems, arch: Arch) -> None:
    check_sizes(pins, p, (("cols", 1, arch.columns), ("rows", 1, arch.compute_rows)))
    p.check(pins.tile is None or (isinstance(pins.tile, tuple) and len(pins.tile) == 3 and all(
        isinstance(x, int) and x >= 1 for x in pins.tile)), "tile", pins.tile, "three sizes tm, tn, 1")


# what a transpose's search takes of ``Pins``: its columns, rows and tile (tm, tn, 1)
TRANSPOSE_PINS = PinRules("transpose", ("cols", "rows", "tile"), _check_pins)


def check_pins(op: Transpose, pins: Pins, arch: Arch) -> None:
    """``pins`` valid for a transpose: a pinned tile must tile X whole (its third size 1)."""
    TRANSPOSE_PINS.validate(pins, arch)
    if pins.tile is not None:
        p = Problems(f"transpose {op.name} pins")
        tm, tn, one = pins.tile
        p.check(op.m % tm == 0 and op.n % tn == 0 and one == 1, "tile", pins.tile,
                f"(tm, tn, 1) with tm dividing m = {op.m} and tn dividing n = {op.n}")
        p.raise_if_any()


def search_transpose(op: Transpose, arch: Arch, pins: Pins = Pins(), budget: int | None = None,
                     control_weight: float = 0.0) -> SearchResult:
    """The fastest mapping of ``op`` on ``arch``: every candidate planned, the legal ones simulated
    best bound first (``branch_bound``) until no bound left beats the fastest; kept in the one
    cache (region "transpose_search", memory only) on everything the search reads.
    ``control_weight``: how much a candidate's control counts in its objective (inside a graph;
    ``branch_bound.objective``), its bound counted in closed form (``control_counts_of``)."""
    op.validate()
    check_pins(op, pins, arch)
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ConfigError([f"budget = {budget!r}: must be a whole number of candidates >= 1"], "transpose search")
    key = (replace(op, name=""), pins, repr(arch), budget, control_weight)
    found = CACHE.get(REGION, key)
    if found is None:
        found = _search(op, arch, pins, budget, control_weight)
        CACHE.put(REGION, key, found)
    return found


def control_counts_of(mp: TransposeMapping) -> ControlCounts:
    """What ``transpose_design`` writes to set itself up inside a dispatch (``dispatch.control_counts``
    of the built design, exactly: tests/test_transpose.py): per column its shim X and Y tasks, one
    wait and 2 x rows + 2 mem-tile chains started; per core 8 mem-tile BDs and 4 locks (its tile's
    double-buffered hop in and out of the mem tile)."""
    c, r = mp.cols, mp.rows
    return ControlCounts(shim_tasks=2 * c, tile_pushes=0, syncs=c, mem_bds=8 * c * r, mem_starts=c * (2 * r + 2),
                         mem_locks=4 * c * r, cores=c * r)


def _search(op: Transpose, arch: Arch, pins: Pins, budget: int | None, control_weight: float) -> SearchResult:
    legal, reasons, enumerated = [], {}, 0
    for mp in candidates(op, arch, pins):
        enumerated += 1
        pl = plan(op, mp, arch)
        if pl.problems:
            first = pl.problems[0].limit.value  # the first limit broken, as the conv search counts
            reasons[first] = reasons.get(first, 0) + 1
            continue
        control = control_cycles(control_counts_of(mp), arch, control_weight) if control_weight else 0
        legal.append({"mapping": mp, "plan": pl, "lower_bound_cycles": pl.lower_bound_cycles,
                      "objective_bound": pl.lower_bound_cycles + control})
    if not legal:
        raise ConfigError([f"no legal mapping for transpose {op.name} (m={op.m}, n={op.n}, unit={op.unit}, "
                           f"elem_bytes={op.elem_bytes}) among {enumerated} candidates; rejected: {reasons}"],
                          "transpose search")
    legal.sort(key=lambda r: (r["objective_bound"], r["plan"].padding_tiles, r["mapping"]))
    space = _Space(op, arch, legal)
    first = space.take(FIRST_BATCH if budget is None else min(FIRST_BATCH, budget), float("inf"))
    best, _, simulated = branch_and_bound(space, first, budget, control_weight=control_weight)
    return SearchResult(op, best["mapping"], best["cycles"], legal, [], enumerated, len(legal), reasons,
                        best["design"], best["simulation"], None, simulated, space.unexplored_bound(),
                        kind="transpose", best_plan=best["plan"], validated=True,  # ``simulate`` validates
                        best_control_cycles=best["objective"] - best["cycles"])


class _Space(LegalInOrder):
    """The legal candidates as ``branch_bound`` walks them, in order of ``objective_bound`` (the
    cycles bound plus, inside a graph, the weighted control of ``control_counts_of``)."""

    group = "transpose search"
    bound = "objective_bound"

    def __init__(self, op: Transpose, arch: Arch, legal: list[dict]):
        super().__init__(f"transpose {op.name}", legal)
        self.op, self.arch = op, arch

    def design_of(self, row: dict) -> Design:
        return transpose_design(self.op, row["mapping"], self.arch, row["plan"])

    def tie(self, row: dict) -> tuple:
        return ()  # simulation order is bound order


def checked_plan(op: Transpose, mp: TransposeMapping, arch: Arch) -> TransposePlan:
    """``plan`` of a legal mapping; a ConfigError lists every limit an illegal one breaks."""
    op.validate()
    pl = plan(op, mp, arch)
    if pl.problems:
        raise ConfigError([str(b) for b in pl.problems], f"transpose mapping {mp.label()}")
    return pl


def transpose_design(op: Transpose, mp: TransposeMapping, arch: Arch, pl: TransposePlan | None = None) -> Design:
    """The design of ``op`` under ``mp`` (module docstring)."""
    pl = pl or checked_plan(op, mp, arch)
    d = Design(arch, f"{op.name} transpose {op.m}x{op.n}x{op.unit} {mp.label()}")
    tasks = []
    for c in range(mp.cols):
        x_in = _inputs(d, c, mp.rows, pl.tile_bytes)
        y_locks, _ = join_outputs(d, c, mp.rows, pl.tile_bytes, DRAIN_CHANNEL, "Y")
        for r, (y_prod, y_cons) in enumerate(y_locks):
            x = x_in[r]
            d.core_program(d.compute(c, r), Loop(pl.per_core, (
                Acquire(x["cons_lock"]), Acquire(y_prod), Compute(pl.call_cycles, "transpose"),
                Release(x["prod_lock"]), Release(y_cons))))
        x_bd = _shim_bd(d, mm2s(d.shim(c), 0), pl.tile_bytes, pl.x_dims, f"X{c}")
        y_bd = _shim_bd(d, s2mm(d.shim(c), 0), pl.tile_bytes, pl.y_dims, f"Y{c}")
        tasks += [(x_bd, mp.rows * pl.per_core), (y_bd, mp.rows * pl.per_core)]
    push_round(d, tasks)
    for c in range(mp.cols):
        d.wait(s2mm(d.shim(c), 0))
    return d


def _shim_bd(d: Design, ch, length: int, dims: tuple, name: str):
    """One tile's shim BD, its DDR buffer as long as the rows its runs span."""
    extent = 4 * (1 + sum((size - 1) * stride for size, stride in dims)) if dims else length
    return d.bd(ch, d.ddr_buffer(extent, name), length, dims=dims, name=f"{name}_ddr")


def _inputs(d: Design, c: int, rows: int, tile: int) -> list[dict]:
    """Column ``c``'s tiles from its shim: the mem tile deals them round-robin to its rows' double
    buffers (ObjectFifo distribute) and forwards each row's to its core."""
    memt = d.mem(c)
    parts = []
    for r in range(rows):
        locks = (d.lock(memt, 2, f"X{c}_{r}_prod"), d.lock(memt, 0, f"X{c}_{r}_cons"))
        parts.append((*locks, [d.buffer(memt, tile, f"X{c}_{r}_{i}") for i in range(2)]))
    ins = [d.bd(s2mm(memt, 0), parts[r][2][i], tile, acquire=(parts[r][0], 1), release=(parts[r][1], 1),
                name=f"X{c}_in{i}_{r}") for i in range(2) for r in range(rows)]
    d.start_chain(s2mm(memt, 0), d.chain(*ins, cyclic=True))
    d.route(mm2s(d.shim(c), 0), s2mm(memt, 0))
    ends = []
    for r, (prod, cons, bufs) in enumerate(parts):
        out = mm2s(memt, r)
        d.start_chain(out, d.chain(*[d.bd(out, b, tile, acquire=(cons, 1), release=(prod, 1),
                                          name=f"X{c}_{r}_fwd{i}") for i, b in enumerate(bufs)], cyclic=True))
        ends.append(fifo_endpoint(d, s2mm(d.compute(c, r), 1), 2, tile, f"X{c}_{r}"))
        d.route(out, s2mm(d.compute(c, r), 1))
    return ends


def transpose_op_design(p: Placed, arch: Arch, pins, noop: bool, at: tuple[int, int] | None = None,
                        validate: bool = True) -> OpDesign:
    """A transpose op through its search: its designs read and write DDR (``KindTraits.ddr_edges``)
    on the columns the search picks (a ``columns`` table pin or its ``op_pins`` fix them). A
    mapping searched on ``mapped_on`` is built for ``arch``; NOOP (ablation) derives the data-only
    twin from its tables."""
    if at is not None:
        raise ConfigError([f"{p.op.name}: a transpose does not run as a pipeline stage"], "mapping")
    op, found = _op_search(p, arch, pins)
    kernels = frozenset({("transpose", op.elem_bytes, op.unit > 1)})
    design, known = found.best_design, found.best_arrays
    if pins.mapped_on not in (None, arch):
        design, known = transpose_design(op, found.best, arch), None
    if noop:
        return OpDesign(design, "transpose", None, kernels, None, noop_twin(lower(design)), found.gap)
    return OpDesign(design, "transpose", known, kernels, NoopTwin(_no_pipeline), None, found.gap)


def _op_search(p: Placed, arch: Arch, pins) -> tuple[Transpose, SearchResult]:
    """A transpose op's ``Transpose`` and its search's answer (on ``mapped_on`` where set) under
    the graph's pins: its ``op_pins`` and a ``columns`` table pin (two different column counts for
    one op are refused, as a matmul's are: which one wins would be a guess)."""
    op = p.op
    e = op.x.elem_bytes
    t = Transpose(m=op.m, n=op.n, unit=op.k, elem_bytes=int(e) if e == int(e) else e, name=op.name)
    own = pins.op_pins_of(op.name, p.kind, op.op_class)
    cols = columns_pin(p, pins, arch)
    if cols is not None and own.cols not in (None, cols):
        raise ConfigError([f"{op.name}: cols pinned twice, {cols!r} by a table and {own.cols!r} by op_pins: give it "
                           "in one place"], "mapping")
    if cols is not None:
        own = replace(own, cols=cols)
    return t, search_transpose(t, pins.mapped_on or arch, own, pins.search_budget, control_weight(p, pins))


def _no_pipeline() -> Design:
    raise ConfigError(["a transpose does not run as a pipeline stage"], "mapping")


MAPPER = Mapper(TRANSPOSE, KindTraits(ddr_edges=True, kernel_size="vector", first_mm2s="x"), transpose_op_design,
                search=lambda p, arch, pins: _op_search(p, arch, pins)[1], pins=TRANSPOSE_PINS)
