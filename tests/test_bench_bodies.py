"""Run every benchmark body once on shrunken workloads so that a broken benchmark fails CI, and
check what it computed: a body's timing is thrown away, so each call it makes to the simulator's
public entry points is recorded and its result checked (a status OK and positive cycles, a done
sweep, a positive number of seconds), as is a ``track_`` body's number."""
import importlib
import inspect
import itertools
import sys
from pathlib import Path

import pytest
import xarray as xr

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

MODULES = sorted(p.stem for p in (BENCH / "benchmarks").glob("bench_*.py"))
# the entry points the bodies call, by the module they are looked up in at call time: a body's
# module (or benchmarks.common, whose helpers it calls) imports most of them; the others are
# imported inside the body from their package
ENTRY_POINTS = ("run_batch", "simulate_llm", "search", "search_conv", "optimize", "sweep", "simulate_mesh",
                "fastsim:simulate", "fastsim.onnx:simulate_onnx", "fastsim.mlir:read_design",
                "fastsim.mlir:simulate_design", "fastsim.studies.whole_run:whole_run_search",
                "fastsim.sweeping.store:pending")

# bodies of 10 s or more even when shrunk (2 cores): in the slow tier
SLOW_BODIES = {"bench_studies.Optimize1B", "bench_engine.Startup", "bench_sweeps.SweepThroughput",
               "bench_frontends.WholeRunSearch", "bench_workloads.Llama1B", "bench_cold.NewContexts",
               "bench_cold.OptimizeLlama8B", "bench_cold.Ablation100k"}
# parameter combinations in the slow tier whose bodies and parameter values all run in the default
# tier in other combinations: stepping the 128-core array cycle by cycle (~2 s a run, two runs a
# body) adds no code path that the 32-column array under skip/fast-forward and the 8-column GEMMs
# stepped do not run
SLOW_COMBOS = {("bench_engine.EngineThroughput", ("gemm_2048_32col", "step"))}
# bodies in the slow tier whose every call another body of the class makes in the default tier:
# MapperSearch's timed search is the first line of track_searched_over_fixed_cycles
SLOW_METHODS = {"bench_workloads.MapperSearch.time_search_gemm_2048"}


def _import_quick():
    """The benchmark modules as the bench-as-test run uses them: ``FASTSIM_BENCH_QUICK=1`` while
    they are imported (``benchmarks.common.QUICK`` is read then), the environment as it was after."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FASTSIM_BENCH_QUICK", "1")
        mods = {name: importlib.import_module(f"benchmarks.{name}") for name in MODULES}
    assert importlib.import_module("benchmarks.common").QUICK
    return mods


def _cases():
    for name, mod in _import_quick().items():
        for cls_name, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ != mod.__name__:
                continue
            methods = [m for m in dir(cls) if m.startswith(("time_", "track_", "peakmem_"))]
            params = getattr(cls, "params", None)
            if params is None:
                combos = [()]
            elif params and isinstance(params[0], list):
                combos = list(itertools.product(*params))
            else:
                combos = [(p,) for p in params]
            for combo in combos:
                for m in methods:
                    if cls_name == "Startup" and m == "track_cold_compile_s":
                        continue  # a cold compile is ~30 s; measured by asv, not in CI
                    slow = (f"{name}.{cls_name}" in SLOW_BODIES or (f"{name}.{cls_name}", combo) in SLOW_COMBOS
                            or f"{name}.{cls_name}.{m}" in SLOW_METHODS)
                    marks = [pytest.mark.slow] if slow else []
                    yield pytest.param(cls, combo, m, id=f"{name}.{cls_name}.{m}{list(combo)}", marks=marks)


def assert_real(name: str, result) -> None:
    """The result of one entry point a body called is a real answer, not an empty one."""
    from fastsim.kernels import layout as L
    from fastsim.mlir.reader import DesignInfo
    from fastsim.studies.whole_run import WholeRun

    if name == "run_batch":
        res = result.outputs["res"]
        assert len(res) and (res[:, L.R_STATUS] == L.ST_OK).all() and (res[:, L.R_CYCLES] > 0).all(), res
    elif name == "sweep":
        assert bool(result.done.all()) and result.sizes, result
    elif name == "pending":
        assert len(result) > 0  # a new store: every chunk pending
    elif name == "optimize":
        assert result["regimes"] and all(r["predicted"]["seconds"] > 0 for r in result["regimes"].values())
    elif isinstance(result, DesignInfo):
        assert result.design.cores and result.design.bds
    elif isinstance(result, WholeRun):
        assert 0 < result.seconds and result.runs >= 1
    elif isinstance(result, xr.Dataset):
        measured = [v for v in ("total_cycles", "total_seconds") if v in result]
        assert measured, sorted(result.data_vars)
        assert all((result[v] > 0).all() for v in measured), {v: result[v].values for v in measured}
    else:  # a search's answer
        assert result.best_cycles > 0


def _spy(calls: list, name: str, fn):
    def spy(*args, **kwargs):
        result = fn(*args, **kwargs)
        calls.append((name, result))
        return result
    return spy


@pytest.mark.parametrize("cls,combo,method", list(_cases()))
def test_bench__body_runs_and_computes_real_results(cls, combo, method, monkeypatch):
    obj = cls()
    if hasattr(obj, "setup_cache"):  # asv runs it once and hands its value to setup and each body first
        combo = (obj.setup_cache(), *combo)
    try:
        if hasattr(obj, "setup"):
            obj.setup(*combo)
    except NotImplementedError as e:
        pytest.skip(f"the benchmark skips this parameter combination: {e}")
    calls = []  # installed after setup: its warm-up calls are not the body's
    for entry in ENTRY_POINTS:
        where, _, name = entry.rpartition(":")
        owners = [importlib.import_module(where)] if where else [sys.modules[cls.__module__],
                                                                  sys.modules["benchmarks.common"]]
        for owner in owners:
            if hasattr(owner, name):
                monkeypatch.setattr(owner, name, _spy(calls, name, getattr(owner, name)))
    try:
        result = getattr(obj, method)(*combo)
        if method.startswith("track_"):
            assert result > 0  # a rate, a ratio or seconds (ReferenceModel's rate is the reference model's alone)
        else:
            assert calls, "the body called none of the entry points this test checks"
        for name, value in calls:
            assert_real(name, value)  # before teardown: a sweep's Dataset reads its store lazily
    finally:
        if hasattr(obj, "teardown"):
            obj.teardown(*combo)


def test_bench__modules_and_bodies_leave_the_environment_alone():
    """Benchmarks choose settings for their own blocks (``common.cold``, ``first_sweep``): a
    process-wide variable written at import would change every test collected after it."""
    import os
    import subprocess

    code = ("import importlib, os, sys; sys.path.insert(0, sys.argv[1]); before = dict(os.environ)\n"
            "for name in sys.argv[2:]: importlib.import_module(f'benchmarks.{name}')\n"
            "from benchmarks.common import cold, first_sweep\n"
            "with cold(): pass\n"
            "with first_sweep(): pass\n"
            "assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items())")
    subprocess.run([sys.executable, "-c", code, str(BENCH), *MODULES], check=True,
                   env={**os.environ, "FASTSIM_CACHE": "1"})
