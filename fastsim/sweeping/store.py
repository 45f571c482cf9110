"""The zarr store of a sweep: created up front (coordinates, empty outputs, completion mask),
then filled by tasks. Each task writes whole zarr chunks of every variable (partial chunk writes
from concurrent tasks lose data), and marks them done in a separate write after their data."""
from __future__ import annotations

import itertools
import json
import math
import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import xarray as xr

from ..errors import ConfigError
from ..version import __version__
from .spec import SweepSpec
from .variables import REGISTRY, parameter_units


# The order in which a chunk takes whole axes (lower first; any other parameter: 2), so that the
# points that need the same new mapping searches run in one chunk, on one worker. Latency sampling
# runs after the simulation (nothing reshaped). A batch value reshapes the projections, which every
# context at that batch shares: a worker searches them once, whichever chunks it gets. A context
# value reshapes the attention ops, which only that context's points share: a chunk holding every
# batch of a context keeps them on one worker (chunks that split the batches of a context had two
# workers search the same attention shapes at once: 2 workers ran no faster than 1). Model
# changes every op. (Prefill alike; encode's context is its prompt, which reshapes every op: a
# heuristic, never a question of results.)
OPS_RESHAPED = {"samples": 0, "seed": 0, "load": 0, "batch": 0.5, "context": 1, "prefill_context": 1, "model": 3}


def chunk_shape(shape: tuple[int, ...], target: int, dims: tuple[str, ...] = ()) -> tuple[int, ...]:
    """Chunk of about ``target`` points: whole axes, those that reshape fewest ops first
    (``OPS_RESHAPED``; between equals the trailing ones first), then a block of the next one."""
    chunks = [1] * len(shape)
    size = 1
    names = dims or ("",) * len(shape)
    for i in sorted(range(len(shape)), key=lambda i: (OPS_RESHAPED.get(names[i], 2), -i)):
        if size * shape[i] <= target:
            chunks[i] = shape[i]
            size *= shape[i]
        else:
            chunks[i] = max(1, target // size)
            break
    return tuple(chunks)


def chunk_target(spec: SweepSpec, slots: int) -> int:
    """Points per chunk for a cluster that runs ``slots`` tasks at once (its workers' threads):
    the spec's ``chunk_points``, fewer where that would leave a slot without a chunk. 0 slots (no
    worker has joined yet) counts as 1."""
    return max(1, min(spec.chunk_points, spec.n_points // max(1, slots)))


def chunk_regions(shape, chunks) -> list[tuple[slice, ...]]:
    ranges = [range(0, n, c) for n, c in zip(shape, chunks)]
    return [tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, shape))
            for starts in itertools.product(*ranges)]


def _coord(values):
    if all(isinstance(v, bool) for v in values):
        return np.array(values, bool)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return np.array(values, np.int64)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return np.array(values, np.float64)
    return np.array([v if isinstance(v, str) else str(v) for v in values], dtype=str)


def _quiet():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.filterwarnings("ignore", message=".*Consolidated metadata.*")
    warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        from zarr.errors import UnstableSpecificationWarning
        warnings.filterwarnings("ignore", category=UnstableSpecificationWarning)
    except ImportError:
        pass
    return ctx


def create(spec: SweepSpec, path: str | Path, slots: int = 1) -> None:
    """Create the store, chunked for a cluster of ``slots`` task slots (``chunk_target``); the
    chunking is the store's from then on (a resume on another cluster keeps it)."""
    shape, dims = spec.shape, spec.dims
    chunks = chunk_shape(shape, chunk_target(spec, slots), dims)
    registry = REGISTRY[spec.kind]
    data = {}
    for name in spec.outputs:
        var = registry[name]
        fill = -1 if var.dtype.startswith("int") else "" if var.dtype.startswith("<U") else np.nan
        if var.extra_dim:
            edim, labels = var.extra_dim
            data[name] = (dims + (edim,), da.full(shape + (len(labels),), fill, dtype=var.dtype,
                                                  chunks=chunks + (len(labels),)), var.attrs())
        else:
            data[name] = (dims, da.full(shape, fill, dtype=var.dtype, chunks=chunks), var.attrs())
    data["done"] = (dims, da.zeros(shape, dtype=bool, chunks=chunks),
                    {"description": "points computed (the sweep resumes where this is False)"})
    coords = {}
    if spec.points is None:
        for name, values in spec.axes.items():
            coords[name] = (name, _coord(values), {"units": parameter_units(name)})
    else:
        names = sorted({k for pt in spec.points for k in pt})
        for name in names:
            coords[name] = ("point", _coord([pt.get(name, spec.base.get(name, "")) for pt in spec.points]),
                            {"units": parameter_units(name)})
    for name, var in registry.items():
        if var.extra_dim and name in spec.outputs:
            labels = np.array(var.extra_dim[1])  # numbers stay numbers (quantiles); names are strings
            coords[var.extra_dim[0]] = (var.extra_dim[0], labels if labels.dtype.kind == "f" else labels.astype(str),
                                        {"units": "1"})
    attrs = {"spec_digest": spec.digest(), "spec_source": spec.source, "study": spec.kind,
             "base": json.dumps(spec.base, sort_keys=True, default=str),
             "arch": json.dumps(spec.arch or {"base": "npu2"}, sort_keys=True, default=str),
             "fastsim_version": __version__}
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    ctx = _quiet()
    try:
        ds.to_zarr(str(path), mode="w", compute=False, consolidated=False)
        _check_unwritten_not_done(path)
    finally:
        ctx.__exit__(None, None, None)
    consolidate(path)


def _check_unwritten_not_done(path: str | Path) -> None:
    """A chunk of the completion mask that no task has written reads as the array's fill value,
    which must be False: the mask is then complete without writing it. (Writing False chunk by
    chunk was 30 s of the 44 s ``create`` took for ``sweeps/ablation_100k.toml``'s 20,000 chunks,
    and zarr stored none of them: it skips chunks equal to the fill value.)"""
    import zarr

    fill = zarr.open_array(str(Path(path) / "done"), mode="r").fill_value
    if fill is None or bool(fill):  # removed: a resume would read every point as done
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        raise RuntimeError(f"the sweep store's completion mask has fill value {fill!r}, not False")


def consolidate(path: str | Path) -> None:
    """Write the store's consolidated metadata, so that ``xarray.open_zarr(path)`` opens it without
    a warning (the metadata is fixed at creation; chunk writes do not change it)."""
    import zarr

    ctx = _quiet()
    try:
        warnings.filterwarnings("ignore", message=".*Consolidated metadata.*not part.*")
        zarr.consolidate_metadata(str(path))
    finally:
        ctx.__exit__(None, None, None)


def remove_torn_writes(path: str | Path) -> None:
    """Delete what chunk writes that never finished left in the store.

    zarr writes a chunk into a ``<chunk>.<uuid>.partial`` file and then renames it; a worker
    killed in between leaves that file behind (its chunk is computed again elsewhere), and the
    store would then differ from an undisturbed run's. Call it when every chunk of a pass is
    stored and none of its writers is left."""
    for torn in list(Path(path).rglob("*.partial")):  # listed first: the walk never sees its own deletions
        torn.unlink(missing_ok=True)


def open_store(path: str | Path, lazy: bool = True) -> xr.Dataset:
    """The store as a Dataset: dask arrays (``lazy``), or zarr-backed arrays read on access, which
    never go through a dask client (reading with a distributed Client active would queue the
    read behind the sweep's own chunks on the cluster)."""
    ctx = _quiet()
    try:
        return xr.open_zarr(str(path), consolidated=False, **({} if lazy else {"chunks": None}))
    finally:
        ctx.__exit__(None, None, None)


def done_mask(path: str | Path) -> np.ndarray:
    """The store's completion mask, read here (not through any dask client)."""
    return open_store(path, lazy=False)["done"].values


def _is_zarr_group(root: Path) -> bool:
    return (root / ".zgroup").exists() or (root / "zarr.json").exists()


def half_created(path: str | Path) -> bool:
    """A zarr group whose creation died before its attributes were written (no spec digest)."""
    root = Path(path)
    if not _is_zarr_group(root):
        return False
    try:
        return "spec_digest" not in open_store(path).attrs
    except Exception:
        return not (root / ".zattrs").exists()


def check_matches(spec: SweepSpec, path: str | Path) -> None:
    if not _is_zarr_group(Path(path)):
        raise ConfigError([f"{path} exists and is not a sweep store; use a new --out"], "sweep resume")
    ds = open_store(path)
    if ds.attrs.get("spec_digest") != spec.digest():
        raise ConfigError([f"{path} was created by a different spec ({ds.attrs.get('spec_source')}); "
                           "refusing to merge: use a new --out or delete the store"], "sweep resume")


def write_region(spec: SweepSpec, path, region: tuple[slice, ...], results: dict[str, np.ndarray]) -> None:
    """Store the results of ``region`` (whole chunks), then mark its points done (only stored
    points count as done).
    Plain zarr writes into the arrays ``create`` made: their dtypes and fill values are fixed
    there, and xarray's region writes re-read and checked the store's metadata for every chunk
    (about 20 ms against 40-45 ms per two-point chunk of a decode sweep)."""
    import zarr

    registry = REGISTRY[spec.kind]
    ctx = _quiet()
    try:
        group = zarr.open_group(str(path), mode="r+")
        for name in spec.outputs:  # a variable's extra dim (``by_class``'s classes) is written whole
            group[name][region] = results[name].astype(registry[name].dtype)
        group["done"][region] = True
    finally:
        ctx.__exit__(None, None, None)


def regions(spec: SweepSpec, path=None) -> list[tuple[slice, ...]]:
    """The chunks of the store at ``path`` as regions, in order; without a path,
    those ``create`` gives for one task slot."""
    chunks = chunk_shape(spec.shape, chunk_target(spec, 1), spec.dims) if path is None else chunks_of(path)
    return chunk_regions(spec.shape, chunks)


def chunks_of(path) -> tuple[int, ...]:
    """The chunk shape of the store at ``path`` (``create`` fixed it)."""
    return tuple(open_store(path, lazy=False)["done"].encoding["chunks"])


def pending(spec: SweepSpec, path) -> list[tuple[slice, ...]]:
    """The regions of the store's chunks that are not done yet."""
    done = done_mask(path)
    return [r for r in regions(spec, path) if not done[r].all()]


def n_points(region) -> int:
    return math.prod(s.stop - s.start for s in region)
