"""The functions dask workers run: a task computes a group of chunks and stores them. Plain
functions in an importable module, so workers import them (and load numba's cache) instead of
unpickling a jitted function."""
from __future__ import annotations

import itertools
import math

import numpy as np

from .points import evaluate
from .spec import SweepSpec
from .store import n_points, write_region
from .variables import REGISTRY

# Chunks are grouped into a task only up to this many points, and only while the sweep keeps this
# many tasks per task slot: a task's points share its worker's caches (an ablation's NOOP classes
# and cuts of one model find its shapes searched once, where one-chunk tasks had every worker
# search every shape), while the tasks stay many enough to balance the workers and move the
# progress line.
TASK_POINTS_MAX = 2048
TASKS_PER_SLOT = 4


def run_chunks(spec: SweepSpec, store: str, regions: list[tuple[slice, ...]]) -> tuple[int, int]:
    """Compute the chunks ``regions`` in turn and store them; returns (points, failed points:
    those with a status other than 0) of them all. Chunks that together fill a block (a task of
    ``task_groups``) are stored at once, one write per variable: writes per chunk cost about 20 ms
    a chunk (measured apart), and ``sweeps/ablation_100k.toml`` has 20,000 chunks. A task
    interrupted stores what it had finished writing (chunk by chunk: its earlier chunks); resuming
    computes again every chunk not marked done.

    A block's points run in its own axis order, not chunk by chunk: a chunk may span a
    shape-changing axis (``ablation_100k.toml``'s hold its 5 batches), and chunk order then visited
    5 shapes in turn, so each shape's cached cuts were evicted before its next NOOP class came
    (with the placement and judged regions enlarged too, a 10,000-point slice ran 1.2-1.4x
    faster)."""
    block = tuple(slice(min(r[i].start for r in regions), max(r[i].stop for r in regions))
                  for i in range(len(regions[0])))
    if n_points(block) != sum(n_points(r) for r in regions):  # not one block: a resumed sweep's part of a task
        points = failed = 0
        for region in regions:
            done, bad = run_chunks(spec, store, [region])
            points, failed = points + done, failed + bad
        return points, failed
    results = _empty(spec, tuple(s.stop - s.start for s in block))
    for index in itertools.product(*[range(s.start, s.stop) for s in block]):
        local = tuple(i - b.start for i, b in zip(index, block))
        for name, value in evaluate(spec, spec.point(index)).items():
            results[name][local] = value
    write_region(spec, store, block, results)
    return n_points(block), int(np.count_nonzero(results["status"]))


def _empty(spec: SweepSpec, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    registry = REGISTRY[spec.kind]
    results = {}
    for name in spec.outputs:
        var = registry[name]
        extra = (len(var.extra_dim[1]),) if var.extra_dim else ()
        results[name] = np.zeros(shape + extra, dtype=var.dtype)
    return results


def task_groups(regions: list[tuple[slice, ...]], shape: tuple[int, ...], chunks: tuple[int, ...],
                slots: int) -> list[list[tuple[slice, ...]]]:
    """``regions`` (chunks of a store of ``shape`` chunked by ``chunks``, in store order) grouped
    into tasks: the chunks that differ only on the trailing axes, as many trailing axes as keep a
    task within ``TASK_POINTS_MAX`` points and the sweep at ``TASKS_PER_SLOT`` tasks per slot
    (none: one chunk per task; a chunk bigger than the limit is a task alone). A spec's last axes
    should be the cheap ones to vary (an ablation's NOOP class and cuts): a task's points then
    reuse each other's searches, where a spec ending in ``model`` or ``context`` gains nothing. The last ``slots`` tasks
    span one trailing axis fewer: small tasks at the end keep every worker busy to the last
    (one 1,250-point task left a worker idle for the last quarter of a sweep's time)."""
    slots = max(1, slots)  # no worker joined yet: as for one (``store.chunk_target``)
    total = sum(n_points(r) for r in regions)
    limit = min(TASK_POINTS_MAX, total // (slots * TASKS_PER_SLOT))
    whole = 0  # trailing axes a task spans whole
    while whole < len(shape):
        lead = len(shape) - whole - 1
        if math.prod(chunks[:lead]) * math.prod(shape[lead:]) > limit:
            break
        whole += 1
    tasks = _spanning(regions, len(shape) - whole)
    if whole and len(tasks) > slots:
        tasks = tasks[:-slots] + _spanning([r for t in tasks[-slots:] for r in t], len(shape) - whole + 1)
    return tasks


def _spanning(regions: list[tuple[slice, ...]], lead: int) -> list[list[tuple[slice, ...]]]:
    """``regions`` grouped by their first ``lead`` axes' chunks, in order."""
    groups: dict[tuple, list] = {}
    for region in regions:
        groups.setdefault(tuple(s.start for s in region[:lead]), []).append(region)
    return list(groups.values())
