"""Systolic mesh model on SCALE-Sim layers, and SCALE-Sim itself on the same layers when
SCALESIM_PYTHON points at a python with scalesim==3.0.0 (giving the speed ratio in one run)."""
import os
import time
from pathlib import Path

from fastsim.systolic import MeshConfig, read_topology, simulate_mesh

from .common import QUICK

HERE = Path(__file__).resolve().parents[1] / "scalesim"


class SystolicModel:
    def setup(self):
        self.layers = read_topology(HERE / "resnet50_first4.csv")
        self.configs = [MeshConfig(r, c, df) for r, c in ((8, 8), (16, 8), (32, 32)) for df in ("ws", "is", "os")]
        simulate_mesh(self.layers, self.configs)

    def time_resnet50_first4_on_9_meshes(self):
        simulate_mesh(self.layers, self.configs)

    def track_layer_configs_per_s(self):
        t = time.perf_counter()
        simulate_mesh(self.layers, self.configs)
        return len(self.layers) * len(self.configs) / (time.perf_counter() - t)
    track_layer_configs_per_s.unit = "layer-configs/s"


class SystolicMemoryModel:
    """SCALE-Sim's bandwidth-limited buffer model (request by request): its cost grows with the
    layer, so it is tracked as demand requests served per second."""

    def setup(self):
        layers = read_topology(HERE / "resnet50_first4.csv")
        self.layers = layers[1:2] if QUICK else layers
        self.configs = [MeshConfig(32, 32, df, 1024, 1024, 1024, 10) for df in ("ws", "is", "os")]
        simulate_mesh(self.layers, self.configs)

    def time_resnet50_first4_bandwidth_limited(self):
        simulate_mesh(self.layers, self.configs)

    def track_requests_per_s(self):
        t = time.perf_counter()
        ds = simulate_mesh(self.layers, self.configs)
        elapsed = time.perf_counter() - t
        requests = int(ds.sram_ifmap_reads.sum() + ds.sram_filter_reads.sum() + ds.sram_ofmap_writes.sum())
        return requests / elapsed
    track_requests_per_s.unit = "requests/s"


class VersusScaleSim:
    timeout = 900
    number = 1
    repeat = 1

    def setup(self):
        if not os.environ.get("SCALESIM_PYTHON") or QUICK:
            raise NotImplementedError("set SCALESIM_PYTHON to run SCALE-Sim beside fastsim")

    def _speedup(self, config):
        import sys
        sys.path.insert(0, str(HERE))
        from compare import compare
        r = compare(HERE / "resnet50_first4.csv", HERE / config, os.environ["SCALESIM_PYTHON"])
        assert r["cycles_equal"]
        return r["speedup"]

    def track_whole_process_speedup(self):
        return self._speedup("mesh32_os.cfg")
    track_whole_process_speedup.unit = "x"

    def track_whole_process_speedup_bandwidth_limited(self):
        return self._speedup("mesh32_os_user.cfg")
    track_whole_process_speedup_bandwidth_limited.unit = "x"
