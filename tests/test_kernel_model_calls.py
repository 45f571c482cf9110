"""Kernel model, one call of mlir-air's registry bf16 GEMM (mm_aie2p.cc matmul_vectorized_8x8x8_bf16_f32
at 64x32x128, f32 C in L1): the per-call figures docs/kernel_model.md quotes against their closed forms,
and the properties its argument rests on (a call's cost per MAC does not depend on n; more work never
takes fewer cycles; C moves in series, mm.cc as compiled, never take fewer cycles than overlapped)."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim.arch import NPU2
from fastsim.kernel_model import matmul as KM

BARE2 = NPU2.replace(kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={})
CONV = 1 / 32  # npu2's bf16 -> bfp16 conversion, cycles per element (Arch.datapaths)
F32 = 4.0  # the registry design keeps C in L1 as f32 across K


def _call(m, k, n, c_bytes=F32, kernel=None):
    return float(KM.matmul_call_cycles(BARE2, "bfp16", m, k, n, conv_cycles_per_elem=CONV, c_bytes=c_bytes,
                                       kernel=kernel))


@pytest.fixture
def overlapped():
    """The same kernel with its C moves hidden under the MACs (a hand-scheduled loop body)."""
    return dataclasses.replace(KM.AIE2P.kernels["bfp16"], overlap_c=True)


def test_registry_call__in_series_closed_form():
    # 8x8x8 mmul, 2x2 expansion: 64x128 C = 4 rows x 8 cols = 32 blocks; k = 32 is 4 k-steps.
    # MAC 4 x 4 = 16; conversion 4 x (2x64 + 2x64) / 32 = 32; A/B loads 4 x (2 x 2 + 2 x 2) slots / 2 = 16;
    # f32 C loads 4 x 4 slots / 2 = 8, stores 4 x 256/64 = 16; fill 7 + 6 = 13.
    # The C moves between k loops: block = max(48, 16) + 8 + 16 + 13 = 85; 4 + 32 x 85 = 2724
    assert _call(64, 32, 128) == 2724
    assert _call(64, 32, 64) == 4 + 16 * 85
    # bf16 C: loads 4 x 2 slots / 2 = 4, stores 4 x 128/64 = 8: block 48 + 4 + 8 + 13 = 73
    assert _call(64, 32, 128, c_bytes=2.0) == 4 + 32 * 73


def test_registry_call__overlapped_closed_form(overlapped):
    # block max(48, 16 + 8, 16) = 48; call 4, fills 4 rows x 13 = 52: 4 + 52 + 32 x 48 = 1592, whatever C's dtype
    assert _call(64, 32, 128, kernel=overlapped) == 1592
    assert _call(64, 32, 128, c_bytes=2.0, kernel=overlapped) == 1592
    # tile_n 64: 16 blocks, 4 + 52 + 16 x 48 = 824
    assert _call(64, 32, 64, kernel=overlapped) == 824


def test_registry_call__cost_per_mac_does_not_depend_on_n(overlapped):
    # the registry's tile_n 64 -> 128 sweep (1.35-1.38x) cannot come from the core: either form's
    # cycles per MAC at n = 64 and n = 128 differ by a few per cent only
    for kernel in (None, overlapped):
        per_mac = [_call(64, 32, n, kernel=kernel) / (64 * 32 * n) for n in (64, 128)]
        assert per_mac[0] / per_mac[1] < 1.04


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([16, 32, 48, 64, 96, 128]), st.sampled_from([8, 16, 32, 64, 128]),
       st.sampled_from([16, 32, 64, 96, 128]), st.sampled_from(["m", "k", "n"]))
def test_registry_call__more_work_never_fewer_cycles(m, k, n, grow):
    bigger = {"m": (2 * m, k, n), "k": (m, 2 * k, n), "n": (m, k, 2 * n)}[grow]
    hidden = dataclasses.replace(KM.AIE2P.kernels["bfp16"], overlap_c=True)
    fast = (_call(m, k, n, kernel=hidden), _call(*bigger, kernel=hidden))
    slow = (_call(m, k, n), _call(*bigger))
    assert fast[1] >= fast[0] and slow[1] >= slow[0]
    assert slow[0] >= fast[0]  # C moves in series never beat them overlapped
