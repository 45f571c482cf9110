"""Sweeps over model families: per-point model facts (family, params, KV cache), sliding windows,
routing and per-kind precision as sweep parameters, encode points, and the kv figure's
interpolated crossover. Tiny config.json models keep it fast."""
import json
import math

import numpy as np
import pytest
import xarray as xr

from fastsim import cache
from fastsim.figures import kv_crossover, kv_crossovers
from fastsim.llm.routing import Routing
from fastsim.plot import plot
from fastsim.sweeping import parse_spec, sweep
from fastsim.sweeping.points import llm_study
from fastsim.sweeping.store import open_store

TINY = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 512, "vocab_size": 512}
WINDOW = 256
CONTEXTS = [128, 256, 512, 1024]
# one sequence's K and V per token: 2 (K, V) x layers x KV heads x head_dim x bf16 bytes
KV_PER_TOKEN = 2 * 2 * 2 * (256 // 4) * 2


def family_spec(models: dict) -> str:
    names = ", ".join(json.dumps(str(path)) for path in models.values())
    return f"""
[study]
kind = "llm"
[study.base]
regime = "decode"
[axes]
model = [{names}]
batch = [1, 2]
context = {CONTEXTS}
[run]
chunk_points = 4
outputs = ["seconds", "tokens_per_s", "weight_bytes", "kv_bytes", "kv_cache_bytes", "family", "params",
           "active_params", "sliding_window", "bound_by"]
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two tiny models in folders named after them: a global-attention llama and a mistral whose
    every layer slides over WINDOW tokens."""
    root = tmp_path_factory.mktemp("families")
    models = {}
    for name, cfg in (("tiny-llama", {"model_type": "llama"}),
                      ("tiny-mistral", {"model_type": "mistral", "sliding_window": WINDOW})):
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps({**TINY, **cfg}))
        models[name] = root / name
    return root, models


@pytest.fixture(scope="module")
def store(tiny):
    root, models = tiny
    spec = parse_spec(family_spec(models), "families-test")
    return spec, sweep(spec, root / "families.zarr", workers=0, progress=False).load()


def test_llm_study__maps_routing_and_per_kind_precision():
    study = llm_study({"model": "mixtral-8x7b", "routing": "sampled", "routing_seed": 3, "ffn": "int8",
                       "embedding": "", "lm_head": "bf16", "weights": "int4"})
    assert study.routing == Routing("sampled", 3)
    p = study.precision
    assert (p.ffn, p.embedding, p.lm_head, p.weights, p.attention, p.router) == ("int8", None, "bf16", "int4", None, None)
    assert llm_study({"regime": "encode", "context": 128}).prompt == 128  # an encoder's context is its input


def test_families_sweep__one_store_with_the_family_of_every_point(store, tiny):
    spec, ds = store
    _, models = tiny
    assert dict(ds.sizes) == {"model": 2, "batch": 2, "context": 4}
    assert (ds.status.values == 0).all() and ds.done.values.all()
    assert ds.family.dtype.kind == "U" and ds.family.attrs["units"] == "1" and ds.family.attrs["description"]
    fam = ds.family.sel(model=str(models["tiny-llama"]))
    assert (fam.values == "llama").all()
    assert (ds.family.sel(model=str(models["tiny-mistral"])).values == "mistral").all()
    # segmenting by family: a boolean mask on the string output
    assert int((ds.family == "mistral").sum()) == 2 * len(CONTEXTS)
    assert (ds.params.values > 0).all() and (ds.params.values == ds.active_params.values).all()
    assert ds.params.attrs["units"] == "parameters" and ds.kv_cache_bytes.attrs["units"] == "bytes"
    assert list(ds.sliding_window.isel(batch=0, context=0).values) == [0, WINDOW]
    reopened = open_store(spec_store_path(tiny))  # and it reads back from zarr as the same strings
    assert reopened.family.values.tolist() == ds.family.values.tolist()


def spec_store_path(tiny):
    return tiny[0] / "families.zarr"


def test_families_sweep__sliding_window_kv_saturates_while_global_kv_grows_linearly(store, tiny):
    _, ds = store
    _, models = tiny
    ctx = np.array(CONTEXTS)
    glob = ds.sel(model=str(models["tiny-llama"]))
    slide = ds.sel(model=str(models["tiny-mistral"]))
    # one sequence's cache: exact, and capped at the window
    assert glob.kv_cache_bytes.isel(batch=0).values.tolist() == (ctx * KV_PER_TOKEN).tolist()
    assert slide.kv_cache_bytes.isel(batch=0).values.tolist() == (np.minimum(ctx, WINDOW) * KV_PER_TOKEN).tolist()
    for b in ds.batch.values:
        g, s = glob.kv_bytes.sel(batch=b).values, slide.kv_bytes.sel(batch=b).values
        # DDR KV bytes per step: the whole cache read, affine in context up to the padding of the
        # searched tiles (each context's search weighs its own control: 2,048 to 2,096 bytes a token)
        assert (g >= b * ctx * KV_PER_TOKEN).all()
        steps = np.diff(g) / np.diff(ctx)
        assert steps[0] > 0 and np.allclose(steps, steps[0], rtol=0.05)
        assert s[0] < s[1] and s[1] == s[2] == s[3]  # flat from the window on
        assert s[0] == g[0]  # below the window the two attend alike
    # twice the sequences, twice the cache read, up to the padding of each batch's searched tiles
    assert np.allclose(glob.kv_bytes.sel(batch=2), 2 * glob.kv_bytes.sel(batch=1), rtol=0.02)


def test_kv_crossover__interpolates_linearly_in_context_between_the_bracketing_points():
    """KV bytes grow linearly with context: linear interpolation is exact between grid points
    (in log2 of the context it put Llama-3.2-1B's crossover at 18,634 instead of 19,446)."""
    assert kv_crossover([1024, 2048, 4096], [100, 200, 400], [300, 300, 300]) == 3072.0
    assert kv_crossover([1024, 4096], [100, 500], 200) == 1792.0  # a quarter of the way from 1024 to 4096
    assert kv_crossover([1, 2, 4], [1, 3, 9], [3, 3, 3]) == 2.0  # equal at a grid point: that point
    assert kv_crossover([1, 2, 4, 8], [1, 2, 9, 16], [3, 3, 3, 3]) == pytest.approx(2 + 2 / 7, rel=1e-15)
    assert kv_crossover([1, 2, 4], [1, np.nan, 7], 3) == pytest.approx(2.0, rel=1e-15)  # failed point left out
    assert math.isnan(kv_crossover([1, 2, 4], [5, 6, 7], 3))  # above from the start: not inside the sweep
    assert math.isnan(kv_crossover([1, 2, 4], [1, 2, 2.5], 3))  # never above
    per_token, weights = 32768.0, 637.2e6  # Llama-3.2-1B: the closed form's crossover, from a coarse grid
    grid = np.array([16384, 32768])
    assert kv_crossover(grid, per_token * grid, weights) == pytest.approx(weights / per_token, rel=1e-12)


def test_kv_figure__panels_per_batch_curves_per_model_and_the_interpolated_crossover(store, tiny):
    _, ds = store
    _, models = tiny
    crossings = kv_crossovers(ds)
    assert crossings.dims == ("model", "batch") and crossings.attrs["units"] == "tokens"
    glob = str(models["tiny-llama"])
    fig = plot(ds, "kv")
    assert len(fig.axes) == 2 and [a.get_title().split(":")[0] for a in fig.axes] == ["batch 1", "batch 2"]
    for ax, b in zip(fig.axes, ds.batch.values):
        lines = {line.get_label(): line for line in ax.lines}
        assert {"tiny-llama (llama)", "tiny-mistral (mistral, window 256)", "tiny-llama: weights",
                "tiny-mistral: weights", "tiny-mistral: sliding window"} <= set(lines)
        w = float(ds.weight_bytes.sel(model=glob, batch=b, context=CONTEXTS[0]))
        assert lines["tiny-llama: weights"].get_ydata()[0] == pytest.approx(w / 1e6)  # a horizontal line
        assert lines["tiny-mistral: sliding window"].get_xdata()[0] == WINDOW
        expected = kv_crossover(CONTEXTS, ds.kv_bytes.sel(model=glob, batch=b).values,
                                ds.weight_bytes.sel(model=glob, batch=b).values)
        assert float(crossings.sel(model=glob, batch=b)) == expected
        if math.isnan(expected):
            continue
        x = lines["tiny-llama: KV > weights"].get_xdata()[0]
        assert x == expected and x not in CONTEXTS  # interpolated, not the next grid point
        lo = max(c for c in CONTEXTS if c < x)
        kv = ds.kv_bytes.sel(model=glob, batch=b)
        assert float(kv.sel(context=lo)) <= w < float(kv.sel(context=min(c for c in CONTEXTS if c > x)))
    assert any(not math.isnan(float(crossings.sel(model=glob, batch=b))) for b in ds.batch.values)
    one = plot(ds, "kv", batch=2)
    assert len(one.axes) == 1 and one.axes[0].get_title().startswith("batch 2")


def test_kv_figure__old_single_model_layout_marks_the_interpolated_crossover():
    ctx = np.array([1024, 4096, 16384, 65536])
    kv = xr.DataArray(ctx * 32768.0, dims="context", coords={"context": ctx})
    fig = plot(xr.Dataset({"kv_bytes": kv, "weight_bytes": kv * 0 + 6.4e8}), "kv")
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert labels[:2] == ["weights", "KV cache"] and labels[2].startswith("KV > weights at ")
    x = fig.axes[0].lines[2].get_xdata()[0]
    assert x == kv_crossover(ctx, kv.values, 6.4e8) and 16384 < x < 65536  # not the grid point past it


def test_kv_figure__kv_growth_layout_without_model_facts_reads_them_from_the_presets():
    """sweeps/kv_growth.toml: context x regime x model, no family or sliding_window output."""
    ctx = np.array([1024, 4096, 16384])
    models = ["llama-3.2-1b", "gemma-3-1b"]
    kv = xr.DataArray(np.ones((3, 2, 2)) * ctx[:, None, None] * 1e4, dims=("context", "regime", "model"),
                      coords={"context": ctx, "regime": ["prefill", "decode"], "model": models})
    ds = xr.Dataset({"kv_bytes": kv, "weight_bytes": kv * 0 + 1e8, "status": kv.astype(np.int8) * 0})
    fig = plot(ds)  # the default kind for a store with kv and weight bytes over context
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert "llama-3.2-1b (llama)" in labels and "gemma-3-1b (gemma3, window 512)" in labels
    assert fig.texts[0].get_text() == "regime = decode"
    # between 4096 and 16384, where KV (1e4 bytes per token) passes 1e8 bytes: at 10,000 exactly
    expected = 4096 + (16384 - 4096) * (1e8 - 4.096e7) / (1.6384e8 - 4.096e7)
    assert float(kv_crossovers(ds).sel(model="llama-3.2-1b")) == pytest.approx(expected, rel=1e-12)


def test_families_sweep__same_spec_twice_gives_identical_stores(store, tiny, tmp_path):
    spec, ds = store
    cache.clear()  # recomputed, not read back from the engine's result cache
    again = sweep(spec, tmp_path / "again.zarr", workers=0, progress=False).load()
    xr.testing.assert_identical(ds, again)


def test_families_sweep__encode_on_an_encoder_runs_and_decode_on_it_fails_alone(tmp_path):
    spec = parse_spec("""
[study]
kind = "llm"
[study.base]
model = "bert-base"
batch = 1
[[points]]
regime = "encode"
context = 128
[[points]]
regime = "decode"
context = 128
[run]
outputs = ["seconds", "tokens_per_s", "kv_bytes", "kv_cache_bytes", "family", "params"]
""", "bert-test")
    ds = sweep(spec, tmp_path / "bert.zarr", workers=0, progress=False).load()
    encode, decode = ds.isel(point=0), ds.isel(point=1)
    assert int(encode.status) == 0 and float(encode.seconds) > 0 and encode.family.item() == "bert"
    assert float(encode.kv_bytes) == 0 and float(encode.kv_cache_bytes) == 0 and int(encode.params) > 1e8
    assert float(encode.tokens_per_s) == pytest.approx(128 / float(encode.seconds), rel=1e-9)
    assert int(decode.status) == 1 and "encoder" in decode.message.item() and "allowed encode" in decode.message.item()
    assert decode.family.item() == "" and math.isnan(float(decode.seconds)) and int(decode.params) == -1


def test_families_sweep__routing_and_per_kind_dtypes_as_axes(tmp_path):
    moe = tmp_path / "tiny-moe"
    moe.mkdir()
    (moe / "config.json").write_text(json.dumps({**TINY, "model_type": "mixtral", "num_local_experts": 8,
                                                 "num_experts_per_tok": 2}))
    spec = parse_spec(f"""
[study]
kind = "llm"
[study.base]
model = {json.dumps(str(moe))}
context = 256
batch = 2
[axes]
routing = ["expected", "sampled", "nearest"]
ffn = ["", "int8"]
[run]
outputs = ["weight_bytes", "params", "active_params", "family"]
""", "moe-test")
    ds = sweep(spec, tmp_path / "moe.zarr", workers=0, progress=False).load()
    ok = ds.sel(routing=["expected", "sampled"])
    assert (ok.status.values == 0).all() and (ok.family.values == "mixtral").all()
    assert (ok.active_params < ok.params).all()
    assert (ok.weight_bytes.sel(ffn="int8") > ok.weight_bytes.sel(ffn="")).all()  # int8 experts: more bytes
    bad = ds.sel(routing="nearest")
    assert (bad.status.values == 1).all() and all("mode" in str(m) for m in bad.message.values)
