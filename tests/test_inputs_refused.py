"""Issue 49, "every input used or refused": a model's quantization_config, an encoder's --kv,
compression ratios measured on another model; and "labels say what they measure"."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy
from fastsim.llm.families import from_dict
from fastsim.llm.presets import MODELS

TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512, "torch_dtype": "bfloat16"}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def quantized(tmp_path, **qc):
    """A config.json of TINY with this quantization_config, in its own folder."""
    folder = tmp_path / "_".join(f"{k}{v}" for k, v in qc.items() if not isinstance(v, list))
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**TINY, "quantization_config": qc}))
    return folder / "config.json"


# ---- quantization_config ----------------------------------------------------------------------------

@pytest.mark.parametrize("qc, weights, group", [
    ({"quant_method": "gptq", "bits": 4, "group_size": 64}, "int4", 64),
    ({"quant_method": "gptq", "bits": 4, "group_size": -1}, "int4", 256),  # one scale per output channel
    ({"quant_method": "awq", "bits": 4, "group_size": 32}, "int4", 32),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "int8", 128),
    ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8", 128),
    ({"quant_method": "mxfp4"}, "mxfp4", 128),
])
def test_quantization_config__is_the_precision_a_study_simulates(qc, weights, group):
    model = from_dict({**TINY, "quantization_config": qc}, "q")
    study = LlmStudy(model=model)
    assert (study.precision.weights, study.precision.group_size) == (weights, group)


def test_quantization_config__modules_not_converted_keep_their_kind_at_torch_dtype():
    qc = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head", "model.embed_tokens"]}
    precision = LlmStudy(model=from_dict({**TINY, "quantization_config": qc}, "q")).precision
    assert (precision.weights, precision.attention, precision.lm_head, precision.embedding) == ("mxfp4", "bf16", "bf16", "bf16")
    assert precision.ffn is None


def test_quantization_config__gpt_oss_preset_is_mxfp4_experts_and_bf16_rest():
    precision = LlmStudy(model="gpt-oss-20b").precision
    assert precision.weights == "mxfp4" and precision.dtype_of("ffn") == "mxfp4"
    assert {precision.dtype_of(k) for k in ("attention", "router", "embedding", "lm_head")} == {"bf16"}
    assert LlmStudy(model="gpt-oss-20b", weights="int4").precision.dtype_of("attention") == "int4"  # a what-if


@pytest.mark.parametrize("qc, named", [
    ({"quant_method": "gptq", "bits": 3}, "quant_method='gptq', bits=3"),
    ({"quant_method": "awq", "bits": 8}, "quant_method='awq', bits=8"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "quant_method='bitsandbytes', bits=None"),
    ({"quant_method": "gptq", "bits": 4, "modules_to_not_convert": ["model.layers.0.mlp"]}, "model.layers.0.mlp"),
])
def test_quantization_config__a_format_fastsim_does_not_model_is_refused_by_name(qc, named):
    with pytest.raises(ConfigError) as e:
        from_dict({**TINY, "quantization_config": qc}, "q")
    assert len(e.value.problems) == 1 and named in e.value.problems[0]
    assert e.value.problems[0].startswith("quantization_config")


def test_run_llm__an_8bit_gptq_config_runs_int8_unless_weights_is_given(tmp_path):
    path = quantized(tmp_path, quant_method="gptq", bits=8, group_size=128)
    stored = json.loads(invoke("run", "--json", "llm", "--model", path, "--context", 64).stdout)
    int8 = json.loads(invoke("run", "--json", "llm", "--model", TINY_PATH(tmp_path), "--context", 64,
                             "--weights", "int8").stdout)
    assert stored["weight_bytes"] == int8["weight_bytes"]
    assert "quantization_config: gptq 8-bit -> int8" in stored["weights_from"]
    r = invoke("run", "--json", "llm", "--model", path, "--context", 64, "--weights", "int4")
    what_if = json.loads(r.stdout)
    assert what_if["weight_bytes"] < stored["weight_bytes"]  # the given --weights wins
    assert what_if["weights_from"].startswith("--weights int4, not config.json's quantization_config")


def TINY_PATH(tmp_path):
    (tmp_path / "plain").mkdir(exist_ok=True)
    path = tmp_path / "plain" / "config.json"
    path.write_text(json.dumps(TINY))
    return path


# ---- an encoder's inputs ----------------------------------------------------------------------------

def test_run_llm__kv_on_an_encoder_is_refused_naming_kv():
    r = invoke("run", "llm", "--model", "bert-base", "--regime", "encode", "--prompt", 64, "--kv", "int8")
    assert r.exit_code == 2 and "--kv int8: bert-base is an encoder" in r.output and "no KV cache" in r.output
    with pytest.raises(ConfigError) as e:
        LlmStudy(model="bert-base", regime="encode", prompt=64, kv="int8").validate(MODELS["bert-base"])
    assert [p.split(":")[0] for p in e.value.problems] == ["kv = 'int8'"]


def test_run_llm__an_encoder_encodes_by_default_at_most_its_positions():
    r = invoke("run", "llm", "--model", "bert-base")
    assert r.exit_code == 0, r.output
    header = r.output.splitlines()[0]
    assert header.startswith("bert-base encode of 512 tokens") and "kv" not in header  # no cache to store
    r = invoke("run", "llm", "--model", "bert-base", "--context", 256)
    assert r.exit_code == 2 and "bert-base is an encoder: encode is its one regime" in r.output


def test_llm_study__a_decode_on_an_encoder_is_one_problem_not_also_its_context():
    with pytest.raises(ConfigError) as e:
        LlmStudy(model="bert-base").validate(MODELS["bert-base"])
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith("regime = 'decode'")


# ---- compression ratios measured on one model ---------------------------------------------------------

def test_run_llm__compression_measured_on_another_models_weights_is_refused(tmp_path):
    from fastsim.studies.compression import compression, load_run_ratios, run_ratios

    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    rng = np.random.default_rng(0)
    sparse = {name: rng.standard_normal(shape).astype(np.float32) * (rng.random(shape) < 0.3)
              for name, shape in (("q_proj.weight", (256, 256)), ("k_proj.weight", (128, 256)),
                                  ("up_proj.weight", (512, 256)), ("down_proj.weight", (256, 512)))}
    np.savez(folder / "weights.npz", **sparse)
    measured = tmp_path / "measured.json"
    measured.write_text(json.dumps(run_ratios(compression(folder / "weights.npz"))))
    assert json.loads(measured.read_text())["measured_on"]["model"] == "tiny"
    own = invoke("run", "--json", "llm", "--model", folder / "config.json", "--context", 64, "--weights", "bf16",
                 "--compression", measured)
    assert own.exit_code == 0, own.output
    r = invoke("run", "llm", "--model", "llama-3.2-1b", "--context", 64, "--weights", "bf16", "--compression", measured)
    assert r.exit_code == 2
    assert "measured_on.model = 'tiny'" in r.output and "not llama-3.2-1b's" in r.output
    assert "llama-3.2-1b has no weight of shape (128, 256)" in r.output
    untold = tmp_path / "untold.json"  # a file that does not say what it measured
    untold.write_text(json.dumps({k: v for k, v in json.loads(measured.read_text()).items() if k != "measured_on"}))
    with pytest.raises(ConfigError, match="measured_on = None: the file does not say which model"):
        load_run_ratios(untold, MODELS["llama-3.2-1b"])


# ---- labels say what they measure -----------------------------------------------------------------------

def test_run_gemm__an_unknown_dtype_lists_only_the_dtypes_a_run_accepts():
    r = invoke("run", "gemm", "--dtype", "fp8", "--m", 64, "--k", 64, "--n", 64)
    assert r.exit_code == 2 and "use --dtype bf16 or int8" in r.output
    assert "int4" not in r.output  # listed, then refused: int4 has no matmul datapath on npu2


def test_run_llm__labels_say_step_batch_traffic_and_a_pinned_fusion(tmp_path):
    r = invoke("run", "llm", "--model", TINY_PATH(tmp_path), "--context", 64, "--batch", 2, "--fusion", "none")
    assert r.exit_code == 0, r.output
    lines = {line.split()[0]: line for line in r.output.splitlines()[1:]}
    assert "ms/step" in lines["time"] and "tokens/s, batch 2 counted" in lines["time"]  # not ms/token
    assert any(line.startswith("  DDR weight traffic by kind: ffn ") for line in r.output.splitlines())
    assert lines["fusion"].strip() == "fusion          none  (pinned)"


def test_study_kv__an_8bit_gptq_config_runs_int8_unless_weights_is_given(tmp_path):
    """``fastsim study`` (and ``optimize``, through the same ``base_study``) simulate the model's
    stored precision when no --weights is given, and say so in the Dataset's attrs."""
    from fastsim.cli.common import base_study

    path = quantized(tmp_path, quant_method="gptq", bits=8, group_size=128)
    stored, int8 = (json.loads(invoke("study", "kv", "--model", model, "--context", 64, "--context", 128, "--json",
                                      *weights).stdout)
                    for model, weights in ((path, ()), (TINY_PATH(tmp_path), ("--weights", "int8"))))
    assert stored["attrs"]["weights"] == "int8"
    assert stored["data_vars"]["weight_bytes"]["data"] == int8["data_vars"]["weight_bytes"]["data"]
    assert base_study(str(path), None, "bf16", "bf16").precision.weights == "int8"
    what_if = base_study(str(path), "int4", "bf16", "bf16").precision  # a given --weights wins
    assert what_if == LlmStudy(model=str(path), weights="int4").precision and what_if.weights == "int4"


def test_study_compression__model_names_whose_ratios_they_are_and_a_model_of_other_shapes_is_refused(tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text(json.dumps(TINY))
    (tmp_path / "dump").mkdir()  # no config.json beside the weights: nothing names the model but --model
    rng = np.random.default_rng(0)
    weights = tmp_path / "dump" / "weights.npz"
    np.savez(weights, **{name: rng.standard_normal(shape).astype(np.float32) * (rng.random(shape) < 0.3)
                         for name, shape in (("q_proj.weight", (256, 256)), ("k_proj.weight", (128, 256)))})
    out = tmp_path / "measured.json"
    r = invoke("study", "compression", weights, "--model", tmp_path / "tiny" / "config.json", "--out", out)
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["measured_on"]["model"] == "tiny" and "measured on tiny's tensors" in r.output
    r = invoke("study", "compression", weights, "--model", "llama-3.2-1b", "--out", tmp_path / "other.json")
    assert r.exit_code == 2 and "llama-3.2-1b has no weight of shape (128, 256)" in r.output
    assert not (tmp_path / "other.json").exists()
    r = invoke("study", "compression", weights, "--out", tmp_path / "untold.json")
    assert r.exit_code == 0 and "no model named: give --model" in r.output
    assert json.loads((tmp_path / "untold.json").read_text())["measured_on"]["model"] == ""
