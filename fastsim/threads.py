"""How many threads the engine spreads a batch over.

The kernels release the GIL, so independent designs of one batch run on a plain thread pool (no
numba threading layer: its OpenMP layer kills forked dask workers and its workqueue layer aborts
under concurrent callers). The count comes from an explicit argument, else the settings in force (``fastsim.settings``), else ``FASTSIM_THREADS``,
else every core this process may use. Sweep workers use one thread each: they are the parallelism.
"""
from __future__ import annotations

import os

from .errors import ConfigError
from .settings import current

ENV = "FASTSIM_THREADS"


def available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def resolve_threads(threads: int | None = None) -> int:
    """``threads`` if given, else ``Settings.threads`` in force, else ``$FASTSIM_THREADS``, else
    every available core."""
    where = "threads"
    if threads is None:
        threads = current().threads
    if threads is None:
        raw = os.environ.get(ENV)
        if raw is None or raw == "":
            return available_cores()
        where = f"${ENV}"
        try:
            threads = int(raw)
        except ValueError:
            raise ConfigError([f"{where} = {raw!r}: must be an integer >= 1"], "threads") from None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError([f"{where} = {threads!r}: must be an integer >= 1"], "threads")
    return threads
