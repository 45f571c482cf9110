"""Latency distributions (issue 13): a seeded variance model over simulated steps."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fastsim.arch import NPU2
from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy
from fastsim.llm.latency import VarianceModel, latency_distribution
from fastsim.llm.model import ModelConfig

SMALL = LlmStudy(model=ModelConfig("small", 512, 2, 8, 2, 64, 1024, 1000), context=256, prompt=32)


@pytest.fixture(scope="module")
def base():
    return latency_distribution(SMALL, NPU2, samples=400, seed=11)


@pytest.mark.slow
def test_same_seed_is_bit_identical_and_another_seed_is_not(base):
    again = latency_distribution(SMALL, NPU2, samples=400, seed=11)
    other = latency_distribution(SMALL, NPU2, samples=400, seed=12)
    for name in ("token_latency_s", "ttft_s", "token_latency_quantile_s", "ttft_quantile_s"):
        assert np.array_equal(base[name].values, again[name].values)
    assert not np.array_equal(base.token_latency_s.values, other.token_latency_s.values)


def test_without_variance_every_sample_is_the_simulated_step():
    quiet = VarianceModel(ddr_share_max=0.0, dispatch_jitter_cv=0.0)
    ds = latency_distribution(SMALL, NPU2, samples=50, seed=0, model=quiet)
    step = float(ds.decode_seconds_by_share[0])
    assert np.all(ds.token_latency_s.values == step)
    assert np.all(ds.ttft_s.values >= float(ds.prefill_seconds_by_share[0]) - 1e-15)


def test_contention_and_load_move_the_tails_the_right_way(base):
    assert np.all(np.diff(base.decode_seconds_by_share.values) >= 0)  # less DDR bandwidth: never faster
    q = base.token_latency_quantile_s.values
    assert q[0] <= q[1] <= q[2]
    assert q[0] >= float(base.decode_seconds_by_share[0]) - NPU2.dispatch_overhead_s  # jitter is mean-zero
    busy = latency_distribution(SMALL, NPU2, samples=400, seed=11, model=VarianceModel(load=0.9))
    assert busy.ttft_quantile_s.values[1] > base.ttft_quantile_s.values[1]  # queueing grows with load
    assert np.all(base.ttft_s.values >= base.prefill_seconds_by_share.min().values - NPU2.dispatch_overhead_s * 2)


def test_bad_variance_inputs_are_config_errors():
    with pytest.raises(ConfigError, match="load"):
        latency_distribution(SMALL, NPU2, samples=10, model=VarianceModel(load=1.2))
    with pytest.raises(ConfigError, match="samples"):
        latency_distribution(SMALL, NPU2, samples=0)


def test_cli_reports_p50_p95_p99(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
                                  "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 1000}))
    r = CliRunner().invoke(main, ["run", "--json", "llm", "--model", str(config), "--context", "256", "--prompt",
                                  "32", "--samples", "100", "--seed", "5"])
    assert r.exit_code == 0, r.output
    lat = json.loads(r.output)["latency"]
    assert lat["quantiles"] == [0.5, 0.95, 0.99] and len(lat["ttft_s"]) == 3
    assert lat["token_latency_s"] == sorted(lat["token_latency_s"])


def test_less_ddr_keeps_the_deployed_layout_and_mappings():
    """Background traffic slows a deployed design; it does not re-map it: every op keeps the
    mapping, fusion and cuts searched at full bandwidth, and the step is never faster."""
    from fastsim.llm import simulate_llm
    from fastsim.llm.run import pinned_layout

    full = simulate_llm(SMALL, NPU2)
    slower = NPU2.replace(ddr_bytes_per_s=NPU2.ddr_bytes_per_s * 0.5)
    kept = simulate_llm(pinned_layout(SMALL, full), slower, mapped_on=NPU2)
    for name in ("matmul_tile", "dataflow", "op_columns", "matmul_datapath", "fusion_group", "dispatch"):
        assert np.array_equal(kept[name].values, full[name].values), name
    assert float(kept.total_seconds) > float(full.total_seconds)
    again = simulate_llm(pinned_layout(SMALL, full), NPU2, mapped_on=NPU2)  # the same part: the same run
    assert float(again.total_seconds) == float(full.total_seconds)


def test_less_ddr_keeps_the_vector_ops_columns_too():
    """A prefill's vector ops search their columns against their set-up; searched again at a quarter
    of the DDR bandwidth (the transfers take longer, the set-up weighs less), 194 of a 64-token
    prefill's ops land on other columns. A deployed layout keeps the columns it was mapped with."""
    from fastsim.llm import LlmStudy, simulate_llm
    from fastsim.llm.run import pinned_layout

    study = LlmStudy(regime="prefill", prompt=64)
    full = simulate_llm(study, NPU2)
    slower = NPU2.replace(ddr_bytes_per_s=NPU2.ddr_bytes_per_s * 0.25)
    kept = simulate_llm(pinned_layout(study, full), slower, mapped_on=NPU2)
    assert np.array_equal(kept.op_columns.values, full.op_columns.values)
    assert float(kept.total_seconds) > float(full.total_seconds)


def test_mapped_on_another_part_is_refused():
    from fastsim.arch import NPU1
    from fastsim.llm import simulate_llm

    with pytest.raises(ConfigError, match="mapped_on = npu1.*DDR bandwidth"):
        simulate_llm(SMALL, NPU2, mapped_on=NPU1)
