"""Three pins an as-built GEMM needs to say what mlir-air's herds do: the ``2dt`` split (columns
split M, core rows N: 2d's transpose), a K panel (the L1 K tiles a mem-tile buffer stages) and a
single-buffered C tile. Their closed forms, their designs and their refusals."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

import fastsim
from fastsim import NPU2
from fastsim.cli import main
from fastsim.lower import run_bytes
from fastsim.mapping.design import matmul_design
from fastsim.mapping.plan import check, panel_tiles
from fastsim.mapping.search import Pins, search
from fastsim.mapping.space import SEARCHED_SPLITS, SPLITS, Mapping, Matmul, split_parts
from fastsim.cli.common import GEMM_SPLITS
from fastsim.report import utilizations
from fastsim.workloads.cast_launch import cast_design
from fastsim.workloads.gemm import Gemm, run_gemm


def _plan(op, mp, arch=NPU2):
    return check(op, mp, arch)[1]


def test_split_2dt__is_2d_of_the_transposed_problem_in_ddr_bytes():
    """C^T = B^T A^T: the 2dt split of (M, K, N) reads what 2d reads of (N, K, M) with the tile
    transposed; every operand is re-read as many times as the other orientation's C blocks say."""
    for m, k, n in ((512, 256, 2048), (768, 512, 256), (300, 200, 1000)):
        op, op_t = Matmul(m, k, n, "bf16"), Matmul(n, k, m, "bf16")
        mine = _plan(op, Mapping("os", "2dt", (32, 32, 64), 8, 4))
        theirs = _plan(op_t, Mapping("os", "2d", (64, 32, 32), 8, 4))
        assert float(mine["ddr_read_bytes"]) == float(theirs["ddr_read_bytes"])
        assert float(mine["ddr_write_bytes"]) == float(theirs["ddr_write_bytes"])


def test_split_2dt__a_square_block_reads_each_operand_as_often_as_mlir_airs_herd():
    """8 columns x 4 rows of 64x128 C tiles: a 512 x 512 C block, so at 2048^3 A and B are each
    read 4 times (67.1 MB), where 2d's 256 x 1024 block reads A twice and B 8 times (83.9 MB)."""
    op = Matmul(2048, 2048, 2048, "bf16")
    per_operand = 2048 * 2048 * 2
    assert float(_plan(op, Mapping("os", "2dt", (64, 32, 128), 8, 4))["ddr_read_bytes"]) == 8 * per_operand
    assert float(_plan(op, Mapping("os", "2d", (64, 32, 128), 8, 4))["ddr_read_bytes"]) == 10 * per_operand
    assert split_parts("2dt", 8, 4) == (8, 4) and split_parts("2d", 8, 4) == (4, 8)


def test_splits__the_cli_offers_every_split_and_the_search_leaves_2dt_to_pins():
    assert GEMM_SPLITS == SPLITS and "2dt" in SPLITS and "2dt" not in SEARCHED_SPLITS
    found = search(Matmul(256, 256, 512, "bf16"), NPU2, Pins(split="2dt"), budget=2)
    assert found.best.split == "2dt"


def test_panel_tiles__the_largest_divisor_of_the_k_tiles_at_most_the_panel():
    kt = np.array([12, 7, 16, 1, 80])
    assert panel_tiles(kt, 5).tolist() == [4, 1, 4, 1, 5]
    assert panel_tiles(kt, 1).tolist() == [1, 1, 1, 1, 1]
    assert panel_tiles(kt, 16).tolist() == [12, 7, 16, 1, 16]


def test_k_panel__stages_panels_in_the_mem_tile_and_reads_a_in_longer_runs():
    """A K panel of 4 L1 tiles: mem-tile buffers four times an L1 tile, four times fewer mem-tile
    sends of A, and A's row-major DDR runs as long as the panel's K extent (4 x 32 x 2 B)."""
    op = Matmul(256, 1024, 512, "bf16", row_major_ddr=True)
    one, four = (_plan(op, Mapping("os", "2dt", (64, 32, 128), 4, 4, k_panel=p)) for p in (1, 4))
    assert int(four["mem_unit_a"]) == 4 * int(one["mem_unit_a"]) == 4 * int(one["l1_a"])
    assert int(four["mem_unit_b"]) == 4 * int(one["l1_b"])
    designs = [matmul_design(op, Mapping("os", "2dt", (64, 32, 128), 4, 4, k_panel=p), NPU2) for p in (1, 4)]
    a_bds = [[bd for bd in d.bds if bd.name.startswith("A") and bd.name.endswith("_ddr")] for d in designs]
    assert [{run_bytes(bd) for bd in bds} for bds in a_bds] == [{32 * 2}, {4 * 32 * 2}]
    cycles = [fastsim.simulate(d).total_cycles.values[0] for d in designs]
    assert cycles[1] < cycles[0]  # fewer, longer DDR runs and fewer BDs


def test_k_panel__only_in_the_os_dataflow_and_within_range():
    with pytest.raises(fastsim.ConfigError, match="k_panel"):
        search(Matmul(64, 256, 64, "bf16"), NPU2, Pins(k_panel=4))  # dataflow not pinned to os
    with pytest.raises(fastsim.ConfigError, match="k_panel"):
        search(Matmul(64, 256, 64, "bf16"), NPU2, Pins(k_panel=0, dataflow=("os",)))
    with pytest.raises(fastsim.ConfigError, match="k_panel"):
        check(Matmul(64, 256, 64, "bf16"), Mapping("ws", "2d", (32, 32, 32), 1, 1, k_panel=2), NPU2)


def test_c_buffers__one_c_buffer_fits_where_two_do_not_and_is_not_faster_here():
    """64 x 128 f32 C tiles: two do not fit a core's 64 KB beside A and B's ping-pong; one does (as
    mlir-air's GEMM_bf16_in_fp32_out keeps it). Where both fit (one design here), one is not faster."""
    f32 = Matmul(512, 512, 512, "bf16", c_bytes=4.0)
    with pytest.raises(fastsim.ConfigError, match="core memory"):
        check(f32, Mapping("os", "2dt", (64, 32, 128), 4, 4), NPU2)
    assert int(_plan(f32, Mapping("os", "2dt", (64, 32, 128), 4, 4, c_buffers=1))["l1_bytes"]) <= 65536
    op = Matmul(512, 256, 512, "bf16")
    cycles = [fastsim.simulate(matmul_design(op, Mapping("os", "2d", (32, 32, 64), 4, 4, c_buffers=c), NPU2))
              .total_cycles.values[0] for c in (2, 1)]
    assert cycles[1] >= cycles[0]


def test_gemm__as_built_keys_and_options_reach_the_mapping(tmp_path):
    f = tmp_path / "built.toml"
    f.write_text('[gemm]\ntile = [64, 32, 128]\ncols = 4\nrows = 4\ndataflow = "os"\nsplit = "2dt"\nl2 = ""\n'
                 'k_panel = 4\nc_buffers = 1\nout_dtype = "f32"\n')
    r = CliRunner().invoke(main, ["run", "--arch", "npu2", "--json", "gemm", "--m", "512", "--k", "512", "--n", "512",
                                  "--overlay", str(f)])
    assert r.exit_code == 0, r.output
    assert "os/2dt 64x32x128 4c4r" in r.output and "C single-buffered panel:4k" in r.output
    r = CliRunner().invoke(main, ["run", "--arch", "npu2", "gemm", "--m", "512", "--k", "512", "--n", "512",
                                  "--split", "2dt", "--k-panel", "2", "--dataflow", "os", "--search-budget", "2"])
    assert r.exit_code == 0, r.output
    assert "os/2dt" in r.output and "panel:2k" in r.output
    summary, _ = run_gemm(Gemm(512, 512, 512, split="2dt", dataflow="os", k_panel=2, budget=2), NPU2)
    assert summary["mapping"]["split"] == "2dt" and summary["mapping"]["k_panel"] == 2


def _cast_gemm(**kw):
    return Gemm(512, 256, 512, tile_m=64, tile_k=32, tile_n=128, cols=4, rows=4, dataflow="os", split="2dt", l2="",
                out_dtype="f32", c_buffers=1, budget=1, **kw)


def test_cast_launch__adds_its_launch_to_the_gemms_in_one_dispatch():
    """mlir-air's fused-cast: the GEMM launch writes an f32 scratch, a second launch reads it and
    writes bf16. Cycles add, the dispatch is paid once, the cast's bytes join the GEMM's."""
    alone, _ = run_gemm(_cast_gemm(), NPU2)
    both, _ = run_gemm(_cast_gemm(cast_launch=True), NPU2)
    gemm_cycles, cast_cycles = (x["cycles"] for x in both["launches"])
    assert gemm_cycles == alone["total_cycles"] and cast_cycles > 0
    assert both["total_cycles"] == gemm_cycles + cast_cycles
    assert both["dispatch_overhead_s"] == alone["dispatch_overhead_s"]
    assert both["seconds"] == pytest.approx(alone["seconds"] + cast_cycles / NPU2.clock_hz)
    scratch = 512 * 512 * 4
    assert both["bytes_by_level"]["ddr_read"] == pytest.approx(alone["bytes_by_level"]["ddr_read"] + scratch)
    assert both["bytes_by_level"]["ddr_write"] == pytest.approx(alone["bytes_by_level"]["ddr_write"] + scratch / 2)
    # each resource's share of the dispatch: its share of each launch, weighted by the launch's time
    cast_ds = fastsim.simulate(cast_design(512, 512, NPU2, 4))
    cast_util = utilizations(cast_ds, 0, NPU2, 0.0)
    gemm_util = {k: v * alone["seconds"] / (alone["kernel_seconds"]) for k, v in alone["utilization"].items()}
    for k in ("compute", "ddr", "dma_stream"):
        want = (gemm_util[k] * gemm_cycles + cast_util[k] * cast_cycles) / NPU2.clock_hz / both["seconds"]
        assert both["utilization"][k] == pytest.approx(want, rel=1e-9), k


def test_cast_launch__refused_where_it_casts_nothing_it_models():
    with pytest.raises(fastsim.ConfigError, match="cast_launch"):
        run_gemm(Gemm(256, 256, 256, out_dtype="bf16", cast_launch=True, budget=1), NPU2)  # no f32 scratch
    with pytest.raises(fastsim.ConfigError, match="cast_launch"):
        run_gemm(Gemm(256, 256, 256, dtype="int8", out_dtype="f32", cast_launch=True, budget=1), NPU2)
    with pytest.raises(fastsim.ConfigError, match="trace"):
        run_gemm(_cast_gemm(cast_launch=True), NPU2, trace=True)
    with pytest.raises(fastsim.ConfigError, match="cast_launch"):
        Gemm(256, 256, 256, cast_launch="yes").graph()


def test_cast_launch__map_and_export_refuse_it_and_the_report_names_defaults(tmp_path):
    f = tmp_path / "fused.toml"
    f.write_text('[gemm]\ntile = [64, 32, 128]\ncols = 4\nrows = 4\ndataflow = "os"\nout_dtype = "f32"\n'
                 'c_buffers = 1\ncast_launch = true\n')
    for cmd in (["map", "gemm"], ["export", "gemm", "--out", str(tmp_path / "x.mlir")]):
        r = CliRunner().invoke(main, [*cmd, "--m", "256", "--k", "256", "--n", "256", "--overlay", str(f)])
        assert r.exit_code != 0 and "cast_launch" in r.output, (cmd, r.output)
    r = CliRunner().invoke(main, ["run", "--arch", "npu2", "--json", "gemm", "--m", "256", "--k", "256", "--n", "256",
                                  "--overlay", str(f)])
    built = json.loads(r.output)["as_built"]
    assert "cast_launch" in built["pinned"] and "k_panel 1" in built["default"]


def test_k_panel__refused_with_both_operands_resident():
    with pytest.raises(fastsim.ConfigError, match="k_panel"):
        check(Matmul(256, 512, 256, "bf16"), Mapping("os", "2d", (32, 32, 32), 2, 2, l2="ab", k_panel=4), NPU2)
