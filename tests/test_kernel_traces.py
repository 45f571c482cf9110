"""The matmul kernel model against 24 one-core kernel traces ("Striking the Balance" Tables 1-3,
``bench/kernel_traces.py``): mm.cc as compiled runs its C moves in series with the MACs, and that
form, chosen on the Table 1 train rows, predicts the held-out Tables 2-3 kernels."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import kernel_traces as KT  # noqa: E402


def _by_role(overlap_c=None):
    out = {"train": [], "held out": []}
    for row, err in KT.errors(overlap_c):
        out[row.role].append(abs(err))
    return out


def test_kernel_traces__every_row_is_priced_on_the_datapath_its_dtype_runs_on():
    # bf16 on XDNA2 runs on the bfp16 datapath (converted in the mac), elsewhere on its own
    import math

    from fastsim.kernel_model import matmul as KM

    rows = KT.errors()
    assert len(rows) == 24 and all(math.isfinite(e) for _, e in rows)
    for row, _ in rows:
        key, conv = KT.ARCHS[row.part].datapath_options(row.in_dtype)[-1]
        assert KM.micro_kernel(KT.ARCHS[row.part], key) is not None
        assert (key, conv > 0) == (("bfp16", True) if (row.part, row.in_dtype) == ("npu2", "bf16")
                                   else (row.in_dtype, False))


def test_kernel_traces__the_serial_model_lands_every_row_within_12_percent():
    errs = _by_role()
    for role, values in errs.items():
        assert max(values) < 0.12, role
        assert sorted(values)[len(values) // 2] < 0.06, role


def test_kernel_traces__overlapped_c_moves_would_miss_the_held_out_kernels():
    # the evidence discriminates: the form the model used before is 2x off at short k
    held = _by_role(overlap_c=True)["held out"]
    assert sorted(held)[len(held) // 2] > 0.25 and max(held) > 1.0
