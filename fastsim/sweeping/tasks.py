"""The function dask workers run: one task computes one chunk and writes it. A plain function in
an importable module, so workers import it (and load numba's cache) instead of unpickling a
jitted function."""
from __future__ import annotations

import itertools

import numpy as np

from .points import evaluate
from .spec import SweepSpec
from .store import write_region
from .variables import REGISTRY


def run_chunk(spec: SweepSpec, store: str, region: tuple[slice, ...]) -> tuple[int, int]:
    """Compute the points of ``region`` (exactly one chunk of the store) and write them; returns
    (points, failed points: those with a status other than 0)."""
    shape = tuple(s.stop - s.start for s in region)
    registry = REGISTRY[spec.kind]
    results = {}
    for name in spec.outputs:
        var = registry[name]
        extra = (len(var.extra_dim[1]),) if var.extra_dim else ()
        results[name] = np.zeros(shape + extra, dtype=var.dtype)
    for local in itertools.product(*[range(n) for n in shape]):
        index = tuple(s.start + i for s, i in zip(region, local))
        for name, value in evaluate(spec, spec.point(index)).items():
            results[name][local] = value
    write_region(spec, store, region, results)
    return int(np.prod(shape)), int(np.count_nonzero(results["status"]))
