"""Calibration (issue 13): parameters fitted to measurements are recovered, and the result is an
arch TOML every command takes."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fastsim import arch as arch_mod
from fastsim.arch import NPU2
from fastsim.calibration import Measurement, Predictor, calibrate, parse_workload, read_measurements, with_params
from fastsim.cli import main
from fastsim.errors import ConfigError

WORKLOADS = [
    "dispatch", "switch kind=elf",
    "kernel m=64 k=64 n=64 dtype=bf16 calls=10000",
    "kernel m=32 k=64 n=64 dtype=bf16 calls=10000",
    "kernel m=64 k=64 n=64 dtype=int8 calls=10000",
    "kernel m=64 k=64 n=64 dtype=bf16 datapath=bf16 calls=2000",
    "gemm m=128 k=1024 n=128 dtype=bf16 tile=16x16x16 cols=1",
    "gemm m=512 k=512 n=512 dtype=bf16",
    "memcpy bytes=65536 size=16 columns=1",
    "memcpy bytes=8388608 size=65536 columns=8 direction=both channels=2",
    "memcpy bytes=262144 size=1024 columns=2 direction=write",
    "memcpy bytes=131072 size=16 columns=1 direction=write",  # many small BDs: pins BD setup
]
TRUTH = {"dispatch_overhead_s": 60e-6, "elf_reload_s": 2.0e-3, "ddr_bytes_per_s": 50e9, "bd_setup_cycles": 9,
         "lock_acquire_cycles": 3, "kernel_efficiency.bfp16": 0.8, "kernel_efficiency.int8": 0.7,
         "kernel_efficiency.bf16": 0.6}


def _synthetic() -> list[Measurement]:
    """What the part would measure if its parameters were TRUTH (same designs: mappings are
    searched under the starting arch, as calibrate does)."""
    ms = [Measurement(f"m{i}", *parse_workload(w), 1.0) for i, w in enumerate(WORKLOADS)]
    pred = Predictor(NPU2, ms)
    truth = with_params(NPU2, list(TRUTH), list(TRUTH.values()))
    return [Measurement(m.name, m.kind, m.args, pred.predict(m, truth)) for m in ms]


def test_known_parameters_are_recovered_within_2_percent():
    cal = calibrate(_synthetic(), NPU2, leave_one_out=False)
    got = dict(zip(cal.names, cal.values))
    assert set(TRUTH) <= set(got)
    for name, value in TRUTH.items():
        assert got[name] == pytest.approx(value, rel=0.02), name
    assert np.abs(cal.residuals).max() < 0.01
    assert np.all(cal.low95 <= cal.values + 1e-12) and np.all(cal.values <= cal.high95 + 1e-12)


def test_cli_writes_an_arch_toml_that_every_command_takes(tmp_path):
    csv = tmp_path / "m.csv"
    csv.write_text("name,workload,seconds\n"
                   "empty,dispatch,0.00006\n"
                   "switch,switch kind=elf,0.002\n"
                   "mm,kernel m=64 k=64 n=64 dtype=bf16 calls=10000,0.0036\n"
                   "mm small,kernel m=32 k=64 n=64 dtype=bf16 calls=10000,0.00186\n")
    out = tmp_path / "cal.toml"
    r = CliRunner().invoke(main, ["calibrate", str(csv), "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    fit = json.loads(r.output)
    assert fit["parameters"]["dispatch_overhead_s"]["fitted"] == pytest.approx(60e-6, rel=0.02)
    assert all(np.isfinite(m["loo_error"]) for m in fit["measurements"])
    loaded = arch_mod.load(out)
    assert loaded.dispatch_overhead_s == pytest.approx(60e-6, rel=0.02)
    assert loaded.kernel_efficiency["bfp16"] < NPU2.kernel_efficiency["bfp16"]
    run = CliRunner().invoke(main, ["run", "--arch", str(out), "--json", "gemm", "--m", "128", "--k", "128",
                                    "--n", "128"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.output)["workload"]["kernel_efficiency"] == pytest.approx(loaded.kernel_efficiency["bfp16"])


def test_bad_measurements_are_config_errors_with_line_numbers(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text("name,workload,seconds\na,gemm m=64,-1\nb,warp drive,0.1\nc,kernel m=4 k=4 n=4,x\n")
    with pytest.raises(ConfigError) as e:
        read_measurements(csv)
    text = str(e.value)
    assert "line 2" in text and "line 3" in text and "line 4" in text
    r = CliRunner().invoke(main, ["calibrate", str(csv)])
    assert r.exit_code == 2 and "line 3" in r.output
    csv.write_text("name,workload,seconds\na,dispatch,0.0001\n")
    with pytest.raises(ConfigError, match="not a fitted parameter"):
        calibrate(read_measurements(csv), NPU2, fit=["warp_factor"])


def test_calibrate__warns_of_bounds_wide_intervals_and_measurements_faster_than_peak(tmp_path):
    """A kernel measured 30x faster than the part's peak MAC rate: the fit pins efficiency at its
    upper bound and the overhead at its lower one, and says so by name in the report, the JSON and
    the TOML's comments."""
    csv = tmp_path / "m.csv"
    csv.write_text("name,workload,seconds\n"
                   "empty,dispatch,0.00006\n"
                   "empty again,dispatch,0.00005\n"
                   "mm,kernel m=64 k=64 n=64 dtype=bf16 calls=10000,0.0001\n"
                   "mm small,kernel m=32 k=64 n=64 dtype=bf16 calls=10000,0.00009\n")
    cal = calibrate(read_measurements(csv), NPU2, leave_one_out=False)
    text = "\n".join(cal.warnings)
    assert "kernel_efficiency.bfp16 = 1 is at its upper bound" in text
    assert "dispatch_overhead_s" in text and "at its lower bound" in text
    assert "is wider than its value" in text
    assert "mm: measured 0.0001 s, faster than npu2's peak MAC rate allows" in text
    out = tmp_path / "cal.toml"
    r = CliRunner().invoke(main, ["calibrate", str(csv), "--out", str(out), "--no-loo"])
    assert r.exit_code == 0, r.output
    assert "warnings:" in r.output and "faster than npu2's peak" in r.output
    assert sum(line.startswith("# warning: ") for line in out.read_text().splitlines()) == len(cal.warnings)
    r = CliRunner().invoke(main, ["calibrate", str(csv), "--out", str(out), "--no-loo", "--json"])
    assert json.loads(r.output)["warnings"] == cal.warnings


def test_calibrate__a_clean_fit_has_no_warnings():
    cal = calibrate(_synthetic(), NPU2, leave_one_out=False)
    assert cal.warnings == []
