"""Kernel model: matmul, GEMV and conv calls against their closed forms worked by hand, and the
property that more work never takes fewer cycles."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim.arch import NPU1, NPU2, SYSTOLIC16
from fastsim.cost import kernel_blocks, kernel_modelled, matmul_cycles
from fastsim.kernel_model import conv as KC
from fastsim.kernel_model import matmul as KM

# the presets' kernel tables adjust the model (calibration); the closed forms below are the model's own
BARE1 = NPU1.replace(kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={})
BARE2 = NPU2.replace(kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={})


def test_matmul__aie2_int8_block_runs_its_c_moves_in_series():
    # 4x8x8 mmul, 4x2 expansion: 64x64 C is 4 rows x 4 cols = 16 blocks; k = 32 is 4 k-steps.
    # MACs 4 x 8 intrinsics / (8/9 issue) = 36; A/B loads 4 x (4 x 1 + 2 x 2) slots / 2 ports = 16;
    # C int32 4x8 = 128 B = 4 slots x 8 / 2 = 16; stores 8 x 128/32 = 32; fill 7 + 6 = 13.
    # mm.cc as compiled: block = max(36, 16) + 16 + 32 + 13 = 97; call 8: 8 + 16 x 97 = 1560
    assert KM.matmul_call_cycles(NPU1, "int8", 64, 32, 64) == 1560
    # k = 64: MACs 72, loads 32: block 72 + 16 + 32 + 13 = 133: 8 + 16 x 133 = 2136
    assert KM.matmul_call_cycles(NPU1, "int8", 64, 64, 64) == 8 + 16 * 133


def test_matmul__overlapped_c_moves_hide_under_the_macs():
    # a kernel whose loop body hides the C moves: block max(36, 16 + 16, 32) = 36, one fill per row
    # of blocks: 8 + 4 x 13 + 16 x 36 = 636; k = 64: 8 + 52 + 16 x 72 = 1212
    hidden = dataclasses.replace(KM.AIE2.kernels["int8"], overlap_c=True)
    assert KM.matmul_call_cycles(NPU1, "int8", 64, 32, 64, kernel=hidden) == 636
    assert KM.matmul_call_cycles(NPU1, "int8", 64, 64, 64, kernel=hidden) == 1212


def test_matmul__aie2p_bf16_emulation_pays_its_conversion_in_every_k_step():
    # 8x8x8 bfp16, 2x2: 64x128 C = 4 x 8 = 32 blocks, k = 32 = 4 steps; MACs 4 x 4 = 16; conversion
    # of 2 A + 2 B 8x8 blocks per step at 1/32 cycle an element: 4 x 256 / 32 = 32; loads (bf16 A, B:
    # 2 slots each) 4 x 8 / 2 = 16; C f32 (256 B = 4 slots) x 4 / 2 = 8; stores 4 x 256/64 = 16.
    # block max(16 + 32, 16) + 8 + 16 + 13 = 85; call 4 + 32 x 85 = 2724
    assert KM.matmul_call_cycles(NPU2, "bfp16", 64, 32, 128, conv_cycles_per_elem=1 / 32, c_bytes=4) == 2724
    # native bfp16 operands: block max(16, 8) + 8 + 16 + 13 = 53: 4 + 32 x 53 = 1700
    assert KM.matmul_call_cycles(NPU2, "bfp16", 64, 32, 128, c_bytes=4) == 1700


def test_matmul__one_tile_listings_land_within_a_few_percent():
    # Uni Jena "Hello XDNA": XDNA1 bf16 32x32x32 (f32 C) measured 296.4 cycles a call, a hand-scheduled
    # loop body that hides the C moves (overlap_c); the model, 4x4 expansion of 4x8x4: 4 blocks of
    # max(64, 48, 32) = 64, 2 fills, call 8: 8 + 26 + 256 = 290
    hidden = dataclasses.replace(KM.AIE2.kernels["bf16"], overlap_c=True)
    assert KM.matmul_call_cycles(NPU1, "bf16", 32, 32, 32, c_bytes=4, kernel=hidden) == 290
    assert abs(290 / 296.4 - 1) < 0.03


def test_gemv__mv_cc_form_is_load_bound_per_row_group():
    # mv.cc on npu2 bf16 (native 64 MACs/cycle), 1 x 64 x 32: per 16 x 8 step MACs 128/64 = 2, loads
    # (4 x 1 + 1 slot) / 2 = 2.5, store 64 B / 64 = 1 -> 2.5; 8 column steps x 2 groups, flattened into
    # one pipeline: 16 x 2.5 + one fill 13 + call 4
    assert KM.gemv_call_cycles(NPU2, "bfp16", 1, 64, 32) == 4 + 16 * 2.5 + 13
    # the call takes the GEMV form where it is cheaper and m is under one block height (16)
    assert KM.gemv_rows_max(NPU2, "bfp16") == 15
    # (a bf16 matmul: the matmul form pads M = 1 to 16 rows and converts every operand block)
    mm = KM.matmul_call_cycles(NPU2, "bfp16", 1, 2048, 64, conv_cycles_per_elem=1 / 32)
    gv = KM.gemv_call_cycles(NPU2, "bfp16", 1, 2048, 64)
    assert gv < mm and KM.call_cycles(NPU2, "bfp16", 1, 2048, 64, conv_cycles_per_elem=1 / 32) == gv
    # eight rows: the matmul form (8 of its 16 block rows used) beats eight matrix-vector products
    mm8 = KM.matmul_call_cycles(NPU2, "bfp16", 8, 2048, 64)
    assert KM.call_cycles(NPU2, "bfp16", 8, 2048, 64) == mm8 < KM.gemv_call_cycles(NPU2, "bfp16", 8, 2048, 64)
    assert KM.call_cycles(NPU2, "bfp16", 16, 2048, 64, conv_cycles_per_elem=1 / 32) == KM.matmul_call_cycles(
        NPU2, "bfp16", 16, 2048, 64, conv_cycles_per_elem=1 / 32)


def test_conv__pointwise_dense_and_depthwise_closed_forms():
    # pointwise int8 on npu1, 56 pixels x 64 cin x 32 cout, int8 out: conv kernel 4x8x8 with 4 pixel
    # chunks x 1 channel block, no C load: rows ceil(56/16) = 4, cols 32/8 = 4, 16 blocks; 8 k-steps:
    # MACs 8 x 4 x 9/8 = 36; loads 8 x (4 + 2) / 2 = 24; stores 4 x ceil(32/32) = 4 -> 36
    # 8 + 4 x 13 + 16 x 36 = 636
    assert KC.conv_call_cycles(NPU1, "int8", "pointwise", 56, 64, 32, 1, 1) == 636
    # dense 3x3 adds 2.5 realignment cycles per mmul: ceil(56/4) x ceil(576/8) x ceil(32/8) mmuls
    dense = KC.conv_call_cycles(NPU1, "int8", "dense", 56, 64, 32, 3, 3)
    assert dense == KM.matmul_call_cycles(
        NPU1, "int8", 56, 576, 32, c_bytes=1,
        kernel=dataclasses.replace(KM.AIE2.kernels["int8"], expand=(4, 1), c_load=False, overlap_c=True)
    ) + 14 * 72 * 4 * 2.5
    # depthwise: ceil(56 x 32 / 32 lanes) = 56 vector MACs x 9 taps x (1 + 2.5) + call 8
    assert KC.conv_call_cycles(NPU1, "int8", "depthwise", 56, 1, 32, 3, 3) == 8 + 56 * 9 * 3.5


def test_cost__matmul_cycles_uses_the_model_and_adds_the_arch_adjustments():
    assert matmul_cycles(64, 32, 64, "int8", BARE1, c_bytes=4) == 1560
    # the arch's tables: call and block cycles add; the efficiency callers pass (the arch's, as
    # calibration and mlir/kernels.py do) divides the MACs
    tuned = BARE1.replace(kernel_efficiency={"int8": 0.5}, kernel_call_cycles={"int8": 10},
                          kernel_block_cycles={"int8": 2})
    assert matmul_cycles(64, 32, 64, "int8", tuned, c_bytes=4) == 1560 + 10 + 16 * 2
    # MACs 32 / (8/9) / 0.5 = 72 > loads 16: 8 + 10 + 16 x (72 + 16 + 32 + 13 + 2) = 2178
    assert matmul_cycles(64, 32, 64, "int8", tuned, tuned.efficiency("int8"), c_bytes=4) == 2178
    assert kernel_blocks(64, 64, "int8", BARE1) == 16
    assert matmul_cycles(32, 64, 64, "int8", SYSTOLIC16) > 0  # mesh cores keep the mesh model


def test_model__generic_and_mesh_arrays_have_no_units():
    assert KM.units(SYSTOLIC16) is None and KM.micro_kernel(SYSTOLIC16, "int8") is None
    assert not kernel_modelled(SYSTOLIC16, "int8") and kernel_modelled(NPU2, "bfp16")
    assert KM.generation(NPU1) == "aie2" and KM.generation(NPU2) == "aie2p"


@pytest.mark.parametrize("arch,key", [(BARE1, "int8"), (BARE1, "bf16"), (BARE1, "int16"), (BARE1, "int8xint4"),
                                      (BARE2, "bfp16"), (BARE2, "int8"), (BARE2, "bf16")])
@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 256), k=st.integers(1, 512), n=st.integers(1, 256), grow=st.sampled_from("mkn"),
       by=st.integers(1, 64), eff=st.floats(0.2, 1.0), conv=st.sampled_from([0.0, 1 / 32]))
def test_matmul__more_work_never_takes_fewer_cycles(arch, key, m, k, n, grow, by, eff, conv):
    base = KM.call_cycles(arch, key, m, k, n, tuning=KM.Tuning(eff), conv_cycles_per_elem=conv)
    bigger = dict(m=m, k=k, n=n)
    bigger[grow] += by
    assert KM.call_cycles(arch, key, **bigger, tuning=KM.Tuning(eff), conv_cycles_per_elem=conv) >= base
    assert KM.call_cycles(arch, key, m, k, n, tuning=KM.Tuning(eff * 0.9), conv_cycles_per_elem=conv) >= base
    assert KM.call_cycles(arch, key, m, k, n, tuning=KM.Tuning(eff), conv_cycles_per_elem=conv + 0.01) >= base
    # vectorised: a batch gives what each call gives alone
    ms = np.array([m, m + by])
    assert list(KM.call_cycles(arch, key, ms, k, n)) == [KM.call_cycles(arch, key, x, k, n) for x in ms]


@pytest.mark.parametrize("kind", KC.KINDS)
@settings(max_examples=25, deadline=None)
@given(pixels=st.integers(1, 256), cin=st.integers(1, 128), kb=st.integers(1, 64), rs=st.sampled_from([1, 3, 5]),
       grow=st.sampled_from(["pixels", "cin", "kb"]), by=st.integers(1, 32))
def test_conv__more_work_never_takes_fewer_cycles(kind, pixels, cin, kb, rs, grow, by):
    for arch in (BARE1, BARE2):
        base = KC.conv_call_cycles(arch, "int8", kind, pixels, cin, kb, rs, rs)
        bigger = dict(pixels=pixels, cin=cin, kb=kb)
        bigger[grow] += by
        assert KC.conv_call_cycles(arch, "int8", kind, r=rs, s=rs, **bigger) >= base
        assert KC.conv_call_cycles(arch, "int8", kind, pixels, cin, kb, rs + 2, rs + 2) >= base
