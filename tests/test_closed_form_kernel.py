"""The compiled closed form (``fastsim.kernels.closed_form``) against its reference, the numpy
closed form (``plan.evaluate`` and ``plan.problems``): bit-identical on random ops, arches and
pins, on every batch and tile a search ranks."""
import numpy as np
from hypothesis import given, settings, strategies as st

from fastsim import NPU1, NPU2
from fastsim.mapping.branch_bound import control_cycles
from fastsim.mapping.candidates import COLUMNS, ranked_compiled, ranked_numpy, weighed_control
from fastsim.mapping.dispatch import ControlWeight
from fastsim.mapping.plan import control_counts_of
from fastsim.mapping.search import Pins, _batches, _grid
from fastsim.mapping.space import Matmul
from helpers import two_tiers

# columns that differ in read and write bandwidth, and a part whose kernels cost more per call
ASYM = NPU2.replace(name="asym", shim_read_bytes_per_cycle=(1.0,) * 4 + (4.0,) * 4,
                    shim_write_bytes_per_cycle=(2.0,) * 4 + (3.0,) * 4)
SLOW_CALLS = NPU1.replace(name="slow_calls", kernel_call_cycles={"int8": 40, "bf16": 25},
                          kernel_block_cycles={"int8": 3.5, "bf16": 2})
ARCHES = (NPU1, NPU2, ASYM, SLOW_CALLS)


@st.composite
def ops(draw):
    dtype = draw(st.sampled_from(("bf16", "int8")))
    return Matmul(draw(st.integers(1, 700)), draw(st.integers(1, 900)), draw(st.integers(1, 700)), dtype,
                  b_bytes=draw(st.sampled_from((None, 0.5625, 1.0))),
                  kernel_efficiency=draw(st.sampled_from((None, 0.37))),
                  kernel_overhead_cycles=draw(st.sampled_from((0, 17))),
                  cast_cycles_per_weight=draw(st.sampled_from((0.0, 0.125))),
                  macs_scale=draw(st.sampled_from((1.0, 0.5))),
                  static_b=draw(st.booleans()), a_on_chip=draw(st.booleans()), c_on_chip=draw(st.booleans()),
                  onchip_window_bytes=draw(st.sampled_from((0, 3000, 65536))), c_handoff=draw(st.booleans()))


def _assert_same(op, arch, pins, control_weight=0.0):
    """Every column equal to the reference's, and the control a search weighs from them
    (``weighed_control``) equal to ``branch_bound.control_cycles`` of the candidates' closed-form
    control counts (``plan.control_counts_of``, held to built designs' counts by its own tests); and
    without illegal candidates' numbers, the same pairs and reasons, legal pairs'
    numbers equal and illegal pairs' NaN."""
    pairs = 0
    for batch in _batches(op, arch, pins):
        m, k, n, keep = _grid(op, batch, pins)
        want = ranked_numpy(op, batch, arch, m, k, n, keep)
        got = ranked_compiled(op, batch, arch, m, k, n, keep)
        for c in COLUMNS:
            assert got[c].dtype.kind == want[c].dtype.kind, c
            np.testing.assert_array_equal(got[c], want[c], err_msg=f"{c} of {op} on {arch.name}, {batch.mapping}")
        designs = control_cycles(control_counts_of(op, batch, arch, m, k, n), arch, control_weight)
        np.testing.assert_array_equal(weighed_control(got["layer"], got["repeat"], control_weight, arch),
                                      np.broadcast_to(designs, keep.shape)[want["s"], want["t"]])
        lean = ranked_compiled(op, batch, arch, m, k, n, keep, illegal_numbers=False)
        legal = want["reason"] < 0
        for c in COLUMNS:
            if c in ("s", "t", "reason"):
                np.testing.assert_array_equal(lean[c], want[c], err_msg=c)
            else:
                np.testing.assert_array_equal(lean[c][legal], want[c][legal], err_msg=c)
                assert np.isnan(lean[c][~legal]).all(), c
        pairs += len(want["s"])
    return pairs


# a search outside a graph (0), inside one (set-ups per run), and a gathered repeat (re-runs too)
WEIGHTS = (0.0, 1.0, ControlWeight(0.25), ControlWeight(1.0, 2.5))


def _compiled_equals_numpy(op, arch, cols, buffers, weight, split, k_panel, c_buffers):
    k_panel = None if op.static_b else k_panel  # a K panel stages what os streams; static weights are ws
    pins = Pins(cols=cols, buffers=buffers, split=split, k_panel=k_panel, c_buffers=c_buffers,
                dataflow=("ws",) if op.static_b else ("os",) if k_panel else ())
    _assert_same(op, arch, pins, weight)


test_compiled_closed_form_equals_numpy, test_compiled_closed_form_equals_numpy__more = two_tiers(
    15, 40, op=ops(), arch=st.sampled_from(ARCHES), cols=st.sampled_from((None, 1, 3)),
    buffers=st.sampled_from((None, 1)), weight=st.sampled_from(WEIGHTS), split=st.sampled_from((None, "2dt")),
    k_panel=st.sampled_from((None, 3, 16)), c_buffers=st.sampled_from((None, 1)))(_compiled_equals_numpy)



def test_compiled_closed_form_equals_numpy_on_llm_shapes():
    """Decode GEMVs with int4 weights and a prefill projection: the shapes a cold LLM pass ranks."""
    shapes = [Matmul(1, 2048, 8192, "bf16", b_bytes=0.5625, cast_cycles_per_weight=0.0625),
              Matmul(2048, 2048, 512, "bf16"), Matmul(512, 64, 4096, "bf16", macs_scale=0.5, a_on_chip=True)]
    assert sum(_assert_same(op, arch, Pins(), weight) for op in shapes for arch in (NPU1, NPU2)
               for weight in (0.0, ControlWeight(1.0, 3.0))) > 20_000


def _sizes_by_definition(extent: int) -> set[int]:
    """Powers of two up to the first that covers ``extent`` (at most 512), from 4 on unless that
    first one is smaller: integer arithmetic, independent of the search's vectorized form."""
    top = min(1 << (extent - 1).bit_length(), 512)
    return {1 << b for b in range(10) if min(4, top) <= 1 << b <= top}


@settings(max_examples=25, deadline=None)
@given(op=ops(), arch=st.sampled_from(ARCHES))
def test_grid_gives_each_structure_exactly_its_own_tile_sizes(op, arch):
    for batch in _batches(op, arch, Pins()):
        m, k, n, keep = _grid(op, batch, Pins())
        axes, union = (m[0], k[0], n[0]), [set(), set(), set()]
        for s in range(len(batch.structures)):
            own = [_sizes_by_definition(-(-x // int(p[s, 0])))
                   for x, p in ((op.m, batch.pm), (op.k, batch.pk), (op.n, batch.pn))]
            want = np.logical_and.reduce([np.isin(a, sorted(o)) for a, o in zip(axes, own)])
            np.testing.assert_array_equal(keep[s], want)
            for u, o in zip(union, own):
                u |= o
        # the grid is every combination of the sizes some structure considers, each once
        assert len(set(zip(*axes))) == len(axes[0]) == np.prod([len(u) for u in union])
        assert [set(a.tolist()) for a in axes] == union
