"""``plan.plan_many`` plans many (structure, tile) pairs with a few ``evaluate`` calls: each pair's
numbers must be those of ``evaluate`` on that pair alone, whatever else shares its batch."""
import numpy as np
from hypothesis import given, settings, strategies as st

from fastsim.mapping.plan import RESOURCES, evaluate, plan_many, stack
from fastsim.mapping.search import Pins, _batches, _grid
from test_closed_form_kernel import ARCHES, ops


def _alone(op, s, arch, tile) -> dict:
    """The pair's plan from ``evaluate`` on a batch of that structure and tile only."""
    out = {}
    for key, v in evaluate(op, stack([s], arch), arch, *tile).items():
        v = np.asarray(v)
        if key == "bounds":
            out[key] = v.reshape(len(RESOURCES))
            continue
        v = v.item()
        out[key] = int(v) if isinstance(v, float) and v.is_integer() else v
    return out


@settings(max_examples=20, deadline=None)
@given(op=ops(), arch=st.sampled_from(ARCHES), seed=st.integers(0, 2**32 - 1))
def test_plan_many__each_pair_as_planned_alone(op, arch, seed):
    rng = np.random.default_rng(seed)
    pairs = []
    for batch in _batches(op, arch, Pins()):
        m, k, n, keep = _grid(op, batch, Pins())
        s_idx, t_idx = np.nonzero(keep)
        for j in rng.choice(len(s_idx), size=min(6, len(s_idx)), replace=False):
            pairs.append((batch.structures[s_idx[j]], (int(m[0, t_idx[j]]), int(k[0, t_idx[j]]), int(n[0, t_idx[j]]))))
    rng.shuffle(pairs)  # groups interleaved, as a search's rows come
    for (s, tile), got in zip(pairs, plan_many(op, pairs, arch)):
        want = _alone(op, s, arch, tile)
        assert list(got) == list(want)
        for key in want:
            if key == "bounds":
                np.testing.assert_array_equal(got[key], want[key])
            else:
                assert got[key] == want[key] and type(got[key]) is type(want[key]), (key, s.mapping, tile)
