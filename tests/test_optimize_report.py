"""fastsim optimize's memo (report.md, report.html) and the study figures' readable labels.

One optimize run on a two-layer model (conftest.optimize_run, once a session, about a minute)
serves every test of the module; the memo's other cases are rendered again from that run's plan and Datasets, changed where a test says."""
import copy
import html
import json
import re
import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fastsim.cli import main
from fastsim.figures import pyplot
from fastsim.llm import LlmStudy
from fastsim.studies.memo import VALIDATION, duration, energy, measured_error, memo, size
from fastsim.studies.registry import SECTIONS, STEPS, STUDIES
from helpers import SMALL


@pytest.fixture
def run(optimize_run):
    """The session's optimize run (conftest.optimize_run): out, plan, results, steps."""
    return optimize_run


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_memo__states_every_decision_with_its_number_and_a_rejected_alternative(run):
    out, plan, results, _ = run
    md = (out / "report.md").read_text()
    sections = re.split(r"\n## ", md)
    summary = next(s for s in sections if s.startswith("Summary"))
    for label, r in plan["regimes"].items():
        b, p = r["baseline"]["seconds"], r["predicted"]["seconds"]
        assert (f"{duration(b)} -> {duration(p)}" if p != b else f"keep the searched layout ({duration(b)}") in summary
    assert "Confidence:" in summary and "Biggest lever left" in summary
    for n, step in enumerate(STEPS, 1):
        body = next(s for s in sections if s.startswith(f"{n}. {step}"))
        assert "Rejected:" in body, step
    cuts = next(s for s in sections if s.startswith("2. cuts"))
    for g in results["cuts"].regime.values:
        assert f"{duration(float(results['cuts'].best_seconds.sel(regime=g)))}" in cuts
    boundaries = [int(v) for v in np.ravel(results["cuts"].boundary_after_layer.values) if int(v) >= 0]
    if boundaries:  # each boundary of the chosen cuts says what it costs and relieves
        assert "relieves" in cuts and "host round trip" in cuts
    else:  # kernels shared within one dispatch: no cut pays
        assert cuts.count("no cut") == len(results["cuts"].regime)
    overlays = next(s for s in sections if s.startswith("3. overlays"))
    assert f"{duration(results['overlays'].attrs['switch_seconds'])}" in overlays
    for rule in json.loads((out / "studies" / "dataflow.json").read_text())["rules"][:6]:
        assert rule in md
    assert len(md.split()) > 800  # a memo, not a table of links


@pytest.mark.slow
def test_memo__levers_latency_tails_and_reproduce_block_come_from_the_run(run):
    out, plan, _, _ = run
    md = (out / "report.md").read_text()
    notes = plan["notes"]
    names = [lv["lever"] for lv in notes["levers"]]
    assert any(n.startswith("DDR bandwidth +25 %") for n in names) and "one more column (9)" in names
    assert "wider weights (int4 -> int8)" in names
    for lever in notes["levers"]:
        for label, s in lever["seconds"].items():
            assert s is not None and f"{duration(s)} (" in md
    lat = notes["latency"]
    for q, t, p, f in zip(("p50", "p95", "p99"), lat["token_latency_s"], lat["prefill_s"], lat["ttft_s"]):
        assert f"| {q} | {duration(t)} | {duration(p)} | {duration(f)} |" in md
    rep = notes["reproduce"]
    for key in ("version", "arch_sha256", "model_sha256"):
        assert str(rep[key]) in md
    assert "seeds: routing 0, latency 0" in md


@pytest.mark.slow
def test_memo__numbers_follow_the_plan_never_hard_coded(run):
    """The same results with every plan time halved: the memo's numbers change with them."""
    _, plan, results, _ = run
    halved = copy.deepcopy(plan)
    for r in halved["regimes"].values():
        r["predicted"]["seconds"] /= 2
    before = memo(plan, results, plan["notes"], SECTIONS).markdown()
    after = memo(halved, results, halved["notes"], SECTIONS).markdown()
    for label, r in halved["regimes"].items():
        assert f"-> {duration(r['predicted']['seconds'])}" in after
        assert f"-> {duration(r['predicted']['seconds'])}" not in before


@pytest.mark.slow
def test_memo_html__is_self_contained_with_the_figures_inlined(run):
    out, _, _, _ = run
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(STEPS)
    assert 'src="studies/' not in page and "<script" not in page
    assert "<table>" in page and "<h2>Summary</h2>" in page and "<strong>" in page


@pytest.mark.slow
@pytest.mark.parametrize("study", STEPS)
def test_study_figure__tick_and_annotation_labels_do_not_overlap(run, study):
    _, _, results, _ = run
    fig = STUDIES[study].figure(results[study])
    assert overlapping_labels(fig) == []


def test_overlapping_labels__finds_labels_written_on_top_of_each_other():
    fig, ax = pyplot().subplots()
    ax.plot([1, 1.001, 2], [1, 1.001, 2], "o")
    ax.annotate("hybrid_latency", (1, 1))
    ax.annotate("hybrid_energy", (1.001, 1.001))
    assert ("hybrid_latency", "hybrid_energy") in overlapping_labels(fig)


@pytest.mark.slow
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
        assert duration(w["per_op_seconds"]) in text


@pytest.mark.slow
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


def _section(md: str, title: str) -> str:
    """The body of the ``## title...`` section of a memo."""
    return next(s for s in re.split(r"\n## ", md) if s.startswith(title))


@pytest.mark.slow
def test_memo__overlays_section_agrees_with_the_overlay_it_chooses(run):
    """One overlay chosen: the bindings that differ are weighed against it, never 'cannot serve
    both'; per-regime overlays chosen (their gain made positive): the bindings explain that."""
    out, plan, results, _ = run
    ds = results["overlays"]
    one = _section((out / "report.md").read_text(), "3. overlays")
    if ds.attrs["best_single"] and not ds.attrs["gain_seconds"] > 0:
        assert "cannot serve" not in one and f"Chosen: {ds.attrs['best_single']}" in one
        if ds.binding_differs.any():
            assert "Even so, the one placement chosen" in one
    switching = ds.copy()
    switching.attrs = {**ds.attrs, "gain_seconds": 1e-3}
    switching["binding_differs"] = ds.binding_differs | True
    text = _section(memo(plan, {**results, "overlays": switching}, plan["notes"], SECTIONS).markdown(), "3. overlays")
    assert "Chosen: per_regime" in text and "Per-regime placements win: they save 1 ms per mix" in text
    assert "Even so" not in text


@pytest.mark.slow
def test_memo__every_cannot_run_gives_its_reason(run):
    """An overlay that cannot run a regime and a lever that cannot run a plan: each says why."""
    _, plan, results, _ = run
    ds = results["overlays"].copy(deep=True)
    second = next(o for o in ds.overlay.values if f"single:{o}" != ds.attrs["best_single"])
    first = next(g for g in ds.regime.values if g != second)
    ds["seconds"].loc[{"regime": first, "overlay": second}] = float("nan")
    ds["cannot_run"] = ds.cannot_run.astype(object)  # room for a longer reason than the run's
    ds["cannot_run"].loc[{"regime": first, "overlay": second}] = "no legal mapping of gemm at M = 128"
    ds["mix_seconds"].loc[{"plan": f"single:{second}"}] = float("nan")
    notes = copy.deepcopy(plan["notes"])
    label = next(iter(plan["regimes"]))
    notes["levers"][0]["seconds"][label] = None
    notes["levers"][0]["errors"][label] = "cut after layer 1 no longer fits"
    md = memo(plan, {**results, "overlays": ds}, notes, SECTIONS).markdown()
    assert f"its layout cannot run {first} (no legal mapping of gemm at M = 128)" in md
    assert "cannot run: cut after layer 1 no longer fits" in md
    for m in re.finditer(r"cannot run(.{0,40})", md):
        assert re.match(r"(: | \S+ \()\S", m[1]), m[0]


@pytest.mark.slow
def test_memo__latency_tails_are_those_of_the_recommended_plan(run):
    """The tails' decode steps and prefills run each regime's planned study: at full DDR bandwidth
    they take exactly the plan's predicted times."""
    from fastsim.arch import NPU2
    from fastsim.llm.latency import _steps_at_shares
    from fastsim.studies.optimize import study_from_json

    _, plan, _, _ = run
    lat = plan["notes"]["latency"]
    assert lat["layouts"] == ["decode", "prefill"] and "token_latency_s" in plan["notes"]["latency_baseline"]
    layouts = {label.split("@")[0]: study_from_json(r["study"]) for label, r in plan["regimes"].items()}
    decode, prefill, _, _ = _steps_at_shares(LlmStudy(model=SMALL), NPU2, np.array([0.0]), layouts)
    assert decode[0] == plan["regimes"]["decode@256"]["predicted"]["seconds"]
    assert prefill[0] == plan["regimes"]["prefill@128"]["predicted"]["seconds"]


@pytest.mark.slow
def test_memo__states_each_assumption_where_its_figure_appears(run):
    """Time to first token: the arrival model, with its numbers; energy: the energy table; kernel
    times: which kernel costs are assumed."""
    out, plan, _, _ = run
    md = (out / "report.md").read_text()
    lat, v = plan["notes"]["latency"], plan["notes"]["latency"]["variance_model"]
    tails = _section(md, "Latency tails of the plan")
    assert f"time to first token (queueing at load {v['load']:g}, assumed)" in tails
    assert "assumed arrival model" in tails and "Poisson" in tails and f"(mean {v['burst_mean']:g})" in tails
    assert f"{100 * v['load']:g} % of what the NPU serves ({lat['arrival_rate_per_s']:.3g} requests/s" in tails
    table = _section(md, "Plan vs baseline")
    assert "assumed energy table" in table and "pJ" in table and "35" in table  # npu2: 35 pJ per DDR byte
    assert "Kernel times come from the arch's kernel costs" in _section(md, "1. ablate")
    for key in plan["notes"]["assumed"]:
        assert key in _section(md, "Confidence")


@pytest.mark.slow
def test_memo__levers_only_of_this_part_and_other_hardware_apart(run):
    out, plan, _, _ = run
    md = (out / "report.md").read_text()
    kinds = {lv["lever"]: lv["this_part"] for lv in plan["notes"]["levers"]}
    assert kinds["one more column (9)"] is False and kinds["wider weights (int4 -> int8)"] is True
    summary = _section(md, "Summary")
    assert "column" not in summary and "DDR bandwidth" not in summary
    levers = _section(md, "Biggest levers left on npu2")
    apart = levers.index("### What-if on other hardware (not levers of npu2)")
    assert levers.index("one more column (9)") > apart and levers.index("wider weights") < apart


@pytest.mark.slow
def test_memo__confidence_quotes_the_measured_error_of_its_regimes(run):
    """The Confidence section quotes docs/validation.md's measured error (from its data file) for
    whole decode and prefill passes and for the matmul kernels of each regime."""
    out, plan, _, _ = run
    rows = json.loads(VALIDATION.read_text())["rows"]
    text = _section((out / "report.md").read_text(), "Confidence")
    for label, kinds in (("decode@256", ("decode",)), ("decode@256", ("gemv",)), ("prefill@128", ("prefill", "ttft")),
                         ("prefill@128", ("gemm",))):
        e = measured_error(rows, kinds, "npu2")
        assert e["rows"] >= 3
        cells = f"| {e['rows']} | {100 * e['median']:.0f} % / {100 * e['worst']:.0f} % |"
        assert any(line.startswith(f"| {label} |") and cells in line for line in text.splitlines()), (label, kinds)


def test_validation_data__matches_the_summary_of_docs_validation():
    """fastsim/presets/validation.json and docs/validation.md come from one bench run: the same
    rows, the same median and worst absolute error."""
    rows = json.loads(VALIDATION.read_text())["rows"]
    doc = (Path(__file__).resolve().parents[1] / "docs" / "validation.md").read_text()
    built = [abs(r["as_built_error"]) for r in rows]
    searched = [abs(r["searched_error"]) for r in rows]
    assert (f"as built, median absolute error {100 * statistics.median(built):.0f} %, worst {100 * max(built):.0f} % "
            f"over {len(rows)} measurements; searched, median absolute error {100 * statistics.median(searched):.0f} "
            f"%, worst {100 * max(searched):.0f} %") in doc
    for r in rows:
        assert f"| {r['workload']} |" in doc and f"{100 * r['as_built_error']:+.0f} %" in doc


def test_units__chosen_by_magnitude():
    assert [duration(x) for x in (6.833e-08, 2.389e-7, 52e-6, 0.01397, 1.8605, 0.0)] == [
        "68.33 ns", "238.9 ns", "52 µs", "13.97 ms", "1.861 s", "0 s"]
    assert duration(0.99999) == "1 s" and duration(-9.977e-4) == "-997.7 µs"
    assert [energy(x) for x in (0.02855, 1.713e-6)] == ["28.55 mJ", "1.713 µJ"]
    assert [size(x) for x in (6816, 637.2e6, 0)] == ["6.816 kB", "637.2 MB", "0 B"]


@pytest.mark.slow
def test_memo__numbers_carry_units_chosen_by_magnitude(run):
    out, _, _, _ = run
    md = (out / "report.md").read_text()
    assert not re.search(r"\de[-+]\d", md)  # no 6.833e-05 ms
    assert not re.search(r"\b0\.0\d*[1-9]\d* (s|ms|µs|J|mJ|µJ|MB|kB|GB)\b", md)  # no 0.05 ms: 50 µs


@pytest.mark.slow
def test_memo_html__stands_alone_with_the_evidence_embedded(run, tmp_path):
    """Forwarded alone, the page shows every figure and the studies' reports: no src or href
    points to a file, and each study's tables are in it."""
    out, _, _, _ = run
    alone = tmp_path / "report.html"
    shutil.copy(out / "report.html", alone)
    page = alone.read_text()
    assert not re.search(r'(src|href)="(?!data:|https?:|#)', page)
    for step in STEPS:
        title = (out / "studies" / f"{step}.md").read_text().splitlines()[0].removeprefix("# ")
        assert f"<h3>{html.escape(title, quote=False)}</h3>" in page, step  # its report, one level down
    assert page.count("<details>") == len(STEPS) and page.count("<table>") > 2 * len(STEPS)
