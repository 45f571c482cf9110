"""The CLI of the model families: ``fastsim models``, ``run llm`` on an encoder, per-tensor dtypes,
a checkpoint's measured bytes per weight, and mixture-of-experts routing (tiny configs and short
contexts, so the whole file runs in seconds)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import save_file

from fastsim.cli import main
from fastsim.llm.presets import MODELS, get_model

TINY_LLAMA = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512, "max_position_embeddings": 4096}
TINY_MIXTRAL = {**TINY_LLAMA, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}


def run(*args) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def run_json(*args) -> dict:
    code, out = run("run", "--json", "llm", *args)
    assert code == 0, out
    return json.loads(out)


def write_config(folder, cfg) -> str:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return str(folder / "config.json")


def llama_tensors(cfg, layers=None, dtypes=None) -> dict[str, np.ndarray]:
    """Zero tensors of a Hugging Face llama checkpoint of ``cfg`` (``dtypes``: numpy dtype per kind)."""
    h, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    d = {"embedding": np.float16, "lm_head": np.float16, "attention": np.float32, "ffn": np.int8,
         "norm": np.float16, **(dtypes or {})}
    out = {"model.embed_tokens.weight": np.zeros((v, h), d["embedding"]),
           "model.norm.weight": np.zeros(h, d["norm"]), "lm_head.weight": np.zeros((v, h), d["lm_head"])}
    for i in range(cfg["num_hidden_layers"] if layers is None else layers):
        pre = f"model.layers.{i}"
        for name, shape in (("self_attn.q_proj", (h, h)), ("self_attn.k_proj", (kv, h)),
                            ("self_attn.v_proj", (kv, h)), ("self_attn.o_proj", (h, h))):
            out[f"{pre}.{name}.weight"] = np.zeros(shape, d["attention"])
        for name, shape in (("mlp.gate_proj", (f, h)), ("mlp.up_proj", (f, h)), ("mlp.down_proj", (h, f))):
            out[f"{pre}.{name}.weight"] = np.zeros(shape, d["ffn"])
        for name in ("input_layernorm", "post_attention_layernorm"):
            out[f"{pre}.{name}.weight"] = np.zeros(h, d["norm"])
    return out


def test_models__lists_every_preset():
    code, out = run("models")
    assert code == 0, out
    for name in MODELS:
        assert name in out
    rows = json.loads(run("models", "--json")[1])
    assert [r["name"] for r in rows] == list(MODELS)
    by_name = {r["name"]: r for r in rows}
    assert by_name["mixtral-8x7b"]["experts"] == "8, 2 per token"
    assert by_name["gemma-3-1b"]["sliding_window"] == "512 on 22 of 26 layers"
    assert by_name["bert-base"]["kind"] == "encoder" and by_name["llama-3.2-1b"]["sliding_window"] == "none"


def test_run_llm__encoder_encodes_and_refuses_decode_in_one_line():
    out = run_json("--model", "bert-base", "--regime", "encode", "--prompt", "64")
    assert out["regime"] == "encode" and out["family"] == "bert" and out["kv_bytes"] == 0
    code, text = run("run", "llm", "--model", "bert-base", "--regime", "encode", "--prompt", "64")
    assert code == 0 and "encode of 64 tokens" in text and "bert, 109.5 M params" in text
    code, text = run("run", "llm", "--model", "bert-base", "--context", "256")
    assert code == 2 and len(text.strip().splitlines()) == 1 and "encoder" in text and "encode" in text
    code, text = run("run", "llm", "--model", "llama-3.2-1b", "--regime", "encode", "--prompt", "32")
    assert code == 2 and len(text.strip().splitlines()) == 1 and "causal decoder" in text


def test_run_llm__tensor_dtype_widens_the_lm_head_by_the_closed_form():
    m = get_model("llama-3.1-8b")
    args = ("--model", "llama-3.1-8b", "--context", "256")
    base = run_json(*args)["weight_bytes_by_kind"]
    wide = run_json(*args, "--tensor-dtype", "lm_head=bf16")["weight_bytes_by_kind"]
    # int4 with one bf16 scale per 128 weights -> bf16
    assert wide["lm_head"] - base["lm_head"] == pytest.approx(m.vocab_size * m.hidden_size * (2 - 0.5 - 2 / 128),
                                                              rel=1e-3)
    assert wide["ffn"] == base["ffn"]


def test_run_llm__tensor_dtype_refuses_bad_kinds_dtypes_and_kinds_the_model_lacks():
    code, out = run("run", "llm", "--tensor-dtype", "head=bf16", "--tensor-dtype", "ffn=int3")
    assert code == 2 and "lm_head" in out and "fp8" in out and "head" in out and "int3" in out
    code, out = run("run", "llm", "--model", "llama-3.2-1b", "--tensor-dtype", "lm_head=bf16")  # tied head
    assert code == 2 and "tied" in out and "embedding" in out
    code, out = run("run", "llm", "--tensor-dtype", "router=bf16")
    assert code == 2 and "router" in out


def test_run_llm__checkpoint_gives_the_files_bytes_per_weight(tmp_path):
    config = write_config(tmp_path / "tiny-llama", TINY_LLAMA)
    save_file(llama_tensors(TINY_LLAMA), str(tmp_path / "model.safetensors"))
    got = run_json("--model", config, "--context", "256", "--checkpoint", str(tmp_path / "model.safetensors"))
    have = get_model(config).weights_by_kind()
    per_weight = {"lm_head": 2, "attention": 4, "ffn": 1}  # F16, F32, I8 as written
    for kind, b in per_weight.items():
        assert got["weight_bytes_by_kind"][kind] == pytest.approx(have[kind] * b, rel=1e-9), kind


def test_run_llm__checkpoint_of_another_model_or_against_tensor_dtype_is_refused(tmp_path):
    config = write_config(tmp_path / "tiny-llama", TINY_LLAMA)
    save_file(llama_tensors(TINY_LLAMA, layers=1), str(tmp_path / "one-layer.safetensors"))
    code, out = run("run", "llm", "--model", config, "--checkpoint", str(tmp_path / "one-layer.safetensors"))
    assert code == 2 and "attention weights" in out and "not the same model?" in out
    headless = {k: v for k, v in llama_tensors(TINY_LLAMA).items() if not k.startswith("lm_head")}
    save_file(headless, str(tmp_path / "headless.safetensors"))
    code, out = run("run", "llm", "--model", config, "--checkpoint", str(tmp_path / "headless.safetensors"))
    assert code == 2 and "lm_head" in out and "not the same model?" in out
    save_file(llama_tensors(TINY_LLAMA), str(tmp_path / "model.safetensors"))
    code, out = run("run", "llm", "--model", config, "--checkpoint", str(tmp_path / "model.safetensors"),
                    "--tensor-dtype", "ffn=int8")
    assert code == 2 and "which wins would be a guess" in out


def test_run_llm__routing_options_on_a_dense_model_are_refused_by_name():
    code, out = run("run", "llm", "--routing", "sampled")
    assert code == 2 and "--routing applies to mixture-of-experts models; llama-3.2-1b has none" in out
    code, out = run("run", "llm", "--routing-samples", "3")
    assert code == 2 and "--routing-samples applies" in out


def test_run_llm__routing_samples_report_ordered_quantiles_and_repeat_exactly(tmp_path):
    config = write_config(tmp_path / "tiny-mixtral", TINY_MIXTRAL)
    args = ("--model", config, "--context", "256", "--batch", "4", "--routing-samples", "3", "--routing-seed", "7")
    first = run("run", "--json", "llm", *args)
    assert first[0] == 0, first[1]
    spread = json.loads(first[1])["routing_spread"]
    assert spread["samples"] == 3 and len(spread["seconds_per_sample"]) == 3 and spread["seeds"] == [7, 9]
    assert spread["step_s"] == sorted(spread["step_s"])
    assert spread["tokens_per_s"] == sorted(spread["tokens_per_s"], reverse=True)
    assert min(spread["seconds_per_sample"]) <= spread["step_s"][0] <= max(spread["seconds_per_sample"])
    assert run("run", "--json", "llm", *args) == first
    code, out = run("run", "llm", *args)
    assert code == 0 and "routing spread" in out and "mixtral" in out
    code, out = run("run", "llm", "--model", config, "--regime", "prefill", "--prompt", "32", "--routing-samples", "3")
    assert code == 2 and "decode" in out
