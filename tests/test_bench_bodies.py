"""Run every benchmark body once on shrunken workloads so that a broken benchmark fails CI.
This is a smoke test, never a timing: the numbers it produces are thrown away."""
import importlib
import inspect
import itertools
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
os.environ["FASTSIM_BENCH_QUICK"] = "1"

MODULES = sorted(p.stem for p in (BENCH / "benchmarks").glob("bench_*.py"))


def _cases():
    for name in MODULES:
        mod = importlib.import_module(f"benchmarks.{name}")
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
                    yield pytest.param(cls, combo, m, id=f"{name}.{cls_name}.{m}{list(combo)}")


@pytest.mark.parametrize("cls,combo,method", list(_cases()))
def test_bench__body_runs(cls, combo, method):
    obj = cls()
    try:
        if hasattr(obj, "setup"):
            obj.setup(*combo)
    except NotImplementedError:
        pytest.skip("benchmark skips this parameter combination")
    result = getattr(obj, method)(*combo)
    if method.startswith("track_"):
        assert result > 0


def test_bench__modules_and_bodies_leave_the_environment_alone():
    """Benchmarks choose settings for their own blocks (``common.cold``, ``first_sweep``): a
    process-wide variable written at import would change every test collected after it."""
    import subprocess

    code = ("import importlib, os, sys; sys.path.insert(0, sys.argv[1]); before = dict(os.environ)\n"
            "for name in sys.argv[2:]: importlib.import_module(f'benchmarks.{name}')\n"
            "from benchmarks.common import cold, first_sweep\n"
            "with cold(): pass\n"
            "with first_sweep(): pass\n"
            "assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items())")
    subprocess.run([sys.executable, "-c", code, str(BENCH), *MODULES], check=True,
                   env={**os.environ, "FASTSIM_CACHE": "1"})
