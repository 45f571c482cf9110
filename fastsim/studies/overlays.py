"""One placement per regime (method step 3, docs/studies.md): the best overlay for each regime, the best single
overlay for a request mix, and the gain of switching net of the switch cost.

Each regime's own overlay is its searched layout (``overlay_of`` a run with fusion, mappings and
residency searched). Every overlay is then run in every regime (``apply_overlay``: its fusion,
columns, dataflow and residency pinned); a layout that cannot run a regime (a decode chain does not
fit a prefill's activations) is marked infeasible there. A regime's best overlay is the fastest of
them all: usually its own, but the per-op search does not see every whole-run effect (program
reloads when a dispatch links many kernel shapes), so another regime's can win. A request of the mix is a prefill of its
prompt and ``new_tokens`` decode steps at the mean context (prompt + new_tokens / 2); with
per-regime overlays it pays two switches (into decode and back for the next request) at
``switch_seconds``. Weights are static (loaded once into on-chip memory) where they fit the
array, streamed otherwise: the study tries both per regime and says which and why.

The signal that one placement cannot serve every regime is an op class bound by a different
resource in different regimes (``binding_differs``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..errors import ConfigError
from ..graph import OP_CLASSES
from ..llm import LlmStudy, simulate_llm
from ..llm.assemble import overlay_of
from ..llm.run import apply_overlay
from ..mapping.overlay import switch_seconds
from . import memo, report
from .declaration import Command, Option, Step, Study, SweepKind, one_task
from .memo import duration
from .regimes import Regime, binding
from .variables import StudyVariable as Output, Variable, build

DEFAULT_MIX = ("1024:128",)
SWITCHES_PER_REQUEST = 2  # into the decode overlay and back to the prefill one for the next request


@dataclass(frozen=True)
class Request:
    """One kind of request in the mix: a prompt, tokens to generate, a batch, and its weight."""

    prompt: int = 1024
    new_tokens: int = 128
    batch: int = 1
    weight: float = 1.0

    @property
    def prefill(self) -> Regime:
        return Regime("prefill", self.prompt, self.batch)

    @property
    def decode(self) -> Regime:
        return Regime("decode", self.prompt + self.new_tokens // 2, self.batch)


def parse_request(text) -> Request:
    """``PROMPT:NEW_TOKENS[:BATCH[:WEIGHT]]``, e.g. ``1024:128`` or ``512:64:4:0.5``."""
    if isinstance(text, Request):
        return text
    parts = str(text).split(":")
    try:
        if not 2 <= len(parts) <= 4:
            raise ValueError
        r = Request(int(parts[0]), int(parts[1]), int(parts[2]) if len(parts) > 2 else 1,
                    float(parts[3]) if len(parts) > 3 else 1.0)
        if min(r.prompt, r.new_tokens, r.batch) < 1 or not r.weight > 0:
            raise ValueError
    except ValueError:
        raise ConfigError([f"request = {text!r}: expected PROMPT:NEW_TOKENS[:BATCH[:WEIGHT]] with positive "
                           "numbers, e.g. 1024:128"], "request mix") from None
    return r


def mix_regimes(mix=None) -> list[Regime]:
    """The regimes a request mix runs: each request's prefill and decode, each once, in order."""
    regimes = []
    for r in (parse_request(x) for x in (mix or DEFAULT_MIX)):
        for g in (r.prefill, r.decode):
            if g not in regimes:
                regimes.append(g)
    return regimes


def _own(study: LlmStudy, arch: Arch):
    """A regime's searched layout, residency chosen too: (Dataset, why that residency)."""
    streamed = simulate_llm(study, arch)
    model = study.model_config()
    weights = model.params * study.precision.weight_bytes
    on_chip = arch.on_chip_bytes
    if weights > on_chip:
        return streamed, f"streamed: {weights / 1e6:,.1f} MB of weights, {on_chip / 1e6:.1f} MB on chip"
    try:
        static = simulate_llm(replace(study, residency="static"), arch)
    except ConfigError as e:
        return streamed, "streamed: static weights leave no legal mapping (" + e.problems[0][:120] + ")"
    if float(static.total_seconds) < float(streamed.total_seconds):
        return static, f"static: faster ({duration(float(static.total_seconds))} vs streamed " \
                       f"{duration(float(streamed.total_seconds))})"
    return streamed, f"streamed: static weights fit but are not faster ({duration(float(static.total_seconds))})"


def _binding(ds: xr.Dataset) -> dict:
    """Per op class present, its binding resource (``regimes.binding``)."""
    return {c: binding(ds, ds.op_class.values == c) for c in OP_CLASSES if (ds.op_class.values == c).any()}


def overlays(base: LlmStudy = LlmStudy(), mix=None, arch: Arch = NPU2) -> xr.Dataset:
    """Best overlay per regime, best single overlay for the mix, and the net gain of switching.

    Parameters
    ----------
    base : LlmStudy
        Model, precision and pins.
    mix : list of Request or "PROMPT:NEW_TOKENS[:BATCH[:WEIGHT]]" strings (default: 1024:128).
    arch : Arch

    Returns
    -------
    xarray.Dataset: ``seconds`` over (regime, overlay) (each regime's own overlay run in every
    regime; NaN where it cannot run), per regime its ``best_overlay`` and its own overlay's
    ``fusion``/``residency`` and why, ``bound_by`` over (regime, op_class) and ``binding_differs``
    per class; over ``plan``
    (per_regime and each single overlay) the mix's ``mix_seconds``, and ``gain_seconds`` of
    per-regime overlays over the best single one, net of ``switch_seconds`` (attrs).
    """
    requests = [parse_request(r) for r in (mix or DEFAULT_MIX)]
    regimes = mix_regimes(requests)
    own, why, layouts = {}, {}, {}
    for g in regimes:
        own[g], why[g] = _own(g.study(base), arch)
        layouts[g] = overlay_of(own[g])
    seconds = np.full((len(regimes), len(regimes)), np.nan)
    why_not = np.full((len(regimes), len(regimes)), "", dtype=object)  # why a layout cannot run a regime
    for i, g in enumerate(regimes):
        for j, h in enumerate(regimes):
            if i == j:
                seconds[i, j] = float(own[g].total_seconds)
                continue
            try:
                seconds[i, j] = float(simulate_llm(apply_overlay(g.study(base), layouts[h]), arch).total_seconds)
            except ConfigError as e:  # this layout cannot run that regime: say why
                why_not[i, j] = e.problems[0] + (f" (and {len(e.problems) - 1} more)" if len(e.problems) > 1 else "")
    return _dataset(base, arch, requests, regimes, own, why, layouts, seconds, why_not.astype(str))


def _mix_seconds(requests, regimes, seconds, column_of, switch: float) -> float:
    """The mix's time with each regime run on the overlay ``column_of(regime index)``."""
    total = 0.0
    for r in requests:
        p, d = regimes.index(r.prefill), regimes.index(r.decode)
        cp, cd = column_of(p), column_of(d)
        total += r.weight * (seconds[p, cp] + r.new_tokens * seconds[d, cd] + (SWITCHES_PER_REQUEST * switch
                                                                                  if cp != cd else 0.0))
    return total


def _dataset(base, arch, requests, regimes, own, why, layouts, seconds, why_not) -> xr.Dataset:
    labels = [g.label for g in regimes]
    prefill = [g for g in regimes if g.regime == "prefill"]
    decode = [g for g in regimes if g.regime == "decode"]
    kernels = {g: set(own[g].attrs["kernels"]) for g in regimes}
    switch, change = switch_seconds(kernels[prefill[0]], kernels[decode[0]], arch) if prefill and decode else (0.0, "")
    plans = ["per_regime"] + [f"single:{label}" for label in labels]
    # each regime's best overlay among all of them (its own searched one, or another regime's when
    # that runs it faster: the per-op search does not see every whole-run effect)
    best_col = [int(np.nanargmin(seconds[i])) for i in range(len(regimes))]
    mix = [_mix_seconds(requests, regimes, seconds, lambda i: best_col[i], switch)]
    for j in range(len(regimes)):
        mix.append(_mix_seconds(requests, regimes, seconds, lambda i, j=j: j, switch))
    mix = np.array(mix)
    singles = mix[1:]
    best_single = int(np.nanargmin(singles)) if np.isfinite(singles).any() else -1
    bindings = {g: _binding(own[g]) for g in regimes}
    classes = [c for c in OP_CLASSES if any(c in b for b in bindings.values())]
    bound = np.array([[bindings[g].get(c, "") for c in classes] for g in regimes], dtype=str)
    differs = np.array([len({b for b in bound[:, k] if b}) > 1 for k in range(len(classes))])
    gain = float(singles[best_single] - mix[0]) if best_single >= 0 else float("nan")
    return build(OUTPUTS, {
            "seconds": seconds,
            "cannot_run": why_not,
            "best_overlay": np.array([labels[j] for j in best_col], dtype=str),
            "fusion": np.array([layouts[g].fusion for g in regimes], dtype=str),
            "residency": np.array([layouts[g].residency for g in regimes], dtype=str),
            "residency_reason": np.array([why[g] for g in regimes], dtype=str),
            "bound_by": bound,
            "binding_differs": differs,
            "mix_seconds": mix,
        },
        coords={"regime": labels, "overlay": labels, "op_class": classes, "plan": plans},
        attrs={"study": "overlays", "model": own[regimes[0]].attrs["model"], "arch": arch.name,
               "weights": base.precision.weights,
               "mix": "; ".join(f"{r.prompt}:{r.new_tokens}:{r.batch}:{r.weight:g}" for r in requests),
               "switch_seconds": switch, "switch_change": change, "switches_per_request": SWITCHES_PER_REQUEST,
               "best_single": plans[1 + best_single] if best_single >= 0 else "",
               "gain_seconds": gain,
               "overlays_toml": "\n".join(str(layouts[g]) for g in regimes)},
    )


def overlays_point(study: LlmStudy, arch: Arch, new_tokens=128) -> dict:
    """One sweep point (``[study] kind = "overlays"``): one request kind, the study's prompt and
    batch and ``new_tokens``."""
    ds = overlays(study, [Request(study.prompt, int(new_tokens), study.batch)], arch)
    single = float(np.nanmin(ds.mix_seconds.values[1:]))
    return {"per_regime_seconds": float(ds.mix_seconds.sel(plan="per_regime")), "single_seconds": single,
            "gain_seconds": float(ds.attrs["gain_seconds"]), "switch_seconds": float(ds.attrs["switch_seconds"])}


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "seconds": Output(("regime", "overlay"), "s",
        "end-to-end time of the regime (rows) laid out as the overlay of a regime (columns); NaN: "
        "that layout cannot run the regime"),
    "cannot_run": Output(("regime", "overlay"), "1",
        "why the overlay (columns) cannot run the regime (rows): the first problem the simulation "
        "reported; '' where it runs"),
    "best_overlay": Output(("regime",), "1",
        "the overlay (named by the regime it was searched for) that runs the regime fastest"),
    "fusion": Output(("regime",), "1", "the regime's own (searched) overlay: fusion"),
    "residency": Output(("regime",), "1", "the regime's own overlay: static or streamed weights"),
    "residency_reason": Output(("regime",), "1", "why that residency (on-chip capacity, time)"),
    "bound_by": Output(("regime", "op_class"), "1",
        "per class, the resource with the highest utilization over most of its time"),
    "binding_differs": Output(("op_class",), "1",
        "the class is bound by different resources in different regimes: a placement tuned for one "
        "regime may not suit another (whether one overlay still serves them all is mix_seconds')"),
    "mix_seconds": Output(("plan",), "s",
        "the request mix's time: per_regime (each regime on its best overlay, switches included "
        "where they differ) or one single overlay for every regime (NaN: it cannot run some "
        "regime)"),
}


def _command(base: LlmStudy, arch: Arch, mix: tuple) -> xr.Dataset:
    """``fastsim study overlays``: no --mix is the default mix."""
    return overlays(base, list(mix) or None, arch)


STUDY = Study(
    "overlays", overlays, OUTPUTS, report.overlays_markdown, report.overlays_figure,
    command=Command("""One placement per regime, or one for all? Finds each regime's best overlay (fusion, columns,
    dataflow, static or streamed weights), runs every overlay in every regime, and compares
    per-regime overlays (switch costs included) with the best single overlay on a request mix.
    Lists the op classes bound by different resources in different regimes. The mix sets the
    regimes (no --regime).

    Example: fastsim study overlays --mix 1024:128 --mix 4096:512:1:0.25 --report out/
    """, _command, regimes=False, options=(
        Option("--mix", "mix", "a request kind PROMPT:NEW_TOKENS[:BATCH[:WEIGHT]] (repeatable; default 1024:128); its "
               "regimes are prefill:PROMPT and decode at the mean context", multiple=True),)),
    sweep=SweepKind(overlays_point, {  # one request kind (prompt, new_tokens, batch) per point
        "per_regime_seconds": Variable("per_regime_seconds", "s", "request time with each regime on its own "
                                       "overlay, switches included"),
        "single_seconds": Variable("single_seconds", "s", "request time with the best single overlay for both "
                                   "regimes"),
        "gain_seconds": Variable("gain_seconds", "s", "single_seconds - per_regime_seconds: the gain of "
                                 "per-regime overlays net of the switch cost"),
        "switch_seconds": Variable("switch_seconds", "s", "one overlay switch")},
        without=frozenset({"noop", "regime", "context", "prefill_context"}), extra={"new_tokens": "tokens"}),
    # last in the longest-first order (order 6): it finds the prefill runs it shares with dataflow on disk
    step=Step(2, "placing each regime (request mix)", one_task("overlays", overlays, mix=True),
              lambda ds, label: {}, memo.overlays_section, {"overlays": 6}))
