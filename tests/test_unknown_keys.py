"""Every TOML and JSON file fastsim reads from a user refuses an unknown key (a typo such as
``ddr_byte_per_s``, a misspelled table) by name, at every nesting level whose keys fastsim fixes,
and says what is allowed there (issue 49). Each test takes a valid minimal file of one format,
inserts a drawn key at a drawn level, and expects one ConfigError naming it.

Levels whose keys are the user's own names (op names under ``[decode.columns]``, kernel names under
``[kernels]``, dtypes under ``[arch.macs_per_cycle]``, tensor names of a safetensors header) are not
fuzzed here: any name is a valid key there."""
from __future__ import annotations

import copy
import json
import struct

import pytest
import tomli_w
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from fastsim.arch import load as load_arch
from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.llm.checkpoint import read_checkpoint
from fastsim.llm.families import from_hf_config
from fastsim.llm.model import Experts
from fastsim.llm.routing import read_histogram
from fastsim.mapping.overlay import load_as_built
from fastsim.mlir.kernels import load_kernel_costs
from fastsim.onnx import build_graph
from fastsim.studies.compression import load_run_ratios
from fastsim.sweeping.spec import parse_spec

FUZZ = settings(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _key(known: list[str]):
    """A typo of a key the level holds (one letter doubled or dropped) or an unrelated word."""
    def typo(args):
        word, i, drop = args
        i %= len(word)
        return word[:i] + word[i + 1:] if drop and len(word) > 2 else word[:i] + word[i] + word[i:]
    typos = st.tuples(st.sampled_from(known), st.integers(0, 40), st.booleans()).map(typo)
    return st.one_of(typos, st.from_regex(r"[a-z]{3,8}_[a-z]{3,8}", fullmatch=True))


def _levels(example: dict, levels: dict):
    """A drawn level (a path of keys into ``example``), then a key that level does not hold."""
    @st.composite
    def draw(draw_):
        path = draw_(st.sampled_from(sorted(levels)))
        table = example
        for k in path:
            table = table[k]
        key = draw_(_key(sorted(table) or ["value"]))
        return path, key
    return draw()


def _with(example: dict, path: tuple, key: str, value):
    doc = copy.deepcopy(example)
    table = doc
    for k in path:
        table = table[k]
    assume(key not in table and key not in ("base", "name"))
    table[key] = value
    return doc


def _refused(read, key: str, hint: str):
    """``read()`` raises one ConfigError that names ``key`` and says what is allowed (``hint``)."""
    with pytest.raises(ConfigError) as e:
        read()
    named = [p for p in e.value.problems if key in p]
    assert named, (key, e.value.problems)
    assert any(hint in p for p in named), (hint, named)


# ---- architecture TOML (--arch FILE) --------------------------------------------------------------

ARCH = {"arch": {"base": "npu2", "name": "wide12", "columns": 12, "ddr_bytes_per_s": 50e9,
                 "compute": {"memory_bytes": 65536}, "vector_cycles_per_elem": {"softmax": 4.0}}}
ARCH_LEVELS = {(): "arch", ("arch",): "ddr_bytes_per_s", ("arch", "compute"): "memory_bytes",
               ("arch", "vector_cycles_per_elem"): "softmax"}


@FUZZ
@given(_levels(ARCH, ARCH_LEVELS))
def test_arch_load__an_unknown_key_at_any_level_is_refused_by_name(tmp_path, drawn):
    path, key = drawn
    file = tmp_path / "arch.toml"
    file.write_text(tomli_w.dumps(_with(ARCH, path, key, 1)))
    _refused(lambda: load_arch(file), key, ARCH_LEVELS[path])


def test_arch_load__the_minimal_example_is_valid(tmp_path):
    file = tmp_path / "arch.toml"
    file.write_text(tomli_w.dumps(ARCH))
    assert load_arch(file).columns == 12


def test_cli_run__an_arch_typo_is_one_clean_line_and_exit_2(tmp_path):
    file = tmp_path / "arch.toml"
    arch = copy.deepcopy(ARCH)
    arch["arch"]["ddr_byte_per_s"] = 50e9  # a typo of ddr_bytes_per_s
    file.write_text(tomli_w.dumps(arch))
    r = CliRunner().invoke(main, ["run", "--arch", str(file), "gemm", "--m", "64", "--k", "64", "--n", "64"])
    assert r.exit_code == 2 and "ddr_byte_per_s" in r.output and "Traceback" not in r.output


# ---- overlay / as-built TOML (--overlay, examples/as_built/) --------------------------------------

OVERLAY = {"model": {"weights": "int4", "tensors": {"lm_head": "bf16"}, "bytes_per_weight": {"ffn": 0.6875}},
           "decode": {"fusion": "chain", "columns": {"gemm": 8}},
           "gemm": {"tile": [64, 64, 64]},
           "sources": {"decode.fusion": "repo/file.py:1"}}
OVERLAY_LEVELS = {(): "decode", ("model",): "weights", ("model", "tensors"): "lm_head",
                  ("model", "bytes_per_weight"): "ffn", ("decode",): "fusion", ("gemm",): "tile",
                  ("sources",): "names a choice"}


@FUZZ
@given(_levels(OVERLAY, OVERLAY_LEVELS))
def test_load_as_built__an_unknown_key_at_any_level_is_refused_by_name(tmp_path, drawn):
    path, key = drawn
    file = tmp_path / "overlay.toml"
    file.write_text(tomli_w.dumps(_with(OVERLAY, path, key, "x" if path == ("sources",) else 1)))
    _refused(lambda: load_as_built(file), key, OVERLAY_LEVELS[path])


def test_load_as_built__the_minimal_example_is_valid(tmp_path):
    file = tmp_path / "overlay.toml"
    file.write_text(tomli_w.dumps(OVERLAY))
    assert load_as_built(file).gemm == {"tile": (64, 64, 64)}


# ---- sweep spec TOML (fastsim sweep) ---------------------------------------------------------------

SPEC = {"study": {"kind": "gemm", "base": {"k": 512, "n": 512}},
        "arch": {"base": "npu2", "columns": 4},
        "axes": {"m": [128, 256]}, "run": {"outputs": ["seconds"]}}
SPEC_LEVELS = {(): "axes", ("study",): "kind", ("study", "base"): "n", ("arch",): "columns",
               ("axes",): "m", ("run",): "outputs"}


@FUZZ
@given(_levels(SPEC, SPEC_LEVELS))
def test_parse_spec__an_unknown_key_at_any_level_is_refused_by_name(drawn):
    path, key = drawn
    doc = _with(SPEC, path, key, [1] if path == ("axes",) else 1)
    _refused(lambda: parse_spec(tomli_w.dumps(doc)), key, SPEC_LEVELS[path])


def test_parse_spec__the_minimal_example_is_valid():
    assert parse_spec(tomli_w.dumps(SPEC))


# ---- kernel costs TOML (run design --kernels) ------------------------------------------------------

KERNELS = {"kernels": {"matmul": 100, "add": {"cycles": 5}}}
KERNEL_LEVELS = {(): "[kernels]", ("kernels", "add"): "cycles"}


@FUZZ
@given(_levels(KERNELS, KERNEL_LEVELS))
def test_load_kernel_costs__an_unknown_key_at_any_level_is_refused_by_name(tmp_path, drawn):
    path, key = drawn
    file = tmp_path / "kernels.toml"
    file.write_text(tomli_w.dumps(_with(KERNELS, path, key, 1)))
    _refused(lambda: load_kernel_costs(file), key, KERNEL_LEVELS[path])


# ---- ONNX host seconds TOML (optimize --onnx --host-seconds) ----------------------------------------

def _cos_model():
    graph = helper.make_graph([helper.make_node("Cos", ["x"], ["y"])], "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


HOST = {"host_seconds": {"Cos": 1e-4}}
HOST_LEVELS = {(): "host_seconds", ("host_seconds",): "cpu_fallback"}


@FUZZ
@given(_levels(HOST, HOST_LEVELS))
def test_host_seconds__an_unknown_key_at_any_level_is_refused_by_name(tmp_path, drawn):
    path, key = drawn
    file = tmp_path / "host.toml"
    file.write_text(tomli_w.dumps(_with(HOST, path, key, 1e-4)))
    _refused(lambda: build_graph(_cos_model(), cpu_fallback=("Cos",), host_seconds=str(file)), key,
             HOST_LEVELS[path])


# ---- compression ratios JSON (--compression) -------------------------------------------------------

RATIOS = {"source": "w.safetensors", "kv_source": "",
          "measured_on": {"model": "tiny", "weights_file": "w.safetensors", "shapes": [[64, 64]]},
          "weight_compression": {"bf16": 1.2, "int8": 1.0, "int4": 1.0}, "kv_compression": {"bf16": 1.0}}
RATIO_LEVELS = {(): "weight_compression", ("measured_on",): "weights_file", ("weight_compression",): "int4",
                ("kv_compression",): "bf16"}


@FUZZ
@given(_levels(RATIOS, RATIO_LEVELS))
def test_load_run_ratios__an_unknown_key_at_any_level_is_refused_by_name(tmp_path, drawn):
    path, key = drawn
    file = tmp_path / "measured.json"
    file.write_text(json.dumps(_with(RATIOS, path, key, 1.0)))
    _refused(lambda: load_run_ratios(file), key, RATIO_LEVELS[path])


def test_load_run_ratios__the_minimal_example_is_valid(tmp_path):
    file = tmp_path / "measured.json"
    file.write_text(json.dumps(RATIOS))
    assert load_run_ratios(file)["weight_compression"]["bf16"] == 1.2


# ---- routing histogram JSON (--routing FILE) -------------------------------------------------------

ROUTING = {"layers": [[3, 1, 2, 2], [2, 2, 2, 2]]}
EXPERTS = Experts(count=4, per_token=2, ffn_size=64)


@FUZZ
@given(_key(["layers"]))
def test_read_histogram__an_unknown_key_is_refused_by_name(tmp_path, key):
    file = tmp_path / "routing.json"
    file.write_text(json.dumps(_with(ROUTING, (), key, [[1, 1, 1, 1]])))
    _refused(lambda: read_histogram(file, EXPERTS, 2), key, "layers")


def test_read_histogram__the_minimal_example_is_valid(tmp_path):
    file = tmp_path / "routing.json"
    file.write_text(json.dumps(ROUTING))
    assert read_histogram(file, EXPERTS, 2) == ((3, 1, 2, 2), (2, 2, 2, 2))


# ---- Hugging Face config.json (--model) -----------------------------------------------------------

HF = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512}


@FUZZ
@given(_key(sorted(HF)))
def test_from_hf_config__an_unknown_key_is_refused_by_name(tmp_path, key):
    file = tmp_path / "config.json"
    file.write_text(json.dumps(_with(HF, (), key, 1)))
    _refused(lambda: from_hf_config(file), key, "llama config key")


# ---- checkpoint headers (safetensors tensor entries, the shard index) -----------------------------

def _safetensors(path, header: dict):
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(64 * 2))


ENTRY = {"dtype": "BF16", "shape": [64], "data_offsets": [0, 128]}
NAME = "model.layers.0.input_layernorm.weight"


@FUZZ
@given(_key(sorted(ENTRY)))
def test_read_checkpoint__an_unknown_key_of_a_tensor_entry_is_refused_by_name(tmp_path, key):
    file = tmp_path / "model.safetensors"
    _safetensors(file, {"__metadata__": {"format": "pt"}, NAME: _with(ENTRY, (), key, 1)})
    _refused(lambda: read_checkpoint(file), key, "data_offsets")


@FUZZ
@given(_key(["metadata", "weight_map"]))
def test_read_checkpoint__an_unknown_key_of_the_shard_index_is_refused_by_name(tmp_path, key):
    folder = tmp_path / "ckpt"
    folder.mkdir(exist_ok=True)
    _safetensors(folder / "a.safetensors", {NAME: ENTRY})
    index = {"metadata": {"total_size": 128}, "weight_map": {NAME: "a.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(_with(index, (), key, 1)))
    _refused(lambda: read_checkpoint(folder), key, "weight_map")


def test_read_checkpoint__the_minimal_example_is_valid(tmp_path):
    file = tmp_path / "model.safetensors"
    _safetensors(file, {"__metadata__": {"format": "pt"}, NAME: ENTRY})
    assert read_checkpoint(file)
