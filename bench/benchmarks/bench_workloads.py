"""End-to-end workloads: the default GEMM, a Llama-3.2-1B decode step at 4k context and a 2k-token
prefill (wall time of the whole simulate call after warm-up, lowering included)."""
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.run import clear_cache

from .common import QUICK, gemm

import fastsim


class Gemm2048:
    timeout = 300

    def setup(self):
        self.design = gemm(2048)
        fastsim.simulate(self.design)

    def time_default_gemm(self):
        fastsim.simulate(self.design)


class Llama1B:
    params = ["decode_4k", "prefill_2k"]
    param_names = ["regime"]
    timeout = 600
    number = 1
    repeat = 3

    def setup(self, regime):
        if regime == "decode_4k":
            self.study = LlmStudy(regime="decode", context=128 if QUICK else 4096)
        else:
            self.study = LlmStudy(regime="prefill", prompt=32 if QUICK else 2048)
        simulate_llm(LlmStudy(regime="decode", context=128))  # JIT warm-up

    def time_simulate(self, regime):
        clear_cache()  # the op-result cache would otherwise answer repeats without simulating
        simulate_llm(self.study)

    def track_simulated_tokens_per_s(self, regime):
        clear_cache()
        return float(simulate_llm(self.study).tokens_per_s)
    track_simulated_tokens_per_s.unit = "tokens/s (simulated NPU)"
