"""Hand the C heap's free pages back to the operating system between a worker's tasks.

fastsim's local sweep workers run with glibc's adaptive malloc thresholds (``sweeping.engine``
says why: a fixed trim threshold made every large numpy temporary a fresh mapping), so glibc
keeps what numpy and the engine free for reuse, and a worker's resident memory only grew: 81 and
95 MB of the two workers' heaps were free after eight tasks of ``sweeps/ablation_100k.toml``. One ``malloc_trim(0)``
per task returns those pages (glibc releases whole free pages inside the heap too, not only its
top) at the cost of a few milliseconds per task, and the next task's allocations run as fast.
It returns only what is already freed: a task's cyclic garbage (designs) waits for the collector.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.lru_cache(maxsize=1)
def _libc():
    """glibc, or None where the C library has no ``malloc_trim`` (macOS, musl)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
    except (OSError, TypeError):  # no C library by that name (Windows: none found)
        return None
    if not hasattr(libc, "malloc_trim"):
        return None
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


def return_free_memory() -> bool:
    """Release the C heap's free pages (``malloc_trim(0)``); False where this C library cannot."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
