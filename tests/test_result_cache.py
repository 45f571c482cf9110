"""Engine results cached by lowered-table content are the results a fresh run gives, bit for bit
(fastsim.result_cache)."""
import numpy as np
import pytest
import xarray as xr

import fastsim
from fastsim.cache import CACHE, clear
from fastsim.kernels import layout as L
from fastsim.lower import lower
from fastsim.simulation import run_batch
from helpers import passthrough


def _outputs(batch):
    return {**dict(zip(("st", "queue", "kst", "kloop", "hst", "locks"), batch.state[:6])), **batch.outputs}


def test_cache__batches_with_repeats_and_hits_equal_fresh_runs():
    clear("engine")
    small, big = lower(passthrough(n_obj=3)), lower(passthrough(n_obj=40, size=2048))
    run_batch([small], cache=True)  # small is now cached; big is not
    mixed = [small, big, small, big]  # a hit, a miss, a hit, a repeat of the miss
    cached, fresh = run_batch(mixed), run_batch(mixed, cache=False)
    for name, a in _outputs(fresh).items():
        np.testing.assert_array_equal(_outputs(cached)[name], a, err_msg=name)
    assert CACHE.size("engine") == 2


def test_cache__public_results_are_identical_and_failures_are_not_cached():
    clear("engine")
    design = passthrough(n_obj=8)
    first, second = fastsim.simulate(design), fastsim.simulate(design)
    xr.testing.assert_identical(first, second)
    stuck = passthrough(n_obj=4)
    stuck.host = stuck.host[:1]  # nobody drains the output: deadlock
    for _ in range(2):  # the second run explains the failure from its own final state
        with pytest.raises(fastsim.DeadlockError, match="deadlock") as err:
            fastsim.simulate(stuck)
        assert err.value.stuck
    assert CACHE.size("engine") == 1


def test_cache__traced_runs_always_simulate():
    clear("engine")
    ds = fastsim.simulate(passthrough(n_obj=5), trace=True)
    assert CACHE.size("engine") == 0 and ds.sizes["event"] > 0


def test_cache__a_run_stopped_at_its_cap_is_kept_and_equals_a_fresh_one_while_other_caps_run_again():
    clear("engine")
    design = passthrough(n_obj=40, size=2048)
    capped = lower(design, max_cycles=500)
    first = run_batch([capped])
    assert first.outputs["res"][0, L.R_STATUS] == L.ST_CYCLE_LIMIT and CACHE.size("engine") == 1
    again, fresh = run_batch([capped]), run_batch([capped], cache=False)
    for name, a in _outputs(fresh).items():
        np.testing.assert_array_equal(_outputs(again)[name], a, err_msg=name)
    run_batch([lower(design, max_cycles=600)])  # another cap: other tables, its own entry
    assert CACHE.size("engine") == 2


@pytest.mark.parametrize("expected, first", [
    ([0, 0, 0, 0, 0, 0, 0, 0, 0], []),
    ([0, 2e5, 0, 0, 5e6, 1e5, 0, 0, 9e4], [4, 1, 5]),
    ([3e5, 3e5, 1e6], [2, 0, 1]),
])
def test_tasks__long_runs_go_first_alone_and_every_design_runs_once(expected, first):
    """A batch's engine calls: designs expected to run long, one call each, longest first (ties in
    batch order); the rest in contiguous chunks; every design in exactly one call."""
    from dataclasses import replace

    from fastsim.simulation import ALONE_CYCLES, _tasks

    one = lower(passthrough(n_obj=2))
    designs = [replace(one, expected_cycles=e) for e in expected]
    tasks = _tasks(designs, threads=2)
    assert tasks[:len(first)] == [(i, i + 1) for i in first]
    covered = sorted(i for lo, hi in tasks for i in range(lo, hi))
    assert covered == list(range(len(designs)))
    assert all(designs[i].expected_cycles < ALONE_CYCLES for lo, hi in tasks[len(first):] for i in range(lo, hi))
