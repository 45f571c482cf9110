"""fastsim optimize over several models: one folder per model, one comparison of their playbooks."""
from __future__ import annotations

import json

import pytest

from fastsim.llm import LlmStudy
from fastsim.llm.families import from_dict
from fastsim.studies.families import compare_playbooks, optimize_models

DENSE = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512}
MOE = {**DENSE, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}


def test_compare_playbooks__names_the_ops_whose_style_differs():
    books = {"a": {"regimes": {"decode": {"chosen": "ws", "baseline": "ws",
                                          "ops": {"q_proj": {"style": "ws"}, "attn_v": {"style": "os"}}}}},
             "b": {"regimes": {"decode": {"chosen": "is", "baseline": "is",
                                          "ops": {"q_proj": {"style": "is"}, "attn_v": {"style": "os"},
                                                  "expert_up": {"style": "ws"}}}}}}
    r = compare_playbooks(books, {"a": "llama", "b": "mixtral"})["decode"]
    assert r["differs"] == ["q_proj"]
    assert r["styles"]["expert_up"] == {"b": "ws"}


@pytest.mark.slow
def test_optimize_models__one_folder_per_model_and_a_comparison(tmp_path):
    bases = [LlmStudy(model=from_dict(cfg, name)) for cfg, name in ((DENSE, "tiny-dense"), (MOE, "tiny-moe"))]
    comparison = optimize_models(bases, ["decode:128", "prefill:32"], out=tmp_path, levers=False)
    for name in ("tiny-dense", "tiny-moe"):
        assert (tmp_path / name / "plan.json").exists() and (tmp_path / name / "report.md").exists()
    assert comparison["models"]["tiny-moe"]["family"] == "mixtral"
    report = (tmp_path / "report.md").read_text()
    assert "tiny-moe (mixtral)" in report and "Where the dataflow playbooks differ" in report
    saved = json.loads((tmp_path / "comparison.json").read_text())
    assert set(saved["regimes"]) == {"decode@128", "prefill@32"}
    assert "expert_gate" in saved["regimes"]["decode@128"]["styles"]


def test_cli__optimize_refuses_report_and_takes_several_models(tmp_path):
    from click.testing import CliRunner

    from fastsim.cli import main

    r = CliRunner().invoke(main, ["optimize", "--report", str(tmp_path / "r"), "--out", str(tmp_path / "o")])
    assert r.exit_code != 0 and "--report does not apply" in r.output
    r = CliRunner().invoke(main, ["optimize", "--help"])
    assert "repeatable" in r.output
