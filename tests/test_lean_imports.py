"""A small run imports neither dask.array nor zarr; dask arrays stay dask arrays to xarray once
anyone imports dask.array (fastsim.lean_imports)."""
import subprocess
import sys

RUN = """
import sys
from fastsim.cli import main
sys.argv = ["fastsim", "run", "gemm", "--m", "128", "--k", "128", "--n", "128"]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
print(sorted(m for m in ("dask.array", "zarr", "distributed", "scipy.fft") if m in sys.modules))
"""

CHECK = """
import sys
import fastsim.simulation  # installs the lazy entry
from xarray.namedarray.pycompat import array_type
assert array_type("dask") == () and "dask.array" not in sys.modules
import dask.array as da
import xarray as xr
assert array_type("dask") == (da.Array,)
x = xr.DataArray(da.ones((4, 4), chunks=2))
assert x.chunks == ((2, 2), (2, 2)) and int(x.sum().compute()) == 16
print("ok")
"""


def test_lean_imports__a_small_run_does_not_import_dask_array_or_zarr():
    out = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_lean_imports__dask_arrays_are_recognized_once_dask_array_is_imported():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
