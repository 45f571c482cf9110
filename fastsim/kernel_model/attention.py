"""The online softmax of flash attention, as mlir-air's kernel pays it: per KV tile, per head.

mlir-air ``programming_examples/flash_attention/kernel_fusion_based/attn_npu2.cc`` (driven by
``attn_npu2.py``, lines 772-860 at commit e972f2942) runs for each KV tile of ``kv_cols`` keys against a
Q tile of ``q_rows`` rows, after the QK matmul and before the PV matmul:

- ``zero_fill_g_bf16``: clear the score tile G (q_rows x kv_cols; stores only);
- ``fused_softmax`` (lines 629-638), seven calls: ``max_g_bf16`` (a max over G, a 8-lane
  reduce_max per row), ``maximum_up_u_bf16`` (new running max, q_rows), ``exp_g_minus_u`` (G =
  exp2(log2e (G - max)): subtract, clamp, multiply, exp2 in two 16-lane halves, store),
  ``exp_up_minus_u`` (the rescale factor, q_rows, 16 lanes), two ``vector_copy_32elems``, ``sum_g``
  (fp32 sum of G, a 8-lane reduce_add per row);
- ``mul_r_gp`` (lines 454-498): rescale the running output (q_rows x dv) by the factor;
- ``accum_sp_r_s`` and ``vector_copy_32elems``: the running denominator (q_rows).

The 2-D loops of max_g, exp_g_minus_u, sum_g and mul_r_gp run one pipelined inner loop per group
of four rows (an 8x8-blocked layout: ``rb`` x ``half`` outer loops), so their fill and drain is paid
q_rows / 4 times per call. Once per Q tile, ``div_gp_sp`` divides the output by the denominator.
A causal diagonal tile also runs ``apply_causal_mask`` (a read-modify-write of every 8-element
row slice, lines 662-700); tiles above the diagonal are skipped (``causal_skip`` in attn_npu2.py).
The matmuls are the matmul model's; this module prices only the vector work between them.
"""
from __future__ import annotations

import math

from .vector import V, Body, VectorCore, loop_cycles, reduce_cycles

BLOCK_ROWS = 8  # rows of one 8x8 block of the tiled score layout (attn_npu2.cc RowsPerBlock)
GROUP_ROWS = 4  # rows one 32-lane vector of a block covers (attn_npu2.cc: "VecLen=32 reads 4 rows")


def padded_rows(q_rows: int) -> int:
    """Q rows as the kernel lays them out: whole 8-row blocks."""
    return BLOCK_ROWS * math.ceil(max(1, q_rows) / BLOCK_ROWS)


def _grouped(core: VectorCore, body: Body, rows: int, cols: int) -> float:
    """A 2-D pass over rows x cols run as one inner loop per group of four rows."""
    groups = rows // GROUP_ROWS
    return groups * loop_cycles(core, body, GROUP_ROWS * cols)


def online_softmax_tile_cycles(core: VectorCore, q_rows: int, kv_cols: int, dv: int) -> float:
    """Vector cycles of one KV tile of the online softmax (see the module docstring); ``q_rows`` is
    padded to whole 8-row blocks."""
    rows = padded_rows(q_rows)
    zero = loop_cycles(core, Body(0, V), rows * kv_cols)
    row_max = _grouped(core, Body(V, 0, alu_ops=1), rows, kv_cols) + rows * reduce_cycles(core, BLOCK_ROWS)
    # subtract, clamp (max), multiply by log2e (two 16-lane halves), exp2, two inserts
    exp = _grouped(core, Body(V, V, fp_ops=2, alu_ops=3, special_ops=1), rows, kv_cols)
    total = rows * reduce_cycles(core, BLOCK_ROWS)  # sum_g's per-row reduce_add of 8 lanes
    total += _grouped(core, Body(V, 0, fp_ops=1), rows, kv_cols)
    rescale = _grouped(core, Body(V, V, fp_ops=1), rows, dv)  # mul_r_gp: multiply, shift-round
    running = (loop_cycles(core, Body(2 * V, V, alu_ops=1), rows)  # maximum_up_u
               + loop_cycles(core, Body(2 * V, V, fp_ops=2, alu_ops=1, special_ops=1), rows)  # exp_up_minus_u
               + 3 * loop_cycles(core, Body(V, V), rows)  # three vector_copy_32elems
               + loop_cycles(core, Body(3 * V, V, fp_ops=3), rows))  # accum_sp_r_s
    calls = 11  # zero_fill_g, fused_softmax and its 7 callees, mul_r_gp, accum_sp_r_s, a copy
    return calls * core.call_cycles + zero + row_max + exp + total + rescale + running


def finalize_cycles(core: VectorCore, q_rows: int, dv: int) -> float:
    """Once per Q tile: ``div_gp_sp`` (an inverse per row, then the output times it) and the three
    fills of the running state (zero_fill_gp, zero_fill_sp, neg_inf_fill_up)."""
    rows = padded_rows(q_rows)
    inverse = (rows // GROUP_ROWS) * reduce_cycles(core, BLOCK_ROWS)  # aie::inv of a broadcast vector
    divide = _grouped(core, Body(V, V, fp_ops=1), rows, dv)
    fills = loop_cycles(core, Body(0, V), rows * dv) + 2 * loop_cycles(core, Body(0, V), rows)
    return 4 * core.call_cycles + inverse + divide + fills


def causal_mask_cycles(core: VectorCore, q_rows: int, kv_cols: int) -> float:
    """A diagonal tile's mask: every row's kv_cols / 8 slices of 8 lanes read, selected and written
    back in a loop that is not pipelined (apply_causal_mask: scalar control per slice; assumption:
    one load, one select and one store a slice, 3 cycles)."""
    rows = padded_rows(q_rows)
    return core.call_cycles + rows * (core.loop_overhead_cycles + 3 * math.ceil(kv_cols / BLOCK_ROWS))


def online_softmax_cycles_per_score(core: VectorCore, q_rows: int, kv_cols: int, dv: int,
                                    keys_per_row: float, causal: bool) -> float:
    """Vector cycles per computed score element of flash attention: each KV tile's cost over its
    q_rows x kv_cols scores, plus the per-Q-tile finalization spread over the keys a row sees and,
    when causal, one diagonal mask per Q tile. ``q_rows`` counts the tile's real rows (padding to
    8-row blocks costs, it computes nothing)."""
    scores = max(1, q_rows) * kv_cols
    per = online_softmax_tile_cycles(core, q_rows, kv_cols, dv) / scores
    seen = max(1.0, keys_per_row) * max(1, q_rows)
    per += finalize_cycles(core, q_rows, dv) / seen
    if causal:
        per += causal_mask_cycles(core, q_rows, kv_cols) / seen
    return per


FLASH_STEP_ROWS = 64  # the query rows and keys of the measured kernel's tile step (tile_q = lkp = 64)


def calibrated_cycles_per_score(core: VectorCore, q_rows: int, head_dim: int) -> float:
    """What a computed score of a 64-row Q tile costs beyond the modelled step: the core's
    ``flash_step_extra_cycles`` at head dim 64 and 128, linear in the head dim between and beyond
    (never below 0), over the step's 64 x 64 scores. Only full 64-row tiles, the shape measured:
    a decode Q tile (a KV head's group, 8 rows) runs other kernels, none measured (nothing added)."""
    if q_rows < FLASH_STEP_ROWS:
        return 0.0
    lo, hi = core.flash_step_extra_cycles_hd64, core.flash_step_extra_cycles_hd128
    per_step = max(0.0, lo + (hi - lo) * (head_dim - 64) / 64)
    return per_step / (FLASH_STEP_ROWS * FLASH_STEP_ROWS)
