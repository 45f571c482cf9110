"""``fastsim plot`` figures (issue 16): properties (axes, series, labels, units), not pixels."""
import json

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from fastsim.arch import NPU2
from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.plot import plot


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plot")
    config = tmp / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                                  "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512}))
    out = {}
    for name, args in (("llm", ["run", "--json", "llm", "--model", str(config), "--context", "128"]),
                       ("gemm", ["run", "--json", "gemm", "--m", "128", "--k", "128", "--n", "128"])):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        out[name] = json.loads(r.output)
    return out


def _sweep():
    ctx = np.array([1024, 4096, 16384, 65536])
    kv = xr.DataArray(ctx * 32768.0, dims="context", coords={"context": ctx}, attrs={"units": "bytes"})
    ds = xr.Dataset({"kv_bytes": kv, "weight_bytes": kv * 0 + 6.4e8,
                     "seconds": (("context", "batch"), np.arange(8.0).reshape(4, 2), {"units": "s"}),
                     "status": (("context", "batch"), np.zeros((4, 2), int))},
                    coords={"batch": [1, 4]})
    ds.context.attrs["units"] = "tokens"
    return ds


@pytest.mark.slow
def test_llm_run_gives_time_by_class_and_by_layer(runs):
    fig = plot(runs["llm"])
    a, b = fig.axes
    assert len(a.patches) == len(runs["llm"]["by_class"]) and len(b.patches) == len(runs["llm"]["by_layer"])
    assert a.get_ylabel() == "time (ms)" and b.get_xlabel() == "layer"


def test_llm_run_gives_stall_attribution_per_op(runs):
    fig = plot(runs["llm"], "stalls")
    ax = fig.axes[0]
    states = list(runs["llm"]["stalls_by_op"][0]["channels"])
    n_ops = min(12, len(runs["llm"]["stalls_by_op"]))
    assert len(ax.patches) == len(states) * n_ops and ax.get_xlabel() == "DMA channel-cycles (%)"
    widths = np.array([p.get_width() for p in ax.patches]).reshape(len(states), n_ops).sum(axis=0)
    assert np.allclose(widths, 100)  # every op's states add up


def test_gemm_run_sits_under_the_roofline(runs):
    fig = plot(runs["gemm"], arch=NPU2)
    ax = fig.axes[0]
    point = ax.lines[-1]
    assert point.get_label() == "this run" and ax.get_xscale() == "log"
    assert point.get_ydata()[0] <= runs["gemm"]["peak_ops_per_s"]


def test_sweeps_give_lines_heatmaps_and_the_kv_crossover():
    ds = _sweep()
    fig = plot(ds, "sweep", "seconds", "context", "batch")
    assert len(fig.axes[0].lines) == 2 and fig.axes[0].get_xlabel() == "context (tokens)"
    assert fig.axes[0].get_ylabel() == "seconds (s)"
    fig = plot(ds, "sweep", "seconds", "context", "batch", heatmap=True)
    assert fig.axes[0].images and len(fig.axes) == 2  # the map and its colour bar
    fig = plot(ds)  # default for a store with kv and weight bytes over context
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert labels[:2] == ["weights", "KV cache"] and labels[2].startswith("KV > weights at ")
    # where KV overtakes the weights, interpolated between 16,384 and 65,536; not the grid point past it
    from fastsim.figures import kv_crossover

    x = fig.axes[0].lines[2].get_xdata()[0]
    assert 16384 < x < 65536 and x == kv_crossover(ds.context.values, ds.kv_bytes.values, ds.weight_bytes.values)


def test_systolic_mismatch_histogram_and_cli_writes_svg(tmp_path, runs):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "bench" / "scalesim"
    r = CliRunner().invoke(main, ["systolic", "-c", str(root / "mesh32_os.cfg"), "-t",
                                  str(root / "resnet50_first4.csv"), "--json"])
    run = json.loads(r.output)
    fig = plot(run)
    assert len(fig.axes[0].patches) == len(run["layers"][0]["tile_mismatch"])
    (tmp_path / "run.json").write_text(json.dumps(runs["llm"]))
    r = CliRunner().invoke(main, ["plot", str(tmp_path / "run.json"), "--out", str(tmp_path / "f.svg")])
    assert r.exit_code == 0 and (tmp_path / "f.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(ConfigError, match="kind"):
        plot(run, "roofline")


def test_trace_gives_occupancy_of_every_track_that_adds_up_to_its_slices(tmp_path):
    from fastsim.figures import occupancy

    for raw in ([], ["--trace-raw"]):
        path = tmp_path / f"t{len(raw)}.json"
        # npu1's 256^3 design repeats slices at a constant period (summarized); npu2's no longer does
        r = CliRunner().invoke(main, ["run", "--arch", "npu1", "--trace", str(path), *raw, "gemm", "--m", "256",
                                      "--k", "256", "--n", "256"])
        assert r.exit_code == 0, r.output
        trace = json.loads(path.read_text())
        tracks, edges, share = occupancy(trace, bins=50)
        slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        busy = sum(e["args"].get("busy_cycles", e["args"]["end_cycle"] - e["args"]["start_cycle"]) for e in slices)
        assert share.shape == (len(tracks), 50) and 0 <= share.min() and share.max() <= 1 + 1e-9
        assert np.isclose((share * (edges[1] - edges[0])).sum(), busy)  # no busy cycle lost or doubled
        assert tracks[0].startswith("core")  # cores first, then DMA channels
        if not raw:
            summary = [e for e in slices if e["args"].get("summarized")]
            assert summary and all(e["args"]["busy_cycles"] <= e["args"]["end_cycle"] - e["args"]["start_cycle"]
                                   for e in summary)
        fig = plot(trace)
        ax = fig.axes[0]
        assert ax.get_xlabel() == "cycle" and fig.axes[1].get_ylabel() == "busy (%)"
        assert ax.images[0].get_array().shape == (len(tracks), 120)
