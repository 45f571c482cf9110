"""Engine results cached by the content of a design's lowered tables.

A mapping search, an LLM run and a study often simulate the very same design more than once: two
ops of one shape under the same mapping, a search's baseline that another search also chose, the
same op in several fused groups. The kernel is deterministic and reads nothing but the lowered
tables (parameters included), so a design whose tables hash the same has the same final state and
outputs, bit for bit. Runs that finished or stopped at their cycle cap (a search's capped losers:
the cap is in the tables, so only a run with the same cap takes them) are kept; untraced ones
only (a trace's events are large), and no other failure (``describe_stuck`` explains it from a
fresh run). They live in the one cache's memory (``fastsim.cache``, region "engine"); a run that
stepped ``COSTLY_STEPS`` or more goes to the region's costly tier, which the many small designs of
a whole-model run never evict, and to its disk tier, where the other processes sharing the cache
directory find it. A search's candidates that may be costly (their lower bound is past
``COSTLY_STEPS`` cycles) are claimed while they run (``cache.claim``) and then stored on disk
however few cycles they stepped, so two workers that reach the same large design (the overlays
and dataflow studies do) simulate it once.
"""
from __future__ import annotations

import hashlib

import numpy as np

from fastsim.kernels import layout as L

from . import cache
from .cache import CACHE, Codec
from .lower import Batch, LoweredDesign

REGION = "engine"  # fastsim.cache region of these entries
KEPT = (L.ST_OK, L.ST_CYCLE_LIMIT)
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


def put(key: bytes | None, batch: Batch, i: int, disk: bool = False) -> None:
    """Keep design i's final state and outputs if it finished or stopped at its cap: on disk when
    costly, or when ``disk`` (a claimed run: another process may be waiting for it)."""
    res = batch.outputs["res"][i]
    if key is None or res[L.R_STATUS] not in KEPT:
        return
    costly = bool(res[L.R_STEPS] >= COSTLY_STEPS)
    CACHE.put(REGION, key, [a[i].copy() for a in _rows(batch)], disk=costly or disk, costly=costly)


def claim(key: bytes | None) -> bool | None:
    """``cache.claim`` for an engine run (None: an uncached run, nothing to claim)."""
    return None if key is None else cache.claim(REGION, key)


def release(key: bytes) -> None:
    cache.release(REGION, key)


def wait_for(key: bytes) -> list[np.ndarray] | None:
    """Another process's result for ``key`` once stored (None: simulate it here after all)."""
    return cache.wait_for(REGION, key)


def restore(rows: list[np.ndarray], batch: Batch, i: int) -> None:
    """Write cached final state and outputs into design i of ``batch``."""
    for src, dst in zip(rows, _rows(batch)):
        _copy(src, dst[i])


def transfer(src: Batch, i: int, dst: Batch, j: int) -> None:
    """Design i of ``src`` becomes design j of ``dst`` (state and outputs)."""
    for a, b in zip(_rows(src), _rows(dst)):
        _copy(a[i], b[j])


def _encode(rows: list[np.ndarray]) -> tuple[dict, dict[str, np.ndarray]]:
    return {"rows": len(rows)}, {f"row{i}": a for i, a in enumerate(rows)}


def _decode(plain: dict, arrays: dict[str, np.ndarray], context) -> list[np.ndarray]:
    return [arrays[f"row{i}"] for i in range(plain["rows"])]


# a costly entry is up to ~60 kB (an eight-column design): 512 of them stay under ~30 MB
CACHE.add_region(cache.Region(REGION, 128, Codec(_encode, _decode), costly_size=512))
