"""Engine results cached by the content of a design's lowered tables.

A mapping search, an LLM run and a study often simulate the very same design more than once: two
ops of one shape under the same mapping, a search's baseline that another search also chose, the
same op in several fused groups. The kernel is deterministic and reads nothing but the lowered
tables (parameters included), so a design whose tables hash the same has the same final state and
outputs, bit for bit. Only successful, untraced runs are kept (a failure's state is explained by
``describe_stuck`` from a fresh run; a trace's events are large), in the one cache's memory
(``fastsim.cache``, region "engine"); a run that stepped ``COSTLY_STEPS`` or more goes to the
region's costly tier, which the many small designs of a whole-model run never evict.
"""
from __future__ import annotations

import hashlib

import numpy as np

from fastsim.kernels import layout as L

from .cache import CACHE
from .lower import Batch, LoweredDesign

REGION = "engine"  # fastsim.cache region of these entries
# stepped cycles from which a result is worth keeping apart (a tenth of a second and more on a
# 2-core VM: Llama-3.1-8B's optimize steps 66 designs past it, and 824 in all)
COSTLY_STEPS = 50_000


def key_of(lw: LoweredDesign) -> bytes | None:
    """Digest of every table the kernel reads (None: a traced run, not cached)."""
    if lw.prm[L.P_MAX_EVENTS] > 0:
        return None
    h = hashlib.blake2b(digest_size=20)
    for a in (lw.prm, lw.col_rates, lw.bds, lw.ch, lw.cons, lw.prog, lw.cores, lw.host, lw.lock_init):
        h.update(repr(a.shape).encode())
        h.update(np.ascontiguousarray(a, np.int64).tobytes())
    return h.digest()


def _rows(batch: Batch) -> tuple[np.ndarray, ...]:
    """The per-design arrays a run writes: final state and outputs (leading axis = design)."""
    return (*batch.state, *batch.outputs.values())


def _copy(src: np.ndarray, dst: np.ndarray) -> None:
    """Copy one design's row between batches padded to different sizes (the overlap holds all of
    the design's own data; padding stays zero in both)."""
    region = tuple(slice(0, min(a, b)) for a, b in zip(src.shape, dst.shape))
    dst[region] = src[region]


def get(key: bytes | None) -> list[np.ndarray] | None:
    return None if key is None else CACHE.get(REGION, key)


def put(key: bytes | None, batch: Batch, i: int) -> None:
    """Keep design i's final state and outputs if it finished normally."""
    res = batch.outputs["res"][i]
    if key is None or res[L.R_STATUS] != L.ST_OK:
        return
    CACHE.put(REGION, key, [a[i].copy() for a in _rows(batch)], costly=bool(res[L.R_STEPS] >= COSTLY_STEPS))


def restore(rows: list[np.ndarray], batch: Batch, i: int) -> None:
    """Write cached final state and outputs into design i of ``batch``."""
    for src, dst in zip(rows, _rows(batch)):
        _copy(src, dst[i])


def transfer(src: Batch, i: int, dst: Batch, j: int) -> None:
    """Design i of ``src`` becomes design j of ``dst`` (state and outputs)."""
    for a, b in zip(_rows(src), _rows(dst)):
        _copy(a[i], b[j])
