"""An LLM laid out as mlir-air's prefill ELFs build their GEMMs: the split, K panel and C buffer
tables reach each op's mapping search, and cast launches (fused-cast's f32 scratch converted by a
launch of its own) are ops of the graph."""
import pytest

from fastsim import NPU2, ConfigError
from fastsim.evaluation import GraphPins
from fastsim.graph import MATMUL, Op, Operand
from fastsim.llm.cast_launches import insert, selected
from fastsim.llm.run import simulate_llm
from fastsim.llm.study import LlmStudy
from fastsim.mapping.layout import Layout
from fastsim.mapping.matmul_op import _search_pins, matmul_of
from fastsim.mapping.placed import Placed


def test_layout_tables__split_k_panel_and_c_buffers_reach_the_search():
    pins = GraphPins.of(Layout(split={"gemm": "2dt"}, k_panel={"q_proj": 4}, c_buffers={"gemm": 1},
                               dataflow={"gemm": "os"}))
    p = Placed(Op("q_proj", "gemm", 0, MATMUL, 256, 512, 512, Operand("activations", 2), Operand("weights", 2)))
    found = _search_pins(p, NPU2, pins, matmul_of(p, pins), None, None)
    assert (found.split, found.k_panel, found.c_buffers, found.dataflow) == ("2dt", 4, 1, ("os",))


def test_layout_tables__values_out_of_range_are_refused_by_name():
    for table, value in (("split", {"gemm": "3d"}), ("k_panel", {"gemm": 0}), ("c_buffers", {"gemm": 3}),
                         ("cast_launch", {"gemm": 1})):
        with pytest.raises(ConfigError, match=table):
            simulate_llm(LlmStudy(regime="prefill", prompt=64, **{table: value}))


def _prefill(**kw):
    return simulate_llm(LlmStudy(regime="prefill", prompt=128, fusion="none", **kw), NPU2)


def test_cast_launch__each_named_matmul_writes_f32_and_a_cast_op_follows_it():
    plain, cast = _prefill(), _prefill(cast_launch={"ffn_down": True})
    names = list(cast.op_name.values)
    downs = [i for i, n in enumerate(names) if str(n).endswith("ffn_down")]
    assert downs and all(str(names[i + 1]).endswith("ffn_down_cast") for i in downs)
    assert {str(c) for c, n in zip(cast.op_class.values, names) if str(n).endswith("_cast")} == {"cast_launch"}
    assert len(names) == len(plain.op_name.values) + len(downs)
    assert float(cast.total_seconds) > float(plain.total_seconds)  # more work: never faster


def test_cast_launch__names_matmuls_only_outside_fused_groups_and_the_host():
    with pytest.raises(ConfigError, match="cast_launch\\[attn_norm\\]"):
        _prefill(cast_launch={"attn_norm": True})
    with pytest.raises(ConfigError, match="cast_launch\\[nothing\\]"):
        _prefill(cast_launch={"nothing": True})
    with pytest.raises(ConfigError, match="cast_launch\\[norm\\]: selects no matmul"):
        _prefill(cast_launch={"norm": True})  # a class with no matmul op
    with pytest.raises(ConfigError, match="fusion = 'ffn'"):
        simulate_llm(LlmStudy(regime="prefill", prompt=128, fusion="ffn", cast_launch={"ffn_gate": True}), NPU2)
    with pytest.raises(ConfigError, match="fusion = 'auto'"):
        simulate_llm(LlmStudy(regime="prefill", prompt=128, cast_launch={"ffn_gate": True}), NPU2)
    with pytest.raises(ConfigError, match="inside flash attention"):
        simulate_llm(LlmStudy(regime="prefill", prompt=128, fusion="flash_attention",
                              cast_launch={"attention": True}), NPU2)
    with pytest.raises(ConfigError, match="runs on the host"):
        _prefill(cast_launch={"ffn_down": True}, host={"ffn_down": 1e-4})


def test_insert__consumers_read_the_cast_and_the_rest_keeps_its_edges():
    from fastsim.graph import OpGraph, VECTOR

    a = Op("a", "gemm", 0, MATMUL, 64, 64, 64, Operand("activations", 2), Operand("weights", 2))
    b = Op("b", "elementwise", 0, VECTOR, 64, 1, 64, Operand("activations", 2))
    c = Op("c", "gemm", 0, MATMUL, 64, 64, 64, Operand("activations", 2), Operand("weights", 2))
    g = OpGraph((a, b, c), ((), (0,), (0, 1)))
    out = insert(g, selected(g, {"a": True}), NPU2)
    assert [op.name for op in out.ops] == ["a", "a_cast", "b", "c"]
    assert out.producers == ((), (0,), (1,), (1, 2))
    assert out.ops[0].y.elem_bytes == 4 and out.ops[1].x.elem_bytes == 4 and out.ops[1].y.elem_bytes == 2
    assert out.ops[1].vector_cycles_per_elem > 0
