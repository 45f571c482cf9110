"""Studies of the optimization method: ablation ranking (and its sweep kind, report and CLI)."""
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import fastsim
from fastsim.cli import main
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.model import ModelConfig
from fastsim.llm.run import apply_overlay
from fastsim.mapping.overlay import load_as_built
from fastsim.studies import ablate, parse_regime, parse_regimes
from fastsim.studies.registry import write_report
from fastsim.sweeping import parse_spec, sweep

SMALL = ModelConfig("small", 512, 2, 8, 2, 64, 1024, 1000)


def _study_sweep(tmp_path, kind: str, base: dict, axis: str, values: list, outputs: list):
    """A one-axis sweep of a study kind on Llama-3.2-1B, run in process; every point must succeed."""
    lines = [f'{k} = {json.dumps(v)}' for k, v in {"model": "llama-3.2-1b", **base}.items()]
    spec = parse_spec("\n".join(["[study]", f'kind = "{kind}"', "[study.base]", *lines, "[axes]",
                                  f"{axis} = {json.dumps(values)}", "[run]", "chunk_points = 1",
                                  f"outputs = {json.dumps(outputs)}"]), f"{kind}-test")
    ds = sweep(spec, tmp_path / f"{kind}.zarr", workers=0, progress=False)
    assert (ds.status.values == 0).all()
    return ds


@pytest.fixture(scope="module")
def ranking():
    return ablate(LlmStudy(model=SMALL), ["decode:512", "prefill:128"])


@pytest.mark.slow
def test_ablate__all_compute_pass_equals_the_pure_data_movement_time(ranking):
    """Removing every class's compute leaves exactly each op's data-movement time (its NOOP twin)
    plus the same dispatch overheads: the ablation and the per-op accounting agree."""
    for regime in ("decode@512", "prefill@128"):
        r = ranking.sel(regime=regime)
        study = parse_regime(regime.replace("@", ":")).study(LlmStudy(model=SMALL))
        base = simulate_llm(study)
        expected = float(base.total_seconds) - float(base.op_seconds.sum()) + float(base.movement_seconds.sum())
        assert float(r.data_movement_seconds) == pytest.approx(expected, rel=1e-12)
        assert float(r.data_movement_seconds) < float(r.baseline_seconds)


def test_ablate__ranks_by_measured_delta_and_names_the_top(ranking):
    for regime in ranking.regime.values:
        r = ranking.sel(regime=regime)
        ranked = r["rank"].values
        present = ranked > 0
        order = np.argsort(ranked[present])
        deltas = r.delta_seconds.values[present][order]
        assert (np.diff(deltas) <= 0).all()  # rank 1 saves the most
        assert str(r.top_class.values) == str(r.op_class.values[present][order][0])
        assert (r.delta_seconds.values[present] >= 0).all()
        assert np.allclose(r.share.values[present], r.delta_seconds.values[present] / float(r.baseline_seconds))
        assert np.allclose(r.time_share.values[present], r.op_seconds.values[present] / float(r.baseline_seconds))
        # a class cannot save more than its own compute, nor more than its own time
        assert (r.delta_seconds.values[present] <= r.op_seconds.values[present] + 1e-12).all()
    assert ranking.delta_seconds.attrs["units"] == "s" and ranking.share.attrs["units"] == "1"


def test_ablate__report_has_a_table_per_regime_and_a_figure(ranking, tmp_path):
    md = write_report(ranking, tmp_path)
    text = md.read_text()
    assert text.count("| rank | class |") == 2 and "Optimize first" in text
    assert (tmp_path / "ablate.png").stat().st_size > 5000


AS_BUILT_PREFILL = Path(__file__).resolve().parents[1] / "examples" / "as_built" / "air_prefill_bf16.toml"


def test_ablate__as_built_ranks_the_baseline_laid_out_as_the_file_says():
    """The baseline a user already runs: the file's precision and its prefill layout (mlir-air's
    prefill pins flash attention alone, bf16 weights), every ablated run on the same layout."""
    built = load_as_built(AS_BUILT_PREFILL)
    base = LlmStudy(model=SMALL)
    base = replace(base, precision=replace(base.precision, **built.precision))
    ds = ablate(base, ["prefill:64"], overlays=built.overlays)
    assert str(ds.fusion.values[0]) == "flash_attention" and ds.attrs["weights"] == "bf16"
    assert (ds.delta_seconds.values[ds["rank"].values > 0] >= 0).all()
    laid_out = apply_overlay(parse_regime("prefill:64").study(base), built.overlays["prefill"])
    assert float(ds.baseline_seconds[0]) == float(simulate_llm(laid_out).total_seconds)  # the file's layout ran
    assert float(ds.baseline_seconds[0]) != float(ablate(base, ["prefill:64"]).baseline_seconds[0])  # not the searched
    with pytest.raises(fastsim.ConfigError, match="decode@256: the layout file describes none"):
        ablate(base, ["decode:256"], overlays=built.overlays)


def test_cli__study_ablate_overlay_refuses_what_it_cannot_ablate_as_built():
    clash = CliRunner().invoke(main, ["study", "ablate", "--overlay", str(AS_BUILT_PREFILL), "--weights", "int4",
                                      "--regime", "prefill:64"])
    assert clash.exit_code == 2 and "--weights" in clash.output and "sets it too" in clash.output
    other = CliRunner().invoke(main, ["study", "ablate", "--overlay", str(AS_BUILT_PREFILL)])
    assert other.exit_code == 2 and "decode@4096: the layout file describes none" in other.output
    design = CliRunner().invoke(main, ["study", "ablate", "--overlay", str(AS_BUILT_PREFILL), "--design",
                                       str(AS_BUILT_PREFILL)])
    assert design.exit_code == 2 and "--overlay" in design.output and "do not apply to --design" in design.output


def test_regimes__parse_and_say_what_is_allowed():
    assert parse_regime("decode:4096:8").label == "decode@4096x8"
    assert [r.label for r in parse_regimes([])] == ["decode@4096", "prefill@1024"]
    for bad in ("decode", "train:5", "prefill:0", "decode:4k"):
        with pytest.raises(fastsim.ConfigError, match="expected REGIME:TOKENS"):
            parse_regime(bad)


@pytest.mark.slow
def test_cli__study_ablate_prints_json_and_writes_a_report(tmp_path):
    res = CliRunner().invoke(main, ["study", "ablate", "--regime", "decode:256", "--json",
                                    "--report", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout.splitlines()[-1])
    assert data["attrs"]["study"] == "ablate" and data["coords"]["regime"]["data"] == ["decode@256"]
    assert (tmp_path / "ablate.md").exists()
    bad = CliRunner().invoke(main, ["study", "ablate", "--regime", "decode"])
    assert bad.exit_code == 2 and "expected REGIME:TOKENS" in bad.output


def test_sweep__ablate_kind_stores_a_ranking_per_point(tmp_path):
    ds = _study_sweep(tmp_path, "ablate", {}, "context", [256, 512],
                      ["seconds", "delta_seconds", "top_class"])
    assert ds.delta_seconds.dims == ("context", "op_class")
    assert ds.top_class.attrs["flag_meanings"].startswith("embedding")
    direct = ablate(LlmStudy(), ["decode:512"]).isel(regime=0)
    assert float(ds.seconds.sel(context=512)) == float(direct.baseline_seconds)
    assert float(ds.delta_seconds.sel(context=512, op_class="gemm")) == float(direct.delta_seconds.sel(op_class="gemm"))


SMALL4 = ModelConfig("small4", 512, 4, 8, 2, 64, 1024, 1000)


@pytest.fixture(scope="module")
def tight_segments():
    """A 4-layer model whose whole runtime sequence does not fit one dispatch."""
    from fastsim.mapping.dispatch import DispatchLimits
    from fastsim.studies.cuts import segment_costs

    study = LlmStudy(model=SMALL4, regime="decode", context=512, fusion="chain")
    whole = simulate_llm(study)
    limits = DispatchLimits(instruction_buffer_words=int(whole.sequence_words.sum() * 0.6))
    return study, limits, segment_costs(study, fastsim.NPU2, limits, 4)


def test_cuts__dynamic_programming_equals_brute_force(tight_segments):
    from fastsim.studies.cuts import best_cuts, brute_force

    _, _, segments = tight_segments
    dp, brute = best_cuts(segments, 4), brute_force(segments, 4)
    assert dp[1] is None and brute[1] is None  # one dispatch does not fit
    for k in range(2, 5):
        assert dp[k] is not None and dp[k][:2] == pytest.approx(brute[k][:2], rel=1e-12)
        assert dp[k][2] == brute[k][2]


@pytest.mark.parametrize("cuts", [(1,), (0, 2), (0, 1, 2)])
def test_cuts__segment_costs_add_up_to_the_simulated_total(tight_segments, cuts):
    """The search's premise: a cut set's time is the sum of its dispatches' simulated costs."""
    from dataclasses import replace

    from fastsim.studies.cuts import total_of

    study, limits, segments = tight_segments
    seconds, energy, fits = total_of(segments, cuts, 4)
    ds = simulate_llm(replace(study, cuts=cuts), limits=limits)
    assert fits and seconds == pytest.approx(float(ds.total_seconds), rel=1e-12)
    assert energy == pytest.approx(float(ds.energy_pj.sum()), rel=1e-12)


def test_cuts__study_finds_the_front_and_prices_its_boundaries(tmp_path):
    from fastsim.mapping.dispatch import DispatchLimits
    from fastsim.studies import cuts

    whole = simulate_llm(LlmStudy(model=SMALL4, regime="decode", context=512))
    limits = DispatchLimits(instruction_buffer_words=int(whole.sequence_words.sum() * 0.6))
    ds = cuts(LlmStudy(model=SMALL4), ["decode:512"], limits=limits)
    r = ds.isel(regime=0)
    assert np.isnan(float(r.seconds.sel(dispatches=1)))  # does not fit
    assert float(r.best_seconds) == float(np.nanmin(r.seconds.values))
    assert bool(r.pareto.sel(dispatches=2)) and float(r.best_seconds) <= float(r.default_seconds) + 1e-15
    layers = [int(x) for x in r.boundary_after_layer.values if x >= 0]
    assert layers == [int(c) for c in str(r.best_cuts.values).split(",")]
    b = r.isel(boundary=0)
    assert float(b.boundary_host_round_trip_seconds) == fastsim.NPU2.dispatch_overhead_s
    assert float(b.boundary_write_out_seconds) >= 0 and float(b.boundary_read_back_seconds) >= 0
    assert float(b.boundary_setup_in_round_trip_seconds) < 0  # the new dispatch sets its first op up
    parts = ("write_out", "read_back", "host_round_trip", "setup_in_round_trip", "weight_reload", "program_reload")
    assert float(b.boundary_net_seconds) == pytest.approx(sum(float(b[f"boundary_{k}_seconds"]) for k in parts),
                                                          abs=1e-9)
    # without a boundary nothing fits (another may relieve program reloads)
    assert any("runtime sequence" in str(x) for x in r.boundary_relieves.values)
    md = write_report(ds, tmp_path)
    assert "Boundaries of the best cut set" in md.read_text() and (tmp_path / "cuts.png").exists()


def test_sweep__cuts_kind_stores_the_best_cut_per_point(tmp_path):
    ds = _study_sweep(tmp_path, "cuts", {"regime": "decode"}, "context", [256],
                      ["seconds", "dispatches", "default_seconds"])
    assert int(ds.dispatches.values[0]) >= 1
    assert float(ds.seconds.values[0]) <= float(ds.default_seconds.values[0])


@pytest.fixture(scope="module")
def placement():
    from fastsim.studies import overlays

    return overlays(LlmStudy(model=SMALL), ["256:64", "128:32:1:0.5"])


@pytest.mark.slow
def test_overlays__gain_is_net_of_the_switch_cost(placement):
    ds = placement
    s = ds.seconds
    switch = ds.attrs["switch_seconds"] * ds.attrs["switches_per_request"]
    best = {g: float(s.sel(regime=g).min()) for g in ds.regime.values}
    where = {g: str(ds.best_overlay.sel(regime=g).values) for g in ds.regime.values}
    expected = (best["prefill@256"] + 64 * best["decode@288"] + (where["prefill@256"] != where["decode@288"]) * switch
                + 0.5 * (best["prefill@128"] + 32 * best["decode@144"]
                         + (where["prefill@128"] != where["decode@144"]) * switch))
    assert float(ds.mix_seconds.sel(plan="per_regime")) == pytest.approx(expected, rel=1e-12)
    singles = ds.mix_seconds.values[1:]
    assert ds.attrs["gain_seconds"] == pytest.approx(np.nanmin(singles) - float(ds.mix_seconds.sel(plan="per_regime")))
    assert ds.attrs["switch_seconds"] in (fastsim.NPU2.reconfiguration_s, fastsim.NPU2.elf_reload_s)
    # a decode chain cannot hold a prefill's activations; another decode fusion runs it
    chain = str(ds.fusion.sel(regime="decode@288").values) == "chain"
    assert np.isnan(float(s.sel(regime="prefill@256", overlay="decode@288"))) == chain
    # each regime's residency comes with its reason: static weights only where they fit and run faster
    # (SMALL's weights fit: prefill@256 keeps them static since control counts, 1.138 vs 1.221 ms)
    for g in ds.regime.values:
        kept, reason = str(ds.residency.sel(regime=g).values), str(ds.residency_reason.sel(regime=g).values)
        assert reason.startswith(f"{kept}: ")
        assert "faster (" in reason if kept == "static" else "static weights" in reason or "MB of weights" in reason


def test_overlays__report_lists_plans_and_classes_whose_binding_differs(placement, tmp_path):
    text = write_report(placement, tmp_path).read_text()
    assert "## The mix" in text and "[decode]" in text and (tmp_path / "overlays.png").exists()
    for c, differs in zip(placement.op_class.values, placement.binding_differs.values):
        assert (f"- {c}: " in text) == bool(differs)


def test_requests__parse_and_say_what_is_allowed():
    from fastsim.studies import parse_request

    r = parse_request("512:64:4:0.5")
    assert (r.prompt, r.new_tokens, r.batch, r.weight) == (512, 64, 4, 0.5)
    assert r.decode.label == "decode@544x4"
    for bad in ("512", "512:0", "a:b", "1:2:3:-1"):
        with pytest.raises(fastsim.ConfigError, match="PROMPT:NEW_TOKENS"):
            parse_request(bad)


@pytest.mark.slow
def test_sweep__overlays_kind_stores_the_net_gain_per_request(tmp_path):
    ds = _study_sweep(tmp_path, "overlays", {"prompt": 128}, "new_tokens", [1, 64],
                      ["per_regime_seconds", "single_seconds", "gain_seconds", "switch_seconds"])
    assert np.allclose(ds.gain_seconds.values, ds.single_seconds.values - ds.per_regime_seconds.values)
    assert (ds.per_regime_seconds.values > 0).all() and (ds.switch_seconds.values > 0).all()


@pytest.fixture(scope="module")
def styles():
    from fastsim.studies import dataflow

    return dataflow(LlmStudy(model=SMALL), ["decode:256", "prefill:256"])


@pytest.mark.slow
def test_dataflow__hybrid_never_slower_than_the_best_single_style_else_a_stated_trade_off(styles):
    for g in styles.regime.values:
        r = styles.sel(regime=g)
        single = [p for p in ("ws", "is", "os") if np.isfinite(float(r.seconds.sel(point=p)))]
        best = min(single, key=lambda p: float(r.seconds.sel(point=p)))
        assert str(r.baseline.values) == best
        h_s, h_e = float(r.seconds.sel(point="hybrid_latency")), float(r.energy_j.sel(point="hybrid_latency"))
        assert h_s <= float(r.seconds.sel(point=best)) + 1e-15
        if h_e > float(r.energy_j.sel(point=best)):  # a trade-off: both are on the front
            assert bool(r.pareto.sel(point="hybrid_latency")) and bool(r.pareto.sel(point=best))
        # the chosen point is on the front and nothing on it is faster
        chosen = str(r.chosen.values)
        assert bool(r.pareto.sel(point=chosen))
        front = r.seconds.values[r.pareto.values]
        assert float(r.seconds.sel(point=chosen)) == front.min()


def test_dataflow__playbook_numbers_are_the_datasets(styles, tmp_path):
    from fastsim.studies import playbook

    book = playbook(styles)
    for g in styles.regime.values:
        r = styles.sel(regime=g)
        for p, v in book["regimes"][g]["points"].items():
            assert v["seconds"] == float(r.seconds.sel(point=p)) or np.isnan(v["seconds"])
        for op, v in book["regimes"][g]["ops"].items():
            assert v["style"] == str(r.choice.sel(op=op).values)
            assert v["seconds"] == float(r.op_seconds.sel(op=op, style=v["style"]))
            assert v["gain_seconds"] == float(r.gain_seconds.sel(op=op)) or np.isnan(v["gain_seconds"])
            assert set(v["rejected"]) == {"ws", "is", "os"} - {v["style"]}
    md = write_report(styles, tmp_path).read_text()
    assert "Transition rules" in md and json.loads((tmp_path / "dataflow.json").read_text()) == json.loads(
        json.dumps(book))
    for rule in book["rules"]:
        assert rule in md


def test_sweep__dataflow_kind_never_stores_a_hybrid_slower_than_the_best_style(tmp_path):
    ds = _study_sweep(tmp_path, "dataflow", {"regime": "decode"}, "context", [128],
                      ["seconds", "baseline_seconds", "hybrid_seconds", "style_seconds"])
    assert float(ds.baseline_seconds[0]) == float(np.nanmin(ds.style_seconds.values[0]))
    assert float(ds.hybrid_seconds[0]) <= float(ds.baseline_seconds[0])


def test_variables__every_study_output_is_declared_once_with_units(ranking, placement, styles):
    from fastsim.studies.registry import VARIABLES
    from fastsim.studies.variables import build
    from fastsim.sweeping.variables import REGISTRY

    for ds in (ranking, placement, styles):
        declared = VARIABLES[ds.attrs["study"]]
        for name, var in ds.data_vars.items():
            assert var.attrs == {"units": declared[name].units, "description": declared[name].description}
            assert var.dims == declared[name].dims
    assert REGISTRY["ablate"]["delta_seconds"].description == VARIABLES["ablate"]["delta_seconds"].description
    with pytest.raises(KeyError, match="not declared"):
        build(VARIABLES["ablate"], {"speedup": np.zeros(1)}, {}, {"study": "ablate"})


def test_bandwidth__measures_asymmetric_columns_and_proportional_split_beats_equal(tmp_path):
    from fastsim.studies import bandwidth

    arch = fastsim.NPU2.replace(name="asym", columns=4, shim_read_bytes_per_cycle=(1.0, 1.0, 2.0, 4.0),
                                shim_write_bytes_per_cycle=(4.0,) * 4, ddr_bytes_per_s=20e9)
    ds = bandwidth(arch, sizes=(256, 4096), total_bytes=1 << 15, channels=(1, 2))
    read = ds.bytes_per_s.sel(direction="read", channels=1, size_bytes=4096)
    clock = arch.clock_hz
    per_col = [float(read.sel(column=str(c))) for c in range(4)]
    # each column alone delivers at most its shim rate (and per channel at most one stream)
    for c, rate in enumerate((1.0, 1.0, 2.0, 4.0)):
        assert per_col[c] <= min(rate, arch.stream_bytes_per_cycle) * clock * 1.0001
    assert per_col[0] < per_col[2] < per_col[3] * 1.0001
    assert float(ds.bytes_per_s.sel(column="all").max()) <= arch.ddr_bytes_per_s * 1.0001  # the DDR cap
    eq, prop = (float(ds.split_bytes_per_s.sel(split=k)) for k in ("equal", "proportional"))
    assert prop > 1.2 * eq  # equal shares wait for the slowest column
    assert eq == pytest.approx(4 * min(per_col), rel=0.05)
    assert float(ds.split_share_bytes.sel(split="proportional").sum()) == float(ds.split_share_bytes.sel(
        split="equal").sum())
    assert "One tensor over every column" in write_report(ds, tmp_path).read_text()
