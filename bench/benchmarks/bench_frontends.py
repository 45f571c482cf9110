"""The newer front doors: a conv layer's mapping search, a whole CNN from ONNX, reading and
simulating an mlir-aie design, and the whole-run search of a decode step's kernels (wall time
after JIT warm-up, caches emptied before each call)."""
from fastsim.llm import LlmStudy
from fastsim.mapping.conv import Conv2d
from fastsim.mapping.conv_search import search_conv

from .common import QUICK, ROOT, cold

import fastsim


class ConvSearch:
    """ResNet-50's res2a 3x3 conv (64 -> 64 channels, 56 x 56, int8) on npu2."""
    timeout = 300
    number = 1
    repeat = 3

    def setup(self):
        size = 14 if QUICK else 56
        self.op = Conv2d(1, 64, size, size, 64, 3, 3, 1, 1, dtype="int8")
        search_conv(Conv2d(1, 8, 8, 8, 8, 3, 3, 1, 1, dtype="int8"), fastsim.NPU2)  # JIT warm-up

    def time_search(self):
        with cold():
            search_conv(self.op, fastsim.NPU2)


class OnnxNetwork:
    """A whole CNN from an ONNX graph on npu2: MobileNetV2 int8 (QDQ) at 224 x 224 (the zoo's small
    CNN in quick mode), every layer searched."""
    timeout = 600
    number = 1
    repeat = 3

    def setup(self):
        from fastsim.onnx import zoo

        self.model = zoo.build("small_cnn") if QUICK else zoo.build("mobilenet_v2", int8=True)
        self._run(zoo.build("small_cnn"))  # JIT warm-up

    @staticmethod
    def _run(model):
        from fastsim.onnx import simulate_onnx

        return simulate_onnx(model, fastsim.NPU2)

    def time_simulate(self):
        with cold():
            self._run(self.model)


class MlirDesign:
    """Reading (lark grammar, lowering to a Design) and simulating an object-FIFO design."""
    number = 1
    repeat = 5

    def setup(self):
        from fastsim.mlir import read_design

        self.path = ROOT / "tests" / "mlir" / "link_distribute.mlir"
        self.kernels = {"scale": 100}
        read_design(self.path, self.kernels)

    def time_read(self):
        from fastsim.mlir import read_design

        read_design(self.path, self.kernels)

    def time_read_and_simulate(self):
        from fastsim.mlir import read_design, simulate_design

        with cold():
            simulate_design(read_design(self.path, self.kernels))


class WholeRunSearch:
    """The whole-run choice of a Llama-3.2-1B decode step's kernels (4k context; its per-op
    kernels overflow program memory), searches included."""
    timeout = 900
    number = 1
    repeat = 1

    def setup(self):
        from fastsim.llm import simulate_llm

        self.study = LlmStudy(regime="decode", context=128 if QUICK else 4096)
        simulate_llm(LlmStudy(regime="decode", context=128))  # JIT warm-up

    def time_search(self):
        from fastsim.studies.whole_run import whole_run_search

        with cold():
            whole_run_search(self.study)
