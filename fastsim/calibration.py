"""Calibration: fit the parameters that no datasheet gives to a user's own measurements.

A user measures named workloads on their part (GEMMs, memcpys, an empty dispatch, a design switch,
an LLM step) and lists them in a CSV. ``kernel`` is the one-core micro-benchmark that kernel
efficiency comes from: ``calls`` microkernel calls on operands already in core memory (optionally
``datapath=``), dispatch overhead included like every other kind::

    name,workload,seconds
    mm64,kernel m=64 k=64 n=64 dtype=bf16 calls=10000,0.00161
    gemm512,gemm m=512 k=512 n=512 dtype=bf16 tile=64x64x64,0.000321
    memcpy,memcpy bytes=262144 size=1024 columns=8 direction=both,0.0000617
    empty,dispatch,0.000052
    switch,switch kind=elf,0.00267

``calibrate`` predicts each measurement with fastsim under candidate parameters and fits them by
bounded least squares on relative errors (``scipy.optimize.least_squares``): matmul kernel
efficiency per datapath (and its per-call and per-block cycles where ``kernel`` rows at tile shapes
with different block counts separate them), dispatch overhead, design-switch times, sustained DDR bandwidth
(and its cost per contiguous run where memcpy rows in two run lengths separate the two), BD setup
and lock costs. Integer cycle costs move in whole cycles (the engine counts whole cycles). It reports every value with a 95 % interval (linearized covariance), each
measurement's residual and its leave-one-out prediction error (continuous parameters refitted
without it, integers kept at the full fit's values), and writes an arch TOML that every command
accepts (``--arch calibrated.toml``). ``diagnose`` says what a good-looking fit can hide (``Check``):
as many parameters as measurements or more (more is refused unless asked for), a parameter at a
bound, outside the part's plausible range (``PLAUSIBLE``) or not determined, a measurement the fit
abandons or one faster than the part's peak.

Mappings are searched once, under the starting arch, and then held: a fit changes costs, not the
design a compiler would have built (a mapping that changes with every trial would make the error
surface jump).
"""
from __future__ import annotations

import csv
import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from .arch import NPU1, NPU2, PRESETS, Arch
from .errors import ConfigError

# parameter -> (lower, upper, integer); the per-datapath kernel parameters (KERNEL_TABLES) are
# added per datapath used
BOUNDS = {
    "dispatch_overhead_s": (0.0, 0.05, False),
    "chained_dispatch_s": (0.0, 0.05, False),
    "core_program_load_s": (0.0, 0.05, False),
    "runtime_instruction_cycles": (0, 10000, True),
    "elf_reload_s": (0.0, 0.5, False),
    "reconfiguration_s": (0.0, 0.05, False),
    "ddr_bytes_per_s": (1e8, 1e12, False),
    "ddr_run_overhead_s": (0.0, 1e-6, False),
    "bd_setup_cycles": (0, 256, True),
    "lock_acquire_cycles": (0, 64, True),
}
EFFICIENCY_BOUNDS = (0.02, 1.0, False)
# Per-datapath matmul microkernel tables -> bounds of their entries (Arch field comment: cycles =
# c_call + N_blk * c_blk + MACs / (rate x efficiency)); cycle costs move in whole cycles.
KERNEL_TABLES = {"kernel_efficiency": EFFICIENCY_BOUNDS, "kernel_call_cycles": (0, 20000, True),
                 "kernel_block_cycles": (0, 2000, True)}
STEP = 1e-2  # relative finite-difference step of continuous parameters
KINDS = ("kernel", "gemm", "memcpy", "dispatch", "switch", "llm")


# ---- what a fitted value may plausibly be ------------------------------------------------------------

@dataclass(frozen=True)
class Plausible:
    """The range a fitted parameter can take on the parts these presets model (NPU1 Phoenix, NPU2
    Strix family), and where it comes from. A fit outside it has most likely moved a cost to the
    wrong parameter, or fitted a wrong measurement."""

    low: float
    high: float
    unit: str
    source: str


# Published measurements are spread by SPREAD either way (assumption: a fitted value more than 5x
# outside every published measurement of the same quantity on these parts is more likely an artefact
# of the fit than a different part). The measurements are the presets' own, cited in fastsim/arch.py
# and docs/calibration.md. Per-datapath tables (KERNEL_TABLES) have one row for every datapath.
# bd_setup_cycles and lock_acquire_cycles have no row: AMD publishes no figure (their presets are
# assumptions), so only their BOUNDS apply.
SPREAD = 5.0
# The DDR a laptop part of these families can deliver: a 128-bit LPDDR5X interface at 8000 MT/s,
# 16 B x 8e9 = 128 GB/s, read and write together (assumption: the fastest memory AMD lists for
# Phoenix, Strix Point and Krackan parts; Strix Halo's 256-bit interface is outside it).
MEMORY_INTERFACE_BYTES_PER_S = 128e9
PLAUSIBLE = {
    "dispatch_overhead_s": Plausible(
        NPU2.dispatch_overhead_s / SPREAD, NPU1.dispatch_overhead_s * SPREAD, "s",
        "xrt empty-kernel dispatch, 52 us (Strix Halo/Linux, amd/IRON #55) to 159.5 us (Phoenix/Windows), x/ 5"),
    "chained_dispatch_s": Plausible(
        NPU2.chained_dispatch_s / SPREAD, NPU1.chained_dispatch_s * SPREAD, "s",
        "xrt-smi validate run-list latency per command, 8.8 us (Strix) to 27.7 us (Phoenix), x/ 5"),
    "core_program_load_s": Plausible(
        40e-6 / SPREAD, 110e-6 * SPREAD, "s", "loading one core's program on Phoenix, 40-110 us (jdominick05), x/ 5"),
    "runtime_instruction_cycles": Plausible(
        112 / SPREAD, 112 * SPREAD, "cycles",
        "the Phoenix command processor, about 112 cycles per runtime-sequence instruction (xdna-emu), x/ 5"),
    "reconfiguration_s": Plausible(
        79e-6 / SPREAD, 192e-6 * SPREAD, "s",
        "overlay switch on Strix, 79-82 us with control packets, 106-192 us without (iree-amd-aie #1187), x/ 5"),
    "elf_reload_s": Plausible(
        NPU2.elf_reload_s / SPREAD, NPU2.elf_reload_s * SPREAD, "s",
        "design switch with new core programs, 2.67 ms on Krackan (xdna-engine where-time-goes.md), x/ 5"),
    "ddr_bytes_per_s": Plausible(
        NPU2.ddr_bytes_per_s / SPREAD, MEMORY_INTERFACE_BYTES_PER_S, "bytes/s",
        "low: the mlir-aie memcpy, 66.6 GB/s both ways (PR #2559), / 5; high: the memory interface, "
        "128-bit LPDDR5X-8000 = 128 GB/s (assumption; Strix Halo's 256-bit bus is outside it)"),
    "ddr_run_overhead_s": Plausible(
        NPU2.ddr_run_overhead_s / SPREAD, NPU2.ddr_run_overhead_s * SPREAD, "s",
        "DDR time per contiguous run of a shim BD, 3.97 ns fitted to smolvla's connector tile_n sweep on "
        "Strix (bench/fit_ddr_runs.py), x/ 5"),
    # on top of the kernel model (docs/kernel_model.md), whose presets leave these tables empty
    "kernel_efficiency": Plausible(
        (8 / 9) / SPREAD, 1.0, "",
        "the int8 k-loop issues 8 MACs in 9 bundles (jdominick05, docs/kernel_model.md), / 5; at most 1.0, "
        "a MAC in every issue slot (Uni Jena bf16/bfp16 listings)"),
    "kernel_call_cycles": Plausible(
        0.0, 40 * SPREAD, "cycles",
        "extra cycles per call on top of the model's (4-8): 0 to the 40 of the Uni Jena Phoenix bf16 listing, x 5"),
    "kernel_block_cycles": Plausible(
        0.0, 8 * SPREAD, "cycles",
        "extra cycles per output block on top of the model's C moves: 0 to 8 (the mlir-aie section-4c trace), x 5"),
}
# A parameter within BOUND_RTOL of a bound, relative to the larger of the bound and its starting
# value (a bound of 0 has no scale of its own), is at that bound: scipy's trust region approaches an
# active bound from inside and stops short of it (0.99976, 0.9999999928 of an efficiency bound of 1).
BOUND_RTOL = 1e-3
# A measurement whose relative residual is beyond RESIDUAL_LIMIT is one the fit gave up on
# (assumption: micro-benchmarks the model describes fit within a few per cent; 25 % is a cost the
# model misses, or a wrong measurement). ``calibrate(residual_limit=)``, ``--residual-limit``.
RESIDUAL_LIMIT = 0.25


class Check(StrEnum):
    """What a diagnostic of a fit found (the ``check`` of its JSON)."""

    UNDERDETERMINED = "underdetermined"  # more fitted parameters than measurements (allowed by request)
    EXACTLY_DETERMINED = "exactly_determined"  # as many: every residual can be zero, nothing checks the fit
    AT_BOUND = "at_bound"  # a parameter at (within BOUND_RTOL of) one of its BOUNDS
    IMPLAUSIBLE = "implausible"  # a parameter outside its PLAUSIBLE range
    UNDETERMINED = "undetermined"  # a 95 % interval wider than the value
    ABANDONED = "abandoned"  # a measurement with |residual| beyond the residual limit
    FASTER_THAN_PEAK = "faster_than_peak"  # a measurement faster than the part's peak MAC rate allows


@dataclass(frozen=True)
class Diagnostic:
    """One thing a fit may hide. ``subject``: the parameter or measurement concerned ("fit" for the
    whole fit); ``value``: its fitted value, residual or measured seconds, or the number of
    parameters; ``limit``: the bound, range end, residual limit, peak time or number of measurements
    it was held to; ``message``: the sentence printed."""

    check: Check
    subject: str
    value: float
    limit: float
    message: str


@dataclass(frozen=True)
class Measurement:
    name: str
    kind: str
    args: dict
    seconds: float
    source: str = ""  # where it was measured (a harness, a campaign): leave-one-source-out groups by it


def parse_workload(text: str) -> tuple[str, dict]:
    """``"gemm m=512 k=512 n=512"`` -> ("gemm", {"m": 512, ...}); numbers become numbers."""
    words = text.split()
    if not words or words[0] not in KINDS:
        raise ValueError(f"workload {text!r}: must start with one of {', '.join(KINDS)}")
    args = {}
    for w in words[1:]:
        key, sep, value = w.partition("=")
        if not sep or not key:
            raise ValueError(f"workload {text!r}: {w!r} is not KEY=VALUE")
        try:
            args[key] = int(value)
        except ValueError:
            try:
                args[key] = float(value)
            except ValueError:
                args[key] = value
    return words[0], args


def read_measurements(path: str | Path) -> list[Measurement]:
    """The CSV (columns name, workload, seconds; optionally source), every row checked; all problems
    in one error."""
    problems, out = [], []
    try:
        rows = list(csv.DictReader(Path(path).read_text().splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ConfigError([f"cannot read {path}: {e}"], "measurements")
    if rows and not {"name", "workload", "seconds"} <= set(rows[0]):
        raise ConfigError([f"columns {sorted(rows[0])}: needs name, workload, seconds"], f"measurements {path}")
    unknown = sorted(set(rows[0]) - {"name", "workload", "seconds", "source"}) if rows else []
    if unknown:
        raise ConfigError([f"column {c!r}: not read by calibrate; allowed name, workload, seconds, source"
                           for c in unknown], f"measurements {path}")
    for i, row in enumerate(rows, start=2):
        try:
            kind, args = parse_workload(row["workload"] or "")
            seconds = float(row["seconds"])
            if not (seconds > 0 and math.isfinite(seconds)):
                raise ValueError(f"seconds = {row['seconds']!r}: must be a time > 0")
            out.append(Measurement(row["name"] or f"row{i}", kind, args, seconds, (row.get("source") or "").strip()))
        except (ValueError, TypeError) as e:
            problems.append(f"line {i}: {e}")
    if len(out) < 1 and not problems:
        problems.append("no measurements")
    if problems:
        raise ConfigError(problems, f"measurements {path}")
    return out


# ---- predicting one measurement ---------------------------------------------------------------------

class Predictor:
    """Predicts measurements under trial parameters; designs that do not depend on a parameter
    are not rebuilt for it (results cached on the values each measurement reads)."""

    def __init__(self, arch: Arch, measurements: list[Measurement]):
        self.arch = arch
        self.measurements = measurements
        self._cache: dict = {}
        self._mappings: dict = {}
        for m in measurements:  # every workload must build and run under the starting arch (cached)
            self.reads(m)
            self.predict(m, arch)

    def reads(self, m: Measurement) -> set[str]:
        """The parameters a measurement's prediction depends on."""
        if m.kind == "dispatch":
            return {"dispatch_overhead_s"}
        if m.kind == "switch":
            kind = m.args.get("kind", "elf")
            if kind not in ("elf", "routes"):
                raise ConfigError([f"{m.name}: switch kind = {kind!r}; elf (new core programs) or routes"],
                                  "measurements")
            return {"elf_reload_s" if kind == "elf" else "reconfiguration_s"}
        if m.kind == "kernel":
            return {"dispatch_overhead_s"} | _kernel_params(self._kernel(m)[3])
        common = {"dispatch_overhead_s", "ddr_bytes_per_s", "ddr_run_overhead_s", "bd_setup_cycles",
                  "lock_acquire_cycles"}
        if m.kind == "gemm":
            return common | _kernel_params(self._gemm(m)[2])
        if m.kind == "llm":
            return common | set().union(*map(_kernel_params, self.arch.macs_per_cycle)) | {"elf_reload_s"}
        return common

    def determined(self) -> set[str]:
        """The parameters fitted by default: every one some measurement reads, except a datapath's
        call and block cycles unless its ``kernel`` measurements separate them from its efficiency
        (the rows [calls x MACs, calls, calls x blocks] of its measurements have rank 3, e.g. three
        shapes with different block counts per MAC, and rank 4 with a column of ones when no
        dispatch measurement pins the overhead each of them includes)."""
        from .cost import kernel_blocks

        read = set().union(*(self.reads(m) for m in self.measurements))
        rows: dict[str, set] = {}
        for m in self.measurements:
            if m.kind == "kernel":
                mm, kk, nn, path, calls = self._kernel(m)
                r, s, t = self.arch.mmul_shapes.get(path, (1, 1, 1))
                padded = (-(-mm // r) * r) * (-(-kk // s) * s) * (-(-nn // t) * t)
                blocks = kernel_blocks(mm, nn, path, self.arch)
                # each kernel measurement also holds one dispatch: its overhead is a fourth unknown
                # unless a dispatch measurement pins it
                rows.setdefault(path, set()).add((calls * padded, calls, calls * blocks, 1))
        need = 3 if any(m.kind == "dispatch" for m in self.measurements) else 4
        separable = {p for p, shapes in rows.items()
                     if np.linalg.matrix_rank(np.array(sorted(shapes), float)[:, :need]) >= need}
        runs_apart = self._runs_separable()
        return {n for n in read if (not n.startswith(("kernel_call_cycles.", "kernel_block_cycles."))
                                    or n.split(".", 1)[1] in separable)
                and (n != "ddr_run_overhead_s" or runs_apart)}

    def _runs_separable(self) -> bool:
        """Whether the memcpy measurements tell the DDR cost per run from the DDR bandwidth: their
        rows [bytes, runs] have rank 2 (two copies in different run lengths). Other kinds read both
        too, but a GEMM's or a model's runs follow its mapping: alone they would trade one for the
        other."""
        rows = {memcpy_bytes_and_runs(m, self.arch) for m in self.measurements if m.kind == "memcpy"}
        return len(rows) >= 2 and np.linalg.matrix_rank(np.array(sorted(rows), float)) >= 2

    def _kernel(self, m: Measurement):
        """(m, k, n, datapath, calls) of a kernel micro-benchmark."""
        a = m.args
        try:
            mkn = tuple(int(a[x]) for x in "mkn")
            dtype, calls = str(a.get("dtype", "bf16")), int(a.get("calls", 1))
        except (KeyError, ValueError):
            raise ConfigError([f"{m.name}: kernel needs m, k, n (and optionally dtype, datapath, calls)"], "measurements")
        options = dict(self.arch.datapath_options(dtype))
        path = str(a.get("datapath") or max(options, key=lambda x: self.arch.macs_per_cycle[x], default=dtype))
        if path not in options or min(mkn) < 1 or calls < 1:
            raise ConfigError([f"{m.name}: kernel {mkn} {dtype} on datapath {path!r}: sizes and calls must be >= 1, "
                               f"datapath one of {sorted(options)}"], "measurements")
        return (*mkn, path, calls)

    def _gemm(self, m: Measurement):
        if m.name not in self._mappings:
            from .mapping.plan import structure
            from .workloads.gemm import Gemm, gemm_mapping

            a = dict(m.args)
            tile = a.pop("tile", None)
            if tile is not None:
                try:
                    a["tile_m"], a["tile_k"], a["tile_n"] = (int(x) for x in str(tile).split("x"))
                except ValueError:
                    raise ConfigError([f"{m.name}: tile = {tile!r}; expected MxKxN like 64x64x64"], "measurements")
            try:
                g = Gemm(**a)
            except TypeError as e:
                raise ConfigError([f"{m.name}: {e}"], "measurements")
            # the best-bounded candidate, as before the search became exact: any held mapping
            # serves a fit, and this one keeps the synthetic recovery checks' designs
            best = gemm_mapping(dataclasses.replace(g, budget=1), self.arch, top=1).best
            self._mappings[m.name] = (g, best, structure(g.matmul(), best, self.arch).macs_key)
        return self._mappings[m.name]

    def _cycles_or_seconds(self, m: Measurement, arch: Arch) -> float:
        """Simulated seconds of the work itself (no dispatch overhead)."""
        from .simulation import simulate

        if m.kind == "kernel":
            from .cost import matmul_cycles

            mm, kk, nn, path, calls = self._kernel(m)  # per call: c_call + N_blk * c_blk + MAC cycles
            return calls * matmul_cycles(mm, kk, nn, path, arch, arch.efficiency(path)) / arch.clock_hz
        if m.kind == "gemm":
            from .mapping import matmul_design

            g, mp, _ = self._gemm(m)
            return float(simulate(matmul_design(g.matmul(), mp, arch)).total_cycles[0]) / arch.clock_hz
        if m.kind == "memcpy":
            from .studies.bandwidth import memcpy_design

            cols, channels, direction, size, per = _memcpy(m, arch)
            design = memcpy_design(arch, {c: per for c in range(cols)}, direction, channels, size)
            return float(simulate(design).total_cycles[0]) / arch.clock_hz
        from .llm import LlmStudy, simulate_llm  # kind llm: the whole step, dispatches included

        try:
            study = LlmStudy(**m.args)
        except TypeError as e:
            raise ConfigError([f"{m.name}: {e}"], "measurements")
        return float(simulate_llm(study, arch).total_seconds)

    def predict(self, m: Measurement, arch: Arch) -> float:
        if m.kind == "dispatch":
            return arch.dispatch_overhead_s
        if m.kind == "switch":
            return arch.elf_reload_s if m.args.get("kind", "elf") == "elf" else arch.reconfiguration_s
        key = (m.name, tuple(_get(arch, p) for p in sorted(self.reads(m) - {"dispatch_overhead_s"})))
        if key not in self._cache:
            self._cache[key] = self._cycles_or_seconds(m, arch)
        return self._cache[key] + (0.0 if m.kind == "llm" else arch.dispatch_overhead_s)


def _memcpy(m: Measurement, arch: Arch) -> tuple[int, int, str, int, int]:
    """(columns, channels per column, direction, BD size, bytes per channel) of a memcpy measurement,
    checked: the copy ``studies.bandwidth.memcpy_design`` builds for it."""
    a = m.args
    cols, channels = int(a.get("columns", arch.columns)), int(a.get("channels", 1))
    total, size, direction = int(a.get("bytes", 1 << 20)), int(a.get("size", 4096)), str(a.get("direction", "read"))
    if not (1 <= cols <= arch.columns and total >= 4 and size >= 4 and 1 <= channels <= 2
            and direction in ("read", "write", "both")):
        raise ConfigError([f"{m.name}: memcpy needs columns in 1..{arch.columns}, bytes and size >= 4, "
                           "channels 1 or 2, direction read/write/both"], "measurements")
    return cols, channels, direction, size, -(-total // (cols * channels * 4)) * 4


def memcpy_bytes_and_runs(m: Measurement, arch: Arch) -> tuple[int, int]:
    """(bytes, contiguous DDR runs) of a memcpy measurement: each shim BD of its copy reads or writes
    one run of ``size`` bytes (in whole words, ``memcpy_design``)."""
    from .mapping.paths import whole_words

    cols, channels, direction, size, per = _memcpy(m, arch)
    streams = (2 if direction == "both" else 1) * cols * channels
    return streams * per, streams * -(-per // whole_words(min(size, per)))


def _kernel_params(datapath: str) -> set[str]:
    return {f"{table}.{datapath}" for table in KERNEL_TABLES}


def _get(arch: Arch, name: str):
    table, _, key = name.partition(".")
    if table == "kernel_efficiency":
        return arch.efficiency(key)
    if table == "kernel_call_cycles":
        return arch.call_cycles(key)
    if table == "kernel_block_cycles":
        return arch.block_cycles(key)
    return getattr(arch, name)


def with_params(arch: Arch, names: list[str], values) -> Arch:
    """``arch`` with the named parameters set (integers rounded; per-datapath tables merged)."""
    changes = {}
    tables = {t: dict(getattr(arch, t)) for t in KERNEL_TABLES}
    for name, v in zip(names, values):
        table, _, key = name.partition(".")
        if table in KERNEL_TABLES:
            tables[table][key] = int(round(v)) if KERNEL_TABLES[table][2] else float(min(1.0, v))
        else:
            changes[name] = int(round(v)) if BOUNDS[name][2] else float(v)
    return arch.replace(**changes, **tables)


# ---- the fit ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Calibration:
    arch: Arch
    names: list[str]
    values: np.ndarray
    low95: np.ndarray
    high95: np.ndarray
    start: np.ndarray
    measurements: list[Measurement]
    predicted: np.ndarray
    loo_predicted: np.ndarray
    unused: list[str]  # parameters no measurement depends on (left at their starting values)
    diagnostics: tuple[Diagnostic, ...] = ()  # what the fit may hide (``diagnose``)

    @property
    def warnings(self) -> list[str]:
        """The diagnostics' sentences, as printed."""
        return [d.message for d in self.diagnostics]

    @property
    def residuals(self) -> np.ndarray:
        measured = np.array([m.seconds for m in self.measurements])
        return (self.predicted - measured) / measured

    @property
    def loo_errors(self) -> np.ndarray:
        measured = np.array([m.seconds for m in self.measurements])
        return (self.loo_predicted - measured) / measured


def _bounds(name: str):
    table = name.partition(".")[0]
    return KERNEL_TABLES[table] if table in KERNEL_TABLES else BOUNDS[name]


def _fit(pred: Predictor, arch: Arch, names: list[str], rows: list[int], x0: np.ndarray, polish: bool = True):
    """Bounded least squares on relative errors over measurements ``rows`` (scipy's trust region
    with forward differences: 1 % steps for continuous parameters, coarse enough to cross the
    engine's whole-cycle quantization; one whole cycle for integer ones, which are rounded wherever
    the engine runs), then the integers polished: each one's neighbours tried with the continuous
    parameters refitted. ``polish=False`` keeps the integers of ``x0`` (leave-one-out refits)."""
    from scipy.optimize import least_squares

    ms = [pred.measurements[i] for i in rows]
    measured = np.array([m.seconds for m in ms])
    is_int = np.array([_bounds(n)[2] for n in names])
    lo = np.array([_bounds(n)[0] for n in names], float)
    hi = np.array([_bounds(n)[1] for n in names], float)
    scale = np.where(is_int, 1.0, np.maximum(np.abs(x0), 1e-12))

    def residual(z, fixed=None):
        x = z * scale
        if fixed is not None:
            x = np.where(is_int, fixed, x)
        a = with_params(arch, names, x)
        return (np.array([pred.predict(m, a) for m in ms]) - measured) / measured

    def jacobian(z, fixed=None):
        base = residual(z, fixed)
        out = np.zeros((len(ms), len(z)))
        for j in range(len(z)):
            if fixed is not None and is_int[j]:
                continue
            h = 1.0 if is_int[j] else STEP * max(1.0, abs(z[j]))
            step = h if z[j] + h <= hi[j] / scale[j] else -h
            zp = z.copy()
            zp[j] += step
            out[:, j] = (residual(zp, fixed) - base) / step
        return out

    def solve(z, fixed=None):
        free = ~is_int if fixed is not None else np.ones(len(z), bool)
        if not free.any():
            return z, float(np.sum(residual(z, fixed) ** 2))
        zl, zh = lo / scale, hi / scale
        r = least_squares(lambda f: residual(np.where(free, _put(z, free, f), z), fixed), np.clip(z, zl, zh)[free],
                          jac=lambda f: jacobian(np.where(free, _put(z, free, f), z), fixed)[:, free],
                          bounds=(zl[free], zh[free]), xtol=1e-10, ftol=1e-12, max_nfev=200)
        z = _put(z, free, r.x)
        return z, float(2 * r.cost)

    if not polish:
        return np.where(is_int, x0, solve(x0 / scale, x0)[0] * scale)
    z, _ = solve(x0 / scale)
    if not is_int.any():
        return z * scale
    ints = np.clip(np.round(z * scale), lo, hi)
    z, cost = solve(z, ints)
    for j in np.flatnonzero(is_int):  # whole-cycle neighbours of each integer
        for step in (-1, 1):
            trial = ints.copy()
            trial[j] = min(hi[j], max(lo[j], trial[j] + step))
            zt, c = solve(z, trial)
            if c < cost - 1e-15:
                ints, z, cost = trial, zt, c
    return np.where(is_int, ints, z * scale)


def _put(z, mask, values):
    out = np.array(z, float)
    out[mask] = values
    return out


def calibrate(measurements: list[Measurement], arch: Arch = PRESETS["npu2"], fit: list[str] | None = None,
              leave_one_out: bool = True, allow_underdetermined: bool = False,
              residual_limit: float = RESIDUAL_LIMIT) -> Calibration:
    """Fit the parameters ``fit`` (default: every parameter some measurement depends on) to the
    measurements, starting from ``arch``. More parameters than measurements that depend on them is
    refused unless ``allow_underdetermined`` (then flagged, as is an exactly determined fit);
    ``residual_limit``: the relative residual beyond which a measurement is reported abandoned."""
    pred = Predictor(arch, measurements)
    read = set().union(*(pred.reads(m) for m in measurements))
    known = set(BOUNDS) | set().union(*map(_kernel_params, arch.macs_per_cycle))
    names = sorted(pred.determined()) if fit is None else list(fit)
    bad = [n for n in names if n not in known]
    if bad:
        raise ConfigError([f"fit: {n!r} is not a fitted parameter; known: {sorted(known)}" for n in bad], "calibrate")
    if not (isinstance(residual_limit, (int, float)) and residual_limit > 0 and math.isfinite(residual_limit)):
        raise ConfigError([f"residual_limit = {residual_limit!r}: must be a relative error > 0 (0.25 = 25 %)"],
                          "calibrate")
    unused = [n for n in names if n not in read]
    names = [n for n in names if n in read]
    n_rows = _rows_reading(pred, names)
    if len(names) > n_rows and not allow_underdetermined:
        raise ConfigError([f"fit = {names}: {len(names)} parameters from {n_rows} measurements that depend on "
                           "them is underdetermined (any of many values fits); allowed: at most one parameter "
                           "per measurement. Add measurements, fit fewer (--fit NAME), or pass "
                           "allow_underdetermined=True (--allow-underdetermined) to fit anyway"], "calibrate")
    x0 = np.array([float(_get(arch, n)) for n in names])
    rows = list(range(len(measurements)))
    x = _fit(pred, arch, names, rows, x0)
    fitted = with_params(arch, names, x)
    predicted = np.array([pred.predict(m, fitted) for m in measurements])
    low, high = _intervals(pred, arch, names, x, measurements)
    loo = np.full(len(measurements), np.nan)
    if leave_one_out and len(measurements) > 1:
        for i in rows:
            # from the starting values, not the full fit (which has seen the left-out measurement)
            start = np.where([_bounds(n)[2] for n in names], x, x0)
            xi = _fit(pred, arch, names, [j for j in rows if j != i], start, polish=False)
            loo[i] = pred.predict(measurements[i], with_params(arch, names, xi))
    cal = Calibration(dataclasses.replace(fitted, name=f"{arch.name}-calibrated"), names, x, low, high, x0,
                      measurements, predicted, loo, unused)
    return dataclasses.replace(cal, diagnostics=tuple(diagnose(cal, pred, residual_limit)))


def _rows_reading(pred: Predictor, names: list[str]) -> int:
    """How many measurements depend on at least one of ``names``: the equations of the fit."""
    return sum(1 for m in pred.measurements if pred.reads(m) & set(names))


def diagnose(cal: Calibration, pred: Predictor, residual_limit: float = RESIDUAL_LIMIT) -> list[Diagnostic]:
    """What a good-looking fit can hide, one ``Diagnostic`` each: as many parameters as
    measurements or more (nothing checks the fit), a parameter at a bound (the measurements push it
    past what is allowed), outside its plausible range (``PLAUSIBLE``), or with a 95 % interval
    wider than its value (the measurements do not determine it); a measurement the fit abandons
    (residual beyond ``residual_limit``) or faster than the part's peak allows."""
    return (_count_diagnostics(cal, pred) + _parameter_diagnostics(cal, pred.arch)
            + _measurement_diagnostics(cal, pred, residual_limit))


def _count_diagnostics(cal: Calibration, pred: Predictor) -> list[Diagnostic]:
    p, n = len(cal.names), _rows_reading(pred, cal.names)
    if p > n:
        return [Diagnostic(Check.UNDERDETERMINED, "fit", p, n, f"{p} parameters from {n} measurements that depend "
                           "on them: underdetermined, other values fit as well; the fitted values are one of many")]
    if p == n and p:
        return [Diagnostic(Check.EXACTLY_DETERMINED, "fit", p, n, f"{p} parameters from {n} measurements that "
                           "depend on them: exactly determined, so every residual can be zero and nothing checks "
                           "the fit (no intervals); add measurements")]
    return []


def _parameter_diagnostics(cal: Calibration, arch: Arch) -> list[Diagnostic]:
    out = []
    for name, v, start, lo95, hi95 in zip(cal.names, cal.values, cal.start, cal.low95, cal.high95):
        lo, hi, _ = _bounds(name)
        for side, bound in (("lower", lo), ("upper", hi)):
            if abs(v - bound) <= BOUND_RTOL * max(abs(bound), abs(start)):
                out.append(Diagnostic(Check.AT_BOUND, name, v, bound, f"{name} = {v:.10g} is at its {side} bound "
                                      f"({bound:g}): the measurements push it past the allowed range; check them, "
                                      "or the model misses a cost they contain"))
        row = plausible(name)
        if row is not None and not row.low <= v <= row.high:
            edge, where = (row.low, "below") if v < row.low else (row.high, "beyond")
            unit = f" {row.unit}" if row.unit else ""
            out.append(Diagnostic(Check.IMPLAUSIBLE, name, v, edge, f"{name} = {v:.4g}{unit} is {where} what the "
                                  f"part can plausibly do ({row.low:.4g} .. {row.high:.4g}{unit}; {row.source}): the "
                                  "fit has likely moved a cost to the wrong parameter, or a measurement is wrong"))
        half = (hi95 - lo95) / 2
        if not np.isfinite(half) and len(cal.measurements) > len(cal.names):
            out.append(Diagnostic(Check.UNDETERMINED, name, v, math.inf, f"{name}: no 95 % interval: the "
                                  "measurements do not see it, or cannot tell it from another fitted parameter "
                                  "(its column of the fit's Jacobian is zero or linearly dependent); add "
                                  "measurements that depend on it differently"))
        if np.isfinite(half) and half > abs(v):
            out.append(Diagnostic(Check.UNDETERMINED, name, v, half, f"{name}: its 95 % interval (+-{half:.3g}) is "
                                  f"wider than its value ({v:.6g}): the measurements do not determine it; add "
                                  "measurements that depend on it"))
    return out


def plausible(name: str) -> Plausible | None:
    """The ``PLAUSIBLE`` row of a parameter (a per-datapath one by its table), None if it has none."""
    table = name.partition(".")[0]
    return PLAUSIBLE.get(table if table in KERNEL_TABLES else name)


def _measurement_diagnostics(cal: Calibration, pred: Predictor, residual_limit: float) -> list[Diagnostic]:
    out = []
    for m, p, r in zip(cal.measurements, cal.predicted, cal.residuals):
        if abs(r) > residual_limit:
            out.append(Diagnostic(Check.ABANDONED, m.name, float(r), residual_limit, f"{m.name}: measured "
                                  f"{m.seconds:.6g} s, fitted {p:.6g} s ({100 * r:+.1f} %, beyond +-"
                                  f"{100 * residual_limit:g} %): the fit gives this measurement up for the others; "
                                  "check it, or the model misses a cost it contains"))
    for m in cal.measurements:
        floor = peak_seconds(m, pred)
        if floor is not None and m.seconds < floor:
            out.append(Diagnostic(Check.FASTER_THAN_PEAK, m.name, m.seconds, floor, f"{m.name}: measured "
                                  f"{m.seconds:.6g} s, faster than {pred.arch.name}'s peak MAC rate allows "
                                  f"({floor:.6g} s): check its units, sizes and calls"))
    return out


def peak_seconds(m: Measurement, pred: Predictor) -> float | None:
    """The least time a ``kernel`` or ``gemm`` measurement can take at the part's peak MAC rate
    (one core for a kernel, every core for a GEMM); None for other kinds."""
    arch = pred.arch
    if m.kind == "kernel":
        mm, kk, nn, path, calls = pred._kernel(m)
        return calls * mm * kk * nn / (arch.macs_per_cycle[path] * arch.clock_hz)
    if m.kind == "gemm":
        g, _, _ = pred._gemm(m)
        return g.m * g.k * g.n / arch.peak_macs_per_s(g.dtype)
    return None


# Singular values of the column-normalized Jacobian below SINGULAR_RTOL of the largest span
# directions the measurements do not see; a parameter with a component of at least NULL_SHARE in one of
# them is not determined (no interval; ``Check.UNDETERMINED``).
SINGULAR_RTOL = 1e-6
NULL_SHARE = 0.1


def _intervals(pred: Predictor, arch: Arch, names, x, measurements):
    """95 % intervals from the linearized covariance s^2 (J^T J)^-1 of the relative residuals, over
    the parameters the measurements determine (NaN for the others: a zero or linearly dependent
    column of J, and for all when there are no spare measurements)."""
    n, p = len(measurements), len(names)
    nan = np.full(p, np.nan)
    if n <= p:
        return nan, nan
    measured = np.array([m.seconds for m in measurements])
    base = np.array([pred.predict(m, with_params(arch, names, x)) for m in measurements])
    jac = np.zeros((n, p))
    for j, name in enumerate(names):
        h = 1.0 if _bounds(name)[2] else max(abs(x[j]) * STEP, 1e-15)
        xp = x.copy()
        xp[j] += h
        jac[:, j] = (np.array([pred.predict(m, with_params(arch, names, xp)) for m in measurements]) - base) / (h * measured)
    resid = (base - measured) / measured
    s2 = float(resid @ resid) / (n - p)
    ok = _determined_columns(jac)
    half = np.full(p, np.nan)
    try:
        half[ok] = 1.96 * np.sqrt(np.clip(np.diag(np.linalg.inv(jac[:, ok].T @ jac[:, ok]) * s2), 0, None))
    except np.linalg.LinAlgError:
        return nan, nan
    return x - half, x + half


def _determined_columns(jac: np.ndarray) -> np.ndarray:
    """bool[p]: the columns of ``jac`` (float64[n, p]) outside its near-null space."""
    norms = np.linalg.norm(jac, axis=0)
    ok = norms > 0
    if ok.any():
        _, sv, vt = np.linalg.svd(jac[:, ok] / norms[ok], full_matrices=False)
        null = vt[sv < SINGULAR_RTOL * sv[0]]
        ok[np.flatnonzero(ok)[np.any(np.abs(null) >= NULL_SHARE, axis=0)]] = False
    return ok


def write_toml(cal: Calibration, path: str | Path) -> Path:
    """The whole fitted arch as TOML (every field, so it needs no base; ``--arch PATH`` anywhere),
    the fitted parameters and the fit's warnings listed in comments."""
    import tomli_w

    table = {}
    for f in dataclasses.fields(cal.arch):
        if f.name == "notes":
            continue
        v = getattr(cal.arch, f.name)
        table[f.name] = dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v
    fitted = ", ".join(f"{n} = {v:.6g}" for n, v in zip(cal.names, cal.values))
    path = Path(path)
    warned = "".join(f"# warning: {w}\n" for w in cal.warnings)
    path.write_text(f"# fitted by fastsim calibrate: {fitted}\n{warned}" + tomli_w.dumps({"arch": table}))
    return path


def report(cal: Calibration) -> str:
    """The fitted values with intervals, then each measurement's residual and leave-one-out error."""
    lines = [f"Calibrated {cal.arch.name}: {len(cal.names)} parameters from {len(cal.measurements)} measurements", "",
             f"{'parameter':<28}{'start':>14}{'fitted':>14}{'95 % interval':>30}"]
    for i, name in enumerate(cal.names):
        iv = ("-" if not np.isfinite(cal.low95[i]) else f"{cal.low95[i]:.5g} .. {cal.high95[i]:.5g}")
        lines.append(f"{name:<28}{cal.start[i]:>14.5g}{cal.values[i]:>14.5g}{iv:>30}")
    for name in cal.unused:
        lines.append(f"{name:<28}  (no measurement depends on it: unchanged)")
    lines += ["", f"{'measurement':<20}{'measured s':>14}{'predicted s':>14}{'residual':>10}{'leave-one-out':>15}"]
    for m, p, r, lo in zip(cal.measurements, cal.predicted, cal.residuals, cal.loo_errors):
        lo_text = "-" if not np.isfinite(lo) else f"{100 * lo:+.2f} %"
        lines.append(f"{m.name:<20}{m.seconds:>14.6g}{p:>14.6g}{100 * r:>+9.2f}%{lo_text:>15}")
    if cal.diagnostics:
        lines += ["", "warnings:"] + [f"  - {d.check}: {d.message}" for d in cal.diagnostics]
    return "\n".join(lines)


def summary(cal: Calibration) -> dict:
    """The fit as plain JSON types: parameters, measurements, diagnostics (each with its ``check``,
    ``subject``, ``value``, ``limit`` and ``message``) and their sentences as ``warnings``."""
    return {"parameters": {n: {"start": float(s), "fitted": float(v), "low95": float(lo), "high95": float(hi)}
                           for n, s, v, lo, hi in zip(cal.names, cal.start, cal.values, cal.low95, cal.high95)},
            "unused": list(cal.unused),
            "measurements": [{"name": m.name, "measured_s": m.seconds, "predicted_s": float(p), "residual": float(r),
                              "loo_error": float(e)}
                             for m, p, r, e in zip(cal.measurements, cal.predicted, cal.residuals, cal.loo_errors)],
            "diagnostics": [{"check": str(d.check), "subject": d.subject, "value": float(d.value),
                             "limit": float(d.limit), "message": d.message} for d in cal.diagnostics],
            "warnings": cal.warnings}
