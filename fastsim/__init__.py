"""fastsim: a fast, vectorized, cycle-level simulator of AI-Engine-style spatial NPUs."""
from .arch import NPU1, NPU2, PRESETS, Arch, TileKind
from .design import (BD, Acquire, Buffer, Channel, Compute, Design, Lock, Loop, Release, Tile,
                     mm2s, object_fifo, s2mm)
from .errors import ConfigError, CycleLimitError, DeadlockError, LivelockError, SimulationError
from .simulate import simulate

__version__ = "0.1.0"
