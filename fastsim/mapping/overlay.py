"""Overlays: one placement per regime, as a plain object that prints and stores as TOML.

An overlay says, for one regime, how the model is laid out: the fusion mode, how many columns each
fused group kind, op class or op name runs on, and dataflow pins. ``fastsim run llm --overlay FILE``
reads a file with one table per regime::

    [prefill]
    fusion = "groups"
    columns = { ffn = 8, flash_attention = 8 }
    dataflow = { gemm = "os" }

    [decode]
    fusion = "chain"
    columns = { gemm = 8 }
    residency = "streamed"   # or "static": weights loaded once into on-chip memory

Switching overlays between regimes (``--regime generate``) costs ``Arch.reconfiguration_s`` when
every core keeps its programs (only routes and BDs change) and ``Arch.elf_reload_s`` when some core
needs a new program (its kernels differ).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from ..errors import ConfigError, Problems
from .fusion import MODES, valid_fusion

REGIMES = ("prefill", "decode")


@dataclass(frozen=True)
class Overlay:
    regime: str
    fusion: str = "auto"
    columns: dict = field(default_factory=dict)  # group kind, op class or op name -> columns
    dataflow: dict = field(default_factory=dict)  # op class or op name -> ws | is | os
    residency: str = "streamed"  # weights streamed from DDR or "static" in on-chip memory

    def validate(self) -> "Overlay":
        p = Problems(f"overlay [{self.regime}]")
        p.check(self.regime in REGIMES, "regime", self.regime, f"one of {REGIMES}")
        p.check(valid_fusion(self.fusion), "fusion", self.fusion, f"one of {MODES} or group kinds joined by +")
        for k, v in self.columns.items():
            p.check(isinstance(v, int) and not isinstance(v, bool) and v >= 1, f"columns.{k}", v, "an integer >= 1")
        for k, v in self.dataflow.items():
            p.check(v in ("ws", "is", "os"), f"dataflow.{k}", v, "ws, is or os")
        p.check(self.residency in ("streamed", "static"), "residency", self.residency, "streamed or static")
        p.raise_if_any()
        return self

    def table(self) -> dict:
        return {"fusion": self.fusion, "columns": dict(self.columns), "dataflow": dict(self.dataflow),
                "residency": self.residency}

    def __str__(self) -> str:
        return dumps({self.regime: self})


def dumps(overlays: dict[str, Overlay]) -> str:
    """TOML text with one table per regime."""
    return tomli_w.dumps({regime: o.table() for regime, o in overlays.items()})


def save(overlays: dict[str, Overlay], path: str | Path) -> None:
    Path(path).write_text(dumps(overlays))


def load(path: str | Path) -> dict[str, Overlay]:
    """Overlays by regime from a TOML file; every problem reported at once."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError([f"{path}: {e}"], "overlay file") from None
    p = Problems(f"overlay file {path}")
    for key in data:
        p.check(key in REGIMES, key, "table", f"tables must be named {' or '.join(REGIMES)}")
    p.check(bool(data), "tables", "none", f"at least one of [{'], ['.join(REGIMES)}]")
    p.raise_if_any()
    out = {}
    for regime, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError([f"[{regime}]: must be a table"], f"overlay file {path}")
        unknown = set(table) - {"fusion", "columns", "dataflow", "residency"}
        if unknown:
            raise ConfigError([f"[{regime}].{k}: unknown key (fusion, columns, dataflow, residency)"
                               for k in sorted(unknown)],
                              f"overlay file {path}")
        cols, flows = table.get("columns", {}), table.get("dataflow", {})
        if not isinstance(cols, dict) or not isinstance(flows, dict):
            raise ConfigError([f"[{regime}]: columns and dataflow must be tables"], f"overlay file {path}")
        out[regime] = Overlay(regime, table.get("fusion", "auto"), dict(cols), dict(flows),
                              table.get("residency", "streamed")).validate()
    return out


def switch_seconds(kernels_a: set, kernels_b: set, arch) -> tuple[float, str]:
    """Cost of switching between two overlays, and what changes."""
    if kernels_a == kernels_b:
        return arch.reconfiguration_s, "routes and BDs"
    return arch.elf_reload_s, "core programs (ELF reload)"
