"""Regimes of a workload: decode at a context, prefill of a prompt, at a batch size.

Written ``decode:4096``, ``prefill:1024``, ``encode:512`` (encoder models) or ``decode:4096:8``
(batch 8) on the command line and in
study arguments; a regime's label (``decode@4096``, ``decode@4096x8``) names it in Datasets.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ConfigError

DEFAULT_REGIMES = ("decode:4096", "prefill:1024")
FORM = ("REGIME:TOKENS[:BATCH] with REGIME decode (TOKENS = context), prefill or encode (TOKENS = prompt; "
        "encode for encoder models), e.g. decode:4096")


@dataclass(frozen=True)
class Regime:
    regime: str  # "decode", "prefill" or "encode"
    tokens: int  # decode: tokens in the KV cache; prefill and encode: prompt tokens
    batch: int = 1

    @property
    def label(self) -> str:
        return f"{self.regime}@{self.tokens}" + (f"x{self.batch}" if self.batch > 1 else "")

    @classmethod
    def of(cls, study) -> "Regime":
        """The regime an LlmStudy runs in (``study``'s inverse)."""
        return cls(study.regime, study.context if study.regime == "decode" else study.prompt, study.batch)

    def study(self, base):
        """``base`` (an LlmStudy) in this regime."""
        shape = {"context": self.tokens} if self.regime == "decode" else {"prompt": self.tokens}
        return replace(base, regime=self.regime, batch=self.batch, **shape)


def parse_regime(text) -> Regime:
    if isinstance(text, Regime):
        return text
    parts = str(text).split(":")
    try:
        if len(parts) not in (2, 3) or parts[0] not in ("decode", "prefill", "encode"):
            raise ValueError
        numbers = [int(x) for x in parts[1:]]
        if min(numbers) < 1:
            raise ValueError
    except ValueError:
        raise ConfigError([f"regime = {text!r}: expected {FORM}"], "regime") from None
    return Regime(parts[0], *numbers)


def parse_regimes(texts) -> list[Regime]:
    """Regimes in the order given, duplicates dropped; the defaults when none are given."""
    out = []
    for t in texts or DEFAULT_REGIMES:
        r = parse_regime(t)
        if r not in out:
            out.append(r)
    return out


def binding(run, pick) -> str:
    """The resource with the highest utilization over most of the picked ops' time in ``run``."""
    time = {}
    for bound, s in zip(run.bound_by.values[pick], run.op_seconds.values[pick]):
        time[str(bound)] = time.get(str(bound), 0.0) + float(s)
    return max(time, key=time.get) if time else ""
