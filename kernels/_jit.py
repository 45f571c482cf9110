"""The one place that owns numba settings; nothing else calls ``numba.njit`` directly.

- Two variants per kernel. ``@kernel`` and ``@inline`` return a ``Kernel``: ``compiled`` is the numba
  dispatcher, made on first use (numba is imported then, not when a kernel module is imported), and
  ``python`` is the same function as plain Python, whose calls to other kernels go to their plain
  variants. The Python layer picks one per call with ``kernel.variant(jit)`` (the run's choice,
  ``fastsim.settings``); calling a kernel directly runs the default: compiled, unless
  ``FASTSIM_JIT=0`` (read, never written). Plain Python is for stepping through a kernel in a
  debugger, and for tiny batches where JIT start-up (about 0.3 s: numba import plus loading cached
  machine code) costs more than the work: the CLI's systolic command runs unlimited-bandwidth runs
  (closed forms only) so.
- ``_nrt=False``: kernels never allocate, and without the runtime numba stops wrapping every array
  handed to a helper in reference-count updates. Measured on the 2048^3 GEMM: 11.0 -> 2.6 us per
  stepped cycle (``bench/``).
- Caching is on (a cold compile takes tens of seconds, a cached load about one) and can be switched
  off with ``FASTSIM_NUMBA_CACHE=0``. numba stamps a cached function with its own file only, so a
  change to ``layout.py`` or this file would leave stale machine code behind. Kernel caches
  therefore live in a directory named after a hash of every kernel source file and numba's version:
  numba's documented cache directory (``NUMBA_CACHE_DIR``, ``numba.config.CACHE_DIR``) points there
  while the dispatchers are made (numba resolves it then) and is put back right after. The
  directory is under ``$NUMBA_CACHE_DIR`` when the user set one, else ``kernels/__pycache__``;
  where it cannot be written numba falls back to its usual places. About 1.4 MB per source version;
  older versions' directories are left for the user to remove.
- fastmath stays off: kernels are integer and must be exact. ``nogil`` lets a threaded caller run
  several batches at once.
"""
import functools
import hashlib
import os
import threading
import types
from contextlib import contextmanager
from pathlib import Path

JIT = os.environ.get("FASTSIM_JIT", "1") != "0"
CACHE = os.environ.get("FASTSIM_NUMBA_CACHE", "1") != "0"
_OPTIONS = {"nogil": True, "fastmath": False, "_nrt": False}
_KERNEL_DIR = Path(__file__).resolve().parent
_LOCK = threading.RLock()  # variants are made once, by one thread


class Kernel:
    """A kernel function and its two variants (see the module docstring)."""

    def __init__(self, fn, **options):
        functools.update_wrapper(self, fn)
        self.py_func = fn
        self.options = options
        self._variants = {}

    def __repr__(self) -> str:
        return f"<kernel {self.__module__}.{self.__qualname__}>"

    def __call__(self, *args, **kwargs):
        return self.variant()(*args, **kwargs)

    def variant(self, jit: bool | None = None):
        """The compiled variant (``jit`` True), the plain-Python one (False), or the default
        (None: compiled unless ``FASTSIM_JIT=0``)."""
        return self.compiled if (JIT if jit is None else jit) else self.python

    @property
    def python(self):
        """Plain Python: no numba import, no compilation."""
        made = self._variants.get("python")
        if made is None:
            with _LOCK:
                made = _variant(self, "python")
        return made

    @property
    def compiled(self):
        """The numba dispatcher (compiled on its first call, or loaded from the cache)."""
        made = self._variants.get("compiled")
        if made is None:
            with _LOCK, _cache_dir():
                made = _variant(self, "compiled")
        return made


def _variant(k: Kernel, which: str, making: dict | None = None):
    """``k``'s variant ``which``, made if new (``_LOCK`` held): a copy of its function whose module
    globals have every kernel replaced by that kernel's variant of the same kind. Variants are
    published only when every kernel they reach is finished, so a thread that reads one without
    the lock never runs a copy whose globals still hold the wrappers."""
    made = k._variants.get(which)
    if made is not None:
        return made
    top = making is None
    making = {} if top else making
    if id(k) in making:  # kernels that call each other: the copy being made
        return making[id(k)][1]
    fn = k.py_func
    scope = dict(fn.__globals__)
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__doc__, copy.__kwdefaults__ = fn.__qualname__, fn.__doc__, fn.__kwdefaults__
    if which == "compiled":
        import numba

        made = numba.njit(cache=CACHE, **_OPTIONS, **k.options)(copy)
    else:
        made = copy
    making[id(k)] = (k, made)
    # numba reads the globals when it compiles (first call), not when the dispatcher is made
    for name, value in scope.items():
        if isinstance(value, Kernel):
            scope[name] = _variant(value, which, making)
    if top:
        for kernel, variant in making.values():
            kernel._variants[which] = variant
    return made


@functools.lru_cache(maxsize=1)
def _sources_hash() -> str:
    import numba

    sources = b"".join(p.read_bytes() for p in sorted(_KERNEL_DIR.glob("*.py")))
    return hashlib.sha256(sources + numba.__version__.encode()).hexdigest()[:16]


@contextmanager
def _cache_dir():
    """numba's cache directory set to this source version's while dispatchers are made."""
    if not CACHE:
        yield
        return
    from numba import config

    saved = config.CACHE_DIR
    config.CACHE_DIR = str(Path(saved or _KERNEL_DIR / "__pycache__") / f"fastsim-kernels-{_sources_hash()}")
    try:
        yield
    finally:
        config.CACHE_DIR = saved


def kernel(fn) -> Kernel:
    """``fn`` as a nopython, nogil kernel with fastsim's cache policy."""
    return Kernel(fn)


def inline(fn) -> Kernel:
    """A small helper inlined into its callers at numba-IR level (no call overhead)."""
    return Kernel(fn, inline="always")
