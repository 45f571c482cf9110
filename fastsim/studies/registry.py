"""Every study, found where it is declared (docs/architecture.md, "A study"): each module of
``fastsim.studies`` that declares ``STUDY = Study(...)`` (``fastsim.studies.declaration``) at its
top level is one, so adding a study adds no line here. The tables the other places read are
derived from ``STUDIES``: the report writers (``write_report``, ``markdown``), the commands
``fastsim study NAME`` (``fastsim/cli/study.py``), the sweep kinds (``fastsim.sweeping``: their
parameters, outputs and runners), the steps of ``fastsim optimize`` (their tasks, results,
decisions, progress words, order and memo sections). A study missing a required piece, a name
given twice or two steps in one place are refused when this module is imported, every problem
named at once.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

import xarray as xr

from .declaration import Command, Option, Step, Study, SweepKind
from .variables import StudyVariable, Variable


def _problems(s) -> list[str]:
    """What one declaration lacks or gets wrong (its pieces, each by name)."""
    if not isinstance(s, Study):
        return [f"{s!r}: not a Study"]
    where = f"study {s.name!r}"
    out = [] if s.name and isinstance(s.name, str) else [f"{where}: needs a name"]
    out += [f"{where}: {piece} must be callable" for piece in ("function", "markdown", "figure")
            if not callable(getattr(s, piece))]
    if not (s.extra_files is None or callable(s.extra_files)):
        out.append(f"{where}: extra_files must be callable or None")
    if not (isinstance(s.outputs, dict) and s.outputs and all(
            isinstance(v, StudyVariable) and isinstance(v.dims, tuple) for v in s.outputs.values())):
        out.append(f"{where}: outputs: its Dataset's variables, each a StudyVariable (dims a tuple, units, "
                   "description)")
    for piece, kind, check in (("command", Command, _command_problems), ("sweep", SweepKind, _sweep_problems),
                               ("step", Step, _step_problems)):
        value = getattr(s, piece)
        if value is not None:
            out += check(where, s.name, value) if isinstance(value, kind) else [
                f"{where}: {piece} must be a {kind.__name__} or None"]
    return out


# the parameters every derived command passes itself (``fastsim.cli.study.derived_command``)
MODEL_OPTIONS = ("model", "models", "weights", "kv", "activations", "arch_name", "regimes", "as_json", "report_dir")


def _command_problems(where: str, name: str, c: Command) -> list[str]:
    out = [] if isinstance(c.help, str) and f"Example: fastsim study {name}" in c.help else [
        f"{where}: command.help: its question and an 'Example: fastsim study {name} ...'"]
    out += [] if c.models in ("one", "several") else [f"{where}: command.models: 'one' or 'several'"]
    out += [] if isinstance(c.regimes, bool) else [f"{where}: command.regimes: True or False"]
    bad = [o for o in c.options if not (isinstance(o, Option) and o.flag.startswith("--") and o.kind in ("int", "text")
                                        and (o.minimum is None or o.kind == "int"))]
    out += [f"{where}: command option {o!r}: a --flag, kind 'int' or 'text' (minimum: an int's)" for o in bad]
    taken = [o.name for o in c.options if isinstance(o, Option) and o.name in MODEL_OPTIONS]
    out += [f"{where}: command option {n!r}: a model option has that name" for n in taken]
    if not callable(c.run):
        return out + [f"{where}: command.run must be callable"]
    leading = (None, None, None) if c.regimes else (None, None)
    try:
        inspect.signature(c.run).bind(*leading, **{o.name: None for o in c.options if isinstance(o, Option)})
    except TypeError as e:
        out.append(f"{where}: command.run does not take (base{', regimes' if c.regimes else ''}, arch, "
                   f"{', '.join(o.name for o in c.options if isinstance(o, Option))}): {e}")
    return out


def _sweep_problems(where: str, name: str, k: SweepKind) -> list[str]:
    out = [] if callable(k.point) else [f"{where}: sweep.point must be callable"]
    if not (isinstance(k.outputs, dict) and k.outputs):
        return out + [f"{where}: sweep.outputs: a dict, at least one output"]
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
    out += [] if type(t.place) is int else [f"{where}: step.place: its place among the steps (an int)"]
    return out + ([] if t.order and name in t.order else [f"{where}: step.order: its place, at least for {name!r}"])


def declare(*studies: Study) -> dict[str, Study]:
    """``{name: study}``: the steps of ``fastsim optimize`` first, in their places, then the other
    studies by name; or an ImportError naming every piece any study lacks, a name given twice and
    two steps in one place."""
    problems = [p for s in studies for p in _problems(s)]
    names = [s.name for s in studies if isinstance(s, Study)]
    problems += [f"study {n!r}: declared twice" for n in sorted({n for n in names if names.count(n) > 1})]
    places = [s.step.place for s in studies if isinstance(s, Study) and isinstance(s.step, Step)]
    problems += [f"step place {p}: taken by two studies" for p in sorted({p for p in places if places.count(p) > 1})]
    if problems:
        raise ImportError("studies declared without a required piece:\n  " + "\n  ".join(problems))
    order = sorted(studies, key=lambda s: (s.step is None, s.step.place if s.step else 0, s.name))
    return {s.name: s for s in order}


def declares(source: str, name: str = "STUDY") -> bool:
    """Whether a module's source assigns ``name`` at its top level (``STUDY = ...``, annotated or
    not; a mention in a docstring or inside a function is not one). Only a source with the name at
    a line's start is parsed (parsing every module at each import took 86 ms)."""
    if re.search(rf"^{name}\b", source, re.MULTILINE) is None:
        return False
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def declared_studies(package: str = __package__) -> list[Study]:
    """The ``STUDY`` of every module of ``package`` (its subpackages are not searched) that
    assigns one at its top level. Found by reading the modules' source before importing any:
    importing every module would import those that read this registry (``optimize``,
    ``parallel``), a cycle."""
    found = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        spec = importlib.util.find_spec(f"{package}.{info.name}")
        if not info.ispkg and declares(spec.loader.get_source(spec.name) or ""):
            found.append(importlib.import_module(spec.name).STUDY)
    return found


STUDIES = declare(*declared_studies())

# the steps of ``fastsim optimize`` in order, the sweep kinds that are studies, their outputs and
# the studies with a derived command
STEPS = tuple(name for name, s in STUDIES.items() if s.step is not None)
SECTIONS = {name: STUDIES[name].step.section for name in STEPS}
SWEEP_KINDS = {name: s.sweep for name, s in STUDIES.items() if s.sweep is not None}
VARIABLES = {name: s.outputs for name, s in STUDIES.items()}
COMMANDS = {name: s.command for name, s in STUDIES.items() if s.command is not None}


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
