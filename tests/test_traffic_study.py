"""fastsim study traffic: the traffic decomposition sheet and buffer-pressure profile per layer and
op (they were only inside the Python Dataset), every number the run's own."""
import csv
import io
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fastsim.cli import main
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.families import from_dict
from fastsim.studies.regimes import parse_regime
from fastsim.studies.traffic import traffic_figure
from fastsim.studies.traffic import by_op, sheet_csv, traffic
from test_optimize_report import overlapping_labels

TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512}
REGIMES = ["decode:256", "prefill:128"]


@pytest.fixture(scope="module")
def sheet():
    base = LlmStudy(model=from_dict(TINY, "tiny"))
    return base, traffic(base, REGIMES)


def test_traffic__every_number_is_the_runs_own(sheet):
    base, ds = sheet
    for text in REGIMES:
        regime = parse_regime(text)
        run = simulate_llm(regime.study(base))
        r = ds.sel(regime=regime.label)
        np.testing.assert_array_equal(r.ddr_bytes.values, run.ddr_bytes.values)
        np.testing.assert_array_equal(r.level_bytes.values, run.level_bytes.values)
        np.testing.assert_array_equal(r.l1_peak_bytes.values, run.l1_peak_bytes.values)
        assert (r.l1_fills.values[np.isfinite(r.l1_fills.values)] > 0).all()
    summed = by_op(ds, "decode@256")
    assert float(summed.ddr_bytes.sum()) == pytest.approx(float(ds.sel(regime="decode@256").ddr_bytes.sum()))
    assert int(summed.layers.sel(op="q_proj")) == 2 and int(summed.layers.sel(op="lm_head")) == 0


def test_traffic__csv_has_one_row_per_regime_layer_and_op(sheet):
    _, ds = sheet
    rows = list(csv.DictReader(io.StringIO(sheet_csv(ds))))
    assert len(rows) == 2 * ds.sizes["op"]
    q = next(r for r in rows if r["regime"] == "decode@256" and r["op"] == "q_proj" and r["layer"] == "1")
    x = ds.sel(regime="decode@256").isel(op=int(np.flatnonzero((ds.op_name.values == "q_proj") & (ds.layer.values == 1))[0]))
    assert float(q["ddr_weights_bytes"]) == float(x.ddr_bytes.sel(tensor_kind="weights"))
    assert q["activations_in"] in ("DDR", "mem tile") and float(q["l1_peak_bytes"]) == float(x.l1_peak_bytes)


def test_traffic__buffer_pressure_figure_labels_do_not_overlap(sheet):
    _, ds = sheet
    assert overlapping_labels(traffic_figure(ds)) == []


def test_cli__study_traffic_writes_markdown_csv_and_figure(tmp_path):
    config = tmp_path / "tiny" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(TINY))
    r = CliRunner().invoke(main, ["study", "traffic", "--model", str(config), "--regime", "decode:128",
                                  "--report", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "| q_proj | 2 |" in r.output and "L1 / L2 peak KiB" in r.output
    for name in ("traffic.md", "traffic.csv", "traffic.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
