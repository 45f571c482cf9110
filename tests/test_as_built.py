"""As-built descriptions: a real implementation's choices, simulated as given; what the file leaves
open is searched and reported as such; what it cannot mean is refused by name."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

import pytest
from click.testing import CliRunner

from fastsim.cli import main
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.run import apply_overlay
from fastsim.mapping.overlay import load_as_built
from helpers import SMALL

DECODE = '''
[model]
weights = "int8"
group_size = 32

[decode]
fusion = "none"
cuts = [7]
datapath = { gemm = "bfp16" }
tiles = { q_proj = [4, 64, 64] }
l2 = { o_proj = "" }

[sources]
"decode.cuts" = "repo/run.py:12"
"model.weights" = "README.md:3"
'''


def _file(tmp_path, text, name="as_built.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_as_built__tables_and_open_choices(tmp_path):
    a = load_as_built(_file(tmp_path, DECODE))
    assert a.precision == {"weights": "int8", "group_size": 32}
    d = a.overlays["decode"]
    assert d.cuts == (7,) and d.tiles == {"q_proj": (4, 64, 64)}
    assert d.open_choices() == ["columns", "dataflow", "rows", "split", "residency"]
    assert "cuts" in a.pinned("decode") and "model.weights" in a.pinned("decode")


@pytest.mark.parametrize("text,named", [
    ('[decode]\nfrobnicate = 1', "frobnicate"),
    ('[decode]\ntiles = { gemm = [64, 64] }', "tiles.gemm"),
    ('[decode]\nl2 = { gemm = "c" }', "l2.gemm"),
    ('[decode]\ncuts = "3"', "cuts"),
    ('[model]\nbits = 4\n[decode]', "bits"),
    ('[model]\ntensors = { vision = "bf16" }\n[decode]', "tensors.vision"),
    ('[decode]\n[sources]\n"decode.cuts" = "x"', "sources.decode.cuts"),
    ('[training]\n[decode]', "training"),
])
def test_load_as_built__refuses_by_name(tmp_path, text, named):
    with pytest.raises(ConfigError) as e:
        load_as_built(_file(tmp_path, text))
    assert named in str(e.value)


def test_as_built__pins_reach_the_ops(tmp_path):
    a = load_as_built(_file(tmp_path, DECODE))
    study = apply_overlay(LlmStudy(context=256), a.overlays["decode"])
    ds = simulate_llm(study)
    assert list(ds.attrs["cuts"]) == [7] and ds.attrs["fusion"] == "none"
    kernels = ds.attrs["kernels"]
    assert any("(4, 64, 64)" in k for k in kernels)  # q_proj's pinned tile is a linked kernel
    # every gemm-class matmul on the pinned bfp16 datapath (attention's are searched: with the kernel
    # model its decode GEMVs pick native bf16)
    gemm = ds.op_class.values == "gemm"
    assert gemm.any() and set(ds.matmul_datapath.values[gemm]) == {"bfp16"}
    searched = simulate_llm(LlmStudy(context=256, fusion="none", cuts=(7,)))
    assert float(ds.total_seconds) >= float(searched.total_seconds) * 0.999  # pins never beat the search by much


def test_as_built__impossible_pins_refused():
    with pytest.raises(ConfigError, match="datapath"):
        simulate_llm(LlmStudy(context=64, datapath={"gemm": "int8"}))  # a bf16 matmul has no int8 datapath
    with pytest.raises(ConfigError, match="tiles"):
        simulate_llm(LlmStudy(context=64, tiles={"norm": (4, 64, 64)}))  # vector ops stream
    with pytest.raises(ConfigError, match="precision.lm_head"):
        simulate_llm(LlmStudy(context=64, precision=LlmStudy().precision.__class__(lm_head="bf16")))


def test_cli__run_llm_as_built_reports_pinned_and_searched(tmp_path):
    path = _file(tmp_path, DECODE)
    r = CliRunner().invoke(main, ["run", "--json", "llm", "--context", "256", "--overlay", str(path)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["as_built"]["searched"] == ["columns", "dataflow", "rows", "split", "residency"]
    assert out["as_built"]["sources"]["decode.cuts"] == "repo/run.py:12"
    same = CliRunner().invoke(main, ["run", "--json", "llm", "--context", "256", "--weights", "int8", "--fusion", "none",
                                     "--cuts", "7"])
    assert json.loads(same.output)["weight_bytes"] == pytest.approx(out["weight_bytes"], rel=0.02)
    r = CliRunner().invoke(main, ["run", "llm", "--context", "256", "--overlay", str(path), "--weights", "int4"])
    assert r.exit_code != 0 and "--weights" in r.output and "one place" in r.output
    r = CliRunner().invoke(main, ["run", "llm", "--context", "256", "--overlay", str(path), "--cuts", "3"])
    assert r.exit_code != 0 and "--cuts" in r.output


def test_cli__run_gemm_as_built_equals_the_same_pins_given_as_options(tmp_path):
    path = _file(tmp_path, '[gemm]\ntile = [64, 64, 64]\ncols = 4\ndataflow = "os"\n')
    args = ["run", "--json", "gemm", "--m", "512", "--k", "512", "--n", "512"]
    a = CliRunner().invoke(main, [*args, "--overlay", str(path)])
    b = CliRunner().invoke(main, [*args, "--tile", "64,64,64", "--cols", "4", "--dataflow", "os"])
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    ja, jb = json.loads(a.output), json.loads(b.output)
    assert ja["total_cycles"] == jb["total_cycles"] and ja["mapping"] == jb["mapping"]
    assert ja["as_built"]["pinned"] == ["tile", "cols", "dataflow"]
    clash = CliRunner().invoke(main, [*args, "--overlay", str(path), "--cols", "2"])
    assert clash.exit_code != 0 and "cols" in clash.output


@pytest.mark.parametrize("args,named", [
    (["--regime", "prefill", "--context", "8"], "--context"),
    (["--regime", "decode", "--prompt", "8"], "--prompt"),
    (["--regime", "decode", "--prefill-context", "8"], "--prefill-context"),
    (["--new-tokens", "4"], "--new-tokens"),
    (["--plan", "README.md", "--model", "llama-3.2-3b"], "--model"),
])
def test_cli__options_that_do_not_apply_are_refused(args, named):
    r = CliRunner().invoke(main, ["run", "llm", *args])
    assert r.exit_code != 0 and named in r.output and ("apply" in r.output or "replays" in r.output)


def test_pins__an_empty_l2_pin_is_a_pin():
    from fastsim.evaluation import GraphPins

    pins = GraphPins(l2=(("q_proj", ""), ("gemm", "ab")))
    assert pins.pinned(pins.l2, "q_proj", "", "gemm") == ""
    assert pins.pinned(pins.l2, "k_proj", "", "gemm") == "ab"
    assert pins.pinned(pins.l2, "k_proj", "", "attention") is None


def test_apply_overlay__open_choices_keep_the_studys():
    from fastsim.mapping.overlay import Overlay

    study = apply_overlay(LlmStudy(fusion="none", residency="static"), Overlay(regime="decode", cuts=()))
    assert (study.fusion, study.residency, study.cuts) == ("none", "static", ())


@pytest.mark.parametrize("text,args,named", [
    ('[decode]\ncolumns = { gemm = 8 }', ["--columns", "gemm=2"], "--columns gemm"),
    ('[decode]\ndataflow = { gemm = "ws" }', ["--dataflow", "gemm=os"], "--dataflow gemm"),
    ('[decode]\nfusion = "chain"', ["--regime", "generate", "--prompt", "64", "--new-tokens", "2", "--fusion", "none"],
     "--fusion"),
    ('[decode]\ncuts = []', ["--samples", "3"], "--samples"),
    ('[decode]\nresident_programs = true', ["--no-resident-programs"], "--resident-programs"),
    ('[prefill]\nrow_major_ddr = true', ["--regime", "prefill", "--prompt", "64", "--no-row-major-ddr"],
     "--row-major-ddr"),
    ('[prefill]\nlaunches_reconfigure = true', ["--regime", "prefill", "--prompt", "64", "--launches-reconfigure"],
     "--launches-reconfigure"),
    ('[model]\nbytes_per_weight = { lm_head = 0.7 }\n[decode]', [], "measured[lm_head]"),
    ('[decode]', ["--regime", "generate", "--prompt", "64", "--new-tokens", "2", "--save-overlay", "x.toml"],
     "--save-overlay"),
])
def test_cli__as_built_clashes_refused(tmp_path, text, args, named):
    path = _file(tmp_path, text)
    r = CliRunner().invoke(main, ["run", "llm", "--overlay", str(path), *args])
    assert r.exit_code != 0 and named in r.output, r.output


def test_cli__save_overlay_refuses_to_drop_an_as_built_files_pins(tmp_path):
    """A saved layout holds fusion, columns, dataflow and residency: a file pinning buffers (or
    tiles, cuts, ...) saved that way would replay as another design, silently."""
    path = _file(tmp_path, '[decode]\nbuffers = { o_proj = 1 }\ncuts = [3]')
    saved = tmp_path / "saved.toml"
    r = CliRunner().invoke(main, ["run", "llm", "--context", "256", "--overlay", str(path), "--save-overlay", str(saved)])
    assert r.exit_code != 0 and "buffers, cuts" in r.output and not saved.exists(), r.output
    plain = _file(tmp_path, '[decode]\nfusion = "none"')
    r = CliRunner().invoke(main, ["run", "llm", "--context", "256", "--overlay", str(plain), "--save-overlay", str(saved)])
    assert r.exit_code == 0 and saved.exists(), r.output


def test_host_ops__given_time_replaces_the_op_and_each_run_adds_a_dispatch():
    base = simulate_llm(LlmStudy(context=128, fusion="none", cuts=()))
    study = LlmStudy(context=128, fusion="none", cuts=(), host={"attention": 1e-4, "softmax": 5e-5})
    ds = simulate_llm(study)
    layers = int(ds.attrs["layers"])
    on_host = np.isin(ds.op_class.values, ["attention", "softmax"])
    assert np.allclose(ds.op_seconds.values[on_host], np.where(ds.op_class.values[on_host] == "softmax", 5e-5, 1e-4))
    assert float(ds.ddr_bytes.values[on_host].sum()) == 0 and set(ds.bound_by.values[on_host]) == {"host"}
    # scores, softmax and attention x V run back to back: one more dispatch per layer
    assert int(ds.attrs["dispatches"]) == int(base.attrs["dispatches"]) + layers
    npu = float(ds.op_seconds.values[~on_host].sum())
    overheads = (float(ds.dispatch_seconds) + float(ds.program_reload_seconds) + float(ds.preload_seconds)
                 + float(ds.control_seconds))
    assert float(ds.total_seconds) == pytest.approx(npu + layers * 2.5e-4 + overheads)
    assert float(ds.tokens_per_s) == pytest.approx(1 / float(ds.total_seconds))
    with pytest.raises(ConfigError, match="host\\[flash\\]"):
        simulate_llm(LlmStudy(context=128, host={"flash": 1e-4}))
    with pytest.raises(ConfigError, match="host\\[softmax\\]"):
        simulate_llm(LlmStudy(context=128, host={"softmax": -1.0}))


def test_cli__run_gemm_as_built_one_core(tmp_path):
    path = _file(tmp_path, '[gemm]\ncols = 1\nrows = 1\n')
    r = CliRunner().invoke(main, ["run", "--json", "gemm", "--m", "128", "--k", "128", "--n", "128", "--overlay",
                                  str(path)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["mapping"]["cols"], out["mapping"]["rows"]) == (1, 1)
    assert out["as_built"]["pinned"] == ["cols", "rows"]


def test_cli__run_gemm_as_built_out_dtype_writes_wider_c(tmp_path):
    """An f32 C (an implementation that casts in a later launch) writes twice the bf16 bytes."""
    args = ["run", "--json", "gemm", "--m", "128", "--k", "256", "--n", "128", "--overlay"]
    wide = _file(tmp_path, '[gemm]\ntile = [32, 32, 64]\nout_dtype = "f32"\n')
    r = CliRunner().invoke(main, [*args, str(wide)])
    narrow = tmp_path / "narrow.toml"
    narrow.write_text('[gemm]\ntile = [32, 32, 64]\n')
    b = CliRunner().invoke(main, [*args, str(narrow)])
    assert r.exit_code == 0 and b.exit_code == 0, r.output + b.output
    f32, bf16 = json.loads(r.output), json.loads(b.output)
    assert f32["as_built"]["pinned"] == ["tile", "out_dtype"]
    assert f32["bytes_by_level"]["ddr_write"] == 2 * bf16["bytes_by_level"]["ddr_write"] == 2 * 2 * 128 * 128
    bad = _file(tmp_path, '[gemm]\nout_dtype = "f33"\n')
    r = CliRunner().invoke(main, [*args, str(bad)])
    assert r.exit_code != 0 and "out_dtype" in r.output


def test_cli__run_gemm_as_built_single_buffers(tmp_path):
    path = _file(tmp_path, '[gemm]\ncols = 2\nrows = 1\nbuffers = 1\n')
    r = CliRunner().invoke(main, ["run", "--json", "gemm", "--m", "1", "--k", "1024", "--n", "256", "--overlay",
                                  str(path)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["as_built"]["pinned"] == ["cols", "rows", "buffers"]
    assert "single-buffered" in out["mapping"]["label"]


def test_cli__as_built_cuts_run_beyond_assumed_limits_and_say_so(tmp_path, monkeypatch):
    """A dispatch the file pins was built and ran: fastsim's assumed limits report, never veto it."""
    from fastsim.arch import NPU2
    from fastsim.llm import run as llm_run
    from fastsim.mapping.dispatch import DispatchLimits

    monkeypatch.setattr(llm_run.simulate_llm, "__defaults__", (NPU2, DispatchLimits(instruction_buffer_words=2000),
                                                               True))
    path = _file(tmp_path, '[decode]\ncuts = []\n')
    r = CliRunner().invoke(main, ["run", "--json", "llm", "--context", "128", "--overlay", str(path)])
    assert r.exit_code == 0, r.output
    assert "instruction buffer" in json.loads(r.output)["as_built"]["beyond_assumed_limits"]
    r = CliRunner().invoke(main, ["run", "llm", "--context", "128", "--cuts", "none"])
    assert r.exit_code != 0 and "instruction buffer" in r.output


def test_as_built__causal_halving_false_computes_the_masked_tiles(tmp_path):
    """An implementation that computes every causal tile (mlir-air's flash attention by default)
    says so in [prefill]; the attention classes then cost more, nothing else changes but through
    the chain's shared kernels (program memory couples a chain's ops: another op may then keep or
    drop a kernel it shared); a value that is not a bool is refused by name."""
    import numpy as np

    from fastsim.llm import LlmStudy, simulate_llm
    from fastsim.llm.run import apply_overlay
    from fastsim.mapping.overlay import load_as_built

    path = tmp_path / "a.toml"
    path.write_text('[prefill]\ncausal_halving = false\n')
    built = load_as_built(path)
    assert built.overlays["prefill"].causal_halving is False and "causal_halving" in built.pinned("prefill")
    # a two-layer model: each op class is there; its prefill of 32 is tests/test_latency.py's too
    study = LlmStudy(model=SMALL, regime="prefill", prompt=32)
    assert apply_overlay(study, built.overlays["prefill"]).causal_halving is False
    assert apply_overlay(study, load_as_built(_write(tmp_path, "[prefill]\nfusion = \"none\"\n")).overlays[
        "prefill"]).causal_halving is True  # left out: the run's own
    plain, full = simulate_llm(study), simulate_llm(apply_overlay(study, built.overlays["prefill"]))
    attention = np.isin(plain["op_class"].values, ("attention", "softmax"))
    assert full["op_seconds"].values[attention].sum() > plain["op_seconds"].values[attention].sum()
    moved = ~attention & (full["op_seconds"].values != plain["op_seconds"].values)
    assert (full["kernel_shared"].values[moved] != plain["kernel_shared"].values[moved]).all()
    with pytest.raises(ConfigError, match="causal_halving"):
        load_as_built(_write(tmp_path, '[prefill]\ncausal_halving = "no"\n'))
    with pytest.raises(ConfigError, match="a \\[prefill\\] key only"):
        load_as_built(_write(tmp_path, "[decode]\ncausal_halving = false\n"))


def _write(tmp_path, text: str):
    path = tmp_path / f"f{abs(hash(text))}.toml"
    path.write_text(text)
    return path


def test_as_built__row_major_ddr_true_reads_tile_rows_and_is_never_faster(tmp_path):
    """Tensors row-major in DDR (an implementation's layout, not fastsim's per-design one) cost a
    DDR run per tile row: the matmuls are never faster, the vector ops unchanged."""
    from fastsim.llm.run import apply_overlay

    built = load_as_built(_write(tmp_path, "[prefill]\nrow_major_ddr = true\n"))
    assert "row_major_ddr" in built.pinned("prefill")
    # two layers, a prompt of 256 (at 32 no GEMM is slower row-major: too few tile rows); the fused
    # groups pinned: fusion and pipeline choices weigh each run's whole time (control included), so
    # a row-major run may choose other pipelines, and the property holds op by op under one layout
    study = LlmStudy(model=SMALL, regime="prefill", prompt=256, fusion="ffn+flash_attention+norm_qkv")
    rows = apply_overlay(study, built.overlays["prefill"])
    assert rows.row_major_ddr is True and study.row_major_ddr is False
    plain, tiled = simulate_llm(study), simulate_llm(rows)
    gemm = plain["op_class"].values == "gemm"
    assert (tiled["op_seconds"].values[gemm] >= plain["op_seconds"].values[gemm]).all()
    assert tiled["op_seconds"].values[gemm].sum() > plain["op_seconds"].values[gemm].sum()
    vector = ~np.isin(plain["op_class"].values, ("gemm", "attention"))
    assert np.array_equal(tiled["op_seconds"].values[vector], plain["op_seconds"].values[vector])
    with pytest.raises(ConfigError, match="row_major_ddr"):
        load_as_built(_write(tmp_path, "[prefill]\nrow_major_ddr = 1\n"))


def test_as_built__a_gemm_row_major_in_ddr_is_never_faster_and_refused_if_not_a_bool():
    """[gemm] row_major_ddr = true (mlir-air's registry GEMMs): the shim reads tile rows and pays
    the DDR cost per run; the default lays the operands out per design (one run per BD)."""
    from fastsim.arch import NPU2
    from fastsim.workloads.gemm import Gemm, run_gemm

    plain = Gemm(256, 256, 256, tile_m=32, tile_k=32, tile_n=32, budget=1)
    fast, _ = run_gemm(plain, NPU2)
    rows, _ = run_gemm(replace(plain, row_major_ddr=True), NPU2)
    assert rows["total_cycles"] >= fast["total_cycles"]
    with pytest.raises(ConfigError, match="row_major_ddr"):
        replace(plain, row_major_ddr=1).graph()


@pytest.mark.parametrize("command, unread", [
    (["run", "llm", "--context", "64"], "[gemm]"), (["study", "ablate", "--regime", "decode:64"], "[gemm]"),
    (["run", "gemm", "--m", "64", "--k", "64", "--n", "64"], "[decode]")])
def test_cli__a_table_the_workload_does_not_read_is_refused_by_name(tmp_path, command, unread):
    """A file with a model's regime and one GEMM's table: an LLM run would drop the [gemm] table and
    a GEMM run the [decode] one, each running another design under the file's name."""
    path = tmp_path / "both.toml"
    path.write_text('[decode]\nfusion = "none"\n[gemm]\ntile = [64, 64, 64]\n')
    r = CliRunner().invoke(main, [*command, "--overlay", str(path)])
    assert r.exit_code == 2 and f"{unread}: {path} describes it" in r.output and "does not read it" in r.output


def test_api__an_as_built_file_runs_from_python_as_the_cli_runs_it(tmp_path):
    """The CLI formats, it does not compute: the file's [model] storage (``with_as_built``), its
    regime's layout (``apply_overlay``) and the report of what it pinned (``AsBuilt.report``) are
    the API's, and give what ``run llm --overlay`` prints."""
    from fastsim.llm.run import llm_summary, strict_for, with_as_built

    path = _file(tmp_path, DECODE)
    built = load_as_built(path).check_read_by("llm", path)
    study = with_as_built(LlmStudy(regime="decode", context=256), built)
    assert study.precision.weights == "int8" and study.precision.group_size == 32
    layout = built.overlays["decode"]
    ds = simulate_llm(apply_overlay(study, layout), strict=strict_for(layout))
    r = CliRunner().invoke(main, ["run", "--json", "llm", "--context", "256", "--overlay", str(path)])
    out = json.loads(r.output)
    assert out["as_built"] == built.report(path, "decode")
    assert out["seconds"] == llm_summary(ds)["seconds"]
