"""Matmul and GEMV micro-kernels: cycles of one call from the core's units, per core generation.

A call of mlir-aie's ``mm.cc`` on an m x k x n tile walks output *blocks* of ER x EC intrinsic
tiles (the "expansion": ``aie::mmul<r, s, t>`` accumulators held in registers at once); for each
block it loads the ER x EC C tiles into accumulators, runs ceil(k / s) k-steps (ER A loads, EC B
loads, ER x EC MACs each), then shift-round-saturates and stores the C tiles
(``aie_kernels/aie2/mm.cc`` ``matmul_vectorized_2x2_mmul`` / ``_4x2_mmul``; ``aie2p/mm.cc`` the
same, docs/kernel_model.md cites the lines). The C loads and stores of a block and one pipeline
fill run between two pipelined k loops, in series with the MACs: "Striking the Balance" traced 24
such kernels on one core (int8, int16 and int32 C, bf16; both generations; k from 5 to 35 steps,
unrolling and flattening directives on) and this form lands every one within 11 % (median 4 %),
where letting the C moves overlap the MACs (a flattened or unrolled loop hiding them) was up to 2.2x
too fast at short k (docs/kernel_model.md, "Serial C moves"). Hand-scheduled kernels that do hide
them (Uni Jena's listings, the train rows of ``call_cycles``) and the conv kernels are described
with ``MicroKernel.overlap_c``. Per call::

    steps  = ceil(k / s)                       rows = ceil(m / (ER r))     blocks = rows * ceil(n / (EC t))
    mac    = steps * ER*EC * (r s t / MACs per cycle) / issue / efficiency
    conv   = steps * (ER r s + EC s t) * conversion cycles per element     (bf16 -> bfp16, in the mac)
    ld_ab  = steps * (ER slots(A tile) + EC slots(B tile)) / load ports
    ld_c   = ER*EC slots(C tile) / load ports      st_c = ER*EC ceil(C tile bytes / store bytes)
    serial (mm.cc as compiled):       block = max(mac + conv, ld_ab) + ld_c + st_c + fill;  fills = 0
    overlapped (overlap_c):           block = max(mac + conv, ld_ab + ld_c, st_c);          fills = rows
    cycles = call + fills * fill + ceil(blocks * macs_scale) * (block + block_extra) + call_extra

``fill`` is one software-pipelined loop's fill and drain (load-to-use plus MAC latency); ``slots``
counts load-port accesses (a vector narrower than a port still takes one). The GEMV form is
mlir-aie's ``mv.cc``: per 8 columns of A, a pipelined loop over row groups of 16, each loading its
16 x 8 A elements and 16 partial sums and storing 16 (``matvec_vectorized``); its two loops
flattened into one pipeline, one fill per call (``CoreUnits.gemv_flattened``).

Everything here is numpy-vectorised over the tile sizes (the mapper prices thousands of candidates
per call) and returns float cycles, rounded up by the caller's ``np.ceil``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..arch import Arch
from ..dtypes import DTYPE_BYTES
from ..errors import ConfigError


@dataclass(frozen=True)
class MicroKernel:
    """One matmul micro-kernel of a datapath: its ``aie::mmul`` shape, expansion and operand bytes."""

    shape: tuple[int, int, int]  # (r, s, t): the aie::mmul intrinsic
    expand: tuple[int, int]  # (ER, EC): intrinsic tiles of A rows and B columns held per output block
    a_bytes: float  # bytes per A element as loaded (the load port moves these)
    b_bytes: float
    c_bytes: float  # bytes per C element of the in-place accumulation buffer (mm.cc loads and stores it):
    #                 the output dtype fastsim.dtypes.OUT_DTYPE gives the datapath's input (bf16 -> bf16,
    #                 int8/int16 -> int32; mm.cc has each combination: matmul_bf16_bf16, matmul_i8_i32, ...)
    issue: float = 1.0  # MAC instructions per cycle of a MAC-bound k loop (1.0: one every cycle)
    source: str = ""
    c_load: bool = True  # mm.cc accumulates in place (loads C first); conv kernels start from zero
    # a block's C loads and stores overlap its neighbours' MACs (one pipeline over the blocks): a
    # hand-scheduled kernel's loop body (Uni Jena) or the conv kernels (assumption); False: mm.cc as
    # compiled, the C moves and a fill between two k loops (the module docstring's evidence)
    overlap_c: bool = False


@dataclass(frozen=True)
class CoreUnits:
    """The core's units one generation offers a micro-kernel, with where each number comes from."""

    generation: str
    load_ports: int  # vector load units (AM020: two 256-bit load units; AM027 AIE-ML v2 the same two)
    store_ports: int  # vector store units (one, AM020/AM027)
    load_latency_cycles: int  # load-to-use (assumption, see docs/kernel_model.md)
    mac_latency_cycles: int  # MAC issue to SRS-ready accumulator (assumption)
    call_cycles: float  # call, return and prologue outside the loops (train rows, docs/kernel_model.md)
    gemv_rows: int  # mv.cc: rows per row group (r = 16) and columns per step (s = 8)
    gemv_cols: int
    # mv.cc's column and row-group loops flattened into one software pipeline: one fill per call
    # (assumption, held by the registry GEMV rows); False: one fill per 8 columns
    gemv_flattened: bool = True
    kernels: dict[str, MicroKernel] = field(default_factory=dict)

    @property
    def fill_cycles(self) -> int:
        """Fill and drain of one software-pipelined loop: first load to first MAC, last MAC to SRS."""
        return self.load_latency_cycles + self.mac_latency_cycles


_MM2 = "mlir-aie aie_kernels/aie2/mm.cc"
_MM2P = "mlir-aie aie_kernels/aie2p/mm.cc"
# AIE-ML (npu1). Shapes and expansions: mm.cc matmul_vectorized_4x8x4_bf16_* (4x4 expansion),
# matmul_vectorized_4x8x8_i8_* (4x2 expansion, "found to be optimal for AIE2"),
# matmul_vectorized_4x4x4_i16_* (2x2), matmul_vectorized_4x16x8_i4_i8 (int8 x int4). mm.cc's
# unroll_k (k/s <= 4 int8, <= 8 bf16) does not hide the C moves in the traced kernels (bf16
# 96x56x96, 7 steps, and 96x48x112: serial within 5 %), so no k is priced overlapped. int8 issue
# 8/9: the stock kernel's k loop is 9 bundles holding 8 vmac (jdominick05/ryzen-ai-xdna1-quantization,
# "The open conv's 11.3x gap ... is issue rate": train row R3).
AIE2 = CoreUnits(
    generation="aie2", load_ports=2, store_ports=1, load_latency_cycles=7, mac_latency_cycles=6,
    call_cycles=8.0, gemv_rows=16, gemv_cols=8,
    kernels={
        "bf16": MicroKernel((4, 8, 4), (4, 4), 2, 2, 2, 1.0, _MM2 + " matmul_vectorized_4x8x4_bf16_bf16"),
        "int8": MicroKernel((4, 8, 8), (4, 2), 1, 1, 4, 8 / 9, _MM2 + " matmul_vectorized_4x8x8_i8_i32"),
        "int16": MicroKernel((4, 4, 4), (2, 2), 2, 2, 4, 1.0, _MM2 + " matmul_vectorized_4x4x4_i16_i32"),
        "int8xint4": MicroKernel((4, 16, 8), (2, 2), 1, 0.5, 4, 1.0, _MM2 + " matmul_vectorized_4x16x8_i4_i8"),
    })
# AIE-ML v2 (npu2): every datapath a 2x2 expansion of 8x8x8 (aie2p/mm.cc matmul_vectorized_8x8x8_*:
# "8x8x8 mmul shape with 2x2 expansion"); native bf16 4x8x8. bfp16 operands load as 64 mantissa bytes
# per 8x8 block (the shared exponents ride along: assumption).
AIE2P = CoreUnits(
    generation="aie2p", load_ports=2, store_ports=1, load_latency_cycles=7, mac_latency_cycles=6,
    call_cycles=4.0, gemv_rows=16, gemv_cols=8,
    kernels={
        "bfp16": MicroKernel((8, 8, 8), (2, 2), 1, 1, 2, 1.0, _MM2P + " matmul_vectorized_8x8x8_bf16_bf16 (emulated)"),
        "int8": MicroKernel((8, 8, 8), (2, 2), 1, 1, 4, 1.0, _MM2P + " matmul_vectorized_8x8x8_i8_i32"),
        "bf16": MicroKernel((4, 8, 8), (2, 2), 2, 2, 2, 1.0, _MM2P + " 4x8x8 native bf16"),
    })
UNITS = {"aie2": AIE2, "aie2p": AIE2P}
# The one operand conversion the arch's datapaths define is bf16 -> bfp16 (Arch.datapaths): converted
# operands sit in core memory as bf16.
CONVERTED_BYTES = DTYPE_BYTES["bf16"]


# Who wrote the matmul kernel: "external" is a hand-written mm.cc (mm.o) as above; "direct" is the
# matmul mlir-air generates from a transform script (``--codegen direct``). The direct kernel has the
# same blocks as mm.cc (the transform tiles the packed matmul 2 x 2 and hoists C out of the k loop:
# mlir-air programming_examples/matrix_multiplication/bf16_in_fp32_out/run.py:895-974) and the same
# results bit for bit, and runs 1.17-1.63x slower at the same tiles (GEMM_bf16_in_fp32_out.md:113-131). No
# trace of it is public, so its extra cost is fitted to component rows (docs/kernel_model.md,
# "Compiler-generated kernels"; ``python bench/fit_direct_codegen.py``):
#   train 1 (sets the value): the registry's direct 2048^3, f32 out, 5,516 GFLOP/s (GEMM_bf16_in_fp32_out.md:125);
#   train 2 (chooses the form): its direct 2048x2048x11008 at tile_n 64, 4,276 GFLOP/s
#     (GEMM_bf16_in_bf16_out.md:287): an extra per call lands it within 2 %, one per output block 24 % short.
CODEGENS = ("external", "direct")
DIRECT_CALL_EXTRA_CYCLES = {"aie2p": 2_420.0}
DIRECT_DATAPATHS = ("bfp16",)  # what the train rows run: bf16 in on the bfp16 MMA


def codegen_tuning(arch: Arch, codegen: str, tuning: "Tuning", key: str | None = None) -> "Tuning":
    """``tuning`` with what kernel author ``codegen`` adds to each call of datapath ``key``. A
    generated kernel is fitted on one generation and datapath only, and refused elsewhere (a number
    for another core or datapath would be a guess)."""
    if codegen == "external":
        return tuning
    check_codegen(arch, codegen, key)
    return dataclasses.replace(tuning, call_extra_cycles=tuning.call_extra_cycles
                               + DIRECT_CALL_EXTRA_CYCLES[generation(arch)])


def check_codegen(arch: Arch, codegen: str, key: str | None = None) -> None:
    """Refuse a kernel author fastsim has no measurement of, on ``arch`` and datapath ``key`` (the
    hand-written kernel, "external", is what every cost here is of: always accepted)."""
    if codegen == "external":
        return
    gen = None if units(arch) is None else generation(arch)
    direct = "the direct (compiler-generated) kernel is measured on"
    if codegen not in CODEGENS:
        why = f"one of {CODEGENS}"
    elif gen not in DIRECT_CALL_EXTRA_CYCLES:
        why = (f"{direct} {', '.join(DIRECT_CALL_EXTRA_CYCLES)} cores only; {arch.name} has "
               f"{gen or 'no modelled'} cores (use codegen = \"external\")")
    elif key is not None and key not in DIRECT_DATAPATHS:
        why = f"{direct} the {' and '.join(DIRECT_DATAPATHS)} datapath only (bf16 in), not {key}"
    else:
        return
    raise ConfigError([f"codegen = {codegen!r}: {why}"], "kernel model")


def generation(arch: Arch) -> str:
    """The arch's core generation (``Arch.generation``; older arrays: guessed from the load width)."""
    gen = getattr(arch, "generation", None)
    return gen or ("aie2p" if arch.core_load_bytes_per_cycle >= 128 else "aie2")


def units(arch: Arch) -> CoreUnits | None:
    """The core units of ``arch``'s generation (with the arch's ``kernel_model`` settings ``matmul.*``);
    None for a generic array or a mesh core (no model)."""
    if arch.core_mesh_rows:
        return None
    return with_settings(UNITS.get(generation(arch)), "matmul", arch)


def with_settings(table, family: str, arch: Arch):
    """``table`` with the arch's ``kernel_model`` settings of ``family`` (``FAMILY.FIELD``) applied."""
    mine = tuple(sorted((k.split(".", 1)[1], v) for k, v in getattr(arch, "kernel_model", {}).items()
                        if k.startswith(family + ".")))
    if table is None or not mine:
        return table
    key = (id(table), mine)  # the generation tables are module constants; the mapper asks per tile batch
    if key not in _REPLACED:
        _REPLACED[key] = (table, dataclasses.replace(table, **{k: type(getattr(table, k))(v) for k, v in mine}))
    return _REPLACED[key][1]


_REPLACED: dict = {}  # (id of a table, changes) -> (the table, kept alive for its id; the changed copy)


def micro_kernel(arch: Arch, key: str) -> MicroKernel | None:
    """The micro-kernel of datapath ``key``; the arch's own ``mmul_shapes`` entry wins over the table's
    shape (a user's override), the table keeps expansion and bytes. None: no kernel for the key."""
    u = units(arch)
    kern = u.kernels.get(key) if u else None
    if kern is None:
        return None
    shape = tuple(arch.mmul_shapes.get(key, kern.shape))
    return kern if shape == kern.shape else dataclasses.replace(kern, shape=shape)


def _cdiv(a, b):
    return -(-np.asarray(a) // b)


def _slots(nbytes, port_bytes: float):
    """Load-port accesses of one vector of ``nbytes``: a narrower vector still takes a whole access."""
    return np.maximum(1.0, np.ceil(np.asarray(nbytes, dtype=np.float64) / port_bytes))


@dataclass(frozen=True)
class Tuning:
    """What a study or a calibration adds to the structural model: MAC issue efficiency in (0, 1]
    (divides the MAC cycles), cycles per call and per output block on top of the model's."""

    efficiency: float = 1.0
    call_extra_cycles: float = 0.0
    block_extra_cycles: float = 0.0


def blocks(arch: Arch, key: str, m, n):
    """Output blocks of one call: ceil(m / (ER r)) * ceil(n / (EC t)); None without a kernel."""
    kern = micro_kernel(arch, key)
    if kern is None:
        return None
    (r, _, t), (er, ec) = kern.shape, kern.expand
    return _cdiv(m, er * r) * _cdiv(n, ec * t)


def matmul_call_cycles(arch: Arch, key: str, m, k, n, *, tuning: Tuning = Tuning(), conv_cycles_per_elem=0.0,
                       c_bytes: float | None = None, macs_scale: float = 1.0, same_bank: bool = False,
                       kernel: MicroKernel | None = None):
    """Cycles of one m x k x n call of datapath ``key``'s micro-kernel (module docstring formula),
    numpy-broadcast over ``m, k, n`` and ``conv_cycles_per_elem``. ``c_bytes``: bytes per element
    of the C buffer (default: the kernel's); ``same_bank``: A, B and C share one memory bank, so
    their loads cannot pair (one access a cycle; ARCH_FACTS: two loads to one bank cost a cycle);
    ``kernel``: another micro-kernel on the same datapath (the conv kernels)."""
    u, kern = units(arch), kernel or micro_kernel(arch, key)
    (r, s, t), (er, ec) = kern.shape, kern.expand
    c_el = kern.c_bytes if c_bytes is None else c_bytes
    ports = 1 if same_bank else u.load_ports
    port = arch.core_load_bytes_per_cycle / u.load_ports
    store = arch.core_store_bytes_per_cycle / u.store_ports
    m, k, n = (np.asarray(x, dtype=np.int64) for x in (m, k, n))
    steps = _cdiv(k, s).astype(np.float64)
    rows = _cdiv(m, er * r)
    nblk = rows * _cdiv(n, ec * t)
    mmul = r * s * t / arch.macs_per_cycle[key]
    mac = steps * (er * ec * mmul / kern.issue / tuning.efficiency)
    cpe = np.asarray(conv_cycles_per_elem, dtype=np.float64)
    conv = steps * ((er * r * s + ec * s * t) * cpe)
    # operands converted in the mac are loaded in their source dtype (bf16), the others natively
    a_el, b_el = np.where(cpe > 0, CONVERTED_BYTES, kern.a_bytes), np.where(cpe > 0, CONVERTED_BYTES, kern.b_bytes)
    ld_ab = steps * (er * _slots(r * s * a_el, port) + ec * _slots(s * t * b_el, port)) / ports
    ld_c = er * ec * _slots(r * t * c_el, port) / ports if kern.c_load else 0.0
    st_c = er * ec * float(-(-(r * t * c_el) // store))
    if kern.overlap_c:
        block, fills = np.maximum(np.maximum(mac + conv, ld_ab + ld_c), st_c), rows * u.fill_cycles
    else:
        block, fills = np.maximum(mac + conv, ld_ab) + ld_c + st_c + u.fill_cycles, 0
    work = np.ceil(nblk * float(macs_scale)) * (block + tuning.block_extra_cycles)
    return u.call_cycles + tuning.call_extra_cycles + fills + work


def gemv_call_cycles(arch: Arch, key: str, m, k, n, *, tuning: Tuning = Tuning(), c_bytes: float | None = None,
                     macs_scale: float = 1.0):
    """Cycles of the same m x k x n call in ``mv.cc``'s vector-MAC form: m matrix-vector products of
    the k x n weights (its "A" is B here, its rows our n outputs). Per 8 columns: a pipelined loop over
    ceil(n / 16) row groups, each max(MAC, loads, stores); the two loops flattened into one pipeline
    with one fill where ``gemv_flattened`` holds, else one fill per 8 columns; MACs at the input
    dtype's own rate (the fp32-accumulating vector MAC; bf16 on AIE-ML v2 runs native, not bfp16)."""
    u, kern = units(arch), micro_kernel(arch, key)
    rows_g, cols_g = u.gemv_rows, u.gemv_cols
    own = "bf16" if key == "bfp16" and "bf16" in arch.macs_per_cycle else key
    w_bytes = CONVERTED_BYTES if key == "bfp16" else kern.b_bytes  # mv.cc reads bf16 weights, not bfp16
    c_el = DTYPE_BYTES["f32"] if c_bytes is None else c_bytes
    port = arch.core_load_bytes_per_cycle / u.load_ports
    store = arch.core_store_bytes_per_cycle / u.store_ports
    m, k, n = (np.asarray(x, dtype=np.int64) for x in (m, k, n))
    mac = rows_g * cols_g / arch.macs_per_cycle[own] / tuning.efficiency
    # four loads of 2r weights each (mv.cc a_vec_0..3) and the r partial sums
    ld = (4 * _slots(2 * rows_g * w_bytes, port) + _slots(rows_g * c_el, port)) / u.load_ports
    st = float(-(-(rows_g * c_el) // store))
    step = np.maximum(np.maximum(mac, ld), st) + tuning.block_extra_cycles
    steps = _cdiv(k, cols_g) * _cdiv(n, rows_g)
    # flattened: one pipeline over every step, one fill; otherwise one per column step
    per_vector = steps * step + (1 if u.gemv_flattened else _cdiv(k, cols_g)) * u.fill_cycles
    return u.call_cycles + tuning.call_extra_cycles + np.ceil(m * float(macs_scale)) * per_vector


def gemv_rows_max(arch: Arch, key: str) -> int:
    """The most rows of A (M) a call may have for the GEMV form to be considered: below one output
    block's height (ER r) the matmul form pads M up to it, at or above it the matmul form does no
    padding and never loses to m separate matrix-vector products."""
    kern = micro_kernel(arch, key)
    return 0 if kern is None else kern.expand[0] * kern.shape[0] - 1


def call_cycles(arch: Arch, key: str, m, k, n, *, tuning: Tuning = Tuning(), conv_cycles_per_elem=0.0,
                c_bytes: float | None = None, macs_scale: float = 1.0, kernel: MicroKernel | None = None,
                codegen: str = "external"):
    """The cheaper form for each tile: the matmul micro-kernel, or for M below one block height the
    GEMV form too (``gemv_rows_max``), whichever a kernel author would pick. Monotone in each of
    m, k, n: both forms are, and the GEMV form is only ever a lower alternative. A given ``kernel``
    (the conv kernels) has no GEMV form, nor has a generated one (``codegen`` "direct": the compiler
    emits the matmul form, with its fitted extra per call)."""
    mm = matmul_call_cycles(arch, key, m, k, n, tuning=codegen_tuning(arch, codegen, tuning, key),
                            conv_cycles_per_elem=conv_cycles_per_elem, c_bytes=c_bytes, macs_scale=macs_scale,
                            kernel=kernel)
    if kernel is not None or codegen != "external":
        return mm
    gv = gemv_call_cycles(arch, key, m, k, n, tuning=tuning, c_bytes=c_bytes, macs_scale=macs_scale)
    return np.where(np.asarray(m) <= gemv_rows_max(arch, key), np.minimum(mm, gv), mm)
