"""Studies declared once, each in its own module (``STUDY = Study(...)``, found by
``fastsim.studies.registry``): a declaration missing a piece is refused when the registry is built
(at import), and the tables the report, sweep, optimize and CLI code read are the registry's."""
import json

import click

import numpy as np
import pytest

from fastsim.studies import memo, report
from fastsim.studies.ablate import OUTPUTS, ablate
from fastsim.studies.declaration import Command, Option, Step, Study, SweepKind
from fastsim.studies.registry import (COMMANDS, SECTIONS, STEPS, STUDIES, SWEEP_KINDS, VARIABLES, declare,
                                      declared_studies)
from fastsim.studies.variables import Variable, build


def _study(name="ablate", **changes) -> Study:
    """A declaration like ablate's, with ``changes``."""
    base = dict(name=name, function=ablate, outputs=OUTPUTS, markdown=report.ablate_markdown,
                figure=report.ablate_figure)
    return Study(**{**base, **changes})


def test_registry__a_study_missing_a_piece_is_refused_with_every_problem_named():
    step = Step("first", "", None, lambda ds, label: {}, memo.ablate_section, {})
    kind = SweepKind(None, {"status": Variable("status", "1", "x"), "rate": Variable("speed", "1", "x")})
    command = Command("no example here", None, models="all", options=(Option("max", "max", "x", kind="float"),))
    placed = Step(0, "x", lambda *a: {}, lambda ds, label: {}, memo.ablate_section, {"other": 1})
    clashing = Command("Q?\n\n    Example: fastsim study clash", lambda base, arch: None, regimes="no",
                       options=(Option("--kv-bytes", "kv", "x"), Option("--size", "size", "x", minimum=1)))
    with pytest.raises(ImportError) as e:
        declare(_study(markdown=None, sweep=kind, step=step, command=command), _study("nameless_study", outputs={}),
                _study("ablate"), _study("first", step=placed), _study("second", step=placed),
                _study("clash", command=clashing, sweep="a sweep", step=3))
    text = str(e.value)
    for problem in ("'ablate': markdown must be callable", "sweep.point must be callable",
                    "sweep.outputs['rate'] must be a Variable named 'rate'", "sweep.outputs['status']: every point",
                    "step.tasks must be callable", "step.what", "step.order", "step.place",
                    "'nameless_study': outputs: its Dataset's variables", "'ablate': declared twice",
                    "command.run must be callable", "command.help: its question and an 'Example: fastsim study ablate",
                    "command.models: 'one' or 'several'", "command option Option(flag='max'",
                    "step place 0: taken by two studies", "'clash': command.regimes: True or False",
                    "command option 'kv': a model option has that name", "command option Option(flag='--size'",
                    "'clash': command.run does not take (base, regimes, arch, kv, size)",
                    "'clash': sweep must be a SweepKind or None", "'clash': step must be a Step or None"):
        assert problem in text, problem


def test_registry__finds_every_module_that_assigns_a_study_at_its_top_level(tmp_path, monkeypatch):
    """A study is found where it is declared, annotated or not; a mention in a docstring or a name
    inside a function is not a declaration."""
    package = tmp_path / "toy_studies"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "plain.py").write_text("STUDY = 'plain'\n")
    (package / "annotated.py").write_text("STUDY: str = 'annotated'\n")
    (package / "mention.py").write_text('"""\nSTUDY = 1 (a docstring)\n"""\nX = 1\n')
    (package / "inner.py").write_text("def f():\n    STUDY = 1\n    return STUDY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert declared_studies("toy_studies") == ["annotated", "plain"]


def test_registry__the_studies_are_the_modules_declarations_steps_first():
    import importlib

    traffic = importlib.import_module("fastsim.studies.traffic")  # the package's ``traffic`` is the function
    assert [s.name for s in declared_studies()] == sorted(STUDIES)
    assert set(STUDIES) >= {"ablate", "cuts", "overlays", "dataflow", "kv", "traffic", "bandwidth", "compression"}
    assert STUDIES["traffic"] is traffic.STUDY and VARIABLES["traffic"] is traffic.OUTPUTS
    assert list(STUDIES)[:len(STEPS)] == list(STEPS)  # the steps first, in their places


def test_registry__the_sweep_tables_are_derived_from_it():
    from fastsim.sweeping.points import RUNNERS
    from fastsim.sweeping.spec import LLM_KINDS, LLM_PARAMS, STUDY_PARAMS
    from fastsim.sweeping.variables import MESSAGE, PARAMETER_UNITS, REGISTRY

    assert set(SWEEP_KINDS) >= {"ablate", "cuts", "overlays", "dataflow"}
    assert LLM_KINDS == ("llm", *SWEEP_KINDS)
    assert set(RUNNERS) == {"llm", "gemm", *SWEEP_KINDS} and set(REGISTRY) == {*RUNNERS, "systolic"}
    # each kind's parameters: an LLM point's, less what the study decides itself, plus its own
    assert {name: (sorted(STUDY_PARAMS[name] - LLM_PARAMS), sorted(LLM_PARAMS - STUDY_PARAMS[name]))
            for name in SWEEP_KINDS} == {
        "ablate": ([], ["noop"]), "cuts": ([], ["cuts", "noop"]), "dataflow": ([], ["noop"]),
        "overlays": (["new_tokens"], ["context", "noop", "prefill_context", "regime"]),
        **{name: (sorted(STUDY_PARAMS[name] - LLM_PARAMS), sorted(LLM_PARAMS - STUDY_PARAMS[name]))
           for name in set(SWEEP_KINDS) - {"ablate", "cuts", "overlays", "dataflow"}}}
    for name, kind in SWEEP_KINDS.items():
        assert list(REGISTRY[name]) == ["status", *kind.outputs, "message"] and REGISTRY[name]["message"] is MESSAGE
        assert all(PARAMETER_UNITS[p] == units for p, units in kind.extra.items())


def test_registry__the_optimize_tables_are_derived_from_it():
    from fastsim.studies.parallel import LONGEST_FIRST, OWN_WHAT, WHAT, step_of

    assert STEPS[:4] == ("ablate", "cuts", "overlays", "dataflow") and tuple(SECTIONS) == STEPS
    # declared in any order, the steps come out in their places, then the other studies by name
    last = Step(9, "x", lambda *a: {}, lambda ds, label: {}, memo.ablate_section, {"z": 1})
    first = Step(-1, "x", lambda *a: {}, lambda ds, label: {}, memo.ablate_section, {"b": 1})
    assert list(declare(_study("y"), _study("z", step=last), _study("x"), _study("b", step=first))) == ["b", "z", "x", "y"]
    assert set(WHAT) == {*STEPS, *OWN_WHAT} and WHAT["cuts"].startswith("searching dispatch cuts")
    # the measured order (fastsim.studies.parallel): the dataflow study's prefill regime first,
    # the overlays study last
    measured = ("dataflow@prefill", "prefetch", "dataflow", "ablate", "latency", "cuts", "overlays")
    assert tuple(p for p in LONGEST_FIRST if p in measured) == measured
    assert step_of("dataflow@prefill@64") == ("dataflow", "choosing a style per op (prefill@64)")


def test_registry__each_study_has_its_command_derived_or_written_and_no_command_lacks_a_study():
    from fastsim.cli import main

    group = main.commands["study"]
    assert group.list_commands(None) == sorted(STUDIES)
    # written by hand: the commands whose studies declare none (another input than a model)
    assert set(group.commands) == set(STUDIES) - set(COMMANDS)
    assert {"cuts", "overlays", "dataflow", "kv", "traffic"} <= set(COMMANDS)


def test_cli__a_declared_command_becomes_a_click_command_with_the_model_options_and_its_own(tmp_path):
    """What a new study gets from its ``Command``: the model's options, its own, the run, --json."""
    from click.testing import CliRunner

    from fastsim.cli.study import derived_command

    seen = {}

    def run(bases, arch, sizes):
        seen.update(models=[b.model for b in bases], arch=arch.name, sizes=sizes)
        return build({"x": OUTPUTS["baseline_seconds"]}, {"x": np.array([1.0])}, {"regime": ["decode@8"]},
                     {"study": "toy"})

    declared = Command("A toy question?\n\n    Example: fastsim study toy --size 2", run, models="several",
                       regimes=False, options=(Option("--size", "sizes", "sizes", kind="int", minimum=1,
                                                      multiple=True),))
    command = derived_command("toy", declared)
    out = CliRunner().invoke(command, ["--model", "llama-3.2-1b", "--model", "llama-3.2-3b", "--size", "2",
                                       "--arch", "npu1", "--json"])
    assert out.exit_code == 0, out.output
    assert seen == {"models": ["llama-3.2-1b", "llama-3.2-3b"], "arch": "npu1", "sizes": (2,)}
    assert json.loads(out.output)["data_vars"]["x"]["data"] == [1.0]
    help_text = CliRunner().invoke(command, ["--help"]).output
    assert "A toy question?" in help_text and "--regime" not in help_text and "--size" in help_text
    bad = CliRunner().invoke(command, ["--size", "0"])
    assert bad.exit_code == 2 and "--size" in bad.output


def test_registry__model_options_are_the_names_the_cli_gives_every_derived_command():
    """``MODEL_OPTIONS`` (what a study's own option may not be named) is the CLI's set, not a stale copy."""
    from fastsim.cli.common import model_options
    from fastsim.studies.registry import MODEL_OPTIONS

    names = set()
    for several in (False, True):
        command = click.command()(model_options(lambda **kw: None, several=several))
        names |= {p.name for p in command.params}
    assert names == set(MODEL_OPTIONS)
