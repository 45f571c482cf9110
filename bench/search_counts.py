"""How many candidates exact GEMM searches simulate to prove their answers, and how long they take
cold: each search in a fresh process with the disk cache off (``FASTSIM_CACHE=0``), numba's
kernels already compiled (a warm-up search first). Prints one row per shape (``--json``: one JSON
object per line); docs/mapping.md "Bounds" quotes the table, run on this commit and on the one
before the bounds it names (the two interleaved there, since this VM's speed drifts).

    python bench/search_counts.py [--json] [--only "512 512 512 int8 npu2"]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

# m, k, n, dtype, arch, and "rm" for operands row-major in DDR (``Gemm.row_major_ddr``)
SHAPES = ["512 512 512 int8 npu2", "64 256 512 bf16 npu2", "2048 2048 2048 bf16 npu2", "4096 4096 4096 int8 npu2",
          "4096 4096 4096 int8 npu1", "1000 777 333 bf16 npu2", "1000 777 333 int8 npu1", "512 512 512 int8 npu1",
          "64 256 512 bf16 npu1", "256 256 256 bf16 npu2", "1 2048 2048 bf16 npu2", "128 1024 256 int8 npu2",
          "512 512 512 int8 npu2 rm"]


def one(shape: str) -> dict:
    """Search ``shape`` in this process (the caller runs each in a fresh one)."""
    from fastsim import NPU1, NPU2
    from fastsim.workloads.gemm import Gemm, gemm_mapping

    m, k, n, dtype, arch, *rest = shape.split()
    g = Gemm(m=int(m), k=int(k), n=int(n), dtype=dtype, row_major_ddr=True if rest == ["rm"] else None)
    start = time.perf_counter()
    found = gemm_mapping(g, {"npu1": NPU1, "npu2": NPU2}[arch])
    return {"shape": shape, "best": found.best.label(), "cycles": int(found.best_cycles),
            "simulated": found.simulated, "legal": found.legal, "optimal": bool(found.optimal),
            "seconds": round(time.perf_counter() - start, 2)}


def fresh(shape: str) -> dict:
    env = {**os.environ, "FASTSIM_CACHE": "0"}
    out = subprocess.run([sys.executable, __file__, "--one", shape], check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(argv[1])))
        return
    as_json = "--json" in argv
    shapes = [argv[argv.index("--only") + 1]] if "--only" in argv else SHAPES
    fresh("64 64 64 int8 npu2")  # compiles the kernels once, outside the timings
    if not as_json:
        print(f"{'shape':28s} {'best':46s} {'cycles':>10s} {'simulated':>16s} {'s':>7s}")
    for shape in shapes:
        r = fresh(shape)
        print(json.dumps(r) if as_json else f"{shape:28s} {r['best']:46s} {r['cycles']:10,d} "
              f"{r['simulated']:>6,d} of {r['legal']:>7,d} {r['seconds']:7.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
