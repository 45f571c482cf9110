"""Sweeps: points per second with 1 and 2 local worker processes (cluster start-up included, as a
user sees it), and the peak memory of creating and resuming a 100,000-point store."""
import shutil
import tempfile
import time

from fastsim.sweeping import parse_spec, sweep

from .common import QUICK, first_sweep

SPEC = """
[study]
kind = "llm"
[study.base]
model = "llama-3.2-1b"
regime = "decode"
[axes]
context = CONTEXTS
batch = [1, 2]
[run]
chunk_points = 2
outputs = ["seconds", "tokens_per_s", "by_class"]
"""


def _spec():
    contexts = "[512, 1024]" if QUICK else str(list(range(512, 8192 + 1, 256))[:32])  # 32 contexts x 2 batches
    return parse_spec(SPEC.replace("CONTEXTS", contexts), "bench")


class SweepThroughput:
    params = [1, 2]
    param_names = ["workers"]
    timeout = 900
    number = 1
    repeat = 1

    def setup(self, workers):
        self.dir = tempfile.mkdtemp()

    def teardown(self, workers):
        shutil.rmtree(self.dir, ignore_errors=True)

    def track_points_per_s(self, workers):
        spec = _spec()
        t = time.perf_counter()
        with first_sweep():
            sweep(spec, f"{self.dir}/s{time.time_ns()}.zarr", workers=0 if QUICK else workers, progress=False)
        return spec.n_points / (time.perf_counter() - t)
    track_points_per_s.unit = "points/s"


class LargeStore:
    """Creating a 100,000-point store and listing its pending chunks stays small in memory."""
    timeout = 300

    def setup(self):
        self.dir = tempfile.mkdtemp()
        n = 10 if QUICK else 1000
        self.spec = parse_spec(f"""
[study]
kind = "gemm"
[axes]
m = {list(range(256, 256 * (n + 1), 256))}
k = {list(range(64, 64 * 101, 64))}
[study.base]
n = 512
[run]
chunk_points = 100
""", "large")

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def peakmem_create_and_list_pending(self):
        from fastsim.sweeping import store
        path = f"{self.dir}/large.zarr"
        store.create(self.spec, path)
        assert len(store.pending(self.spec, path)) == len(store.regions(self.spec))
