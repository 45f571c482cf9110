"""The vector and attention kernel model: each kernel class against its closed form (worked by hand
below), more work never fewer cycles, and its wiring into the LLM front end and the vector mapping."""
import dataclasses
import json
import math

import pytest
from hypothesis import given, settings, strategies as st
from helpers import bench_module

from fastsim.arch import NPU1, NPU2, SYSTOLIC16, load
from fastsim.errors import ConfigError
from fastsim.kernel_model import attention as A
from fastsim.kernel_model import vector as V
from fastsim.kernel_model.vector import AIE2, AIE2P, Body
from fastsim.llm import MODELS, Precision
from fastsim.llm.forward import build_graph
from fastsim.llm.transformer import Pass, VectorCosts
from fastsim.mapping.fusion import FLASH_KV_BLOCK
from fastsim.mapping.vector import VectorOp, _tiling, core_tile

ONE_B = MODELS["llama-3.2-1b"]
PROPS = settings(max_examples=25, deadline=None)


# ---- closed forms (every number worked by hand from the parameters) -------------------------------

def test_ii__busiest_unit_wins():
    # aie2p: one fp op over 32 lanes = 2 issues of 16; 128 B of loads = 1 cycle; 64 B store = 1 cycle
    assert V.ii_cycles(AIE2P, Body(128, 64, fp_ops=1)) == 2
    # aie2: 192 B of loads at 64 B/cycle = 3 cycles beats 2 issues
    assert V.ii_cycles(AIE2, Body(192, 64, fp_ops=1)) == 3
    # a stated II wins
    assert V.ii_cycles(AIE2P, Body(64, 64, fp_ops=1, ii_cycles=18)) == 18


def test_ii__special_functions_on_the_sfu_or_through_luts():
    # aie2p: exp2 over 32 lanes = 2 SFU issues, plus 3 fp ops = 6 issues -> 8
    assert V.ii_cycles(AIE2P, Body(64, 64, fp_ops=3, special_ops=1)) == 8
    # aie2: 32 lanes / 4 LUT lanes per cycle = 8 load cycles (+1 for the 64 B input) = 9;
    # issues 3 fp x 2 + 3 LUT issues x 2 = 12 -> 12
    assert V.ii_cycles(AIE2, Body(64, 64, fp_ops=3, special_ops=1)) == 12


def test_train_row_t1__the_section_4c_trace_is_reproduced():
    """mlir-aie section-4c (npu1): a 1024-element int16 vector x scalar loop in 72 cycles between its
    event markers (the call is outside them); int16 fills 32 lanes like bf16, and its 64 B store per
    iteration takes two cycles of the 32 B port."""
    assert V.loop_cycles(AIE2, Body(64, 64, alu_ops=1), 1024) == 72


def test_elementwise__closed_form():
    # 2048 elements = 64 iterations of II 2, + 8 fill/drain + 15 call
    assert V.elementwise_cycles(AIE2P, 2048) == 15 + 8 + 64 * 2
    assert V.elementwise_cycles(AIE2, 2048, inputs=3) == 15 + 8 + 64 * 3


def test_rms_norm__closed_form():
    # per row: two passes of 64 iterations at II 4 (two fp ops), one 16-lane reduction (4 steps x 2),
    # the scalar tail (20 on aie2p); one call
    per_row = 2 * (8 + 64 * 4) + 4 * 2 + 20
    assert V.norm_cycles(AIE2P, 3, 2048, "rms") == 15 + 3 * per_row


def test_layer_norm__closed_form():
    # 768 = 24 iterations; pass 1 three fp ops (II 6), pass 2 four (II 8); two reductions; aie2 tail 40
    per_row = (8 + 24 * 6) + (8 + 24 * 8) + 2 * 8 + 40
    assert V.norm_cycles(AIE2, 1, 768, "layer") == 15 + per_row


def test_softmax__closed_form():
    # pass 1: 2 fp (4 issues) + a 32-lane reduce_max (5 steps x 2 = 10) = 14; pass 2: 3 fp + exp2 = 8;
    # pass 3: 2 fp = 4; per row a 16-lane reduce_add (8) and the tail (20)
    per_row = (8 + 64 * 14) + (8 + 64 * 8) + (8 + 64 * 4) + 8 + 20
    assert V.softmax_cycles(AIE2P, 1, 2048) == 15 + per_row == 1731


def test_rope__closed_form():
    # 3 fp ops (6 issues) + 1 shuffle = II 7 on aie2p; 64 columns = 2 iterations a row
    assert V.rope_cycles(AIE2P, 4, 64) == 15 + 4 * (8 + 2 * 7)


def test_activations__closed_form_and_the_stated_gelu_interval():
    # gelu on aie2p: the II the kernel source states (18 per 32 lanes)
    assert V.activation_cycles(AIE2P, 2048, "gelu") == 15 + 8 + 64 * 18
    # silu on aie2p: 5 fp ops (10 issues) + tanh (2 SFU issues) = 12
    assert V.activation_cycles(AIE2P, 1024, "silu") == 15 + 8 + 32 * 12


def test_kv_dequant_cast_pool__closed_forms():
    assert V.kv_append_cycles(AIE2, 2048) == 15 + 8 + 64 * 2  # a copy: the 32 B/cycle store binds
    assert V.kv_append_cycles(AIE2P, 2048, out_bytes=1) == 15 + 8 + 64 * 2  # a quantizing fp op binds
    # int4: 16 B of load, 2 fp ops (4 issues) + 2 shuffles = 6
    assert V.dequant_cycles(AIE2P, 4096, 4) == 15 + 8 + 128 * 6
    assert V.cast_cycles(AIE2, 1024, "f32", "bf16") == 15 + 8 + 32 * 2
    # 2x2 max pool: 4 input vectors (256 B: 2 load cycles on aie2p), 4 max issues
    assert V.pool_cycles(AIE2P, 1024, 4) == 15 + 8 + 32 * 4


def test_online_softmax_tile__closed_form():
    # 64 x 64 scores, dv 64, aie2p (attn_npu2.cc, see fastsim.kernel_model.attention)
    zero = 8 + 128 * 1
    row_max = 16 * (8 + 8 * 1) + 64 * 6
    exp = 16 * (8 + 8 * 9)
    total = 64 * 6 + 16 * (8 + 8 * 2)
    rescale = 16 * (8 + 8 * 2)
    running = (8 + 2) + (8 + 2 * 7) + 3 * (8 + 2) + (8 + 2 * 6)
    assert A.online_softmax_tile_cycles(AIE2P, 64, 64, 64) == 11 * 15 + zero + row_max + exp + total + rescale + running
    assert A.online_softmax_tile_cycles(AIE2P, 64, 64, 64) == 3455


def test_online_softmax__pads_rows_to_blocks_and_spreads_the_per_tile_costs():
    # a decode group of 4 query heads runs as one 8-row block
    assert A.online_softmax_tile_cycles(AIE2P, 4, 64, 64) == A.online_softmax_tile_cycles(AIE2P, 8, 64, 64)
    per = A.online_softmax_cycles_per_score(AIE2P, 64, 64, 64, 1024.0, causal=True)
    expect = (3455 / 4096 + A.finalize_cycles(AIE2P, 64, 64) / (1024 * 64)
              + A.causal_mask_cycles(AIE2P, 64, 64) / (1024 * 64))
    assert per == pytest.approx(expect)


def test_refusals__name_what_is_not_modelled():
    with pytest.raises(ConfigError, match="cast"):
        V.cast_cycles(AIE2P, 64, "int8", "bf16")
    with pytest.raises(ConfigError, match="activation"):
        V.activation_cycles(AIE2P, 64, "relu6")
    with pytest.raises(ConfigError, match="norm kind"):
        V.norm_cycles(AIE2P, 1, 64, "group")
    with pytest.raises(ConfigError, match="dequant bits"):
        V.dequant_cycles(AIE2P, 64, 2)


# ---- more work never fewer cycles ------------------------------------------------------------------

cores = st.sampled_from([AIE2, AIE2P])
sizes = st.integers(1, 9000)


@PROPS
@given(core=cores, n=sizes, extra=st.integers(1, 500), inputs=st.integers(1, 4))
def test_elementwise__more_elements_never_fewer_cycles(core, n, extra, inputs):
    assert V.elementwise_cycles(core, n + extra, inputs) >= V.elementwise_cycles(core, n, inputs)
    for kind in ("silu", "silu_mul", "gelu", "tanh"):
        assert V.activation_cycles(core, n + extra, kind) >= V.activation_cycles(core, n, kind)
    assert V.dequant_cycles(core, n + extra, 4) >= V.dequant_cycles(core, n, 4)
    assert V.kv_append_cycles(core, n + extra) >= V.kv_append_cycles(core, n)


@PROPS
@given(core=cores, rows=st.integers(1, 64), cols=sizes, more_rows=st.integers(0, 8), longer=st.integers(0, 500))
def test_row_kernels__more_rows_or_longer_rows_never_fewer_cycles(core, rows, cols, more_rows, longer):
    for f in (lambda r, c: V.norm_cycles(core, r, c, "rms"), lambda r, c: V.norm_cycles(core, r, c, "layer"),
              lambda r, c: V.softmax_cycles(core, r, c), lambda r, c: V.rope_cycles(core, r, c)):
        assert f(rows + more_rows, cols + longer) >= f(rows, cols)


@PROPS
@given(core=cores, q_rows=st.integers(1, 64), dv=st.sampled_from([64, 128]), keys=st.integers(1, 4096),
       more_tiles=st.integers(1, 16))
def test_online_softmax__more_kv_tiles_never_fewer_cycles(core, q_rows, dv, keys, more_tiles):
    """A Q tile's whole online softmax (cycles per score x scores) grows with the keys it sees."""
    def whole(k):
        return A.online_softmax_cycles_per_score(core, q_rows, FLASH_KV_BLOCK, dv, k, True) * k * q_rows
    assert whole(keys + more_tiles * FLASH_KV_BLOCK) >= whole(keys)
    assert A.online_softmax_tile_cycles(core, q_rows + 8, 64, dv) >= A.online_softmax_tile_cycles(core, q_rows, 64, dv)


# ---- wiring ----------------------------------------------------------------------------------------

def _op(graph, name, layer=0):
    return next(op for op in graph.ops if op.name == name and op.layer == layer)


def test_costs__presets_use_the_model_generic_keeps_the_table():
    for arch, core in ((NPU1, AIE2), (NPU2, AIE2P)):
        c = VectorCosts.of(arch)
        assert c.core.generation == core.generation and c.fixed == ()
        assert c.core.load_bytes_per_cycle == arch.core_load_bytes_per_cycle
    generic = VectorCosts.of(SYSTOLIC16)
    assert generic.core is None and generic.softmax_cost(1000) == SYSTOLIC16.vector_cost("softmax")


def test_costs__survive_a_json_round_trip():
    c = VectorCosts.of(NPU2)
    assert VectorCosts(**json.loads(json.dumps(dataclasses.asdict(c)))) == c


def test_prefill_attention__carries_the_online_softmax_per_kv_tile():
    costs = VectorCosts.of(NPU2)
    g = build_graph(ONE_B, Precision(), Pass("prefill", prompt=2048, costs=costs))
    op = _op(g, "softmax")
    span, frac = 2048, (0 + 2048 * 0.5) / 2048
    plain = V.softmax_cycles(AIE2P, 1, 1024) / 1024
    online = (A.online_softmax_cycles_per_score(costs.core, 64, FLASH_KV_BLOCK, 64, 1024, True)
              + A.calibrated_cycles_per_score(costs.core, 64, 64))
    assert (op.m, op.n) == (32 * 2048, span)
    assert op.vector_cycles_per_elem == pytest.approx(plain * frac)
    # run flash-style the evaluator adds online_rescale_cycles / FLASH_KV_BLOCK per element
    flash = op.vector_cycles_per_elem + op.online_rescale_cycles / FLASH_KV_BLOCK
    assert flash == pytest.approx(online * frac)


def test_decode_attention__one_q_tile_per_kv_head_group():
    costs = VectorCosts.of(NPU2)
    g = build_graph(ONE_B, Precision(), Pass("decode", context=1023, costs=costs))
    op = _op(g, "softmax")
    online = A.online_softmax_cycles_per_score(costs.core, ONE_B.group, FLASH_KV_BLOCK, 64, 1024, False)
    assert (op.m, op.n) == (32, 1024)
    assert op.vector_cycles_per_elem + op.online_rescale_cycles / FLASH_KV_BLOCK == pytest.approx(online)
    assert op.online_rescale_cycles > 0


def test_vector_ops__priced_on_the_tile_the_mapping_gives_each_core():
    costs = VectorCosts.of(NPU2)
    g = build_graph(ONE_B, Precision(), Pass("prefill", prompt=256, costs=costs))
    op = _op(g, "attn_residual")
    rows, cols = core_tile(op.m, op.n, 2, NPU2.columns * NPU2.compute_rows)
    assert op.vector_cycles_per_elem == pytest.approx(V.elementwise_cycles(AIE2P, rows * cols, 2) / (rows * cols))
    t = _tiling(VectorOp(op.m, op.n, vector_cycles_per_elem=op.vector_cycles_per_elem, x_inputs=2), NPU2,
                NPU2.columns)
    assert t.cycles == math.ceil(V.elementwise_cycles(AIE2P, rows * cols, 2) - 1e-9)
    norm = _op(g, "attn_norm")
    assert norm.vector_cycles_per_elem == pytest.approx(V.norm_cycles(AIE2P, 1, 2048, "rms") / 2048)


def test_user_table__an_overridden_kind_wins_over_the_model(tmp_path):
    toml = tmp_path / "arch.toml"
    toml.write_text('[arch]\nbase = "npu2"\n[arch.vector_cycles_per_elem]\nsoftmax = 7.0\nnorm = 1.5\n')
    arch = load(toml)
    costs = VectorCosts.of(arch)
    assert set(costs.fixed) == {"softmax", "norm"}
    g = build_graph(ONE_B, Precision(), Pass("prefill", prompt=512, costs=costs))
    soft, norm = _op(g, "softmax"), _op(g, "attn_norm")
    assert soft.vector_cycles_per_elem == pytest.approx(7.0 * 0.5)
    assert soft.online_rescale_cycles == pytest.approx(arch.vector_cost("elementwise") * 64)
    assert norm.vector_cycles_per_elem == 1.5
    # the kinds the user did not set stay modelled
    assert _op(g, "rope").vector_cycles_per_elem != arch.vector_cost("rope")


# ---- flash attention's calibration --------------------------------------------------------------

def _flash_bench():
    return bench_module("flash_attention")


def test_flash_step__the_calibration_is_the_fit_of_its_train_rows_less_the_model():
    """The extra cycles per tile step are the registry fit's step (train rows only) less the
    modelled step: a change of either fails here until the calibration is fitted again."""
    bench = _flash_bench()
    fitted = bench.fit([r for r in bench.ROWS if r[7]])
    for dk, i in ((64, 2), (128, 3)):
        measured = fitted[i] * 1e-3 * bench.CLOCK_HZ
        assert V.FLASH_STEP_EXTRA_AIE2P[dk] == pytest.approx(measured - bench._kernel_model_tile_cycles(dk), abs=1)


def test_flash_step__added_per_score_of_full_tiles_only_and_never_less_with_a_wider_head():
    assert A.calibrated_cycles_per_score(AIE2P, 64, 64) == pytest.approx(V.FLASH_STEP_EXTRA_AIE2P[64] / 4096)
    assert A.calibrated_cycles_per_score(AIE2P, 64, 128) == pytest.approx(V.FLASH_STEP_EXTRA_AIE2P[128] / 4096)
    assert A.calibrated_cycles_per_score(AIE2P, 8, 64) == 0  # a decode group's tile: not the measured kernel
    assert A.calibrated_cycles_per_score(AIE2, 64, 64) == 0  # no measurement on aie2
    widths = [32, 64, 80, 96, 128, 256]
    per = [A.calibrated_cycles_per_score(AIE2P, 64, w) for w in widths]
    assert per == sorted(per) and per[0] >= 0
