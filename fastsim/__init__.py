"""fastsim: a fast, vectorized, cycle-level simulator of AI-Engine-style spatial NPUs."""
__version__ = "0.1.0"  # first: submodules read it while the package initialises

from .arch import NPU1, NPU2, PRESETS, Arch, TileKind
from .design import (BD, Acquire, Buffer, Channel, Compute, Design, Lock, Loop, Release, Tile,
                     mm2s, object_fifo, s2mm)
from .errors import ConfigError, CycleLimitError, DeadlockError, LivelockError, SimulationError


def simulate(designs, **kwargs):
    """Simulate one design or a batch, cycle-exact; returns an xarray Dataset (see
    ``fastsim.simulation.simulate``). Imported on first use so that ``import fastsim`` stays light."""
    from .simulation import simulate as run

    return run(designs, **kwargs)


def sweep(spec, out=None, **kwargs):
    """Run or resume a sweep spec; returns an xarray Dataset (see ``fastsim.sweeping.sweep``).
    Imported on first use: dask and zarr are not needed to simulate."""
    from .sweeping import sweep as run

    return run(spec, out, **kwargs)

