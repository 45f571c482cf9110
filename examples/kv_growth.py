"""Decode time per token vs context for Llama-3.2-1B on npu2, and the context at which KV-cache
traffic overtakes weight traffic (found by bisection on simulated DDR bytes).

    python examples/kv_growth.py
"""
import time

from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.run import llm_summary


def point(context):
    return llm_summary(simulate_llm(LlmStudy(model="llama-3.2-1b", regime="decode", context=context)))


def main():
    t0 = time.perf_counter()
    print("| context | ms/token | tokens/s | weights MB | KV MB | attention share | bound by |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for context in (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072):
        s = point(context)
        share = (s["by_class"].get("attention", 0) + s["by_class"].get("softmax", 0)) / s["seconds"]
        print(f"| {context:,} | {s['seconds'] * 1e3:.2f} | {s['tokens_per_s']:.1f} | {s['weight_bytes'] / 1e6:.0f} | "
              f"{s['kv_bytes'] / 1e6:.0f} | {100 * share:.0f} % | {s['bound_by']} |")
    lo, hi = 1024, 131072
    while hi - lo > 256:
        mid = (lo + hi) // 2
        s = point(mid)
        lo, hi = (mid, hi) if s["kv_bytes"] < s["weight_bytes"] else (lo, mid)
    print(f"\nKV traffic overtakes weight traffic between context {lo:,} and {hi:,} "
          f"(simulated; {time.perf_counter() - t0:.0f} s for this script)")


if __name__ == "__main__":
    main()
