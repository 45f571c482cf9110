"""Every study, declared once (docs/architecture.md, "A study"): its function, its report writers,
its sweep kind and its step of ``fastsim optimize``, in one ``Study`` per study. The tables the
other places read are derived from ``STUDIES``: the report writers (``write_report``, ``markdown``),
the sweep kinds (``fastsim.sweeping``: their parameters, outputs and runners), the steps of
``fastsim optimize`` (their tasks, results, decisions, progress words, order and memo sections).
Its outputs with dims and units are ``fastsim.studies.variables.VARIABLES[name]`` (the Dataset is
built from them); the command is ``fastsim study NAME`` (``fastsim/cli/study.py``, tested against
this table). A study missing a required piece is refused when this module is imported, every
problem named at once.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import xarray as xr

from ..graph import OP_CLASSES
from . import memo, report
from .ablate import ablate, ablate_point
from .bandwidth import bandwidth
from .compression import compression
from .cuts import cuts, cuts_point
from .dataflow import STYLES, dataflow, dataflow_dataset, dataflow_point, dataflow_regime, pins, playbook
from .kv import kv
from .overlays import overlays, overlays_point
from .traffic import sheet_csv, traffic
from .variables import VARIABLES, Variable, sweep_output


@dataclass(frozen=True)
class SweepKind:
    """The study as a kind of ``fastsim sweep`` (``[study] kind = NAME``): one regime or request
    per point, its parameters those of ``LlmStudy`` (``fastsim.llm.parameters``).

    ``point(study, arch, **extra)`` answers one point, ``study`` the ``LlmStudy`` of its
    parameters, with a value per output; ``outputs`` are what a point stores beside its status and
    message (``Variable``: units and words, ``extra_dim`` beyond the axes); ``without`` are LLM
    parameters a point refuses (say ``noop``, which the study sets itself); ``extra`` are its
    parameters beyond the LLM ones, with their units, passed to ``point`` by name."""
    point: Callable
    outputs: dict
    without: frozenset = frozenset()
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """The study as a step of ``fastsim optimize`` (steps run in ``STUDIES``' order).

    ``tasks(base, regimes, mix, arch)`` are its independent calls, ``{task: (function, args)}``
    (a task ``NAME@REGIME`` is one regime of it), run in worker processes at once;
    ``result(done, base, regimes, arch)`` the Dataset of its tasks' answers (None: the one task
    ``NAME``'s); ``decisions(ds, label)`` what it decides for a regime, into plan.json; ``section(doc,
    ds)`` its section of the memo; ``what`` its progress words; ``order`` maps a task name prefix to
    its place, longest first (``parallel.LONGEST_FIRST``; the measured seconds are there)."""
    what: str
    tasks: Callable
    decisions: Callable
    section: Callable
    order: dict
    result: Callable | None = None


@dataclass(frozen=True)
class Study:
    """One study: ``function`` returns its Dataset (``variables.build(name, ...)``, ``attrs["study"]
    = name``); ``markdown(ds, figure)`` and ``figure(ds, path)`` write its report, ``extra_files(ds,
    out_dir)`` whatever else goes beside it; ``sweep`` and ``step`` where it is a sweep kind or a
    step of ``fastsim optimize``."""
    name: str
    function: Callable
    markdown: Callable
    figure: Callable
    extra_files: Callable | None = None
    sweep: SweepKind | None = None
    step: Step | None = None

    @property
    def variables(self) -> dict:
        """Its outputs with dims, units and description."""
        return VARIABLES[self.name]


def _problems(s) -> list[str]:
    """What one declaration lacks (its required pieces, each by name)."""
    if not isinstance(s, Study):
        return [f"{s!r}: not a Study"]
    where = f"study {s.name!r}"
    out = [] if s.name and isinstance(s.name, str) else [f"{where}: needs a name"]
    out += [f"{where}: {piece} must be callable" for piece in ("function", "markdown", "figure")
            if not callable(getattr(s, piece))]
    if not (s.extra_files is None or callable(s.extra_files)):
        out.append(f"{where}: extra_files must be callable or None")
    if s.name not in VARIABLES:
        out.append(f"{where}: its outputs are not declared in fastsim.studies.variables.VARIABLES")
    out += [] if s.sweep is None else _sweep_problems(where, s.sweep)
    out += [] if s.step is None else _step_problems(where, s.name, s.step)
    return out


def _sweep_problems(where: str, k: SweepKind) -> list[str]:
    out = [] if callable(k.point) else [f"{where}: sweep.point must be callable"]
    out += [] if k.outputs else [f"{where}: sweep.outputs: a sweep kind stores at least one output"]
    out += [f"{where}: sweep.outputs[{n!r}] must be a Variable named {n!r}" for n, v in k.outputs.items()
            if not (isinstance(v, Variable) and v.name == n)]
    out += [f"{where}: sweep.outputs[{n!r}]: every point stores it already" for n in k.outputs
            if n in ("status", "message")]
    return out + [f"{where}: sweep.extra[{n!r}] needs its units" for n, u in k.extra.items() if not isinstance(u, str)]


def _step_problems(where: str, name: str, t: Step) -> list[str]:
    out = [f"{where}: step.{piece} must be callable" for piece in ("tasks", "decisions", "section")
           if not callable(getattr(t, piece))]
    out += [] if t.result is None or callable(t.result) else [f"{where}: step.result must be callable or None"]
    out += [] if t.what else [f"{where}: step.what: its progress words"]
    return out + ([] if t.order and name in t.order else [f"{where}: step.order: its place, at least for {name!r}"])


def declare(*studies: Study) -> dict[str, Study]:
    """``{name: study}`` in the given order (the order of ``fastsim optimize``'s steps), or an
    ImportError naming every piece any study lacks, a name given twice, and outputs declared in
    ``VARIABLES`` for no study."""
    problems = [p for s in studies for p in _problems(s)]
    names = [s.name for s in studies if isinstance(s, Study)]
    problems += [f"study {n!r}: declared twice" for n in sorted({n for n in names if names.count(n) > 1})]
    problems += [f"VARIABLES[{n!r}]: declared for no study" for n in VARIABLES if n not in names]
    if problems:
        raise ImportError("studies declared without a required piece:\n  " + "\n  ".join(problems))
    return {s.name: s for s in studies}


def _one(name: str, function: Callable, mix: bool = False) -> Callable:
    """A step's tasks when it is one call over every regime (``mix``: over the request mix)."""
    def tasks(base, regimes, mix_, arch):
        return {name: (function, (base, mix_ if mix else regimes, arch))}
    return tasks


def _dataflow_tasks(base, regimes, mix, arch) -> dict:
    """The dataflow study's regimes share nothing: one task each."""
    return {f"dataflow@{r.label}": (dataflow_regime, (base, r, arch)) for r in regimes}


def _dataflow_result(done: dict, base, regimes, arch) -> xr.Dataset:
    return dataflow_dataset([done[f"dataflow@{r.label}"] for r in regimes], base, arch)


def _write_playbook(ds: xr.Dataset, out: Path) -> None:
    (out / "dataflow.json").write_text(json.dumps(playbook(ds), indent=1))


def _write_sheet(ds: xr.Dataset, out: Path) -> None:
    (out / "traffic.csv").write_text(sheet_csv(ds))


_s = sweep_output

STUDIES = declare(
    Study("ablate", ablate, report.ablate_markdown, report.ablate_figure,
          sweep=SweepKind(ablate_point, {  # one regime's ranking per point (its decode context or prefill prompt)
              "seconds": Variable("seconds", "s", "end-to-end time of the regime, nothing removed"),
              "data_movement_seconds": _s("ablate", "data_movement_seconds"),
              "delta_seconds": _s("ablate", "delta_seconds", extra_dim=("op_class", OP_CLASSES)),
              "share": _s("ablate", "share", extra_dim=("op_class", OP_CLASSES)),
              "top_class": _s("ablate", "top_class", dtype="int8", flags=OP_CLASSES)},
              without=frozenset({"noop"})),
          step=Step("ranking op classes by whole-run NOOP deltas", _one("ablate", ablate),
                    lambda ds, label: {"top_class": str(ds.top_class.sel(regime=label).values)}, memo.ablate_section,
                    {"ablate": 3})),
    Study("cuts", cuts, report.cuts_markdown, report.cuts_figure,
          sweep=SweepKind(cuts_point, {  # one regime's cut search per point
              "seconds": Variable("seconds", "s", "end-to-end time with the best cut set"),
              "dispatches": Variable("dispatches", "1", "dispatches of the best cut set", "int64"),
              "default_seconds": _s("cuts", "default_seconds"),
              "energy_j": Variable("energy_j", "J", "energy of the best cut set's ops")},
              without=frozenset({"noop", "cuts"})),
          step=Step("searching dispatch cuts (dynamic programming over layer boundaries)", _one("cuts", cuts),
                    lambda ds, label: {"cuts": str(ds.best_cuts.sel(regime=label).values)}, memo.cuts_section,
                    {"cuts": 5})),
    Study("overlays", overlays, report.overlays_markdown, report.overlays_figure,
          sweep=SweepKind(overlays_point, {  # one request kind (prompt, new_tokens, batch) per point
              "per_regime_seconds": Variable("per_regime_seconds", "s", "request time with each regime on its own "
                                             "overlay, switches included"),
              "single_seconds": Variable("single_seconds", "s", "request time with the best single overlay for both "
                                         "regimes"),
              "gain_seconds": Variable("gain_seconds", "s", "single_seconds - per_regime_seconds: the gain of "
                                       "per-regime overlays net of the switch cost"),
              "switch_seconds": Variable("switch_seconds", "s", "one overlay switch")},
              without=frozenset({"noop", "regime", "context", "prefill_context"}), extra={"new_tokens": "tokens"}),
          # the overlays study goes last: it finds the prefill runs it shares with dataflow on disk
          step=Step("placing each regime (request mix)", _one("overlays", overlays, mix=True),
                    lambda ds, label: {}, memo.overlays_section, {"overlays": 6})),
    Study("dataflow", dataflow, report.dataflow_markdown, report.dataflow_figure, _write_playbook,
          sweep=SweepKind(dataflow_point, {  # one regime per point
              "seconds": Variable("seconds", "s", "end-to-end time of the chosen point (fastest on the latency-energy "
                                  "front)"),
              "energy_j": Variable("energy_j", "J", "energy per inference of the chosen point"),
              "baseline_seconds": Variable("baseline_seconds", "s", "end-to-end time of the best single style (the "
                                           "baseline)"),
              "hybrid_seconds": Variable("hybrid_seconds", "s", "end-to-end time of the hybrid per-op choice"),
              "style_seconds": Variable("style_seconds", "s", "end-to-end time with every matmul-like op in one style",
                                        extra_dim=("style", STYLES))},
              without=frozenset({"noop"})),
          step=Step("choosing a style per op", _dataflow_tasks,
                    lambda ds, label: {"dataflow_point": str(ds.chosen.sel(regime=label).values),
                                       "dataflow_pins": pins(ds, label)},
                    memo.dataflow_section, {"dataflow@prefill": 0, "dataflow": 2}, _dataflow_result)),
    Study("kv", kv, report.kv_markdown, report.kv_figure),
    Study("traffic", traffic, report.traffic_markdown, report.traffic_figure, _write_sheet),
    Study("bandwidth", bandwidth, report.bandwidth_markdown, report.bandwidth_figure),
    Study("compression", compression, report.compression_markdown, report.compression_figure),
)

# the steps of ``fastsim optimize`` in order, and the sweep kinds that are studies
STEPS = tuple(name for name, s in STUDIES.items() if s.step is not None)
SECTIONS = {name: STUDIES[name].step.section for name in STEPS}
SWEEP_KINDS = {name: s.sweep for name, s in STUDIES.items() if s.sweep is not None}


def markdown(ds: xr.Dataset, figure: str | None = None) -> str:
    """The study's Markdown report of ``ds`` (its study from ``ds.attrs["study"]``)."""
    return STUDIES[ds.attrs["study"]].markdown(ds, figure)


def write_report(ds: xr.Dataset, out_dir: str | Path) -> Path:
    """``<study>.md`` and ``<study>.png`` in ``out_dir`` (created), and the study's extra files
    (the dataflow playbook as ``dataflow.json``, the traffic sheet's every layer as
    ``traffic.csv``); returns the Markdown path."""
    study = STUDIES[ds.attrs["study"]]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = out / f"{study.name}.png"
    study.figure(ds, png)
    md = out / f"{study.name}.md"
    md.write_text(study.markdown(ds, png.name))
    if study.extra_files is not None:
        study.extra_files(ds, out)
    return md
