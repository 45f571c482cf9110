"""Issue 53's cold runs, the ones not tracked elsewhere (the 2048^3 search is
``bench_workloads.MapperSearch``, the decode step and the prefill ``bench_workloads.Llama1B``, the
62-point sweep ``bench_sweeps.SweepThroughput``): a sweep's new contexts in one process,
``fastsim optimize --model llama-3.1-8b`` as a whole process, ``sweeps/ablation_100k.toml`` end to
end on two workers with the workers' memory, and this machine's speed, which every timing is read
against (this VM runs up to 4x slower on some days than on others)."""
import os
import subprocess
import sys
import tempfile
import threading
import time

from fastsim.llm import LlmStudy, simulate_llm

from .common import QUICK, ROOT, cold, first_sweep, machine_speed


class Yardstick:
    """The reference simulator's cycles/s on gemm_512 (``common.machine_speed``)."""
    number = 1
    repeat = 1

    def track_cycles_per_s(self):
        return machine_speed(2_000 if QUICK else 20_000)
    track_cycles_per_s.unit = "cycles/s (reference simulator)"


class NewContexts:
    """Llama-3.2-1B decode points at new contexts and batch sizes, one after the other in one
    process from empty caches: each new context is new attention shapes to search, the rest of the
    step is reused, as in a sweep's points (``bench/cold_runs.py contexts``)."""
    timeout = 900
    number = 1
    repeat = 3

    def setup(self):
        simulate_llm(LlmStudy(regime="decode", context=128))  # JIT warm-up
        self.studies = [LlmStudy(regime="decode", context=context, batch=batch)
                        for context in ((256, 384) if QUICK else range(512, 3584 + 1, 256)) for batch in (1, 2)]

    def time_points(self):
        with cold():
            for study in self.studies:
                simulate_llm(study)


class OptimizeLlama8B:
    """``fastsim optimize --model llama-3.1-8b`` as a user's first run: a whole process, the disk
    tier on in a new, empty directory (issue 53 asks 20 s on a day the yardstick reads at least
    8,000 cycles/s)."""
    timeout = 1800
    number = 1
    repeat = 1

    def track_whole_process_s(self):
        args = (["--model", "llama-3.2-1b", "--regime", "decode:64"] if QUICK else ["--model", "llama-3.1-8b"])
        with tempfile.TemporaryDirectory() as cache_dir, tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "fastsim.cli", "optimize", *args, "--out", out], check=True,
                           capture_output=True, env={**os.environ, "FASTSIM_CACHE": "1", "FASTSIM_CACHE_DIR": cache_dir})
            return time.perf_counter() - start
    track_whole_process_s.unit = "s"


class Ablation100k:
    """``sweeps/ablation_100k.toml`` end to end on two local workers from empty caches (issue 53:
    10 minutes), and its workers' resident memory sampled every second (issue 53: at most 1 GiB,
    flat after the first minute). The sweep runs once (``setup_cache``); each track reads it."""
    timeout = 7200
    number = 1
    repeat = 1

    def setup_cache(self) -> dict:
        from fastsim.sweeping import parse_spec, sweep

        spec = (parse_spec(_QUICK_SPEC, "ablation_quick") if QUICK
                else parse_spec((ROOT / "sweeps" / "ablation_100k.toml").read_text(), "ablation_100k"))
        with tempfile.TemporaryDirectory() as where, first_sweep(), _WorkerMemory() as memory:
            start = time.perf_counter()
            sweep(spec, f"{where}/s.zarr", workers=2, progress=False)
            wall_s = time.perf_counter() - start
        return {"points_per_s": spec.n_points / wall_s, "peak_mb": memory.peak_mb,
                "late_over_first_minute": memory.late_over_first_minute()}

    def track_points_per_s(self, run):
        return run["points_per_s"]
    track_points_per_s.unit = "points/s"

    def track_worker_peak_rss_mb(self, run):
        return run["peak_mb"]
    track_worker_peak_rss_mb.unit = "MB"

    def track_worker_rss_after_over_at_first_minute(self, run):
        return run["late_over_first_minute"]
    track_worker_rss_after_over_at_first_minute.unit = "ratio (1: flat)"


_QUICK_SPEC = """
[study]
kind = "llm"
[study.base]
regime = "decode"
weights = "int4"
[axes]
context = [256, 512]
noop = ["none", "norm"]
"""


class _WorkerMemory:
    """Resident memory of this process's child processes (a local cluster's workers and nannies),
    sampled every second while the block runs."""

    def __init__(self, every_s: float = 1.0):
        self.every_s, self.samples = every_s, []  # (seconds since start, {pid: bytes})
        self._stop = threading.Event()

    def __enter__(self):
        import psutil

        me, start = psutil.Process(), time.perf_counter()

        def sample():
            while not self._stop.is_set():
                rss = {}
                for child in me.children(recursive=True):
                    try:
                        rss[child.pid] = child.memory_info().rss
                    except psutil.Error:  # gone since it was listed
                        pass
                self.samples.append((time.perf_counter() - start, rss))
                self._stop.wait(self.every_s)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return max((max(rss.values(), default=0) for _, rss in self.samples), default=0) / 2**20

    def late_over_first_minute(self) -> float:
        """The most any process held after the first minute (after half the run when it is shorter)
        over what it held then: 1 when memory stays flat."""
        end = self.samples[-1][0]
        mark = min(60.0, end / 2)
        at_mark = next(rss for t, rss in self.samples if t >= mark)
        ratios = [max(rss.get(pid, 0) for t, rss in self.samples if t >= mark) / held
                  for pid, held in at_mark.items() if held]
        return max(ratios, default=1.0)
