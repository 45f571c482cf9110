"""Run lists: a runtime sequence that configures other devices of the file (``aiex.configure``)
and runs their sequences (``aiex.run``), one simulation per configure block, cycles summed."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fastsim.errors import ConfigError
from fastsim.mlir import MlirError, read_design, read_text, simulate_design, simulate_run_list
from fastsim.mlir.runlist import run_list_summary

HERE = Path(__file__).parent / "mlir"
COSTS = {"scale": 300}


def alone(device: str) -> int:
    """Cycles of one device of run_list.mlir simulated on its own (its sequence once)."""
    return int(simulate_design(read_design(HERE / "run_list.mlir", COSTS, device=device)).total_cycles[0])


def test_run_list__is_the_files_default_and_reads_each_configuration():
    info = read_design(HERE / "run_list.mlir", COSTS)
    assert [(s.device, s.sequences) for s in info.run_list] == [("twice", ("stream", "stream")),
                                                                 ("once", ("sequence",))]
    twice, once = (s.info.design for s in info.run_list)
    assert len(twice.host) == 2 * len(read_design(HERE / "run_list.mlir", COSTS, device="twice").design.host)
    assert len(once.host) == 3 and not info.design.host and not info.design.cores


def test_run_list__runs_of_one_block_share_state_and_blocks_sum():
    result = simulate_run_list(read_design(HERE / "run_list.mlir", COSTS))
    (_, twice), (_, once) = result.steps
    # one run leaves @twice's core waiting for the 4 objects the second run brings
    assert simulate_design(read_design(HERE / "run_list.mlir", COSTS, device="twice")).attrs["stranded_cores"] == 1
    assert twice.attrs["stranded_cores"] == 0
    assert alone("twice") < int(twice.total_cycles[0]) < 2 * alone("twice")
    assert int(once.total_cycles[0]) == alone("once")
    assert result.total_cycles == int(twice.total_cycles[0]) + int(once.total_cycles[0])


def test_run_list__reconfiguration_time_is_added_per_switch():
    info = read_design(HERE / "run_list.mlir", COSTS)
    base = simulate_run_list(info).total_cycles
    assert simulate_run_list(info, reconfigure_cycles=500).total_cycles == base + 500
    with pytest.raises(ConfigError, match="reconfigure_cycles"):
        simulate_run_list(info, reconfigure_cycles=-1)
    with pytest.raises(ConfigError, match="simulate_run_list"):
        simulate_design(info)


def test_run_list__a_run_of_a_missing_sequence_is_named():
    text = (HERE / "run_list.mlir").read_text().replace("aiex.run @sequence(%host)", "aiex.run @nothing(%host)")
    with pytest.raises(MlirError, match="no runtime sequence @nothing"):
        read_text(text, COSTS)


def test_run_list__other_ops_inside_a_configure_block_are_named():
    run = "        aiex.run @sequence(%host) : (memref<2048xi32>)\n"
    text = (HERE / "run_list.mlir").read_text().replace(
        run, run + "        aiex.npu.write32 {address = 0 : ui32, value = 1 : ui32}\n")
    with pytest.raises(MlirError, match="aiex.npu.write32") as e:
        read_text(text, COSTS)
    assert [name for name, _ in e.value.stops] == ["aiex.npu.write32"]


def test_cli__run_design_prints_the_run_list_and_its_total(tmp_path):
    from fastsim.cli import main

    costs = tmp_path / "costs.toml"
    costs.write_text("[kernels]\nscale = 300\n")
    path = str(HERE / "run_list.mlir")
    base = simulate_run_list(read_design(HERE / "run_list.mlir", COSTS)).total_cycles
    out = CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs), "--reconfigure-cycles", "100"])
    assert out.exit_code == 0, out.output
    assert "aiex.configure @twice: 2 run(s) of @stream" in out.output
    assert f"total cycles    {base + 100:,}" in out.output
    js = json.loads(CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs), "--json"]).output)
    assert js["total_cycles"] == base and [s["device"] for s in js["run_list"]] == ["twice", "once"]
    ablate = CliRunner().invoke(main, ["run", "design", path, "--kernels", str(costs), "--ablate"])
    assert ablate.exit_code == 2 and "--device twice, once" in ablate.output


# -- the SSA form (%c = aiex.configure @dev; aiex.run %c -> @seq(...)) ----------------------------------------
SSA = HERE / "run_list_ssa.mlir"


def ssa_error(old: str, new: str) -> MlirError:
    """The MlirError run_list_ssa.mlir gives with ``old`` replaced by ``new``."""
    text = SSA.read_text()
    assert old in text
    with pytest.raises(MlirError) as e:
        read_text(text.replace(old, new), COSTS)
    return e.value


def line_of(text: str, needle: str) -> int:
    return next(k for k, line in enumerate(text.splitlines(), 1) if needle in line)


def test_run_list_ssa__reads_to_the_same_steps_cycles_and_results_as_the_region_form():
    regions, ssa = read_design(HERE / "run_list.mlir", COSTS), read_design(SSA, COSTS)
    assert [(s.device, s.sequences, len(s.info.design.host)) for s in ssa.run_list] == \
           [(s.device, s.sequences, len(s.info.design.host)) for s in regions.run_list]
    assert [s.line for s in ssa.run_list] == [line_of(SSA.read_text(), f"= aiex.configure @{d}")
                                              for d in ("twice", "once")]
    a, b = (run_list_summary(simulate_run_list(info, reconfigure_cycles=7), info) for info in (regions, ssa))
    for step in a["run_list"] + b["run_list"]:
        step["design"].pop("name")  # the file's name
    assert a["run_list"] == b["run_list"] and a["total_cycles"] == b["total_cycles"]
    # the patch_marker + load_pdi pair is the second configure's load: no host step of its own
    assert {"aiex.npu.patch_marker", "aiex.npu.load_pdi"} <= {name for name, _ in ssa.untimed}


def test_run_list_ssa__a_run_of_an_unknown_value_is_named():
    """An undefined value is refused before the run list is read, as aie-opt refuses it."""
    e = ssa_error("aiex.run %once -> @sequence", "aiex.run %nothing -> @sequence")
    assert "use of undeclared SSA value %nothing" in str(e)
    assert e.stops == [("aiex.run", line_of(SSA.read_text(), "aiex.run %once"))]


def test_run_list_ssa__a_run_of_a_value_that_is_no_configuration_is_named():
    e = ssa_error("aiex.run %once -> @sequence", "aiex.run %host -> @sequence")
    assert "%host is no %c = aiex.configure" in str(e)
    # and the configuration it leaves without a run
    assert e.stops == [("aiex.run", line_of(SSA.read_text(), "aiex.run %once")),
                       ("aiex.configure", line_of(SSA.read_text(), "%once = aiex.configure"))]


def test_run_list_ssa__a_run_of_a_replaced_configuration_is_refused():
    # @once is loaded after @twice: running @twice's sequence now would need @twice loaded again
    run = "      aiex.run %once -> @sequence(%host) : (memref<2048xi32>)\n"
    e = ssa_error(run, run + "      aiex.run %twice -> @stream(%lo) : (memref<1024xi32>)\n")
    configure_once = line_of(SSA.read_text(), "%once = aiex.configure")
    assert f"was replaced by aiex.configure at line {configure_once}" in str(e)
    assert e.stops == [("aiex.run", configure_once + 2)]


def test_run_list_ssa__a_load_pdi_between_runs_replaces_the_configuration():
    # a load_pdi that loads no named device, anywhere but right before an aiex.configure, is refused,
    # and so is the run after it
    run = "      aiex.run %twice -> @stream(%lo) : (memref<1024xi32>)\n"
    e = ssa_error(run, run + "      aiex.npu.load_pdi {id = 1 : ui16, size = 1 : ui32, address = 2 : ui64}\n")
    assert [name for name, _ in e.stops] == ["aiex.npu.load_pdi", "aiex.run"]
    assert "was replaced by aiex.npu.load_pdi" in str(e)


def test_run_list_ssa__a_configuration_without_runs_or_with_parameters_is_named():
    e = ssa_error("      aiex.run %once -> @sequence(%host) : (memref<2048xi32>)\n", "")
    assert "without aiex.run" in str(e) and e.stops == [("aiex.configure", line_of(SSA.read_text(), "%once ="))]
    e = ssa_error("%once = aiex.configure @once", "%once = aiex.configure @once(1) : (ui32)")
    assert "no parameters" in str(e) and [name for name, _ in e.stops] == ["aiex.configure", "aiex.run"]


def test_run_list__a_configurations_design_error_names_its_configure():
    fifo = "aie.objectfifo @in(%shim, {%mem}, 2 : i32) : !aie.objectfifo<memref<512xi32>>"
    # 63 elements of 32 KiB: more than the mem tile holds (an error of the design, not of its text)
    text = SSA.read_text().replace(fifo, fifo.replace("2 : i32", "63 : i32").replace("512xi32", "8192xi32"))
    with pytest.raises(ConfigError, match=r"run list configuration 2 \(aiex.configure @once, line \d+\)"):
        simulate_run_list(read_text(text, COSTS))
