"""The one place that owns numba settings; nothing else calls ``numba.njit`` directly.

Caching is on by default (cold compile of the engine is tens of seconds; a cached load ~1 s) and can
be switched off with ``FASTSIM_NUMBA_CACHE=0``. fastmath stays off: kernels are integer and must be
exact. ``nogil`` lets a threaded caller run several batches at once.
"""
import os

import numba

CACHE = os.environ.get("FASTSIM_NUMBA_CACHE", "1") != "0"


def kernel(fn):
    """Compile ``fn`` as a nopython, nogil kernel with fastsim's cache policy."""
    return numba.njit(cache=CACHE, nogil=True, fastmath=False)(fn)


def inline(fn):
    """A helper inlined into its callers at the IR level: no call overhead and no per-call array
    reference counting, which dominated the per-cycle cost (measured ~13 us/step -> see bench)."""
    return numba.njit(cache=CACHE, nogil=True, fastmath=False, inline="always")(fn)
