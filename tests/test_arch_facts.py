"""Every hardware constant of the presets, with its public source (issue 51.4).

``FACTS`` is the audit table: one row per preset value, its source as a string (document and
file/section), and the test asserts the preset holds it. A field that no source states is listed
in ``NOT_FACTS`` with why ("assumption: ..." or "not a hardware fact: ..."); a new field of
``Arch`` or ``TileKind`` in neither fails ``test_facts__every_field_is_sourced_or_marked``.
docs/hardware.md prints the same table for users.
"""
from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim.arch import (GENERATIONS, NPU1, NPU2, PARTS, POWER_MODES, PRESETS, SYSTOLIC16, Arch, TileKind,
                          from_dict, load, part)
from fastsim.errors import ConfigError

TM = "mlir-aie include/aie/Dialect/AIE/IR/AIETargetModel.h"
TMC = "mlir-aie lib/Dialect/AIE/IR/AIETargetModel.cpp"
ML = "aie-rt driver/src/global/xaiemlgbl_params.h"
DRV = "xdna-driver src/driver/amdxdna"

# (preset, field (tile fields as "kind.field"), value, source)
FACTS = [
    *[(p, "mem_rows", 1, f"{TM}: BaseNPU{n}TargetModel::getNumMemTileRows") for p, n in (("npu1", 1), ("npu2", 2))],
    *[(p, "compute_rows", 4, f"{TM}: BaseNPU{n}TargetModel rows() = 6 (1 shim, 1 mem, 4 core)")
      for p, n in (("npu1", 1), ("npu2", 2))],
    ("npu1", "columns", 4, f"{TM}: npu1 = VirtualizedNPU1TargetModel(4); {DRV}/npu1_regs.c first_col = 1"),
    ("npu2", "columns", 8, f"{TM}: NPU2TargetModel::columns() = 8"),
    ("npu1", "generation", "aie2", f"{TMC}: AIE2TargetModel::getTargetArch = AIEArch::AIE2"),
    ("npu2", "generation", "aie2p", f"{TM}: BaseNPU2TargetModel overrides getTargetArch (AIE2p)"),
    ("npu1", "clock_hz", 1.0e9, "AMD Riallto material: Phoenix NPU at 1 GHz"),
    ("npu2", "clock_hz", 1.8e9, f"{DRV}/npu4_regs.c npu4_dpm_clk_table top H-clock 1800 MHz"),
    *[(p, "compute.memory_bytes", 64 * 1024, f"{TM}: AIE2TargetModel::getLocalMemorySize 0x10000") for p in ("npu1", "npu2")],
    *[(p, "mem.memory_bytes", 512 * 1024, f"{TM}: AIE2TargetModel::getMemTileSize 0x80000") for p in ("npu1", "npu2")],
    *[(p, "shim.memory_bytes", 0, "AM020: the array interface tile has no data memory") for p in ("npu1", "npu2")],
    *[(p, f"{k}.{d}_channels", n, f"{TMC}: AIE2TargetModel getNum{s}SwitchboxConnections, DMA bundle")
      for p in ("npu1", "npu2") for k, n in (("compute", 2), ("mem", 6), ("shim", 2))
      for d, s in (("s2mm", "Dest"), ("mm2s", "Source"))],
    *[(p, f"{k}.bd_count", n, f"{TM}: AIE2TargetModel::getNumBDs (48 mem tile, else 16)")
      for p in ("npu1", "npu2") for k, n in (("compute", 16), ("mem", 48), ("shim", 16))],
    *[(p, f"{k}.lock_count", n, f"{TM}: AIE2TargetModel::getNumLocks (64 mem tile, else 16)")
      for p in ("npu1", "npu2") for k, n in (("compute", 16), ("mem", 64), ("shim", 16))],
    *[(p, f"{k}.{f}", v, f"{ML}: {reg}") for p in ("npu1", "npu2") for k, f, v, reg in (
        ("compute", "bd_dims", 3, "MEMORY_MODULE_DMA_BD0_2..3: D0, D1 wrap, D2 step"),
        ("compute", "bd_step_bits", 13, "MEMORY_MODULE_DMA_BD0_2_D0_STEPSIZE_WIDTH 13"),
        ("compute", "bd_wrap_bits", 8, "MEMORY_MODULE_DMA_BD0_3_D0_WRAP_WIDTH 8"),
        ("compute", "bd_length_bits", 14, "MEMORY_MODULE_DMA_BD0_0_BUFFER_LENGTH_WIDTH 14"),
        ("mem", "bd_dims", 4, "MEM_TILE_MODULE_DMA_BD0_2..5: D0-D2 wrap, D3 step"),
        ("mem", "bd_step_bits", 17, "MEM_TILE_MODULE_DMA_BD0_2_D0_STEPSIZE_WIDTH 17"),
        ("mem", "bd_wrap_bits", 10, "MEM_TILE_MODULE_DMA_BD0_2_D0_WRAP_WIDTH 10"),
        ("mem", "bd_length_bits", 17, "MEM_TILE_MODULE_DMA_BD0_0_BUFFER_LENGTH_WIDTH 17"),
        ("shim", "bd_dims", 3, "NOC_MODULE_DMA_BD0_3..5: D0, D1 wrap, D2 step"),
        ("shim", "bd_step_bits", 20, "NOC_MODULE_DMA_BD0_3_D0_STEPSIZE_WIDTH 20"),
        ("shim", "bd_wrap_bits", 10, "NOC_MODULE_DMA_BD0_3_D0_WRAP_WIDTH 10"),
        ("shim", "bd_length_bits", 32, "NOC_MODULE_DMA_BD0_0_BUFFER_LENGTH_WIDTH 32"))],
    *[(p, f"{k}.compression", v, "aie-rt xaiemlgbl_reginit.c: compression in compute and mem tile DMAs only")
      for p in ("npu1", "npu2") for k, v in (("compute", True), ("mem", True), ("shim", False))],
    *[(p, f, v, s) for p in ("npu1", "npu2") for f, v, s in (
        ("bd_iterations_max", 64, f"{ML}: MEMORY_MODULE_DMA_BD0_4_ITERATION_WRAP_WIDTH 6 (wrap - 1)"),
        ("lock_max_value", 63, f"{TM}: AIE2TargetModel::getMaxLockValue 0x3F"),
        ("task_queue_depth", 4, "aie-rt driver/src/global/xaiegbl_reginit.c StartQSizeMax = 4"),
        ("max_task_repeat", 256, f"{ML}: DMA_S2MM_0_START_QUEUE_REPEAT_COUNT_WIDTH 8 (count - 1)"),
        ("stream_bytes_per_cycle", 4.0, "AM020: 32-bit stream switch; Xilinx/XRT #9115: 8 B only on aie2ps"),
        ("switch_hop_latency_cycles", 4, "AM020 Stream Switch Buffering and Latency: 4-cycle latency per switch"),
        ("switch_buffer_bytes", 32, "AM020 Stream Switch Buffering and Latency: 8-deep buffering x 4 B"),
        ("stream_ports_down", 6, f"{TMC}: AIE2TargetModel::getNumDestSwitchboxConnections, mem tile North = 6"),
        ("stream_ports_up", 4, f"{TMC}: AIE2TargetModel::getNumSourceSwitchboxConnections, mem tile North = 4"))],
    *[(p, f, v, "AM020 (inferred): 2 shim DMA channels x 4 B/cycle per column, each way")
      for p, n in (("npu1", 4), ("npu2", 8)) for f, v in (("shim_read_bytes_per_cycle", (8.0,) * n),
                                                          ("shim_write_bytes_per_cycle", (8.0,) * n))],
    ("npu1", "macs_per_cycle", {"int8": 256, "int8xint4": 512, "int16": 64, "bf16": 128},
     "AM020 / UG1079 AIE-ML MAC rates per tile"),
    ("npu2", "macs_per_cycle", {"int8": 512, "bf16": 64, "bfp16": 512},
     "Ryzen AI 1.7.1 cost-model device.yaml for AIE2P (jdominick05 transcription); Xilinx/llvm-aie #710"),
    ("npu1", "core_load_bytes_per_cycle", 64, "AM020: 2 x 256-bit loads per cycle"),
    ("npu1", "core_store_bytes_per_cycle", 32, "AM020: 1 x 256-bit store per cycle"),
    ("npu2", "core_load_bytes_per_cycle", 128, "AM027 (AIE-ML v2): 128 B of loads per cycle"),
    ("npu2", "core_store_bytes_per_cycle", 64, "AM027 (AIE-ML v2): 64 B of stores per cycle"),
    ("npu2", "ddr_bytes_per_s", 2 * 64 * 2**20 / 2016e-6, "mlir-aie programming_examples/basic/memcpy, PR #2559"),
    ("npu1", "dispatch_overhead_s", 159.5e-6, "xrt empty-kernel dispatch, Phoenix/Windows"),
    ("npu2", "dispatch_overhead_s", 52e-6, "xrt-smi latency test, Strix Halo/Linux (amd/IRON #55)"),
    ("npu1", "chained_dispatch_s", 27.7e-6, "xrt-smi validate run-list latency per command, Phoenix"),
    ("npu2", "chained_dispatch_s", 8.8e-6, "xrt-smi validate run-list latency per command, Strix"),
    ("npu1", "runtime_instruction_cycles", 112, "xdna-emu docs/fidelity-gaps/host-firmware-dispatch.md (Phoenix)"),
    ("npu1", "core_program_load_s", 75e-6, "jdominick05: 40-110 us to load a core's program, Phoenix (the middle, an assumption)"),
    ("npu2", "reconfiguration_s", 106e-6, "iree-amd-aie #1187: Strix overlay switch 106-192 us"),
    ("npu2", "elf_reload_s", 2.67e-3, "atassis/xdna-engine docs/where-time-goes.md: Krackan design switch"),
    ("npu2", "launch_reconfiguration_s", 361e-6,
     "mlir-air smolvla docs/profile.md:274-278: ELF minus xclbin per call of one GEMM module, 185-407 us (median)"),
    # parts: columns, clocks in the default mode, measured dispatch
    *[(n, "clock_hz", hz, src) for n, hz, src in (
        ("phoenix", 1.0e9, "Riallto 1 GHz; 10 TOPS rating / (20 tiles x 512 ops) (inferred)"),
        ("hawk_point", 1.6e9, f"{DRV}/npu1_regs.c npu1_dpm_clk_table top H-clock 1600 MHz; 16 TOPS rating"),
        ("strix", 1.8e9, f"{DRV}/npu4_regs.c top H-clock 1800 MHz"),
        ("strix_halo", 1.8e9, f"{DRV}/npu5_regs.c -> NPU4_COMMON_DEV_PRIV, npu4 table"),
        ("krackan", 1.8e9, f"{DRV}/npu6_regs.c -> npu4_dev_priv, npu4 table"))],
    *[(n, "columns", c, src) for n, c, src in (
        ("phoenix", 4, f"{DRV}/npu1_regs.c first_col = 1 (5 columns, 4 with shim DMA)"),
        ("hawk_point", 4, f"{DRV}/npu1_regs.c (the Phoenix array)"),
        ("strix", 8, f"{TM}: NPU2TargetModel"), ("strix_halo", 8, f"{TM}: NPU2TargetModel"),
        ("krackan", 8, f"{TM}: NPU2TargetModel (mlir-aie targets Krackan as npu2)"))],
    *[(n, "dispatch_overhead_s", s, "xrt-smi validate single-command latency" + where) for n, s, where in (
        ("phoenix", 110e-6, ", Phoenix"), ("hawk_point", 90.3e-6, ", Hawk Point"), ("strix", 109.5e-6, ", Strix"),
        ("krackan", 63e-6, ", Krackan"), ("strix_halo", 52e-6, " (latency test), Strix Halo, amd/IRON #55"))],
    ("krackan", "ddr_bytes_per_s", 67.6e9, "atassis/xdna-engine docs/aie2p-architecture-and-roofline.md mixed r/w"),
]

# Fields no source states, or that are not properties of the hardware.
NOT_FACTS = {
    "name": "not a hardware fact: a label",
    "notes": "not a hardware fact: per-preset remarks",
    "datapaths": "not a hardware fact: IRON's compile default (bf16 on bfp16); conversion cost an assumption",
    "kernel_efficiency": "not a hardware fact: kernel-model calibration from one-tile measurements",
    "kernel_call_cycles": "not a hardware fact: kernel-model calibration from one-tile measurements",
    "kernel_block_cycles": "not a hardware fact: kernel-model calibration from one-tile measurements",
    "vector_cycles_per_elem": "not a hardware fact: kernel-model calibration (mlir-air registry) and assumptions",
    "kernel_model": "not a hardware fact: a user's or a calibration's settings on top of the kernel model (presets: none)",
    "mmul_shapes": "not a hardware fact: the intrinsic shape a software kernel picks (mlir-aie microkernel map)",
    "accumulate_elems_per_cycle": "assumption: one 512-bit vector of 16 fp32 lanes per cycle",
    "ddr_run_overhead_s": "not a hardware fact: a fit to the smolvla connector tile_n sweep (mlir-air kernel registry "
                          "GEMM_bf16_in_bf16_out.md:303, bench/fit_ddr_runs.py); npu1 an assumption (the npu2 fit)",
    "bd_setup_cycles": "assumption: AMD publishes none (xdna-emu guesses about 4)",
    "bd_chain_cycles": "assumption: AMD publishes none (xdna-emu guesses about 2)",
    "lock_acquire_cycles": "assumption: AMD publishes none (xdna-emu guesses 1)",
    "lock_release_cycles": "assumption: AMD publishes none (xdna-emu guesses 1)",
    "pj_per_mac": "assumption: no per-operation energy published for AIE-ML",
    "pj_per_byte": "assumption: no per-byte energy published for AIE-ML",
    "core_mesh_rows": "not a hardware fact: switch for the generic systolic-core model",
    "core_mesh_cols": "not a hardware fact: switch for the generic systolic-core model",
    "core_mesh_dataflow": "not a hardware fact: switch for the generic systolic-core model",
}


def _value(arch: Arch, path: str):
    obj = arch
    for part_name in path.split("."):
        obj = getattr(obj, part_name)
    return obj


@pytest.mark.parametrize("preset,path,value,source", FACTS, ids=[f"{r[0]}.{r[1]}" for r in FACTS])
def test_facts__each_preset_value_equals_its_source(preset, path, value, source):
    assert source.strip() and not source.startswith("assumption")
    got = _value(PRESETS[preset], path)
    if isinstance(value, float):
        assert math.isclose(got, value, rel_tol=1e-12), f"{preset}.{path} = {got}; {source} says {value}"
    else:
        assert got == value, f"{preset}.{path} = {got}; {source} says {value}"


def test_facts__every_field_is_sourced_or_marked():
    """A new Arch or TileKind field fails here until it has a row in FACTS or a reason in NOT_FACTS."""
    sourced = {path for _, path, _, _ in FACTS}
    tile_sourced = {path.split(".", 1)[1] for path in sourced if "." in path}
    arch_fields = [f.name for f in dataclasses.fields(Arch) if f.name not in ("shim", "mem", "compute")]
    missing = [f for f in arch_fields if f not in sourced and f not in NOT_FACTS]
    missing += [f"TileKind.{f.name}" for f in dataclasses.fields(TileKind) if f.name not in tile_sourced]
    assert not missing, f"fields with no source row and no reason: {missing}"
    for f in arch_fields:  # a field is either sourced for both base presets or marked, never silently half
        if f in sourced and f not in NOT_FACTS:
            rows = {p for p, path, _, _ in FACTS if path == f}
            assert rows & {"npu1", "npu2"}, f"{f}: no row for npu1 or npu2"
    assert all(r.startswith(("assumption", "not a hardware fact")) for r in NOT_FACTS.values())
    assert not set(NOT_FACTS) - {f.name for f in dataclasses.fields(Arch)}, "NOT_FACTS names a field that is gone"


def test_facts__stream_ports_follow_the_switch_counts():
    """Mem tile -> cores is the mem tile's North masters (6), cores -> mem tile its North slaves (4);
    the mapper once had them swapped."""
    for arch in (NPU1, NPU2, *(part(n) for n in PARTS)):
        assert (arch.stream_ports_down, arch.stream_ports_up) == (6, 4)


# ---- parts, modes, column partitions ----------------------------------------------------------------

NPU1_HCLK_MHZ = (800, 1024, 1024, 1024, 1024, 1309, 1309, 1600)  # xdna-driver npu1_regs.c
NPU4_HCLK_MHZ = (792, 1056, 1152, 1267, 1267, 1408, 1584, 1800)  # xdna-driver npu4_regs.c
CAP_MHZ = {"phoenix": 1000}
TABLE = {"phoenix": NPU1_HCLK_MHZ, "hawk_point": NPU1_HCLK_MHZ, "strix": NPU4_HCLK_MHZ,
         "strix_halo": NPU4_HCLK_MHZ, "krackan": NPU4_HCLK_MHZ}
# aie2_pm.c pm_set_mode: low level 0, medium min(top, 3), high/turbo top; default: top for a context
# without QoS (aie2_ctx.c)
LEVEL = {"low": 0, "medium": 3, "high": 7, "turbo": 7, "default": 7}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(PARTS)), st.sampled_from(POWER_MODES), st.data())
def test_parts__mode_and_columns_change_only_clock_columns_and_name(name, mode, data):
    base = PRESETS[name]
    cols = data.draw(st.integers(1, base.columns))
    arch = load(f"{name}:{mode}:cols={cols}")
    mhz = min(TABLE[name][LEVEL[mode]], CAP_MHZ.get(name, 10**6))
    assert arch.clock_hz == mhz * 1e6 and arch.columns == cols
    assert arch.shim_read_bytes_per_cycle == base.shim_read_bytes_per_cycle[:cols]
    assert arch == load(name, columns=cols, mode=mode)
    same = {f.name for f in dataclasses.fields(Arch)} - {"name", "clock_hz", "columns", "shim_read_bytes_per_cycle",
                                                         "shim_write_bytes_per_cycle"}
    assert all(getattr(arch, f) == getattr(base, f) for f in same)


def test_parts__base_presets_unchanged_and_generations():
    assert load("npu1") is NPU1 and load("npu2") is NPU2
    assert {PRESETS[n].generation for n in ("phoenix", "hawk_point")} == {"aie2"}
    assert {PRESETS[n].generation for n in ("strix", "strix_halo", "krackan")} == {"aie2p"}
    assert SYSTOLIC16.generation == "generic" and set(GENERATIONS) == {"aie2", "aie2p", "generic"}
    # the Strix half many deployments use
    half = load("strix:cols=4")
    assert half.columns == 4 and half.compute_tiles == 16 and half.name == "strix:cols=4"


@pytest.mark.parametrize("spec,words", [
    ("stryx", ["not a preset", "strix_halo", "npu2", "phoenix"]),
    ("strix:fast", ["option = 'fast'", "turbo", "cols=N"]),
    ("npu2:turbo", ["npu2 has no power modes", "krackan"]),
    ("strix:cols=9", ["cols = 9", "[1, 8]"]),
    ("phoenix:cols=0", ["cols = 0", "[1, 4]"]),
    ("strix:cols=two", ["a whole number"]),
    ("strix:low:turbo", ["at most one mode"]),
])
def test_parts__unknown_names_modes_and_columns_are_refused_with_the_known_ones(spec, words):
    with pytest.raises(ConfigError) as e:
        load(spec)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_parts__columns_from_python_are_validated():
    for bad in (0, 9, 2.5, True, "4"):
        with pytest.raises(ConfigError):
            load("strix", columns=bad)
    with pytest.raises(ConfigError, match="no power modes"):
        load("npu1", mode="turbo")


def test_toml__base_may_be_a_part_in_a_mode_on_some_columns(tmp_path):
    f = tmp_path / "half.toml"
    f.write_text('[arch]\nbase = "strix:low:cols=4"\nchained_dispatch_s = 5e-6\n')
    arch = load(f)
    assert (arch.columns, arch.clock_hz, arch.chained_dispatch_s, arch.generation) == (4, 792e6, 5e-6, "aie2p")
    f.write_text('[arch]\nbase = "strix:warp"\n')
    with pytest.raises(ConfigError, match="warp"):
        load(f)
    f.write_text('[arch]\nbase = "nope"\n')
    with pytest.raises(ConfigError, match="krackan"):
        load(f)


# ---- the control-cost fields: accepted, refused, loadable --------------------------------------------

CONTROL = ("chained_dispatch_s", "runtime_instruction_cycles", "core_program_load_s")


@pytest.mark.parametrize("field", CONTROL)
@pytest.mark.parametrize("bad", [-1e-6, float("nan"), float("inf"), "fast", True, 1e9])
def test_control_costs__bad_values_are_refused_by_name(field, bad):
    with pytest.raises(ConfigError) as e:
        NPU2.replace(**{field: bad})
    assert field in str(e.value)
    with pytest.raises(ConfigError):
        from_dict({**{f.name: getattr(NPU1, f.name) for f in dataclasses.fields(Arch)}, field: bad})


def test_control_costs__replace_and_toml_take_them(tmp_path):
    a = NPU1.replace(chained_dispatch_s=1e-5, runtime_instruction_cycles=200, core_program_load_s=0)
    assert (a.chained_dispatch_s, a.runtime_instruction_cycles, a.core_program_load_s) == (1e-5, 200, 0)
    f = tmp_path / "c.toml"
    f.write_text('[arch]\nbase = "phoenix"\nruntime_instruction_cycles = 150\ncore_program_load_s = 1.1e-4\n')
    b = load(f)
    assert (b.runtime_instruction_cycles, b.core_program_load_s, b.chained_dispatch_s) == (150, 1.1e-4, 27.7e-6)
    f.write_text('[arch]\nbase = "phoenix"\nchained_dispatch_s = -1\n')
    with pytest.raises(ConfigError, match="chained_dispatch_s"):
        load(f)


def test_generation__refused_outside_the_list():
    for bad in ("aie3", "AIE2", 2, None):
        with pytest.raises(ConfigError, match="generation"):
            NPU2.replace(generation=bad)
    assert NPU1.replace(generation="generic").generation == "generic"


def test_arch_repr__is_the_dataclass_repr_made_once():
    """Caches key answers by an Arch's repr, made once per instance: it must be the text the
    dataclass would write, field by field, and a replaced Arch must get its own."""
    def written(arch) -> str:
        return f"Arch({', '.join(f'{f.name}={getattr(arch, f.name)!r}' for f in dataclasses.fields(Arch))})"

    for arch in (NPU1, NPU2, NPU2.replace(name="wide", shim_read_bytes_per_cycle=8.0)):
        assert repr(arch) == written(arch) and repr(arch) is repr(arch)
    changed = NPU2.replace(ddr_bytes_per_s=NPU2.ddr_bytes_per_s / 2)
    assert repr(changed) != repr(NPU2) and repr(changed) == written(changed)
    assert repr(dataclasses.replace(NPU2, name="other")) == written(dataclasses.replace(NPU2, name="other"))
