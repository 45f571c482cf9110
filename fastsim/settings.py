"""Run settings: how many threads a batch runs on, whether kernels run compiled, and whether the
cache keeps answers on disk.

Settings are values, not process state. A frozen ``Settings`` is in force for a block of code
through ``use`` (a ``contextvars`` scope: it ends, and the previous settings are back, when the
block is left, also on an exception; each thread and asyncio task sees its own)::

    with fastsim.settings.use(threads=1, jit=False):
        fastsim.simulate(design)

Precedence, highest first: an explicit argument (``simulate(..., threads=4)``), the settings in
force, the environment variables users already set (``FASTSIM_THREADS``, ``FASTSIM_JIT``,
``FASTSIM_CACHE``, ``FASTSIM_CACHE_DIR``: read, never written), the built-in default. Nothing here
writes ``os.environ``; a call that runs on a pool thread or in another process gets its settings
passed along (a ``contextvars`` scope does not cross threads of a pool or processes).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Iterator

ENV_JIT = "FASTSIM_JIT"


@dataclass(frozen=True)
class Settings:
    """Choices that change how fast a run is, never its results; ``None`` means "not chosen here"
    (the environment variable, else the default, decides).

    Attributes
    ----------
    threads : int, optional
        Threads the designs of one batch are spread over (``fastsim.threads``; default
        ``$FASTSIM_THREADS``, else every core this process may use).
    jit : bool, optional
        Run kernels as compiled numba code (True) or as plain Python (False: no numba import and no
        compilation; for tiny batches and for stepping through a kernel in a debugger). Default
        ``$FASTSIM_JIT`` (``0`` is off), else compiled.
    cache : bool, optional
        Keep and read answers in the disk tier of ``fastsim.cache`` (the memory tier is always
        on). Default ``$FASTSIM_CACHE`` (``0`` is off), else on.
    cache_dir : str, optional
        Where the disk tier lives. Default ``$FASTSIM_CACHE_DIR``, else ``~/.cache/fastsim``.
    progress : bool
        Show a progress bar on stderr while the ops of a graph are mapped (the CLI turns it on for
        a terminal).
    """

    threads: int | None = None
    jit: bool | None = None
    cache: bool | None = None
    cache_dir: str | None = None
    progress: bool = False


_CURRENT: ContextVar[Settings] = ContextVar("fastsim_settings", default=Settings())


def current() -> Settings:
    """The settings in force here."""
    return _CURRENT.get()


@contextmanager
def use(settings: Settings | None = None, **changes) -> Iterator[Settings]:
    """Put ``settings`` (default: the current ones), with ``changes`` applied, in force for the
    block; the previous settings are back when it is left."""
    token = _CURRENT.set(replace(settings or current(), **changes))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def resolve_jit(jit: bool | None = None, default: bool = True) -> bool:
    """``jit`` if given, else the settings' choice, else ``$FASTSIM_JIT`` when set (``0``: off),
    else ``default``."""
    if jit is not None:
        return bool(jit)
    if current().jit is not None:
        return current().jit
    raw = os.environ.get(ENV_JIT)
    if raw is None or raw == "":
        return default
    return raw != "0"
