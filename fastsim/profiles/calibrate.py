"""A profile into calibration (``fastsim calibrate --profile``): its GEMM rows become the
calibration's ``gemm`` measurements (shape, dtype and the tile and columns the measured design was
built with), fitted on the rows not named held out; the held-out rows are then predicted with the
fitted arch and their errors reported (``calibration_split``: the same split a measurements CSV
gets)."""
from __future__ import annotations

from ..arch import Arch
from ..calibration import Measurement
from ..calibration_split import HeldOutCalibration, calibrate_held_out
from ..errors import ConfigError
from .profile import Profile, Row, bad


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


def calibrate_profile(profile: Profile, arch: Arch, held_out: list[str], **options) -> HeldOutCalibration:
    """The profile's GEMM rows fitted on those not in ``held_out`` (row names), the held-out rows
    predicted with the fit (``calibration_split.calibrate_held_out``; ``options`` are its)."""
    return calibrate_held_out(profile_measurements(profile), arch, held_out, what="calibrate --profile", **options)
