"""The whole-run search: judged on whole runs, it moves ops onto kernels other ops use where program
reloads are left after the default run's kernel sharing; what it answers replays, is never slower
than the default, and a run without program reloads keeps the default's choices."""
import pytest

from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy, ModelConfig, simulate_llm
from fastsim.mapping.dispatch import DispatchLimits
from fastsim.studies.whole_run import whole_run_search

TINY = ModelConfig("tiny", 256, 2, 4, 2, 64, 512, 1024, True)
# room for four matmul kernels and the vector ones: the tiny model's per-op choices use more
TIGHT = DispatchLimits(program_memory_bytes=4 * 2048 + 8 * 512)


@pytest.fixture(scope="module")
def tight_decode():
    study = LlmStudy(model=TINY, regime="decode", context=256, search_budget=1)
    return study, whole_run_search(study, limits=TIGHT)


def test_whole_run_search__starts_where_the_default_run_shares_kernels(tight_decode):
    # the default evaluation already holds the ops to a kernel set that fits (tests/test_kernel_sharing.py):
    # no reload is left for the whole-run search to save
    study, found = tight_decode
    assert found.reload_seconds == 0 and not found.moves and found.runs == 1
    assert "no program reloads" in found.summary()


def test_whole_run_answer__replays_and_is_never_slower(tight_decode):
    study, found = tight_decode
    assert float(simulate_llm(found.study, limits=TIGHT).total_seconds) == found.seconds
    assert float(found.dataset.total_seconds) == found.seconds
    assert found.per_op_seconds == float(simulate_llm(study, limits=TIGHT).total_seconds)


def test_no_program_reloads__keeps_the_per_op_choices():
    study = LlmStudy(model=TINY, regime="decode", context=256, search_budget=1)
    found = whole_run_search(study, limits=DispatchLimits(program_memory_bytes=1 << 20))
    assert found.reload_seconds == 0 and not found.moves and found.runs == 1
    assert found.study == study and found.seconds == found.per_op_seconds
    assert "no program reloads" in found.summary()


@pytest.mark.parametrize("rounds", [0, -1, 1.5, True])
def test_rounds__must_be_a_whole_number(rounds):
    with pytest.raises(ConfigError, match="rounds"):
        whole_run_search(LlmStudy(model=TINY, context=64), rounds=rounds)


def test_cli__run_llm_whole_run_reports_the_search_and_refuses_generate(tmp_path):
    import json

    from click.testing import CliRunner

    from fastsim.cli import main

    cfg = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 4096}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = CliRunner().invoke(main, ["run", "--json", "llm", "--model", str(path), "--context", "256", "--whole-run"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["seconds"] == out["whole_run"]["seconds"] and out["whole_run"]["runs"] >= 1
    r = CliRunner().invoke(main, ["run", "llm", "--model", str(path), "--regime", "generate", "--whole-run"])
    assert r.exit_code != 0 and "--whole-run does not apply to --regime generate" in r.output
