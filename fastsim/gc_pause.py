"""Pause Python's cyclic garbage collector while fastsim builds designs in bulk.

Building an LLM's designs allocates ~10^5 small objects (BDs, locks, buffers, host steps) and
almost none of them die young, so every generation-0 collection walks them in vain: in a decode
step the collector took a quarter of the Python time. Reference counting still frees everything
as usual; only cycles (a cyclic BD chain) wait for the next collection after the pause.
"""
from __future__ import annotations

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
