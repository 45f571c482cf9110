"""End-to-end workloads: the default GEMM, a Llama-3.2-1B decode step at 4k context and a 2k-token
prefill (wall time of the whole simulate call after warm-up, lowering included)."""
from fastsim import settings
from fastsim.cache import clear
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.mapping import Matmul, baseline_mapping, search
from fastsim.workloads.gemm import Gemm, gemm_design

from .common import QUICK, cold, gemm

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
        with cold():  # the op-result, search and engine caches would otherwise answer repeats
            simulate_llm(self.study)

    def time_simulate_known_mappings(self, regime):
        """The same pass with every op's mapping already searched (a later run, or one that
        reuses the on-disk searches): every design is still built, checked, lowered and simulated."""
        with settings.use(cache=False):  # the searches from memory only, never from an earlier run
            simulate_llm(self.study)  # searches this study's shapes (kept in memory)
            clear("op", "engine", "fusion")  # the fusion choice would skip its alternatives' designs
            simulate_llm(self.study)

    def track_simulated_tokens_per_s(self, regime):
        with cold():
            return float(simulate_llm(self.study).tokens_per_s)
    track_simulated_tokens_per_s.unit = "tokens/s (simulated NPU)"


class MapperSearch:
    """Searching the mapping of the default 2048^3 bf16 GEMM on npu2: enumeration, closed-form
    bounds and the batched simulation of the best candidates (target: under 5 s after JIT)."""
    timeout = 300
    number = 1
    repeat = 3

    def setup(self):
        size = 128 if QUICK else 2048
        self.op = Matmul(size, size, size)
        search(Matmul(64, 64, 64), fastsim.NPU2, top=1)  # JIT warm-up

    def time_search_gemm_2048(self):
        with cold():
            search(self.op, fastsim.NPU2)

    def track_searched_over_fixed_cycles(self):
        with cold():
            found = search(self.op, fastsim.NPU2)
        # the fixed whole-array mapping, simulated here: the search runs it only when it could win
        g = Gemm(self.op.m, self.op.k, self.op.n)
        fixed_cycles = int(fastsim.simulate(gemm_design(g, fastsim.NPU2, baseline_mapping(fastsim.NPU2))).total_cycles[0])
        return found.best_cycles / fixed_cycles
    track_searched_over_fixed_cycles.unit = "searched / fixed-mapping cycles"
