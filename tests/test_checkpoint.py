"""Bytes per weight measured from checkpoint headers (fastsim.llm.checkpoint), on small files
written here: exact numbers from the formats' closed forms."""
from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

from fastsim.errors import ConfigError
from fastsim.llm.checkpoint import SAFETENSORS_DTYPE_BITS, read_checkpoint, tensor_kind

H, V, FFN = 64, 32, 128  # hidden size, vocabulary, FFN size of the toy models


def write_safetensors(path, tensors, *, spans=None):
    """A safetensors file of zeros: ``tensors`` maps name -> (dtype, shape); ``spans`` overrides
    a tensor's data_offsets."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        n = math.prod(shape) * SAFETENSORS_DTYPE_BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    for name, span in (spans or {}).items():
        header[name]["data_offsets"] = span
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return path


def llama_layer(dtype="BF16", i=0):
    pre = f"model.layers.{i}"
    return {
        f"{pre}.input_layernorm.weight": (dtype, [H]),
        f"{pre}.self_attn.q_proj.weight": (dtype, [H, H]),
        f"{pre}.self_attn.k_proj.weight": (dtype, [H // 4, H]),
        f"{pre}.self_attn.v_proj.weight": (dtype, [H // 4, H]),
        f"{pre}.self_attn.o_proj.weight": (dtype, [H, H]),
        f"{pre}.post_attention_layernorm.weight": (dtype, [H]),
        f"{pre}.mlp.gate_proj.weight": (dtype, [FFN, H]),
        f"{pre}.mlp.up_proj.weight": (dtype, [FFN, H]),
        f"{pre}.mlp.down_proj.weight": (dtype, [H, FFN]),
    }


def gptq_linear(name, n_in, n_out, group, g_idx=False):
    """GPTQ int4 tensors of one linear layer (AutoGPTQ layout)."""
    t = {f"{name}.qweight": ("I32", [n_in // 8, n_out]), f"{name}.qzeros": ("I32", [n_in // group, n_out // 8]),
         f"{name}.scales": ("F16", [n_in // group, n_out])}
    if g_idx:
        t[f"{name}.g_idx"] = ("I32", [n_in])
    return t


def test_read_checkpoint__bf16_kinds(tmp_path):
    tensors = {"model.embed_tokens.weight": ("BF16", [V, H]), **llama_layer(), **llama_layer(i=1),
               "model.norm.weight": ("BF16", [H]), "lm_head.weight": ("BF16", [V, H])}
    ck = read_checkpoint(write_safetensors(tmp_path / "model.safetensors", tensors))
    attn, ffn = 2 * (2 * H * H + 2 * H * H // 4), 2 * 3 * H * FFN
    assert ck.params_by_kind == {"embedding": V * H, "lm_head": V * H, "attention": attn, "ffn": ffn,
                                 "norm": 5 * H}
    assert ck.bytes_by_kind == {k: 2 * n for k, n in ck.params_by_kind.items()}
    assert all(ck.bytes_per_weight(k) == 2.0 for k in ck.params_by_kind)
    assert set(ck.dtypes_by_kind.values()) == {("BF16",)}
    assert ck.path == str(tmp_path / "model.safetensors")


def test_read_checkpoint__matches_the_safetensors_writer(tmp_path):
    from safetensors.numpy import save_file

    arrays = {"model.embed_tokens.weight": np.zeros((V, H), np.float16),
              "model.layers.0.self_attn.q_proj.weight": np.zeros((H, H), np.int8),
              "model.layers.0.mlp.up_proj.weight": np.zeros((FFN, H), np.float32),
              "model.layers.0.input_layernorm.weight": np.zeros(H, np.float32)}
    save_file(arrays, str(tmp_path / "m.safetensors"))
    ck = read_checkpoint(tmp_path / "m.safetensors")
    assert ck.bytes_by_kind == {"embedding": V * H * 2, "attention": H * H, "ffn": FFN * H * 4, "norm": H * 4}
    assert ck.dtypes_by_kind["attention"] == ("I8",)
    assert ck.bytes_per_weight("attention") == 1.0


@pytest.mark.parametrize("group", [32, 128])
def test_read_checkpoint__gptq_int4_closed_form(tmp_path, group):
    tensors = {"model.embed_tokens.weight": ("F16", [V, H * 4]), "lm_head.weight": ("F16", [V, H * 4]),
               **gptq_linear("model.layers.0.mlp.up_proj", H * 4, FFN, group),
               **gptq_linear("model.layers.0.mlp.down_proj", FFN, H * 4, group),
               **gptq_linear("model.layers.0.self_attn.q_proj", H * 4, H * 4, group, g_idx=True)}
    ck = read_checkpoint(write_safetensors(tmp_path / "gptq.safetensors", tensors))
    # int4 weights, one f16 scale and one int4 zero per group of `group` weights
    assert ck.bytes_per_weight("ffn") == 0.5 + (2 + 0.5) / group
    assert ck.params_by_kind["ffn"] == 2 * H * 4 * FFN
    # g_idx: one int32 per input row, shared by the layer's H * 4 outputs
    assert ck.bytes_per_weight("attention") == 0.5 + (2 + 0.5) / group + 4 / (H * 4)
    assert ck.bytes_per_weight("embedding") == ck.bytes_per_weight("lm_head") == 2.0
    assert ck.dtypes_by_kind["ffn"] == ("F16", "I32")


def test_read_checkpoint__gptq_bits_from_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {"bits": 8, "quant_method": "gptq"}}))
    tensors = {"model.layers.0.mlp.up_proj.qweight": ("I32", [H // 4, FFN]),
               "model.layers.0.mlp.up_proj.scales": ("F16", [H // 64, FFN])}
    ck = read_checkpoint(write_safetensors(tmp_path / "model.safetensors", tensors))
    assert ck.params_by_kind == {"ffn": H * FFN}
    assert ck.bytes_per_weight("ffn") == 1.0 + 2 / 64


def test_read_checkpoint__gptq_bad_bits_in_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {"bits": 5}}))
    path = write_safetensors(tmp_path / "model.safetensors", gptq_linear("model.layers.0.mlp.up_proj", H, FFN, 32))
    with pytest.raises(ConfigError, match=r"config\.json: quantization_config\.bits = 5"):
        read_checkpoint(path)


def test_read_checkpoint__mxfp4_experts(tmp_path):
    experts, pre = 4, "model.layers.0"
    tensors = {f"{pre}.mlp.experts.gate_up_proj_blocks": ("U8", [experts, 2 * FFN, H // 32, 16]),
               f"{pre}.mlp.experts.gate_up_proj_scales": ("U8", [experts, 2 * FFN, H // 32]),
               f"{pre}.mlp.experts.down_proj_blocks": ("U8", [experts, H, FFN // 32, 16]),
               f"{pre}.mlp.experts.down_proj_scales": ("U8", [experts, H, FFN // 32]),
               f"{pre}.mlp.router.weight": ("BF16", [experts, H]), f"{pre}.mlp.router.bias": ("BF16", [experts]),
               f"{pre}.self_attn.sinks": ("BF16", [8]), f"{pre}.self_attn.q_proj.weight": ("BF16", [H, H])}
    ck = read_checkpoint(write_safetensors(tmp_path / "gpt-oss.safetensors", tensors))
    assert ck.params_by_kind["ffn"] == experts * 3 * FFN * H
    assert ck.bytes_per_weight("ffn") == 0.5 + 1 / 32  # 4-bit values, one E8M0 scale per 32
    assert ck.params_by_kind["router"] == experts * (H + 1)
    assert ck.params_by_kind["attention"] == H * H + 8
    assert "lm_head" not in ck.bytes_by_kind


def test_read_checkpoint__sharded_directory_with_index(tmp_path):
    first = {"model.embed_tokens.weight": ("BF16", [V, H]), **llama_layer()}
    second = {**llama_layer("F32", i=1), "model.norm.weight": ("F32", [H]), "lm_head.weight": ("F16", [V, H])}
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", first)
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", second)
    write_safetensors(tmp_path / "consolidated.safetensors", {**first, **second})  # not in the index: not read
    weight_map = {**{n: "model-00001-of-00002.safetensors" for n in first},
                  **{n: "model-00002-of-00002.safetensors" for n in second}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    ck = read_checkpoint(tmp_path)
    layer = (2 * H * H + 2 * H * H // 4) * 2, 3 * H * FFN
    assert ck.bytes_by_kind == {"embedding": V * H * 2, "lm_head": V * H * 2, "attention": layer[0] * 3 // 2 * 2,
                                "ffn": layer[1] * 6, "norm": 2 * H * 2 + 3 * H * 4}
    assert ck.dtypes_by_kind["attention"] == ("BF16", "F32")
    assert ck.bytes_per_weight("ffn") == 3.0


def test_read_checkpoint__sharded_directory_without_index(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", {"model.embed_tokens.weight": ("BF16", [V, H])})
    write_safetensors(tmp_path / "b.safetensors", llama_layer("F16"))
    ck = read_checkpoint(tmp_path)
    assert ck.params_by_kind["embedding"] == V * H and ck.bytes_per_weight("ffn") == 2.0


def test_read_checkpoint__index_names_a_missing_tensor(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", {"model.norm.weight": ("BF16", [H])})
    weight_map = {"model.norm.weight": "a.safetensors", "lm_head.weight": "a.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(ConfigError, match=r"tensor 'lm_head.weight' = 'absent'"):
        read_checkpoint(tmp_path)


def test_read_checkpoint__duplicate_tensor_across_shards(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", {"model.norm.weight": ("BF16", [H])})
    write_safetensors(tmp_path / "b.safetensors", {"model.norm.weight": ("BF16", [H])})
    with pytest.raises(ConfigError, match=r"b.safetensors: tensor 'model.norm.weight' = 'duplicate'"):
        read_checkpoint(tmp_path)


def test_read_checkpoint__tied_embeddings_have_no_lm_head(tmp_path):
    tensors = {"model.embed_tokens.weight": ("BF16", [V, H]), **llama_layer(), "model.norm.weight": ("BF16", [H])}
    ck = read_checkpoint(write_safetensors(tmp_path / "tied.safetensors", tensors))
    assert "lm_head" not in ck.bytes_by_kind and "lm_head" not in ck.params_by_kind
    with pytest.raises(ConfigError, match=r"no weights of this kind \(tied embeddings: use embedding\)"):
        ck.bytes_per_weight("lm_head")
    with pytest.raises(ConfigError, match=r"kind = 'mlp': must be one of embedding, lm_head"):
        ck.bytes_per_weight("mlp")


def test_read_checkpoint__vision_tensors_reported_apart(tmp_path):
    tensors = {"language_model.model.embed_tokens.weight": ("BF16", [V, H]),
               "language_model.model.layers.0.self_attn.q_norm.weight": ("BF16", [16]),
               "vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight": ("F32", [H, H]),
               "multi_modal_projector.mm_input_projection_weight": ("F32", [H, H])}
    ck = read_checkpoint(write_safetensors(tmp_path / "gemma3.safetensors", tensors))
    assert ck.params_by_kind == {"embedding": V * H, "norm": 16, "vision": 2 * H * H}
    assert ck.bytes_per_weight("vision") == 4.0


def write_gguf(path, tensors):
    """A GGUF file: ``tensors`` maps name -> (GGML type name, rows, columns)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFWriter

    w = GGUFWriter(str(path), "llama")
    for name, (qtype, rows, cols) in tensors.items():
        q = GGMLQuantizationType[qtype]
        block, block_bytes = GGML_QUANT_SIZES[q]
        raw = np.zeros((rows, cols // block * block_bytes), np.uint8)
        w.add_tensor(name, raw, raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_read_checkpoint__gguf_block_sizes(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", {
        "token_embd.weight": ("Q8_0", V, H), "output.weight": ("Q8_0", V, H), "output_norm.weight": ("F32", 1, H),
        "rope_freqs.weight": ("F32", 1, 32), "blk.0.attn_norm.weight": ("F32", 1, H),
        "blk.0.attn_q.weight": ("F16", H, H), "blk.0.attn_output.weight": ("F16", H, H),
        "blk.0.ffn_gate_inp.weight": ("F32", 4, H), "blk.0.ffn_up_exps.weight": ("Q4_0", 4 * FFN, H),
        "blk.0.ffn_down_shexp.weight": ("Q4_0", H, FFN)})
    ck = read_checkpoint(path)
    assert ck.bytes_per_weight("embedding") == ck.bytes_per_weight("lm_head") == 34 / 32
    assert ck.bytes_per_weight("ffn") == 18 / 32
    assert ck.bytes_per_weight("attention") == 2.0
    assert ck.bytes_per_weight("norm") == ck.bytes_per_weight("router") == 4.0
    assert ck.params_by_kind == {"embedding": V * H, "lm_head": V * H, "attention": 2 * H * H,
                                 "ffn": 5 * FFN * H, "router": 4 * H, "norm": 2 * H + 32}
    assert ck.dtypes_by_kind["ffn"] == ("Q4_0",) and ck.dtypes_by_kind["norm"] == ("F32",)


@pytest.mark.parametrize("name, kind", [
    ("model.layers.3.self_attn.qkv_proj.weight", "attention"),  # phi3
    ("model.layers.3.mlp.gate_up_proj.weight", "ffn"),
    ("model.layers.3.block_sparse_moe.experts.7.w2.weight", "ffn"),  # mixtral
    ("model.layers.3.block_sparse_moe.gate.weight", "router"),
    ("model.layers.3.mlp.experts.5.down_proj.weight", "ffn"),  # qwen moe
    ("model.layers.3.mlp.shared_expert.up_proj.weight", "ffn"),
    ("model.layers.3.mlp.gate.weight", "router"),
    ("model.layers.3.mlp.shared_expert_gate.weight", "router"),
    ("model.layers.3.mlp.experts.gate_up_proj_bias", "ffn"),  # gpt-oss
    ("model.layers.3.self_attn.rotary_emb.inv_freq", "norm"),
    ("model.language_model.layers.0.pre_feedforward_layernorm.weight", "norm"),  # gemma3
    ("bert.embeddings.word_embeddings.weight", "embedding"),
    ("bert.embeddings.token_type_embeddings.weight", "embedding"),
    ("bert.embeddings.LayerNorm.bias", "norm"),
    ("bert.encoder.layer.0.attention.self.key.weight", "attention"),
    ("bert.encoder.layer.0.attention.output.dense.weight", "attention"),
    ("bert.encoder.layer.0.attention.output.LayerNorm.weight", "norm"),
    ("bert.encoder.layer.0.intermediate.dense.weight", "ffn"),
    ("bert.encoder.layer.0.output.dense.weight", "ffn"),
    ("bert.pooler.dense.weight", "ffn"),
    ("cls.predictions.decoder.weight", "lm_head"),
    ("blk.9.attn_qkv.weight", "attention"), ("blk.9.attn_k_norm.weight", "norm"),
    ("blk.9.attn_sinks.weight", "attention"), ("blk.9.post_ffw_norm.weight", "norm"),
    ("blk.9.post_attention_norm.weight", "norm"), ("blk.9.ffn_gate_exps.weight", "ffn"),
    ("blk.9.ffn_gate_inp_shexp.weight", "router"), ("blk.9.ffn_norm.weight", "norm"),
    ("v.blk.0.attn_q.weight", "vision"), ("mm.0.weight", "vision"),
    ("model.layers.3.frobnicator.weight", None), ("transformer.h.0.c_fc.weight", None),
])
def test_tensor_kind__names(name, kind):
    assert tensor_kind(name) == kind


def test_read_checkpoint__truncated_header(tmp_path):
    (tmp_path / "short.safetensors").write_bytes(b"\x10\x00\x00")
    with pytest.raises(ConfigError, match=r"short.safetensors: header size"):
        read_checkpoint(tmp_path / "short.safetensors")
    (tmp_path / "cut.safetensors").write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(ConfigError, match=r"cut.safetensors: header size = 1000: must be at most 2 bytes"):
        read_checkpoint(tmp_path / "cut.safetensors")


def test_read_checkpoint__header_not_json(tmp_path):
    raw = b"{not json at all"
    (tmp_path / "bad.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    with pytest.raises(ConfigError, match=r"bad.safetensors: header = .*must be UTF-8 JSON"):
        read_checkpoint(tmp_path / "bad.safetensors")


def test_read_checkpoint__offsets_do_not_match_shape(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"model.norm.weight": ("BF16", [H]),
                                                          "lm_head.weight": ("BF16", [V, H])},
                             spans={"model.norm.weight": [0, 100]})
    with pytest.raises(ConfigError, match=r"tensor 'model.norm.weight' data_offsets = \[0, 100\]: must span shape "
                                          r"\[64\] x BF16 = 128 bytes"):
        read_checkpoint(path)


def test_read_checkpoint__bad_entries_all_reported(tmp_path):
    header = {"a.weight": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 2]},
              "b.weight": {"dtype": "F16", "shape": [-1], "data_offsets": [0, 2]},
              "c.weight": {"dtype": "F16", "shape": [1], "data_offsets": [0, 99]}, "d.weight": 7}
    raw = json.dumps(header).encode()
    (tmp_path / "m.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(2))
    with pytest.raises(ConfigError) as e:
        read_checkpoint(tmp_path / "m.safetensors")
    assert len(e.value.problems) == 4
    assert "tensor 'a.weight' dtype = 'Q9': must be one of BOOL" in str(e.value)


def test_read_checkpoint__unknown_tensor_names(tmp_path):
    tensors = {f"model.layers.0.mystery_{i}.weight": ("BF16", [4]) for i in range(12)}
    path = write_safetensors(tmp_path / "m.safetensors", {"model.norm.weight": ("BF16", [H]), **tensors})
    with pytest.raises(ConfigError) as e:
        read_checkpoint(path)
    assert len(e.value.problems) == 11
    assert "m.safetensors: tensor name = 'model.layers.0.mystery_0.weight': matches no kind rule" in str(e.value)
    assert "unrecognised tensor names = 12" in str(e.value)


@pytest.mark.parametrize("tensors, message", [
    ({"model.layers.0.mlp.up_proj.weight": ("U8", [FFN * H // 2])}, r"tensor 'model.layers.0.mlp.up_proj.weight' "
                                                                    r"dtype = 'U8': packed or non-weight storage"),
    ({"model.layers.0.mlp.up_proj.weight.absmax": ("F32", [8])}, r"up_proj.weight.absmax' dtype = 'F32': bitsandbytes"),
    ({"model.layers.0.mlp.up_proj.weight_packed": ("I32", [FFN, H // 8])}, r"weight_packed' dtype = 'I32'"),
    ({"model.layers.0.mlp.up_proj.qweight": ("F16", [H, FFN])}, r"qweight' dtype = 'F16': must be I32"),
    ({"model.layers.0.mlp.experts.down_proj_blocks": ("I8", [4, 16])}, r"down_proj_blocks' dtype = 'I8': must be U8"),
])
def test_read_checkpoint__unknown_packed_dtype(tmp_path, tensors, message):
    with pytest.raises(ConfigError, match=message):
        read_checkpoint(write_safetensors(tmp_path / "q.safetensors", tensors))


def test_read_checkpoint__bad_gguf(tmp_path):
    (tmp_path / "magic.gguf").write_bytes(b"GGML" + bytes(60))
    with pytest.raises(ConfigError, match=r"magic.gguf: magic = b'GGML': must be b'GGUF'"):
        read_checkpoint(tmp_path / "magic.gguf")
    good = write_gguf(tmp_path / "good.gguf", {"token_embd.weight": ("Q8_0", V, H)}).read_bytes()
    (tmp_path / "cut.gguf").write_bytes(good[:40])
    with pytest.raises(ConfigError, match=r"cut.gguf = 'unreadable': must be a valid GGUF file"):
        read_checkpoint(tmp_path / "cut.gguf")
    write_gguf(tmp_path / "odd.gguf", {"blk.0.attn_q.weight": ("F16", H, H), "weird.weight": ("F16", 1, H)})
    with pytest.raises(ConfigError, match=r"odd.gguf: tensor name = 'weird.weight'"):
        read_checkpoint(tmp_path / "odd.gguf")


def test_read_checkpoint__bad_paths(tmp_path):
    with pytest.raises(ConfigError, match="no such file or directory"):
        read_checkpoint(tmp_path / "absent.safetensors")
    (tmp_path / "m.bin").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"suffix '.bin' must be .safetensors or .gguf"):
        read_checkpoint(tmp_path / "m.bin")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no shards"):
        read_checkpoint(tmp_path / "empty")
    with pytest.raises(ConfigError, match=r"checkpoint = 3: must be a path"):
        read_checkpoint(3)
