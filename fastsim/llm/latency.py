"""Latency distributions: p50 / p95 / p99 of per-token latency and time to first token.

The simulator is deterministic; a deployed NPU is not. A seeded variance model adds what varies
between tokens and requests, on top of simulated times:

- **DDR contention**: background traffic (CPU, GPU, display) takes a share of DDR bandwidth that
  drifts over time: an AR(1) process from token to token, with a uniform marginal on
  ``[0, ddr_share_max]``. Its effect is simulated, not scaled: the step is simulated with DDR
  bandwidth reduced by ``levels`` shares across that range and interpolated linearly in between.
  The deployed layout runs at every share: fusion, cuts and op mappings are those searched at full
  bandwidth (a running design does not re-map itself when other traffic takes bandwidth).
- **Dispatch-overhead jitter**: every dispatch's host overhead is multiplied by a lognormal factor of
  mean 1 and coefficient of variation ``dispatch_jitter_cv``.
- **Bursty arrivals and queueing**: requests come in bursts (Poisson bursts, geometric burst sizes of
  mean ``burst_mean``) at a mean rate of ``load`` times what the NPU can serve; one NPU serves them
  first come, first served, each a prefill then ``new_tokens`` decode steps. Time to first token is
  the wait plus the prefill.

Not modelled: thermal or power throttling and clock changes (the NPU clocks down after ~10 s idle,
docs/calibration.md), OS scheduling of the host thread, other NPU tenants, and cache effects of the host. The
defaults of the model are assumptions, not measurements: set them from your own traces.
The same seed gives bit-identical samples (numpy PCG64).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace

import numpy as np
import xarray as xr

from ..arch import Arch
from ..errors import ConfigError, Problems
from .study import LlmStudy

QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class VarianceModel:
    """What varies from token to token and request to request (all assumptions; see the module)."""

    ddr_share_max: float = 0.3  # most of the DDR bandwidth background traffic takes
    ddr_share_correlation: float = 0.9  # AR(1) correlation of the share from one token to the next
    dispatch_jitter_cv: float = 0.15  # coefficient of variation of each dispatch's host overhead
    load: float = 0.5  # mean request arrival rate as a share of the requests per second served
    burst_mean: float = 4.0  # mean requests per burst
    new_tokens: int = 64  # decode steps per request
    levels: int = 3  # DDR shares simulated between 0 and ddr_share_max

    def validate(self) -> "VarianceModel":
        p = Problems("variance model")
        p.check(0 <= self.ddr_share_max < 1, "ddr_share_max", self.ddr_share_max, "in [0, 1)")
        p.check(0 <= self.ddr_share_correlation < 1, "ddr_share_correlation", self.ddr_share_correlation, "in [0, 1)")
        p.check(0 <= self.dispatch_jitter_cv <= 10, "dispatch_jitter_cv", self.dispatch_jitter_cv, "in [0, 10]")
        p.check(0 < self.load < 1, "load", self.load, "in (0, 1): at 1 or more the queue grows without bound")
        p.check(self.burst_mean >= 1, "burst_mean", self.burst_mean, "must be >= 1 request")
        p.check(1 <= self.new_tokens <= 1_000_000, "new_tokens", self.new_tokens, "in 1..1e6")
        p.check(2 <= self.levels <= 16, "levels", self.levels, "in 2..16")
        p.raise_if_any()
        return self


def _steps_at_shares(study: LlmStudy, arch: Arch, shares: np.ndarray,
                     layouts: dict | None = None) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Decode-step and prefill seconds at each DDR share taken, and their dispatch counts; each
    regime runs ``layouts[regime]`` where given (a planned study), else ``study`` in that regime."""
    from .run import pinned_layout, simulate_llm

    decode, prefill = [], []
    n_dec = n_pre = 1
    runs = {r: (layouts or {}).get(r) or replace(study, regime=r) for r in ("decode", "prefill")}
    at_full = {r: simulate_llm(s, arch) for r, s in runs.items()}
    # the layout each regime deploys: as searched at full bandwidth
    deployed = {r: pinned_layout(runs[r], run) for r, run in at_full.items()}
    for s in shares:
        slower = arch.replace(ddr_bytes_per_s=arch.ddr_bytes_per_s * (1 - float(s)))
        d, p = (at_full[r] if s == 0 else simulate_llm(deployed[r], slower, mapped_on=arch)
                for r in ("decode", "prefill"))
        decode.append(float(d.total_seconds))
        prefill.append(float(p.total_seconds))
        n_dec, n_pre = int(d.attrs["dispatches"]), int(p.attrs["dispatches"])
    return np.array(decode), np.array(prefill), n_dec, n_pre


def latency_distribution(study: LlmStudy, arch: Arch, samples: int = 1000, seed: int = 0,
                         model: VarianceModel = VarianceModel(), layouts: dict | None = None) -> xr.Dataset:
    """``samples`` per-token latencies (decode steps at ``study.context``) and ``samples`` requests'
    times to first token (prefill of ``study.prompt``), with their quantiles. ``layouts``: the
    study each regime deploys ({"decode": ..., "prefill": ...}, e.g. an optimize plan's, with its
    own context or prompt); a regime not there runs ``study``'s searched layout."""
    model.validate()
    if not isinstance(samples, (int, np.integer)) or not 1 <= samples <= 1_000_000:
        raise ConfigError([f"samples = {samples!r}: must be an integer in 1..1e6"], "latency")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError([f"seed = {seed!r}: must be an integer >= 0"], "latency")
    shares = np.linspace(0.0, model.ddr_share_max, model.levels)
    decode_s, prefill_s, n_dec, n_pre = _steps_at_shares(study, arch, shares, layouts)
    rng = np.random.Generator(np.random.PCG64(seed))

    def drifting_share(n: int) -> np.ndarray:
        """AR(1) in a standard normal, started stationary, mapped to a uniform share."""
        from scipy.signal import lfilter
        from scipy.special import ndtr

        rho = model.ddr_share_correlation
        b = np.sqrt(1 - rho * rho)
        eps = rng.standard_normal(n)
        u, _ = lfilter([b], [1.0, -rho], eps, zi=[eps[0] - b * eps[0]])
        return model.ddr_share_max * ndtr(u)

    def jitter(n: int, dispatches: int) -> np.ndarray:
        """Extra seconds of host overhead from jittered dispatches (mean 0)."""
        if model.dispatch_jitter_cv == 0:
            return np.zeros(n)
        sigma2 = np.log1p(model.dispatch_jitter_cv ** 2)
        f = rng.lognormal(-sigma2 / 2, np.sqrt(sigma2), size=(n, dispatches))
        return arch.dispatch_overhead_s * (f - 1).sum(axis=1)

    token = np.interp(drifting_share(samples), shares, decode_s) + jitter(samples, n_dec)
    # requests: share at arrival, service = prefill + new_tokens decode steps, FIFO queue
    share_r = drifting_share(samples)
    prefill_r = np.interp(share_r, shares, prefill_s) + jitter(samples, n_pre)
    service = prefill_r + model.new_tokens * np.interp(share_r, shares, decode_s)
    rate = model.load / float(np.mean(service))  # requests per second
    bursts = rng.geometric(1 / model.burst_mean, size=samples)
    burst_times = np.cumsum(rng.exponential(model.burst_mean / rate, size=samples))
    arrival = np.repeat(burst_times, bursts)[:samples]
    finish, ttft = 0.0, np.empty(samples)
    for i in range(samples):  # Lindley recursion
        start = max(arrival[i], finish)
        ttft[i] = start - arrival[i] + prefill_r[i]
        finish = start + service[i]
    q = np.array(QUANTILES)
    return xr.Dataset({
        "token_latency_s": ("sample", token, {"units": "s", "description": "per-token latency of sampled decode steps"}),
        "ttft_s": ("request", ttft, {"units": "s", "description": "time to first token: queueing wait plus prefill"}),
        "token_latency_quantile_s": ("quantile", np.quantile(token, q), {"units": "s",
                                     "description": "quantiles of per-token latency"}),
        "ttft_quantile_s": ("quantile", np.quantile(ttft, q), {"units": "s",
                            "description": "quantiles of time to first token"}),
        "prefill_quantile_s": ("quantile", np.quantile(prefill_r, q), {"units": "s",
                               "description": "quantiles of the requests' prefill alone (no queueing)"}),
        "decode_seconds_by_share": ("ddr_share", decode_s, {"units": "s",
                                    "description": "simulated decode step with this share of DDR bandwidth taken"}),
        "prefill_seconds_by_share": ("ddr_share", prefill_s, {"units": "s",
                                     "description": "simulated prefill with this share of DDR bandwidth taken"}),
    }, coords={"quantile": ("quantile", q, {"units": "1"}), "ddr_share": ("ddr_share", shares, {"units": "1"})},
        attrs={"seed": int(seed), "samples": int(samples), "variance_model": json.dumps(asdict(model)),
               "arrival_rate_per_s": rate, "arch": arch.name,
               "context": (layouts or {}).get("decode", study).context,
               "prompt": (layouts or {}).get("prefill", study).prompt})
