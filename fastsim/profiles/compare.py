"""A profile beside fastsim's simulation of the same thing: one ``Pair`` per simulated op, kernel,
core tile or GEMM that the profile measures, the rows that matched nothing, the simulated ops the
profile does not measure, and where the disagreement sits (``Comparison.summary``): by op class
and by mechanism (compute, DMA, dispatch, control, host)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .profile import bad

# a binding resource (fastsim.report.utilizations, the evaluation's bound_by) -> the mechanism it is
MECHANISM = {"compute": "compute", "ddr": "DMA", "shim_column": "DMA", "dma_stream": "DMA", "dispatch": "dispatch",
             "host": "host", "lock_wait": "control",
             "between_ops": "control"}
MATCHES = ("exact", "renamed", "split", "fused", "given", "residual", "whole")  # how a pair's rows were matched


@dataclass(frozen=True)
class Pair:
    """Measured and simulated seconds of one thing both sides name. ``match``: exact (same name),
    renamed (the profile's name with its tool's decorations removed: ``node_`` prefix, ``#N`` and
    ``_Duplicated`` suffixes), split (several profile rows onto one op, summed), fused (a row for
    an ONNX node fastsim runs inside another op, added to that op's), given (a --match the user
    gave), residual (the whole run minus every op row) or whole (the whole run). ``rows``: the
    profile rows it sums, as ``name@file:line``."""

    name: str
    measured_s: float
    simulated_s: float
    match: str
    op_class: str
    bound_by: str
    rows: tuple[str, ...] = ()
    note: str = ""

    @property
    def error(self) -> float:
        """Simulated over measured, minus 1: +0.25 is a simulation 25 % slow."""
        return self.simulated_s / self.measured_s - 1.0 if self.measured_s > 0 else float("inf")

    @property
    def mechanism(self) -> str:
        return MECHANISM.get(self.bound_by, self.bound_by)


@dataclass(frozen=True)
class Comparison:
    """What ``compare_onnx``, ``compare_design`` and ``compare_gemm`` return. ``clock_hz`` turned
    the profile's cycles into seconds (``clock_source`` says whose clock it is)."""

    subject: str
    profile: str
    fmt: str
    pairs: tuple[Pair, ...]
    clock_hz: float
    clock_source: str
    whole: Pair | None = None
    unmatched: tuple[str, ...] = ()  # profile rows no simulated op took, with why
    ambiguous: tuple[str, ...] = ()  # profile rows that could be several ops, with the candidates
    unmeasured: tuple[str, ...] = ()  # simulated ops the profile has no row for
    notes: tuple[str, ...] = field(default=())
    records: tuple[dict, ...] = ()  # GEMM: the simulated runs in the sweep CSV's columns (gemm_csv.write_gemm_csv)

    def table(self) -> list[dict]:
        """One record per pair, slowest measured first, then the whole run (if measured)."""
        pairs = sorted(self.pairs, key=lambda p: -p.measured_s) + ([self.whole] if self.whole else [])
        return [{"name": p.name, "measured_s": p.measured_s, "simulated_s": p.simulated_s, "error": p.error,
                 "op_class": p.op_class, "bound_by": p.bound_by, "mechanism": p.mechanism, "match": p.match,
                 "rows": list(p.rows), "note": p.note} for p in pairs]

    def summary(self) -> dict:
        """Measured, simulated and signed error (simulated - measured) seconds summed by op class and
        by mechanism, each group's share of the total absolute error, and the class and mechanism
        that carry most of it."""
        total = sum(abs(p.simulated_s - p.measured_s) for p in self.pairs)
        out = {}
        for key, of in (("by_class", lambda p: p.op_class), ("by_mechanism", lambda p: p.mechanism)):
            groups: dict[str, dict] = {}
            for p in self.pairs:
                g = groups.setdefault(of(p), {"measured_s": 0.0, "simulated_s": 0.0, "error_s": 0.0,
                                              "abs_error_s": 0.0, "pairs": 0})
                g["measured_s"] += p.measured_s
                g["simulated_s"] += p.simulated_s
                g["error_s"] += p.simulated_s - p.measured_s
                g["abs_error_s"] += abs(p.simulated_s - p.measured_s)
                g["pairs"] += 1
            for g in groups.values():
                g["share"] = g["abs_error_s"] / total if total else 0.0
            out[key] = dict(sorted(groups.items(), key=lambda kv: -kv[1]["abs_error_s"]))
        out["carried_by"] = {"class": next(iter(out["by_class"]), None),
                             "mechanism": next(iter(out["by_mechanism"]), None)}
        out["abs_error_s"] = total
        out["whole"] = None if self.whole is None else {
            "measured_s": self.whole.measured_s, "simulated_s": self.whole.simulated_s, "error": self.whole.error}
        out["counts"] = {"pairs": len(self.pairs), "unmatched": len(self.unmatched),
                         "ambiguous": len(self.ambiguous), "unmeasured": len(self.unmeasured)}
        return out

    def to_dict(self) -> dict:
        return {"subject": self.subject, "profile": self.profile, "format": self.fmt, "clock_hz": self.clock_hz,
                "clock_source": self.clock_source, "table": self.table(), "summary": self.summary(),
                "unmatched": list(self.unmatched), "ambiguous": list(self.ambiguous),
                "unmeasured": list(self.unmeasured), "notes": list(self.notes),
                "units": {"measured_s": "s", "simulated_s": "s", "error": "simulated/measured - 1",
                          "clock_hz": "Hz"}}


def refuse_kinds(profile, allowed: tuple[str, ...], what: str, hint: dict[str, str]) -> None:
    """Rows this comparison cannot place (an ONNX node's time against a design) refused by kind."""
    for r in profile.rows:
        if r.kind not in allowed:
            raise bad(r.source, r.line, f"row {r.name!r}", r.kind, f"a {r.kind} row; {what} compares "
                      f"{' and '.join(allowed)} rows ({hint.get(r.kind, 'use another input')})")


HINTS = {"op": "ONNX node times: fastsim compare PROFILE --onnx MODEL",
         "kernel": "kernel symbols: fastsim compare PROFILE --design FILE.mlir",
         "tile": "core tiles of a trace: fastsim compare PROFILE --design FILE.mlir",
         "gemm": "GEMM shapes: fastsim compare PROFILE --gemm"}
