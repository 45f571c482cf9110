"""Systolic mesh: closed forms vs the demand-matrix reference, and vs SCALE-Sim v3 golden numbers."""
import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import fastsim
from fastsim.cli import main
from fastsim.systolic import Layer, MeshConfig, read_config, read_topology, simulate_mesh
from systolic_reference import reference

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = json.loads((ROOT / "tests" / "golden" / "scalesim_v3.json").read_text())


@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.integers(1, 12), st.integers(1, 12),
       st.sampled_from(["ws", "is", "os"]))
def test_systolic__closed_forms_match_the_demand_matrix_reference(m, n, k, r, c, df):
    ds = simulate_mesh([Layer.gemm("x", m, n, k)], [MeshConfig(r, c, df)]).isel(layer=0, config=0)
    ref = reference(m, n, k, r, c, df)
    for key, value in ref.items():
        if isinstance(value, float):
            assert float(ds[key]) == pytest.approx(value, rel=1e-12), key
        else:
            assert int(ds[key]) == value, key


def golden_layers():
    out = []
    for row in csv.DictReader(open(ROOT / "bench" / "scalesim" / "layers.csv")):
        if row["kind"] == "gemm":
            out.append(Layer.gemm(row["name"], int(row["m"]), int(row["n"]), int(row["k"])))
        else:
            out.append(Layer.conv(row["name"], *[int(row[k]) for k in
                                                 ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels",
                                                  "num_filters", "stride")]))
    return out


def test_systolic__matches_scalesim_v3_golden_numbers():
    layers = golden_layers()
    runs = [r for r in GOLDEN["results"] if r["mode"] == "CALC"]
    keys = sorted({(r["rows"], r["cols"], r["dataflow"]) for r in runs})
    assert len({r["layer"] for r in runs}) >= 20 and len(keys) >= 9  # 20 layers x 3 shapes x 3 dataflows
    ds = simulate_mesh(layers, [MeshConfig(rr, cc, df) for rr, cc, df in keys])
    index = {layer.name: i for i, layer in enumerate(layers)}
    near_dram_ofmap = 0
    for run in runs:
        p = ds.isel(layer=index[run["layer"]], config=keys.index((run["rows"], run["cols"], run["dataflow"])))
        c, a = run["compute"], run["access"]
        where = (run["layer"], run["rows"], run["cols"], run["dataflow"])
        assert int(p.total_cycles) == int(c["Total Cycles"]), where
        assert int(p.stall_cycles) == int(c["Stall Cycles"]) == 0, where
        assert float(p.mapping_efficiency) == pytest.approx(float(c["Mapping Efficiency %"]), rel=1e-9), where
        assert float(p.compute_utilization) == pytest.approx(float(c["Compute Util %"]), rel=1e-9), where
        assert float(p.overall_utilization) == pytest.approx(float(c["Overall Util %"]), rel=1e-9), where
        assert int(p.sram_ifmap_reads) == int(a["SRAM IFMAP Reads"]), where
        assert int(p.sram_filter_reads) == int(a["SRAM Filter Reads"]), where
        assert int(p.sram_ofmap_writes) == int(a["SRAM OFMAP Writes"]), where
        assert int(p.dram_ifmap_reads) == int(a["DRAM IFMAP Reads"]), where
        assert int(p.dram_filter_reads) == int(a["DRAM Filter Reads"]), where
        # SCALE-Sim's write buffer adds a few words when the ofmap overflows it (documented)
        assert int(p.dram_ofmap_writes) == pytest.approx(int(a["DRAM OFMAP Writes"]), rel=1e-3), where
        near_dram_ofmap += int(p.dram_ofmap_writes) != int(a["DRAM OFMAP Writes"])
    assert near_dram_ofmap <= 12


def test_systolic__reads_scalesim_files_and_runs_from_the_cli(tmp_path):
    cfg = tmp_path / "scale.cfg"
    cfg.write_text("[general]\nrun_name = t\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 16\n"
                   "IfmapSramSzkB: 64\nFilterSramSzkB: 64\nOfmapSramSzkB: 64\nDataflow : ws\nBandwidth : 10\n"
                   "[run_presets]\nInterfaceBandwidth: CALC\n")
    conv = tmp_path / "conv.csv"
    conv.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                    "Conv1, 224, 224, 7, 7, 3, 64, 2,\nConv2, 56, 56, 3, 3, 64, 64, 1,\n")
    gemm = tmp_path / "gemm.csv"
    gemm.write_text("Layer, M, N, K,\nproj, 64, 32, 48,\n")
    assert read_config(cfg).cols == 16 and [layer.m for layer in read_topology(conv)] == [110 * 110, 54 * 54]  # SCALE-Sim: ceil((H - F + s) / s)
    r = CliRunner().invoke(main, ["systolic", "-c", str(cfg), "-t", str(conv), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [x["layer"] for x in out["layers"]] == ["Conv1", "Conv2"] and out["layers"][0]["compute_cycles"] > 0
    r = CliRunner().invoke(main, ["systolic", "-c", str(cfg), "-t", str(gemm), "--dataflow", "os,is"])
    assert r.exit_code == 0 and "proj" in r.output and "os" in r.output


def test_systolic__bad_inputs_are_named(tmp_path):
    with pytest.raises(fastsim.ConfigError, match="Dataflow"):
        MeshConfig(8, 8, "xs").validate()
    bad = tmp_path / "bad.csv"
    bad.write_text("Layer, M, N, K,\nx, 4, two, 8,\n")
    with pytest.raises(fastsim.ConfigError, match="line 2"):
        read_topology(bad)


def test_bridge__core_mesh_dataflow_changes_end_to_end_results():
    from fastsim.arch import SYSTOLIC16
    from fastsim.mapping import Mapping
    from fastsim.workloads.gemm import Gemm, gemm_design

    g = Gemm(512, 512, 512, "bf16")
    mp = Mapping("os", "2d", (32, 64, 64), 8, 4)  # m != n so that ws and is differ
    cycles = {}
    for flow in ("ws", "is", "os"):
        arch = SYSTOLIC16.replace(core_mesh_dataflow=flow)
        ds = fastsim.simulate(gemm_design(g, arch, mp))
        cycles[flow] = int(ds.total_cycles[0])
        busy = int(ds.core_cycles.sel(core_state="busy").values[0, 0])
        tile = simulate_mesh([Layer.gemm("t", 32, 64, 64)], [MeshConfig(16, 16, flow)])
        calls = (512 // (4 * 32)) * (512 // (8 * 64)) * (512 // 64)
        # per call: the mesh's cycles (A and B loads of 12 kB at 128 B/cycle overlap them), then
        # the C tile (4 kB) read at 128 B/cycle and written at 64 B/cycle
        assert busy == calls * (max(int(tile.compute_cycles[0, 0]), 96) + 32 + 64)
    assert len(set(cycles.values())) == 3
    plain = fastsim.simulate(gemm_design(g, fastsim.NPU2.replace(macs_per_cycle={"bf16": 256}, datapaths={}), mp))
    assert min(cycles.values()) > int(plain.total_cycles[0])  # fill/drain and folds cost time


def test_systolic__topology_rows_of_bare_commas_are_skipped(tmp_path):
    f = tmp_path / "net.csv"
    f.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                 ",,,,,,,,\nConv1, 8, 8, 3, 3, 2, 4, 1,\n")
    assert [layer.name for layer in read_topology(f)] == ["Conv1"]


def test_systolic__cli_answers_the_same_interpreted_and_jitted(tmp_path):
    """Unlimited-bandwidth CLI runs execute the closed-form kernel as plain Python (faster start);
    both ways must print the same numbers."""
    import os
    import subprocess
    import sys

    topo = ROOT / "bench" / "scalesim" / "resnet50_first4.csv"
    cfg = ROOT / "bench" / "scalesim" / "mesh32_os.cfg"
    outputs = []
    for jit in ("0", "1"):
        env = {**os.environ, "FASTSIM_JIT": jit}
        r = subprocess.run([sys.executable, "-m", "fastsim.cli", "systolic", "-c", str(cfg), "-t", str(topo),
                            "--dataflow", "ws,is,os", "--json"], env=env, capture_output=True, text=True, check=True)
        outputs.append(json.loads(r.stdout))
    assert outputs[0] == outputs[1] and len(outputs[0]["layers"]) == 12


def test_systolic__refuses_scalesim_features_it_does_not_model(tmp_path):
    import fastsim

    cfg = tmp_path / "scale.cfg"
    cfg.write_text("[general]\nrun_name = t\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nDataflow : os\n"
                   "[sparsity]\nSparsitySupport : true\n[run_presets]\nInterfaceBandwidth: CALC\n"
                   "UseRamulatorTrace: True\n")
    with pytest.raises(fastsim.ConfigError) as e:
        read_config(cfg)
    assert "sparsity.SparsitySupport" in str(e.value) and "run_presets.UseRamulatorTrace" in str(e.value)


def test_cli__trace_is_a_per_layer_fold_timeline(tmp_path):
    """``fastsim systolic --trace`` (issue 16): one track per dataflow, layers back to back, folds
    as one summary slice each, stalls where the buffer model found them."""
    import json

    from click.testing import CliRunner

    from fastsim.cli import main

    root = Path(__file__).resolve().parents[1] / "bench" / "scalesim"
    out = tmp_path / "t.json"
    args = ["systolic", "-c", str(root / "mesh32_os_user.cfg"), "-t", str(root / "resnet50_first4.csv"),
            "--dataflow", "ws,os", "--json", "--trace", str(out)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    rows = json.loads(next(line for line in r.output.splitlines() if line.startswith("{")))["layers"]
    events = json.loads(out.read_text())["traceEvents"]
    for tid, flow in enumerate(("ws", "os")):
        layers = [e for e in events if e.get("tid") == tid and e.get("cat") == "layer"]
        mine = [row for row in rows if row["dataflow"] == flow]
        assert [e["name"] for e in layers] == [row["layer"] for row in mine]
        assert sum(e["dur"] for e in layers) == sum(row["total_cycles"] for row in mine)
        stalls = [e for e in events if e.get("tid") == tid and e.get("cat") == "stall"]
        assert sum(e["dur"] for e in stalls) == sum(row["stall_cycles"] for row in mine)
