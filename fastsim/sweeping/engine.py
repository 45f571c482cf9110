"""Run a sweep: create (or resume) the store, fan the missing chunks out, report progress."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import xarray as xr

from .. import settings
from . import store as st
from .lock import StoreLock
from .spec import SweepSpec, load_spec, parse_spec
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
    with dask.config.set({WORKER_MALLOC_TRIM: None, WORKER_NUMBA_THREADS: "1"}):
        cluster = LocalCluster(n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True,
                               dashboard_address=None)
    return Client(cluster), cluster


def sweep(spec: SweepSpec | str | Path, out: str | Path | None = None, *, workers: int | None = None,
          scheduler: str | None = None, progress: bool = True, report: list | None = None) -> xr.Dataset:
    """Run (or resume) a sweep into the zarr store ``out`` and return the stored Dataset.

    Without ``out`` the sweep runs in a temporary store and the Dataset comes back loaded in
    memory (small studies from Python; nothing to resume).

    workers=0 runs every chunk in this process; otherwise chunks go to a dask LocalCluster with
    ``workers`` processes (default: one per core), or to the running scheduler at ``scheduler``
    (an address such as tcp://host:8786, or a scheduler file).
    """
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    if out is None:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            return sweep(spec, Path(tmp) / "sweep.zarr", workers=0 if workers is None else workers,
                         scheduler=scheduler, progress=progress, report=report).load()
    out = str(out)
    with StoreLock(out) as lock:  # one writer per store (a second is refused; a dead one's lock taken over)
        return _run(spec, out, lock, workers, scheduler, progress, report)


def _run(spec: SweepSpec, out: str, lock: StoreLock, workers, scheduler, progress, report) -> xr.Dataset:
    if not Path(out).exists() or st.half_created(out):
        st.create(spec, out)  # new, or a creation that died half-way (no spec digest yet): nothing to keep
    else:
        st.check_matches(spec, out)
    todo = st.pending(spec, out)
    all_regions = st.regions(spec)
    start = time.perf_counter()
    bar = _bar(sum(st.n_points(all_regions[i]) for i in todo), progress)
    computed = 0
    if workers == 0 and not scheduler:
        for chunk in todo:
            _, n = run_chunk(spec, out, chunk)
            computed += n
            bar.update(n)
            lock.refresh()
    elif todo:
        from dask.distributed import as_completed

        client, cluster = _client(workers, scheduler)
        chosen = worker_settings(local=cluster is not None)
        try:
            futures = client.map(_run_chunk_with, [spec] * len(todo), [out] * len(todo), todo,
                                 [chosen] * len(todo), pure=False)
            for fut in as_completed(futures):
                _, n = fut.result()
                computed += n
                bar.update(n)
                lock.refresh()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    bar.close()
    rep = SweepReport(spec.n_points, computed, len(todo), time.perf_counter() - start, out)
    if report is not None:
        report.append(rep)
    return st.open_store(out)


def worker_settings(local: bool) -> settings.Settings:
    """The settings a worker runs its chunks under: the caller's (a contextvars scope does not
    cross processes), without progress bars; local workers run their batches on one thread (the
    workers are the parallelism), a running scheduler's workers as set up there."""
    chosen = replace(settings.current(), progress=False)
    return replace(chosen, threads=1) if local else chosen


def _run_chunk_with(spec: SweepSpec, out: str, chunk: int, chosen: settings.Settings) -> tuple[int, int]:
    """``run_chunk`` in a worker under the caller's settings (local workers: one thread each, the
    workers are the parallelism, whatever the worker's environment says)."""
    with settings.use(chosen):
        return run_chunk(spec, out, chunk)


def _bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="pt", disable=not enabled, smoothing=0.1)


__all__ = ["sweep", "SweepReport", "parse_spec", "load_spec"]
