"""fastsim: a fast, vectorized, cycle-level simulator of AI-Engine-style spatial NPUs."""
from .arch import NPU1, NPU2, PRESETS, Arch, TileKind
from .design import (BD, Acquire, Buffer, Channel, Compute, Design, Lock, Loop, Release, Tile,
                     mm2s, object_fifo, s2mm)
from .errors import ConfigError, CycleLimitError, DeadlockError, LivelockError, SimulationError
from . import settings  # fastsim.settings.use(threads=..., jit=..., cache=...) after a plain import
from .version import __version__


def simulate(designs, **kwargs):
    """Simulate one design or a batch, cycle-exact; returns an xarray Dataset (see
    ``fastsim.simulation.simulate``). Imported on first use so that ``import fastsim`` stays light."""
    from .simulation import simulate as run

    return run(designs, **kwargs)


def map(m: int, k: int, n: int, dtype: str = "bf16", arch="npu2", **kwargs):
    """Search the mapping of an m x k x n matmul; returns an xarray Dataset over ``candidate``
    (see ``fastsim.mapping.results.map_dataset``). ``arch`` is an Arch, a preset name or a TOML
    file; ``pins=fastsim.mapping.Pins(...)`` constrains the search."""
    from .arch import load
    from .mapping import map_matmul

    return map_matmul(m, k, n, dtype, load(arch) if isinstance(arch, str) else arch, **kwargs)


def sweep(spec, out=None, **kwargs):
    """Run or resume a sweep spec; returns an xarray Dataset (see ``fastsim.sweeping.sweep``).
    Imported on first use: dask and zarr are not needed to simulate."""
    from .sweeping import sweep as run

    return run(spec, out, **kwargs)

