"""Exceptions that fastsim raises at its boundary.

Kernels never raise: they return integer status codes, and the Python layer turns those codes into
the exceptions below with the context a user needs (which channel, which lock, which cycle).
"""
from __future__ import annotations


class ConfigError(ValueError):
    """An invalid architecture, design or workload; lists every problem found, not just the first."""

    def __init__(self, problems: list[str], what: str = "configuration"):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid {what} ({len(self.problems)} problem(s)):\n{lines}")


class Problems:
    """Collects validation problems so that one error can report all of them."""

    def __init__(self, what: str = "configuration"):
        self.what = what
        self.items: list[str] = []

    def add(self, field: str, value, allowed: str) -> None:
        self.items.append(f"{field} = {value!r}: {allowed}")

    def check(self, ok: bool, field: str, value, allowed: str) -> bool:
        if not ok:
            self.add(field, value, allowed)
        return ok

    def raise_if_any(self) -> None:
        if self.items:
            raise ConfigError(self.items, self.what)


class SimulationError(RuntimeError):
    """A simulated design could not run to completion (deadlock, livelock, cycle limit)."""

    def __init__(self, message: str, design_index: int, cycle: int, stuck: list[str]):
        self.design_index = design_index
        self.cycle = cycle
        self.stuck = list(stuck)
        detail = "\n".join(f"  - {s}" for s in self.stuck)
        super().__init__(f"design {design_index}: {message} at cycle {cycle}\n{detail}")


class DeadlockError(SimulationError):
    """Work remains but no channel, core, lock or host step can ever change state again."""


class LivelockError(SimulationError):
    """Only free-running (cyclic) BD chains move; required work made no progress for too long."""


class CycleLimitError(SimulationError):
    """The design ran past the caller's max_cycles."""
