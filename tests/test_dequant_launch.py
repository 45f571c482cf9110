"""Dequant launches (``LlmStudy.dequant_launch``): packed weights dequantized to bf16 in DDR by a
launch of their own each pass, as FastFlowLM's prefill does; the matmuls then read bf16."""
import pytest

from fastsim.arch import NPU2
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm import dequant_launches as D
from fastsim.llm.run import build_graph, study_pass

LAYER_GEMMS = {name: True for name in ("q_proj", "k_proj", "v_proj", "o_proj", "ffn_gate", "ffn_up", "ffn_down")}


def _graph(**kw):
    study = LlmStudy(model="llama-3.2-1b", regime="prefill", prompt=256, **kw)
    return build_graph(study.model_config(), study.precision.validate(), study_pass(study, NPU2))


def test_insert__each_layer_dequantizes_first_and_its_matmuls_read_bf16():
    graph = _graph()
    chosen = D.selected(graph, LAYER_GEMMS, "flash_attention")
    out = D.insert(graph, chosen)
    assert len(out.ops) == len(graph.ops) + len(chosen) == len(graph.ops) + 7 * 16
    # every op, named with its layer (names repeat per layer), reads the same producers as before
    ident = [(op.name, op.layer) for op in out.ops]
    before = {(op.name, op.layer): sorted((graph.ops[j].name, graph.ops[j].layer) for j in graph.producers[i])
              for i, op in enumerate(graph.ops)}
    assert all(sorted(ident[j] for j in out.producers[ident.index(key)]) == deps for key, deps in before.items())
    for i in chosen:
        op = graph.ops[i]
        at = ident.index((f"{op.name}_dequant", op.layer))
        launch = out.ops[at]
        # in its own layer, ahead of every other op of it (and after every op of the layer before)
        mine = [j for j, o in enumerate(out.ops) if o.layer == op.layer and o.op_class != "dequant_launch"]
        earlier = [j for j, o in enumerate(out.ops) if 0 <= o.layer < op.layer]
        assert max(earlier, default=-1) < at < min(mine) and out.producers[at] == ()
        assert (launch.m, launch.n, launch.x, launch.y.elem_bytes) == (op.k, op.n, op.w, 2.0)
        assert launch.vector_cycles_per_elem == op.cast_cycles_per_weight > 0
        now = out.ops[ident.index((op.name, op.layer))]
        assert now.w.elem_bytes == 2.0 and now.cast_cycles_per_weight == 0.0


def test_selected__refuses_what_it_cannot_dequantize_by_name():
    graph = _graph()
    with pytest.raises(ConfigError, match=r"dequant_launch\[rope\]: a vector op"):
        D.selected(graph, {"rope": True})
    with pytest.raises(ConfigError, match=r"dequant_launch\[qkv\]: selects no matmul"):
        D.selected(graph, {"qkv": True})
    with pytest.raises(ConfigError, match="fusion = 'chain'"):
        D.selected(graph, LAYER_GEMMS, "chain")
    with pytest.raises(ConfigError, match="residency = 'static'"):
        D.selected(graph, LAYER_GEMMS, "none", residency="static")
    with pytest.raises(ConfigError, match="runs on the host"):
        D.selected(graph, {"q_proj": True}, "none", host={"q_proj": 1e-3})
    with pytest.raises(ConfigError, match="2-byte weights are not dequantized"):
        D.selected(_graph(weights="bf16"), {"q_proj": True})
    with pytest.raises(ConfigError, match="1-byte weights are not dequantized"):  # int8 weights an int8 MMA reads
        D.selected(_graph(weights="int8", activations="int8"), {"q_proj": True})


def test_dequant_launches__cost_time_at_a_short_prompt_and_show_in_the_run():
    # at a short prompt the launches' traffic outweighs the dequantization they take off the GEMMs'
    # cores (at thousands of tokens it no longer does: each GEMM call dequantized its B tile again)
    base = LlmStudy(model="llama-3.2-1b", regime="prefill", prompt=256, fusion="flash_attention", cuts=())
    plain = simulate_llm(base, NPU2)
    with_launches = simulate_llm(LlmStudy(**{**base.__dict__, "dequant_launch": LAYER_GEMMS}), NPU2)
    assert float(with_launches["total_seconds"]) > float(plain["total_seconds"])
    launches = with_launches["op_class"].values == "dequant_launch"
    assert launches.sum() == 7 * 16 and (with_launches["op_seconds"].values[launches] > 0).all()
    # NOOP of the class: the launches' data still move, so the run is no faster than without them
    noop = simulate_llm(LlmStudy(**{**base.__dict__, "dequant_launch": LAYER_GEMMS, "noop": ("dequant_launch",)}), NPU2)
    assert float(plain["total_seconds"]) <= float(noop["total_seconds"]) <= float(with_launches["total_seconds"])
