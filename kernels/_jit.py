"""The one place that owns numba settings; nothing else calls ``numba.njit`` directly.

- ``_nrt=False``: kernels never allocate, and without the runtime numba stops wrapping every array
  handed to a helper in reference-count updates. Measured on the 2048^3 GEMM: 11.0 -> 2.6 us per
  stepped cycle (``bench/``).
- Caching is on (a cold compile takes tens of seconds, a cached load about one) and can be switched
  off with ``FASTSIM_NUMBA_CACHE=0``. numba stamps a cached function with its own file only, so a
  change to ``layout.py`` or this file would leave stale machine code behind; kernel caches are
  therefore stamped with a hash of every kernel source file.
- fastmath stays off: kernels are integer and must be exact. ``nogil`` lets a threaded caller run
  several batches at once.
- ``FASTSIM_JIT=0`` leaves every kernel a plain Python function and never imports numba: for
  stepping through a kernel in a debugger, and for tiny batches where JIT start-up (about 0.3 s:
  numba import plus loading cached machine code) costs more than the work. The CLI's systolic
  command uses it for unlimited-bandwidth runs (closed forms only).
"""
import hashlib
import os
from pathlib import Path

JIT = os.environ.get("FASTSIM_JIT", "1") != "0"
CACHE = JIT and os.environ.get("FASTSIM_NUMBA_CACHE", "1") != "0"
_KERNEL_DIR = Path(__file__).resolve().parent
if JIT:
    import numba

    _SOURCES_HASH = hashlib.sha256(
        b"".join(p.read_bytes() for p in sorted(_KERNEL_DIR.glob("*.py"))) + numba.__version__.encode()
    ).hexdigest()


def _install_cache_locator() -> bool:
    """Stamp kernel caches with the hash of all kernel sources (see module docstring)."""
    try:
        from numba.core import caching

        class KernelSourcesLocator(caching.InTreeCacheLocator):
            def get_source_stamp(self):
                return _SOURCES_HASH

            @classmethod
            def from_function(cls, py_func, py_file):
                if Path(py_file).resolve().parent != _KERNEL_DIR:
                    return None
                return super().from_function(py_func, py_file)

        classes = caching.CacheImpl._locator_classes
        if not any(c.__name__ == "KernelSourcesLocator" for c in classes):
            classes.insert(0, KernelSourcesLocator)
        return True
    except (ImportError, AttributeError):  # numba internals moved: compile every time instead
        return False


if CACHE:
    CACHE = _install_cache_locator()


def kernel(fn):
    """Compile ``fn`` as a nopython, nogil kernel with fastsim's cache policy."""
    if not JIT:
        return fn
    return numba.njit(cache=CACHE, nogil=True, fastmath=False, _nrt=False)(fn)


def inline(fn):
    """A small helper inlined into its callers at numba-IR level (no call overhead)."""
    if not JIT:
        return fn
    return numba.njit(cache=CACHE, nogil=True, fastmath=False, inline="always", _nrt=False)(fn)
