"""Exceptions that fastsim raises at its boundary.

Kernels never raise: they return integer status codes, and the Python layer turns those codes into
the exceptions below with the context a user needs (which channel, which lock, which cycle).
"""
from __future__ import annotations

import math
import numbers


class ConfigError(ValueError):
    """An invalid architecture, design or workload; lists every problem found, not just the first."""

    def __init__(self, problems: list[str], what: str = "configuration", over_capacity: bool = False):
        self.problems = list(problems)
        # some tile's buffers exceed its memory: a caller that can shrink them (smaller token
        # blocks) retries on this, never on the message's words
        self.over_capacity = over_capacity
        self.what = what
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid {what} ({len(self.problems)} problem(s)):\n{lines}")

    def __reduce__(self):
        """Rebuilt from its fields in another process (a study run in a worker process raises it there)."""
        return type(self), (self.problems, self.what, self.over_capacity)


def shown(value, most: int = 80) -> str:
    """A value as an error message quotes it: its repr, cut to ``most`` characters (a huge integer
    by its size: Python refuses to print more than 4,300 digits)."""
    try:
        text = repr(value)
    except ValueError:
        return f"<integer of {value.bit_length()} bits>"
    return text if len(text) <= most else text[:most - 3] + "..."


class Problems:
    """Collects validation problems so that one error can report all of them."""

    def __init__(self, what: str = "configuration"):
        self.what = what
        self.items: list[str] = []
        self.over_capacity = False

    def add(self, field: str, value, allowed: str) -> None:
        self.items.append(f"{field} = {shown(value)}: {allowed}")

    def check(self, ok: bool, field: str, value, allowed: str) -> bool:
        if not ok:
            self.add(field, value, allowed)
        return ok

    def number(self, field: str, value, *, integer: bool = False, lo=None, hi=None, lo_open: bool = False,
               unit: str = "") -> bool:
        """Check that ``value`` is a finite number (an integer for ``integer``; never a bool) within
        ``lo``..``hi`` before anything compares or computes with it; say what is allowed if not."""
        span = ""
        if lo is not None or hi is not None:
            def text(x):
                return f"{x:g}" if isinstance(x, float) else str(x)
            span = f" in {'(' if lo_open else '['}{'-inf' if lo is None else text(lo)}, {'inf' if hi is None else text(hi)}]"
        allowed = f"must be {'an integer' if integer else 'a number'}{span}{' ' + unit if unit else ''}"
        kind = numbers.Integral if integer else numbers.Real
        ok = isinstance(value, kind) and not isinstance(value, bool)
        ok = ok and (isinstance(value, numbers.Integral) or math.isfinite(value))
        ok = ok and not (lo is not None and (value <= lo if lo_open else value < lo))
        ok = ok and not (hi is not None and value > hi)
        if not ok:
            self.add(field, value, allowed)
        return ok

    def unknown_keys(self, where: str, given, allowed) -> bool:
        """Refuse each key of the table ``given`` that is not in ``allowed``, by name (``where.key``,
        or the bare key for an empty ``where``: a file's top level), listing the allowed keys; a
        typo is never ignored. True when every key is known."""
        unknown = sorted((k for k in given if k not in allowed), key=str)
        for k in unknown:
            self.add(f"{where}.{k}" if where else k, given[k], f"unknown key; allowed: {', '.join(allowed)}")
        return not unknown

    def over(self, ok: bool, field: str, value, allowed: str) -> bool:
        """``check`` for a memory capacity: what does not fit marks the error ``over_capacity``."""
        self.over_capacity |= not ok
        return self.check(ok, field, value, allowed)

    def raise_if_any(self) -> None:
        if self.items:
            raise ConfigError(self.items, self.what, self.over_capacity)


class SimulationError(RuntimeError):
    """A simulated design could not run to completion (deadlock, livelock, cycle limit)."""

    def __init__(self, message: str, design_index: int, cycle: int, stuck: list[str]):
        self.design_index = design_index
        self.cycle = cycle
        self.stuck = list(stuck)
        self.message = message
        detail = "\n".join(f"  - {s}" for s in self.stuck)
        super().__init__(f"design {design_index}: {message} at cycle {cycle}\n{detail}")

    def __reduce__(self):
        """Rebuilt from its fields in another process, as ``ConfigError``."""
        return type(self), (self.message, self.design_index, self.cycle, self.stuck)


class DeadlockError(SimulationError):
    """Work remains but no channel, core, lock or host step can ever change state again."""


class LivelockError(SimulationError):
    """Only free-running (cyclic) BD chains move; required work made no progress for too long."""


class CycleLimitError(SimulationError):
    """The design ran past the caller's max_cycles."""
