"""Rank a batch of structures over its tile grid: the numbers the search keeps per candidate
(lower bound, energy, first violated limit, DMA transfers, control instructions, and whether it is worth
enumerating).

Two implementations with one answer: ``ranked_numpy`` runs the full closed form (``plan.evaluate``,
``plan.problems`` and ``plan.control_counts_of``) and keeps those; ``ranked`` runs the compiled loop of
``fastsim.kernels.closed_form``, which computes only them and is bit-identical (property-tested).
The compiled one is used unless JIT is off or the arch models mesh cores (whose microkernel cost is
another model, ``fastsim.cost``).
"""
from __future__ import annotations

from dataclasses import fields

import numpy as np

from ..arch import Arch
from ..cache import CACHE, Region
from fastsim.kernels import closed_form as K
from ..settings import resolve_jit
from ..lower import to_units
from .ddr_runs import bound_run_bytes, write_most
from .paths import whole_words
from .dispatch import LAYER_INSTRUCTIONS, REPEAT_INSTRUCTIONS, ControlWeight, layer_instructions, repeat_instructions
from .plan import StructureBatch, control_counts_of, evaluate, matmul_cycles, modelled, problems
from .space import Matmul

COLUMNS = ("s", "t", "bound", "energy", "reason", "transfers", "layer", "repeat")
FLOWS = {"os": K.FLOW_OS, "ws": K.FLOW_WS, "is": K.FLOW_IS}


def ranked(op: Matmul, batch: StructureBatch, arch: Arch, m, k, n, keep, memo: dict | None = None,
           illegal_numbers: bool = True) -> dict[str, np.ndarray]:
    """Per kept and useful (structure, tile) pair, in row-major order: its structure ``s`` and tile
    ``t`` indices, ``bound`` (cycles), ``energy`` (pJ), ``reason`` (index into ``plan.problems``,
    -1 legal), ``transfers``, and ``layer`` and ``repeat``: its design's control instructions of a
    set-up and of a re-run (``dispatch.layer_instructions``, ``repeat_instructions``), which a search
    weighs (``weighed_control``); ``m, k, n`` are (1, T) tile rows and ``keep`` (S, T).
    ``memo``: kernel call cycles (``call_cycle_memo``).
    ``illegal_numbers`` False: illegal pairs may come with NaN in every column but ``s``, ``t`` and
    ``reason`` (the compiled loop then skips their arithmetic; the reference computes it anyway)."""
    if arch.core_mesh_rows or not resolve_jit():
        return ranked_numpy(op, batch, arch, m, k, n, keep)
    return ranked_compiled(op, batch, arch, m, k, n, keep, memo, illegal_numbers)


def weighed_control(layer: np.ndarray, repeat: np.ndarray, control_weight, arch: Arch) -> np.ndarray:
    """Cycles of the control a search weighs per simulated run, from ``ranked``'s instruction
    columns: ``branch_bound.control_cycles``'s arithmetic on the candidate's closed-form control
    counts, which equal its built design's (0 when the weight is 0)."""
    if not control_weight:
        return np.zeros(len(layer))
    w = ControlWeight.of(control_weight)
    return (w.setups * layer + w.reruns * repeat) * arch.runtime_instruction_cycles


def ranked_numpy(op: Matmul, batch: StructureBatch, arch: Arch, m, k, n, keep) -> dict[str, np.ndarray]:
    """The reference: the whole closed form, then the numbers of the pairs kept."""
    ev = evaluate(op, batch, arch, m, k, n)
    shape = ev["lower_bound_cycles"].shape
    considered = keep & np.broadcast_to(ev["useful"], shape)
    reason = np.full(shape, -1)
    for r, (mask, _) in enumerate(problems(ev, arch, batch.static_b)):
        reason = np.where((reason < 0) & np.broadcast_to(mask, shape), r, reason)
    s, t = np.nonzero(considered)
    out = {"s": s, "t": t}
    counts = control_counts_of(op, batch, arch, m, k, n)
    for name, v in (("bound", ev["lower_bound_cycles"]), ("energy", ev["energy_pj"]), ("reason", reason),
                    ("transfers", ev["transfers"]), ("layer", layer_instructions(counts)),
                    ("repeat", repeat_instructions(counts))):
        out[name] = np.broadcast_to(v, shape)[s, t]
    for name in ("layer", "repeat"):
        out[name] = out[name].astype(np.float64)
    return out


def ranked_compiled(op: Matmul, batch: StructureBatch, arch: Arch, m, k, n, keep, memo: dict | None = None,
                    illegal_numbers: bool = True) -> dict[str, np.ndarray]:
    """``ranked_numpy``'s answer from the compiled loop (``illegal_numbers``: see ``ranked``)."""
    keep = np.ascontiguousarray(np.broadcast_to(keep, (len(batch.structures), m.shape[-1])))
    size = int(np.count_nonzero(keep))
    out = {c: np.empty(size, np.int64 if c in ("s", "t", "reason") else np.float64) for c in COLUMNS}
    tiles = [np.ascontiguousarray(np.asarray(x, np.int64).reshape(-1)) for x in (m, k, n)]
    params = _parameters(op, batch, arch)
    count = K.candidates(*params, *tiles, keep, *_modelled_calls(op, batch, arch, m, k, n, params[0], memo),
                         illegal_numbers, *(out[c] for c in COLUMNS))
    return {c: v[:count] for c, v in out.items()}


CALL_CYCLES = "call_cycles"
CACHE.add_region(Region(CALL_CYCLES, 64))
MEMO_MOST = 512  # (datapath, tile grid) entries one memo keeps before it starts over


def call_cycle_memo(op: Matmul, arch: Arch) -> dict:
    """The ``memo`` of ``plan.matmul_cycles`` for ``op`` and ``arch``, shared by every search whose
    op differs from ``op`` in its extents (M, K, N) and name alone: a call's cycles depend on its
    tile, its datapath and the op's kernel (dtype, efficiency, overheads, codegen), never on the
    op's extents, and the searches of a sweep's new context rank the same tile grids again. The
    key holds every other field of the op too: it shares less than it could, never wrongly."""
    key = (tuple(getattr(op, f.name) for f in fields(op) if f.name not in ("m", "k", "n", "name")), repr(arch))
    memo = CACHE.get(CALL_CYCLES, key)
    if memo is None or len(memo) > MEMO_MOST:
        memo = {}
        CACHE.put(CALL_CYCLES, key, memo)
    return memo


def _modelled_calls(op: Matmul, batch: StructureBatch, arch: Arch, m, k, n, ip, memo: dict | None = None) -> tuple:
    """A call's cycles and its conversion's per (structure, tile) from the kernel model, as
    ``plan._core_cycles`` prices them (the compiled loop reads them when ``ip[I_MODELLED]``); empty
    arrays where the arch's datapaths have no model (the loop prices calls itself)."""
    if not all(modelled(arch, key) for key in set(batch.keys)):
        empty = np.zeros((1, 1))
        return empty, empty
    ip[K.I_MODELLED] = 1
    shape = (len(batch.structures), np.asarray(m).shape[-1])
    mm = matmul_cycles(op, batch.keys, arch, m, k, n, memo=memo)
    conv = (matmul_cycles(op, batch.keys, arch, m, k, n, conversion=True, memo=memo) - mm
            if np.any(batch.conv_cycles_per_elem) else 0 * mm)
    return (np.ascontiguousarray(np.broadcast_to(mm, shape), np.float64),
            np.ascontiguousarray(np.broadcast_to(conv, shape), np.float64))


def _parameters(op: Matmul, batch: StructureBatch, arch: Arch) -> tuple:
    """The kernel's flat parameter arrays (names in ``fastsim.kernels.closed_form``): the batch's and
    the arch's part made once per batch (``_batch_parameters``), the op's set here."""
    base_ip, base_fp, tail = _batch_parameters(batch, arch)
    ip, fp = base_ip.copy(), base_fp.copy()
    l2 = batch.mapping.l2
    for index, value in ((K.I_M, op.m), (K.I_K, op.k), (K.I_N, op.n), (K.I_A_CHIP, op.a_on_chip),
                         (K.I_C_CHIP, op.c_on_chip), (K.I_RES_A, "a" in l2 and not op.a_on_chip),
                         (K.I_OVERHEAD, op.kernel_overhead_cycles), (K.I_WINDOW, op.onchip_window_bytes != 0),
                         (K.I_C_HANDOFF, op.c_handoff)):
        ip[index] = value
    for index, value in ((K.F_A_EB, op.a_elem_bytes), (K.F_B_EB, op.b_elem_bytes), (K.F_C_EB, op.c_elem_bytes),
                         (K.F_MACS_SCALE, op.macs_scale), (K.F_CAST_CPW, op.cast_cycles_per_weight),
                         (K.F_PJ_MAC, arch.pj_per_mac.get(op.dtype, 0.0)),
                         (K.F_WINDOW_BYTES, whole_words(op.onchip_window_bytes) if op.onchip_window_bytes else 0)):
        fp[index] = value
    rates = {key: (arch.macs_per_cycle[key] * (op.kernel_efficiency or arch.efficiency(key)),
                   float(arch.call_cycles(key)), float(arch.block_cycles(key))) for key in set(batch.keys)}
    dp = np.array([rates[key] for key in batch.keys])  # a batch's structures share a datapath or two
    instructions, dims, shape, *columns = tail
    return (ip, fp, instructions, dims, shape, dp, *columns)


def _batch_parameters(batch: StructureBatch, arch: Arch) -> tuple:
    """The parameters that depend on the batch and the arch alone, kept on the batch: a sweep ranks
    the same cached batches for every new op shape, ~30 searches per decode point."""
    kept = batch.__dict__.get("_ranking_parameters")
    if kept is not None and kept[0] == repr(arch):
        return kept[1]
    mp = batch.mapping
    ip = np.zeros(K.N_IP, np.int64)
    for index, value in ((K.I_STATIC_B, batch.static_b), (K.I_FLOW, FLOWS[mp.dataflow]),
                         (K.I_ORDER_M, mp.order == "m"), (K.I_RES_B, "b" in mp.l2), (K.I_L2_A, "a" in mp.l2),
                         (K.I_L2_B, "b" in mp.l2), (K.I_ITMAX, arch.bd_iterations_max),
                         (K.I_PER_BD, arch.bd_chain_cycles + arch.lock_acquire_cycles + arch.lock_release_cycles),
                         (K.I_MEM_BDS, arch.mem.bd_count), (K.I_MEM_MM2S, arch.mem.mm2s_channels),
                         (K.I_MEM_S2MM, arch.mem.s2mm_channels), (K.I_PORTS_DOWN, arch.stream_ports_down),
                         (K.I_PORTS_UP, arch.stream_ports_up), (K.I_MEM_LOCKS, arch.mem.lock_count),
                         (K.I_BUFFERS, mp.buffers), (K.I_K_PANEL, mp.k_panel), (K.I_C_BUFFERS, mp.c_buffers),
                         (K.I_DDR_UNITS, to_units(arch.ddr_bytes_per_cycle)),
                         (K.I_ACQ, arch.lock_acquire_cycles), (K.I_REL, arch.lock_release_cycles)):
        ip[index] = value
    e = arch.pj_per_byte
    fp = np.zeros(K.N_FP)
    for index, value in ((K.F_CORE_MEM, arch.compute.memory_bytes), (K.F_MEM_MEM, arch.mem.memory_bytes),
                         (K.F_LOAD, arch.core_load_bytes_per_cycle), (K.F_STORE, arch.core_store_bytes_per_cycle),
                         (K.F_ACC, arch.accumulate_elems_per_cycle), (K.F_STREAM, arch.stream_bytes_per_cycle),
                         (K.F_DDR, arch.ddr_bytes_per_cycle),
                         (K.F_E_DDR, e.get("ddr", 0.0)), (K.F_E_SHIM, e.get("shim_mem", 0.0)),
                         (K.F_E_MC, e.get("mem_compute", 0.0)), (K.F_E_CC, e.get("compute_compute", 0.0)),
                         (K.F_MEM_LEN, 2 ** arch.mem.bd_length_bits), (K.F_CORE_LEN, 2 ** arch.compute.bd_length_bits),
                         (K.F_RUN, bound_run_bytes(arch))):
        fp[index] = value
    dims = np.concatenate([batch.cols, batch.groups, batch.pm, batch.pn, batch.pk], axis=1).astype(np.int64)
    shape = np.array([arch.mmul_shapes.get(key, (1, 1, 1)) for key in batch.keys], np.int64)
    instructions = np.array([LAYER_INSTRUCTIONS, REPEAT_INSTRUCTIONS], np.int64)
    tail = (instructions, np.ascontiguousarray(dims), shape, np.ascontiguousarray(batch.hosted_a, np.int64),
            np.ascontiguousarray(batch.hosted_b, np.int64), np.ascontiguousarray(batch.read_rate),
            np.ascontiguousarray(batch.write_rate), np.ascontiguousarray(write_most(arch, batch).reshape(-1)),
            np.ascontiguousarray(batch.conv_cycles_per_elem.reshape(-1)))
    # shared by every search of the batch and never written (``_parameters`` copies ip and fp); not
    # made read-only here: the compiled loop's signature follows each array's flags, as before
    object.__setattr__(batch, "_ranking_parameters", (repr(arch), (ip, fp, tail)))
    return ip, fp, tail
