"""Why fast-forward steps the K-split candidates of the exact 2048^3 search: the state at the
anchor core's boundaries, snapshot by snapshot (``kernels.fastforward``'s diagnostic log).

For the ``--top`` candidates that step most (or ``--only I``, an index of ``bench/ff_search.py``'s
list), prints
- per C tile (the anchor core's outer loop), the cycles stepped before the k-loop's period is
  found and how many cycles were jumped;
- *tile lag*: for each tile boundary, the fewest words of the normalized exact state in which it
  differs from any of the previous 32 tile boundaries (0 would be a tile-level period: a jump over
  whole tiles), and the fields that differ for one tile;
- *memory*: in how many tiles the k-loop's state, at a snapshot, equals a steady (periodic) state
  found in an earlier tile (what remembering the previous tile's period could jump earlier).

``--gemm "M K N DATAFLOW"`` instead: one bf16 GEMM on npu2 (64^3 tiles, 8 columns, 4 rows), its
exact repeats at the anchor's boundary and the bytes left that keep them from being periods.
``--prefill "MODEL PROMPT OP DATAFLOW LABEL"``: the same for a candidate of an LLM prefill's op
search (a PROMPT-token prompt) with its dataflow pinned, the first whose design name holds OP and LABEL (the heavy
designs of ``python bench/cold_runs.py optimize --per-design``).

    FASTSIM_CACHE=0 python bench/ff_drift.py [--top 2] [--only 19] [--gemm "1024 2048 4096 os"]
    FASTSIM_CACHE=0 python bench/ff_drift.py --prefill "llama-3.1-8b 1024 ffn_down ws ws/2d 16x16x32"
"""
from __future__ import annotations

import os
import sys

import numpy as np

os.environ.setdefault("FASTSIM_CACHE", "0")
sys.path.insert(0, os.path.dirname(__file__))


def logged(lw, kind: int, rows: int):
    """Run ``lw`` with the diagnostic log of ``kind``; returns (rows of the log, words per row)."""
    from fastsim.kernels import fastforward as F
    from fastsim.kernels import layout as L
    from fastsim.kernels.engine import simulate_batch
    from fastsim.lower import pack

    batch = pack([lw])
    args = list(batch.kernel_args())
    base = args[-1].shape[0]
    snap = F._offsets.python(len(lw.channels), len(lw.core_tiles), len(lw.lock_init), int(lw.prm[L.P_QDEPTH]))[4]
    width = F.LOG_ROW if kind == F.LOG_BOUNDARIES else snap
    ff = np.zeros(base + F.LOG_HEADER + rows * width, np.int64)
    ff[F.C_LOG] = base
    ff[base] = kind
    args[-1] = ff
    simulate_batch(*args)
    n = int(ff[base + 1])
    return ff[base + F.LOG_HEADER: base + F.LOG_HEADER + n * width].reshape(n, width)


def field_names(lw):
    """Names of the exact words of a snapshot (after its meta words), and how many there are."""
    from fastsim.kernels import fastforward as F
    from fastsim.kernels import layout as L

    q = int(lw.prm[L.P_QDEPTH])
    names = []
    s_names = {v: k for k, v in vars(L).items() if k.startswith("S_") and isinstance(v, int) and k != "S_NCOL"}
    k_names = {v: k for k, v in vars(L).items() if k.startswith("K_") and isinstance(v, int) and k != "K_NCOL"}
    for c in range(len(lw.channels)):
        names += [f"ch{c}.{s_names[f]}" for f in range(L.S_NCOL)] + [f"ch{c}.queue{x}" for x in range(2 * q)]
    for k in range(len(lw.core_tiles)):
        names += [f"core{k}.{k_names[f]}" for f in range(L.K_NCOL)] + [f"core{k}.loop{d}" for d in range(L.MAX_LOOP_DEPTH)]
    names += [f"lock{i}" for i in range(len(lw.lock_init))]
    exact = F._sizes.python(len(lw.channels), len(lw.core_tiles), len(lw.lock_init), q)[0]
    assert len(names) == exact
    return names, exact


def analyse(i: int, lw) -> None:
    from fastsim.kernels import fastforward as F
    from fastsim.kernels import layout as L

    start, end = lw.cores[0]
    ends = [p for p in range(start, end) if lw.prog[p, L.PROG_OP] == L.OP_END]
    inner, outer = ends[0], ends[-1]
    names, exact = field_names(lw)
    log = logged(lw, F.LOG_BOUNDARIES, 400_000)
    tiles = logged(lw, outer, 400)
    ks = logged(lw, inner, 6000)
    m = F.M_N
    bounds = tiles[:, F.M_T]
    print(f"candidate {i}: {lw.design.name}; {len(bounds)} C tiles of core 0, {len(ks)} k-loop snapshots")
    tile_of = np.searchsorted(bounds, ks[:, F.M_T])
    steady, mem_tiles, first_period, jumped = set(), 0, [], []
    for t in range(len(bounds)):
        idx = np.nonzero(tile_of == t)[0]
        keys = [ks[j, m:m + exact].tobytes() for j in idx]
        own = next((p for p, k in enumerate(keys) if k in keys[:p]), None)
        mem_tiles += any(k in steady for k in keys[:own] if own is not None) if own else 0
        if own is not None:
            steady.add(keys[own])
            first_period.append(int(ks[idx[own], F.M_T] - ks[idx[0], F.M_T]))
        lo = bounds[t - 1] if t else 0
        jumped.append(int(log[(log[:, 0] > lo) & (log[:, 0] <= bounds[t]), 2].sum()))
    period = int(np.median(np.diff(bounds)))
    print(f"  tile length (median) {period:,d} cycles; cycles into a tile before its k-loop period is found "
          f"(median) {int(np.median(first_period)):,d}; jumped per tile (median) {int(np.median(jumped)):,d}")
    lags = []
    for a in range(1, len(tiles)):
        lags.append(min((int((tiles[a - g, m:m + exact] != tiles[a, m:m + exact]).sum()), g)
                        for g in range(1, min(a, 32) + 1)))
    print(f"  tile lag: fewest differing words vs the previous 32 tile boundaries: min {min(x[0] for x in lags)}, "
          f"median {int(np.median([x[0] for x in lags]))}")
    a = min(range(8 if len(lags) > 16 else 0, len(lags)), key=lambda j: lags[j][0]) + 1  # past the fill
    g = lags[a - 1][1]
    diff = np.nonzero(tiles[a - g, m:m + exact] != tiles[a, m:m + exact])[0]
    print(f"  tile {a} vs tile {a - g}: " + ", ".join(f"{names[j]} {tiles[a - g, m + j]}->{tiles[a, m + j]}"
                                                     for j in diff))
    print(f"  memory: tiles whose k-loop state equals an earlier tile's steady state before their own period "
          f"is found: {mem_tiles} of {len(bounds)}")
    why_no_period(lw)


def why_no_period(lw) -> None:
    """At the anchor's most frequent boundary: the periods whose every exact word repeats, and the
    transfers started inside them whose bytes left differ (the jump's proof needs them equal)."""
    import collections

    from fastsim.kernels import fastforward as F
    from fastsim.kernels import layout as L

    log = logged(lw, F.LOG_BOUNDARIES, 400_000)
    keys, counts = np.unique(log[:, 1], return_counts=True)
    snaps = logged(lw, int(keys[counts.argmax()]), 3000)
    names, exact = field_names(lw)
    m, n_ch, w = F.M_N, len(lw.channels), L.S_NCOL + 2 * int(lw.prm[L.P_QDEPTH])
    periods, drift = collections.Counter(), collections.Counter()
    for k in range(3, len(snaps)):
        back = next((g for g in (1, 2, 3) if (snaps[k - g, m:m + exact] == snaps[k, m:m + exact]).all()), 0)
        if not back:
            continue
        a, b = snaps[k - back], snaps[k]
        periods[int(b[F.M_T] - a[F.M_T])] += 1
        la, lb = (x[m + exact:m + exact + F.LIN_CH * n_ch].reshape(n_ch, F.LIN_CH) for x in (a, b))
        for c in range(n_ch):
            inside = b[m + c * w + L.S_STATE] == L.CS_TRANSFER and lb[c, F.L_EV_START] >= a[F.M_T]
            if inside and la[c, F.L_REMAIN] != lb[c, F.L_REMAIN]:
                drift[f"{lw.channels[c]} {lb[c, F.L_REMAIN] - la[c, F.L_REMAIN]:+d} units"] += 1
    print(f"  {len(log)} snapshots, {int((log[:, 2] > 0).sum())} jumps, {int(log[:, 2].sum()):,d} cycles jumped; "
          f"exact repeats by period {periods.most_common(4)}; bytes left differing in them: {drift.most_common(4)}")


def prefill_candidate(model: str, prompt: int, op: str, dataflow: str, label: str):
    """The lowered tables of the first candidate of ``op``'s search in an LLM prefill (its
    dataflow pinned) whose design name holds ``op`` and ``label`` (None: none was built)."""
    import importlib

    from fastsim.llm.run import simulate_llm
    from fastsim.llm.study import LlmStudy

    search = importlib.import_module("fastsim.mapping.search")  # the package exports a function of its name
    build, found = search._build, []

    def catching(*args, **kwargs):
        out = build(*args, **kwargs)
        found.extend(lw for lw in out[1] if lw.design.name.startswith(op) and label in lw.design.name)
        return out

    search._build = catching
    try:
        simulate_llm(LlmStudy(model=model, regime="prefill", prompt=prompt, dataflow={op: dataflow}))
    finally:
        search._build = build
    return found[0] if found else None


def main(argv: list[str]) -> None:
    from ff_search import candidates, one

    if "--prefill" in argv:
        model, prompt, op, dataflow, label = argv[argv.index("--prefill") + 1].split(maxsplit=4)
        lw = prefill_candidate(model, int(prompt), op, dataflow, label)
        if lw is None:
            raise SystemExit(f"no candidate of {op} named with {label!r} was built")
        result = one(lw)
        print(f"{lw.design.name}: {result}")
        why_no_period(lw)
        return
    if "--gemm" in argv:  # M K N dataflow: one 8-column, 4-row 64^3-tile design on npu2
        import fastsim
        from fastsim.lower import lower
        from fastsim.mapping import Mapping, Matmul, matmul_design

        m, k, n, dataflow = argv[argv.index("--gemm") + 1].split()
        lw = lower(matmul_design(Matmul(int(m), int(k), int(n), "bf16"), Mapping(dataflow, "2d", (64, 64, 64), 8, 4),
                                 fastsim.NPU2))
        print(lw.design.name)
        why_no_period(lw)
        return
    found, seconds, seen = candidates("2048 2048 2048 bf16")
    if "--only" in argv:
        picks = [int(argv[argv.index("--only") + 1])]
    else:
        top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 2
        steps = [one(lw)["steps"] for lw in seen]
        picks = sorted(range(len(seen)), key=lambda j: -steps[j])[:top]
    for i in picks:
        analyse(i, seen[i])


if __name__ == "__main__":
    main(sys.argv[1:])
