"""Architecture description: the hardware an AIE-style design runs on.

Every preset number cites its source in a comment; the short names refer to the public sources
tabled in ``docs/calibration.md`` (AM020 = AIE-ML architecture manual, aie-rt, mlir-aie,
xdna-driver). Numbers that no source states are marked "assumption" or "inferred" and are ordinary
fields a user can override.
"""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError, Problems, shown

TILE_KINDS = ("shim", "mem", "compute")
# Core generations (``Arch.generation``): "aie2" = AIE-ML (npu1: Phoenix, Hawk Point), "aie2p" =
# XDNA2's core (npu2: Strix, Strix Halo, Krackan; a sibling of AM027's AIE-ML v2, which is AIE2PS),
# "generic" = any other array (systolic studies, custom TOML arrays that do not name one; a TOML
# array keeps its base preset's). Per-generation parameter tables (the kernel model) key on it.
GENERATIONS = ("aie2", "aie2p", "generic")
# Vector-op kinds of ``Arch.vector_cycles_per_elem``: core cycles per element of one bf16 vector op.
VECTOR_KINDS = ("norm", "layer_norm", "gelu", "silu_mul", "softcap", "rope", "elementwise", "softmax",
                "dequant_int4", "dequant_int8", "kv")


def _vector_costs(softmax: float, kv: float) -> dict[str, float]:
    """Core cycles per element of the vector ops (bf16), shared by the presets; ``softmax`` and
    ``kv`` differ per part.

    Measured on npu2 (mlir-air kernel registry, one tile, upper bounds): norm (RMSNorm) 2.9,
    layer_norm 4.3, gelu 4.1, silu_mul 3.4. Assumptions: softcap = gelu (the same tanh); rope 1/4
    (about four vector ops per 16-lane vector: two multiplies, a multiply-accumulate, a shuffle; the
    registry's 1.8 is bound by one 64-element row per DMA); elementwise 0.07 (mlir-aie section-4c
    trace on npu1: a pipelined 1024-element vector x scalar loop in 72 cycles, store-bound; the
    registry's 1.15 is bound by per-chunk DMA and locks); dequant_int4 1/8 and dequant_int8 1/16
    (unpack, upshift, multiply by the scale: 2-4 instructions per 16-32-lane vector; none measured)."""
    return {"norm": 2.9, "layer_norm": 4.3, "gelu": 4.1, "silu_mul": 3.4, "softcap": 4.1, "rope": 1 / 4,
            "elementwise": 0.07, "softmax": softmax, "dequant_int4": 1 / 8, "dequant_int8": 1 / 16, "kv": kv}


# Kernel-model parameters a user or a calibration may set on top of the documented values of the
# arch's core generation (fastsim.kernel_model: docs/kernel_model.md, docs/vector_kernels.md),
# named FAMILY.FIELD after the model's tables (matmul CoreUnits, vector VectorCore, conv ConvUnits).
KERNEL_MODEL_KEYS = {
    "matmul.call_cycles": "cycles", "matmul.load_latency_cycles": "cycles", "matmul.mac_latency_cycles": "cycles",
    "vector.call_cycles": "cycles", "vector.loop_overhead_cycles": "cycles", "vector.reduce_step_cycles": "cycles",
    "vector.row_scalar_cycles": "cycles", "vector.lut_issues": "issues", "vector.lut_lanes_per_cycle": "lanes",
    "vector.special_lanes": "lanes", "vector.acc_lanes": "lanes",
    "conv.realign_per_mmul": "cycles", "conv.depthwise_lanes": "lanes"}


@dataclass(frozen=True)
class TileKind:
    """Resources of one tile type (shim, mem or compute)."""

    memory_bytes: int
    s2mm_channels: int
    mm2s_channels: int
    bd_count: int
    lock_count: int
    bd_dims: int
    bd_step_bits: int
    bd_wrap_bits: int
    bd_length_bits: int
    compression: bool


@dataclass(frozen=True)
class Arch:
    """A whole array: geometry, tile resources, streams, DDR and the costs AMD does not publish.

    Rows are ordered as on the hardware: row 0 is the shim row, then ``mem_rows`` mem-tile rows,
    then ``compute_rows`` compute rows.
    """

    name: str
    columns: int
    mem_rows: int
    compute_rows: int
    clock_hz: float
    shim: TileKind
    mem: TileKind
    compute: TileKind
    shim_read_bytes_per_cycle: tuple[float, ...]
    shim_write_bytes_per_cycle: tuple[float, ...]
    ddr_bytes_per_s: float
    macs_per_cycle: dict[str, int]
    # Core generation, one of GENERATIONS (mlir-aie AIEArch::AIE2 for npu1, AIE2p for npu2).
    generation: str = "generic"
    # dtype -> (datapath whose MAC rate applies, core cycles per converted input element). A dtype
    # without an entry runs on its own datapath. XDNA2 computes bf16 matmuls on its bfp16 datapath by
    # default and converts both operands on the core first (docs/calibration.md: IRON
    # AIE_API_EMULATE_BFLOAT16_MMUL_WITH_BFP16); the mapper may also pick the native rate instead.
    datapaths: dict[str, tuple[str, float]] = field(default_factory=dict)
    # Matmul microkernel per datapath. On the aie2/aie2p generations fastsim.kernel_model.matmul prices
    # a call from the core's units (docs/kernel_model.md), and these tables are further adjustments a
    # study or a calibration makes on top of it (presets: empty); on other arrays they are the model:
    #   cycles = kernel_call_cycles + N_blk * kernel_block_cycles + padded MACs / (MACs/cycle x kernel_efficiency)
    #   N_blk  = ceil(m / 2r) * ceil(n / 2t)   (2x2 blocks of (r, s, t) intrinsics, mlir-aie aie_kernels/aie2*/mm.cc)
    # kernel_efficiency: the fraction of issue slots of the k loop that carry a MAC (steady state);
    # kernel_call_cycles: what one call costs outside its loops; kernel_block_cycles: what each output
    # block costs that the kernel does not hide behind MACs. A datapath without an entry: 1.0, 0, 0.
    # One-tile micro-benchmarks set them, never whole-array figures.
    kernel_efficiency: dict[str, float] = field(default_factory=dict)
    kernel_call_cycles: dict[str, float] = field(default_factory=dict)
    kernel_block_cycles: dict[str, float] = field(default_factory=dict)
    # Kernel-model parameters set on top of the generation's documented ones (KERNEL_MODEL_KEYS; presets:
    # none): what a user measured on their part, or what `fastsim calibrate` fitted.
    kernel_model: dict[str, float] = field(default_factory=dict)
    # Core cycles per element of each vector-op kind (VECTOR_KINDS) on one core, bf16; sources per
    # preset below. Every kind needs an entry (a TOML table may override a few: the rest is kept).
    vector_cycles_per_elem: dict[str, float] = field(default_factory=lambda: _vector_costs(5.0, 1 / 32))
    # Elements of a partial-sum tile one core adds per cycle when K is split over cores
    # (assumption: one 512-bit vector of 16 fp32/int32 lanes per cycle, AIE-ML vector unit).
    accumulate_elems_per_cycle: int = 16
    # Core load/store width: a microkernel call reads its A and B tiles (overlapped with the MACs)
    # and reads and writes its C tile (not overlapped). AIE-ML: 2 x 256-bit loads + 1 x 256-bit
    # store per cycle (docs/calibration.md); AIE-ML v2 128 B / 64 B (AM027).
    core_load_bytes_per_cycle: int = 64
    core_store_bytes_per_cycle: int = 32
    # Native matmul intrinsic shape (r, s, t) per datapath: a microkernel pads its tile up to
    # multiples of it (mlir-aie matrix_multiplication microkernel_mac_dim_map). Missing: no padding.
    mmul_shapes: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # BD iteration wrap: how often one BD may re-send its buffer (aie-rt: 6-bit iteration wrap
    # field storing wrap - 1, so at most 64). Mem tiles re-send resident L2 blocks this way.
    bd_iterations_max: int = 64
    lock_max_value: int = 63  # mlir-aie AIE2TargetModel::getMaxLockValue 0x3F (6-bit lock state, AM020)
    task_queue_depth: int = 4  # aie-rt xaiegbl_reginit.c StartQSizeMax = 4 (AM020: 4-deep start queue)
    max_task_repeat: int = 256  # aie-rt xaiemlgbl_params.h START_QUEUE_REPEAT_COUNT_WIDTH 8 (count - 1)
    # DDR time each contiguous run of a shim BD costs besides its bytes (one DDR request per run):
    # the DDR shared by all shim channels serves ddr_bytes_per_s of bytes, less this much time per
    # run (docs/calibration.md "DDR runs"). 0: DDR charged by bytes alone (a generic array).
    ddr_run_overhead_s: float = 0.0
    # AM020: 32-bit stream switch. AM027's 64-bit switch is AIE-ML v2 (AIE2PS, Versal Gen 2): XRT's
    # profiling API uses 8-byte streams for aie2ps only, 4 for the others, AIE2P (npu2) included
    # (Xilinx/XRT #9115).
    stream_bytes_per_cycle: float = 4.0
    switch_hop_latency_cycles: int = 4  # AM020 "Stream Switch Buffering and Latency": 4 cycles per switch
    switch_buffer_bytes: int = 32  # AM020 same section: 8-deep buffering per switch x 4 B
    # Streams a column's switches carry between the mem row and the compute rows: a mapping may not
    # route more mem-tile MM2S streams down one column, nor more core MM2S streams up into the mem
    # tile. mlir-aie AIE2TargetModel::getNumDestSwitchboxConnections: a mem tile has 6 North masters
    # (down into the cores) and 4 South; the compute tile above it has 6 South slaves and 4 South
    # masters (getNumSourceSwitchboxConnections); NPU2TargetModel inherits them.
    stream_ports_down: int = 6
    stream_ports_up: int = 4
    bd_setup_cycles: int = 4
    bd_chain_cycles: int = 2
    lock_acquire_cycles: int = 1
    lock_release_cycles: int = 1
    # Control costs (docs/hardware.md "Control costs"). dispatch_overhead_s: one command sent alone
    # (an xrt run, start to completion of an empty kernel); chained_dispatch_s: each command of a
    # run list (chained commands, `xrt-smi validate` run-list latency); runtime_instruction_cycles:
    # the command processor's cycles per runtime-sequence instruction (BD writes, queue pushes, lock
    # sets, syncs: the per-layer reprogramming inside one dispatch); core_program_load_s: loading one
    # core program inside a dispatch (a layer that needs new core code).
    dispatch_overhead_s: float = 50e-6
    chained_dispatch_s: float = 8.8e-6
    runtime_instruction_cycles: float = 112.0
    core_program_load_s: float = 75e-6
    reconfiguration_s: float = 106e-6  # overlay switch that rewrites routes and BDs only
    elf_reload_s: float = 2.67e-3  # overlay switch that also loads new core programs
    # one launch of an ELF built with expanded load_pdis: the firmware reset and the herd's whole
    # configuration, core programs included, written inline before its data moves (charged per op
    # where the layout says launches reconfigure: ``Layout.launches_reconfigure``)
    launch_reconfiguration_s: float = 361e-6
    # Energy (assumptions: AMD publishes no per-operation energy for AIE-ML; orders of magnitude
    # from published accelerator surveys: LPDDR5 about 4-5 pJ/bit, on-chip SRAM+stream moves well
    # under 1 pJ/byte, bf16 MACs a few times an int8 MAC). Override per study.
    pj_per_mac: dict[str, float] = field(default_factory=lambda: {
        "int8": 0.1, "int8xint4": 0.08, "int16": 0.25, "bf16": 0.4})
    pj_per_byte: dict[str, float] = field(default_factory=lambda: {
        "ddr": 35.0, "shim_mem": 0.5, "mem_compute": 0.5, "compute_compute": 0.3,
        "shim_compute": 0.5, "mem_mem": 0.5})
    # Optional: model each compute core as a systolic PE mesh (a generic accelerator). Matmul
    # kernels then cost what the mesh model says for the tile (fill, drain, folds, edge waste)
    # instead of MACs / MACs-per-cycle.
    core_mesh_rows: int = 0
    core_mesh_cols: int = 0
    core_mesh_dataflow: str = "os"
    notes: dict[str, str] = field(default_factory=dict, compare=False)

    # -- geometry -------------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        return 1 + self.mem_rows + self.compute_rows

    def tile_kind_name(self, row: int) -> str:
        if row == 0:
            return "shim"
        if row <= self.mem_rows:
            return "mem"
        return "compute"

    def tile_kind(self, row: int) -> TileKind:
        return getattr(self, self.tile_kind_name(row))

    @property
    def first_compute_row(self) -> int:
        return 1 + self.mem_rows

    @property
    def compute_tiles(self) -> int:
        return self.columns * self.compute_rows

    @property
    def on_chip_bytes(self) -> int:
        """Core and mem-tile memory of the whole array: the most that static weights can occupy."""
        return self.compute_tiles * self.compute.memory_bytes + self.columns * self.mem_rows * self.mem.memory_bytes

    @property
    def ddr_bytes_per_cycle(self) -> float:
        return self.ddr_bytes_per_s / self.clock_hz

    def datapath_options(self, dtype: str) -> list[tuple[str, float]]:
        """The datapaths a ``dtype`` matmul can run on: (MAC-rate key, conversion cycles per input
        element); the dtype's own rate (when the arch has one) comes first."""
        out = [(dtype, 0.0)] if dtype in self.macs_per_cycle else []
        if dtype in self.datapaths:
            out.append(tuple(self.datapaths[dtype]))
        return out

    def efficiency(self, datapath: str) -> float:
        """The matmul kernel efficiency of a datapath (1.0 where none was measured)."""
        return self.kernel_efficiency.get(datapath, 1.0)

    def call_cycles(self, datapath: str) -> float:
        """Fixed cycles of one matmul microkernel call on a datapath (0 where none is given)."""
        return self.kernel_call_cycles.get(datapath, 0.0)

    def block_cycles(self, datapath: str) -> float:
        """Exposed cycles per (2r x 2t) output block of a matmul microkernel call (0 where none is given)."""
        return self.kernel_block_cycles.get(datapath, 0.0)

    def vector_cost(self, kind: str) -> float:
        """Core cycles per element of a vector op of ``kind`` (one of ``VECTOR_KINDS``)."""
        if kind not in self.vector_cycles_per_elem:
            raise ConfigError([f"vector op kind = {shown(kind)}: {self.name} has costs for "
                               f"{sorted(self.vector_cycles_per_elem)}"], "architecture")
        return self.vector_cycles_per_elem[kind]

    def peak_macs_per_s(self, dtype: str) -> float:
        """Peak over the dtype's datapaths (conversion not counted)."""
        rate = max(self.macs_per_cycle[d] for d, _ in self.datapath_options(dtype))
        return rate * self.compute_tiles * self.clock_hz

    def replace(self, **changes) -> "Arch":
        """A copy with some fields changed (per-column bandwidths may be given as one number). New MAC
        rates without new kernel tables keep only the entries of datapaths that still exist; a new
        ``vector_cycles_per_elem`` table overrides the kinds it names and keeps the others."""
        if "macs_per_cycle" in changes and isinstance(changes["macs_per_cycle"], dict):
            for name in _DATAPATH_TABLES:
                if name not in changes:
                    changes[name] = {k: v for k, v in getattr(self, name).items() if k in changes["macs_per_cycle"]}
        if isinstance(changes.get("vector_cycles_per_elem"), dict):
            changes["vector_cycles_per_elem"] = {**self.vector_cycles_per_elem, **changes["vector_cycles_per_elem"]}
        return from_dict({**_as_plain_dict(self), **changes})


# Tables keyed by datapath (a key of macs_per_cycle) that describe the matmul microkernel.
_DATAPATH_TABLES = ("kernel_efficiency", "kernel_call_cycles", "kernel_block_cycles")


# ---- presets --------------------------------------------------------------------------------------

_AIEML_COMPUTE = TileKind(
    memory_bytes=64 * 1024,  # AM020: 64 KiB data memory
    s2mm_channels=2, mm2s_channels=2,  # AM020 / docs/calibration.md DMA table
    bd_count=16, lock_count=16,  # AM020
    bd_dims=3, bd_step_bits=13, bd_wrap_bits=8, bd_length_bits=14,  # aie-rt xaiemlgbl_params.h
    compression=True,  # aie-rt: compression on compute and mem tiles
)
_AIEML_MEM = TileKind(
    memory_bytes=512 * 1024,  # AM020: 512 KiB mem tile
    s2mm_channels=6, mm2s_channels=6,  # AM020
    bd_count=48, lock_count=64,  # AM020
    bd_dims=4, bd_step_bits=17, bd_wrap_bits=10, bd_length_bits=17,  # aie-rt
    compression=True,
)
_AIEML_SHIM = TileKind(
    memory_bytes=0,  # shim tiles have no local memory; their BDs address DDR
    s2mm_channels=2, mm2s_channels=2,  # AM020
    bd_count=16, lock_count=16,  # AM020
    bd_dims=3, bd_step_bits=20, bd_wrap_bits=10, bd_length_bits=32,  # aie-rt
    compression=False,  # aie-rt: no compression on the shim
)

# Per-column shim bandwidth (inferred): 2 channels x 4 B/cycle stream width (AM020) each way.
_SHIM_COLUMN_BYTES_PER_CYCLE = 2 * 4.0
# Host <-> DDR through all shim DMAs: 64 MiB in + 64 MiB out in 2016 us (mlir-aie memcpy, PR #2559).
_MEMCPY_DDR_BYTES_PER_S = 2 * 64 * 2**20 / 2016e-6
# DDR time per contiguous run of a shim BD: a FIT, not a measurement (bench/fit_ddr_runs.py). Train
# rows: mlir-air kernel_registry GEMM_bf16_in_bf16_out.md:303, smolvla's connector GEMM 64x12288x960
# on a 4x4 herd with tile_n 16/48/80/240 (3,352/1,347/890/690 us: the same bytes of B read in runs of
# 32 to 480 B), with ddr_bytes_per_s held at the memcpy figure above; 3.97 ns, rounded.
_DDR_RUN_OVERHEAD_S = 4.0e-9

NPU1 = Arch(
    name="npu1",
    generation="aie2",  # AIE-ML (mlir-aie NPUTargetModel: AIEArch::AIE2)
    columns=4,  # Phoenix 5x6, column 0 has no shim DMA: 4 usable (xdna-driver npu1_regs.c first_col=1)
    mem_rows=1, compute_rows=4,  # mlir-aie AIETargetModel: row 0 shim, row 1 mem, rows 2-5 compute
    clock_hz=1.0e9,  # AMD Riallto material: Phoenix runs at 1 GHz (driver max 1.6 GHz)
    shim=_AIEML_SHIM, mem=_AIEML_MEM, compute=_AIEML_COMPUTE,
    shim_read_bytes_per_cycle=(_SHIM_COLUMN_BYTES_PER_CYCLE,) * 4,
    shim_write_bytes_per_cycle=(_SHIM_COLUMN_BYTES_PER_CYCLE,) * 4,
    ddr_bytes_per_s=_MEMCPY_DDR_BYTES_PER_S,  # assumption: no npu1 figure; the (likely XDNA2) memcpy
    ddr_run_overhead_s=_DDR_RUN_OVERHEAD_S,  # assumption: no npu1 figure; the npu2 fit (Strix train rows)
    macs_per_cycle={"int8": 256, "int8xint4": 512, "int16": 64, "bf16": 128},  # AM020 / UG1079
    mmul_shapes={"bf16": (4, 8, 4), "int8": (4, 8, 8), "int16": (4, 4, 4)},  # mlir-aie "npu" map
    # Matmul microkernel: fastsim.kernel_model.matmul (docs/kernel_model.md) prices a call from the
    # core's units and mlir-aie's aie2/mm.cc structure; its train rows are the Uni Jena one-tile bf16
    # listing and the int8 k-loop's 8 MACs in 9 bundles (jdominick05). The tables below are extra
    # per-study adjustments on top of it: empty.
    kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={},
    vector_cycles_per_elem=_vector_costs(softmax=3.0, kv=1 / 16),
    dispatch_overhead_s=159.5e-6,  # xrt empty-kernel dispatch, Phoenix/Windows
    chained_dispatch_s=27.7e-6,  # xrt-smi validate run-list latency per command, Phoenix
    runtime_instruction_cycles=112,  # Phoenix command processor (xdna-emu host-firmware-dispatch.md)
    core_program_load_s=75e-6,  # Phoenix: 40-110 us to load a core's program (jdominick05); the middle
    reconfiguration_s=106e-6,  # assumption: Strix figure (iree-amd-aie #1187), none for Phoenix
    launch_reconfiguration_s=361e-6,  # assumption: the Strix figure (no Phoenix ELF A/B)
    notes={"launch_reconfiguration_s": "assumption: the Strix figure (mlir-air smolvla ELF vs xclbin A/B)",
           "ddr_bytes_per_s": "assumption (XDNA2 memcpy measurement)",
           "ddr_run_overhead_s": "assumption: the npu2 fit (smolvla connector tile_n sweep on Strix)",
           "reconfiguration_s": "assumption (Strix figure)",
           "core_program_load_s": "measured range 40-110 us (jdominick05); the middle is an assumption",
           "vector_cycles_per_elem": "assumption: the npu2 single-tile figures (mlir-air kernel registry), "
                                     "same 16-lane kernels; elementwise measured (mlir-aie section-4c); "
                                     "softmax 3 (LUT exp, aie2/bf16_exp.cc), kv 1/16 (one 256-bit store per "
                                     "cycle, AM020), dequant 1/8 and 1/16 assumed"},
)

NPU2 = Arch(
    name="npu2",
    generation="aie2p",  # XDNA2 (mlir-aie BaseNPU2TargetModel::getTargetArch: AIEArch::AIE2p)
    columns=8,  # Strix 8x6, shim DMA in every column (mlir-aie NPU2TargetModel)
    mem_rows=1, compute_rows=4,  # mlir-aie NPU2TargetModel
    clock_hz=1.8e9,  # xdna-driver DPM tables: Strix family up to 1800 MHz
    shim=_AIEML_SHIM, mem=_AIEML_MEM, compute=_AIEML_COMPUTE,
    shim_read_bytes_per_cycle=(_SHIM_COLUMN_BYTES_PER_CYCLE,) * 8,
    shim_write_bytes_per_cycle=(_SHIM_COLUMN_BYTES_PER_CYCLE,) * 8,
    ddr_bytes_per_s=_MEMCPY_DDR_BYTES_PER_S,  # mlir-aie memcpy, 66.6 GB/s both directions
    ddr_run_overhead_s=_DDR_RUN_OVERHEAD_S,  # fit: smolvla connector tile_n sweep (registry md:303)
    # Ryzen AI 1.7.1 cost-model device.yaml for AIE2P (docs/calibration.md): int8 512, bfp16 512, native
    # bf16 only 64 (Xilinx/llvm-aie #710: no high-throughput bf16 instruction on XDNA2).
    macs_per_cycle={"int8": 512, "bf16": 64, "bfp16": 512},
    # bf16 matmuls run on the bfp16 datapath after a core-side conversion (IRON default). The cost,
    # 1/32 cycle per element (one 512-bit vector of bf16 per cycle), is an assumption.
    datapaths={"bf16": ("bfp16", 1 / 32)},
    # Matmul microkernel: fastsim.kernel_model.matmul (docs/kernel_model.md; aie2p/mm.cc structure, the
    # Uni Jena 64x96x64 bfp16 listing as its train row). The tables are extra adjustments: empty.
    kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={},
    # Vector ops, bf16, one tile (mlir-air programming_examples/kernel_registry/details/<Kernel>_bf16.md,
    # RyzenAI-npu4, turbo, latency per call less the ~80 us launch floor, at 1.8 GHz): RMSNorm 2.88
    # (2048x2048), LayerNorm 4.34 (1024x768), GELU-tanh 4.06, SiLU(gate)*up 3.39 cycles per element;
    # these scale near-linearly from 1 to 8 tiles, so one tile is core-bound (upper bounds: each
    # includes its tile's own DMA). RoPE (1.8) and element-wise add (1.15) are bound by per-row /
    # per-chunk DMA and locks there, not by the core: assumptions below. See _vector_costs.
    vector_cycles_per_elem=_vector_costs(softmax=5.0, kv=1 / 32),
    # mlir-aie "npu2" map: bf16 emulated on bfp16 8x8x8, native 4x8x8; int8 8x8x8 (inferred)
    mmul_shapes={"bfp16": (8, 8, 8), "bf16": (4, 8, 8), "int8": (8, 8, 8)},
    core_load_bytes_per_cycle=128, core_store_bytes_per_cycle=64,  # AM027 (AIE-ML v2)
    dispatch_overhead_s=52e-6,  # xrt empty-kernel dispatch, Strix Halo/Linux
    chained_dispatch_s=8.8e-6,  # xrt-smi validate run-list latency per command, Strix
    runtime_instruction_cycles=112,  # assumption: the Phoenix command processor's rate (xdna-emu)
    core_program_load_s=75e-6,  # assumption: the Phoenix figure (jdominick05, middle of 40-110 us)
    reconfiguration_s=106e-6,  # whole-array overlay switch on Strix, 106-192 us (iree-amd-aie #1187)
    elf_reload_s=2.67e-3,  # switching designs (new core programs) on Krackan (xdna-engine where-time-goes.md)
    # ELF minus xclbin for the same GEMM module, one call each: 184.9, 407.2, 361.0 us (mlir-air
    # programming_examples/llms/smolvla/docs/profile.md:274-278, 32-core herds); the median
    launch_reconfiguration_s=361e-6,
    notes={"launch_reconfiguration_s": "measured (component): ELF minus xclbin per call of one GEMM module, "
                                       "184.9-407.2 us, the median of three (mlir-air smolvla profile.md:274-278; "
                                       "32-core herds); the train rows of this parameter",
           "datapaths.bf16": "conversion cost 1/32 cycle per element is an assumption",
           "ddr_run_overhead_s": "fit, not a measurement: smolvla connector tile_n sweep (4 train rows, "
                                 "registry GEMM_bf16_in_bf16_out.md:303), bench/fit_ddr_runs.py",
           "runtime_instruction_cycles": "assumption: the Phoenix rate (112 cycles, xdna-emu)",
           "core_program_load_s": "assumption: the Phoenix figure (40-110 us, the middle)",
           "vector_cycles_per_elem": "norm, layer_norm, gelu, silu_mul measured (mlir-air registry, upper "
                                     "bounds, 1.8 GHz); softcap = gelu, rope 1/4, elementwise 0.07, softmax 5, "
                                     "dequant 1/8 and 1/16: assumptions; kv 1/32 (64 B store per cycle, AM027)"},
)

PRESETS = {"npu1": NPU1, "npu2": NPU2}  # SYSTOLIC16 is added below, once from_dict exists


# ---- validation and loading -----------------------------------------------------------------------

# Largest values a field may take: far above any real part, small enough that no table, loop or
# 2**bits computed from them can overflow or exhaust memory.
MOST = {"columns": 1024, "rows": 64, "bits": 48, "cycles": 10**6, "bytes": 2**40, "rate": 1e6, "hz": 1e11,
        "seconds": 1e3, "count": 2**20}


_DATACLASS_REPR = Arch.__repr__


def _repr_once(self: Arch) -> str:
    """The dataclass's repr, made once per instance: caches key answers by it (every search,
    bound and vector design asks; about 20 us each), and a frozen Arch never changes (its tables
    are dicts: change them with ``replace``, never in place)."""
    text = self.__dict__.get("_repr")
    if text is None:
        text = _DATACLASS_REPR(self)
        object.__setattr__(self, "_repr", text)
    return text


Arch.__repr__ = _repr_once


def _tile_problems(p: Problems, kind: str, t) -> None:
    if not isinstance(t, TileKind):
        p.add(kind, t, "must be a table of tile fields")
        return
    p.number(f"{kind}.memory_bytes", t.memory_bytes, integer=True, lo=0, hi=MOST["bytes"])
    for f in ("s2mm_channels", "mm2s_channels"):
        p.number(f"{kind}.{f}", getattr(t, f), integer=True, lo=1, hi=64)
    for f in ("bd_count", "lock_count"):
        p.number(f"{kind}.{f}", getattr(t, f), integer=True, lo=1, hi=MOST["count"])
    p.number(f"{kind}.bd_dims", t.bd_dims, integer=True, lo=1, hi=4)
    for f in ("bd_step_bits", "bd_wrap_bits", "bd_length_bits"):
        p.number(f"{kind}.{f}", getattr(t, f), integer=True, lo=1, hi=MOST["bits"])
    p.check(isinstance(t.compression, bool), f"{kind}.compression", t.compression, "true or false")


def _table(p: Problems, name: str, table, key_ok, value_check, allowed: str = "a known name") -> None:
    """A dict field: a table whose keys pass ``key_ok`` and whose values ``value_check`` checks."""
    if not isinstance(table, dict):
        p.add(name, table, "must be a table")
        return
    for k, v in table.items():
        if p.check(isinstance(k, str) and key_ok(k), f"{name} key", k, allowed):
            value_check(f"{name}.{k}", v)


def _model_and_energy_problems(p: Problems, arch: Arch) -> None:
    """The kernel-model settings (known keys, numbers in range) and the energy tables."""
    _table(p, "kernel_model", arch.kernel_model, lambda k: k in KERNEL_MODEL_KEYS,
           lambda f, v: p.number(f, v, lo=0, hi=MOST["cycles"], unit=KERNEL_MODEL_KEYS.get(f.removeprefix("kernel_model."), "")),
           f"one of {', '.join(KERNEL_MODEL_KEYS)}")
    for name in ("pj_per_mac", "pj_per_byte"):
        _table(p, name, getattr(arch, name), lambda k: True, lambda f, v: p.number(f, v, lo=0, hi=1e9, unit="pJ"))


def _ddr_problems(p: Problems, arch: Arch) -> None:
    p.number("ddr_bytes_per_s", arch.ddr_bytes_per_s, lo=0, lo_open=True, hi=1e15, unit="bytes/s")
    # at most 1 us per run (250x the fit), so that the run cost in kernel units stays far from overflow
    p.number("ddr_run_overhead_s", arch.ddr_run_overhead_s, lo=0, hi=1e-6, unit="seconds")


def _launch_at_least_a_load(p: Problems, arch: Arch) -> None:
    """A launch's reconfiguration loads core programs too: never cheaper than one program load
    (else reconfiguring launches could make a pass faster than reloading programs)."""
    launch, load = arch.launch_reconfiguration_s, arch.core_program_load_s
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (launch, load)):
        p.check(not launch < load, "launch_reconfiguration_s", launch,
                f">= core_program_load_s ({load}): a launch's reconfiguration loads its core programs too")


def validate(arch: Arch) -> Arch:
    """Raise one ConfigError that lists every bad field of ``arch``: wrong types first (before any
    comparison or arithmetic), then ranges."""
    p = Problems("architecture")
    p.check(isinstance(arch.name, str), "name", arch.name, "must be a string")
    p.check(arch.generation in GENERATIONS if isinstance(arch.generation, str) else False, "generation",
            arch.generation, f"one of {', '.join(GENERATIONS)}")
    p.number("columns", arch.columns, integer=True, lo=1, hi=MOST["columns"])
    p.number("mem_rows", arch.mem_rows, integer=True, lo=0, hi=16)
    p.number("compute_rows", arch.compute_rows, integer=True, lo=1, hi=MOST["rows"])
    p.number("clock_hz", arch.clock_hz, lo=0, lo_open=True, hi=MOST["hz"], unit="Hz")
    for kind in TILE_KINDS:
        _tile_problems(p, kind, getattr(arch, kind))
    for name in ("shim_read_bytes_per_cycle", "shim_write_bytes_per_cycle"):
        v = getattr(arch, name)
        if not isinstance(v, tuple):
            p.add(name, v, "must be a list of numbers, one per column")
        elif isinstance(arch.columns, int) and p.check(len(v) == arch.columns, name, v,
                                                        f"needs one value per column ({arch.columns})"):
            for c, x in enumerate(v):
                p.number(f"{name}[{c}]", x, lo=0, lo_open=True, hi=MOST["rate"], unit="bytes/cycle")
    _ddr_problems(p, arch)
    macs = arch.macs_per_cycle if isinstance(arch.macs_per_cycle, dict) else {}
    _table(p, "macs_per_cycle", arch.macs_per_cycle, lambda k: True,
           lambda f, v: p.number(f, v, integer=True, lo=1, hi=MOST["count"]))
    p.check(len(macs) >= 1, "macs_per_cycle", arch.macs_per_cycle, "needs at least one dtype")

    def datapath(f, path):
        ok = isinstance(path, tuple) and len(path) == 2 and path[0] in macs
        if p.check(ok, f, path, f"(datapath in {sorted(macs)}, conversion cycles per element >= 0)"):
            p.number(f"{f}[1]", path[1], lo=0, hi=MOST["cycles"], unit="cycles per element")
    _table(p, "datapaths", arch.datapaths, lambda k: True, datapath)

    def shape(f, v):
        if p.check(isinstance(v, tuple) and len(v) == 3, f, v, "(r, s, t)"):
            for i, x in enumerate(v):
                p.number(f"{f}[{i}]", x, integer=True, lo=1, hi=4096)
    _table(p, "mmul_shapes", arch.mmul_shapes, lambda k: True, shape)
    _table(p, "kernel_efficiency", arch.kernel_efficiency, lambda k: k in macs,
           lambda f, v: p.number(f, v, lo=0, lo_open=True, hi=1), f"a datapath of macs_per_cycle {sorted(macs)}")
    for name in ("kernel_call_cycles", "kernel_block_cycles"):
        _table(p, name, getattr(arch, name), lambda k: k in macs,
               lambda f, v: p.number(f, v, lo=0, hi=MOST["cycles"], unit="cycles"),
               f"a datapath of macs_per_cycle {sorted(macs)}")
    vec = arch.vector_cycles_per_elem
    _table(p, "vector_cycles_per_elem", vec, lambda k: k in VECTOR_KINDS,
           lambda f, v: p.number(f, v, lo=0, hi=MOST["cycles"], unit="cycles per element"),
           f"one of {', '.join(VECTOR_KINDS)}")
    if isinstance(vec, dict):
        missing = [k for k in VECTOR_KINDS if k not in vec]
        p.check(not missing, "vector_cycles_per_elem", sorted(vec), f"needs every kind; missing {', '.join(missing)}")
    _model_and_energy_problems(p, arch)
    for f in ("core_load_bytes_per_cycle", "core_store_bytes_per_cycle", "accumulate_elems_per_cycle",
              "bd_iterations_max", "switch_hop_latency_cycles"):
        p.number(f, getattr(arch, f), integer=True, lo=1, hi=MOST["cycles"])
    p.number("lock_max_value", arch.lock_max_value, integer=True, lo=1, hi=2**31 - 1)
    p.number("task_queue_depth", arch.task_queue_depth, integer=True, lo=1, hi=64)
    p.number("max_task_repeat", arch.max_task_repeat, integer=True, lo=1, hi=2**31 - 1)
    if p.number("stream_bytes_per_cycle", arch.stream_bytes_per_cycle, lo=0, lo_open=True, hi=MOST["rate"]):
        p.number("switch_buffer_bytes", arch.switch_buffer_bytes, integer=True, lo=arch.stream_bytes_per_cycle,
                 hi=MOST["bytes"])
    for f in ("stream_ports_down", "stream_ports_up"):
        p.number(f, getattr(arch, f), integer=True, lo=1, hi=64)
    for f in ("bd_setup_cycles", "bd_chain_cycles", "lock_acquire_cycles", "lock_release_cycles"):
        p.number(f, getattr(arch, f), integer=True, lo=0, hi=MOST["cycles"], unit="cycles")
    for f in ("dispatch_overhead_s", "chained_dispatch_s", "core_program_load_s", "reconfiguration_s",
              "elf_reload_s", "launch_reconfiguration_s"):
        p.number(f, getattr(arch, f), lo=0, hi=MOST["seconds"], unit="seconds")
    p.number("runtime_instruction_cycles", arch.runtime_instruction_cycles, lo=0, hi=MOST["cycles"], unit="cycles")
    _launch_at_least_a_load(p, arch)
    if all([p.number(f, getattr(arch, f), integer=True, lo=0, hi=4096) for f in ("core_mesh_rows", "core_mesh_cols")]):
        mesh = arch.core_mesh_rows or arch.core_mesh_cols
        p.check(not mesh or (arch.core_mesh_rows >= 1 and arch.core_mesh_cols >= 1), "core_mesh_rows/cols",
                (arch.core_mesh_rows, arch.core_mesh_cols), "both >= 1 (mesh cores) or both 0 (no mesh model)")
        p.check(not mesh or not arch.datapaths, "datapaths", arch.datapaths,
                "must be empty with mesh cores (a mesh has one datapath per dtype)")
    p.check(arch.core_mesh_dataflow in ("ws", "is", "os"), "core_mesh_dataflow", arch.core_mesh_dataflow,
            "ws, is or os")
    p.raise_if_any()
    return arch


def _as_plain_dict(arch: Arch) -> dict:
    return {f.name: getattr(arch, f.name) for f in dataclasses.fields(arch)}


def from_dict(values: dict) -> Arch:
    """Build and validate an Arch from plain values (TOML tables, sweep overrides); a value of the
    wrong shape is reported with its field, like every other problem."""
    p = Problems("architecture")
    if not isinstance(values, dict):
        raise ConfigError([f"architecture = {shown(values)}: must be a table of fields"], "architecture")
    known = {f.name for f in dataclasses.fields(Arch)}
    for key in values:
        p.check(key in known, str(key), values[key], f"unknown field; known: {sorted(known)}")
    missing = sorted(known - set(values) - {f.name for f in dataclasses.fields(Arch)
                                             if f.default is not dataclasses.MISSING
                                             or f.default_factory is not dataclasses.MISSING})
    for key in missing:
        p.add(key, None, "missing")
    p.raise_if_any()
    v = dict(values)
    for kind in TILE_KINDS:
        t = v.get(kind)
        if isinstance(t, dict):
            base = dataclasses.asdict(getattr(NPU2, kind))
            for key in t:
                p.check(key in base, f"{kind}.{key}", t[key], f"unknown field; known: {sorted(base)}")
            v[kind] = TileKind(**{**base, **{k: x for k, x in t.items() if k in base}})
    columns = v["columns"]
    for name in ("shim_read_bytes_per_cycle", "shim_write_bytes_per_cycle"):
        x = v[name]
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            v[name] = (x,) * columns if isinstance(columns, int) and 1 <= columns <= MOST["columns"] else (x,)
        elif isinstance(x, (list, tuple)):
            if isinstance(columns, int) and len(x) != columns and len(set(map(repr, x))) == 1:
                x = list(x[:1]) * columns if 1 <= columns <= MOST["columns"] else x  # a uniform array follows
            v[name] = tuple(x)
    for name in ("macs_per_cycle", "mmul_shapes", "datapaths", "pj_per_mac", "pj_per_byte", *_DATAPATH_TABLES,
                 "vector_cycles_per_elem"):
        if name in v and isinstance(v[name], dict):
            v[name] = {k: (tuple(x) if isinstance(x, list) else x) for k, x in v[name].items()}
    p.raise_if_any()
    return validate(Arch(**v))


def load(name_or_path: str | Path, columns: int | None = None, mode: str | None = None) -> Arch:
    """A preset or part by name, or a custom array from a TOML file.

    A name may carry options after colons: a power mode of a part (``strix:turbo``; modes in
    ``POWER_MODES``) and a column count (``strix:cols=4``: the first 4 columns, as a partition of
    the array that a hardware context gets). ``columns`` and ``mode`` do the same from Python.

    The TOML file has an ``[arch]`` table; ``base = "npu2"`` (any name above, options included)
    starts from a preset and every other key overrides a field (tile tables such as
    ``[arch.compute]`` and ``[arch.vector_cycles_per_elem]`` override single entries; other tables
    replace the whole field).
    """
    key = str(name_or_path)
    if key.split(":")[0] in {*PRESETS, *PARTS} or not Path(key).is_file():
        arch = _named(key if mode is None else f"{key}:{mode}", key)
    elif mode is not None:
        raise ConfigError([f"arch {key!r}: mode = {shown(mode)}: a TOML array has no power modes (set clock_hz)"],
                          "architecture")
    else:
        arch = _from_toml(Path(key))
    return arch if columns is None else _column_slice(arch, columns, key)


def _named(spec: str, shown_as: str) -> Arch:
    """``name[:mode][:cols=N]`` -> the preset, in that mode, on that many columns."""
    name, *options = spec.split(":")
    known = sorted({*PRESETS, *PARTS})
    if name not in PRESETS and name not in PARTS:
        raise ConfigError([f"arch {shown_as!r}: not a preset ({', '.join(known)}) and no such file"], "architecture")
    modes = [o for o in options if not o.startswith(("cols=", "columns="))]
    cols = [o.split("=", 1)[1] for o in options if o.startswith(("cols=", "columns="))]
    p = Problems(f"arch {shown_as!r}")
    for o in modes:
        p.check(o in POWER_MODES, "option", o, f"a power mode ({', '.join(POWER_MODES)}) or cols=N")
    p.check(len(modes) <= 1 and len(cols) <= 1, "options", options, "at most one mode and one cols=N")
    p.check(not modes or name in PARTS, "mode", ":".join(modes), f"{name} has no power modes; parts that do: "
            f"{', '.join(PARTS)}")
    p.check(all(c.isdigit() for c in cols), "cols", ":".join(cols), "a whole number of columns")
    p.raise_if_any()
    arch = part(name, modes[0]) if modes else PRESETS[name]
    return _column_slice(arch, int(cols[0]), shown_as) if cols else arch


def _column_slice(arch: Arch, columns, shown_as: str) -> Arch:
    """The first ``columns`` columns of ``arch``: a partition of the array (a hardware context on
    part of it), with those columns' shim rates; DDR bandwidth stays the part's."""
    p = Problems(f"arch {shown_as!r}")
    p.number("cols", columns, integer=True, lo=1, hi=arch.columns)
    p.raise_if_any()
    if columns == arch.columns:
        return arch
    return arch.replace(name=f"{arch.name}:cols={columns}", columns=columns,
                        shim_read_bytes_per_cycle=arch.shim_read_bytes_per_cycle[:columns],
                        shim_write_bytes_per_cycle=arch.shim_write_bytes_per_cycle[:columns])


def _from_toml(path: Path) -> Arch:
    """A custom array: an ``[arch]`` table over a base preset (see ``load``)."""
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError([f"{path}: not readable TOML ({e})"], "architecture")
    table = doc.get("arch")
    if not isinstance(table, dict):
        raise ConfigError([f"{path}: needs an [arch] table"], "architecture")
    top = Problems(f"architecture {path}")
    top.unknown_keys("", doc, ("arch",))  # a misspelled table ([arch.compte] is refused by from_dict)
    top.raise_if_any()
    table = dict(table)
    base_name = table.pop("base", "npu2")
    if not isinstance(base_name, str) or base_name.split(":")[0] not in {*PRESETS, *PARTS}:
        raise ConfigError([f"{path}: base = {shown(base_name)}; allowed: {', '.join(sorted({*PRESETS, *PARTS}))} "
                           "(with :mode and :cols=N options)"], "architecture")
    merged = _as_plain_dict(_named(base_name, f"{path}: base = {base_name}"))
    for key2, val in table.items():
        if key2 in TILE_KINDS and isinstance(val, dict):
            merged[key2] = {**dataclasses.asdict(merged[key2]), **val}
        elif key2 == "vector_cycles_per_elem" and isinstance(val, dict):
            merged[key2] = {**merged[key2], **val}  # a few kinds overridden, the others kept
        else:
            merged[key2] = val
    merged["name"] = table.get("name", path.stem) if isinstance(table.get("name", ""), str) else path.stem
    return from_dict(merged)


# A generic spatial accelerator: the npu2 array whose cores are 16x16 output-stationary systolic
# meshes (assumption for design studies; 256 MACs/cycle per core at full occupancy).
SYSTOLIC16 = NPU2.replace(name="systolic16", generation="generic", core_mesh_rows=16, core_mesh_cols=16,
                          macs_per_cycle={"int8": 256, "bf16": 256}, datapaths={}, mmul_shapes={},
                          kernel_efficiency={}, kernel_call_cycles={}, kernel_block_cycles={})

PRESETS["systolic16"] = SYSTOLIC16


# ---- parts users own: columns, clocks per power mode, measured control costs ---------------------

# Power modes of the xdna driver (xrt-smi configure --pmode; uapi amdxdna_accel.h POWER_MODE_*).
POWER_MODES = ("default", "low", "medium", "high", "turbo")
# H-clock per DPM level, MHz (xdna-driver npu1_regs.c npu1_dpm_clk_table; npu4_regs.c
# npu4_dpm_clk_table, which npu5 = Strix Halo and npu6 = Krackan share through NPU4_COMMON_DEV_PRIV).
# The H-clock is the array's: aie2_smu.c derives the part's TOPS from it (4096 ops x columns x H-clock).
_NPU1_HCLK_MHZ = (800, 1024, 1024, 1024, 1024, 1309, 1309, 1600)
_NPU4_HCLK_MHZ = (792, 1056, 1152, 1267, 1267, 1408, 1584, 1800)


def _dpm_level(mode: str, levels: int) -> int:
    """The DPM level a power mode sets (xdna-driver aie2_pm.c pm_set_mode): low 0, medium
    min(top, 3), high and turbo the top one (turbo also stops clock gating: not modelled), default
    the level the open contexts ask for, which is the top one for a context without QoS figures
    (aie2_ctx.c aie2_calc_ctx_dpm), as XRT and IRON create them."""
    return {"low": 0, "medium": min(levels - 1, 3)}.get(mode, levels - 1)


@dataclass(frozen=True)
class Part:
    """A product built on a preset: its columns, its H-clock table (capped where the part's rating
    says it runs lower), and its own measured costs (``changes``, each cited in ``notes``)."""

    base: Arch
    hclk_mhz: tuple[int, ...]
    hclk_cap_mhz: int
    changes: dict
    notes: dict


PARTS = {
    # Phoenix (Ryzen 7040): the npu1 array, 4 usable columns. Its table is Hawk Point's (one driver
    # file, one PCI id) but the part is rated 10 TOPS, which 20 tiles x 512 ops need only 1.0 GHz
    # for, and AMD's Riallto material says 1 GHz: capped there (assumption that the cap holds in
    # every mode).
    "phoenix": Part(NPU1, _NPU1_HCLK_MHZ, 1000, {"dispatch_overhead_s": 110e-6, "chained_dispatch_s": 27.7e-6},
                    {"clock_hz": "Riallto: 1 GHz; 10 TOPS rating (inferred); driver table tops at 1.6 GHz",
                     "dispatch_overhead_s": "xrt-smi validate single-command latency, Phoenix",
                     "chained_dispatch_s": "xrt-smi validate run-list latency, Phoenix"}),
    # Hawk Point (Ryzen 8040/8000G/200): the same array at the table's 1.6 GHz (16 TOPS rating).
    "hawk_point": Part(NPU1, _NPU1_HCLK_MHZ, 1600, {"dispatch_overhead_s": 90.3e-6, "chained_dispatch_s": 27.7e-6},
                       {"dispatch_overhead_s": "xrt-smi validate single-command latency, Hawk Point",
                        "chained_dispatch_s": "assumption: the Phoenix run-list figure (same NPU and firmware family)"}),
    "strix": Part(NPU2, _NPU4_HCLK_MHZ, 1800, {"dispatch_overhead_s": 109.5e-6, "chained_dispatch_s": 8.8e-6},
                  {"dispatch_overhead_s": "xrt-smi validate single-command latency, Strix",
                   "chained_dispatch_s": "xrt-smi validate run-list latency, Strix"}),
    "strix_halo": Part(NPU2, _NPU4_HCLK_MHZ, 1800, {"dispatch_overhead_s": 52e-6, "chained_dispatch_s": 8.8e-6},
                       {"dispatch_overhead_s": "xrt-smi latency test, Strix Halo/Linux (amd/IRON #55)",
                        "chained_dispatch_s": "assumption: the Strix run-list figure"}),
    # Krackan: DDR from the NPU measured, mixed read and write (xdna-engine roofline document), the
    # same both-directions kind of figure as the presets' memcpy.
    "krackan": Part(NPU2, _NPU4_HCLK_MHZ, 1800, {"dispatch_overhead_s": 63e-6, "chained_dispatch_s": 8.8e-6,
                                                 "ddr_bytes_per_s": 67.6e9},
                    {"dispatch_overhead_s": "xrt-smi validate single-command latency, Krackan",
                     "chained_dispatch_s": "assumption: the Strix run-list figure",
                     "ddr_bytes_per_s": "NPU mixed read/write 67.6 GB/s (atassis/xdna-engine roofline doc)"}),
}


def part(name: str, mode: str = "default") -> Arch:
    """A part in a power mode: its base preset at the mode's H-clock with its own measured costs."""
    p = Problems("architecture")
    p.check(name in PARTS, "part", name, f"one of {', '.join(PARTS)}")
    p.check(mode in POWER_MODES, "mode", mode, f"one of {', '.join(POWER_MODES)}")
    p.raise_if_any()
    spec = PARTS[name]
    mhz = min(spec.hclk_mhz[_dpm_level(mode, len(spec.hclk_mhz))], spec.hclk_cap_mhz)
    return spec.base.replace(name=name if mode == "default" else f"{name}:{mode}", clock_hz=mhz * 1e6,
                             notes={**spec.base.notes, **spec.notes}, **spec.changes)


PRESETS.update({name: part(name) for name in PARTS})
