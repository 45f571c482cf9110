"""Keep xarray from importing dask.array in commands that never make dask arrays.

When dask is installed, xarray imports ``dask.array`` (and through it scipy) the first time it
builds a variable, only to learn the dask array type for an ``isinstance`` check: about 0.4 s of
every small ``fastsim run``. No dask array can exist before ``dask.array`` is imported, so the type
can be looked up lazily: ``lazy_dask_array_type`` puts an entry in xarray's cache of duck-array
modules that answers "no dask array type" until ``dask.array`` is imported by anyone, and the real
type from then on. Checks give the same answers as before, only later.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys


class _LazyDask:
    """xarray's DuckArrayModule("dask"), without importing dask.array up front."""

    @property
    def type(self) -> tuple:
        array = sys.modules.get("dask.array")
        return (array.Array,) if array is not None and hasattr(array, "Array") else ()

    @property
    def module(self):
        return importlib.import_module("dask")

    @property
    def version(self):
        from packaging.version import Version

        return Version(importlib.metadata.version("dask"))

    @property
    def available(self) -> bool:
        return True


def lazy_dask_array_type() -> bool:
    """Install the lazy entry (True), unless xarray already knows dask, dask is not installed or
    xarray's internals moved (False: nothing changes)."""
    if importlib.util.find_spec("dask") is None:
        return False
    try:
        from xarray.namedarray import pycompat
    except ImportError:
        return False
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    if not isinstance(cache, dict) or "dask" in cache:
        return False
    cache["dask"] = _LazyDask()
    return True
