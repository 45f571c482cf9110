"""What the optimize memo adds to the four studies: the biggest levers left, the latency tails and
the run's fingerprint.

A lever is a change outside the plan (more DDR bandwidth, one more column, wider or narrower
weights, narrower KV) simulated on the plan of every regime: the memo states what each buys, never
a guess. The latency tails are ``fastsim.llm.latency``'s seeded variance model. The fingerprint
(version, hashes of the arch and of the model's configuration, seeds) says which run a memo's
numbers came from.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Callable

from ..arch import Arch
from ..errors import ConfigError, SimulationError
from ..llm import LlmStudy, simulate_llm
from ..version import __version__

DDR_FACTOR = 1.25  # the "+25 % DDR bandwidth" lever
LATENCY_SAMPLES = 1000  # sampled tokens and requests of the latency tails
LATENCY_SEED = 0
# Next stored width up and down from each weight dtype (bytes per weight 0.5 -> 1 -> 2 -> 4).
WIDER = {"int4": "int8", "mxfp4": "int8", "int8": "bf16", "fp8": "bf16", "bf16": "fp32", "fp16": "fp32"}
NARROWER = {"int8": "int4", "fp8": "mxfp4", "bf16": "int8", "fp16": "int8", "fp32": "bf16"}


@dataclass(frozen=True)
class Lever:
    name: str
    change: Callable[[LlmStudy, Arch], tuple[LlmStudy, Arch]]


def _weights(dtype: str) -> Callable:
    return lambda s, a: (replace(s, precision=replace(s.precision, weights=dtype)), a)


def arch_levers(arch: Arch) -> list[tuple[str, Arch]]:
    """The hardware what-ifs every memo simulates (LLM and CNN): (name, the changed arch)."""
    return [(f"DDR bandwidth +{100 * (DDR_FACTOR - 1):.0f} % ({arch.ddr_bytes_per_s * DDR_FACTOR / 1e9:.4g} GB/s)",
             arch.replace(ddr_bytes_per_s=arch.ddr_bytes_per_s * DDR_FACTOR)),
            (f"one more column ({arch.columns + 1})", arch.replace(columns=arch.columns + 1))]


def levers(base: LlmStudy, arch: Arch) -> list[Lever]:
    """The levers that apply to this model and arch (a wider or narrower weight dtype where one exists)."""
    out = [Lever(name, lambda s, a, changed=changed: (s, changed)) for name, changed in arch_levers(arch)]
    w = base.precision.weights
    if w in WIDER:
        out.append(Lever(f"wider weights ({w} -> {WIDER[w]})", _weights(WIDER[w])))
    if w in NARROWER:
        out.append(Lever(f"narrower weights ({w} -> {NARROWER[w]})", _weights(NARROWER[w])))
    if base.precision.kv != "int8":
        out.append(Lever(f"int8 KV cache ({base.precision.kv} -> int8)",
                         lambda s, a: (replace(s, precision=replace(s.precision, kv="int8")), a)))
    return out


def what_ifs(plans: dict[str, LlmStudy], base: LlmStudy, arch: Arch, run=None) -> list[dict]:
    """Each lever simulated on each regime's plan: {"lever", "regimes": {label: seconds or None,
    "errors": {label: why}}}. A plan the lever makes impossible (a pinned cut that no longer fits)
    is reported with its reason, not skipped. ``run`` runs the simulations (``Workers.run``: in
    worker processes at once); None: here, one after another."""
    names = [lever.name for lever in levers(base, arch)]
    calls = {f"{name} on {label}": (lever_on_plan, (i, study, base, arch))
             for i, name in enumerate(names) for label, study in plans.items()}
    done = run(calls, phase="levers") if run else {key: fn(*args) for key, (fn, args) in calls.items()}
    out = []
    for name in names:
        seconds, errors = {}, {}
        for label in plans:
            seconds[label], why = done[f"{name} on {label}"]
            if why is not None:
                errors[label] = why
        out.append({"lever": name, "seconds": seconds, "errors": errors})
    return out


def lever_on_plan(index: int, study: LlmStudy, base: LlmStudy, arch: Arch) -> tuple[float | None, str | None]:
    """The seconds of ``study`` with lever ``index`` of ``levers(base, arch)`` applied, or None and
    why it cannot run (a module function: a worker process rebuilds the lever, whose change is a
    closure)."""
    lever = levers(base, arch)[index]
    s, a = lever.change(study, arch)
    try:
        return float(simulate_llm(s, a).total_seconds), None
    except (ConfigError, SimulationError, ValueError) as e:
        return None, str(e).splitlines()[0]


def latency_tails(base: LlmStudy, context: int, prompt: int, arch: Arch) -> dict:
    """p50/p95/p99 of per-token latency (decode at ``context``) and time to first token (prefill of
    ``prompt``, queueing included) on the searched layout, under the default variance model."""
    from ..llm.latency import QUANTILES, VarianceModel, latency_distribution

    ds = latency_distribution(replace(base, context=context, prompt=prompt, cuts=None), arch,
                              samples=LATENCY_SAMPLES, seed=LATENCY_SEED)
    return {"context": context, "prompt": prompt, "seed": LATENCY_SEED, "samples": LATENCY_SAMPLES,
            "quantiles": list(QUANTILES), "token_latency_s": [float(x) for x in ds.token_latency_quantile_s.values],
            "ttft_s": [float(x) for x in ds.ttft_quantile_s.values], "variance_model": asdict(VarianceModel())}


def digest(value) -> str:
    """The first 16 hex digits of the SHA-256 of a value's canonical JSON."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(base: LlmStudy, arch: Arch, command: str) -> dict:
    """What reproduces the run: the command, fastsim's version, hashes of the arch and of the model's
    configuration, and every seed the run used."""
    return {"command": command, "version": __version__, "arch": arch.name, "arch_sha256": digest(repr(arch)),
            "model": base.model_config().name, "model_sha256": digest(asdict(base.model_config())),
            "seeds": {"routing": base.routing.seed, "latency": LATENCY_SEED},
            "search_budget": "exact" if base.search_budget is None else base.search_budget}
