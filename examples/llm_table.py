"""Every preset model (int4 weights, bf16 KV, npu2): a decode step at 4k context (batch 1 and 8)
and a 1k-token prefill, or a 512-token encode for encoders, with fusion, mappings and dispatch
cuts searched; weight bytes by tensor kind and the binding resource (docs/models.md's table).

    python examples/llm_table.py [MODEL ...]
"""
import sys
import time

from fastsim.llm import MODELS, LlmStudy, simulate_llm
from fastsim.llm.run import llm_summary


def run(model: str, regime: str, tokens: int, batch: int = 1) -> dict:
    shape = {"context": tokens} if regime == "decode" else {"prompt": tokens}
    return llm_summary(simulate_llm(LlmStudy(model=model, regime=regime, batch=batch, **shape)))


def mb(x: float) -> str:
    return f"{x / 1e6:,.0f}"


def main(models):
    t0 = time.perf_counter()
    print("| model | family | decode 4k ms (b1) | decode 4k ms (b8) | prefill 1k ms | bound (decode / prefill) | "
          "weight MB per step by kind (decode b1) | KV MB (b1) |")
    print("|---|---|---:|---:|---:|---|---|---:|")
    for name in models:
        m = MODELS[name]
        if m.encoder:
            e = run(name, "encode", 512)
            print(f"| {name} | {m.family} | - | - | {e['seconds'] * 1e3:,.2f} (encode 512) | - / {e['bound_by']} | "
                  + ", ".join(f"{k} {mb(v)}" for k, v in e["weight_bytes_by_kind"].items()) + " | 0 |")
            continue
        d1, d8, p = run(name, "decode", 4096), run(name, "decode", 4096, 8), run(name, "prefill", 1024)
        kinds = ", ".join(f"{k} {mb(v)}" for k, v in sorted(d1["weight_bytes_by_kind"].items(), key=lambda kv: -kv[1]))
        print(f"| {name} | {m.family} | {d1['seconds'] * 1e3:,.2f} | {d8['seconds'] * 1e3:,.2f} | "
              f"{p['seconds'] * 1e3:,.1f} | {d1['bound_by']} / {p['bound_by']} | {kinds} | {mb(d1['kv_bytes'])} |")
    print(f"\n({time.perf_counter() - t0:.0f} s for this script)")


if __name__ == "__main__":
    main(sys.argv[1:] or list(MODELS))
