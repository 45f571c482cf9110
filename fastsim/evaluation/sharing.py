"""Kernel sharing: the ops of a dispatch are judged together, not one by one.

Every distinct matmul kernel (tile shape, datapath) the ops of a dispatch run is linked into the
cores' program memory; when they do not fit, the cores reload their programs at every layer
(``mapping.dispatch``). Each op's own search cannot see that: chosen op by op, a dispatch whose
ops happen to agree on fewer kernels (a larger batch, say) can run faster than one with less
work. So the evaluation weighs, per dispatch that overflows, the per-op choices plus their reloads
against holding the ops to a set of kernels that fits, each op on the fastest kernel of the set
(its own search under that kernel). The candidate kernels are those the dispatch's ops chose for
themselves; the best set of them is found exactly (every set of the size that fits), or greedily
where there are too many sets to try (``EXACT_SETS``).
"""
from __future__ import annotations

from itertools import combinations
from math import comb

EXACT_SETS = 20_000  # most kernel sets tried one by one; beyond it, kernels are dropped greedily


def shared_kernels(cost: dict, fixed: frozenset, room: int) -> dict | None:
    """Each op's kernel under the best set of at most ``room`` kernels beside ``fixed``.

    Parameters
    ----------
    cost : {op: {kernel: float}}
        An op's time (any unit) on each kernel it can run (its own choice among them); ops absent
        here keep their kernels (they are counted in ``fixed``).
    fixed : frozenset
        Kernels linked anyway (of ops that cannot move): every op may run on them without taking room.
    room : int
        How many more kernels fit in program memory.

    Returns
    -------
    {op: kernel} of the fastest assignment whose kernels fit, or None when none fits (an op with
    no kernel of the set). Ties go to the earlier set in sorted order: deterministic.
    """
    if room < 0:
        return None
    pool = sorted({k for by_kernel in cost.values() for k in by_kernel} - fixed)
    size = min(room, len(pool))
    if comb(len(pool), size) <= EXACT_SETS:
        sets = (frozenset(s) for s in combinations(pool, size))
        best = min(((_cost(cost, fixed | s), i, s) for i, s in enumerate(sets)), default=None)
        chosen = best[2] if best else frozenset()
    else:
        chosen = _greedy(cost, fixed, frozenset(pool), size)
    return _assign(cost, fixed | chosen)


def _cost(cost: dict, allowed: frozenset) -> float:
    picks = _assign(cost, allowed)
    return float("inf") if picks is None else sum(cost[op][k] for op, k in picks.items())


def _assign(cost: dict, allowed: frozenset) -> dict | None:
    """Each op on its fastest allowed kernel (ties: the smaller kernel), or None if one has none."""
    out = {}
    for op, by_kernel in cost.items():
        options = [(s, k) for k, s in by_kernel.items() if k in allowed]
        if not options:
            return None
        out[op] = min(options)[1]
    return out


def _greedy(cost: dict, fixed: frozenset, pool: frozenset, size: int) -> frozenset:
    """Drop, one at a time, the kernel whose loss costs least, until ``size`` are left."""
    kept = set(pool)
    while len(kept) > size:
        _, drop = min((_cost(cost, fixed | frozenset(kept - {k})), k) for k in sorted(kept))
        kept.discard(drop)
    return frozenset(kept)
