"""A search answers with its design unchecked only when asked, and an evaluation validates every
op design it reports: the checks skipped are those of alternatives it weighed and dropped."""
import pytest

import fastsim.validate
from fastsim import settings
from fastsim.arch import NPU2
from fastsim.cache import clear
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.mapping import Matmul, search


@pytest.fixture
def fresh():
    clear()
    with settings.use(cache=False):
        yield
    clear()


def test_search_validates_its_answer_unless_asked_not_to(fresh, monkeypatch):
    seen = []
    monkeypatch.setattr(fastsim.validate, "validate_design", lambda d: seen.append(d))
    op = Matmul(32, 64, 64, "bf16")
    unchecked = search(op, NPU2, validate=False)
    assert not unchecked.validated and seen == []
    checked = search(op, NPU2)
    assert checked is unchecked and checked.validated and seen == [checked.best_design]
    search(op, NPU2)
    assert len(seen) == 1  # once per answer


def test_a_chosen_design_that_fails_its_checks_is_an_error(fresh, monkeypatch):
    def broken(design):
        raise ConfigError([f"{design.name}: broken on purpose"], "design")

    monkeypatch.setattr(fastsim.validate, "validate_design", broken)
    with pytest.raises(ConfigError, match="broken on purpose"):
        simulate_llm(LlmStudy(regime="decode", context=128))


def test_an_evaluation_validates_exactly_the_searched_designs_it_reports(fresh, monkeypatch):
    from fastsim.evaluation.evaluate import Evaluation

    checked, reported = [], []
    real_validate = fastsim.validate.validate_design
    monkeypatch.setattr(fastsim.validate, "validate_design", lambda d: checked.append(d.name) or real_validate(d))
    real_check = Evaluation.check_designs

    def spy(self, placed):
        reported.extend(p for p in placed if self.results[p.key].matmul_kernel is not None)
        real_check(self, placed)
        assert all(self.results[p.key].design_checked for p in placed)

    monkeypatch.setattr(Evaluation, "check_designs", spy)
    simulate_llm(LlmStudy(regime="decode", context=128))
    assert reported and checked
    assert len(checked) <= len({p.key for p in reported})  # no loser's design was checked
