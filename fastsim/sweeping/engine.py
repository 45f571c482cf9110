"""Run a sweep: create (or resume) the store, fan the missing chunks out, report progress."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path

import xarray as xr

from .. import settings
from . import store as st
from .lock import StoreLock
from .spec import SweepSpec, load_spec, parse_spec, spec_from_dict
from .tasks import run_chunk


@dataclass
class SweepReport:
    points: int
    computed: int
    chunks: int
    wall_s: float
    store: str

    @property
    def points_per_s(self) -> float:
        return self.computed / self.wall_s if self.wall_s else 0.0

    def __str__(self) -> str:
        return (f"{self.points} points ({self.computed} computed now, in {self.chunks} chunks) in "
                f"{self.wall_s:.1f} s: {self.points_per_s:.2f} points/s -> {self.store}")


# dask's nannies start workers with MALLOC_TRIM_THRESHOLD_ set, and once it is set glibc stops
# adapting its mmap threshold (mallopt(3)): every large numpy temporary is then mapped and unmapped
# again, and the mapping search's closed forms ran 4x slower in a worker than in this process
# (a decode point took 2.1x as long). fastsim's local workers keep glibc's default.
WORKER_MALLOC_TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
# numba in a local worker starts no threads of its own: the worker processes are the parallelism.
# The nanny sets it in the worker's environment when the worker starts (before any task imports
# numba); this process's environment stays as it is.
WORKER_NUMBA_THREADS = "distributed.nanny.environ.NUMBA_NUM_THREADS"


def _client(workers: int | None, scheduler: str | None):
    import dask
    from dask.distributed import Client, LocalCluster

    if scheduler:
        if Path(scheduler).exists():
            return Client(scheduler_file=scheduler), None
        return Client(scheduler), None
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
    return Client(cluster), cluster


def sweep(spec: SweepSpec | dict | str | Path, out: str | Path | None = None, *, workers: int | None = None,
          scheduler: str | None = None, progress: bool = True, report: list | None = None) -> xr.Dataset:
    """Run (or resume) a sweep into the zarr store ``out`` and return the stored Dataset.
    ``spec``: a parsed spec, a TOML file's path, or its tables as a dict (``spec_from_dict``).

    Without ``out`` the sweep runs in a temporary store and the Dataset comes back loaded in
    memory (small studies from Python; nothing to resume).

    workers=0 runs every chunk in this process; otherwise chunks go to a dask LocalCluster with
    ``workers`` processes (default: one per core), or to the running scheduler at ``scheduler``
    (an address such as tcp://host:8786, or a scheduler file).
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


def _run(spec: SweepSpec, out: str, lock: StoreLock, workers, scheduler, progress, report) -> xr.Dataset:
    if not Path(out).exists() or st.half_created(out):
        st.create(spec, out)  # new, or a creation that died half-way (no spec digest yet): nothing to keep
    else:
        st.check_matches(spec, out)
    todo = st.pending(spec, out)
    all_regions = st.regions(spec)
    start = time.perf_counter()
    bar = _bar(sum(st.n_points(all_regions[i]) for i in todo), progress)
    try:
        if workers == 0 and not scheduler:
            computed = _run_here(spec, out, todo, lock, bar)
        else:
            computed = _run_on_dask(spec, out, todo, lock, bar, workers, scheduler) if todo else 0
    except KeyboardInterrupt:
        bar.close()
        st.consolidate(out)
        raise SweepInterrupted(int(st.open_store(out)["done"].values.sum()), spec.n_points, out) from None
    bar.close()
    st.consolidate(out)
    rep = SweepReport(spec.n_points, computed, len(todo), time.perf_counter() - start, out)
    if report is not None:
        report.append(rep)
    return st.open_store(out)


def _run_here(spec: SweepSpec, out: str, todo: list[int], lock: StoreLock, bar) -> int:
    """Every pending chunk in this process; the points computed."""
    computed = 0
    for chunk in todo:
        _, n = run_chunk(spec, out, chunk)
        computed += n
        bar.update(n)
        lock.refresh()
    return computed


def _run_on_dask(spec: SweepSpec, out: str, todo: list[int], lock: StoreLock, bar, workers, scheduler) -> int:
    """Every pending chunk on dask workers; the points computed. On Ctrl-C the local cluster's
    workers (which ignore SIGINT) are closed without waiting for their chunks."""
    from dask.distributed import as_completed

    client, cluster = _client(workers, scheduler)
    chosen = worker_settings(local=cluster is not None)
    pids = list(client.run(os.getpid).values()) if cluster is not None else []
    computed, futures = 0, []
    try:
        futures = client.map(_run_chunk_with, [spec] * len(todo), [out] * len(todo), todo,
                             [chosen] * len(todo), pure=False)
        for fut in as_completed(futures):
            _, n = fut.result()
            computed += n
            bar.update(n)
            lock.refresh()
    except KeyboardInterrupt:
        if cluster is None:  # a running scheduler's workers outlive this process: stop its chunks there
            client.cancel(futures)
        _stop_now(client, cluster, pids)
        raise
    client.close()
    if cluster is not None:
        cluster.close()
    return computed


def _stop_now(client, cluster, pids: list[int]) -> None:
    """Stop at once after Ctrl-C: a chunk in flight cannot be interrupted (its points are computed
    again on resume), so the local workers are killed rather than waited for, and dask's log of
    the shutdown is silenced (the caller says what happened in one line)."""
    import logging
    import signal as sig

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    for pid in pids:
        try:
            os.kill(pid, sig.SIGKILL)
        except OSError:
            pass
    for closing in (client, cluster):
        if closing is not None:
            try:
                closing.close(timeout=5)
            except Exception:  # noqa: BLE001 - shutting down after Ctrl-C: nothing left to report
                pass


def worker_settings(local: bool) -> settings.Settings:
    """The settings a worker runs its chunks under: the caller's (a contextvars scope does not
    cross processes), without progress bars; local workers run their batches on one thread (the
    workers are the parallelism), a running scheduler's workers as set up there."""
    chosen = replace(settings.current(), progress=False)
    return replace(chosen, threads=1) if local else chosen


def _run_chunk_with(spec: SweepSpec, out: str, chunk: int, chosen: settings.Settings) -> tuple[int, int]:
    """``run_chunk`` in a worker under the caller's settings (local workers: one thread each, the
    workers are the parallelism, whatever the worker's environment says). tqdm's lock is a thread
    lock there: its default, a multiprocessing semaphore, is reported leaked when Ctrl-C kills the
    worker, and a worker draws no bars (tqdm.set_lock, its public API)."""
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())
    with settings.use(chosen):
        return run_chunk(spec, out, chunk)


def _bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="pt", disable=not enabled, smoothing=0.1)


__all__ = ["sweep", "SweepReport", "SweepInterrupted", "parse_spec", "spec_from_dict", "load_spec"]
