"""The numbers README.md and docs/*.md quote are today's (issue 49.6): bench/doc_figures.py names
each one, its command and where the docs print it; docs/figures.json holds the values."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("doc_figures", ROOT / "bench" / "doc_figures.py")
doc_figures = sys.modules["doc_figures"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(doc_figures)


def _recorded() -> dict:
    return json.loads(doc_figures.OUT.read_text())["figures"]


def test_doc_figures__docs_print_the_recorded_values():
    """Every figure is found where it is listed, and every computed one is printed as recorded."""
    assert doc_figures.check(_recorded()) == []


def test_doc_figures__every_figure_is_recorded_with_its_command_and_tier():
    recorded = _recorded()
    names = [f.name for f in doc_figures.figures()]
    assert len(names) == len(set(names))
    assert sorted(recorded) == sorted(names)
    for name, entry in recorded.items():
        assert entry["tier"] in doc_figures.TIERS and entry["command"], name
        assert entry["value"] is not None, name  # generated or, for a measured one, found in its doc
        assert (entry.get("status") == doc_figures.NOT_REGENERATED) == (entry["tier"] == "measured"), name


@pytest.mark.slow
def test_doc_figures__quick_and_validation_figures_are_todays():
    """The quick figures computed again now (a 2048³ GEMM search, a Llama-3.2-1B decode step, the
    presets) and the validation summary read again from fastsim/presets/validation.json print as the
    docs print them."""
    fresh = doc_figures.generate(("quick", "validation"))
    assert doc_figures.check(fresh) == []
    recorded = _recorded()
    for f in doc_figures.figures():
        if f.tier in ("quick", "validation"):
            for q in f.quotes:
                fmt = q.fmt or ",d"
                assert doc_figures.printed(fresh[f.name]["value"], fmt) == \
                    doc_figures.printed(recorded[f.name]["value"], fmt), (f.name, f.command)


def test_doc_figures__printed__formats_as_the_docs_do():
    assert doc_figures.printed(2380043.0, ",d") == "2,380,043"
    assert doc_figures.printed(1374.246, ",.1f") == "1,374.2"
    assert doc_figures.printed(4, "word") == "four"
    assert doc_figures.printed(12, "word") == "12"
