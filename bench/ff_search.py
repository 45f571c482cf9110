"""Where the exact 2048^3 bf16 GEMM search spends its engine time: each candidate it simulates,
run again alone (fast-forward on, as the search runs it) with the engine steps it took, the cycles
it jumped and its wall time, then the search's answer. Compares fast-forward versions: run it on
two commits, interleaved, and diff the cycles (they must be equal) and the steps.

    FASTSIM_CACHE=0 python bench/ff_search.py [--shape "2048 2048 2048 bf16"] [--json]
"""
from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("FASTSIM_CACHE", "0")


def candidates(shape: str):
    """The search's answer and the lowered candidates it simulated, in order."""
    import fastsim.simulation as sim
    from fastsim import NPU2
    from fastsim.workloads.gemm import Gemm, gemm_mapping

    seen = []
    real = sim.run_batch

    def spy(lowered, *args, **kwargs):
        seen.extend(lowered)
        return real(lowered, *args, **kwargs)

    sim.run_batch = spy
    m, k, n, dtype = shape.split()
    start = time.perf_counter()
    try:
        found = gemm_mapping(Gemm(m=int(m), k=int(k), n=int(n), dtype=dtype), NPU2)
    finally:
        sim.run_batch = real
    return found, time.perf_counter() - start, seen


def one(lw) -> dict:
    """Run one lowered design alone (fast-forward as lowered): cycles, steps, jumped, seconds."""
    from fastsim.kernels import layout as L
    from fastsim.kernels.engine import simulate_batch
    from fastsim.lower import pack

    batch = pack([lw])
    start = time.perf_counter()
    simulate_batch(*batch.kernel_args())
    res = batch.outputs["res"][0]
    return {"cycles": int(res[L.R_CYCLES]), "steps": int(res[L.R_STEPS]), "jumped": int(res[L.R_FF_CYCLES]),
            "status": int(res[L.R_STATUS]), "s": round(time.perf_counter() - start, 3),
            "ch_bytes": int(batch.outputs["ch_bytes"][0].sum()),
            "stats": int((batch.outputs["ch_stats"][0] * (1 + __import__("numpy").arange(L.CC_N))).sum())}


def main(argv: list[str]) -> None:
    shape = argv[argv.index("--shape") + 1] if "--shape" in argv else "2048 2048 2048 bf16"
    candidates("64 64 64 bf16")  # compiles the kernels outside the timings
    found, seconds, seen = candidates(shape)
    rows = [one(lw) for lw in seen]
    if "--json" in argv:
        print(json.dumps({"best": found.best.label(), "best_cycles": int(found.best_cycles),
                          "search_s": round(seconds, 2), "rows": rows}))
        return
    for i, r in enumerate(rows):
        print(f"{i:3d} {r['cycles']:>10,d} steps {r['steps']:>9,d} jumped {r['jumped']:>10,d} {r['s']:7.3f} s")
    print(f"best {found.best.label()} {int(found.best_cycles):,d} cycles; search {seconds:.2f} s; "
          f"{len(rows)} candidates, {sum(r['steps'] for r in rows):,d} steps, {sum(r['s'] for r in rows):.2f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
