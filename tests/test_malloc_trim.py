"""A sweep worker hands the C heap's free pages back after each task (``fastsim.malloc_trim``)."""
from __future__ import annotations

import os
import platform

import numpy as np
import pytest

from fastsim import settings
from fastsim.sweeping import engine
from fastsim.sweeping.malloc_trim import return_free_memory


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_trim__freed_heap_pages_go_back_to_the_system():
    """128 MB of blocks freed below one kept at the heap's top: glibc keeps their pages (it trims
    only a free top by itself) until ``malloc_trim`` releases them."""
    blocks = [np.ones(16_000) for _ in range(1_000)]
    keep = np.ones(16_000)
    del blocks
    before = _rss_bytes()
    assert return_free_memory()
    assert _rss_bytes() < before - 64 * 2**20
    del keep


def test_trim__a_sweep_task_ends_with_a_trim_even_when_it_fails(monkeypatch):
    calls = []
    monkeypatch.setattr(engine, "return_free_memory", lambda: calls.append(1))
    monkeypatch.setattr(engine, "run_chunks", lambda spec, out, chunks: (len(chunks), 0))
    assert engine._run_chunks_with(None, "", [7], settings.current()) == (1, 0, "")
    monkeypatch.setattr(engine, "run_chunks", lambda spec, out, chunks: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        engine._run_chunks_with(None, "", [7], settings.current())
    assert calls == [1, 1]
