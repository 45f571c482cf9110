"""Designs and measurements shared by the asv benchmarks, ``bench/report.py`` and the
bench-as-test run. ``FASTSIM_BENCH_QUICK=1`` shrinks every workload so that CI can run each
benchmark body once in seconds (a smoke test, never a timing)."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import fastsim
from fastsim import settings
from fastsim.cache import clear
from fastsim.lower import lower
from fastsim.simulation import run_batch
from fastsim.mapping import baseline_mapping
from fastsim.workloads.gemm import Gemm, gemm_design

QUICK = os.environ.get("FASTSIM_BENCH_QUICK") == "1"
ROOT = Path(__file__).resolve().parents[2]
# a timed whole process (``subprocess``) computes everything: no earlier run's answers from disk
COLD_ENV = {"FASTSIM_CACHE": "0"}


@contextmanager
def cold(*regions: str):
    """A timed block that computes everything again: the memory caches emptied (``regions``,
    default all) and the disk tier off for the block, where an earlier run's answers would
    otherwise be read. Settings, not the environment: nothing outside the block changes."""
    clear(*regions)
    with settings.use(cache=False):
        yield


@contextmanager
def first_sweep():
    """A user's first sweep: the disk tier on, in a new, empty directory its workers share (they
    receive the caller's settings), removed afterwards."""
    with tempfile.TemporaryDirectory() as cache_dir, settings.use(cache=True, cache_dir=cache_dir):
        yield


def reference_sim():
    """The pure-Python reference model lives beside the tests."""
    sys.path.insert(0, str(ROOT / "tests"))
    from reference_model import ReferenceSim

    return ReferenceSim


def passthrough_design(n_obj: int = 64):
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import passthrough

    return passthrough(n_obj=4 if QUICK else n_obj, size=1024, compute_cycles=300)


def gemm(size: int, columns: int = 8) -> fastsim.Design:
    """A square bf16 GEMM on npu2, or on a wider custom array (``columns`` > 8), on the fixed
    whole-array mapping (mlir-aie whole_array, 64^3 tiles): the engine's speed is tracked on a design
    that does not change when the mapper's choice does."""
    arch = fastsim.NPU2 if columns == 8 else fastsim.NPU2.replace(name=f"npu2x{columns}", columns=columns)
    if QUICK:
        return gemm_design(Gemm(256, 256, 64 * columns), arch, baseline_mapping(arch))
    return gemm_design(Gemm(size, size, size), arch, baseline_mapping(arch))


DESIGNS = {
    "passthrough": lambda: passthrough_design(),
    "gemm_512": lambda: gemm(512),
    "gemm_2048": lambda: gemm(2048),  # the default example's shape, on the fixed whole_array mapping
    "gemm_2048_32col": lambda: gemm(2048, columns=32),  # a large custom array: 128 cores
}


# how the engine advances: every cycle; skipping cycles that repeat the last one; and also
# fast-forwarding whole periods of a periodic steady state (the default). Results are identical.
ENGINE_MODES = {"step": dict(skip=False, fast_forward=False), "skip": dict(skip=True, fast_forward=False),
                "skip+ff": dict(skip=True, fast_forward=True)}


def kernel_run(design, skip: bool = True, repeats: int = 1, fast_forward: bool | None = None):
    """Run the batched kernel on one lowered design; returns (seconds per run, result row)."""
    lowered = lower(design, skip=skip, fast_forward=fast_forward)
    run_batch([lowered], cache=False)  # warm-up (JIT or cache load)
    best = []
    for _ in range(repeats):
        t = time.perf_counter()
        batch = run_batch([lowered], cache=False)
        best.append(time.perf_counter() - t)
    return sorted(best)[len(best) // 2], batch


def reference_rate(design, max_cycles: int) -> float:
    """Reference model speed in simulated cycles per second over the first max_cycles cycles."""
    Ref = reference_sim()
    lowered = lower(design, max_cycles=max_cycles)
    t = time.perf_counter()
    sim = Ref(lowered).run()
    return sim.cycle / (time.perf_counter() - t)


# this VM's speed drifts (the same commit ran 3x slower on one day than on the one before): the
# pure-Python reference simulator, unchanged since the engine's first day, is the yardstick that a
# timing is read against. Its rate on gemm_512's first 20,000 cycles in docs/speed.md's table:
YARDSTICK_TABLE_CYCLES_PER_S = 9_321


def machine_speed(cycles: int = 20_000) -> float:
    """This machine's speed now: the reference simulator's cycles/s on gemm_512's first ``cycles``
    cycles (2 s on a fast day, 8 s on a slow one). Two timings taken hours or days apart compare by
    their ratio to it."""
    return reference_rate(DESIGNS["gemm_512"](), cycles)


def gemm_candidates(n: int = 64) -> list:
    """``n`` different lowered mappings of a 512^3 bf16 GEMM on npu2 (dataflow x tile x columns x
    rows), the kind of batch a mapping search simulates: for thread scaling."""
    import itertools

    from fastsim.mapping import Mapping, Matmul, matmul_design

    out = []
    tiles = [(32, 64, 32), (64, 64, 64), (32, 32, 32), (64, 32, 64), (16, 64, 32)]
    for flow, tile, cols, rows in itertools.product(["os", "ws", "is"], tiles, [8, 4, 2, 1], [4, 2]):
        try:
            out.append(lower(matmul_design(Matmul(512, 512, 512, "bf16"), Mapping(flow, "2d", tile, cols, rows),
                                           fastsim.NPU2)))
        except fastsim.ConfigError:
            continue
        if len(out) == (4 if QUICK else n):
            break
    return out
