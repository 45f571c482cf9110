"""Studies declared once, each in its own module (``STUDY = Study(...)``, found by
``fastsim.studies.registry``): a declaration missing a piece is refused when the registry is built
(at import), and the tables the report, sweep, optimize and CLI code read are the registry's."""
import json

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
    with pytest.raises(ImportError) as e:
        declare(_study(markdown=None, sweep=kind, step=step, command=command), _study("nameless_study", outputs={}),
                _study("ablate"), _study("first", step=placed), _study("second", step=placed))
    text = str(e.value)
    for problem in ("'ablate': markdown must be callable", "sweep.point must be callable",
                    "sweep.outputs['rate'] must be a Variable named 'rate'", "sweep.outputs['status']: every point",
                    "step.tasks must be callable", "step.what", "step.order", "step.place",
                    "'nameless_study': outputs: its Dataset's variables", "'ablate': declared twice",
                    "command.run must be callable", "command.help: its question and an Example",
                    "command.models: 'one' or 'several'", "command option", "step place 0: taken by two studies"):
        assert problem in text, problem


def test_registry__finds_every_module_that_declares_a_study_and_only_those():
    """A study is found where it is declared: the modules with a top-level ``STUDY``, each its own."""
    import importlib

    traffic = importlib.import_module("fastsim.studies.traffic")  # the package's ``traffic`` is the function
    found = declared_studies()
    assert {s.name for s in found} == set(STUDIES) == set(VARIABLES) >= {
        "ablate", "cuts", "overlays", "dataflow", "kv", "traffic", "bandwidth", "compression"}
    assert STUDIES["traffic"] is traffic.STUDY and VARIABLES["traffic"] is traffic.OUTPUTS
    assert list(STUDIES)[:len(STEPS)] == list(STEPS)  # the steps first, in their places


def test_registry__the_sweep_tables_are_derived_from_it():
    from fastsim.sweeping.points import RUNNERS
    from fastsim.sweeping.spec import LLM_KINDS, LLM_PARAMS, STUDY_PARAMS
    from fastsim.sweeping.variables import MESSAGE, PARAMETER_UNITS, REGISTRY

    assert set(SWEEP_KINDS) == {"ablate", "cuts", "overlays", "dataflow"}
    assert LLM_KINDS == ("llm", "ablate", "cuts", "overlays", "dataflow")
    assert set(RUNNERS) == {"llm", "gemm", *SWEEP_KINDS} and set(REGISTRY) == {*RUNNERS, "systolic"}
    # each kind's parameters: an LLM point's, less what the study decides itself, plus its own
    assert {name: (sorted(STUDY_PARAMS[name] - LLM_PARAMS), sorted(LLM_PARAMS - STUDY_PARAMS[name]))
            for name in SWEEP_KINDS} == {
        "ablate": ([], ["noop"]), "cuts": ([], ["cuts", "noop"]), "dataflow": ([], ["noop"]),
        "overlays": (["new_tokens"], ["context", "noop", "prefill_context", "regime"])}
    for name, kind in SWEEP_KINDS.items():
        assert list(REGISTRY[name]) == ["status", *kind.outputs, "message"] and REGISTRY[name]["message"] is MESSAGE
        assert all(PARAMETER_UNITS[p] == units for p, units in kind.extra.items())


def test_registry__the_optimize_tables_are_derived_from_it():
    from fastsim.studies.parallel import LONGEST_FIRST, OWN_WHAT, WHAT, step_of

    assert STEPS == ("ablate", "cuts", "overlays", "dataflow") and tuple(SECTIONS) == STEPS
    assert set(WHAT) == {*STEPS, *OWN_WHAT} and WHAT["cuts"].startswith("searching dispatch cuts")
    # the measured order (fastsim.studies.parallel): the dataflow study's prefill regime first,
    # the overlays study last
    assert LONGEST_FIRST == ("dataflow@prefill", "prefetch", "dataflow", "ablate", "latency", "cuts", "overlays")
    assert step_of("dataflow@prefill@64") == ("dataflow", "choosing a style per op (prefill@64)")


def test_registry__each_study_has_its_command_derived_or_written_and_no_command_lacks_a_study():
    from fastsim.cli import main

    group = main.commands["study"]
    assert group.list_commands(None) == sorted(STUDIES)
    # written by hand: the commands whose studies declare none (another input than a model)
    assert set(group.commands) == set(STUDIES) - set(COMMANDS) == {"ablate", "bandwidth", "compression"}


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
