"""Studies declared once (``fastsim.studies.registry``): a declaration missing a piece is refused
when the registry is built (at import), and the tables the report, sweep, optimize and CLI code
read are the registry's."""
import pytest

from fastsim.studies import memo, report
from fastsim.studies.ablate import ablate
from fastsim.studies.registry import SECTIONS, STEPS, STUDIES, SWEEP_KINDS, Step, Study, SweepKind, declare
from fastsim.studies.variables import VARIABLES, Variable


def _study(name="ablate", **changes) -> Study:
    """A declaration like ablate's, with ``changes``."""
    base = dict(name=name, function=ablate, markdown=report.ablate_markdown, figure=report.ablate_figure)
    return Study(**{**base, **changes})


def test_registry__a_study_missing_a_piece_is_refused_with_every_problem_named():
    step = Step("", None, lambda ds, label: {}, memo.ablate_section, {})
    kind = SweepKind(None, {"status": Variable("status", "1", "x"), "rate": Variable("speed", "1", "x")})
    with pytest.raises(ImportError) as e:
        declare(_study(markdown=None, sweep=kind, step=step), _study("nameless_study"), _study("ablate"))
    text = str(e.value)
    for problem in ("'ablate': markdown must be callable", "sweep.point must be callable",
                    "sweep.outputs['rate'] must be a Variable named 'rate'", "sweep.outputs['status']: every point",
                    "step.tasks must be callable", "step.what", "step.order",
                    "'nameless_study': its outputs are not declared", "'ablate': declared twice",
                    "VARIABLES['cuts']: declared for no study"):
        assert problem in text, problem


def test_registry__every_declared_output_belongs_to_a_study_and_each_study_has_its_pieces():
    assert set(STUDIES) == set(VARIABLES) == {"ablate", "cuts", "overlays", "dataflow", "kv", "traffic",
                                              "bandwidth", "compression"}


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


def test_registry__each_study_has_its_command_and_no_command_lacks_a_study():
    from fastsim.cli import main

    assert set(main.commands["study"].commands) == set(STUDIES)
