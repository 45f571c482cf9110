"""Pause Python's cyclic garbage collector while fastsim builds designs in bulk, and skip its
last collection when a process that ran fastsim exits.

Building an LLM's designs allocates ~10^5 small objects (BDs, locks, buffers, host steps) and
almost none of them die young, so every generation-0 collection walks them in vain: in a decode
step the collector took a quarter of the Python time. Reference counting still frees everything
as usual; only cycles (a cyclic BD chain) wait for the next collection after the pause.
"""
from __future__ import annotations

import atexit
import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    """Disable the cyclic collector for the block (nested blocks and callers that disabled it
    themselves keep it off); re-enable it after, as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def exit_without_collecting() -> None:
    """Let this process exit without the interpreter's last collection (``gc.freeze`` at exit).

    A process that ran fastsim holds up to a million objects that live to the end (numba's, and
    the designs its caches keep: BDs, buffers, locks): collecting them only to free memory the
    process is returning took 0.45 s of a sweep worker's shutdown, and a local cluster's close
    waits for its workers (0.87 s of a 6.5 s, 62-point sweep). Exit handlers still run. Calling
    it again is harmless: it stays registered once."""
    atexit.unregister(gc.freeze)  # a no-op the first time
    atexit.register(gc.freeze)
