"""fastsim optimize's memo (report.md, report.html) and the study figures' readable labels.

One optimize run on a two-layer model serves every test of the module (about a minute)."""
import copy
import json
import re

import pytest
import xarray as xr
from click.testing import CliRunner

from fastsim.cli import main
from fastsim.figures import pyplot
from fastsim.llm import LlmStudy
from fastsim.llm.model import ModelConfig
from fastsim.studies import report
from fastsim.studies.memo import STEPS, memo
from fastsim.studies.report import ms

SMALL = ModelConfig("small", 512, 2, 8, 2, 64, 1024, 1000)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from fastsim.studies.optimize import optimize

    out = tmp_path_factory.mktemp("optimize")
    steps = []
    plan = optimize(LlmStudy(model=SMALL), ["decode:256", "prefill:128"], ["128:16"], out=out,
                    progress=lambda step, text: steps.append(step))
    results = {s: xr.open_zarr(out / f"{s}.zarr").load() for s in STEPS}
    return out, plan, results, steps


def overlapping_labels(fig) -> list[tuple[str, str]]:
    """Pairs of drawn texts (tick labels in view, axis labels, titles, annotations, legend entries,
    the figure's title) whose extents on the canvas overlap."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.texts]
    for ax in fig.axes:
        for axis, (lo, hi) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            span = (hi - lo) * 1e-9
            texts += [label for loc, label in zip(axis.get_ticklocs(), axis.get_ticklabels())
                      if lo - span <= loc <= hi + span]
            texts.append(axis.label)
            texts.append(axis.get_offset_text())
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            texts += [*legend.get_texts(), legend.get_title()]
    texts = [t for t in texts if t.get_visible() and t.get_text().strip()]
    boxes = [t.get_window_extent(renderer).shrunk(0.98, 0.9) for t in texts]
    pairs = [(texts[i].get_text(), texts[j].get_text()) for i in range(len(texts)) for j in range(i + 1, len(texts))
             if boxes[i].overlaps(boxes[j])]
    pyplot().close(fig)
    return pairs


def test_optimize__writes_the_directory_and_the_plan_replays_exactly(run):
    out, plan, _, steps = run
    assert steps[:4] == ["ablate", "cuts", "overlays", "dataflow"] and steps[-1] == "done"
    for step in STEPS:
        assert (out / "studies" / f"{step}.md").exists() and (out / "studies" / f"{step}.png").exists()
        assert (out / f"{step}.zarr" / ".zmetadata").exists()  # consolidated: open_zarr does not warn
    res = CliRunner().invoke(main, ["run", "--json", "llm", "--plan", str(out / "plan.json")])
    assert res.exit_code == 0, res.output
    replay = json.loads(res.stdout)
    assert replay["matches_prediction"]
    for label, r in plan["regimes"].items():
        assert replay["regimes"][label] == r["predicted"]
        assert r["predicted"]["seconds"] <= r["baseline"]["seconds"]  # never a slower plan


def test_memo__states_every_decision_with_its_number_and_a_rejected_alternative(run):
    out, plan, results, _ = run
    md = (out / "report.md").read_text()
    sections = re.split(r"\n## ", md)
    summary = next(s for s in sections if s.startswith("Summary"))
    for label, r in plan["regimes"].items():
        assert f"{ms(r['baseline']['seconds'])} ms -> {ms(r['predicted']['seconds'])} ms" in summary
    assert "Confidence:" in summary and "Biggest lever left" in summary
    for n, step in enumerate(STEPS, 1):
        body = next(s for s in sections if s.startswith(f"{n}. {step}"))
        assert "Rejected:" in body, step
    cuts = next(s for s in sections if s.startswith("2. cuts"))
    for g in results["cuts"].regime.values:
        assert f"{ms(float(results['cuts'].best_seconds.sel(regime=g)))} ms" in cuts
    assert "relieves" in cuts and "host round trip" in cuts
    overlays = next(s for s in sections if s.startswith("3. overlays"))
    assert f"{ms(results['overlays'].attrs['switch_seconds'])} ms" in overlays
    for rule in json.loads((out / "studies" / "dataflow.json").read_text())["rules"][:6]:
        assert rule in md
    assert len(md.split()) > 800  # a memo, not a table of links


def test_memo__levers_latency_tails_and_reproduce_block_come_from_the_run(run):
    out, plan, _, _ = run
    md = (out / "report.md").read_text()
    notes = plan["notes"]
    names = [lv["lever"] for lv in notes["levers"]]
    assert any(n.startswith("DDR bandwidth +25 %") for n in names) and "one more column (9)" in names
    assert "wider weights (int4 -> int8)" in names
    for lever in notes["levers"]:
        for label, s in lever["seconds"].items():
            assert s is not None and f"{ms(s)} (" in md
    lat = notes["latency"]
    for q, t, f in zip(("p50", "p95", "p99"), lat["token_latency_s"], lat["ttft_s"]):
        assert f"| {q} | {ms(t)} | {ms(f)} |" in md
    rep = notes["reproduce"]
    for key in ("version", "arch_sha256", "model_sha256"):
        assert str(rep[key]) in md
    assert "seeds: routing 0, latency 0" in md


def test_memo__numbers_follow_the_plan_never_hard_coded(run):
    """The same results with every plan time halved: the memo's numbers change with them."""
    _, plan, results, _ = run
    halved = copy.deepcopy(plan)
    for r in halved["regimes"].values():
        r["predicted"]["seconds"] /= 2
    before, after = memo(plan, results, plan["notes"]).markdown(), memo(halved, results, halved["notes"]).markdown()
    for label, r in halved["regimes"].items():
        assert f"-> {ms(r['predicted']['seconds'])} ms" in after
        assert f"-> {ms(r['predicted']['seconds'])} ms" not in before


def test_memo_html__is_self_contained_with_the_figures_inlined(run):
    out, _, _, _ = run
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(STEPS)
    assert 'src="studies/' not in page and "<script" not in page
    assert "<table>" in page and "<h2>Summary</h2>" in page and "<strong>" in page


@pytest.mark.parametrize("study", STEPS)
def test_study_figure__tick_and_annotation_labels_do_not_overlap(run, study):
    _, _, results, _ = run
    fig = report.WRITERS[study][1](results[study])
    assert overlapping_labels(fig) == []


def test_overlapping_labels__finds_labels_written_on_top_of_each_other():
    fig, ax = pyplot().subplots()
    ax.plot([1, 1.001, 2], [1, 1.001, 2], "o")
    ax.annotate("hybrid_latency", (1, 1))
    ax.annotate("hybrid_energy", (1.001, 1.001))
    assert ("hybrid_latency", "hybrid_energy") in overlapping_labels(fig)


def test_memo__reports_the_whole_run_search_per_regime(run):
    """Every regime's plan went through the whole-run search: its result is in plan.json, the
    memo states it with its numbers, and the plan is never slower than the per-op choices."""
    out, plan, _, _ = run
    text = (out / "report.md").read_text()
    assert f"## {len(STEPS) + 1}. whole-run mapping" in text
    for label, r in plan["regimes"].items():
        w = r["whole_run"]
        assert r["predicted"]["seconds"] == pytest.approx(w["seconds"], rel=1e-12)
        assert f"**{label}**" in text.split("whole-run mapping", 1)[1]
        assert ms(w["per_op_seconds"]) in text


def test_optimize__worker_processes_write_the_plan_and_memo_of_one_process(run, tmp_path, monkeypatch):
    """Two workers (studies, then the regimes' plans, then the what-ifs, each phase at once) give
    byte for byte the plan and memo of the one-process run."""
    from fastsim.studies.optimize import optimize

    monkeypatch.setenv("FASTSIM_CACHE", "1")  # workers share runs on disk, whatever the environment says

    out, plan, _, _ = run
    said = []
    together = optimize(LlmStudy(model=SMALL), ["decode:256", "prefill:128"], ["128:16"], out=tmp_path,
                        progress=lambda step, text: said.append(step), workers=2)
    assert together == plan
    for name in ("plan.json", "report.md"):
        assert (tmp_path / name).read_text() == (out / name).read_text()
    assert {"studies", "plan", "levers", "prefetch"} <= set(said)  # a worker simulated prefill's style runs ahead
