"""Calibration with a held-out split: fit on the training rows, predict the rows named held out
with the fit, and, where rows name their source, refit without each source to predict its rows
(leave-one-source-out). A fit's own residuals cannot say whether it predicts; rows it never saw
can, and a source's rows against a fit that never saw that source say whether one harness or one
measurement campaign carries the fit. Ill-posed fits are refused: a parameter no training row
depends on, or one the rows leave undetermined (its 95 % interval wider than its value)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arch import Arch
from .calibration import Calibration, Check, Measurement, Predictor, calibrate
from .errors import ConfigError


@dataclass(frozen=True)
class SourceOut:
    """One source's rows predicted by a fit on every other source's training rows (``refused``:
    why no such fit exists, e.g. the other sources leave a parameter undetermined)."""

    source: str
    names: tuple[str, ...]
    errors: tuple[float, ...]
    refused: str = ""
    kept: tuple[str, ...] = ()  # parameters the whole fit sets and no other source's row reads: at their start


@dataclass(frozen=True)
class HeldOutCalibration:
    """The fit on the training rows, the held-out rows' predictions under it and, when the rows
    name two sources or more, each source left out."""

    cal: Calibration
    held_out: tuple[Measurement, ...]
    held_predicted: np.ndarray
    by_source: tuple[SourceOut, ...] = ()

    @property
    def held_errors(self) -> np.ndarray:
        """Predicted over measured, minus 1, of each held-out row."""
        measured = np.array([m.seconds for m in self.held_out])
        return self.held_predicted / measured - 1.0 if len(measured) else np.array([])

    def summary(self) -> dict:
        return {"train": [m.name for m in self.cal.measurements],
                "held_out": [{"name": m.name, "measured_s": m.seconds, "predicted_s": float(p), "error": float(e)}
                             for m, p, e in zip(self.held_out, self.held_predicted, self.held_errors)],
                "leave_one_source_out": [{"source": s.source, "rows": list(s.names), "errors": list(s.errors),
                                          "refused": s.refused, "kept_at_start": list(s.kept)}
                                         for s in self.by_source]}


def calibrate_held_out(ms: list[Measurement], arch: Arch, held_out: list[str], *, fit: list[str] | None = None,
                       leave_one_out: bool = True, allow_underdetermined: bool = False, what: str = "calibrate",
                       **options) -> HeldOutCalibration:
    """Fit ``fit`` (default: every parameter the training rows determine) to the rows not in
    ``held_out`` (row names), then predict the held-out rows; with two sources or more, each
    source's rows are also predicted by a fit without it. ``options``: ``calibrate``'s; ``what``
    names the command in errors."""
    names = [m.name for m in ms]
    problems = [f"--held-out {h!r}: no such row (rows: {', '.join(names)})" for h in held_out if h not in names]
    train = [m for m in ms if m.name not in held_out]
    if not train:
        problems.append("every row is held out: nothing is left to fit")
    if problems:
        raise ConfigError(problems, what)
    cal = _fit(train, arch, fit, what, leave_one_out=leave_one_out, allow_underdetermined=allow_underdetermined,
               **options)
    held = [m for m in ms if m.name in held_out]
    predicted = _predict(held, arch, cal.arch)
    sources = sorted({m.source for m in ms if m.source})
    by_source = tuple(_source_out(ms, train, s, arch, fit, cal.names, what, allow_underdetermined, **options)
                      for s in sources) if len(sources) > 1 else ()
    return HeldOutCalibration(cal, tuple(held), predicted, by_source)


def _fit(train: list[Measurement], arch: Arch, fit, what: str, allow_underdetermined: bool, **options) -> Calibration:
    if fit:
        read = set().union(*(Predictor(arch, train).reads(m) for m in train))
        blind = [f"fit {n!r}: no training row depends on it, so the rows cannot identify it" for n in fit
                 if n not in read]
        if blind:
            raise ConfigError(blind, what)
    cal = calibrate(train, arch, fit, allow_underdetermined=allow_underdetermined, **options)
    loose = [d.message for d in cal.diagnostics if d.check == Check.UNDETERMINED]
    if loose and not allow_underdetermined:
        raise ConfigError([f"{m} (the rows cannot identify it: fit fewer with --fit, or add rows)" for m in loose],
                          what)
    return cal


def _predict(rows: list[Measurement], start: Arch, fitted: Arch) -> np.ndarray:
    """``rows`` predicted under ``fitted`` (mappings searched under the starting arch, as the fit's)."""
    if not rows:
        return np.array([])
    pred = Predictor(start, rows)
    return np.array([pred.predict(m, fitted) for m in rows])


def _source_out(ms, train, source: str, arch: Arch, fit, whole: list[str], what: str, allow_underdetermined: bool,
                **options) -> SourceOut:
    """Source ``source``'s rows predicted by a fit on the other sources' training rows; ``whole``:
    the parameters the fit on every source sets (those this fit cannot set stay at their start)."""
    mine = [m for m in ms if m.source == source]
    names = tuple(m.name for m in mine)
    others = [m for m in train if m.source != source]
    if not others:
        return SourceOut(source, names, (), "no training row of another source")
    try:
        cal = _fit(others, arch, fit, what, leave_one_out=False, allow_underdetermined=allow_underdetermined,
                   **options)
    except ConfigError as e:
        return SourceOut(source, names, (), "; ".join(e.problems))
    errors = _predict(mine, arch, cal.arch) / np.array([m.seconds for m in mine]) - 1.0
    kept = tuple(n for n in whole if n not in cal.names)
    return SourceOut(source, names, tuple(float(e) for e in errors), kept=kept)
