"""fastsim optimize --onnx: a CNN's engineering report (fastsim.studies.cnn_optimize, cnn_memo).

One CLI run on the zoo's small CNN (a strided 3x3, a 3x3, a 1x1, a depthwise 3x3, pools, a Gemm;
conftest.cnn_optimize_run, once a session) serves the module; the checks re-simulate what the
report claims with simulate_onnx directly."""
import hashlib
import json
import re

import pytest
from click.testing import CliRunner

from fastsim.arch import NPU2
from fastsim.cli import main
from fastsim.onnx import simulate_onnx, zoo
from fastsim.onnx import build_graph
from fastsim.studies.cnn_optimize import layer_group
from fastsim.studies.memo import duration
from fastsim.version import __version__

SECTIONS = ("## Summary", "## 1. Baseline", "## 2. Ablation", "## 3. Dispatch and fusion", "## 4. Dataflow per layer",
            "## 5. Levers", "## 6. Reproduce")


@pytest.fixture
def run(cnn_optimize_run):
    """The session's CLI run on the small CNN (conftest.cnn_optimize_run): path, out, plan."""
    return cnn_optimize_run


def test_cnn_optimize__cli_writes_report_html_and_plan_with_every_section(run):
    path, out, printed = run
    plan = json.loads((out / "plan.json").read_text())
    assert printed == plan  # --json prints plan.json's content
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    positions = [md.find(s) for s in SECTIONS]
    assert -1 not in positions and positions == sorted(positions), positions
    b = plan["baseline"]
    assert duration(b["seconds"]) in md and f"{b['tops']:.3g} TOPS" in md  # numbers inline
    assert hashlib.sha256(path.read_bytes()).hexdigest() in md and f"fastsim {__version__}" in md
    assert "optimize --onnx" in plan["reproduce"]["command"] and plan["reproduce"]["search_budget"] == 3
    for op in ("conv1", "conv2", "conv3", "dw", "fc"):
        assert f"| {op} |" in md
    assert html.startswith("<!DOCTYPE html>") and "<table>" in html and "http" not in html.replace("http-equiv", "")
    assert not re.search(r'(src|href)="(?!data:)', html)  # forwarded alone, it still shows everything


def _table(md: str, header: str) -> list[str]:
    """The first column of the Markdown table whose header row starts with ``header``."""
    lines = md.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            return rows
        rows.append(ln.split("|")[1].strip())
    return rows


def test_cnn_memo__each_layer_has_one_name_in_every_table(run):
    """The baseline runs its epilogues as ops, the plan folds them: both tables name every ONNX node
    as the unfolded graph does, a folded op listing the nodes it runs (conv1 + conv1.relu)."""
    path, out, plan = run
    md = (out / "report.md").read_text()
    assert plan["plan"]["fold_epilogues"] and not plan["inputs"]["fold_epilogues"]
    nodes = {op.name for op in build_graph(str(path), NPU2).graph.ops}
    baseline, planned = _table(md, "| op | ONNX type | class |"), _table(md, "| op | ONNX type | group |")
    for rows in (baseline, planned):
        names = [n for row in rows for n in row.split(" + ")]
        assert set(names) <= nodes and len(names) == len(set(names)), rows
    assert {n for row in planned for n in row.split(" + ")} == nodes  # every node, once, in the plan
    assert "conv1 + conv1.relu" in planned and "conv1.relu" in baseline


def test_cnn_memo__other_hardware_apart_and_every_cannot_run_with_its_reason(run):
    _, out, plan = run
    md = (out / "report.md").read_text()
    summary, levers = md.split("## 1.")[0], md.split("## 5. Levers")[1]
    assert "one more column" not in summary and "DDR bandwidth" not in summary
    apart = levers.index("What-if on other hardware")
    assert levers.index("one more column") > apart and levers.index("int8 weights") < apart
    for m in re.finditer(r"cannot run(.{0,40})", md):
        assert re.match(r": \S", m[1]), m[0]
    assert not re.search(r"\de[-+]\d", md)  # units chosen per magnitude, no exponents


def test_cnn_optimize__ablation_ranking_matches_whole_network_noop_runs(run):
    path, _, plan = run
    a = plan["ablation"]
    t0 = a["baseline_seconds"]
    assert {r["class"] for r in a["classes"]} == {"conv", "elementwise", "pool", "gemm"}
    saved = [r["saved_seconds"] for r in a["classes"]]
    assert saved == sorted(saved, reverse=True) and [r["rank"] for r in a["classes"]] == list(range(1, len(saved) + 1))
    for r in a["classes"]:
        assert r["noop_seconds"] <= t0 and r["saved_seconds"] == pytest.approx(t0 - r["noop_seconds"])
        assert a["data_movement_seconds"] <= r["noop_seconds"]
    top = a["classes"][0]
    again = simulate_onnx(str(path), NPU2, fusion=a["fusion"], noop=(top["class"],))
    assert float(again.total_seconds) == pytest.approx(top["noop_seconds"], rel=1e-12)
    assert a["exposed_compute_seconds"] == pytest.approx(t0 - a["data_movement_seconds"])


def test_cnn_optimize__chosen_fusion_is_the_fastest_option(run):
    path, _, plan = run
    f = plan["fusion"]
    ran = [o for o in f["options"] if o["seconds"] is not None]
    assert len(ran) >= 2 and {o["fold_epilogues"] for o in f["options"]} == {False, True}
    assert f["chosen"]["seconds"] == min(o["seconds"] for o in ran)
    assert plan["plan"]["seconds"] <= plan["baseline"]["seconds"]
    c = f["chosen"]
    again = simulate_onnx(str(path), NPU2, fusion=c["fusion"], fold_epilogues=c["fold_epilogues"])
    assert float(again.total_seconds) == pytest.approx(c["seconds"], rel=1e-12)


def test_cnn_optimize__per_layer_table_groups_layers_and_states_their_mappings(run):
    _, _, plan = run
    d = plan["dataflow"]
    layers = {r["op"]: r for r in d["layers"]}
    assert [layers[op]["group"] for op in ("conv1", "conv2", "conv3", "dw", "fc")] == [
        "strided", "3x3", "1x1", "depthwise", "fc"]
    assert (layers["dw"]["kernel"], layers["dw"]["groups"], layers["conv1"]["stride"]) == ("3x3", 16, 2)
    for op in ("conv1", "conv2", "dw"):  # the label is the evaluator's conv search's: its columns agree
        assert layers[op]["dataflow"].startswith("conv ")
        assert f"{layers[op]['columns']}c" in layers[op]["mapping"].split()[1]
    assert layers["conv3"]["dataflow"] in ("ws", "is", "os") and layers["fc"]["dataflow"] in ("ws", "is", "os")
    total = sum(r["seconds"] for r in d["layers"])
    assert sum(g["seconds"] for g in d["groups"]) == pytest.approx(total)
    # each group's set-up is its layers' control, and the layers' control is the run's
    assert sum(g["control_seconds"] for g in d["groups"]) == pytest.approx(sum(r["control_seconds"] for r in d["layers"]))
    assert any(g["control_seconds"] > 0 for g in d["groups"]) and all("set" in rule for rule in d["rules"])
    assert len(d["rules"]) == len(d["groups"]) and all(g["group"] in rule for g, rule in zip(d["groups"], d["rules"]))


def test_cnn_optimize__levers_are_simulated_on_the_plan(run):
    _, _, plan = run
    levers = {re.sub(r"(, a host runtime change)? \(.*", "", lv["lever"]): lv for lv in plan["levers"]}
    assert {"DDR bandwidth +25 %", "one more column", "host dispatch overhead x0.5", "int8 weights and activations"} \
        <= set(levers)
    assert [lv["this_part"] for lv in levers.values()] == [True, True, False, False]  # other hardware last
    p = plan["plan"]["seconds"]
    for lv in levers.values():
        assert lv["error"] == "" and lv["gain_seconds"] == pytest.approx(p - lv["seconds"])
    assert levers["DDR bandwidth +25 %"]["seconds"] <= p
    assert levers["host dispatch overhead x0.5"]["gain_seconds"] == pytest.approx(
        plan["plan"]["dispatches"] * NPU2.dispatch_overhead_s / 2)


@pytest.mark.parametrize("option", [["--model", "llama-3.2-1b"], ["--weights", "int8"], ["--kv", "int8"],
                                    ["--activations", "int8"], ["--regime", "decode:128"], ["--mix", "128:8"],
                                    ["--workers", "2"]])
def test_cnn_optimize__refuses_an_llm_option_by_name(run, tmp_path, option):
    path, _, _ = run
    result = CliRunner().invoke(main, ["optimize", "--onnx", str(path), *option, "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and f"{option[0]}: an LLM option" in result.output
    assert not (tmp_path / "x").exists()


def test_cnn_optimize__onnx_options_without_onnx_are_refused_by_name():
    result = CliRunner().invoke(main, ["optimize", "--dim", "batch=1", "--fold-epilogues"])
    assert result.exit_code == 2
    assert "--dim: applies only with --onnx" in result.output and "--fold-epilogues" in result.output


def test_layer_group__names_each_layer_type():
    from fastsim.onnx import build_graph

    g = build_graph(zoo.mobilenet_v2(size=32, shapes_only=True))
    groups = [layer_group(op) for op in g.graph.ops]
    assert groups.count("depthwise") == 17 and groups.count("fc") == 1 and "strided" in groups
    assert {"1x1", "elementwise", "pool"} <= set(groups)


def test_cnn_memo__confidence_quotes_the_whole_cnn_rows_of_the_plans_arch(monkeypatch):
    """The report's confidence line rests on docs/validation.md's whole-CNN rows of its arch where
    there are any, and says there are none where not (never a claim the table does not hold)."""
    from fastsim.studies import cnn_memo

    def row(kind, arch, err):
        return {"kind": kind, "arch": arch, "model": "", "as_built_error": err, "searched_error": err, "unit": "ms"}

    rows = [row("cnn", "npu1", -0.5), row("cnn", "npu1", -0.1), row("gemm", "npu1", 0.2), row("gemm", "npu2", 0.3)]
    monkeypatch.setattr(cnn_memo, "validation_rows", lambda: rows)
    npu1 = cnn_memo._measured_confidence({"inputs": {"arch": "npu1"}})
    assert "On whole CNNs" in npu1 and "median 30 %, worst 50 % over 2 measurements, 2 of them predicted faster" in npu1
    npu2 = cnn_memo._measured_confidence({"inputs": {"arch": "npu2"}})
    assert "No whole CNN is measured on npu2" in npu2 and "worst 30 % over 1 measurements" in npu2
