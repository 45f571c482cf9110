"""What a study declares about itself (docs/architecture.md, "A study"): one ``STUDY = Study(...)``
at the top level of its own module in ``fastsim.studies``, found there by the registry
(``fastsim.studies.registry``). Its outputs with units, its report writers, its command, its sweep
kind and its step of ``fastsim optimize`` sit beside its function, so a new study is its module,
its test and its page.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


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
    """The study as a step of ``fastsim optimize``.

    ``place`` is its place among the steps (0 first: the memo's sections and plan.json follow it);
    ``tasks(base, regimes, mix, arch)`` are its independent calls, ``{task: (function, args)}``
    (a task ``NAME@REGIME`` is one regime of it), run in worker processes at once;
    ``result(done, base, regimes, arch)`` the Dataset of its tasks' answers (None: the one task
    ``NAME``'s); ``decisions(ds, label)`` what it decides for a regime, into plan.json; ``section(doc,
    ds)`` its section of the memo; ``what`` its progress words; ``order`` maps a task name prefix to
    its place, longest first (``parallel.LONGEST_FIRST``; the measured seconds are there)."""
    place: int
    what: str
    tasks: Callable
    decisions: Callable
    section: Callable
    order: dict
    result: Callable | None = None


@dataclass(frozen=True)
class Option:
    """One option of a study's command beyond the model's (``--flag``, passed to ``Command.run`` as
    ``name``): ``kind`` "int" or "text"; ``minimum`` an int's least value; ``multiple``
    repeatable (a tuple, empty when not given)."""
    flag: str
    name: str
    help: str
    kind: str = "text"
    minimum: int | None = None
    default: object = None
    multiple: bool = False


@dataclass(frozen=True)
class Command:
    """The study's ``fastsim study NAME``, derived by the CLI: the model's options (``models``
    "one" or "several": a repeatable ``--model``), ``--regime`` where ``regimes``, ``--arch``,
    ``--json``, ``--report`` and ``options``. ``run(base, regimes, arch, **options)`` returns its
    Dataset (``base`` an ``LlmStudy``, a list of them for "several"; no ``regimes`` argument
    without them). ``help`` is what ``--help`` prints: the question, how it is answered, an
    example. A command that needs more (another input than a model, files it writes) is written by
    hand in ``fastsim/cli/study.py`` and its study declares none."""
    help: str
    run: Callable
    models: str = "one"
    regimes: bool = True
    options: tuple[Option, ...] = ()


@dataclass(frozen=True)
class Study:
    """One study: ``function`` returns its Dataset (``variables.build(outputs, ...)``,
    ``attrs["study"] = name``); ``outputs`` its variables with dims, units and description
    (``StudyVariable``); ``markdown(ds, figure)`` and ``figure(ds, path)`` write its report,
    ``extra_files(ds, out_dir)`` whatever else goes beside it; ``command`` its derived CLI command;
    ``sweep`` and ``step`` where it is a sweep kind or a step of ``fastsim optimize``."""
    name: str
    function: Callable
    outputs: dict
    markdown: Callable
    figure: Callable
    extra_files: Callable | None = None
    command: Command | None = None
    sweep: SweepKind | None = None
    step: Step | None = None


def one_task(name: str, function: Callable, mix: bool = False) -> Callable:
    """A step's tasks when it is one call over every regime (``mix``: over the request mix)."""
    def tasks(base, regimes, mix_, arch):
        return {name: (function, (base, mix_ if mix else regimes, arch))}
    return tasks
