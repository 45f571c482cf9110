"""Every preset model with int4, int8 and bf16 weights, one decode step at 4k context and a 1k-token
prefill on npu2, with fusion, mappings and dispatch cuts searched (the README's LLM table).

    python examples/llm_table.py
"""
import time

from fastsim.llm import MODELS, LlmStudy, Precision, simulate_llm
from fastsim.llm.run import llm_summary


def main():
    t0 = time.perf_counter()
    print("| model | weights | decode 4k ms/token | decode fusion | prefill 1k ms | prefill fusion | "
          "prefill dispatches | prefill exposed compute |")
    print("|---|---|---:|---|---:|---|---:|---:|")
    for model in MODELS:
        for weights in ("int4", "int8", "bf16"):
            precision = Precision(weights=weights)
            d = llm_summary(simulate_llm(LlmStudy(model=model, regime="decode", context=4096, precision=precision)))
            p = llm_summary(simulate_llm(LlmStudy(model=model, regime="prefill", prompt=1024, precision=precision)))
            print(f"| {model} | {weights} | {d['seconds'] * 1e3:.2f} | {d['fusion']} | {p['seconds'] * 1e3:.1f} | "
                  f"{p['fusion']} | {p['dispatches']} | {100 * p['exposed_compute_s'] / p['seconds']:.0f} % |")
    print(f"\n({time.perf_counter() - t0:.0f} s for this script)")


if __name__ == "__main__":
    main()
