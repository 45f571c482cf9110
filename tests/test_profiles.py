"""Profile readers (fastsim.profiles): each format's fixture reads into the rows it holds, and every
malformed file is one ConfigError naming the file and the field, never an internal exception."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from fastsim.arch import load
from fastsim.errors import ConfigError
from fastsim.profiles import FORMATS, detect, read_profile

FIX = Path(__file__).parent / "fixtures" / "profiles"
FILES = {"analyzer": "analyzer_small_cnn", "aie_trace": "matmul_trace.json", "gemm_csv": "gemm_sweep.csv",
         "harness_log": "harness.log", "onnx_benchmark": "report_performance.json", "plain": "plain_ops.csv"}


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_profiles__each_fixture_is_detected_as_its_format(fmt):
    assert detect(FIX / FILES[fmt]) == fmt
    assert read_profile(FIX / FILES[fmt]).fmt == fmt


def test_profiles__analyzer_rows_cycles_clock_and_npu_time():
    p = read_profile(FIX / "analyzer_small_cnn")
    assert [r.name for r in p.rows][:3] == ["conv1", "conv1.bn", "conv1.relu"]
    assert p.rows[0].cycles == 1450 and p.rows[0].seconds is None and p.rows[0].op_type == "Conv2DBf16"
    assert p.rows[0].line == 2 and p.rows[0].source.endswith("summary.csv")
    assert p.clock_hz == 1800e6
    assert p.total_seconds == pytest.approx((7.2 + 7.4) / 2 * 1e-6)  # the mean of the two record_timer files


def test_profiles__trace_pairs_event0_event1_per_core_and_sums_stalls():
    p = read_profile(FIX / "matmul_trace.json")
    (row,) = p.rows  # the shim tile has no kernel events: no row
    assert row.name == "tile(0,2)" and row.shape == (0, 2)  # "tile2,0" is row 2, column 0
    assert row.count == 4 and row.cycles == pytest.approx((1290 + 1301 + 1288 + 1295) / 4)  # four matmul calls
    assert dict(row.stalls) == {"LOCK_STALL": 3 * 60}


def test_profiles__gemm_csv_skips_failed_runs_and_keeps_pins():
    p = read_profile(FIX / "gemm_sweep.csv")
    assert [r.shape for r in p.rows] == [(64, 64, 64, "bf16"), (128, 64, 128, "bf16")]
    assert dict(p.rows[0].pins) == {"tile": (32, 32, 32), "cols": 1}
    assert p.rows[1].seconds == pytest.approx(48e-6)
    assert len(p.notes) == 1 and "gemm_sweep.csv:4" in p.notes[0]


def test_profiles__harness_log_takes_the_shape_printed_before_the_time():
    (row,) = read_profile(FIX / "harness.log").rows
    assert row.shape == (128, 64, 128, "bf16") and row.seconds == pytest.approx(47.9e-6) and row.line == 3


def test_profiles__benchmark_latency_is_the_whole_model():
    p = read_profile(FIX / "report_performance.json")
    assert p.total_seconds == pytest.approx(8.3e-6) and p.rows[0].kind == "model"


def test_profiles__plain_csv_ops_in_seconds_and_kernels_in_cycles():
    ops = read_profile(FIX / "plain_ops.csv")
    assert [(r.name, r.kind, r.seconds) for r in ops.rows][0] == ("conv1", "op", 8.1e-7)
    kernels = read_profile(FIX / "plain_kernels.csv")
    assert [(r.name, r.kind, r.cycles, r.count) for r in kernels.rows] == [
        ("matmul_bf16_f32", "kernel", 1290, 4), ("zero_f32", "kernel", 300, 1)]


BAD = [  # (file name, text, words the one problem must hold: the file and the field)
    ("p.csv", "op,measured_s\nconv1,fast\n", ["p.csv:2", "measured_s", "'fast'"]),
    ("p.csv", "op,measured_s\nconv1,-1\n", ["p.csv:2", "measured_s"]),
    ("p.csv", "op,measured_s,colour\nconv1,1,red\n", ["p.csv:1", "colour"]),
    ("p.csv", "op,measured_s\nconv1,1\nconv1,2\n", ["p.csv:3", "given twice"]),
    ("p.csv", "op,measured_s\nconv1\n", ["p.csv:2", "row"]),
    ("p.csv", "op,measured_s\n", ["p.csv", "no measurements"]),
    ("p.csv", "kernel,cycles,count\nmm,10,0\n", ["p.csv:2", "count"]),
    ("g.csv", "M,K,N,m,k,n,dtype_in,dtype_out,cols,avg_us,avg_gflops,tops,pct_peak,status\n"
              "64,64,64,32,32,32,fp8x,bf16,1,4,1,1,1,ok\n", ["g.csv:2", "dtype_in", "fp8x"]),
    ("g.csv", "M,K,N,m,k,n,dtype_in,dtype_out,cols,avg_us,avg_gflops,tops,pct_peak,status\n"
              "64,6.5,64,32,32,32,bf16,bf16,1,4,1,1,1,ok\n", ["g.csv:2", "K"]),
    ("g.csv", "M,K,N,avg_us\n1,2,3,4\n", ["g.csv:1", "'m'"]),
    ("t.json", "[{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": \"core at 2,0\"}}]",
     ["t.json", "event[0].args.name"]),
    ("t.json", "[{\"name\": \"INSTR_EVENT_0\", \"ph\": \"B\", \"pid\": 0, \"ts\": -3}]", ["t.json", "event[0].ts"]),
    ("t.json", "[{\"name\": \"x\", \"ph\": \"B\", \"ts\": 1}]", ["t.json", "event[0].pid"]),
    ("t.json", '[{"name": "x", "ph": "B", "pid": 0, "ts": 1' + "0" * 30 + "}]", ["t.json", "event[0].ts"]),
    ("t.json", '[{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "core_trace for tile2,0"}}]',
     ["t.json", "INSTR_EVENT_0"]),
    ("t.json", "[1, 2", ["t.json", "json"]),
    ("r.json", "{\"results\": {\"performance\": {\"total_throughput\": 5}}}", ["r.json", "average_latency"]),
    ("r.json", "{\"results\": {\"performance\": {\"average_latency\": \"slow\"}}}", ["r.json", "average_latency"]),
    ("h.log", "Avg NPU matmul time: 12us\n", ["h.log:1", "shape"]),
    ("h.log", "64 x 64 x 64\nAvg NPU matmul time: 1e999us\n", ["h.log:2", "Avg NPU matmul time"]),
    ("x.txt", "nothing here\n", ["x.txt", "format"]),
    ("trace.txt", "dc200000\n06521000\nfefefefe\n", ["trace.txt", "raw mlir-aie trace", "parse_trace.py"]),
    ("r.json", '{"results": {"performance": {"average_latency": 1' + "0" * 400 + "}}}", ["r.json", "average_latency"]),
]


@pytest.mark.parametrize("name,text,words", BAD)
def test_profiles__a_malformed_file_is_one_error_naming_file_and_field(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        read_profile(path)
    assert len(e.value.problems) == 1
    for w in words:
        assert w in e.value.problems[0]


def test_profiles__analyzer_directory_faults_name_their_file(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIX / "analyzer_small_cnn", run)
    (run / "record_timer_1.json").write_text('{"average_npu_time_usec": 7.4, "clock_freq_mhz": 1000}')
    with pytest.raises(ConfigError, match="clock_freq_mhz"):
        read_profile(run)
    (run / "record_timer_1.json").write_text('{"clock_freq_mhz": 1800}')
    with pytest.raises(ConfigError, match="record_timer_1.json: average_npu_time_usec"):
        read_profile(run)
    (run / "summary.csv").unlink()
    with pytest.raises(ConfigError, match="summary.csv"):
        read_profile(run)


def test_profiles__an_unknown_format_name_is_refused():
    with pytest.raises(ConfigError, match="format"):
        read_profile(FIX / "plain_ops.csv", fmt="nvprof")


def _mutants(data: bytes):
    return st.lists(st.tuples(st.integers(0, max(len(data) - 1, 0)), st.sampled_from(["drop", "dup", "byte", "cut"]),
                              st.integers(0, 255)), min_size=1, max_size=4)


def _mutate(data: bytes, edits) -> bytes:
    for at, how, b in edits:
        at = min(at, max(len(data) - 1, 0))
        if how == "drop":
            data = data[:at] + data[at + 1:]
        elif how == "dup":
            data = data[:at] + data[at:at + 8] + data[at:]
        elif how == "byte":
            data = data[:at] + bytes([b]) + data[at + 1:]
        else:
            data = data[:at]
    return data


@pytest.mark.parametrize("fmt", sorted(FILES))
@settings(deadline=None, max_examples=25)
@given(data=st.data())
def test_profiles__mutated_fixtures_read_or_fail_cleanly(tmp_path_factory, fmt, data):
    src = FIX / FILES[fmt]
    work = tmp_path_factory.mktemp(fmt)
    target_src = src / "summary.csv" if src.is_dir() else src
    if src.is_dir():
        shutil.copytree(src, work / src.name)
        target = work / src.name / "summary.csv"
        path = work / src.name
    else:
        target = path = work / src.name
    raw = target_src.read_bytes()
    target.write_bytes(_mutate(raw, data.draw(_mutants(raw))))
    try:
        p = read_profile(path, fmt=data.draw(st.sampled_from([None, fmt])))
    except ConfigError as e:
        assert len(e.problems) == 1 and any(n in e.problems[0] for n in (path.name, target.name))
    else:
        assert p.fmt in FORMATS and p.rows


ROUND_TRIP_SHAPES = [(256, 256, 256), (512, 512, 256), (256, 1024, 256), (512, 256, 512)]


@pytest.mark.slow
@settings(deadline=None, max_examples=3)
@given(dispatch_scale=st.floats(0.7, 1.5), ddr_scale=st.floats(0.5, 0.7))
def test_profiles__calibrate_profile_recovers_perturbed_parameters(tmp_path_factory, dispatch_scale, ddr_scale):
    """A profile generated by fastsim's own GEMM runs (as compare --gemm runs them: tile and columns
    pinned, the rest searched) on an arch with known perturbed dispatch overhead and DDR bandwidth,
    calibrated back from the preset: the two parameters come back within tolerance on the training
    rows, and the held-out row is predicted within tolerance. Tolerances: 5 % on the dispatch
    overhead and on every row; 20 % on the DDR bandwidth, which only the rows bound by DDR see (the
    fit searched mappings under the preset, the profile under the perturbed arch). The rows run on
    all 8 columns and the DDR loses 30-50 %: with the kernel's C moves in series a 4-column design
    of these shapes is bound by its cores, and a 10 % slower DDR hides under them."""
    from fastsim.profiles import Row
    from fastsim.profiles.calibrate import calibrate_profile
    from fastsim.profiles.gemm_csv import write_gemm_csv
    from fastsim.profiles.gemm_match import simulate_gemm_row

    start = load("npu2")
    truth = start.replace(dispatch_overhead_s=start.dispatch_overhead_s * dispatch_scale,
                          ddr_bytes_per_s=start.ddr_bytes_per_s * ddr_scale)
    rows = [Row(f"{m}x{k}x{n} bf16", "gemm", 1.0, None, "generated", 0, shape=(m, k, n, "bf16"),
                pins=(("tile", (64, 64, 64)), ("cols", 8))) for m, k, n in ROUND_TRIP_SHAPES]
    path = write_gemm_csv([simulate_gemm_row(r, truth, 3)[1] for r in rows], tmp_path_factory.mktemp("rt") / "p.csv")
    pc = calibrate_profile(read_profile(path), start, ["512x256x512 bf16"],
                           fit=["dispatch_overhead_s", "ddr_bytes_per_s"], leave_one_out=False)
    got = dict(zip(pc.cal.names, pc.cal.values))
    assert got["dispatch_overhead_s"] == pytest.approx(truth.dispatch_overhead_s, rel=0.05)
    assert got["ddr_bytes_per_s"] == pytest.approx(truth.ddr_bytes_per_s, rel=0.20)
    assert [m.name for m in pc.cal.measurements] == [r.name for r in rows[:3]]  # the held-out row was not fitted
    assert max(abs(pc.cal.residuals)) < 0.05 and abs(pc.held_errors[0]) < 0.05


def test_profiles__calibrate_profile_refuses_ill_posed_fits():
    from fastsim.profiles.calibrate import calibrate_profile

    p = read_profile(FIX / "gemm_sweep.csv")
    with pytest.raises(ConfigError, match="underdetermined"):  # 5 parameters from 2 rows
        calibrate_profile(p, load("npu2"), [], leave_one_out=False)
    with pytest.raises(ConfigError, match="every row is held out"):
        calibrate_profile(p, load("npu2"), ["64x64x64 bf16", "128x64x128 bf16"], fit=["dispatch_overhead_s"])
    with pytest.raises(ConfigError, match="no such row"):
        calibrate_profile(p, load("npu2"), ["1x1x1 bf16"], fit=["dispatch_overhead_s"])
    with pytest.raises(ConfigError, match="cannot identify"):  # a switch time: no GEMM row depends on it
        calibrate_profile(p, load("npu2"), [], fit=["elf_reload_s"])
    with pytest.raises(ConfigError, match="calibration from a profile takes GEMM rows"):
        calibrate_profile(read_profile(FIX / "plain_ops.csv"), load("npu2"), [])


def test_profiles__calibrate_cli_takes_a_profile_and_reports_the_held_out_rows(tmp_path):
    from click.testing import CliRunner

    from fastsim.cli import main

    out = CliRunner().invoke(main, ["calibrate", "--profile", str(FIX / "gemm_sweep.csv"), "--fit",
                                    "dispatch_overhead_s", "--held-out", "128x64x128 bf16", "--no-loo", "--json",
                                    "--out", str(tmp_path / "cal.toml")])
    assert out.exit_code == 0, out.output
    doc = __import__("json").loads(out.output)
    assert doc["train"] == ["64x64x64 bf16"] and (tmp_path / "cal.toml").is_file()
    (held,) = doc["held_out"]
    assert held["name"] == "128x64x128 bf16" and held["measured_s"] == pytest.approx(48e-6)
    assert held["error"] == pytest.approx(held["predicted_s"] / held["measured_s"] - 1)
    for args, words in ((["x.csv", "--profile", str(FIX / "gemm_sweep.csv")], "one of them"),
                        ([], "one of them"), (["--held-out", "a"], "--held-out 'a': no such row (rows: d)")):
        if args and args[0] == "x.csv":
            (tmp_path / "x.csv").write_text("name,workload,seconds\n")
            args[0] = str(tmp_path / "x.csv")
        if args[:1] == ["--held-out"]:
            (tmp_path / "m.csv").write_text("name,workload,seconds\nd,dispatch,0.00005\n")
            args = [str(tmp_path / "m.csv"), *args]
        out = CliRunner().invoke(main, ["calibrate", *args, "--out", str(tmp_path / "c.toml")])
        assert out.exit_code == 2 and words in out.output
