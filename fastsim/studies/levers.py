"""What the optimize memo adds to the four studies: the biggest levers left, the latency tails and
the run's fingerprint.

A lever is a change the part allows (wider or narrower weights, narrower KV) simulated on the plan
of every regime: the memo states what each buys, never a guess. A change of hardware (more DDR
bandwidth, one more column) is not a lever of the part: it is simulated the same way but reported
apart, as a what-if on other hardware (``Lever.this_part``). The latency tails are
``fastsim.llm.latency``'s seeded variance model run on the plan of each regime. The fingerprint
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
    """A change simulated on the plan; ``this_part``: False for a change of hardware (another part
    or platform), which the memo reports apart from the levers."""

    name: str
    change: Callable[[LlmStudy, Arch], tuple[LlmStudy, Arch]]
    this_part: bool = True


def _weights(dtype: str) -> Callable:
    return lambda s, a: (replace(s, precision=replace(s.precision, weights=dtype)), a)


def other_hardware(arch: Arch) -> list[tuple[str, Arch]]:
    """The what-ifs on other hardware every memo simulates (LLM and CNN): (name, the changed arch).
    Not levers of ``arch``: a platform with faster DDR, a part with one more column."""
    return [(f"DDR bandwidth +{100 * (DDR_FACTOR - 1):.0f} % ({arch.ddr_bytes_per_s * DDR_FACTOR / 1e9:.4g} GB/s)",
             arch.replace(ddr_bytes_per_s=arch.ddr_bytes_per_s * DDR_FACTOR)),
            (f"one more column ({arch.columns + 1})", arch.replace(columns=arch.columns + 1))]


def levers(base: LlmStudy, arch: Arch) -> list[Lever]:
    """The levers that apply to this model and arch (a wider or narrower weight dtype where one exists,
    int8 KV), then the what-ifs on other hardware (``this_part`` False)."""
    out = []
    w = base.precision.weights
    if w in WIDER:
        out.append(Lever(f"wider weights ({w} -> {WIDER[w]})", _weights(WIDER[w])))
    if w in NARROWER:
        out.append(Lever(f"narrower weights ({w} -> {NARROWER[w]})", _weights(NARROWER[w])))
    if base.precision.kv != "int8":
        out.append(Lever(f"int8 KV cache ({base.precision.kv} -> int8)",
                         lambda s, a: (replace(s, precision=replace(s.precision, kv="int8")), a)))
    return out + [Lever(name, lambda s, a, changed=changed: (s, changed), this_part=False)
                  for name, changed in other_hardware(arch)]


def what_if_calls(plans: dict[str, LlmStudy], base: LlmStudy, arch: Arch) -> dict:
    """Each lever on each regime's plan, as calls for ``Workers.run`` (``what_ifs`` reads them)."""
    return {f"{lever.name} on {label}": (lever_on_plan, (i, study, base, arch))
            for i, lever in enumerate(levers(base, arch)) for label, study in plans.items()}


def what_ifs(plans: dict[str, LlmStudy], base: LlmStudy, arch: Arch, done: dict | None = None) -> list[dict]:
    """Each lever simulated on each regime's plan: {"lever", "this_part", "seconds": {label: seconds
    or None}, "errors": {label: why}}. A plan the lever makes impossible (a pinned cut that no longer
    fits) is reported with its reason, not skipped. ``done``: the results of ``what_if_calls`` run
    elsewhere (in worker processes at once); None: run here, one after another."""
    if done is None:
        done = {key: fn(*args) for key, (fn, args) in what_if_calls(plans, base, arch).items()}
    out = []
    for lever in levers(base, arch):
        seconds, errors = {}, {}
        for label in plans:
            seconds[label], why = done[f"{lever.name} on {label}"]
            if why is not None:
                errors[label] = why
        out.append({"lever": lever.name, "this_part": lever.this_part, "seconds": seconds, "errors": errors})
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


def latency_tails(base: LlmStudy, context: int, prompt: int, arch: Arch, layouts: dict | None = None) -> dict:
    """p50/p95/p99 of per-token latency (decode at ``context``), of time to first token (prefill of
    ``prompt``, queueing included) and of the prefill alone, under the default variance model.
    ``layouts``: the study each regime deploys ({"decode": ..., "prefill": ...}, the plan's); a
    regime missing there runs its searched layout (``base``'s)."""
    from ..llm.latency import QUANTILES, VarianceModel, latency_distribution

    ds = latency_distribution(replace(base, context=context, prompt=prompt, cuts=None), arch,
                              samples=LATENCY_SAMPLES, seed=LATENCY_SEED, layouts=layouts)
    return {"context": context, "prompt": prompt, "seed": LATENCY_SEED, "samples": LATENCY_SAMPLES,
            "layouts": sorted(layouts or ()), "quantiles": list(QUANTILES),
            "token_latency_s": [float(x) for x in ds.token_latency_quantile_s.values],
            "ttft_s": [float(x) for x in ds.ttft_quantile_s.values],
            "prefill_s": [float(x) for x in ds.prefill_quantile_s.values],
            "arrival_rate_per_s": float(ds.attrs["arrival_rate_per_s"]), "variance_model": asdict(VarianceModel())}


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
