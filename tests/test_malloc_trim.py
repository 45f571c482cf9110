"""A sweep worker hands the C heap's free pages back after each task (``fastsim.malloc_trim``)."""
from __future__ import annotations

import platform

import numpy as np
import pytest

from fastsim.malloc_trim import return_free_memory


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_trim__freed_heap_pages_go_back_to_the_system():
    """128 MB of blocks freed below one kept at the heap's top: glibc keeps their pages (it trims
    only a free top by itself) until ``malloc_trim`` releases them."""
    warm = np.ones(16_000)  # one 128 kB block freed: glibc's threshold adapts, later ones go to the heap
    del warm
    blocks = [np.ones(16_000) for _ in range(1_000)]
    keep = np.ones(16_000)
    del blocks
    before = _rss_bytes()
    assert return_free_memory()
    assert _rss_bytes() < before - 64 * 2**20
    del keep


def test_trim__says_whether_this_c_library_could():
    assert return_free_memory() == (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
