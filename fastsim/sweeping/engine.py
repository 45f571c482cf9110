"""Run a sweep: create (or resume) the store, fan the missing chunks out, report progress."""
from __future__ import annotations

import os
import signal
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass, field, replace
from pathlib import Path

import xarray as xr

from .. import settings
from ..gc_pause import exit_without_collecting
from .malloc_trim import return_free_memory
from . import store as st
from .lock import StoreLock
from .spec import SweepSpec, load_spec, parse_spec, spec_from_dict
from .tasks import run_chunks, task_groups


@dataclass
class SweepReport:
    """What a sweep did: ``by_worker`` holds the points each dask worker (by address) computed
    now; it is empty for a sweep run in this process."""
    points: int
    computed: int
    chunks: int
    wall_s: float
    store: str
    failed: int = 0
    by_worker: dict[str, int] = field(default_factory=dict)
    # from the sweep's start (a local cluster's start and the store's creation included) until the
    # first task was stored: what a cluster's start-up and a worker's imports and JIT cost, beside
    # the steady rate (None: nothing computed)
    first_result_s: float | None = None

    @property
    def points_per_s(self) -> float:
        return self.computed / self.wall_s if self.wall_s else 0.0

    def __str__(self) -> str:
        where = f"on {len(self.by_worker)} workers" if self.by_worker else "in this process"
        return (f"{self.points} points ({self.computed} computed now, in {self.chunks} chunks {where}; "
                f"{self.failed} failed) in {self.wall_s:.1f} s: {self.points_per_s:.2f} points/s -> {self.store}")


# dask's nannies start workers with MALLOC_TRIM_THRESHOLD_ set, and once it is set glibc stops
# adapting its mmap threshold (mallopt(3)): every large numpy temporary is then mapped and unmapped
# again, and the mapping search's closed forms ran 4x slower in a worker than in this process
# (a decode point took 2.1x as long). fastsim's local workers keep glibc's default.
WORKER_MALLOC_TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
# numba in a local worker starts no threads of its own: the worker processes are the parallelism.
# The nanny sets it in the worker's environment when the worker starts (before any task imports
# numba); this process's environment stays as it is.
WORKER_NUMBA_THREADS = "distributed.nanny.environ.NUMBA_NUM_THREADS"


def _client(workers: int | None, scheduler):
    """(client, the local cluster it runs on, or None for a running scheduler's client)."""
    import dask
    from dask.distributed import Client, LocalCluster

    if scheduler is not None and not isinstance(scheduler, (str, os.PathLike)):
        return scheduler, None  # a client the caller connected (dask-gateway, say): used, never closed
    # never the process's default client: dask work of this process (reading a store) stays local,
    # and a client that dies with its scheduler leaves no default scheduler behind
    if scheduler:
        if Path(scheduler).exists():
            return Client(scheduler_file=str(scheduler), set_as_default=False), None
        return Client(scheduler, set_as_default=False), None
    # one single-threaded worker process per core; neither numba (WORKER_NUMBA_THREADS) nor the
    # engine's batch threads (worker_settings) start threads there
    # workers start with SIGINT ignored (inherited): Ctrl-C reaches this process only, which stops
    # the sweep, instead of every worker printing its own KeyboardInterrupt traceback
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with dask.config.set({WORKER_MALLOC_TRIM: None, WORKER_NUMBA_THREADS: "1"}):
            cluster = LocalCluster(n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True,
                                   dashboard_address=None)
    finally:
        signal.signal(signal.SIGINT, previous)
    return Client(cluster, set_as_default=False), cluster


def sweep(spec: SweepSpec | dict | str | Path, out: str | Path | None = None, *, workers: int | None = None,
          scheduler=None, progress: bool = True, report: list | None = None) -> xr.Dataset:
    """Run (or resume) a sweep into the zarr store ``out`` and return the stored Dataset.
    ``spec``: a parsed spec, a TOML file's path, or its tables as a dict (``spec_from_dict``).

    Without ``out`` the sweep runs in a temporary store and the Dataset comes back loaded in
    memory (small studies from Python; nothing to resume).

    workers=0 runs every chunk in this process; otherwise chunks go to a dask LocalCluster with
    ``workers`` processes (default: one per core), or to the running scheduler at ``scheduler``
    (an address such as tcp://host:8786, a scheduler file, or a connected ``distributed.Client``,
    which is left open). A new store's chunk size comes from the cluster's size
    (``store.chunk_target``): every worker gets a chunk.

    Raises ``SweepInterrupted`` on Ctrl-C and ``SchedulerLost`` when a running scheduler goes
    away; in both cases the points stored stay stored and the same call resumes.
    """
    if isinstance(spec, dict):
        spec = spec_from_dict(spec)
    elif not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    if out is None:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            return sweep(spec, Path(tmp) / "sweep.zarr", workers=0 if workers is None else workers,
                         scheduler=scheduler, progress=progress, report=report).load()
    out = str(out)
    with StoreLock(out) as lock:  # one writer per store (a second is refused; a dead one's lock taken over)
        return _run(spec, out, lock, workers, scheduler, progress, report)


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: what is stored stays stored (consolidated, resumable)."""

    def __init__(self, stored: int, points: int, store: str):
        super().__init__(stored, points, store)
        self.stored, self.points, self.store = stored, points, store

    def __str__(self) -> str:
        return (f"interrupted: {self.stored} of {self.points} points stored in {self.store}; run the same "
                "command again to resume")


class SchedulerLost(ConnectionError):
    """The running scheduler went away during a sweep (its chunks in flight were dropped): what is
    stored stays stored, and the same sweep against a running scheduler resumes."""

    def __init__(self, scheduler: str, stored: int, points: int, store: str):
        super().__init__(scheduler, stored, points, store)
        self.scheduler, self.stored, self.points, self.store = scheduler, stored, points, store

    def __str__(self) -> str:
        return (f"lost the dask scheduler {self.scheduler}: {self.stored} of {self.points} points stored in "
                f"{self.store}; run the same command again (with a running scheduler) to resume")


class _Tally:
    """Points computed and failed, per worker; drives the progress line and the lock's heartbeat."""

    def __init__(self, bar, lock: StoreLock):
        self.bar, self.lock = bar, lock
        self.computed, self.failed, self.by_worker = 0, 0, {}
        self.first_at = None  # time.perf_counter() when the first task was stored

    def add(self, points: int, failed: int, worker: str = "") -> None:
        if self.first_at is None:
            self.first_at = time.perf_counter()
        self.computed += points
        self.failed += failed
        if worker:
            self.by_worker[worker] = self.by_worker.get(worker, 0) + points
        self.bar.set_postfix(failed=self.failed, refresh=False)
        self.bar.update(points)
        self.lock.refresh()


def _run(spec: SweepSpec, out: str, lock: StoreLock, workers, scheduler, progress, report) -> xr.Dataset:
    began = time.perf_counter()
    fresh = not Path(out).exists() or st.half_created(out)  # new, or a creation that died half-way
    if not fresh:
        st.check_matches(spec, out)
    dask = None
    if (workers != 0 or scheduler is not None) and (fresh or st.pending(spec, out)):
        dask = _Dask(workers, scheduler)  # before the store: its chunk size comes from the cluster's size
    try:
        if fresh:
            st.create(spec, out, slots=dask.slots() if dask else 1)
        todo = st.pending(spec, out)
        start = time.perf_counter()
        bar = _bar(sum(st.n_points(r) for r in todo), progress)
        tally = _Tally(bar, lock)
        try:
            if dask is None:
                for region in todo:
                    tally.add(*run_chunks(spec, out, [region]))
            else:
                _run_on_dask(spec, out, todo, dask, tally)
        except KeyboardInterrupt:
            bar.close()
            stopping, dask = dask, None
            if stopping is not None:
                stopping.stop_now()
            raise SweepInterrupted(_stored(out), spec.n_points, out) from None
        except _Lost:
            bar.close()
            stopping, dask = dask, None
            stopping.stop_now()
            raise SchedulerLost(stopping.address, _stored(out), spec.n_points, out) from None
        bar.close()
    finally:
        if dask is not None:
            dask.close()
    st.remove_torn_writes(out)  # every chunk of this pass is stored: no writer of it is left
    st.consolidate(out)
    rep = SweepReport(spec.n_points, tally.computed, len(todo), time.perf_counter() - start, out,
                      tally.failed, tally.by_worker, None if tally.first_at is None else tally.first_at - began)
    if report is not None:
        report.append(rep)
    return st.open_store(out)


def _stored(out: str) -> int:
    """Points stored now (after consolidating the store's metadata)."""
    st.consolidate(out)
    return int(st.done_mask(out).sum())


class _Lost(Exception):
    """The client lost its scheduler (dask cancels every future with this reason)."""


class _Dask:
    """The client a sweep submits to and the local cluster it started (None for a running
    scheduler), closed when the sweep ends."""

    def __init__(self, workers: int | None, scheduler):
        self.client, self.cluster = _client(workers, scheduler)
        self.owned = scheduler is None or isinstance(scheduler, (str, os.PathLike))
        self.address = str(self.client.scheduler.address if self.client.scheduler else scheduler)
        self.pids = list(self.client.run(os.getpid).values()) if self.cluster is not None else []

    def slots(self) -> int:
        """Tasks the cluster runs at once: its workers' threads (0 while no worker has joined)."""
        return sum(self.client.nthreads().values())

    def close(self) -> None:
        if self.owned:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def stop_now(self) -> None:
        """Stop at once (Ctrl-C, or the scheduler gone): a task in flight cannot be interrupted
        (what it had not stored is computed again on resume), so the local workers are killed
        rather than waited for, and dask's log of the shutdown is silenced (the caller says what
        happened in one line)."""
        import logging

        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for closing in (self.client if self.owned else None, self.cluster):
            if closing is not None:
                try:
                    closing.close(timeout=5)
                except Exception:  # noqa: BLE001 - shutting down: nothing left to report
                    pass


def _run_on_dask(spec: SweepSpec, out: str, todo: list, dask: _Dask, tally: _Tally) -> None:
    """Every pending chunk on dask workers, in tasks (``task_groups``), each task's count in
    ``tally`` as it completes (the progress line is drawn here, so it works as well for a remote
    cluster). On Ctrl-C a running scheduler's tasks are cancelled (its workers outlive this
    process); raises ``_Lost`` when the scheduler goes away."""
    from dask.distributed import as_completed

    chosen = worker_settings(local=dask.cluster is not None)
    tasks = task_groups(todo, spec.shape, st.chunks_of(out), dask.slots())
    n = len(tasks)
    futures = dask.client.map(_run_chunks_with, [spec] * n, [out] * n, tasks, [chosen] * n, pure=False)
    try:
        for fut in as_completed(futures, loop=dask.client.loop):
            try:
                tally.add(*fut.result())
            except CancelledError as e:
                if getattr(e, "reason", "") == "scheduler-connection-lost":
                    raise _Lost() from e
                raise
    except KeyboardInterrupt:
        if dask.cluster is None:
            dask.client.cancel(futures)
        raise


def worker_settings(local: bool) -> settings.Settings:
    """The settings a worker runs its chunks under: the caller's (a contextvars scope does not
    cross processes), without progress bars; local workers run their batches on one thread (the
    workers are the parallelism), a running scheduler's workers as set up there."""
    chosen = replace(settings.current(), progress=False)
    return replace(chosen, threads=1) if local else chosen


def _run_chunks_with(spec: SweepSpec, out: str, regions: list[tuple[slice, ...]], chosen: settings.Settings) -> tuple:
    """``run_chunks`` in a worker under the caller's settings (local workers: one thread each, the
    workers are the parallelism, whatever the worker's environment says), and the worker's
    address. tqdm's lock is a thread lock there: its default, a multiprocessing semaphore, is
    reported leaked when Ctrl-C kills the worker, and a worker draws no bars (tqdm.set_lock, its
    public API). Each task ends by returning the C heap's free pages (``malloc_trim``). The
    worker exits without a last garbage collection: a local cluster's close waits
    for it."""
    import threading

    from distributed import get_worker
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())
    exit_without_collecting()
    try:
        with settings.use(chosen):
            result = run_chunks(spec, out, regions)
    finally:
        return_free_memory()  # the task's freed heap back to the system, whatever became of it
    try:
        worker = get_worker().address
    except ValueError:  # not in a dask worker
        worker = ""
    return (*result, worker)


def _bar(total: int, enabled: bool):
    """One line that updates: points done of all, elapsed < ETA, points/s, failed points."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="pt", disable=not enabled, smoothing=0.1, dynamic_ncols=True,
                mininterval=0.5, postfix={"failed": 0},  # points/s even below 1 (tqdm shows s/pt there)
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_noinv_fmt}{postfix}]")


__all__ = ["sweep", "SweepReport", "SweepInterrupted", "SchedulerLost", "parse_spec", "spec_from_dict", "load_spec"]
