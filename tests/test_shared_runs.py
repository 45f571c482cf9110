"""Processes sharing a cache directory simulate a large design once (fastsim.cache.claim,
fastsim.result_cache): a claim by a live process is waited for and its stored result taken, bit
for bit; a dead or stale holder's claim is taken over; without a disk tier nothing is claimed."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import fastsim.simulation as simulation
from fastsim import cache, result_cache
from fastsim.lower import lower
from helpers import passthrough

KEY = b"\x01" * 20


@pytest.fixture
def shared_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV_DIR, str(tmp_path))  # settings are per thread; the waiter runs in its own
    monkeypatch.setenv(cache.ENV_OFF, "1")
    return tmp_path


def _claim_file(key=KEY):
    return cache._path(result_cache.REGION, key)[0].with_suffix(".claim")


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_claims__one_holder_at_a_time_and_dead_or_stale_holders_are_taken_over(shared_dir):
    assert cache.claim("engine", KEY) is True
    assert cache.claim("engine", KEY) is False  # held by this (live) process
    cache.release("engine", KEY)
    assert cache.claim("engine", KEY) is True
    _claim_file().write_text(f"{cache.socket.gethostname()} {_dead_pid()}")
    assert cache.claim("engine", KEY) is True  # its holder died
    _claim_file().write_text("another-host 1")
    assert cache.claim("engine", KEY) is False  # another host's fresh claim
    old = time.time() - cache.CLAIM_STALE_S - 1
    os.utime(_claim_file(), (old, old))
    assert cache.claim("engine", KEY) is True  # another host's stale claim
    cache.release("engine", KEY)


def test_claims__no_disk_tier_no_claims(monkeypatch):
    monkeypatch.setenv(cache.ENV_OFF, "0")
    assert cache.claim("engine", KEY) is None


def test_shared_runs__a_design_another_process_holds_is_waited_for_and_taken_bit_for_bit(shared_dir, monkeypatch):
    monkeypatch.setattr(result_cache, "COSTLY_STEPS", 1)  # every run is worth sharing
    cache.clear("engine")
    lw = lower(passthrough(n_obj=6))
    key = result_cache.key_of(lw)
    fresh = simulation.run_batch([lw], cache=False)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _claim_file(key).parent.mkdir(parents=True, exist_ok=True)
        _claim_file(key).write_text(f"{cache.socket.gethostname()} {holder.pid}")
        ran = []
        monkeypatch.setattr(simulation, "_run", lambda batch, *a: ran.append(len(batch.designs)))
        out = {}
        waiter = threading.Thread(target=lambda: out.setdefault("b", simulation.run_batch([lw], share=True)))
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive() and not ran  # waiting for the holder, not simulating
        result_cache.put(key, fresh, 0)  # the holder stores its result (memory and disk) ...
        cache.CACHE.clear("engine")  # ... in its own process: this one finds it on disk only
        _claim_file(key).unlink()
        waiter.join(10)
        assert not waiter.is_alive() and not ran
        for a, b in zip(result_cache._rows(fresh), result_cache._rows(out["b"])):
            np.testing.assert_array_equal(a, b)
        # a holder that stores nothing (a cheap or failed run): the waiter simulates it itself
        cache.clear("engine", disk=True)
        _claim_file(key).parent.mkdir(parents=True, exist_ok=True)
        _claim_file(key).write_text(f"{cache.socket.gethostname()} {holder.pid}")
        waiter = threading.Thread(target=lambda: simulation.run_batch([lw], share=True))
        waiter.start()
        time.sleep(0.2)
        _claim_file(key).unlink()
        waiter.join(10)
        assert ran == [1]
    finally:
        holder.kill()


@pytest.mark.slow
def test_shared_runs__two_processes_on_one_design_simulate_it_once(tmp_path):
    code = """
import sys, time
from fastsim import result_cache, simulation
from fastsim.lower import lower
sys.path.insert(0, {tests!r})
from helpers import passthrough
result_cache.COSTLY_STEPS = 1
ran = []
run = simulation._run
simulation._run = lambda *a: (ran.append(1), time.sleep(1.0), run(*a))
b = simulation.run_batch([lower(passthrough(n_obj=7))], share=True)
from fastsim.kernels import layout as L
print(len(ran), int(b.outputs["res"][0, L.R_CYCLES]))
"""
    env = dict(os.environ, FASTSIM_CACHE_DIR=str(tmp_path), FASTSIM_CACHE="1")
    script = code.format(tests=os.path.dirname(__file__))
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert sorted(int(o[0]) for o in outs) == [0, 1]  # one simulated, the other took its result
    assert outs[0][1] == outs[1][1]


def test_shared_runs__a_claimed_run_is_stored_on_disk_however_cheap(shared_dir, monkeypatch):
    monkeypatch.setattr(result_cache, "COSTLY_STEPS", 10**12)  # nothing is costly
    lw = lower(passthrough(n_obj=5))
    key = result_cache.key_of(lw)
    simulation.run_batch([lw])
    assert not cache._path(result_cache.REGION, key)[0].exists()  # unshared and cheap: memory only
    cache.clear("engine")
    simulation.run_batch([lw], share=True)  # claimed: a waiter elsewhere must find it
    assert cache._path(result_cache.REGION, key)[0].exists() and not _claim_file(key).exists()
