"""The optimization method end to end: ``fastsim optimize`` on Llama-3.2-1B / npu2 (decode at 4k and
a 1k prefill), on one thread, caches cleared (target: under 5 minutes on one core)."""
import tempfile

from fastsim import settings
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.model import ModelConfig
from fastsim.studies.optimize import optimize

from .common import QUICK, cold


class Optimize1B:
    timeout = 900
    number = 1
    repeat = 1

    def setup(self):
        simulate_llm(LlmStudy(regime="decode", context=128))  # JIT warm-up
        if QUICK:
            self.base = LlmStudy(model=ModelConfig("tiny", 256, 2, 4, 2, 64, 512, 1000))
            self.regimes, self.mix = ["decode:64", "prefill:32"], ["32:8"]
        else:
            self.base, self.regimes, self.mix = LlmStudy(), ["decode:4096", "prefill:1024"], ["1024:128"]

    def time_optimize(self):
        with tempfile.TemporaryDirectory() as out, cold(), settings.use(threads=1):
            optimize(self.base, self.regimes, self.mix, out=out)
