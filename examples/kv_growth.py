"""Decode time per token vs context for Llama-3.2-1B on npu2, and the context at which KV-cache
traffic overtakes weight traffic (found by bisection on simulated DDR bytes).

    python examples/kv_growth.py [--figure docs/figures/kv_growth.png]
"""
import argparse
import time

from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.run import llm_summary


def point(context):
    return llm_summary(simulate_llm(LlmStudy(model="llama-3.2-1b", regime="decode", context=context)))


def figure(rows, crossover, path):
    """ms/token and the DDR bytes of weights and KV per token over context, the crossover marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ctx = [r[0] for r in rows]
    fig, (ax, mb) = plt.subplots(2, 1, figsize=(6, 4.4), sharex=True)
    ax.plot(ctx, [r[1]["seconds"] * 1e3 for r in rows], "o-", color="k")
    ax.set_ylabel("decode step (ms)")
    mb.plot(ctx, [r[1]["weight_bytes"] / 1e6 for r in rows], "s-", label="weights")
    mb.plot(ctx, [r[1]["kv_bytes"] / 1e6 for r in rows], "^-", label="KV cache")
    mb.set_ylabel("DDR MB per token")
    mb.set_xscale("log", base=2)
    mb.set_xlabel("context (tokens)")
    for a in (ax, mb):
        a.axvline(crossover, color="grey", lw=0.8, ls="--")
    mb.annotate(f"KV > weights at {crossover:,}", (crossover, mb.get_ylim()[1] * 0.85), fontsize=7, ha="right")
    mb.legend(fontsize=7, loc="upper left")
    ax.set_title("Llama-3.2-1B decode on npu2 (int4 weights, bf16 KV), simulated", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--figure", default=None, help="also write a PNG figure here")
    figure_path = args.parse_args().figure
    t0 = time.perf_counter()
    rows = []
    print("| context | ms/token | tokens/s | weights MB | KV MB | attention share | bound by |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for context in (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131071):  # 131,072 positions at most
        s = point(context)
        rows.append((context, s))
        share = (s["by_class"].get("attention", 0) + s["by_class"].get("softmax", 0)) / s["seconds"]
        print(f"| {context:,} | {s['seconds'] * 1e3:.2f} | {s['tokens_per_s']:.1f} | {s['weight_bytes'] / 1e6:.0f} | "
              f"{s['kv_bytes'] / 1e6:.0f} | {100 * share:.0f} % | {s['bound_by']} |")
    lo, hi = 1024, 131071
    while hi - lo > 256:
        mid = (lo + hi) // 2
        s = point(mid)
        lo, hi = (mid, hi) if s["kv_bytes"] < s["weight_bytes"] else (lo, mid)
    print(f"\nKV traffic overtakes weight traffic between context {lo:,} and {hi:,} "
          f"(simulated; {time.perf_counter() - t0:.0f} s for this script)")
    if figure_path:
        figure(rows, (lo + hi) // 2, figure_path)
        print(f"figure: {figure_path}")


if __name__ == "__main__":
    main()
