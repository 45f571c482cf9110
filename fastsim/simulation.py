"""Public entry point: simulate designs in one batched kernel call and explain the results."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
import functools
import warnings
from typing import Iterable

import xarray as xr

from fastsim.kernels import layout as L
from fastsim.kernels.engine import simulate_batch

from .design import MM2S, Design, Loop, Release
from .errors import ConfigError, CycleLimitError, DeadlockError, LivelockError, SimulationError
from . import result_cache
from .lower import Batch, LoweredDesign, lower, pack
from .results import LEVELS, DesignArrays, design_arrays, to_dataset
from .settings import resolve_jit
from .threads import resolve_threads

_STATE_NAMES = {L.CS_IDLE: "idle", L.CS_SETUP: "BD setup", L.CS_ACQUIRE: "acquiring",
                L.CS_ACQ_LAT: "lock latency", L.CS_TRANSFER: "transferring", L.CS_RELEASE: "releasing"}


def run_batch(lowered: list[LoweredDesign], threads: int | None = None, cache: bool = True,
              jit: bool | None = None, share: bool = False) -> Batch:
    """Pack lowered designs and run the kernel on ``threads`` threads (default: every core, see
    ``fastsim.threads``), compiled or, with ``jit=False``, as plain Python (default: see
    ``fastsim.settings``); returns the batch with outputs and final state. Each design is simulated
    alone on its slice of the padded tables, so any thread count gives identical results. With
    ``cache``, a design whose tables equal an earlier one's (in this batch or a recent one, or a
    large one on disk) takes its results instead of running again (``fastsim.result_cache``: the
    same bits either way). With ``share`` too (a search's candidates, which other processes
    sharing the cache directory may reach at the same time), each design run here is claimed first
    and one that another process has claimed is waited for instead of simulated twice."""
    batch = pack(lowered)
    keys = [result_cache.key_of(lw) for lw in lowered] if cache else [None] * len(lowered)
    todo, first, twins, mine, theirs = [], {}, [], [], []
    for i, key in enumerate(keys):
        rows = result_cache.get(key)
        if rows is not None:
            result_cache.restore(rows, batch, i)
        elif key is not None and key in first:
            twins.append((i, first[key]))
        else:
            if key is not None:
                first[key] = i
            claimed = result_cache.claim(key) if share else None
            (theirs if claimed is False else todo).append(i)
            if claimed:
                mine.append(key)
    try:
        _simulate_into(batch, lowered, todo, keys, threads, jit, shared=set(mine))
    finally:
        for key in mine:
            result_cache.release(key)
    late = []
    for i in theirs:
        rows = result_cache.wait_for(keys[i])
        if rows is None:  # its holder stored nothing (a cheap or failed run) or died
            late.append(i)
        else:
            result_cache.restore(rows, batch, i)
    _simulate_into(batch, lowered, late, keys, threads, jit)
    for i, same in twins:
        result_cache.transfer(batch, same, batch, i)
    return batch


def _simulate_into(batch: Batch, lowered: list[LoweredDesign], todo: list[int], keys, threads, jit,
                   shared: set = frozenset()) -> None:
    """Run designs ``todo`` of ``batch`` (all of them in place, or a subset packed apart) and keep
    their results (on disk too for those of ``shared``, the claimed keys: another process may be
    waiting for them, however few cycles they stepped)."""
    if len(todo) == len(lowered):
        _run(batch, threads, jit)
    elif todo:
        ran = pack([lowered[i] for i in todo])
        _run(ran, threads, jit)
        for j, i in enumerate(todo):
            result_cache.transfer(ran, j, batch, i)
    for i in todo:
        result_cache.put(keys[i], batch, i, disk=keys[i] in shared)


# a design expected to run at least this many cycles is an engine call of its own, taken before
# the rest: a call's own cost is nothing next to such a run
ALONE_CYCLES = 100_000


def _run(batch: Batch, threads: int | None, jit: bool | None) -> None:
    n = len(batch.designs)
    threads = min(resolve_threads(threads), n)
    kernel = simulate_batch.variant(resolve_jit(jit))  # made here, before any thread starts
    if threads <= 1:
        kernel(*batch.kernel_args())
        return

    def run(chunk: tuple[int, int]) -> None:
        kernel(*batch.kernel_args(*chunk))

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(run, _tasks(batch.designs, threads)))


def _tasks(designs: list[LoweredDesign], threads: int) -> list[tuple[int, int]]:
    """The engine calls of a batch, as (first, end) design ranges (views: the kernel writes
    straight into the batch's arrays), in the order the threads take them. Designs expected to run
    long (``LoweredDesign.expected_cycles``) come first, one call each, longest first: two long
    prefill candidates in one chunk held a thread for twice the time while the other idled. The
    others go in contiguous chunks, about four per thread, so that no chunk leaves the threads
    unbalanced for long. Any order gives the same results: each design runs alone on its rows."""
    n = len(designs)
    size = -(-n // (4 * threads))
    alone = sorted((i for i, lw in enumerate(designs) if lw.expected_cycles >= ALONE_CYCLES),
                   key=lambda i: -designs[i].expected_cycles)
    tasks = [(i, i + 1) for i in alone]
    lo = 0
    for end in sorted(alone) + [n]:  # the runs of other designs between them, in chunks
        tasks += [(first, min(first + size, end)) for first in range(lo, end, size)]
        lo = end + 1
    return tasks


def simulate(designs: Design | Iterable[Design], *, skip: bool = True, trace: bool = False,
             max_events: int = 200_000, max_cycles: int = 2**40, livelock_cycles: int = 1 << 24,
             on_error: str = "raise", threads: int | None = None, strict: bool = False,
             fast_forward: bool | None = None, jit: bool | None = None) -> xr.Dataset:
    """Simulate one design or a batch of independent designs, cycle-exact.

    Parameters
    ----------
    designs : Design or iterable of Design
        (or of ``LoweredDesign``: already lowered, with the options they were lowered with)
    skip : bool
        Skip over cycles that provably repeat the previous one (same results, faster).
    fast_forward : bool, optional
        Jump over whole periods of a periodic steady state (same results; default: as ``skip``).
    trace : bool
        Record every BD transfer and kernel invocation (``fastsim.trace`` writes Perfetto JSON).
    max_cycles, livelock_cycles : int
        Give up after this many cycles; or when only free-running cyclic BD chains moved for this
        many cycles while required work waited.
    on_error : {"raise", "record"}
        Raise DeadlockError/LivelockError/CycleLimitError, or record ``status`` and carry on
        (useful in sweeps).
    threads : int, optional
        Threads the batch's designs are spread over (default: ``fastsim.settings``, else
        ``$FASTSIM_THREADS``, else every core); results do not depend on it.
    jit : bool, optional
        Run the engine compiled (True) or as plain Python (False; slow, for debugging); default:
        ``fastsim.settings``, else ``$FASTSIM_JIT``, else compiled. Results do not depend on it.
    strict : bool
        A design whose cores produce data for a DMA to send but which writes nothing to DDR (its
        output never leaves the array, and it does not say it keeps it on chip: ``Design.output_on_chip``) raises
        ConfigError instead of a warning (attr ``warnings`` and an ``UndrainedOutputWarning``).

    Returns
    -------
    xarray.Dataset with dim ``design`` (and ``channel``, ``core``, ``level``).
    """
    if isinstance(designs, (Design, LoweredDesign)):
        designs = [designs]
    designs = list(designs)
    if not designs:
        raise ValueError("simulate() needs at least one design")
    if on_error not in ("raise", "record"):
        raise ValueError(f"on_error = {on_error!r}: allowed 'raise' or 'record'")
    lowered = [d if isinstance(d, LoweredDesign) else
               lower(d, skip=skip, max_cycles=max_cycles, livelock_cycles=livelock_cycles,
                     max_events=max_events if trace else 0, fast_forward=fast_forward) for d in designs]
    batch = run_batch(lowered, threads, jit=jit)
    if on_error == "raise":
        for i in range(len(lowered)):
            raise_on_failure(batch, i)
    ds = to_dataset(batch, trace=trace)
    _check_outputs_leave(ds, [lw.design for lw in lowered], strict)
    return ds


def kept_run(batch: Batch, i: int) -> "KeptRun":
    """Design ``i`` of a simulated batch, kept apart from the rest of the batch: its lowered
    design and outputs only, what its summaries and Dataset read. The packed copies of its tables
    and its final state (about as large as the tables again) are not kept: a search's answer is
    cached, and a sweep's worker holds hundreds of them."""
    one = pack([batch.designs[i]])
    result_cache.transfer(batch, i, one, 0)
    return KeptRun(replace(one, inputs=(), state=(), scratch_words=0))


class KeptRun:
    """One design's engine run, kept as the engine's arrays: the Dataset (names, units, checks) is
    built only when asked. A search keeps its answer's run, and most answers (a decode step's
    ops) are only ever summarised as ``DesignArrays``: building each one's Dataset was a tenth of
    a cold decode step."""

    def __init__(self, batch: Batch):
        self.batch, self._dataset, self._arrays = batch, None, None

    def stored(self) -> tuple[dict, DesignArrays]:
        """What a disk entry keeps of the run: the engine's outputs and their numbers (unchecked:
        storing an entry must not warn about the run; reading it back checks nothing either)."""
        return self.batch.outputs, self._arrays if self._arrays is not None else design_arrays(self.batch, 0)

    def arrays(self) -> DesignArrays:
        """The run's numbers, checked as ``simulate_arrays`` checks its designs (once)."""
        if self._arrays is None:
            a = design_arrays(self.batch, 0)
            _undrained([self.batch.designs[0].design], [a.level_bytes[LEVELS.index("ddr_write")]],
                       [a.status == L.ST_OK], False)
            self._arrays = a
        return self._arrays

    def dataset(self) -> xr.Dataset:
        if self._dataset is None:
            ds = to_dataset(self.batch)
            _check_outputs_leave(ds, [self.batch.designs[0].design], strict=False)
            self._dataset = ds
        return self._dataset


class StoredRun(KeptRun):
    """A kept run read back from a disk entry: its ``DesignArrays`` and the engine's outputs as
    stored. The lowered tables its Dataset names channels and cores by are built from the design
    (rebuilt by the reader: the builders are deterministic) only when the Dataset is asked for:
    most readers only summarise."""

    def __init__(self, design: Design, outputs: dict, arrays: DesignArrays):
        # KeptRun.__init__ is not called: its ``self.batch`` would hide the lazy ``batch`` below
        self.design, self._outputs, self._dataset, self._arrays = design, outputs, None, arrays

    @functools.cached_property
    def batch(self) -> Batch:
        # unvalidated, as the search lowered it: ``SearchResult.checked`` validates the answer
        one = pack([lower(self.design, validate=False)])
        return replace(one, inputs=(), state=(), outputs=self._outputs, scratch_words=0)

    def stored(self) -> tuple[dict, DesignArrays]:
        return self._outputs, self._arrays


class UndrainedOutputWarning(UserWarning):
    """A design's cores produced output, but nothing reached DDR (see ``simulate(strict=...)``)."""


def _cores_send(d: Design) -> bool:
    """Whether some core produces data a DMA sends on: it releases a lock an MM2S BD acquires."""
    released = set()

    def walk(steps):
        for step in steps:
            if isinstance(step, Loop):
                walk(step.body)
            elif isinstance(step, Release):
                released.add(step.lock.id)
    for program in d.cores.values():
        walk(program)
    return any(b.channel.direction == MM2S and b.acquire and b.acquire[0].id in released for b in d.bds)


def _check_outputs_leave(ds: xr.Dataset, designs: list[Design], strict: bool) -> None:
    written = ds.level_bytes.values[:, LEVELS.index("ddr_write")]  # by position: .sel imports dask.array
    problems = _undrained(designs, written, ds.status.values == "ok", strict)
    if problems:
        ds.attrs["warnings"] = problems


def _undrained(designs: list[Design], written, ok, strict: bool) -> list[str]:
    """Designs whose cores produced output that never reached DDR (``simulate(strict=...)``): a
    ConfigError when strict, else warned about and returned."""
    problems = [f"design {i} ({d.name}): its cores produced output but it wrote 0 bytes to DDR; its output never "
                "leaves the array (no host task drains it); set Design.output_on_chip if that is intended"
                for i, d in enumerate(designs)
                if not d.output_on_chip and written[i] == 0 and ok[i] and _cores_send(d)]
    if problems and strict:
        raise ConfigError(problems, "design outputs")
    for text in problems:
        warnings.warn(text, UndrainedOutputWarning, stacklevel=4)
    return problems


def simulate_arrays(lowered: list[LoweredDesign], threads: int | None = None) -> list[DesignArrays]:
    """``simulate`` for callers that only summarise: the same run, checks and warnings, each
    design's numbers as plain arrays instead of a Dataset (no names, no xarray)."""
    batch = run_batch(lowered, threads)
    for i in range(len(lowered)):
        raise_on_failure(batch, i)
    out = [design_arrays(batch, i) for i in range(len(lowered))]
    _undrained([lw.design for lw in lowered], [a.level_bytes[LEVELS.index("ddr_write")] for a in out],
               [a.status == L.ST_OK for a in out], False)
    return out


def raise_on_failure(batch: Batch, i: int) -> None:
    res = batch.outputs["res"][i]
    status = int(res[L.R_STATUS])
    if status == L.ST_OK:
        return
    cycle = int(res[L.R_CYCLES])
    stuck = describe_stuck(batch, i)
    if status == L.ST_DEADLOCK:
        raise DeadlockError("deadlock: work remains but nothing can change state", i, cycle, stuck)
    if status == L.ST_LIVELOCK:
        raise LivelockError("livelock: only cyclic BD chains moved while required work waited", i,
                            cycle, stuck)
    if status == L.ST_CYCLE_LIMIT:
        raise CycleLimitError("did not finish within max_cycles", i, cycle, stuck)
    lw = batch.designs[i]
    lock = lw.design.locks[int(res[L.R_DETAIL])]
    raise SimulationError(f"lock {lock.name} on {lock.tile} overflowed past "
                          f"{lw.design.arch.lock_max_value}", i, cycle, stuck)


def _transfer_stall(lw, st, c: int) -> str:
    """Why transferring channel c of a stuck design moves nothing: an MM2S waits for room, or for
    the packet port of a shared S2MM that another packet holds; an S2MM for data."""
    if not lw.ch[c, L.CH_MM2S]:
        return "no data arriving"
    bd = int(st[c, L.S_BD])  # its BD's consumers: fan-out by packet id sends each BD on its own route
    for s in lw.cons[lw.bds[bd, L.BD_CONS_START]:lw.bds[bd, L.BD_CONS_END]]:
        owner = int(st[s, L.S_OWNER])
        if lw.ch[s, L.CH_PACKET] and owner != c:
            held = f"held by {lw.channels[owner]}" if owner >= 0 else "free"
            return f"waiting for the packet port of {lw.channels[s]} ({held})"
    return "stream buffer full (backpressure)"


def describe_stuck(batch: Batch, i: int) -> list[str]:
    """Human-readable state of every channel, core and the host of design i after it stopped."""
    lw = batch.designs[i]
    d = lw.design
    st, _, kst, _, hst, locks = (a[i] for a in batch.state[:6])
    out = []

    def lock_text(idx: int) -> str:
        lk = d.locks[idx]
        return f"lock {lk.name} on {lk.tile} (value {int(locks[idx])})"

    for c, chan in enumerate(lw.channels):
        s = int(st[c, L.S_STATE])
        bd_i = int(st[c, L.S_BD])
        if s == L.CS_IDLE:
            if st[c, L.S_QLEN] == 0:
                continue
            out.append(f"channel {chan}: idle with {int(st[c, L.S_QLEN])} queued task(s)")
            continue
        bd = d.bds[bd_i]
        text = f"channel {chan}: {_STATE_NAMES[s]} {bd}"
        if s == L.CS_ACQUIRE and bd.acquire is not None:
            lk_idx = int(lw.bds[bd_i, L.BD_ACQ_LOCK])
            text += f", needs {bd.acquire[1]} of {lock_text(lk_idx)}"
        elif s == L.CS_TRANSFER:
            left = int(st[c, L.S_REMAIN]) / L.UNITS_PER_BYTE
            text += f", {left:g} bytes left, {_transfer_stall(lw, st, c)}"
        out.append(text)
    for k, tile in enumerate(lw.core_tiles):
        s = int(kst[k, L.K_STATE])
        if s == L.KS_DONE:
            continue
        pc = int(kst[k, L.K_PC])
        if s == L.KS_ACQ_WAIT:
            lk_idx = int(lw.prog[pc, L.PROG_A])
            out.append(f"core {tile}: waiting to acquire {int(lw.prog[pc, L.PROG_B])} of {lock_text(lk_idx)}")
        else:
            out.append(f"core {tile}: at instruction {pc}, state {s}")
    pc = int(hst[0])
    if pc < len(d.host):
        op = d.host[pc]
        what = (f"push to {op.channel} (task queue full)" if hasattr(op, "bd")
                else f"wait for {op.channel} to finish its tasks")
        out.append(f"host: step {pc}: {what}")
    return out
