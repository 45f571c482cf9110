"""Sweeps on a real multi-process dask cluster (``distributed.LocalCluster``, reached through its
scheduler's address as a remote cluster would be): every worker gets chunks, the progress line is
drawn by the client, a worker killed with SIGKILL mid-sweep loses nothing, and a sweep whose
scheduler goes away resumes on a new cluster; each store is compared byte for byte with an
undisturbed in-process run's."""
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # worker processes that import fastsim and compile: minutes on 2 cores

from fastsim import settings
from fastsim.sweeping import parse_spec, sweep
from fastsim.sweeping import store as st
from fastsim.sweeping.engine import SchedulerLost
from fastsim.sweeping.tasks import task_groups

# GEMMs of distinct shapes share no simulation and take 0.5-2.5 s each in a worker with the disk
# cache off, so an 8-point sweep on 2 workers runs for several seconds: long enough to disturb it
# half-way
SLOW_GEMMS = """
[study]
kind = "gemm"
[axes]
m = [128, 256]
k = [256, 512, 1024, 2048]
[study.base]
n = 256
[run]
chunk_points = 1
"""

EIGHT_GEMMS = """
[study]
kind = "gemm"
[axes]
m = [256, 0]
k = [64, 128, 256, 512]
[study.base]
n = 512
"""  # chunk_points left at its default, 8: the whole sweep in one chunk unless the cluster splits it


SIXTEEN_GEMMS = """
[study]
kind = "gemm"
[axes]
m = [64, 128]
k = [64, 128, 256, 512]
n = [64, 128]
[run]
chunk_points = 1
"""


def start_cluster(workers=2):
    """A LocalCluster as fastsim starts one (single-threaded worker processes under nannies, which
    restart a killed worker), and a client of the test's own."""
    from fastsim.sweeping.engine import _client

    return _client(workers, None)


def store_bytes(path) -> dict[str, bytes]:
    """Every file of a zarr store, by relative path (data chunks and metadata)."""
    root = Path(path)
    return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}


def stored(path) -> int:
    try:
        return int(st.done_mask(path).sum())
    except Exception:  # not created yet
        return 0


def in_background(fn):
    """``fn()`` on a thread of its own (the test disturbs the cluster meanwhile); a Future."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(fn)
    finally:
        pool.shutdown(wait=False)


def cold_sweep(out, scheduler):
    """The sweep on the cluster with the disk cache off (the workers compute every point)."""
    with settings.use(cache=False):
        return sweep(parse_spec(SLOW_GEMMS, "slow-gemms"), out, scheduler=scheduler, progress=False)


def wait_stored(out, n: int, running, timeout_s: float = 120.0) -> int:
    deadline = time.time() + timeout_s
    while time.time() < deadline and not running.done():
        got = stored(out)
        if got >= n:
            return got
        time.sleep(0.1)
    raise AssertionError(f"the sweep ended (or stalled) before {n} points were stored: {running}")


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    out = tmp_path_factory.mktemp("undisturbed") / "s.zarr"
    sweep(parse_spec(SLOW_GEMMS, "slow-gemms"), out, workers=0, progress=False)
    return store_bytes(out)


def test_sweep__a_worker_killed_mid_sweep_loses_nothing(tmp_path, undisturbed, dask_cluster):
    """On the session's cluster (conftest.dask_cluster): its nanny restarts the killed worker."""
    client, local = dask_cluster.client, dask_cluster.cluster
    out = tmp_path / "s.zarr"
    running = in_background(lambda: cold_sweep(out, local.scheduler_address))
    before = wait_stored(out, 2, running)
    busy = [w for w, keys in client.processing().items() if keys]
    assert busy, "no worker was computing"
    victim = client.run(os.getpid)[busy[0]]
    os.kill(victim, signal.SIGKILL)
    ds = running.result(timeout=120)
    assert before < 8 and bool(ds.done.all())
    client.wait_for_workers(2, timeout=60)  # the nanny started a new worker process
    assert victim not in client.run(os.getpid).values()
    assert store_bytes(out) == undisturbed


def test_sweep__scheduler_gone_mid_sweep_then_resumed_on_a_new_cluster(tmp_path, undisturbed, dask_cluster):
    """A cluster of its own, whose scheduler goes away; the sweep resumes on the session's."""
    out = tmp_path / "s.zarr"
    client, local = start_cluster(2)
    try:
        running = in_background(lambda: cold_sweep(out, local.scheduler_address))
        wait_stored(out, 2, running)
    finally:
        client.close()
        local.close()  # scheduler and workers gone, chunks in flight with them
    with pytest.raises(SchedulerLost, match="points stored in .* to resume") as lost:
        running.result(timeout=60)
    assert 2 <= lost.value.stored < 8 and lost.value.stored == stored(out)
    ds = cold_sweep(out, dask_cluster.cluster.scheduler_address)
    assert bool(ds.done.all())
    assert store_bytes(out) == undisturbed


@pytest.fixture
def cluster(dask_cluster):
    """The session's cluster (conftest.dask_cluster): its client and LocalCluster."""
    return dask_cluster.client, dask_cluster.cluster


def test_sweep__every_worker_of_a_running_scheduler_gets_points(tmp_path, cluster):
    """8 points at the default chunk_points (8) on a running scheduler of two workers: the sweep
    splits them into two chunks of 4, one per worker, and stores what a local run stores."""
    client, local = cluster
    report = []
    began = time.perf_counter()
    ds = sweep(parse_spec(EIGHT_GEMMS, "eight"), tmp_path / "s.zarr", scheduler=local.scheduler_address,
               progress=False, report=report)
    elapsed = time.perf_counter() - began
    assert set(report[0].by_worker) == set(client.nthreads()), report[0]
    assert sorted(report[0].by_worker.values()) == [4, 4] and report[0].chunks == 2
    # the first chunk is stored after the sweep started and before it returned
    assert 0 < report[0].first_result_s < elapsed
    here = sweep(parse_spec(EIGHT_GEMMS, "eight"), workers=0, progress=False)  # one chunk of 8
    assert ds.load().drop_attrs().identical(here.drop_attrs())


def test_sweep__tasks_of_several_chunks_store_what_a_local_run_stores(tmp_path, cluster):
    """16 points in chunks of one on two workers: the scheduler runs 10 tasks, six of two chunks
    (a (m, k) pair) and the last two pairs' four chunks apart (``task_groups``), and every chunk
    is stored as a local run stores it."""
    from distributed import get_task_stream

    client, local = cluster
    spec = parse_spec(SIXTEEN_GEMMS, "sixteen")
    report = []
    with get_task_stream(client=client) as stream:
        ds = sweep(spec, tmp_path / "s.zarr", scheduler=local.scheduler_address, progress=False, report=report)
    assert st.chunks_of(tmp_path / "s.zarr") == (1, 1, 1)
    assert len([t for t in stream.data if "_run_chunks_with" in str(t["key"])]) == 10
    assert [len(t) for t in task_groups(st.regions(spec), spec.shape, (1, 1, 1), slots=2)] == [2] * 6 + [1] * 4
    assert report[0].chunks == 16 and sum(report[0].by_worker.values()) == 16
    here = sweep(spec, workers=0, progress=False)
    assert ds.load().drop_attrs().identical(here.drop_attrs())


def test_sweep__progress_is_one_line_with_rate_eta_and_failed_points_on_a_remote_cluster(tmp_path, cluster,
                                                                                           capsys):
    _, local = cluster
    sweep(parse_spec(EIGHT_GEMMS, "eight"), tmp_path / "s.zarr", scheduler=local.scheduler_address, progress=True)
    err = capsys.readouterr().err
    assert "\n" not in err.strip(), err  # one line, redrawn in place (\r)
    last = err.strip().split("\r")[-1]
    assert "8/8" in last and "pt/s" in last and "failed=4" in last and "<00:00" in last, last
