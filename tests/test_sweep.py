"""Sweeps: validation, resume after a real kill, chunking and worker-count invariance."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import fastsim
from fastsim.sweeping import load_spec, parse_spec, sweep
from fastsim.sweeping.store import open_store

GEMM_SPEC = """
[study]
kind = "gemm"
[study.base]
dtype = "bf16"
budget = 2  # candidates per mapping search: these tests are about the sweep, not proofs of optimality
[axes]
m = [256, 512]
k = {start = 64, stop = 512, num = 4, scale = "log2"}
n = [512, 1024]
[run]
chunk_points = CHUNK
"""


def gemm_spec(chunk=4, extra=""):
    return parse_spec(GEMM_SPEC.replace("CHUNK", str(chunk)) + extra, "gemm-test")


def values(ds):
    return {name: ds[name].values for name in ds.data_vars}


def assert_same_data(a, b):
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


def test_spec__bad_spec_lists_every_error():
    bad = """
    [study]
    kind = "llm"
    [study.base]
    modle = "llama-3.2-1b"
    [axes]
    context = {start = 1024, num = 3}
    noop = []
    warp_speed = [1, 2]
    [run]
    chunk_points = 0
    outputs = ["seconds", "joy"]
    """
    with pytest.raises(fastsim.ConfigError) as e:
        parse_spec(textwrap.dedent(bad), "bad.toml")
    text = str(e.value)
    for needle in ("study.base.modle", "axes.context", "axes.noop", "axes.warp_speed", "run.chunk_points", "joy"):
        assert needle in text
    assert len(e.value.problems) >= 6


def test_spec__unknown_keys_of_run_study_and_ranges_are_refused_by_name():
    # a misspelt key used to run with the default (chunk_point -> chunk_points = 8, output -> every output)
    bad = GEMM_SPEC.replace("CHUNK", "2").replace('scale = "log2"}', 'scale = "log2", step = 3}')
    bad = bad.replace('kind = "gemm"', 'kind = "gemm"\nbogus_study = 1')
    bad += 'output = ["seconds"]\nchunk_point = 4\nbogus = 1\n'
    with pytest.raises(fastsim.ConfigError) as e:
        parse_spec(bad, "bad.toml")
    problems = e.value.problems
    for key in ("run.output", "run.chunk_point", "run.bogus"):
        assert any(p.startswith(key + " = ") and "run takes chunk_points, outputs" in p for p in problems), key
    assert any(p.startswith("study.bogus_study = ") and "study takes kind, base" in p for p in problems)
    assert any(p.startswith("axes.k.step = ") and "start, stop, num, scale" in p for p in problems)
    assert len(problems) == 5


def test_spec__shipped_specs_are_valid():
    for path in sorted(Path(__file__).resolve().parents[1].glob("sweeps/*.toml")):
        spec = load_spec(path)
        assert spec.n_points >= 8, path


def test_sweep__dataset_has_axes_as_dims_with_units(tmp_path):
    ds = sweep(gemm_spec(), tmp_path / "g.zarr", workers=0, progress=False)
    opened = xr.open_zarr(tmp_path / "g.zarr", consolidated=False)
    assert dict(opened.sizes) == {"m": 2, "k": 4, "n": 2}
    assert list(opened.k.values) == [64, 128, 256, 512]
    assert opened.seconds.attrs["units"] == "s" and opened.done.all()
    assert (opened.status.values == 0).all() and (opened.seconds.values > 0).all()
    # a point equals a direct simulation
    from fastsim.workloads.gemm import Gemm, gemm_design
    direct = fastsim.simulate(gemm_design(Gemm(512, 128, 1024, budget=2), fastsim.NPU2))
    assert int(ds.total_cycles.sel(m=512, k=128, n=1024)) == int(direct.total_cycles[0])


def test_sweep__changed_spec_is_refused(tmp_path):
    sweep(gemm_spec(), tmp_path / "g.zarr", workers=0, progress=False)
    changed = parse_spec(GEMM_SPEC.replace("CHUNK", "4").replace("[256, 512]", "[256, 768]"), "changed")
    with pytest.raises(fastsim.ConfigError, match="different spec"):
        sweep(changed, tmp_path / "g.zarr", workers=0, progress=False)


@pytest.mark.slow
@settings(max_examples=5)
@given(st.integers(1, 16), st.integers(1, 20))
def test_sweep__chunking_never_changes_results(tmp_path_factory, chunk, slots):
    """Neither the spec's chunk_points nor the chunk size a cluster of ``slots`` task slots gets."""
    from fastsim.sweeping import store

    base = sweep(gemm_spec(3), tmp_path_factory.mktemp("a") / "a.zarr", workers=0, progress=False)
    out = tmp_path_factory.mktemp("b") / "b.zarr"
    store.create(gemm_spec(chunk), out, slots=slots)  # as a sweep on such a cluster creates it
    other = sweep(gemm_spec(chunk), out, workers=0, progress=False)
    assert len(store.regions(gemm_spec(chunk), out)) >= min(slots, 16)  # every slot gets a chunk
    for name in base.data_vars:
        np.testing.assert_array_equal(base[name].values, other[name].values)


def test_tasks__group_the_chunks_of_the_trailing_axes_within_the_task_limits():
    from fastsim.sweeping.store import chunk_regions, n_points
    from fastsim.sweeping.tasks import TASK_POINTS_MAX, task_groups

    # the ablation at scale: context x batch x model x noop x cuts, chunks of the 5 batches
    shape, chunks = (20, 5, 4, 10, 25), (1, 5, 1, 1, 1)
    regions = chunk_regions(shape, chunks)
    tasks = task_groups(regions, shape, chunks, slots=2)
    assert [r for t in tasks for r in t] == regions  # every chunk once, in store order
    # a model's NOOP classes and cuts in one task (5 x 10 x 25 points), 78 tasks; the last two
    # (context, model) pairs end the sweep as 20 tasks of one NOOP class each, to balance the end
    assert [sum(map(n_points, t)) for t in tasks] == [1250] * 78 + [125] * 20
    assert all(len({tuple(s.start for s in r[:3]) for r in t}) == 1 for t in tasks)
    assert all(len({tuple(s.start for s in r[:4]) for r in t}) == 1 for t in tasks[78:])
    # more slots: fewer trailing axes, so that each slot gets its tasks
    assert {sum(map(n_points, t)) for t in task_groups(regions, shape, chunks, slots=64)} == {125, 5}
    # the pending chunks of a resumed sweep: only those; fewer points pending, smaller tasks
    assert [len(t) for t in task_groups(regions[3:300], shape, chunks, slots=2)] == [22] + [25] * 9 + [1] * 50
    # a small sweep: one chunk per task, as many tasks as chunks
    small = chunk_regions((2, 2, 2), (1, 1, 1))
    assert task_groups(small, (2, 2, 2), (1, 1, 1), slots=2) == [[r] for r in small]
    sixteen = chunk_regions((2, 4, 2), (1, 1, 1))  # twice the points: two chunks per task, the last ones apart
    assert task_groups(sixteen, (2, 4, 2), (1, 1, 1), slots=2) == (
        [sixteen[i:i + 2] for i in range(0, 12, 2)] + [[r] for r in sixteen[12:]])
    # never above the limit, whatever the cluster
    huge = chunk_regions((100, 100, 10), (1, 1, 10))
    for slots in (0, 1, 2, 64):  # 0: no worker joined yet, as for one
        tasks = task_groups(huge, (100, 100, 10), (1, 1, 10), slots)
        assert [r for t in tasks for r in t] == huge
        assert max(sum(map(n_points, t)) for t in tasks) <= TASK_POINTS_MAX
    assert task_groups(huge, (100, 100, 10), (1, 1, 10), 0) == task_groups(huge, (100, 100, 10), (1, 1, 10), 1)


def test_tasks__stored_in_blocks_or_chunk_by_chunk_store_the_same_bytes(tmp_path):
    """A task's chunks that fill a block are written at once, others chunk by chunk (a resumed
    sweep's part of a task): both store exactly what a sweep in this process stores."""
    from fastsim.sweeping import store
    from fastsim.sweeping.tasks import run_chunks, task_groups

    spec = gemm_spec(1)  # 2 x 4 x 2 points, one per chunk
    sweep(spec, tmp_path / "here.zarr", workers=0, progress=False)
    out = tmp_path / "tasks.zarr"
    store.create(spec, out, slots=2)
    regions = store.pending(spec, out)
    tasks = task_groups(regions, spec.shape, store.chunks_of(out), slots=2)
    assert [len(t) for t in tasks] == [2] * 6 + [1] * 4  # blocks of the n axis, the last ones apart
    run_chunks(spec, str(out), [regions[0], regions[3]])  # no block: chunk by chunk
    for task in tasks:
        run_chunks(spec, str(out), [r for r in task if r not in (regions[0], regions[3])])
    store.remove_torn_writes(out)
    store.consolidate(out)
    files = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and "zarr.json" not in p.name}
    here = tmp_path / "here.zarr"
    assert files == {p.relative_to(here): p.read_bytes() for p in here.rglob("*")
                     if p.is_file() and "zarr.json" not in p.name}


def test_tasks__a_blocks_points_run_in_axis_order_not_chunk_by_chunk(monkeypatch):
    """Chunks spanning a leading axis (an ablation's chunks hold its batches, each a new shape):
    a task's block runs its leading axis outermost, so that one shape's points come together and
    its cached cuts are reused, not evicted by the other shapes' in turn."""
    from fastsim.sweeping import tasks

    spec = gemm_spec(1)  # axes m (2) x k (4) x n (2)
    seen = []
    monkeypatch.setattr(tasks, "evaluate", lambda spec, params: seen.append(params) or {"status": 0})
    monkeypatch.setattr(tasks, "write_region", lambda *a: None)
    chunks = [(slice(0, 2), slice(n, n + 1), slice(0, 2)) for n in range(4)]  # each chunk spans m
    assert tasks.run_chunks(spec, "unused", chunks) == (16, 0)
    assert seen == [spec.point(i) for i in np.ndindex(spec.shape)]


def test_store__a_new_stores_completion_mask_reads_false_with_no_chunk_written(tmp_path):
    from fastsim.sweeping import store

    spec = gemm_spec(1)
    store.create(spec, tmp_path / "s.zarr", slots=2)
    assert not [p for p in (tmp_path / "s.zarr" / "done").rglob("*") if p.is_file() and p.name != "zarr.json"]
    mask = store.done_mask(tmp_path / "s.zarr")
    assert mask.dtype == bool and mask.shape == spec.shape and not mask.any()
    assert len(store.pending(spec, tmp_path / "s.zarr")) == 16


def test_store__a_mask_that_would_read_done_is_refused_and_removed(tmp_path, monkeypatch):
    import types

    import zarr

    from fastsim.sweeping import store

    monkeypatch.setattr(zarr, "open_array", lambda *a, **k: types.SimpleNamespace(fill_value=True))
    with pytest.raises(RuntimeError, match="fill value True"):
        store.create(gemm_spec(1), tmp_path / "s.zarr", slots=2)
    assert not (tmp_path / "s.zarr").exists()  # nothing left that a resume would read as done


def test_store__chunks_come_from_the_cluster_size_and_keep_the_batches_of_a_context_together():
    from fastsim.sweeping.store import chunk_shape, chunk_target

    sixteen = gemm_spec(8)  # 2 x 4 x 2 points, 8 per chunk
    assert [chunk_target(sixteen, slots) for slots in (0, 1, 2, 3, 4, 16, 64)] == [8, 8, 8, 5, 4, 1, 1]
    assert chunk_target(gemm_spec(100), 2) == 8  # 2 slots: 8 points each
    assert chunk_shape((2, 4, 2), 8, ("m", "k", "n")) == (1, 4, 2)  # trailing axes whole, as before
    # the batches of a context share its attention shapes: batch whole first, then context; model outermost
    assert chunk_shape((3, 4, 5), 5, ("context", "model", "batch")) == (1, 1, 5)
    assert chunk_shape((31, 2), 2, ("context", "batch")) == (1, 2)
    assert chunk_shape((5, 4, 3), 15, ("context", "model", "batch")) == (5, 1, 3)
    assert chunk_shape((5, 4, 3), 40, ("model", "context", "batch")) == (3, 4, 3)


LLM_STORE_SPEC = """
[study]
kind = "llm"
[study.base]
model = "llama-3.2-1b"
regime = "decode"
[axes]
context = [512, 1024, 2048]
batch = [1, 2]
[run]
chunk_points = 2
outputs = OUTPUTS
"""


def llm_store_spec(outputs=("seconds", "tokens_per_s", "by_class")):
    return parse_spec(LLM_STORE_SPEC.replace("OUTPUTS", json.dumps(list(outputs))), "store-test")


def _xarray_region_write(spec, path, region, results):
    """A chunk written by xarray's own region write: what ``write_region``'s zarr writes must equal."""
    from fastsim.sweeping.variables import REGISTRY

    data = {}
    for name in spec.outputs:
        var = REGISTRY[spec.kind][name]
        dims = spec.dims + ((var.extra_dim[0],) if var.extra_dim else ())
        data[name] = (dims, results[name].astype(var.dtype))
    where = dict(zip(spec.dims, region))
    xr.Dataset(data).to_zarr(str(path), mode="r+", region=where, consolidated=False)
    shape = tuple(s.stop - s.start for s in region)
    xr.Dataset({"done": (spec.dims, np.ones(shape, bool))}).to_zarr(str(path), mode="r+", region=where,
                                                                      consolidated=False)


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_store__chunk_writes_read_back_as_xarrays_region_writes(seed):
    """``write_region`` writes zarr arrays directly; a store must read back exactly as if xarray had
    written the same chunks: NaN and infinite floats, negative and flag ints, non-ASCII messages up
    to their full width, an extra dim, and chunks left unwritten (fill values, not done)."""
    import tempfile

    from fastsim.sweeping import store
    from fastsim.sweeping.variables import REGISTRY

    spec = llm_store_spec()
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = Path(tmp) / "ours.zarr", Path(tmp) / "theirs.zarr"
        for path in (ours, theirs):
            store.create(spec, path)
        regions = store.regions(spec, ours)
        for region in [r for r in regions if rng.random() < 0.7]:
            shape = tuple(s.stop - s.start for s in region)
            results = {}
            for name in spec.outputs:
                var = REGISTRY[spec.kind][name]
                full = shape + ((len(var.extra_dim[1]),) if var.extra_dim else ())
                if var.dtype.startswith("<U"):
                    width = int(var.dtype[2:])
                    results[name] = np.array(["".join(rng.choice(list("aé✓ z:-"), rng.integers(0, width + 1)))
                                              for _ in range(int(np.prod(full)))]).reshape(full)
                elif var.dtype.startswith("int"):
                    results[name] = rng.integers(-1, 4, full)
                else:
                    results[name] = rng.choice([np.nan, np.inf, -1.5, 0.0, 3e-7, 1e12], full)
            store.write_region(spec, ours, region, results)
            _xarray_region_write(spec, theirs, region, results)
        xr.testing.assert_identical(open_store(ours).load(), open_store(theirs).load())


def test_sweep__llm_points_leave_out_twins_and_give_what_full_runs_give(monkeypatch):
    """An LLM point runs without its ops' data-only twins (``simulate_llm(movement=False)``): every
    output a spec can ask for is what the run with them gives."""
    import fastsim.llm
    from fastsim.cache import clear
    from fastsim.sweeping.points import evaluate
    from fastsim.sweeping.variables import REGISTRY

    every = [n for n, v in REGISTRY["llm"].items() if n not in ("status", "message") and "quantile" not in n]
    spec = llm_store_spec(every)
    point = spec.point((1, 1))
    clear()
    lean = evaluate(spec, point)
    full_run = fastsim.llm.simulate_llm
    monkeypatch.setattr(fastsim.llm, "simulate_llm", lambda *a, movement=True, **k: full_run(*a, **k))
    clear()
    full = evaluate(spec, point)
    assert lean["status"] == 0 and set(lean) == set(full)
    for name in lean:
        np.testing.assert_equal(lean[name], full[name], err_msg=name)


def test_sweep__invalid_points_are_recorded_not_fatal(tmp_path):
    spec = parse_spec(textwrap.dedent("""
    [study]
    kind = "gemm"
    [axes]
    m = [256, 0]
    [study.base]
    k = 256
    n = 512
    """), "partly-invalid")
    ds = sweep(spec, tmp_path / "p.zarr", workers=0, progress=False)
    assert list(ds.status.values) == [0, 1]
    assert np.isnan(ds.seconds.values[1]) and ds.done.all()


@pytest.mark.slow
def test_sweep__explicit_points(tmp_path):
    spec = parse_spec(textwrap.dedent("""
    [study]
    kind = "gemm"
    [[points]]
    m = 256
    k = 128
    n = 512
    [[points]]
    m = 512
    k = 256
    n = 1024
    dtype = "int8"
    """), "points")
    ds = sweep(spec, tmp_path / "pts.zarr", workers=0, progress=False)
    assert ds.sizes["point"] == 2 and list(ds.dtype.values) == ["", "int8"]
    assert (ds.status.values == 0).all()


SLOW_SPEC = """
[study]
kind = "llm"
[study.base]
model = "llama-3.2-1b"
regime = "decode"
[axes]
context = [256, 512, 1024, 2048, 3072, 4096, 6144, 8192]
batch = [1, 2, 3, 4]
[run]
chunk_points = 2
outputs = ["seconds", "kv_bytes", "by_class"]
"""


@pytest.mark.slow
def test_sweep__resume_after_kill_gives_identical_data(tmp_path):
    spec_path = tmp_path / "slow.toml"
    spec_path.write_text(SLOW_SPEC)
    killed = tmp_path / "killed.zarr"
    cmd = [sys.executable, "-m", "fastsim.cli", "sweep", str(spec_path), "--out", str(killed),
           "--workers", "0", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    done = 0
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if (killed / "done").exists():
            try:
                done = int(open_store(killed)["done"].values.sum())
            except Exception:
                continue
            if done >= 2:
                proc.send_signal(signal.SIGKILL)
                break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    partial = int(open_store(killed)["done"].values.sum())
    assert 2 <= partial < 32
    resumed = sweep(load_spec(spec_path), killed, workers=0, progress=False)
    fresh = sweep(load_spec(spec_path), tmp_path / "fresh.zarr", workers=0, progress=False)
    assert_same_data(resumed.load(), fresh.load())


def test_sweep__a_write_torn_by_a_killed_writer_leaves_nothing_behind(tmp_path):
    """A worker killed between zarr's write of a chunk's temporary file and its rename leaves the
    file in the store; the sweep's next pass removes it, so the store is what it was."""
    out = tmp_path / "s.zarr"
    spec = gemm_spec(2)
    sweep(spec, out, workers=0, progress=False)
    files = sorted(p for p in out.rglob("*") if p.is_file())
    chunk = next(p for p in files if "c" in p.relative_to(out).parts)  # zarr 3: VAR/c/I/J
    torn = chunk.with_suffix(".0123456789abcdef.partial")
    torn.write_bytes(b"half a chunk")
    sweep(spec, out, workers=0, progress=False)  # nothing left to compute: the pass only closes
    assert not torn.exists()
    assert sorted(p for p in out.rglob("*") if p.is_file()) == files


@pytest.mark.slow
def test_sweep__two_workers_equal_one(tmp_path, dask_cluster):
    """The session's two worker processes (conftest.dask_cluster) against one worker: this
    process, which a one-slot cluster's chunking matches (both create the store for one slot)."""
    spec = gemm_spec(2)
    one = sweep(spec, tmp_path / "one.zarr", workers=0, progress=False)
    two = sweep(spec, tmp_path / "two.zarr", scheduler=dask_cluster.cluster.scheduler_address, progress=False)
    assert_same_data(one.load(), two.load())


def test_sweep__local_workers_keep_glibcs_adaptive_malloc_and_start_no_numba_threads(dask_cluster):
    """dask would start them with MALLOC_TRIM_THRESHOLD_ set, which fixes glibc's mmap threshold
    and made numpy, and with it a decode point, 2x slower in a worker than in the parent. Workers
    get NUMBA_NUM_THREADS=1 through dask's worker environment; this process's stays as it was.
    The session's cluster (conftest.dask_cluster) was started by fastsim's ``_client`` with
    neither variable set here."""
    ours = ("NUMBA_NUM_THREADS", "FASTSIM_THREADS")
    before = dask_cluster.environ_before
    seen = dask_cluster.client.run(lambda: [os.environ.get(name) for name in ("MALLOC_TRIM_THRESHOLD_", *ours)])
    assert len(seen) == 2 and list(seen.values()) == [[None, "1", before["FASTSIM_THREADS"]]] * 2
    assert dask_cluster.environ_after == before


@pytest.mark.slow
def test_sweep__runs_on_an_external_scheduler(tmp_path):
    """A stand-in for a cluster (dask-jobqueue gives the same: a scheduler address and workers),
    started by dask's own command-line tools in processes of their own."""
    sched_file = tmp_path / "scheduler.json"
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--scheduler-file",
                                  str(sched_file), "--port", "0", "--dashboard-address", ":0"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        for _ in range(100):
            if sched_file.exists():
                break
            time.sleep(0.1)
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                   str(sched_file), "--nthreads", "1", "--nworkers", "1"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        remote = sweep(gemm_spec(4), tmp_path / "remote.zarr", scheduler=str(sched_file), progress=False)
        local = sweep(gemm_spec(4), tmp_path / "local.zarr", workers=0, progress=False)
        assert_same_data(remote.load(), local.load())
    finally:
        for p in (worker, scheduler):
            if p is not None:
                p.terminate()
                p.wait(timeout=30)


@pytest.mark.slow
def test_sweep__runs_on_a_running_scheduler_named_by_its_scheduler_file(tmp_path, dask_cluster):
    """The session's cluster reached as a remote one is, through a scheduler file (the slow tier
    starts dask's command-line scheduler and worker for this)."""
    sched_file = tmp_path / "scheduler.json"
    sched_file.write_text(json.dumps({"address": dask_cluster.cluster.scheduler_address}))  # as dask-scheduler writes it
    remote = sweep(gemm_spec(4), tmp_path / "remote.zarr", scheduler=str(sched_file), progress=False)
    local = sweep(gemm_spec(4), tmp_path / "local.zarr", workers=0, progress=False)
    assert_same_data(remote.load(), local.load())


def test_sweep__api_without_a_store_returns_a_loaded_dataset():
    ds = fastsim.sweep(gemm_spec(8))
    assert dict(ds.sizes) == {"m": 2, "k": 4, "n": 2} and (ds.status.values == 0).all()


SYSTOLIC_SPEC = """
[study]
kind = "systolic"
[study.base]
topology = "TOPO"
ifmap_sram_kb = 1
filter_sram_kb = 1
ofmap_sram_kb = 1
ifmap_read_words_per_cycle = 4
filter_read_words_per_cycle = 4
[axes]
rows = [4, 8]
cols = [8, 16]
dataflow = ["ws", "is", "os"]
bandwidth_words_per_cycle = [0, 2]
[run]
chunk_points = 5
"""


def test_sweep__systolic_points_equal_the_mesh_model(tmp_path):
    from fastsim.systolic import MeshConfig, mesh_metrics, read_topology

    topo = tmp_path / "topo.csv"
    topo.write_text("Layer, M, N, K,\na, 40, 24, 30,\nb, 9, 50, 17,\n")
    spec_path = tmp_path / "mesh.toml"
    spec_path.write_text(SYSTOLIC_SPEC.replace("TOPO", "topo.csv"))  # relative to the spec file
    ds = sweep(load_spec(spec_path), tmp_path / "s.zarr", workers=0, progress=False)
    assert dict(ds.sizes)["rows"] == 2 and (ds.status.values == 0).all()
    assert ds.stall_cycles.attrs["units"] == "cycles" and list(ds.operand.values) == ["ifmap", "filter", "ofmap"]
    layers = read_topology(topo)
    for rows in (4, 8):
        for df in ("ws", "is", "os"):
            for bw in (0, 2):
                cfg = MeshConfig(rows, 16, df, 1, 1, 1, bw or None, 4, 4)
                m = mesh_metrics(layers, [cfg])
                point = ds.sel(rows=rows, cols=16, dataflow=df, bandwidth_words_per_cycle=bw)
                assert int(point.total_cycles) == int(m["total_cycles"].sum())
                assert int(point.stall_cycles) == int(m["stall_cycles"].sum())
                assert (bw == 0) == (int(point.stall_cycles) == 0)


def test_spec__systolic_spec_errors_name_the_field(tmp_path):
    bad = SYSTOLIC_SPEC.replace("TOPO", "missing.csv").replace("rows = [4, 8]", "warp = [1]")
    with pytest.raises(fastsim.ConfigError) as e:
        parse_spec(bad, str(tmp_path / "bad.toml"))
    text = str(e.value)
    assert "missing.csv" in text and "axes.warp" in text and "study.base.rows" in text


# ---- one writer per store (issue 14) ----------------------------------------------------------------

_GEMM_SPEC = """
[study]
kind = "gemm"
[study.base]
budget = 2
[axes]
m = [32, 64, 96, 128]
[run]
chunk_points = 1
outputs = ["seconds"]
"""  # budgeted searches: these tests are about sweeps (an exact search of m = 32 alone took 16 s)


@pytest.mark.slow
def test_sweep__second_writer_is_refused_and_a_dead_writers_lock_is_taken_over(tmp_path):
    import json as _json
    import subprocess
    import sys

    from fastsim.errors import ConfigError
    from fastsim.sweeping import sweep
    from fastsim.sweeping.lock import StoreLock, lock_path
    from fastsim.sweeping.spec import parse_spec

    spec, out = parse_spec(_GEMM_SPEC), tmp_path / "s.zarr"
    with StoreLock(out):
        with pytest.raises(ConfigError, match="being written by pid"):
            sweep(spec, out, workers=0, progress=False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock_path(out).write_text(_json.dumps({"host": __import__("socket").gethostname(),
                                           "pid": int(dead.stdout), "token": "x", "since": "then"}))
    ds = sweep(spec, out, workers=0, progress=False)  # the dead writer's lock is taken over
    assert bool(ds.done.all()) and not lock_path(out).exists()
    lock_path(out).write_text(_json.dumps({"host": "elsewhere", "pid": 1, "token": "y", "since": "now"}))
    with pytest.raises(ConfigError, match="elsewhere"):  # fresh, from another host: refused
        sweep(spec, out, workers=0, progress=False)
    assert StoreLock(out, stale_after_s=0.0).acquire().took_over["host"] == "elsewhere"  # stale: taken over


@pytest.mark.slow
def test_sweep__two_writers_started_at_once_on_a_new_store(tmp_path):
    import subprocess
    import sys

    spec = tmp_path / "s.toml"
    spec.write_text(_GEMM_SPEC)
    out = tmp_path / "s.zarr"
    cmd = [sys.executable, "-m", "fastsim.cli", "sweep", str(spec), "--out", str(out), "--workers", "0",
           "--no-progress"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 0], [0, 2]), results  # the second either waited its turn or was refused
    for code, err in results:
        assert "Traceback" not in err
        if code == 2:
            assert "being written by pid" in err
    from fastsim.sweeping.store import open_store
    ds = open_store(out)
    assert bool(ds.done.all()) and ds.attrs["spec_digest"]


def test_sweep__a_bad_point_gets_its_status_and_message_and_the_sweep_goes_on(tmp_path, monkeypatch):
    from fastsim.sweeping import points, sweep
    from fastsim.sweeping.spec import parse_spec

    real = points.RUNNERS["gemm"]

    def flaky(params, arch):
        if params["m"] == 64:
            raise RuntimeError("boom at m=64")
        return real(params, arch)

    monkeypatch.setitem(points.RUNNERS, "gemm", flaky)
    spec = _GEMM_SPEC.replace("[32, 64, 96, 128]", "[32, 64, 0]")
    ds = sweep(parse_spec(spec), tmp_path / "s.zarr", workers=0, progress=False)
    assert list(ds.status.values) == [0, 3, 1]
    assert "RuntimeError: boom at m=64" in str(ds.message.values[1]) and "m" in str(ds.message.values[2])
    assert str(ds.message.values[0]) == "" and float(ds.seconds.values[0]) > 0


def test_store__axes_carry_units_and_structured_inputs_are_json(tmp_path):
    import json as _json

    from fastsim.sweeping import sweep
    from fastsim.sweeping.spec import parse_spec

    ds = sweep(parse_spec(_GEMM_SPEC.replace("[32, 64, 96, 128]", "[32]") + "[arch]\nbase = \"npu1\"\n"),
               tmp_path / "s.zarr", workers=0, progress=False)
    assert ds.m.attrs["units"] == "elements"
    assert _json.loads(ds.attrs["arch"]) == {"base": "npu1"} and _json.loads(ds.attrs["base"]) == {"budget": 2}
    from fastsim.sweeping.variables import parameter_units
    assert [parameter_units(n) for n in ("context", "arch.shim_read_bytes_per_cycle", "dispatch_overhead_s",
                                         "kernel_efficiency")] == ["tokens", "bytes/cycle", "s", "1"]


# ---- Ctrl-C and consolidated metadata (issue 28) ---------------------------------------------------

def _stored_points(out) -> int:
    from fastsim.sweeping.store import done_mask

    try:
        return int(done_mask(out).sum())
    except Exception:  # noqa: BLE001 - not created yet, or being written
        return 0


@pytest.mark.slow
def test_sweep__ctrl_c_stops_at_once_with_one_line_and_no_worker_tracebacks(tmp_path):
    """Ctrl-C reaches the whole process group, as from a terminal: the sweep stops at once (the
    chunks in flight are dropped, never finished: at most the two workers' chunks of 2 points
    are stored after the Ctrl-C; test_sweep__a_stop_drops_the_chunks_in_flight_and_kills_their_workers
    shows the workers killed), says in one line how many points are stored and how to resume,
    and the store opens without a warning."""
    spec_path = tmp_path / "slow.toml"
    spec_path.write_text(SLOW_SPEC)
    out = tmp_path / "s.zarr"
    cmd = [sys.executable, "-m", "fastsim.cli", "sweep", str(spec_path), "--out", str(out), "--workers", "2",
           "--no-progress"]
    # as from a terminal: SIGINT handled by default (a job a shell starts in the background, as a CI
    # runner may start this suite, inherits SIGINT ignored, and Python then never sees the Ctrl-C)
    # the session's cluster (conftest.dask_cluster) may hold dask's default HTTP port: dask's warning
    # that it took another is not the sweep's output
    env = {**os.environ, "PYTHONWARNINGS": "ignore:Port 8787 is already in use:UserWarning"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), env=env)
    # Ctrl-C once points are stored: the workers have compiled their kernels (a compile on a machine
    # with no numba cache yet cannot be interrupted, and is not what this test measures)
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None and _stored_points(out) < 2:
        time.sleep(0.2)
    assert proc.poll() is None, "the sweep finished before Ctrl-C"
    seen = _stored_points(out)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("interrupted: ") and "run the same command again to resume" in err
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stored = int(xr.open_zarr(out)["done"].values.sum())
    assert f"{stored} of 32 points stored" in err
    assert seen <= stored <= seen + 2 * 2  # what was stored, and at most the chunks in flight


@pytest.mark.slow
def test_sweep__a_stop_drops_the_chunks_in_flight_and_kills_their_workers(tmp_path):
    """What Ctrl-C does to a local cluster (``_Dask.stop_now``): a chunk in flight is not waited
    for; its worker process is killed and the chunk never finishes. (A cluster of its own: the
    stop ends it.)"""
    from fastsim.sweeping.engine import _Dask

    started, finished = tmp_path / "started", tmp_path / "finished"

    def chunk():
        started.touch()
        time.sleep(120)
        finished.touch()

    dask = _Dask(1, None)
    running = dask.client.submit(chunk, pure=False)
    deadline = time.time() + 120  # a bound on the wait, never on the stop
    while not started.exists() and time.time() < deadline and not running.done():
        time.sleep(0.05)
    assert started.exists(), running
    dask.stop_now()
    assert not finished.exists()
    assert dask.pids and all(map(_killed, dask.pids))


def _killed(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # not yet reaped
    except psutil.NoSuchProcess:
        return True


def test_sweep__a_finished_store_opens_with_open_zarr_without_a_warning(tmp_path):
    import warnings

    sweep(parse_spec(_GEMM_SPEC.replace("[32, 64, 96, 128]", "[32]")), tmp_path / "s.zarr", workers=0, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_zarr(tmp_path / "s.zarr")
    assert bool(ds.done.values.all())


def test_sweep__takes_a_spec_as_a_dict_the_same_as_its_toml(tmp_path):
    tables = {"study": {"kind": "gemm", "base": {"budget": 2}}, "axes": {"m": [32, 64]},
              "run": {"chunk_points": 1, "outputs": ["seconds"]}}
    from_dict = sweep(tables, workers=0, progress=False)
    from_text = sweep(parse_spec(_GEMM_SPEC.replace("[32, 64, 96, 128]", "[32, 64]")), workers=0, progress=False)
    assert from_dict.seconds.values.tolist() == from_text.seconds.values.tolist()
    with pytest.raises(fastsim.ConfigError, match="study.kind"):
        sweep({"study": {"kind": "warp"}, "axes": {"m": [32]}}, workers=0, progress=False)


QUANTIZED_SPEC = """
[study]
kind = "llm"
[study.base]
model = "GPTQ8"
context = 64
[[points]]
batch = 1
[[points]]
model = "PLAIN"
weights = "int8"
[[points]]
weights = "int4"
[run]
chunk_points = 3
outputs = ["status", "message", "weight_bytes"]
"""


def test_sweep__a_point_without_weights_runs_the_models_quantization_config(tmp_path):
    """A point that names no ``weights`` simulates the precision its config.json stores (here
    GPTQ 8-bit: int8, as the plain model at ``weights = "int8"``); a point that names one runs
    that what-if. The store says only what the spec gave: no ``weights`` in its base, "" where
    a point gave none (never the declared default int4)."""
    tiny = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512, "torch_dtype": "bfloat16"}
    paths = {}
    for name, extra in (("GPTQ8", {"quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": 128}}),
                        ("PLAIN", {})):
        (tmp_path / name).mkdir()
        paths[name] = tmp_path / name / "config.json"
        paths[name].write_text(json.dumps({**tiny, **extra}))
    text = QUANTIZED_SPEC.replace("GPTQ8", str(paths["GPTQ8"])).replace("PLAIN", str(paths["PLAIN"]))
    ds = sweep(parse_spec(text, "quantized"), tmp_path / "q.zarr", workers=0, progress=False)
    assert list(ds.status.values) == [0, 0, 0], list(ds.message.values)
    stored, plain_int8, what_if = ds.weight_bytes.values
    assert stored == plain_int8 and what_if < stored
    assert list(ds.weights.values) == ["", "int8", "int4"]
    assert "weights" not in json.loads(ds.attrs["base"])
