"""Vector kernels of one AIE core: cycles per call from the core's documented units.

A vector kernel is a few software-pipelined loops over 512-bit vectors (mlir-aie
``aie_kernels/aie2*/*.cc``). One loop costs its fill and drain plus ``iterations x II``, and its
initiation interval II is the busiest unit of one iteration (a VLIW bundle issues at most two
loads, one store and one vector operation, UG1603 "Architecture Overview"): the load ports, the
store port, or the vector slot. Floating-point arithmetic runs on the 512-bit accumulator path
(16 fp32 lanes per issue), compares, shuffles and selects on 512-bit vector registers (32 bf16
lanes per issue), exp2/tanh on the AIE-ML v2 special-function unit (16 lanes per issue) or, on
AIE-ML, through look-up tables read by the load units. A row-wise kernel (norm, softmax) adds per
row a lane reduction (log2 lanes shuffle-and-op steps) and a scalar tail (the mean, invsqrt or
inverse of one float). Each call adds the call's own overhead. Every parameter below names its
source or says "assumption"; docs/vector_kernels.md tables them with the kernel code they read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..errors import ConfigError, shown

BF16_BYTES = 2
FP32_BYTES = 4


@dataclass(frozen=True)
class VectorCore:
    """The units of one core that bound a vector loop, per core generation."""

    generation: str
    # 512-bit vector registers: 32 bf16 / 16 fp32 lanes (UG1603 "Data Types": native vector 512 bit)
    vector_bytes: int = 64
    # accumulator lanes one floating-point issue covers: 512-bit accumulator registers of 16 x 32-bit
    # lanes (AM020 / AM027 "Accumulator Registers"); inferred: one register per issue
    acc_lanes: int = 16
    # one fixed-point or bfloat16 vector operation per VLIW bundle (UG1603 "Architecture Overview")
    vector_issues_per_cycle: int = 1
    # load and store ports: AIE-ML 2 x 256-bit loads and 1 x 256-bit store (AM020 "Functional
    # Overview"); AIE-ML v2 128 B / 64 B per cycle (AM027). An Arch overrides them (its
    # core_load_bytes_per_cycle / core_store_bytes_per_cycle fields)
    load_bytes_per_cycle: int = 64
    store_bytes_per_cycle: int = 32
    # accesses per cycle: two loads and one store per VLIW bundle, whatever their width (UG1603
    # "Architecture Overview"; AM020 "Functional Overview"); a narrow access takes a whole slot
    load_issues_per_cycle: int = 2
    store_issues_per_cycle: int = 1
    # special-function lanes per issue (exp2, tanh): AIE-ML v2 16 (mlir-air attn_npu2.cc exp_g_minus_u:
    # "exp2 native width is 16"); 0: none, exp and tanh read look-up tables (AIE-ML)
    special_lanes: int = 0
    # look-up-table lanes the load units serve per cycle: aie::lut<4, ...> (4 parallel accesses) in
    # mlir-aie aie_runtime_lib/AIE2/lut_based_ops.h getExpBf16 / getTanhBf16
    lut_lanes_per_cycle: int = 4
    # vector issues a LUT-based function spends per 16 lanes besides the table reads: the index
    # conversion, the filter and the product of the two fetched parts (lut_based_ops.h getExpBf16)
    lut_issues: int = 3
    # fill and drain of one software-pipelined loop: 8 cycles, from mlir-aie programming_guide
    # section-4c (npu1 trace: a 1024-element int16 vector x scalar loop in 72 cycles, 64 of them the
    # store bound); a train row (docs/vector_kernels.md)
    loop_overhead_cycles: float = 8.0
    # one kernel call outside its loops (call, return, prologue): assumption, 15 (the 10-20 that
    # mlir-aie section-4c traces and PR #1763 bracket; the matmul kernel uses the same)
    call_cycles: float = 15.0
    # one step of a lane reduction (a shuffle and an op, dependent): assumption, 2 issues
    reduce_step_cycles: float = 2.0
    # per row, the scalar tail of a norm or softmax (float divide, add eps, invsqrt or inverse,
    # broadcast): assumption. AIE-ML has no floating-point scalar unit (AM020: emulated); AIE-ML v2
    # has scalar inverse / sqrt / invsqrt hardware (AM027 "Arithmetic Logic Unit")
    row_scalar_cycles: float = 40.0
    # flash attention: cycles a 64 x 64 tile step (64 query rows against 64 keys: QK, online
    # softmax, PV) of mlir-air's kernel spends beyond what this model prices, at head dim 64 and
    # 128 (a calibration, not a mechanism: fitted to the kernel registry's TRAIN rows,
    # bench/flash_attention.py, docs/vector_kernels.md); 0: no measurement of the generation's
    # kernel, nothing added
    flash_step_extra_cycles_hd64: float = 0.0
    flash_step_extra_cycles_hd128: float = 0.0

    @property
    def bf16_lanes(self) -> int:
        return self.vector_bytes // BF16_BYTES


# mlir-air's flash attention step on npu2, measured less modelled (``flash_step_extra_cycles_*``):
# 16,481 and 23,302 cycles at 1.8 GHz (head dim 64, 128) from the fit of bench/flash_attention.py
# to FlashAttention_bf16.md l. 151, 152, 158, 164, against the model's 5,287 and 5,799 (QK and PV
# calls on bfp16, their C moves in series, the online softmax); tests/test_kernel_model_vector.py
# recomputes both
FLASH_STEP_EXTRA_AIE2P = {64: 11_194.0, 128: 17_503.0}

# AIE-ML (npu1: Phoenix, Hawk Point)
AIE2 = VectorCore("aie2", load_bytes_per_cycle=64, store_bytes_per_cycle=32, special_lanes=0,
                  row_scalar_cycles=40.0)
# AIE-ML v2 (npu2: Strix, Strix Halo, Krackan)
AIE2P = VectorCore("aie2p", load_bytes_per_cycle=128, store_bytes_per_cycle=64, special_lanes=16,
                   row_scalar_cycles=20.0, flash_step_extra_cycles_hd64=FLASH_STEP_EXTRA_AIE2P[64],
                   flash_step_extra_cycles_hd128=FLASH_STEP_EXTRA_AIE2P[128])
CORES = {"aie2": AIE2, "aie2p": AIE2P}


def core_of(arch) -> VectorCore | None:
    """The vector core of ``arch`` (its load/store widths taken from the arch, so an override
    applies); None for a generation with no documented core (``generic``)."""
    gen = getattr(arch, "generation", None) or ("aie2p" if arch.core_load_bytes_per_cycle >= 128 else "aie2")
    core = CORES.get(gen)
    if core is None:
        return None
    from .matmul import with_settings  # the arch's kernel_model settings vector.*

    return with_settings(replace(core, load_bytes_per_cycle=arch.core_load_bytes_per_cycle,
                         store_bytes_per_cycle=arch.core_store_bytes_per_cycle), "vector", arch)


@dataclass(frozen=True)
class Body:
    """One iteration of a pipelined loop over one 512-bit bf16 vector (32 elements): bytes it loads
    and stores, floating-point ops (accumulator path), vector ALU ops (compare, max, shuffle,
    select), special functions (exp2, tanh). ``ii_cycles`` > 0: the interval the kernel's source
    states for this generation (it wins over the unit bound)."""

    load_bytes: float
    store_bytes: float
    fp_ops: float = 0.0
    alu_ops: float = 0.0
    special_ops: float = 0.0
    ii_cycles: float = 0.0


def ii_cycles(core: VectorCore, body: Body) -> float:
    """Initiation interval of ``body``: its busiest unit (vector slot, loads with LUT reads, store)."""
    if body.ii_cycles:
        return body.ii_cycles
    lanes = core.bf16_lanes
    issues = body.fp_ops * lanes / core.acc_lanes + body.alu_ops
    lut_cycles = 0.0
    if body.special_ops and core.special_lanes:
        issues += body.special_ops * lanes / core.special_lanes
    elif body.special_ops:
        lut_cycles = body.special_ops * lanes / core.lut_lanes_per_cycle
        issues += body.special_ops * core.lut_issues * lanes / core.acc_lanes
    return max(issues / core.vector_issues_per_cycle,
               body.load_bytes / core.load_bytes_per_cycle + lut_cycles,
               body.store_bytes / core.store_bytes_per_cycle)


def loop_cycles(core: VectorCore, body: Body, elements: float) -> float:
    """One pipelined loop over ``elements`` bf16 elements (32 per iteration); 0 for none."""
    if elements <= 0:
        return 0.0
    return core.loop_overhead_cycles + math.ceil(elements / core.bf16_lanes) * ii_cycles(core, body)


def reduce_cycles(core: VectorCore, lanes: int) -> float:
    """Reduce one vector of ``lanes`` to a scalar: log2(lanes) dependent shuffle-and-op steps."""
    return math.ceil(math.log2(max(2, lanes))) * core.reduce_step_cycles


# ---- kernel classes: one call's cycles --------------------------------------------------------

V = 64  # bytes of one 512-bit vector: 32 bf16 elements


def elementwise_cycles(core: VectorCore, elements: int, inputs: int = 2, fp_ops: int = 1) -> float:
    """c = a + b, a * b (``inputs`` operands, ``fp_ops`` float ops per element), bf16 in and out
    (mlir-aie aie2p/add.cc, mul.cc: load each input, one aie::add / aie::mul, store)."""
    return core.call_cycles + loop_cycles(core, Body(inputs * V, V, fp_ops=fp_ops), elements)


def cast_cycles(core: VectorCore, elements: int, src: str, dst: str) -> float:
    """A dtype conversion on the core: f32 -> bf16 is one shift-round-saturate per vector
    (aie2p/cast_f32_bf16.cc: load 16 f32, to_vector<bfloat16>, store); bf16 -> bfp16 finds each
    8-value block's shared exponent (a max over the block: one ALU op) and shifts the mantissas
    (one op), writing 8 mantissa bytes and one exponent byte per block (assumption: the
    conversion IRON's AIE_API_EMULATE_BFLOAT16_MMUL_WITH_BFP16 runs; no kernel source states it)."""
    if (src, dst) == ("f32", "bf16"):
        body = Body(2 * V, V, fp_ops=1)
    elif (src, dst) == ("bf16", "bfp16"):
        body = Body(V, 32 * 9 / 8, alu_ops=2)
    else:
        raise ConfigError([f"cast = {shown(src)} -> {shown(dst)}: the kernel model has f32 -> bf16 and "
                           "bf16 -> bfp16"], "kernel model")
    return core.call_cycles + loop_cycles(core, body, elements)


def norm_cycles(core: VectorCore, rows: int, cols: int, kind: str = "rms") -> float:
    """One call over ``rows`` rows of ``cols`` (a row per reduction). RMSNorm (aie2p/rms_norm.cc):
    pass 1 squares and sums in fp32 (two float ops), one reduction, invsqrt; pass 2 scales twice
    (x * rstd * gamma) and stores. LayerNorm (aie2p/layer_norm.cc): pass 1 sums x and x*x (three
    float ops), two reductions; pass 2 subtracts the mean, scales, multiplies gamma, adds beta."""
    if kind == "rms":
        first, second, reductions = Body(V, 0, fp_ops=2), Body(V, V, fp_ops=2), 1
    elif kind == "layer":
        first, second, reductions = Body(V, 0, fp_ops=3), Body(V, V, fp_ops=4), 2
    else:
        raise ConfigError([f"norm kind = {shown(kind)}: one of rms, layer"], "kernel model")
    per_row = (loop_cycles(core, first, cols) + loop_cycles(core, second, cols)
               + reductions * reduce_cycles(core, core.acc_lanes) + core.row_scalar_cycles)
    return core.call_cycles + rows * per_row


def softmax_cycles(core: VectorCore, rows: int, cols: int) -> float:
    """A plain softmax over whole rows (aie2p/softmax.cc softmax_simple_bf16), three passes a row:
    scale by log2e and take the running max (a multiply, a shift-round to bf16 and a 32-lane
    reduce_max every iteration); exp2 of the scaled input less the max, summed in fp32 and
    stored (multiply, subtract, add; one exp2); scale by the inverse sum and store. Per row one
    fp32 reduce_add and the scalar inverse."""
    first = Body(V, 0, fp_ops=2, alu_ops=reduce_cycles(core, core.bf16_lanes))
    second = Body(V, V, fp_ops=3, special_ops=1)
    third = Body(V, V, fp_ops=2)
    per_row = (loop_cycles(core, first, cols) + loop_cycles(core, second, cols) + loop_cycles(core, third, cols)
               + reduce_cycles(core, core.acc_lanes) + core.row_scalar_cycles)
    return core.call_cycles + rows * per_row


def rope_cycles(core: VectorCore, rows: int, cols: int) -> float:
    """Rotary embedding of ``rows`` head vectors of ``cols`` (aie2p/rope.cc rope_kernel_two_halves):
    per 32 outputs load x and its partner half (amortized: 2 x 64 B per 64 outputs) and 64 B of
    cos/sin, split cos and sin (one shuffle), two multiplies and an add or subtract, store."""
    body = Body(2 * V, V, fp_ops=3, alu_ops=1)
    return core.call_cycles + rows * loop_cycles(core, body, cols)


# activation -> (float ops, ALU ops, special functions) per 32 elements, and the source's own II
_ACTIVATIONS = {
    # aie2p/silu.cc: x * 0.5 (*1), tanh (special), + 1, * 0.5, x * sigmoid, to_vector (4 float)
    "silu": (5, 0, 1),
    # silu then * up (swiglu: one more load and multiply)
    "silu_mul": (6, 0, 1),
    # aie2p/gelu.cc gelu_tanh_approx: x*x, x*s_beta, s*x, 0.5x, mac, mac and two shift-rounds
    "gelu": (8, 0, 1),
    # tanh(x / c) * c: a multiply, tanh, a multiply
    "tanh": (2, 0, 1),
}
# II the kernel source states: aie2p/gelu.cc, "the post-RA pipeliner achieves II=18, NS=2" (32 lanes)
_STATED_II = {("gelu", "aie2p"): 18.0}


def activation_cycles(core: VectorCore, elements: int, kind: str) -> float:
    """SiLU, SiLU times the gate's other half, GELU (tanh form) or soft-capping (tanh), bf16."""
    if kind not in _ACTIVATIONS:
        raise ConfigError([f"activation = {shown(kind)}: one of {', '.join(_ACTIVATIONS)}"], "kernel model")
    fp, alu, special = _ACTIVATIONS[kind]
    inputs = 2 if kind == "silu_mul" else 1
    body = Body(inputs * V, V, fp_ops=fp, alu_ops=alu, special_ops=special,
                ii_cycles=_STATED_II.get((kind, core.generation), 0.0))
    return core.call_cycles + loop_cycles(core, body, elements)


def kv_append_cycles(core: VectorCore, elements: int, out_bytes: float = 2.0) -> float:
    """Append K and V to the cache: a copy (load, store), and a float op to quantize when the
    cache is narrower than bf16."""
    body = Body(V, V * out_bytes / BF16_BYTES, fp_ops=1 if out_bytes < BF16_BYTES else 0)
    return core.call_cycles + loop_cycles(core, body, elements)


def dequant_cycles(core: VectorCore, elements: int, bits: int) -> float:
    """Weights of ``bits`` (4 or 8) to bf16 with a per-group scale: load the packed vector, unpack
    (one shuffle for int8, two for int4: nibbles to bytes to halves), convert to float and multiply
    by the scale (two float ops), store bf16 (the pattern of mlir-air's int4 GEMV dequantization;
    assumption: no kernel source states its II)."""
    if bits not in (4, 8):
        raise ConfigError([f"dequant bits = {shown(bits)}: one of 4, 8"], "kernel model")
    body = Body(32 * bits / 8, V, fp_ops=2, alu_ops=2 if bits == 4 else 1)
    return core.call_cycles + loop_cycles(core, body, elements)


def pool_cycles(core: VectorCore, outputs: int, window: int, kind: str = "max") -> float:
    """Pooling: each output reads ``window`` input vectors and folds them (a max per input, or an
    add and one final scale for an average), then stores."""
    if kind not in ("max", "avg"):
        raise ConfigError([f"pool kind = {shown(kind)}: one of max, avg"], "kernel model")
    body = Body(window * V, V, alu_ops=window if kind == "max" else 0,
                fp_ops=(window + 1) if kind == "avg" else 0)
    return core.call_cycles + loop_cycles(core, body, outputs)


# An in-register transpose of one b x b block of elements of each size: (b, shuffles). AIE-API
# ``aie::transpose(v, b, b)`` (aie_api include/aie_api/detail/aie2/transpose.hpp): 16-bit 8 x 8
# (64 lanes, two 512-bit registers) is "8x8 emulated", two 1024-bit shuffles then one more per
# half (4); 32-bit 4 x 4 (16 lanes) one shuffle (T32_4x4); 8-bit 8 x 8 (64 lanes) one (T8_8x8).
# AIE-ML v2: assumption, the same counts (no aie2p transpose source read)
TRANSPOSE_BLOCKS = {1: (8, 1), 2: (8, 4), 4: (4, 1)}
RUN_ALIGN_BYTES = 16  # a moved unit of several elements: whole 128-bit accesses (assumption)


def transpose_cycles(core: VectorCore, rows: int, cols: int, elem_bytes: int, unit: int = 1) -> float:
    """One call transposing a ``rows`` x ``cols`` tile in L1 into a ``cols`` x ``rows`` tile, both
    row-major. ``unit`` 1: element by element, in b x b blocks (``TRANSPOSE_BLOCKS``, the tile
    padded up to whole blocks): per block, b row loads of b elements, the shuffles of
    ``aie::transpose``, b row stores of b elements (as mlir-aie kernels gather 8 rows of 8 bf16
    with ``aie::load_v<8>``, transpose and store; each access takes a load or store slot). A
    block's interval is the busiest of the shuffle slot, the load slots, the store slot and the
    ports' bytes; one pipelined loop per row of blocks (its fill each). ``unit`` > 1: each element
    is a run of ``unit`` elements (a block transpose: heads, ``[0, 2, 1, 3]``) moved as whole
    accesses, no shuffle: per unit its loads and stores at the ports' access widths; one loop per
    input row. Plus the call's own overhead."""
    if unit == 1:
        if elem_bytes not in TRANSPOSE_BLOCKS:
            raise ConfigError([f"transpose elem_bytes = {shown(elem_bytes)}: one of {sorted(TRANSPOSE_BLOCKS)}"],
                              "kernel model")
        b, shuffles = TRANSPOSE_BLOCKS[elem_bytes]
        block = b * b * elem_bytes
        ii = max(shuffles / core.vector_issues_per_cycle, b / core.load_issues_per_cycle,
                 b / core.store_issues_per_cycle, block / core.load_bytes_per_cycle,
                 block / core.store_bytes_per_cycle)
        return core.call_cycles + math.ceil(rows / b) * (core.loop_overhead_cycles + math.ceil(cols / b) * ii)
    run = unit * elem_bytes
    if run % RUN_ALIGN_BYTES:
        raise ConfigError([f"transpose unit = {shown(unit)} elements of {shown(elem_bytes)} bytes: a moved run is "
                           f"whole {RUN_ALIGN_BYTES}-byte accesses"], "kernel model")
    load_width = core.load_bytes_per_cycle / core.load_issues_per_cycle
    store_width = core.store_bytes_per_cycle / core.store_issues_per_cycle
    ii = max(math.ceil(run / load_width) / core.load_issues_per_cycle,
             math.ceil(run / store_width) / core.store_issues_per_cycle)
    return core.call_cycles + rows * (core.loop_overhead_cycles + cols * ii)
