"""Issue 28: each scalar LLM study parameter has one name, one value set, one type and one default
on the command line (``fastsim run llm``), in Python (``LlmStudy``) and in sweep specs, all derived
from ``fastsim.llm.parameters``."""
import dataclasses
import inspect

import pytest
from click.testing import CliRunner

from fastsim.cli import main
from fastsim.cli.llm import REGIME_OPTIONS, llm_cmd
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy, Precision, get_model
from fastsim.llm.parameters import PARAMETERS, PRECISION_NAMES
from fastsim.sweeping.points import cached_tokens, llm_study
from fastsim.sweeping.spec import STUDY_PARAMS, parse_spec
from fastsim.sweeping.variables import parameter_units

CLI_EXTRA_CHOICES = {"regime": ("generate",)}  # run llm's whole generation: a prefill, then decode steps
IDS = [p.name for p in PARAMETERS]


def outside(p):
    """A value just outside the parameter's declared set."""
    if p.choices:
        return "bogus"
    if p.type is bool:
        return "yes"
    return p.lo if p.lo_open else p.lo - 1


def spec_text(base: str = "", axes: str = "batch = [1]", points: str = "") -> str:
    tables = f"[axes]\n{axes}\n" if not points else points
    return f'[study]\nkind = "llm"\n[study.base]\n{base}\n{tables}'


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_parameters__each_is_an_llm_study_field_with_the_same_default():
    fields = {f.name: f for f in dataclasses.fields(LlmStudy)}
    arguments = inspect.signature(LlmStudy).parameters
    for p in PARAMETERS:
        if p.name in PRECISION_NAMES:  # LlmStudy's arguments for Precision's fields
            assert p.name in arguments and p.default == getattr(Precision(), p.name), p.name
        else:
            assert p.name in fields and p.default == fields[p.name].default, p.name
            assert isinstance(p.default, p.type) or p.default is None, p.name


@pytest.mark.parametrize("p", PARAMETERS, ids=IDS)
def test_parameters__each_is_a_run_llm_option_with_the_same_values_and_default(p):
    options = {o.name: o for o in llm_cmd.params}
    option = options[p.name]
    flag = "--" + p.name.replace("_", "-")
    assert option.opts == [flag]
    if p.type is bool:
        assert option.secondary_opts == ["--no-" + flag[2:]] and option.default is p.default
        return
    if p.choices:
        assert tuple(option.type.choices) == p.choices + CLI_EXTRA_CHOICES.get(p.name, ())
    else:
        assert p.allowed() in option.help  # the range is checked by LlmStudy, stated in --help
    default = None if option.default is None else option.type.convert(option.default, option, None)
    assert default == p.default
    if p.unset:
        assert option.type.convert(p.unset, option, None) is None


@pytest.mark.parametrize("p", PARAMETERS, ids=IDS)
def test_parameters__each_is_a_sweep_key_with_its_units(p):
    for kind in ("llm", "ablate", "cuts", "dataflow"):
        assert p.name in STUDY_PARAMS[kind], (kind, p.name)
    assert parameter_units(p.name) == p.units


@pytest.mark.parametrize("p", PARAMETERS, ids=IDS)
def test_parameters__llm_study_refuses_values_outside_the_declared_set(p):
    bad = outside(p)
    with pytest.raises(ConfigError) as e:
        if p.name in PRECISION_NAMES:
            LlmStudy(**{p.name: bad}).precision.validate()
        else:
            LlmStudy(**{p.name: bad}).validate(get_model("llama-3.2-1b"))
    text = str(e.value)
    assert f"{p.name} = {bad!r}" in text
    for word in p.choices or [p.allowed()]:  # Precision words its choices itself: each one named
        assert word in text


@pytest.mark.parametrize("p", [p for p in PARAMETERS if p.choices], ids=[p.name for p in PARAMETERS if p.choices])
def test_parameters__llm_study_takes_every_declared_choice(p):
    for value in p.choices:
        encoder = value == "encode"
        study = LlmStudy(**{p.name: value}, prompt=128 if encoder else 2048)
        study.precision.validate()
        if p.name not in PRECISION_NAMES:
            study.validate(get_model("bert-base" if encoder else "llama-3.2-1b"))
        held = study.precision if p.name in PRECISION_NAMES else study
        assert getattr(held, p.name) == value  # taken as given, not replaced by a default


@pytest.mark.parametrize("p", [p for p in PARAMETERS if p.type is not bool],
                         ids=[p.name for p in PARAMETERS if p.type is not bool])
def test_parameters__run_llm_refuses_values_outside_the_declared_set(p):
    regime = next((regimes[0] for name, regimes, _ in REGIME_OPTIONS if name == p.name), "decode")
    args = ["run", "llm", "--" + p.name.replace("_", "-"), outside(p)]
    r = invoke(*args, *(["--regime", regime] if p.name != "regime" else []))
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert p.name in r.output.replace("-", "_") or f"--{p.name}" in r.output
    for word in p.choices or [p.allowed()]:
        assert word in r.output


def inside(p):
    """A value in the parameter's declared set other than its default (as the CLI and the study spell it)."""
    if p.choices:
        return next(c for c in reversed(p.choices) if c != p.default)
    if p.type is bool:
        return not p.default
    return p.hi


@pytest.mark.parametrize("p", PARAMETERS, ids=IDS)
def test_parameters__each_run_llm_option_reaches_its_study_field(p, monkeypatch):
    import fastsim.cli.llm as cli_llm

    seen = {}

    def stop(study, o, arch):
        seen["study"] = study
        raise ConfigError(["stopped before simulating"], "test")

    monkeypatch.setattr(cli_llm, "_simulate", stop)
    value, flag = inside(p), "--" + p.name.replace("_", "-")
    regime = next((regimes[0] for name, regimes, _ in REGIME_OPTIONS if name == p.name), "decode")
    args = [flag] if value is True else ["--no-" + flag[2:]] if value is False else [flag, value]
    model = "bert-base" if value == "encode" else "llama-3.2-1b"
    r = invoke("run", "--yes", "llm", "--model", model, *args, *(["--regime", regime] if p.name != "regime" else []))
    assert "stopped before simulating" in r.output, r.output
    study = seen["study"]
    got = getattr(study.precision if p.name in PRECISION_NAMES else study, p.name)
    assert got == value


@pytest.mark.parametrize("p", PARAMETERS, ids=IDS)
def test_parameters__a_spec_refuses_values_outside_the_declared_set(p):
    bad = outside(p)
    value = f'"{bad}"' if isinstance(bad, str) else bad
    for text, where in ((spec_text(base=f"{p.name} = {value}"), f"study.base.{p.name}"),
                        (spec_text(axes=f"{p.name} = [{value}]"), f"axes.{p.name}"),
                        (spec_text(points=f"[[points]]\n{p.name} = {value}\n"), f"points[0].{p.name}")):
        with pytest.raises(ConfigError) as e:
            parse_spec(text, "bad-spec")
        assert f"{where} = {bad!r}" in str(e.value)
        assert p.allowed() in str(e.value)


def test_spec__search_budget_exact_is_none_as_on_the_command_line():
    spec = parse_spec(spec_text(axes='search_budget = [1, "exact"]'), "budget")
    assert [llm_study(spec.point((i,))).search_budget for i in range(2)] == [1, None]


def test_spec__context_of_a_prefill_point_is_refused_and_names_prefill_context():
    for text in (spec_text(base='regime = "prefill"\ncontext = 512'),
                 spec_text(base='regime = "prefill"', axes="context = [512, 1024]"),
                 spec_text(points='[[points]]\nregime = "decode"\ncontext = 512\n'
                                  '[[points]]\nregime = "prefill"\ncontext = 512\n')):
        with pytest.raises(ConfigError) as e:
            parse_spec(text, "old-spelling")
        assert "context = " in str(e.value) and "write prefill_context" in str(e.value)
        assert "points[0]" not in str(e.value)  # the decode point's context is its own
    with pytest.raises(ConfigError, match="write prefill_context"):
        llm_study({"regime": "prefill", "context": 512})


def test_spec__prefill_context_is_the_name_in_specs_too():
    spec = parse_spec(spec_text(base='regime = "prefill"\nprompt = 64', axes="prefill_context = [0, 512]"), "new")
    assert [llm_study(spec.point((i,))).prefill_context for i in range(2)] == [0, 512]


def test_spec__a_regime_axis_crossed_with_context_pairs_prefill_with_prefill_context():
    """A cartesian product cannot pair decode's context with prefill's prefill_context by name
    (sweeps/kv_growth.toml): each prefill point takes context as its cached tokens."""
    spec = parse_spec(spec_text(axes='regime = ["decode", "prefill"]\ncontext = [512]'), "crossed")
    decode, prefill = (llm_study(cached_tokens(spec, spec.point((i, 0)))) for i in range(2))
    assert (decode.regime, decode.context) == ("decode", 512)
    assert (prefill.regime, prefill.prefill_context) == ("prefill", 512)
    given = parse_spec(spec_text(axes='regime = ["decode", "prefill"]\ncontext = [512]\nprefill_context = [8]'),
                       "both")
    assert llm_study(cached_tokens(given, given.point((1, 0, 0)))).prefill_context == 8  # named: as named
