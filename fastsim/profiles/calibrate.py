"""A profile into calibration (``fastsim calibrate --profile``): its GEMM rows become the
calibration's ``gemm`` measurements (shape, dtype and the tile and columns the measured design was
built with), fitted on the rows not named held out; the held-out rows are then predicted with the
fitted arch and their errors reported, the check a fit cannot give itself. Ill-posed fits are
refused: more parameters than training rows that depend on them (``calibration.calibrate``), a
parameter no training row depends on, or one the rows leave undetermined (its 95 % interval wider
than its value)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arch import Arch
from ..calibration import Calibration, Check, Measurement, Predictor, calibrate
from ..errors import ConfigError
from .profile import Profile, Row, bad


@dataclass(frozen=True)
class ProfileCalibration:
    """The fit on the training rows and the held-out rows' predictions under it."""

    cal: Calibration
    held_out: tuple[Measurement, ...]
    held_predicted: np.ndarray

    @property
    def held_errors(self) -> np.ndarray:
        """Predicted over measured, minus 1, of each held-out row."""
        measured = np.array([m.seconds for m in self.held_out])
        return self.held_predicted / measured - 1.0 if len(measured) else np.array([])

    def summary(self) -> dict:
        return {"train": [m.name for m in self.cal.measurements],
                "held_out": [{"name": m.name, "measured_s": m.seconds, "predicted_s": float(p), "error": float(e)}
                             for m, p, e in zip(self.held_out, self.held_predicted, self.held_errors)]}


def measurement_of(r: Row) -> Measurement:
    """A GEMM row as the calibration's ``gemm`` measurement: per run seconds, host dispatch
    included (as the harness times it and as the calibration predicts a gemm)."""
    m, k, n, dtype = r.shape
    args = {"m": m, "k": k, "n": n, "dtype": dtype}
    pins = dict(r.pins)
    if "tile" in pins:
        args["tile"] = "x".join(str(x) for x in pins["tile"])
    if "cols" in pins:
        args["cols"] = pins["cols"]
    return Measurement(r.name, "gemm", args, r.seconds)


def profile_measurements(profile: Profile) -> list[Measurement]:
    """The profile's rows as measurements; kinds calibration does not model are refused by name."""
    for r in profile.rows:
        if r.kind != "gemm":
            raise bad(r.source, r.line, f"row {r.name!r}", r.kind, "calibration from a profile takes GEMM rows "
                      "(a sweep CSV, harness logs); fastsim compare shows the other kinds against the simulation")
    out = [measurement_of(r) for r in profile.rows]
    names = [m.name for m in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError([f"{profile.path}: {n} measured more than once (with other pins, or repeated): give one "
                           "row per shape to calibrate" for n in twice], "calibrate --profile")
    return out


def calibrate_profile(profile: Profile, arch: Arch, held_out: list[str], *, fit: list[str] | None = None,
                      leave_one_out: bool = True, allow_underdetermined: bool = False, **options) -> ProfileCalibration:
    """Fit ``fit`` (default: every parameter the training rows determine) to the rows not in
    ``held_out`` (row names), then predict the held-out rows. ``options``: ``calibrate``'s."""
    ms = profile_measurements(profile)
    names = [m.name for m in ms]
    problems = [f"--held-out {h!r}: no such row (rows: {', '.join(names)})" for h in held_out if h not in names]
    train = [m for m in ms if m.name not in held_out]
    if not train:
        problems.append("every row is held out: nothing is left to fit")
    if problems:
        raise ConfigError(problems, "calibrate --profile")
    if fit:
        read = set().union(*(Predictor(arch, train).reads(m) for m in train))
        blind = [f"fit {n!r}: no training row depends on it, so the profile cannot identify it" for n in fit
                 if n not in read]
        if blind:
            raise ConfigError(blind, "calibrate --profile")
    cal = calibrate(train, arch, fit, leave_one_out=leave_one_out, allow_underdetermined=allow_underdetermined,
                    **options)
    loose = [d.message for d in cal.diagnostics if d.check == Check.UNDETERMINED]
    if loose and not allow_underdetermined:
        raise ConfigError([f"{m} (the profile cannot identify it: fit fewer with --fit, or add rows)" for m in loose],
                          "calibrate --profile")
    held = [m for m in ms if m.name in held_out]
    pred = Predictor(arch, held) if held else None  # mappings searched under the starting arch, as the fit's
    predicted = np.array([pred.predict(m, cal.arch) for m in held]) if held else np.array([])
    return ProfileCalibration(cal, tuple(held), predicted)
