"""fastsim study kv: where KV traffic overtakes weight traffic, per model and batch, interpolated
between the grid points that bracket it (it was printed by examples/kv_growth.py only)."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fastsim.cli import main
from fastsim.figures import kv_crossover
from fastsim.llm import LlmStudy
from fastsim.llm.families import from_dict
from fastsim.studies.kv import kv

TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512}
CONTEXTS = [128, 256, 512, 1024, 2048]


@pytest.fixture(scope="module")
def grid():
    return kv([LlmStudy(model=from_dict(TINY, "tiny"))], CONTEXTS, [1, 2])


def test_kv__crossover_lies_between_the_grid_points_that_bracket_it(grid):
    for b in (1, 2):
        r = grid.sel(model="tiny", batch=b)
        x = float(r.kv_crossover)
        kvb, w = r.kv_bytes.values, r.weight_bytes.values
        lo = max(c for c, k, ww in zip(CONTEXTS, kvb, w) if k <= ww)
        hi = min(c for c, k, ww in zip(CONTEXTS, kvb, w) if k > ww)
        assert lo < x < hi and x not in CONTEXTS  # interpolated, not the first grid point past it
        assert x == kv_crossover(CONTEXTS, kvb, w)
    # twice the batch, twice the KV per token: the crossover comes at about half the context
    assert float(grid.kv_crossover.sel(model="tiny", batch=2)) < 0.6 * float(grid.kv_crossover.sel(model="tiny", batch=1))
    assert grid.kv_crossover.attrs["units"] == "tokens"


def test_cli__study_kv_prints_the_crossover_and_draws_it(tmp_path):
    config = tmp_path / "tiny" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(TINY))
    args = ["study", "kv", "--model", str(config), "--context", "256", "--context", "512", "--context", "1024",
            "--report", str(tmp_path / "out")]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if line.startswith("| tiny"))
    x = float(row.split("|")[3].replace(",", ""))
    assert 512 < x < 1024 and "512 .. 1,024" in row
    assert (tmp_path / "out" / "kv.png").stat().st_size > 0
    r = CliRunner().invoke(main, ["study", "kv", "--regime", "decode:128"])
    assert r.exit_code == 2 and "--regime" in r.output  # the grid is --context and --batch


def test_plot__kv_of_a_store_over_context_alone_marks_the_interpolated_crossover():
    import xarray as xr

    from fastsim.figures import kv_figure

    c = np.array([1024, 2048, 4096])
    ds = xr.Dataset({"kv_bytes": ("context", [100.0, 200.0, 400.0]), "weight_bytes": ("context", [300.0] * 3)},
                    coords={"context": c})
    fig = kv_figure(ds)
    lines = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("KV > weights")]
    assert len(lines) == 1 and lines[0].get_xdata()[0] == pytest.approx(3072.0)  # not 4096, the point past it


def test_kv_report__figure_labels_do_not_overlap(grid):
    from fastsim.studies.kv import kv_figure
    from test_optimize_report import overlapping_labels

    assert overlapping_labels(kv_figure(grid)) == []
