"""Declarative parameter sweeps into resumable zarr stores (dask fans chunks out)."""
from .engine import SweepReport, sweep
from .spec import SweepSpec, load_spec, parse_spec, spec_from_dict
