"""One evaluator for every op graph: placement (fusion, token blocks, pipelines), the mapper's
designs, one batched simulation, typed per-op results and the per-op Dataset."""
from .dataset import to_dataset
from .evaluate import GraphResult, evaluate
from .op_result import OpResult
from .pins import GraphPins
from .standalone import StandaloneRun, run_standalone

__all__ = ["GraphPins", "GraphResult", "OpResult", "StandaloneRun", "evaluate", "run_standalone", "to_dataset"]
