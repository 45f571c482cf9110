"""Small hand-built designs shared by tests, and a property's two tiers (``two_tiers``)."""
import functools

import pytest
from hypothesis import given, settings

from fastsim import NPU2, Acquire, Compute, Design, Loop, Release, mm2s, object_fifo, s2mm
from fastsim.llm.model import ModelConfig

# a two-layer model: the optimize run several modules read (conftest.optimize_run)
SMALL = ModelConfig("small", 512, 2, 8, 2, 64, 1024, 1000)


def passthrough(n_obj: int = 4, size: int = 1024, compute_cycles: int = 300, arch=NPU2) -> Design:
    """shim -> compute core -> shim through two depth-2 ObjectFifos."""
    d = Design(arch, "passthrough")
    sh, ct = d.shim(0), d.compute(0, 0)
    src, dst = d.ddr_buffer(size * n_obj, "in"), d.ddr_buffer(size * n_obj, "out")
    fin = object_fifo(d, mm2s(sh, 0), [s2mm(ct, 0)], 2, size, "in")
    fout = object_fifo(d, mm2s(ct, 0), [s2mm(sh, 0)], 2, size, "out")
    c = fin["consumers"][0]
    d.core_program(ct, Loop(n_obj, (Acquire(c["cons_lock"]), Acquire(fout["producer_prod_lock"]),
                                    Compute(compute_cycles), Release(c["prod_lock"]),
                                    Release(fout["producer_cons_lock"]))))
    d.push(mm2s(sh, 0), d.bd(mm2s(sh, 0), src, size, name="in"), repeat=n_obj)
    d.push(s2mm(sh, 0), d.bd(s2mm(sh, 0), dst, size, name="out"), repeat=n_obj)
    d.wait(s2mm(sh, 0))
    return d


def bench_module(name: str):
    """A module of bench/ (scripts, not a package): the tests that check what a script fits or
    reports import it from there."""
    import importlib
    import sys
    from pathlib import Path

    bench = str(Path(__file__).resolve().parents[1] / "bench")
    sys.path.insert(0, bench)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(bench)


def two_tiers(fast: int, full: int, *strategies, **named_strategies):
    """One hypothesis property in both tiers (docs/testing.md): ``fast`` examples in the default
    tier, ``full`` under ``-m slow``, each derandomized. ``strategies``: ``given``'s arguments.
    Returns the two tests, to be bound to module names that pytest collects::

        test_p, test_p__more_examples = two_tiers(15, 40, st.integers())(check)

    (each on its own copy of ``check``: hypothesis keeps its settings on the function object)."""
    def wrap(check):
        default = settings(max_examples=fast, deadline=None)(given(*strategies, **named_strategies)(copied(check)))
        slow = settings(max_examples=full, deadline=None)(given(*strategies, **named_strategies)(copied(check)))
        return default, pytest.mark.slow(slow)
    return wrap


def copied(check):
    """A copy of test function ``check`` to hold its own hypothesis settings (hypothesis keeps them
    on the function object, so one property at two sizes needs two functions)."""
    @functools.wraps(check)
    def run(*args, **kwargs):
        return check(*args, **kwargs)
    return run
