"""SCALE-Sim's bandwidth-limited memory model: the numba kernel against the request-by-request
reference (random layers, meshes, SRAM sizes and interfaces) and against SCALE-Sim v3 itself."""
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim.errors import ConfigError
from fastsim.systolic import Layer, MeshConfig, simulate_mesh
from fastsim.systolic.memory import memory_metrics
from scalesim_memory_reference import simulate as reference
from test_systolic import golden_layers

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_FILES = ["scalesim_v3.json", "scalesim_v3_bandwidth.json"]


@st.composite
def layers(draw):
    if draw(st.booleans()):
        m, n, k = draw(st.integers(1, 24)), draw(st.integers(1, 24)), draw(st.integers(1, 24))
        return Layer.gemm("g", m, n, k)
    fh, fw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    ih, iw = draw(st.integers(fh, 9)), draw(st.integers(fw, 9))
    return Layer.conv("c", ih, iw, fh, fw, draw(st.integers(1, 4)), draw(st.integers(1, 12)),
                      draw(st.integers(1, 3)), draw(st.integers(1, 3)))


@settings(max_examples=200, deadline=None)
@given(layers(), st.integers(1, 9), st.integers(1, 9), st.sampled_from(["ws", "is", "os"]),
       st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 12), st.integers(1, 12),
       st.integers(1, 12), st.sampled_from([1, 4, 16, 64]), st.booleans())
def test_memory_kernel__equals_the_request_reference(layer, r, c, df, ikb, fkb, okb, ibw, fbw, obw, word_bytes,
                                                     limited):
    # word_bytes shrinks the SRAMs to 1024/word_bytes words per kB, so small buffers overflow often;
    # unlimited (CALC) runs SCALE-Sim's estimate buffers, which need at least 100 words
    if not limited:
        word_bytes = min(word_bytes, 4)
        ibw = fbw = obw = None
    cfg = MeshConfig(r, c, df, ikb, fkb, okb, obw, ibw or 10, fbw or 10, word_bytes=word_bytes)
    got = memory_metrics([layer], [cfg], dram_detail=True)
    words = 1024 // word_bytes
    geometry = dict(zip(["ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "num_filters", "stride",
                         "stride_w"], layer.geometry))
    want = reference(geometry, r, c, df, ikb * words, fkb * words, okb * words, ibw, fbw, obw)
    for key, ref_key in [("total_cycles", "total_cycles"), ("stall_cycles", "stall_cycles"),
                         ("dram_ifmap_reads", "dram_ifmap_reads"), ("dram_filter_reads", "dram_filter_reads"),
                         ("dram_ofmap_writes", "dram_ofmap_writes"),
                         ("dram_ifmap_start_cycle", "dram_ifmap_start"), ("dram_ifmap_stop_cycle", "dram_ifmap_stop"),
                         ("dram_filter_start_cycle", "dram_filter_start"), ("dram_filter_stop_cycle", "dram_filter_stop"),
                         ("peak_dram_ifmap_words_per_cycle", "peak_ifmap"),
                         ("peak_dram_filter_words_per_cycle", "peak_filter")]:
        assert int(got[key][0, 0]) == want[ref_key], key
    if want["dram_ofmap_start"] is not None:
        assert int(got["dram_ofmap_start_cycle"][0, 0]) == want["dram_ofmap_start"]
        assert int(got["dram_ofmap_stop_cycle"][0, 0]) == want["dram_ofmap_stop"]
    assert int(got["stall_cycles_by_operand"][0, 0].sum()) == want["stall_cycles"]


def _golden_user_runs():
    runs = []
    for name in GOLDEN_FILES:
        runs += [r for r in json.loads((ROOT / "tests" / "golden" / name).read_text())["results"] if r["mode"] == "USER"]
    return runs


def _config(run):
    return MeshConfig(run["rows"], run["cols"], run["dataflow"], run["sram_kb"], run.get("filter_sram_kb", run["sram_kb"]),
                      run.get("ofmap_sram_kb", run["sram_kb"]), run["bandwidth"], run.get("read_bandwidth", 10),
                      run.get("read_bandwidth", 10))


def test_memory_model__equals_scalesim_v3_on_every_bandwidth_limited_golden_run():
    runs = _golden_user_runs()
    configs = sorted({_config(r) for r in runs}, key=repr)
    layers = golden_layers()
    ds = simulate_mesh(layers, configs)
    index = {layer.name: i for i, layer in enumerate(layers)}
    stalled = 0
    for run in runs:
        p = ds.isel(layer=index[run["layer"]], config=configs.index(_config(run)))
        c, a = run["compute"], run["access"]
        where = (run["layer"], _config(run))
        assert int(p.total_cycles) == int(c["Total Cycles"]), where
        assert int(p.stall_cycles) == int(c["Stall Cycles"]), where
        assert int(p.total_cycles_incl_prefetch) == int(c["Total Cycles (incl. prefetch)"]), where
        assert float(p.overall_utilization) == pytest.approx(float(c["Overall Util %"]), rel=1e-9), where
        for ours, theirs in [("dram_ifmap_reads", "DRAM IFMAP Reads"), ("dram_filter_reads", "DRAM Filter Reads"),
                             ("dram_ofmap_writes", "DRAM OFMAP Writes"),
                             ("dram_ifmap_start_cycle", "DRAM IFMAP Start Cycle"),
                             ("dram_ifmap_stop_cycle", "DRAM IFMAP Stop Cycle"),
                             ("dram_filter_start_cycle", "DRAM Filter Start Cycle"),
                             ("dram_filter_stop_cycle", "DRAM Filter Stop Cycle"),
                             ("dram_ofmap_start_cycle", "DRAM OFMAP Start Cycle"),
                             ("dram_ofmap_stop_cycle", "DRAM OFMAP Stop Cycle")]:
            assert int(p[ours]) == float(a[theirs]), (where, ours)
        stalled += int(c["Stall Cycles"]) > 0
    assert len(runs) == 540 and stalled >= 300  # the second set is sized so that most runs stall


def test_estimate_buffers__equal_scalesim_v3_on_every_unlimited_golden_run():
    """CALC mode with dram_detail: SCALE-Sim's estimate buffers and ofmap drains, request by request."""
    golden = json.loads((ROOT / "tests" / "golden" / "scalesim_v3.json").read_text())["results"]
    runs = [r for r in golden if r["mode"] == "CALC"]
    keys = sorted({(r["rows"], r["cols"], r["dataflow"]) for r in runs})
    layers = golden_layers()
    ds = simulate_mesh(layers, [MeshConfig(*key) for key in keys], dram_detail=True)
    index = {layer.name: i for i, layer in enumerate(layers)}
    for run in runs:
        p = ds.isel(layer=index[run["layer"]], config=keys.index((run["rows"], run["cols"], run["dataflow"])))
        c, a = run["compute"], run["access"]
        where = (run["layer"], run["rows"], run["cols"], run["dataflow"])
        assert int(p.total_cycles) == int(c["Total Cycles"]) and int(p.stall_cycles) == 0, where
        assert int(p.total_cycles_incl_prefetch) == int(c["Total Cycles (incl. prefetch)"]), where
        for op, theirs in [("ifmap", "IFMAP"), ("filter", "Filter")]:
            assert int(p[f"dram_{op}_reads"]) == int(a[f"DRAM {theirs} Reads"]), where
        assert int(p.dram_ofmap_writes) == int(a["DRAM OFMAP Writes"]), where  # exact here, not within 0.1 %
        for op, theirs in [("ifmap", "IFMAP"), ("filter", "Filter"), ("ofmap", "OFMAP")]:
            start, stop = float(a[f"DRAM {theirs} Start Cycle"]), float(a[f"DRAM {theirs} Stop Cycle"])
            assert (int(p[f"dram_{op}_start_cycle"]), int(p[f"dram_{op}_stop_cycle"])) == (start, stop), where
            moved = int(p[f"dram_{op}_{'writes' if op == 'ofmap' else 'reads'}"])
            assert float(p[f"avg_dram_{op}_words_per_cycle"]) == pytest.approx(moved / (stop - start + 1)), where
        assert float(p.peak_dram_ofmap_words_per_cycle) == run["cols"]
        assert float(p.peak_dram_ifmap_words_per_cycle) >= float(p.avg_dram_ifmap_words_per_cycle) * 0.99


def test_memory_model__names_the_operand_that_stalls():
    # a tiny filter SRAM with a 1-word interface starves a weight-heavy GEMM
    ds = simulate_mesh([Layer.gemm("fc", 4, 64, 64)], [MeshConfig(8, 8, "os", 64, 1, 64, 8, 10, 1)])
    p = ds.isel(layer=0, config=0)
    assert int(p.stall_cycles) > 0 and p.stall_operand.item() == "filter"
    assert int(p.stall_cycles_by_operand.sel(operand="filter")) == int(p.stall_cycles)
    unlimited = simulate_mesh([Layer.gemm("fc", 4, 64, 64)], [MeshConfig(8, 8, "os")]).isel(layer=0, config=0)
    assert int(unlimited.stall_cycles) == 0 and int(p.total_cycles) > int(unlimited.total_cycles)


@pytest.mark.parametrize("field,value", [("bandwidth_words_per_cycle", 0), ("bandwidth_words_per_cycle", 2.5),
                                         ("ifmap_read_words_per_cycle", 0), ("filter_sram_kb", 0)])
def test_memory_model__rejects_bad_interfaces_naming_the_scalesim_field(field, value):
    kwargs = {"bandwidth_words_per_cycle": 4, field: value}
    with pytest.raises(ConfigError) as e:
        MeshConfig(8, 8, "os", **kwargs).validate()
    assert {"bandwidth_words_per_cycle": "Bandwidth", "ifmap_read_words_per_cycle": "IfmapSRAMBankBandwidth",
            "filter_sram_kb": "filtersramszkB"}[field] in str(e.value)


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_traces__cli_writes_sram_and_dram_traces_byte_identical_to_scalesim(tmp_path, dataflow):
    import tarfile

    from click.testing import CliRunner

    from fastsim.cli import main

    golden = ROOT / "tests" / "golden" / "scalesim_traces"
    cfg = tmp_path / "scale.cfg"
    cfg.write_text((golden / "user_1kb.cfg").read_text().replace("Dataflow : os", f"Dataflow : {dataflow}"))
    topo = tmp_path / "conv.csv"
    topo.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                    "Strides,\nc4, 13, 11, 3, 3, 8, 7, 2,\n")
    r = CliRunner().invoke(main, ["systolic", "-c", str(cfg), "-t", str(topo), "--traces", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    with tarfile.open(golden / f"c4_{dataflow}_user.tar.gz") as tar:
        assert len(tar.getmembers()) == 6
        for member in tar.getmembers():
            ours = (tmp_path / "out" / "r_os_USER" / "layer0" / member.name).read_bytes()
            assert ours == tar.extractfile(member).read(), member.name


@settings(max_examples=60, deadline=None)
@given(layers(), st.integers(1, 6), st.integers(1, 6), st.sampled_from(["ws", "is", "os"]))
def test_demand_matrices__vectorised_equal_the_reference_loops(layer, r, c, df):
    import numpy as np

    from fastsim.systolic.demand import demand_matrices, prefetch_orders
    from scalesim_memory_reference import matrices, operand_matrices

    geometry = dict(zip(["ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "num_filters", "stride",
                         "stride_w"], layer.geometry))
    want = matrices(*operand_matrices(**geometry), r, c, df)
    got = prefetch_orders(layer, r, c, df) + demand_matrices(layer, r, c, df)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


def test_memory_model__occupancy_timeline_includes_the_stalls():
    import numpy as np

    layer = Layer.gemm("fc", 40, 64, 64)
    starved, free = MeshConfig(8, 8, "os", 64, 1, 64, 8, 10, 1), MeshConfig(8, 8, "os", 64, 64, 64, 8)
    ds = simulate_mesh([layer], [starved, free, MeshConfig(8, 8, "os")]).isel(layer=0)
    s, f, unlimited = ds.isel(config=0), ds.isel(config=1), ds.isel(config=2)
    assert int(s.stall_cycles) > int(s.compute_cycles) and int(f.stall_cycles) == 0
    # busy PE-cycles are conserved: mean occupancy x timeline = MACs / PEs
    end = int(s.compute_cycles) + 1 + int(s.stall_cycles)
    assert float(s.occupancy.mean()) * end == pytest.approx(40 * 64 * 64 / 64, rel=0.02)
    assert float(s.occupancy.mean()) < 0.5 * float(f.occupancy.mean())
    # without stalls the timeline is the closed form's
    assert np.allclose(f.occupancy, unlimited.occupancy)


def test_traces__use_the_configs_address_offsets(tmp_path):
    import numpy as np

    from fastsim.systolic.traces import write_traces

    cfg = MeshConfig(4, 4, "os", 1, 1, 1, 2, 2, 2, address_offsets=(100, 5000, 90000))
    (layer_dir,) = write_traces([Layer.gemm("g", 6, 5, 7)], cfg, tmp_path)
    for name, lo, hi in [("IFMAP", 100, 100 + 6 * 7), ("FILTER", 5000, 5000 + 7 * 5), ("OFMAP", 90000, 90000 + 6 * 5)]:
        for kind in ("SRAM", "DRAM"):
            addrs = np.loadtxt(layer_dir / f"{name}_{kind}_TRACE.csv", delimiter=",", ndmin=2)[:, 1:]
            real = addrs[addrs != -1]
            assert real.min() == lo and real.max() == hi - 1, (name, kind)


def test_memory_model__threads_give_identical_results():
    import numpy as np

    layers = golden_layers()
    configs = [MeshConfig(8, 8, df, 1, 1, 1, 4, 4, 4) for df in ("ws", "is", "os")] + [MeshConfig(16, 8, "os")]
    one = memory_metrics(layers, configs, dram_detail=True, threads=1)
    three = memory_metrics(layers, configs, dram_detail=True, threads=3)
    for name in one:
        assert np.array_equal(one[name], three[name], equal_nan=True), name
