"""Which experts a pass's tokens select: an input of the model, never a hidden assumption.

Each token picks ``per_token`` distinct experts. ``probabilities`` is each expert's chance of
being among a token's picks (they sum to ``per_token``): uniform by default, or measured (a
routing histogram: how often each expert was chosen, globally or per layer).

- ``expected``: the integer routing closest to the expectation. Decode with few tokens touches only
  some experts: as many as the expected number of distinct experts, sum of 1 - (1 - p_e)^tokens
  (rounded), the likeliest ones; the tokens' picks are shared among them in proportion to p_e
  (largest remainders), each getting at least one and at most every token.
- ``sampled``: every token's picks drawn with exactly ``probabilities`` as each expert's chance
  (numpy PCG64, seeded by ``seed`` and the layer), for spreads of per-step time (p95/p99): the
  same seed gives the same routing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigError, Problems, shown

MODES = ("expected", "sampled")


@dataclass(frozen=True)
class Routing:
    mode: str = "expected"
    seed: int = 0
    histogram: tuple[tuple[float, ...], ...] = ()  # one row (all layers) or one per layer; empty: uniform

    def validate(self, experts=None, layers: int = 0) -> "Routing":
        p = Problems("routing")
        p.check(self.mode in MODES, "mode", self.mode, f"one of {MODES}")
        p.number("seed", self.seed, integer=True, lo=0, hi=2**63 - 1)
        if self.histogram and experts is not None:
            p.check(len(self.histogram) in (1, layers), "histogram", f"{len(self.histogram)} rows",
                    f"one row, or one per layer ({layers})")
            for i, row in enumerate(self.histogram):
                p.check(len(row) == experts.count, f"histogram[{i}]", f"{len(row)} entries",
                        f"one per expert ({experts.count})")
                ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in row)
                p.check(ok and sum(1 for x in row if x > 0) >= experts.per_token, f"histogram[{i}]", shown(row),
                        f"counts >= 0, at least {experts.per_token} (experts per token) of them above 0")
        p.raise_if_any()
        return self


def probabilities(experts, routing: Routing, layer: int) -> np.ndarray:
    """Each expert's chance of being among one token's picks (sums to ``per_token``, each <= 1)."""
    if not routing.histogram:
        return np.full(experts.count, experts.per_token / experts.count)
    row = np.asarray(routing.histogram[layer if len(routing.histogram) > 1 else 0], dtype=float)
    p = row / row.sum() * experts.per_token
    for _ in range(experts.count):  # an expert cannot be picked twice by one token: cap at 1, spread the rest
        over = p > 1
        if not over.any():
            break
        spare = (p[over] - 1).sum()
        p[over] = 1
        free = p < 1
        p[free] += spare * p[free] / p[free].sum()
    return p


def expert_loads(experts, tokens: int, routing: Routing, layer: int) -> tuple[tuple[int, int], ...]:
    """(tokens routed to an expert, experts that receive that many), busiest first; experts that
    receive no token are not listed (their weights are not read)."""
    p = probabilities(experts, routing, layer)
    counts = _sampled(p, experts.per_token, tokens, routing.seed, layer) if routing.mode == "sampled" \
        else _expected(p, experts.per_token, tokens)
    values, how_many = np.unique(counts[counts > 0], return_counts=True)
    return tuple((int(v), int(n)) for v, n in sorted(zip(values, how_many), reverse=True))


def _expected(p: np.ndarray, k: int, tokens: int) -> np.ndarray:
    picks = tokens * k
    distinct = float((1 - (1 - p) ** tokens).sum())
    active = int(min(len(p), picks, max(k, round(distinct))))
    order = np.argsort(-p, kind="stable")[:active]
    share = p[order] / p[order].sum() * picks
    counts = np.clip(np.floor(share).astype(np.int64), 1, tokens)
    order_rem = np.argsort(-(share - np.floor(share)), kind="stable")
    i = 0
    while counts.sum() < picks:  # largest remainders first, never past every token
        j = order_rem[i % active]
        if counts[j] < tokens:
            counts[j] += 1
        i += 1
    while counts.sum() > picks:  # the floor of 1 overshot: take back from the busiest
        counts[np.argmax(counts)] -= 1
    out = np.zeros(len(p), dtype=np.int64)
    out[order] = counts
    return out


def _sampled(p: np.ndarray, k: int, tokens: int, seed: int, layer: int) -> np.ndarray:
    """Each token's k distinct picks, each expert included with probability exactly p_e
    (systematic sampling over a random order of the experts: k points u, u + 1, ... on the
    cumulative probabilities; p_e <= 1, so no expert is picked twice)."""
    rng = np.random.default_rng([seed, layer])
    order = np.argsort(rng.random((tokens, len(p))), axis=1)
    cum = np.cumsum(p[order], axis=1)
    cum[:, -1] = k  # exactly k points fall below the end
    u = rng.random((tokens, 1))
    picked = (np.ceil(cum - u) - np.ceil(cum - p[order] - u)) >= 1
    return np.bincount(order[picked], minlength=len(p)).astype(np.int64)


def read_histogram(path: str | Path, experts, layers: int) -> tuple[tuple[float, ...], ...]:
    """A routing histogram file: JSON, either a list of per-expert counts (all layers) or
    ``{"layers": [[counts of layer 0], ...]}``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError([f"{path}: not a readable JSON routing histogram ({e})"], "routing")
    if isinstance(data, dict):  # {"layers": ...} and nothing else: a typo is refused, never ignored
        p = Problems(f"routing histogram {path}")
        p.unknown_keys("", data, ("layers",))
        p.raise_if_any()
    rows = data.get("layers") if isinstance(data, dict) else [data]
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise ConfigError([f"{path}: a list of per-expert counts, or {{\"layers\": [[...], ...]}}"], "routing")
    histogram = tuple(tuple(r) for r in rows)
    Routing(histogram=histogram).validate(experts, layers)
    return histogram
