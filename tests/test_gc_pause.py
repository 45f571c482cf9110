"""fastsim pauses Python's cyclic garbage collector only while it builds designs in bulk, and
always leaves it as it found it (also when the work raises)."""
import gc

import pytest

import fastsim
from fastsim.gc_pause import gc_paused
from fastsim.llm import LlmStudy, simulate_llm


@pytest.fixture(autouse=True)
def collector_enabled_after():
    was = gc.isenabled()
    yield
    assert gc.isenabled() == was
    gc.enable()


def test_gc_pause__disables_inside_and_restores_nested_and_on_error():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block does not end the outer pause
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_gc_pause__keeps_a_callers_own_disable():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_gc_pause__llm_runs_leave_the_collector_on_after_success_and_errors():
    simulate_llm(LlmStudy(model="llama-3.2-1b", regime="decode", context=64))
    assert gc.isenabled()
    with pytest.raises(fastsim.ConfigError):
        simulate_llm(LlmStudy(model="llama-3.2-1b", regime="decode", context=64, cuts=(999,)))
    assert gc.isenabled()


EXITING = """
import gc, sys
from fastsim.gc_pause import exit_without_collecting

class Cycle:
    def __del__(self):
        print("collected", flush=True)

a = Cycle(); a.me = a
del a
if sys.argv[1] == "skip":
    exit_without_collecting()
    exit_without_collecting()  # calling it again is harmless
"""


@pytest.mark.parametrize("how", ["skip", "collect"])
def test_gc_pause__a_process_can_exit_without_its_last_collection(how):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", EXITING, how], capture_output=True, text=True, check=True)
    assert out.stdout.count("collected") == (0 if how == "skip" else 1)
