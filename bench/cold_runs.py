"""Cold runs as a user's first call meets them: every cache emptied (memory, and the disk tier off),
JIT already warm. Prints each case's seconds, one per repeat. It imports nothing of ``bench/``, so
it times any checkout whose ``fastsim`` comes first on the path (one from before ``fastsim.cache``,
such as issue 53's baseline c0bd5ec, has its own caches emptied: ``_clear_old_caches``); compare
commits by running it for each in turn, interleaved (this VM drifts by more than most changes):

    python bench/cold_runs.py [gemm] [decode] [prefill] [contexts] [ablation] [cnn] [conv_plans] [optimize]
        [--repeat 3] [--per-design]
    PYTHONPATH=/path/to/older/checkout python bench/cold_runs.py prefill decode

``gemm``: the exact search and simulation of a 2048^3 bf16 GEMM on npu2 (``run gemm``'s work);
``decode``: a Llama-3.2-1B decode step at 4k context; ``prefill``: a 2k-token prefill;
``contexts``: 26 Llama-3.2-1B decode steps at contexts 512, 768, ..., 3584, batch 1 and 2, one
after the other (a sweep's points: each new context is new attention shapes, the rest is reused);
``ablation``: 200 int4 decode points of ``sweeps/ablation_100k.toml``'s kind one after the other
(contexts 256 and 1024, batch 1 and 2, its ten NOOP choices, five of its cuts); ``cnn``:
one ResNet-50 inference from ONNX (``fastsim.onnx.zoo``'s, written once to a temporary file before
the timing), epilogues folded, on npu2; ``conv_plans``: the plans of every candidate of its
distinct dense and depthwise convs, nothing simulated (the conv search's Python); ``optimize``:
``fastsim optimize --model llama-3.1-8b --workers 1`` in this process (minutes; not in the default list).
``--per-design`` also prints, for every engine call of the runs, each design's seconds alone,
cycles, stepped cycles and status (where a search's engine time goes).
"""
from __future__ import annotations

import argparse
import functools
import gc
import importlib
import os
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import fastsim
from fastsim.llm.run import simulate_llm
from fastsim.llm.study import LlmStudy
from fastsim.workloads.gemm import Gemm, gemm_design

RESNET50 = Path(tempfile.gettempdir()) / "fastsim_cold_runs_resnet50.onnx"


def resnet50_file() -> str:
    """The zoo's ResNet-50 as an ONNX file (weights zero: fastsim reads shapes and types)."""
    if not RESNET50.exists():
        from fastsim.onnx.zoo import save

        save("resnet50", str(RESNET50))
    return str(RESNET50)


def _cnn():
    from fastsim.onnx import simulate_onnx

    return simulate_onnx(resnet50_file(), fastsim.NPU2, fold_epilogues=True)


def _conv_plans():
    """Every candidate plan of ResNet-50's distinct dense and depthwise convs (int8 and bf16 runs'
    conv search without its simulations: ``candidates``, ``plan``, ``problems``), as docs/speed.md
    times the conv planning."""
    from fastsim.graph import CONV
    from fastsim.mapping.conv_plan import plan, problems
    from fastsim.mapping.conv_search import candidates, conv_of
    from fastsim.mapping.pins import Pins
    from fastsim.onnx.graph import build_graph
    from fastsim.onnx.zoo import resnet50

    graph = build_graph(resnet50(shapes_only=True), fastsim.NPU2).graph
    convs = {replace(conv_of(op, "bf16"), name="") for op in graph.ops if op.kind == CONV}  # distinct shapes
    planned = 0
    for conv in (c for c in convs if c.kind != "pointwise"):
        memo: dict = {}
        for mp in candidates(conv, fastsim.NPU2, Pins()):
            problems(plan(conv, mp, fastsim.NPU2, memo, checked=True), fastsim.NPU2)
            planned += 1
    return planned


def _contexts():
    for context in range(512, 3584 + 1, 256):
        for batch in (1, 2):
            simulate_llm(LlmStudy(regime="decode", context=context, batch=batch))


def _ablation():
    noops = [(), ("embedding",), ("norm",), ("gemm",), ("rope",), ("kv",), ("attention",), ("softmax",),
             ("elementwise",), ("cast",)]
    for context in (256, 1024):
        for batch in (1, 2):
            for noop in noops:
                for cuts in (None, (1,), (6, 12), (3, 7, 11), (2, 4, 6, 8)):
                    simulate_llm(LlmStudy(regime="decode", weights="int4", context=context, batch=batch, noop=noop,
                                          cuts=cuts))


def _optimize():
    """``fastsim optimize --model llama-3.1-8b --workers 1`` in this process: every study, plan and
    what-if one after the other, each engine call on every core (where a batch's threads balance)."""
    from fastsim.cli import main

    with tempfile.TemporaryDirectory() as out:
        main(["optimize", "--model", "llama-3.1-8b", "--workers", "1", "--out", out], standalone_mode=False)


CASES = {
    "gemm": lambda: fastsim.simulate(gemm_design(Gemm(2048, 2048, 2048), fastsim.NPU2)),
    "decode": lambda: simulate_llm(LlmStudy(regime="decode", context=4096)),
    "prefill": lambda: simulate_llm(LlmStudy(regime="prefill", context=2048)),
    "contexts": _contexts,
    "ablation": _ablation,
    "cnn": _cnn,
    "conv_plans": _conv_plans,
    "optimize": _optimize,
}


@contextmanager
def cold():
    """Every memory cache emptied and the disk tier off for the block (``benchmarks.common.cold``,
    written again here so that an older checkout's ``fastsim`` can be timed with this script)."""
    if (Path(fastsim.__file__).parent / "cache.py").exists():
        from fastsim import settings
        from fastsim.cache import clear

        clear()
        block = settings.use(cache=False)
    else:  # a checkout from before ``fastsim.cache``, such as c0bd5ec (issue 53's baseline); looked
        # up by file, as an editable install of a newer checkout would lend it its own module
        _clear_old_caches()
        block = nullcontext()
    with block:
        yield


def _clear_old_caches() -> None:
    """An older checkout's caches: its modules' clear functions and every functools cache of
    fastsim; its disk tier goes off through ``FASTSIM_CACHE=0``, which it reads when first used."""
    os.environ["FASTSIM_CACHE"] = "0"
    for name in ("fastsim.mapping.search", "fastsim.llm.run", "fastsim.result_cache"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for clear_name in ("clear_cache", "clear"):
            if callable(getattr(module, clear_name, None)):
                getattr(module, clear_name)()
    for obj in gc.get_objects():
        if isinstance(obj, functools._lru_cache_wrapper) and getattr(obj, "__module__", "").startswith("fastsim"):
            obj.cache_clear()


def per_design_timing() -> None:
    """Wrap the engine so that each design of a call is first run alone and reported."""
    from fastsim import lower, simulation
    from fastsim.kernels import layout as L

    run = simulation._run

    def timed(batch, threads, jit):
        for lw in batch.designs:
            alone = lower.pack([lw])
            start = time.perf_counter()
            run(alone, 1, jit)
            res = alone.outputs["res"][0]
            print(f"  {time.perf_counter() - start:6.3f} s  cycles {res[L.R_CYCLES]:>10}  stepped "
                  f"{res[L.R_STEPS]:>8}  status {res[L.R_STATUS]}  {lw.design.name}")
        run(batch, threads, jit)

    simulation._run = timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)} (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--per-design", action="store_true")
    args = ap.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    simulate_llm(LlmStudy(regime="decode", context=128))  # JIT warm-up
    CASES["gemm"]()
    if "cnn" in (args.cases or CASES):
        resnet50_file()  # written before the timing
    if args.per_design:
        per_design_timing()
    for name in args.cases or [c for c in CASES if c != "optimize"]:
        seconds = []
        for _ in range(args.repeat):
            with cold():
                start = time.perf_counter()
                CASES[name]()
                seconds.append(time.perf_counter() - start)
        print(name, " ".join(f"{s:.2f}" for s in seconds), "s", flush=True)


if __name__ == "__main__":
    main()
