"""Search the mapping space of a matmul: enumerate, check, bound, simulate the best few exactly.

1. Enumerate structures (dataflow, split, rows and K split, columns, loop order, L2 residency,
   datapath) and, per structure, a grid of power-of-two L1 tiles capped by the op's extent.
2. Evaluate the whole tile grid of a structure at once in closed form (``plan.evaluate``): capacity
   and resource checks (illegal candidates keep their reason) and lower bounds on cycles from
   compute, DDR, shim columns and DMA streams.
3. Branch and bound: rank legal candidates by lower bound (then closed-form energy, then fewer
   transfers: deterministic) and simulate them cycle-exactly in batched engine calls, best-bounded
   first (the first batch: the best ``top``, of distinct families under a budget, those bounded
   well above the best waiting for the others' cycles, run only where their bound says they could
   win or tie; then the baseline mapping, if its bound says it could win), until
   no candidate left unsimulated has a lower bound below the fastest simulated cycles. The answer is
   then the fastest mapping of the whole space (``optimal``), ties broken by energy. With a
   ``budget`` (candidates simulated) the search may stop first and reports its optimality gap:
   how much faster than the answer the best unsimulated candidate might be.
   Candidates whose designs are the same (a split that divides nothing differently) are simulated
   once. Inside a graph (``control_weight`` > 0) "fastest" is by cycles plus the weighted cycles of
   the control instructions that set the design up in its dispatch (``branch_bound.objective``),
   and candidates are ranked, taken and pruned by their cycles bound plus that weighted control,
   counted without building their designs (``plan.control_counts_of``: exactly the design's).

Results are cached on everything the search reads (op, pins, arch, top, keep, budget,
control_weight) in the one cache
(``fastsim.cache``, region "search": in memory and on disk per code version, shared by later
processes and sweep workers).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ..arch import Arch
from ..cache import CACHE, Region
from ..errors import ConfigError
from ..gc_pause import gc_paused
from ..kernel_model.matmul import DIRECT_DATAPATHS, check_codegen
from .paths import STREAM_SPLITS, stream_rates
from .branch_bound import drive, drive_together, walk
from .candidates import COLUMNS, call_cycle_memo, ranked, weighed_control
from .plan import (RESOURCES, StructureBatch, check, plan_many, problem_templates, reason_text,
                   same_as_equal_split, stack, structure)
from .pins import Pins
from .search_store import CODEC
from .search_result import SearchResult
from .space import DATAFLOWS, L2_CHOICES, MATMUL_PINS, SEARCHED_SPLITS, Mapping, Matmul, baseline_mapping, split_parts

TILE_SIZES = tuple(2 ** i for i in range(10))  # 1 .. 512


# a structure's tile sizes on an axis, by the largest (``_largest_tiles``): powers of two from 4
# on (below the smallest intrinsic dimension a tile only pays more calls and transfers), or just
# the largest when that is smaller
_SIZES_UP_TO = {top: tuple(t for t in TILE_SIZES if min(4, top) <= t <= top) for top in TILE_SIZES}


def _largest_tiles(extents: np.ndarray) -> np.ndarray:
    """Per extent, the largest tile size it considers: the smallest power of two that covers
    it, at most the largest tile size (extents are below 2^53, so the float is exact)."""
    bits = np.frexp(np.asarray(extents) - 1.0)[1]  # (x - 1).bit_length()
    return 1 << np.minimum(bits, len(TILE_SIZES) - 1).astype(np.int64)


def structures(op: Matmul, arch: Arch, pins: Pins) -> list[Mapping]:
    """Tile-independent mappings worth evaluating (splits with at least half their parts idle
    are skipped unless the split is pinned)."""
    rows_opts = [pins.rows] if pins.rows else sorted({arch.compute_rows, max(1, arch.compute_rows // 2), 1},
                                                      reverse=True)
    cols_opts = [pins.cols] if pins.cols else sorted({c for c in (1, 2, 4, 8, 16, 32) if c <= arch.columns}
                                                     | {arch.columns}, reverse=True)
    asymmetric = len(set(arch.shim_read_bytes_per_cycle)) > 1 or len(set(arch.shim_write_bytes_per_cycle)) > 1
    stream_splits = ([pins.stream_split] if pins.stream_split else
                     list(STREAM_SPLITS) if len(set(stream_rates(arch, 0, arch.columns))) > 1 else ["equal"])
    paths = [pins.datapath] if pins.datapath else [d for d, _ in arch.datapath_options(op.dtype)] or [op.dtype]
    out = []
    for flow in pins.dataflow or DATAFLOWS:
        orders = [pins.order or "m"] if flow != "os" else ([pins.order] if pins.order else ["m", "n"])
        l2s = [pins.l2] if pins.l2 is not None else {"os": L2_CHOICES, "ws": ("", "a"), "is": ("", "b")}[flow]
        for split in [pins.split] if pins.split else SEARCHED_SPLITS:
            for rows in rows_opts:
                for ks in [pins.k_split] if pins.k_split else [x for x in (1, 2, 4, 8) if rows % x == 0]:
                    if rows % ks or ks > max(1, op.k):
                        continue
                    groups = rows // ks
                    for cols in cols_opts:
                        pm, pn = split_parts(split, cols, groups)
                        # at least half the parts idle: the same busy parts exist with half the
                        # columns or groups; fewer idle (3 rows on 4 columns) can be fastest
                        if (pm >= 2 * op.m or pn >= 2 * op.n) and not pins.split:
                            continue
                        starts = ([pins.col0] if pins.col0 is not None else
                                  range(arch.columns - cols + 1) if asymmetric else [0])
                        for col0 in starts:
                            for order in orders:
                                for l2 in l2s:
                                    for dp in paths:
                                        for how in stream_splits:
                                            out.append(Mapping(flow, split, (0, 0, 0), cols, rows, col0, ks,
                                                               order, l2, dp, how, pins.buffers or 2,
                                                                       pins.k_panel or 1, pins.c_buffers or 2))
    return out


def _grid(op: Matmul, batch: StructureBatch, pins: Pins):
    """Tiles of a batch as (1, T) rows, and which of them each structure considers (S, T): the
    power-of-two sizes up to its own extents (``_largest_tiles``), or just the pinned tile."""
    if pins.tile:
        m, k, n = (np.array([[x]]) for x in pins.tile)
        return m, k, n, np.ones((len(batch.structures), 1), bool)
    sizes, masks = [], []
    for extent in (-(-op.m // batch.pm), -(-op.k // batch.pk), -(-op.n // batch.pn)):
        top = _largest_tiles(extent)  # (S, 1)
        axis = np.array(sorted(set().union(*(_SIZES_UP_TO[x] for x in np.unique(top).tolist()))))
        sizes.append(axis)
        masks.append((axis >= np.minimum(top, 4)) & (axis <= top))  # (S, sizes on this axis)
    m, k, n = (g.ravel()[None, :] for g in np.meshgrid(*sizes, indexing="ij"))
    # a structure keeps a tile when each of its sizes is in its range on that axis
    km, kk, kn = masks
    keep = (km[:, :, None, None] & kk[:, None, :, None] & kn[:, None, None, :]).reshape(len(batch.structures), -1)
    return m, k, n, keep


def _batches(op: Matmul, arch: Arch, pins: Pins) -> list[StructureBatch]:
    """Resolved structures grouped by what changes the plan's branches (dataflow, order, L2), in
    enumeration order, in batches of at most 256. They depend on the op's dtype, static weights
    and extents, and on an extent only up to the most parts a split can make of it (``structures``
    drops splits into twice the extent's parts and more): every context of a sweep, and every fused
    variant of an op, shares them through the one cache (region "structures"); so does every tile
    pinned in a space (kernel sharing bounds one space per held kernel): structures have no tile."""
    most_parts = arch.columns * arch.compute_rows  # of M or N; K splits into at most 8
    untiled = replace(pins, tile=None)
    key = (min(op.m, most_parts + 1), min(op.k, 9), min(op.n, most_parts + 1), op.dtype, op.static_b, repr(arch),
           untiled)
    found = CACHE.get(STRUCTURES, key)
    if found is None:
        found = _batches_of(op, arch, untiled)
        CACHE.put(STRUCTURES, key, found)
    return found


STRUCTURES = "structures"
CACHE.add_region(Region(STRUCTURES, 64))


def _batches_of(op: Matmul, arch: Arch, pins: Pins) -> list[StructureBatch]:
    groups: dict[tuple, list] = {}
    for base in structures(op, arch, pins):
        st = structure(op, base, arch)
        if not isinstance(st, str) and (pins.stream_split or not same_as_equal_split(st, arch)):
            groups.setdefault((base.dataflow, base.order, base.l2, base.buffers, base.k_panel, base.c_buffers),
                              []).append(st)
    return [stack(g[i:i + 256], arch) for g in groups.values() for i in range(0, len(g), 256)]


REGION = "search"
# live answers, then packed ones (``cache.Cache``): a sweep worker's hits on a live answer came
# within the last 78 searches (one process, four of ``ablation_100k``'s tasks); packed, an answer
# is about 15 kB instead of about 220 kB, and a hit rebuilds its design (a decode point's 47
# answers: 2.6 ms each, median, where searching again took 40 ms)
CACHE.add_region(Region(REGION, 128, CODEC, packed_size=1024))


def search(op: Matmul, arch: Arch, pins: Pins = Pins(), top: int = 6, keep: int = 50,
           budget: int | None = None, control_weight: float = 0.0, report: bool = True, *,
           validate: bool = True) -> SearchResult:
    """Find the fastest legal mapping of ``op`` (see the module docstring): the best of the space,
    or, when ``budget`` candidates were simulated first, the best found with its gap.
    ``validate=False`` leaves the answer's design checks to the caller (``SearchResult.checked``).
    ``control_weight``: set-ups of the design inside a dispatch per simulated run, which the
    objective charges (``branch_bound.objective``); 0: ranked by cycles alone (an op that is a
    dispatch of its own). ``report=False``: the answer lists only the simulated candidates as
    ranked and none as rejected (their plans are made for the lists alone: a pointwise conv's
    search, whose lists no one reads, planned ~95 rows each); the search itself is the same."""
    MATMUL_PINS.validate(pins, arch)
    pins = held_to_kernel(op, arch, pins)
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ConfigError([f"budget = {budget!r}: must be a whole number of candidates >= 1 (or unset: exact)"],
                          "mapping search")
    key = _key(op, arch, pins, top, keep, budget, control_weight, report)
    result = CACHE.get(REGION, key, context=arch)  # this process's, or an earlier one's on disk
    if result is None:
        with gc_paused():
            result = drive(_search(op, arch, pins, top, keep, budget, control_weight, report))
        CACHE.put(REGION, key, result)
    return result.checked() if validate else result


def search_many(requests: list[tuple], done=None) -> None:
    """Run the searches of ``requests`` (``search``'s arguments op, arch, pins, top, keep, budget and,
    optionally, control_weight and report)
    not answered yet, together: each step's candidates of all of them in one engine call
    (``branch_bound.drive_together``), the answers into the cache where ``search`` finds them. A
    decode step's ops each simulate a few candidates; alone, each was an engine call of its own.
    ``done()``, if given, is called as each search ends (a progress bar)."""
    todo = {}
    for request in requests:
        op, arch, pins = request[:3]
        try:
            MATMUL_PINS.validate(pins, arch)
            request = (op, arch, held_to_kernel(op, arch, pins), *request[3:])
        except ConfigError:
            continue  # ``search`` says so, alone
        key = _key(*request)
        if key not in todo and CACHE.get(REGION, key, context=arch) is None:
            todo[key] = request
    if len(todo) < 2:
        return  # nothing to share an engine call with: ``search`` runs it alone
    with gc_paused():
        answers = drive_together([_search(*args) for args in todo.values()], done)
    for key, result in zip(todo, answers):
        if not isinstance(result, ConfigError):  # ``search`` raises it again when asked
            CACHE.put(REGION, key, result)


def held_to_kernel(op: Matmul, arch: Arch, pins: Pins) -> Pins:
    """``pins`` with a generated kernel's search held to the datapath it was measured on
    (``kernel_model.matmul.DIRECT_DATAPATHS``), whichever door the search is entered by; another
    datapath pinned, or none the op can run on, is refused."""
    if op.codegen == "external":
        return pins
    allowed = [d for d, _ in arch.datapath_options(op.dtype)]
    path = pins.datapath or next((d for d in DIRECT_DATAPATHS if d in allowed), op.dtype)
    check_codegen(arch, op.codegen, path)
    return replace(pins, datapath=path)


def _key(op: Matmul, arch: Arch, pins: Pins, top: int, keep: int, budget: int | None,
         control_weight: float = 0.0, report: bool = True) -> tuple:
    # ops differing only in name share it
    return (replace(op, name=""), pins, repr(arch), top, keep, budget, control_weight, report)


BOUND_REGION = "search_bound"
CACHE.add_region(Region(BOUND_REGION, 4096))


def lower_bound_cycles(op: Matmul, arch: Arch, pins: Pins = Pins()) -> float:
    """The fewest cycles any legal mapping of ``op`` under ``pins`` can take, from the closed-form
    bounds alone (nothing simulated; inf when none is legal): no search of that space answers
    faster. Cheap next to a search: what decides whether a search is worth running."""
    MATMUL_PINS.validate(pins, arch)
    pins = held_to_kernel(op, arch, pins)
    key = (replace(op, name=""), pins, repr(arch))
    found = CACHE.get(BOUND_REGION, key)
    if found is None:
        table = _Candidates(op, arch, pins)
        legal = table.a["reason"] < 0
        found = float(table.a["bound"][legal].min()) if legal.any() else float("inf")
        CACHE.put(BOUND_REGION, key, found)
    return found


def _search(op: Matmul, arch: Arch, pins: Pins, top: int, keep: int, budget: int | None,
            control_weight: float = 0.0, report: bool = True):
    """Rank every candidate in closed form, then simulate in order of lower bound until no
    unsimulated candidate can beat the fastest simulated one (or the budget is spent). A generator
    of the batches to simulate (``branch_bound.walk``) returning the ``SearchResult``."""
    from ..simulation import kept_run

    # the illegal candidates a search reports (the best ``keep``) are the only ones whose numbers it
    # reads: where it reports none, their numbers are not computed (most candidates are illegal)
    table = _Candidates(op, arch, pins, control_weight, keep_illegal=keep if report else 0)
    is_legal = table.a["reason"] < 0
    n_legal = int(np.count_nonzero(is_legal))
    illegal_i = table.best(~is_legal, keep)
    by_reason = table.rejected_by_reason()
    if not n_legal:  # the error names the closest: ranked again with their numbers
        table = _Candidates(op, arch, pins, control_weight, keep_illegal=5)
        closest = table.planned_all([table.row(i) for i in table.best(table.a["reason"] >= 0, 5)])
        raise ConfigError([f"no legal mapping for {op.name} {op.m}x{op.k}x{op.n} {op.dtype} "
                           f"({table.total} candidates); closest: " + "; ".join(
                               f"{r['mapping'].label()}: {r['reason']}" for r in closest)], "mapping search")
    legal = [table.row(i) for i in table.best(is_legal, max(keep, 8 * top))]
    # a budget spends few simulations: spread them over families (``_distinct``); an exact search
    # simulates every candidate that could win anyway, so it goes by bound alone and never runs a
    # family whose bound is already beaten
    chosen = _distinct(legal, top) if budget is not None else legal[:top]
    table.planned_all(chosen)  # their bounds decide which of them run (``walk``)
    baseline = None
    if replace(pins, dataflow=()) == Pins() and (not pins.dataflow or "os" in pins.dataflow):
        baseline = _baseline(op, arch, legal, chosen)
    explored = _MatmulSpace(op, arch, table, is_legal)
    fastest, _, count = yield from walk(explored, chosen, budget,
                                         None if baseline is None else table.planned(baseline), control_weight)
    for r in explored.rows:
        if r["design"] is not fastest["design"]:
            r["design"].discard()
    listed = legal[:keep] if report else []
    ranked = [_public(r, fastest) for r in table.planned_all([explored.known(r) for r in listed])]
    ranked += [_public(r, fastest) for r in explored.rows if all(r["mapping"] != x["mapping"] for x in listed)]
    rejected = [dict(_public(r, None), reason=r["reason"])
                for r in table.planned_all([table.row(i) for i in illegal_i[:keep if report else 0]])]
    return SearchResult(op, fastest["mapping"], fastest["cycles"], ranked, rejected, table.total, n_legal,
                        by_reason, fastest["design"], kept_run(*fastest["run"]), fastest["lowered"],
                        count, explored.unexplored_bound(),
                        best_control_cycles=fastest["objective"] - fastest["cycles"])


class _MatmulSpace:
    """The matmul candidates as ``branch_bound`` walks them: the table's legal rows not simulated
    yet (``left``), and designs built once for mappings that build the same one (``_design_key``)."""

    group = "mapping search"

    def __init__(self, op: Matmul, arch: Arch, table: "_Candidates", is_legal):
        self.op, self.arch, self.table, self.name = op, arch, table, op.name
        self.left = is_legal.copy()  # legal candidates not yet simulated
        self.rows: list[dict] = []  # every simulated row, in simulation order
        self.by_design: dict[Mapping, dict] = {}  # a design's key mapping (``_design_key``) -> its simulated row

    def take(self, size: int, below: float) -> list[dict]:
        t = self.table
        return [t.row(i) for i in t.best(self.left & (t.a["objective_bound"] < below), size)]

    def unexplored_bound(self) -> float:
        bounds = self.table.a["objective_bound"][self.left]
        return float(bounds.min()) if len(bounds) else float("inf")

    def tie(self, row: dict) -> tuple:
        return (row["energy_pj"],)  # less energy first

    def known(self, row: dict) -> dict:
        """``row`` with its simulation, when one of the same mapping ran."""
        for r in self.rows:
            if r["mapping"] == row["mapping"]:
                return r
        return row

    def simulate(self, batch: list[dict], cap_cycles: int | None) -> list[dict]:
        from ..simulation import run_batch

        prepared = self.prepare(batch, cap_cycles)
        return self.finish(prepared, run_batch(prepared.runs, share=prepared.share) if prepared.runs else None, 0)

    def prepare(self, batch: list[dict], cap_cycles: int | None) -> "_Prepared":
        """The designs of ``batch`` built and lowered (one per distinct design), to be simulated."""
        new, copies = [], []
        self.table.planned_all(batch)
        for r in batch:
            if "index" in r:
                self.left[r["index"]] = False
            same = self.by_design.get(_design_key(r["mapping"]))
            if same is not None:
                copies.append((r, same))
            else:
                self.by_design[_design_key(r["mapping"])] = r
                new.append(r)
        return _Prepared(new, copies, *_build(self.op, self.arch, new, cap_cycles))

    def finish(self, prepared: "_Prepared", batch, offset: int) -> list[dict]:
        """The rows of ``prepared`` with their simulations, read from ``batch`` at ``offset``."""
        _fill(self.arch, prepared, batch, offset)
        for r, same in prepared.copies:
            r.update({k: same[k] for k in ("design", "lowered", "run", "status", "cycles", "bound_by")})
        done = prepared.new + [r for r, _ in prepared.copies]
        self.rows += done
        return done


@dataclass
class _Prepared:
    """A batch of candidates ready for the engine: the rows to simulate (``new``), those that build
    one of their designs (``copies``), the designs, their lowered tables, the tables to run (capped)
    and whether to claim them (another worker may be simulating the same)."""

    new: list[dict]
    copies: list[tuple]
    designs: list
    lowered: list
    runs: list
    share: bool


def _design_key(mp: Mapping) -> Mapping:
    """One mapping for all that build the same design: with one output producer per column
    (rows / k_split == 1) the ``n`` split assigns parts as ``2d`` does, and on one column the ``m``
    split does (``design._consumers`` and ``_hosted_parts`` give the same parts, hosted alike)."""
    groups = mp.rows // mp.k_split
    if mp.split == "2dt" and (groups == 1 or mp.cols == 1):  # one producer per column, or one column
        mp = replace(mp, split="m" if groups == 1 else "n")
    if (mp.split == "n" and groups == 1) or (mp.split == "m" and mp.cols == 1):
        return replace(mp, split="2d")
    return mp


class _Ranked:
    """Every candidate of a search space ranked in closed form, built one structure batch at a time
    (``_add``): the legal ones, and, with ``keep_illegal``, each batch's best illegal ones by
    ``control_weight``'s objective bound (the closest rejected a search reports come from those), as
    flat columns ``a`` (``candidates.COLUMNS`` with ``base``, ``m``, ``k``, ``n`` in place of ``s`` and
    ``t``). Illegal candidates are counted per first violated check: most are illegal, and a search
    never simulates one. Without ``keep_illegal`` nothing here depends on the weight, so the
    bound of a space and every search of it share one (``_ranked_legal``)."""

    def __init__(self, op: Matmul, arch: Arch, pins: Pins, checks: list, control_weight=0.0, keep_illegal: int = 0):
        self.bases: list[Mapping] = []
        self.total = 0  # candidates enumerated, legal or not
        self.rejected = np.zeros(len(checks), np.int64)  # illegal candidates per first violated check
        memo = call_cycle_memo(op, arch)  # per (datapath, tile grid): batches and searches share grids
        cols: dict[str, list] = {name: [] for name in ("base", "m", "k", "n", *COLUMNS[2:])}
        for batch in _batches(op, arch, pins):
            self._add(op, arch, batch, pins, memo, control_weight, keep_illegal, cols)
        if not self.bases:
            raise ConfigError([f"no mapping structure fits {op.name} on {arch.name} with {pins}"], "mapping search")
        self.a = {name: np.concatenate(v) for name, v in cols.items()}
        self.rows = len(self.a["bound"])

    def _add(self, op: Matmul, arch: Arch, batch: StructureBatch, pins: Pins, memo: dict, control_weight,
             keep_illegal: int, cols: dict) -> None:
        """Rank one batch's tile grid and append the candidates kept (``reason``: the first violated
        check, -1 legal)."""
        m, k, n, considered = _grid(op, batch, pins)
        found = ranked(op, batch, arch, m, k, n, considered, memo, illegal_numbers=keep_illegal > 0)
        illegal = found["reason"] >= 0
        self.total += len(illegal)
        self.rejected += np.bincount(found["reason"][illegal], minlength=len(self.rejected))
        kept = ~illegal
        if keep_illegal > 0:
            bound = _objective_bound(found, control_weight, arch)
            kept[_best_of(np.nonzero(illegal)[0], _bucket(bound), found["energy"], found["transfers"],
                          keep_illegal)] = True
        found = {name: v[kept] for name, v in found.items()}
        for name, v in (("m", m), ("k", k), ("n", n)):
            cols[name].append(v.reshape(-1)[found["t"]])
        for name in COLUMNS[2:]:
            cols[name].append(found[name])
        cols["base"].append(len(self.bases) + found["s"])
        self.bases += [st.mapping for st in batch.structures]


RANKED = "ranked_spaces"
CACHE.add_region(Region(RANKED, 32))
# a larger table (a prefill projection's 10^5-10^6 legal rows) is not kept; kept ones' columns take
# at most 32 x 32,768 rows x 10 columns x 8 bytes = 84 MB (a decode point's are 17,000-25,000 rows;
# each table also holds a list of its structures' mappings, which the structure cache shares)
RANKED_ROWS_KEPT = 32768


def _ranked_legal(op: Matmul, arch: Arch, pins: Pins, checks: list) -> _Ranked:
    """The legal candidates of ``op``'s space under ``pins``, kept for the next asker: a space's
    bound (``lower_bound_cycles``) and its searches under any control weight rank the same table,
    and kernel sharing asks for both within a few dozen other spaces. Kept tables are read-only."""
    key = (replace(op, name=""), pins, repr(arch))
    found = CACHE.get(RANKED, key)
    if found is None:
        found = _Ranked(op, arch, pins, checks)
        for v in found.a.values():
            v.setflags(write=False)
        found.rejected.setflags(write=False)
        if found.rows <= RANKED_ROWS_KEPT:
            CACHE.put(RANKED, key, found)
    return found


def _objective_bound(found: dict, control_weight, arch: Arch) -> np.ndarray:
    """A lower bound of each candidate's objective (``branch_bound.objective``): its bound and its
    weighed control (``bound`` alone when the weight is 0)."""
    if not control_weight:
        return found["bound"]
    return found["bound"] + weighed_control(found["layer"], found["repeat"], control_weight, arch)


class _Candidates:
    """A search's ranked candidates (``_Ranked``) with the columns its control weight adds:
    ``objective_bound``, ``bound`` plus the cycles of the candidate's weighed control
    (``weighed_control`` of its control instructions, counted in closed form without building its
    design; ``bound`` alone when ``control_weight`` is 0): a lower bound of the candidate's
    objective (``branch_bound.objective``), by which candidates are ranked, taken and pruned; and
    its rank ``bucket``. A search has 10^5 and more candidates, and only the few it
    reports become rows with a plan."""

    def __init__(self, op: Matmul, arch: Arch, pins: Pins, control_weight: float = 0.0, keep_illegal: int = 0):
        self.op, self.arch, self.control_weight = op, arch, control_weight
        self.checks = problem_templates(arch)  # a candidate's ``reason`` indexes these
        table = (_Ranked(op, arch, pins, self.checks, control_weight, keep_illegal) if keep_illegal
                 else _ranked_legal(op, arch, pins, self.checks))
        self.bases, self.total, self.rejected = table.bases, table.total, table.rejected
        a = dict(table.a)
        a["objective_bound"] = _objective_bound(a, control_weight, arch)
        # bounds within 0.5 % tie; then less energy, then fewer DMA transfers per core (less
        # per-transfer overhead the bounds do not see, and a shorter simulation); deterministic
        a["bucket"] = _bucket(a["objective_bound"])
        self.a = a

    def best(self, mask, count: int):
        """The ``count`` best candidates of ``mask`` in rank order."""
        return _best_of(np.nonzero(mask)[0], self.a["bucket"], self.a["energy"], self.a["transfers"], count)

    def rejected_by_reason(self) -> dict[str, int]:
        """How many illegal candidates each check rejected, by the check's short name."""
        by_reason = {}
        for r in np.nonzero(self.rejected)[0]:
            short = self.checks[r].split(":")[0]
            by_reason[short] = by_reason.get(short, 0) + int(self.rejected[r])
        return by_reason

    def row(self, i) -> dict:
        """Candidate i; its plan (the closed form for it alone) comes with ``planned``: a search
        reports few of the rows it ranks."""
        a = self.a
        mp = replace(self.bases[a["base"][i]], tile=(int(a["m"][i]), int(a["k"][i]), int(a["n"][i])))
        return {"mapping": mp, "index": i}

    def planned(self, r: dict) -> dict:
        """``r`` with its plan, and an illegal candidate's reason with its own numbers."""
        return self.planned_all([r])[0]

    def planned_all(self, rows: list[dict]) -> list[dict]:
        """``planned`` of each row, the plans made together (``plan.plan_many``)."""
        todo = [r for r in rows if "plan" not in r]
        pairs = [(structure(self.op, r["mapping"], self.arch), r["mapping"].tile) for r in todo]
        for r, (s, _), plan in zip(todo, pairs, plan_many(self.op, pairs, self.arch)):
            r.update(_row(self.op, r["mapping"], self.arch, (s, plan)))
            i = r.get("index", -1)
            if i >= 0 and self.a["reason"][i] >= 0:
                r["reason"] = reason_text(self.checks[self.a["reason"][i]], r["plan"])
        return rows


def _bucket(objective_bound: np.ndarray) -> np.ndarray:
    """Rank buckets: objective bounds within 0.5 % of each other tie."""
    return np.floor(np.log(np.maximum(objective_bound, 1)) / np.log(1.005))


def _best_of(idx: np.ndarray, bucket, energy, transfers, count: int) -> np.ndarray:
    """The ``count`` best of candidates ``idx`` (ascending) in rank order: bucket, then less
    energy, fewer transfers, lower index. A full sort of every candidate (10^5 and more) would cost
    more than the rest of the ranking, so only those in the best ``count`` buckets (ties included)
    are sorted."""
    if count <= 0:
        return idx[:0]
    if len(idx) > count:
        cut = np.partition(bucket[idx], count - 1)[count - 1]
        idx = idx[bucket[idx] <= cut]
    return idx[np.lexsort((idx, transfers[idx], energy[idx], bucket[idx]))][:count]


def _row(op: Matmul, mp: Mapping, arch: Arch, planned: tuple) -> dict:
    """``mp``'s row with its plan (``planned``: its structure and plan)."""
    s, plan = planned
    return {"mapping": mp, "lower_bound_cycles": float(plan["lower_bound_cycles"]),
            "energy_pj": float(plan["energy_pj"]), "plan": plan, "structure": s}


def _baseline(op: Matmul, arch: Arch, legal: list[dict], chosen: list[dict]) -> dict | None:
    """The fixed whole_array mapping's row, to be simulated when it could win (when legal, not in
    the first batch already, and unless it would leave whole rows or columns of cores computing
    padding, as ``structures`` skips), so that the answer is never slower."""
    baseline = baseline_mapping(arch)
    s = structure(op, baseline, arch)
    if isinstance(s, str) or s.pm > op.m or s.pn > op.n:  # whole M or N parts of padding: skipped
        return None
    baseline = replace(baseline, datapath=s.macs_key)
    if any(r["mapping"] == baseline for r in chosen):
        return None
    try:
        planned = check(op, baseline, arch)
    except ConfigError:
        return None
    return next((r for r in legal if r["mapping"] == baseline), None) or _row(op, baseline, arch, planned)


def _distinct(rows: list[dict], top: int) -> list[dict]:
    """The best ``top`` candidates, at most two per (dataflow, split, rows used) family, so that one
    family's near-identical variants do not crowd out the others: the bounds cannot see every
    difference (a deeper pipeline behind the same bottleneck), the simulation can."""
    out, per_family = [], {}
    for r in rows:
        mp = r["mapping"]
        fam = (mp.dataflow, mp.split, mp.rows)
        if per_family.get(fam, 0) >= 2:
            continue
        per_family[fam] = per_family.get(fam, 0) + 1
        out.append(r)
        if len(out) == top:
            break
    return out


def _build(op: Matmul, arch: Arch, rows: list[dict], cap_cycles: int | None = None) -> tuple:
    """(designs, lowered tables, tables to run, share) of ``rows``. With ``cap_cycles``, a run stops
    at that cycle: its candidate cannot beat the one that set the cap, which is all the search needs
    to know (status ``cycle_limit``, cycles = the cap); the rows keep their uncapped tables."""
    from .. import result_cache
    from ..lower import capped, lower
    from .design import matmul_design

    designs = [matmul_design(op, r["mapping"], arch, planned=(r["structure"], r["plan"])) for r in rows]  # planned rows
    # kept: a caller that derives the NOOP twin needs them. Unvalidated: the answer's design is
    # validated where it is used (``SearchResult.checked``); a loser cannot change the answer, so
    # its checks (a fifth of a decode sweep point's time) are skipped
    lowered = [lower(d, validate=False) for d in designs]
    runs = [capped(lw, cap_cycles, r["lower_bound_cycles"]) for lw, r in zip(lowered, rows)]
    # another worker may be simulating the same candidates: claim them, unless none can be costly
    # (a run steps at most its cycles, and every candidate takes at least its lower bound)
    share = bool(rows) and max(r.get("lower_bound_cycles", np.inf) for r in rows) >= result_cache.COSTLY_STEPS
    return designs, lowered, runs, share


def _fill(arch: Arch, prepared: _Prepared, batch, offset: int) -> None:
    """Each new row's design, tables, run and outcome, its run being design ``offset + i`` of ``batch``."""
    from fastsim.kernels import layout as L

    from ..report import utilization_of
    from ..results import STATUS_NAMES, design_arrays

    for i, r in enumerate(prepared.new):
        a = design_arrays(batch, offset + i)
        r["design"], r["lowered"], r["run"] = prepared.designs[i], prepared.lowered[i], (batch, offset + i)
        r["status"], r["cycles"] = STATUS_NAMES[a.status], a.cycles
        if a.status == L.ST_OK:
            use = utilization_of(a, arch, 0.0)
            r["bound_by"] = max(use, key=use.get)
        else:
            r["bound_by"] = r["status"]


def _public(r: dict, best: dict | None) -> dict:
    mp, plan = r["mapping"], r["plan"]
    out = {f.name: getattr(mp, f.name) for f in fields(Mapping)}
    out.update(label=mp.label(), lower_bound_cycles=r["lower_bound_cycles"],
               bound_resource=RESOURCES[int(np.argmax(plan["bounds"]))], energy_pj=r["energy_pj"],
               simulated_cycles=r.get("cycles", -1), status=r.get("status", ""),
               simulated_bound_by=r.get("bound_by", ""), chosen=best is not None and r is best)
    for key in ("ddr_read_bytes", "ddr_write_bytes", "shim_mem_bytes", "mem_compute_bytes", "psum_bytes",
                "l1_bytes", "l2_bytes", "padding_waste", "core_cycles"):
        out[key] = float(plan[key])
    return out
