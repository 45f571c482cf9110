"""What a small command imports, and how kernels run compiled or as plain Python (kernels/_jit.py)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import sys
from fastsim.cli import main
sys.argv = ["fastsim", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
print(sorted(m for m in ("numba", "zarr", "distributed") if m in sys.modules))
"""


def _imported(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, check=True, cwd=ROOT)
    return eval(out.stdout.strip().splitlines()[-1])


def test_imports__a_small_run_imports_neither_zarr_nor_distributed_nor_dask_array():
    """xarray imports dask.array (and scipy's FFT) when it converts data or selects by label;
    engine results and the small-run summaries do neither (one process asked about all three)."""
    code = RUN.replace('("numba", "zarr", "distributed")', '("zarr", "distributed", "dask.array")')
    out = subprocess.run([sys.executable, "-c", code, "run", "gemm", "--m", "128", "--k", "128", "--n", "128"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_imports__a_small_closed_form_systolic_run_never_imports_numba():
    """It runs the kernels as plain Python: numba's start-up would cost more than the work."""
    assert _imported("systolic", "-c", "bench/scalesim/mesh32_os.cfg", "-t", "bench/scalesim/resnet50_first4.csv",
                     "--json") == []


def test_jit__a_simulation_with_jit_off_never_imports_numba():
    code = ("import sys\nimport fastsim\nfrom fastsim import settings\nfrom helpers import passthrough\n"
            "with settings.use(jit=False):\n    fastsim.simulate(passthrough(n_obj=3))\n"
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT / "tests")
    assert out.stdout.strip() == "False"


def test_jit__kernel_modules_import_without_numba():
    code = ("import sys\nfrom fastsim.kernels import engine, fastforward, scalesim_buffers, systolic, systolic_memory\n"
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_jit__plain_and_compiled_variants_agree_and_numba_config_is_put_back():
    import numba

    from fastsim.kernels import systolic as K

    inp = np.array([[100, 60, 70, 16, 8, K.DF_OS, 7000], [33, 64, 9, 8, 8, K.DF_WS, 297],
                    [5, 5, 5, 4, 4, K.DF_IS, 25]], np.int64)
    before = numba.config.CACHE_DIR
    results = []
    for jit in (False, True):
        out, fout, occ = np.zeros((3, K.O_NCOL), np.int64), np.zeros((3, K.F_NCOL)), np.zeros((3, 16))
        K.systolic_batch.variant(jit)(inp, out, fout, occ)
        results.append((out, fout, occ))
    for plain, compiled in zip(*results):
        np.testing.assert_array_equal(plain, compiled)
    assert numba.config.CACHE_DIR == before
    assert "fastsim-kernels-" in K.systolic_batch.compiled.stats.cache_path  # stamped with the kernel sources


def test_script__the_command_exits_with_its_status_and_its_whole_output():
    """``fastsim`` (``python -m fastsim.cli``) skips the interpreter's last collection of cycles:
    output, exit status and error messages stay those of the command."""
    ok = subprocess.run([sys.executable, "-m", "fastsim.cli", "run", "--json", "gemm", "--m", "64", "--k", "64",
                         "--n", "64"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["total_cycles"] > 0
    bad = subprocess.run([sys.executable, "-m", "fastsim.cli", "run", "gemm", "--dtype", "fp8"],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "fp8" in bad.stderr
