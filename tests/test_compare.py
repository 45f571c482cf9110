"""``fastsim compare`` end to end: a small ONNX CNN with an AI-Analyzer-format profile, an mlir-aie
design with a trace-format file and a kernel CSV, GEMM sweep CSVs and harness logs. Simulated
figures move with the cost model, so these tests check the structure: which rows match which ops
and how, errors computed from the two columns, the table's rows, the refusals."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from fastsim.arch import load
from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.mlir import read_design, simulate_design
from fastsim.onnx import simulate_onnx, zoo
from fastsim.profiles import read_profile
from fastsim.profiles.design_match import compare_design
from fastsim.profiles.gemm_match import compare_gemm
from fastsim.profiles.onnx_match import compare_onnx, node_owners, place
from fastsim.results import CORE_STATES

FIX = Path(__file__).parent / "fixtures" / "profiles"
DESIGN = str(Path(__file__).parent / "mlir" / "matmul_default_costs.mlir")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    path = tmp_path_factory.mktemp("onnx") / "small_cnn.onnx"
    zoo.save("small_cnn", str(path))
    return str(path)


@pytest.fixture(scope="module")
def analyzer_cmp(cnn):
    return compare_onnx(read_profile(FIX / "analyzer_small_cnn"), cnn, load("npu2"))


def test_compare__onnx_rows_match_ops_by_name_and_say_how(analyzer_cmp):
    pairs = {p.name: p for p in analyzer_cmp.pairs}
    assert pairs["conv1"].match == "fused" and [r.split("@")[0] for r in pairs["conv1"].rows] == ["conv1", "conv1.bn"]
    assert pairs["conv2"].match == "renamed" and pairs["conv2"].rows[0].startswith("node_conv2@")
    assert pairs["conv3"].match == "split" and len(pairs["conv3"].rows) == 2
    assert pairs["fc"].match == "exact" and pairs["fc"].rows[0].endswith("summary.csv:15")
    assert [u.split("@")[0] for u in analyzer_cmp.unmatched] == ["node_Transpose_99"]
    assert analyzer_cmp.unmeasured == () and analyzer_cmp.ambiguous == ()
    assert analyzer_cmp.clock_hz == 1800e6  # the profile's clock_freq_mhz, not the arch's


def test_compare__onnx_columns_are_the_profile_and_the_simulation(analyzer_cmp, cnn):
    ds = simulate_onnx(cnn, load("npu2"))
    sim = dict(zip(ds.op_name.values, ds.op_seconds.values))
    for p in analyzer_cmp.pairs:
        if p.match != "residual":
            assert p.simulated_s == pytest.approx(sim[p.name])
            assert p.error == pytest.approx(p.simulated_s / p.measured_s - 1)
    conv1 = next(p for p in analyzer_cmp.pairs if p.name == "conv1")
    assert conv1.measured_s == pytest.approx((1450 + 120) / 1800e6)
    whole = analyzer_cmp.whole  # NPU time: the host's dispatch is left out of the simulated side too
    assert whole.measured_s == pytest.approx(7.3e-6)
    assert whole.simulated_s == pytest.approx(float(ds.total_seconds) - float(ds.dispatch_seconds))


def test_compare__summary_shares_add_up_and_name_the_largest(analyzer_cmp):
    s = analyzer_cmp.summary()
    for key in ("by_class", "by_mechanism"):
        assert sum(g["share"] for g in s[key].values()) == pytest.approx(1.0)
        assert sum(g["pairs"] for g in s[key].values()) == len(analyzer_cmp.pairs)
        top = max(s[key], key=lambda k: s[key][k]["abs_error_s"])
        assert s["carried_by"]["class" if key == "by_class" else "mechanism"] == top
    assert set(s["by_mechanism"]) <= {"compute", "DMA", "dispatch", "control", "host"}
    assert s["abs_error_s"] == pytest.approx(sum(abs(p.simulated_s - p.measured_s) for p in analyzer_cmp.pairs))


def test_compare__a_folded_node_reading_two_ops_is_ambiguous_until_matched():
    node = lambda name, ins, outs: SimpleNamespace(name=name, input=ins, output=outs)  # noqa: E731
    m = SimpleNamespace(nodes=[node("a", ["x"], ["ta"]), node("b", ["x"], ["tb"]), node("cat", ["ta", "tb"], ["tc"]),
                               node("flat", ["tc"], ["tf"]), node("a", ["tf"], ["ta2"])])
    owner, ambiguous = node_owners(m, {"a", "b", "a#2"})
    assert owner == {"a": "a", "b": "b", "a#2": "a#2"} and ambiguous == {"cat": ("a", "b")}
    rows = [SimpleNamespace(name="cat", where="p.csv:2"), SimpleNamespace(name="a#2", where="p.csv:3")]
    placed, unmatched, unclear = place(rows, owner, ambiguous, {})
    assert list(placed) == ["a#2"] and not unmatched and "--match cat=OP" in unclear[0]
    placed, _, unclear = place(rows, owner, ambiguous, {"cat": "b"})
    assert placed["b"][0][1] == "given" and not unclear


def test_compare__benchmark_latency_is_the_whole_host_timed_run(cnn):
    c = compare_onnx(read_profile(FIX / "report_performance.json"), cnn, load("npu2"))
    ds = simulate_onnx(cnn, load("npu2"))
    assert c.pairs == () and c.whole.simulated_s == pytest.approx(float(ds.total_seconds))  # dispatch included


def test_compare__design_trace_tiles_against_core_states():
    c = compare_design(read_profile(FIX / "matmul_trace.json"), DESIGN)
    ds = simulate_design(read_design(DESIGN, None))
    core = [str(x) for x in ds.core_name.values[0]].index("tile(0,2)")
    kernel, stall = c.pairs
    assert kernel.name == "tile(0,2)" and kernel.mechanism == "compute"
    assert kernel.measured_s * c.clock_hz == pytest.approx(1290 + 1301 + 1288 + 1295)
    assert kernel.simulated_s * c.clock_hz == pytest.approx(ds.core_cycles.values[0, core, CORE_STATES.index("busy")])
    assert stall.mechanism == "control" and stall.measured_s * c.clock_hz == pytest.approx(3 * 60)
    assert stall.simulated_s * c.clock_hz == pytest.approx(
        ds.core_cycles.values[0, core, CORE_STATES.index("lock_wait")])


def test_compare__design_kernels_per_call_by_symbol(tmp_path):
    c = compare_design(read_profile(FIX / "plain_kernels.csv"), DESIGN)
    ds = simulate_design(read_design(DESIGN, None))
    names = [str(k) for k in ds.kernel.values]
    for p in c.pairs:
        k = names.index(p.name)
        assert p.simulated_s * c.clock_hz == pytest.approx(ds.kernel_cycles.values[0, k] / ds.kernel_calls.values[0, k])
    (tmp_path / "k.csv").write_text("kernel,cycles\nmatmul_bf16_f32,10\nconv_missing,5\n")
    c = compare_design(read_profile(tmp_path / "k.csv"), DESIGN)
    assert [p.name for p in c.pairs] == ["matmul_bf16_f32"] and c.unmatched[0].startswith("conv_missing@")
    assert c.unmeasured == ("zero_f32",)


def test_compare__gemm_csv_pairs_each_passed_shape_as_run_gemm_would():
    c = compare_gemm(read_profile(FIX / "gemm_sweep.csv"), load("npu2"))
    assert [p.name for p in c.pairs] == ["64x64x64 bf16 tile 32x32x32 cols 1", "128x64x128 bf16 tile 32x32x32 cols 1"]
    assert any("status 'fail'" in n for n in c.notes)
    out = CliRunner().invoke(main, ["run", "--json", "gemm", "--m", "64", "--k", "64", "--n", "64", "--tile",
                                    "32,32,32", "--cols", "1", "--search-budget", "3"])
    assert out.exit_code == 0, out.output
    assert c.pairs[0].simulated_s == pytest.approx(json.loads(out.output)["seconds"])
    assert c.pairs[0].measured_s == pytest.approx(41.5e-6)


def test_compare__cli_writes_table_json_and_figure(tmp_path, cnn):
    out = CliRunner().invoke(main, ["compare", str(FIX / "analyzer_small_cnn"), "--onnx", cnn, "--out",
                                    str(tmp_path / "cmp"), "--match", "node_Transpose_99=fc"])
    assert out.exit_code == 0, out.output
    with (tmp_path / "cmp" / "compare.csv").open() as f:
        table = list(csv.DictReader(f))
    doc = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [r["name"] for r in table] == [r["name"] for r in doc["table"]]
    assert next(r for r in table if r["name"] == "fc")["match"] == "given"  # the --match row joined fc
    assert doc["unmatched"] == [] and (tmp_path / "cmp" / "compare.png").stat().st_size > 0
    measured = [float(r["measured_s"]) for r in table if r["match"] != "whole"]
    assert measured == sorted(measured, reverse=True)
    assert "carried by class" in out.output


def test_compare__harness_log_with_its_dtype():
    out = CliRunner().invoke(main, ["compare", str(FIX / "harness.log"), "--gemm", "--dtype", "int8", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["table"][0]["name"] == "128x64x128 int8"


@pytest.mark.parametrize("args,words", [
    (["--onnx", "M", "--kernels", "K"], "--kernels: applies to --design only, not --onnx"),
    (["--gemm", "--dim", "batch=1"], "--dim: applies to --onnx only, not --gemm"),
    (["--gemm", "--design", "D"], "give one of --onnx MODEL, --design FILE.mlir, --gemm (given: --design, --gemm)"),
    ([], "give one of"),
])
def test_compare__options_of_another_input_are_refused_by_name(tmp_path, args, words):
    for i, a in enumerate(args):
        if a in ("M", "K", "D"):
            (tmp_path / a).write_text("x")
            args[i] = str(tmp_path / a)
    out = CliRunner().invoke(main, ["compare", str(FIX / "gemm_sweep.csv"), *args])
    assert out.exit_code == 2 and words in out.output


def test_compare__rows_of_the_wrong_kind_are_refused_by_kind(cnn):
    with pytest.raises(ConfigError, match="a tile row; an ONNX comparison compares op and model rows"):
        compare_onnx(read_profile(FIX / "matmul_trace.json"), cnn, load("npu2"))
    with pytest.raises(ConfigError, match="a gemm row; a design comparison"):
        compare_design(read_profile(FIX / "gemm_sweep.csv"), DESIGN)


def test_compare__a_simulated_gemm_sweep_reads_back_as_a_profile_that_agrees(tmp_path):
    """The simulated side written in the sweep CSV's columns (compare --gemm --out) is a profile of
    its own: compared again, every pair agrees to the 6 digits written, with the chosen mapping
    pinned."""
    out = CliRunner().invoke(main, ["compare", str(FIX / "gemm_sweep.csv"), "--gemm", "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    simulated = read_profile(tmp_path / "simulated_gemm.csv")
    assert [r.shape for r in simulated.rows] == [(64, 64, 64, "bf16"), (128, 64, 128, "bf16")]
    with (tmp_path / "simulated_gemm.csv").open() as f:
        for rec in csv.DictReader(f):
            macs = int(rec["M"]) * int(rec["K"]) * int(rec["N"])
            assert float(rec["avg_gflops"]) == pytest.approx(2 * macs / float(rec["avg_us"]) / 1e3, rel=1e-5)
    again = compare_gemm(simulated, load("npu2"))
    assert all(abs(p.error) < 1e-5 for p in again.pairs)


@settings(deadline=None, max_examples=30)
@given(data=st.data())
def test_compare__decorated_names_land_on_their_nodes_op(data):
    """Any ONNX node's name, with an AI Analyzer prefix and split-copy suffixes or not, is placed on
    the op that runs that node (itself, or the op a folded node joins), and every row is placed,
    ambiguous or unmatched exactly once."""
    from fastsim.onnx.graph import build_graph
    from fastsim.onnx.read import read_model

    m = read_model(zoo.small_cnn(shapes_only=True))
    ops = {op.name for op in build_graph(m).graph.ops}
    owner, ambiguous = node_owners(m, ops)
    nodes = [n.name for n in m.nodes]
    picked = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=8))
    rows, expect = [], []
    for i, node in enumerate(picked):
        name = data.draw(st.sampled_from([node, f"node_{node}", f"{node}_Duplicated#{i + 1}", f"node_{node}#{i}"]))
        rows.append(SimpleNamespace(name=name, where=f"p.csv:{i + 2}"))
        expect.append(owner.get(node))
    placed, unmatched, unclear = place(rows, owner, ambiguous, {})
    assert sum(len(v) for v in placed.values()) + len(unmatched) + len(unclear) == len(rows)
    got = {id(r): op for op, rs in placed.items() for r, _ in rs}
    for r, want in zip(rows, expect):
        assert got.get(id(r)) == want


@pytest.mark.slow
def test_compare__resnet50_with_an_analyzer_profile_of_every_node(tmp_path):
    """The issue's end-to-end case: ResNet-50 (fastsim's zoo, int8 QDQ) against an AI-Analyzer run
    directory that times every node (synthetic times, AI Analyzer's name decorations): every
    compute node is paired, the summary accounts for every pair."""
    import onnx

    path = tmp_path / "resnet50_int8.onnx"
    zoo.save("resnet50_int8", str(path))
    nodes = [n for n in onnx.load(str(path)).graph.node if n.op_type in ("Conv", "Add", "Relu", "Gemm")]
    run = tmp_path / "analyzer_run"
    run.mkdir()
    with open(run / "summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Type", "Execution Time.Cycles", "Execution Time.us"])
        for i, n in enumerate(nodes):
            cycles = 1000 + 37 * i
            w.writerow([("node_" if i % 3 == 0 else "") + n.name, n.op_type, cycles, f"{cycles / 1800:.3f}"])
    (run / "record_timer_0.json").write_text(json.dumps(
        {"model_name": "resnet50", "inference_count": 10, "clock_freq_mhz": 1800,
         "average_inference_time_usec": 3000.0, "average_npu_time_usec": 2500.0}))
    cmp = compare_onnx(read_profile(run), str(path), load("npu2"))
    assert len(cmp.pairs) >= 100 and not cmp.ambiguous
    assert not cmp.unmatched, cmp.unmatched
    s = cmp.summary()
    for key in ("by_class", "by_mechanism"):
        assert sum(g["pairs"] for g in s[key].values()) == len(cmp.pairs)
