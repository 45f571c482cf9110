"""Engine throughput: simulated cycles per second stepping, skipping and fast-forwarding, batch scaling,
the reference model, and JIT compile / cache-load times."""
import subprocess
import sys
import time

from fastsim.kernels import layout as L
from fastsim.lower import lower
from fastsim.simulation import run_batch

from .common import COLD_ENV, DESIGNS, ENGINE_MODES, QUICK, gemm_candidates, kernel_run, passthrough_design, reference_rate


class EngineThroughput:
    params = (list(DESIGNS), list(ENGINE_MODES))
    param_names = ["design", "mode"]
    timeout = 300

    def setup(self, design, mode):
        if design.startswith("gemm_2048") and mode == "step" and not QUICK:
            raise NotImplementedError("stepping millions of cycles one by one takes ~10 s; skipped")
        self.lowered = lower(DESIGNS[design](), **ENGINE_MODES[mode])
        self.batch = run_batch([self.lowered], cache=False)  # warm-up: compile or load cache

    def time_simulate(self, design, mode):
        run_batch([self.lowered], cache=False)

    def track_stepped_cycles(self, design, mode):
        return float(run_batch([self.lowered], cache=False).outputs["res"][0, L.R_STEPS])
    track_stepped_cycles.unit = "cycles stepped one by one"

    def track_cycles_per_s(self, design, mode):
        t = time.perf_counter()
        batch = run_batch([self.lowered], cache=False)
        return float(batch.outputs["res"][0, L.R_CYCLES]) / (time.perf_counter() - t)
    track_cycles_per_s.unit = "cycles/s"

    def track_channel_cycles_per_s(self, design, mode):
        t = time.perf_counter()
        batch = run_batch([self.lowered], cache=False)
        n_ch = len(self.lowered.channels)
        return n_ch * float(batch.outputs["res"][0, L.R_CYCLES]) / (time.perf_counter() - t)
    track_channel_cycles_per_s.unit = "channel-cycles/s"


class BatchThreads:
    """64 different GEMM mapping candidates in one batch on 1 and 2 threads (results identical)."""
    params = [1, 2]
    param_names = ["threads"]
    timeout = 300

    def setup(self, threads):
        self.lowered = gemm_candidates()
        run_batch(self.lowered[:1], threads=1, cache=False)

    def time_batch(self, threads):
        run_batch(self.lowered, threads=threads, cache=False)


class BatchScaling:
    """Designs per second for batches of 1, 64 and 1024 small designs in one kernel call."""
    params = [1, 64, 1024]
    param_names = ["designs"]
    timeout = 300

    def setup(self, n):
        n = min(n, 8) if QUICK else n
        one = lower(passthrough_design(16))
        self.lowered = [one] * n
        run_batch(self.lowered[:1], cache=False)

    def time_batch(self, n):
        run_batch(self.lowered, cache=False)

    def track_designs_per_s(self, n):
        t = time.perf_counter()
        run_batch(self.lowered, cache=False)
        return len(self.lowered) / (time.perf_counter() - t)
    track_designs_per_s.unit = "designs/s"


class ReferenceModel:
    """The pure-Python reference on the same designs, so the kernel/reference ratio is tracked."""
    params = ["passthrough", "gemm_2048"]
    param_names = ["design"]
    timeout = 600

    def setup(self, design):
        self.design = DESIGNS[design]()
        self.max_cycles = 2000 if QUICK else 20000

    def track_reference_cycles_per_s(self, design):
        return reference_rate(self.design, self.max_cycles)
    track_reference_cycles_per_s.unit = "cycles/s"

    def track_kernel_over_reference(self, design):
        seconds, batch = kernel_run(self.design)
        kernel_rate = float(batch.outputs["res"][0, L.R_CYCLES]) / seconds
        return kernel_rate / reference_rate(self.design, self.max_cycles)
    track_kernel_over_reference.unit = "x"


_STARTUP = """
import time; t = time.perf_counter()
import fastsim
from fastsim.lower import lower
from fastsim.simulation import run_batch
from fastsim.workloads.gemm import Gemm, gemm_design
run_batch([lower(gemm_design(Gemm(512, 512, 512), fastsim.NPU2))])
print(time.perf_counter() - t)
"""


class Startup:
    """Seconds from a fresh interpreter to the first result: cold JIT compile vs cached load."""
    timeout = 600
    repeat = 1
    number = 1

    def _run(self, cache: str) -> float:
        env = {**__import__("os").environ, **COLD_ENV, "FASTSIM_NUMBA_CACHE": cache}
        out = subprocess.run([sys.executable, "-c", _STARTUP], env=env, capture_output=True, text=True,
                             check=True)
        return float(out.stdout.strip().splitlines()[-1])

    def track_cold_compile_s(self):
        return self._run("0")
    track_cold_compile_s.unit = "s"

    def track_cached_start_s(self):
        self._run("1")  # make sure the cache exists
        return self._run("1")
    track_cached_start_s.unit = "s"
