"""How much a mixture-of-experts decode step varies with the experts its tokens happen to pick.

``Routing(mode="expected")`` gives one step time, the routing closest to the expectation. Real
tokens pick experts at random: a decode step of a few tokens reads the weights of whichever experts
they chose, so some steps read more experts than others. ``routing_spread`` simulates the step
under ``samples`` sampled routings (seeds ``routing.seed`` .. ``routing.seed + samples - 1``; each
routing simulated, never scaled) and reports quantiles of the step time and of the tokens/s.

Decode only: a prefill's hundreds of tokens route to nearly every expert, whichever they pick, so
its time hardly varies with the routing (and each sample would cost a whole prefill).
The same study gives the same output: sampled routings are seeded (numpy PCG64) and the simulation
is deterministic.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..arch import Arch, NPU2
from ..errors import Problems
from .run import simulate_llm
from .study import LlmStudy

QUANTILES = (0.5, 0.95, 0.99)
MAX_SAMPLES = 10_000  # each sample is a whole simulated decode step


def routing_spread(study: LlmStudy, samples: int, arch: Arch = NPU2) -> dict:
    """p50 / p95 / p99 of a mixture-of-experts decode step over ``samples`` sampled routings.

    Returns a JSON-ready dict: ``samples``, ``seeds`` (first and last), ``quantiles``,
    ``step_s`` (step-time quantiles, ascending), ``tokens_per_s`` (the slow tail: at quantile q, the
    rate a share q of the steps reach or beat, i.e. the 1 - q quantile of the per-step rates; so it
    descends), and ``seconds_per_sample`` (each sampled step's time, in seed order).
    """
    _check(study, samples)
    first = study.routing.seed
    seconds, rates = [], []
    for seed in range(first, first + samples):
        ds = simulate_llm(replace(study, routing=replace(study.routing, mode="sampled", seed=seed)), arch)
        seconds.append(float(ds.total_seconds))
        rates.append(float(ds.tokens_per_s))
    q = np.asarray(QUANTILES)
    return {"samples": samples, "seeds": [first, first + samples - 1], "quantiles": list(QUANTILES),
            "step_s": [float(x) for x in np.quantile(seconds, q)],
            "tokens_per_s": [float(x) for x in np.quantile(rates, 1 - q)],
            "seconds_per_sample": seconds}


def _check(study: LlmStudy, samples: int) -> None:
    """Refuse what has no spread to report: a dense model, a regime other than decode, a sample
    count out of range (every problem at once)."""
    p = Problems("routing spread")
    p.number("samples", samples, integer=True, lo=1, hi=MAX_SAMPLES)
    if isinstance(study, LlmStudy):
        model = study.model_config()
        p.check(model.experts is not None, "model", model.name,
                "must be a mixture-of-experts model (a dense model's step does not depend on routing)")
        p.check(study.regime == "decode", "regime", study.regime,
                "must be decode (a prefill's many tokens reach nearly every expert whatever they pick)")
        if p.number("routing.seed", study.routing.seed, integer=True, lo=0) and isinstance(samples, int):
            p.number("routing.seed + samples - 1", study.routing.seed + samples - 1, integer=True, hi=2**63 - 1)
    else:
        p.add("study", study, "an LlmStudy")
    p.raise_if_any()
