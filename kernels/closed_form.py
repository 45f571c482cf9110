"""The mapping search's closed form over every (structure, tile) candidate in one compiled loop.

``fastsim.mapping.plan.evaluate`` is the reference: numpy over (structures, tiles) arrays, every
quantity a plan reports. A search needs six of them per candidate (lower bound, energy, the first
violated limit, DMA transfers, whether its L2 choice re-sends anything, its control instructions
of a set-up and of a re-run: the last from ``plan.control_counts_of``) over 10^5-10^6 candidates; numpy spent most of a cold LLM
pass's closed-form time allocating temporaries for the others. This kernel computes just those
six, candidate by candidate, with the same operations in the same order, so its results are
bit-identical to the reference (property-tested in
``tests/test_closed_form_kernel.py``). Whatever the reference grows, this loop must grow too: the
test fails otherwise.

Parameters arrive in flat arrays indexed by the names below (``fastsim.mapping.candidates`` packs
them); a structure's datapath constants come per structure.
"""
import math

import numpy as np

from ._jit import kernel
from .layout import UNITS_PER_BYTE

# integer parameters (``ip``)
(I_M, I_K, I_N, I_A_CHIP, I_C_CHIP, I_STATIC_B, I_FLOW, I_ORDER_M, I_RES_A, I_RES_B, I_L2_A, I_L2_B,
 I_OVERHEAD, I_ITMAX, I_PER_BD, I_MEM_BDS, I_MEM_MM2S, I_MEM_S2MM, I_PORTS_DOWN, I_PORTS_UP, I_MEM_LOCKS,
 I_WINDOW, I_BUFFERS, I_MODELLED, I_DDR_UNITS, I_ACQ, I_REL, I_K_PANEL, I_C_BUFFERS, I_C_HANDOFF, N_IP) = range(31)
# float parameters (``fp``)
(F_A_EB, F_B_EB, F_C_EB, F_MACS_SCALE, F_CAST_CPW, F_CORE_MEM, F_MEM_MEM, F_LOAD, F_STORE, F_ACC, F_STREAM,
 F_DDR, F_PJ_MAC, F_E_DDR, F_E_SHIM, F_E_MC, F_E_CC, F_MEM_LEN, F_CORE_LEN, F_WINDOW_BYTES, F_RUN,
 N_FP) = range(22)
# per structure: its numbers (``dims``), its datapath's intrinsic shape (``shape``) and its MAC rate,
# cycles per call and per output block (``dp``)
S_COLS, S_GROUPS, S_PM, S_PN, S_PK, N_DIMS = range(6)
D_RATE, D_CALL, D_BLOCK, N_DP = range(4)
FLOW_OS, FLOW_WS, FLOW_IS = range(3)
# rows of ``instructions`` (int64[2, N_COUNTS]): runtime-sequence instructions per control count, of a
# set-up and of a re-run (``fastsim.mapping.dispatch.LAYER_INSTRUCTIONS``, ``REPEAT_INSTRUCTIONS``)
(C_SHIM_TASKS, C_TILE_PUSHES, C_SYNCS, C_MEM_BDS, C_MEM_STARTS, C_MEM_LOCKS, C_CORES, N_COUNTS) = range(8)


@kernel
def _cdiv(a, b):
    return -(-a // b)


@kernel
def _words(nbytes):
    return max(4.0, np.ceil(nbytes / 4) * 4)


@kernel
def candidates(ip, fp, instructions, dims, shape, dp, hosted_a, hosted_b, read_rate, write_rate, write_most, conv_cpe, tm, tk, tn,
               keep, model_mm, model_conv, illegal_numbers, out_s, out_t, out_bound, out_energy, out_reason,
               out_transfers, out_layer, out_repeat):
    """Write each kept, useful candidate's structure, tile, lower bound, energy, first violated
    check (-1: legal), transfers and control instructions of a set-up and of a re-run
    (``_control``), in (structure, tile) order; return how many. With
    ``ip[I_MODELLED]`` a call's cycles and its conversion's are the kernel model's, given per
    (structure, tile) in ``model_mm`` and ``model_conv`` (float64[S, T]); otherwise computed here.
    ``write_most`` (float64[S]): the most C bytes per cycle a structure's shim S2MMs write together.
    ``illegal_numbers`` False: an illegal candidate gets its structure, tile and reason only (its
    other columns NaN) and none of the bound's arithmetic, which most candidates would pay for
    nothing: a search that reports no rejected candidate never reads their numbers."""
    big_m, big_k, big_n = ip[I_M], ip[I_K], ip[I_N]
    a_chip, c_chip, static = ip[I_A_CHIP] != 0, ip[I_C_CHIP] != 0, ip[I_STATIC_B] != 0
    flow, order_m, res_a, res_b = ip[I_FLOW], ip[I_ORDER_M] != 0, ip[I_RES_A] != 0, ip[I_RES_B] != 0
    stream, ddr_bpc = fp[F_STREAM], fp[F_DDR]
    per_bd = ip[I_PER_BD]
    count = 0
    for s in range(keep.shape[0]):
        cols, groups, pm, pn, pk = dims[s, S_COLS], dims[s, S_GROUPS], dims[s, S_PM], dims[s, S_PN], dims[s, S_PK]
        ha, hb, sum_a, sum_b, cols_a, cols_b = 0, 0, 0, 0, 0, 0
        for c in range(hosted_a.shape[1]):
            ha, hb = max(ha, hosted_a[s, c]), max(hb, hosted_b[s, c])
            sum_a, sum_b = sum_a + hosted_a[s, c], sum_b + hosted_b[s, c]
            cols_a, cols_b = cols_a + (1 if hosted_a[s, c] > 0 else 0), cols_b + (1 if hosted_b[s, c] > 0 else 0)
        if a_chip:
            cols_a = 0
        c_cols = 0 if c_chip else cols
        per_c = 0.0  # shim write cycles per C byte of a producer: the slowest column's rate
        for c in range(write_rate.shape[1]):
            w = write_rate[s, c]
            if math.isfinite(w):
                per_c = max(per_c, groups / min(w, stream))
        if c_chip:
            per_c = 0.0  # C stays on chip: no shim writes
        for t in range(keep.shape[1]):
            if not keep[s, t]:
                continue
            m, k, n = tm[t], tk[t], tn[t]
            # tiles
            mt, nt, kt = _cdiv(big_m, pm * m), _cdiv(big_n, pn * n), _cdiv(big_k, pk * k)
            reps_a = nt if flow != FLOW_IS else 1
            reps_b = mt if flow != FLOW_WS else 1
            useful = True
            if ip[I_L2_A] != 0:
                useful = useful and reps_a > 1 and not a_chip
            if ip[I_L2_B] != 0:
                useful = useful and reps_b > 1
            if not useful:
                continue
            a_tile, b_tile = _words(m * k * fp[F_A_EB]), _words(k * n * fp[F_B_EB])
            c_tile = _words(m * n * fp[F_C_EB])
            # streams
            part_a, part_b = mt * kt * a_tile, nt * kt * b_tile
            if flow == FLOW_OS and order_m:
                unit_a, units_a, unit_b, units_b = kt * a_tile, mt, part_b, 1
            elif flow == FLOW_OS:
                unit_a, units_a, unit_b, units_b = part_a, 1, kt * b_tile, nt
            else:
                unit_a, units_a, unit_b, units_b = part_a, 1, part_b, 1
            # core memory
            l1_a = kt * a_tile if flow == FLOW_IS else a_tile
            l1_b = kt * b_tile if flow == FLOW_WS else b_tile
            core_a = mt * kt * a_tile * (1 if flow == FLOW_IS else nt)
            core_b = 0.0 if static else nt * kt * b_tile * (1 if flow == FLOW_WS else mt)
            core_c = mt * nt * c_tile
            psum_tile = m * n * 4
            c_held = ip[I_C_BUFFERS] * c_tile
            fixed = max(c_held, 2 * psum_tile) if pk > 1 else c_held
            buffers = ip[I_BUFFERS]
            depth_a, depth_b = buffers, (1 if static else buffers)
            over = fixed + depth_a * l1_a + depth_b * l1_b > fp[F_CORE_MEM]
            if flow == FLOW_IS and over:
                depth_a = 1
            if flow == FLOW_WS and not static and over:
                depth_b = 1
            l1 = fixed + depth_a * l1_a + depth_b * l1_b
            # mem tile
            mdepth_a = (buffers if units_a > 1 else 1) if res_a else buffers
            mdepth_b = (buffers if units_b > 1 else 1) if res_b else buffers
            panel = 1
            if flow == FLOW_OS:
                for d in range(2, ip[I_K_PANEL] + 1):
                    if kt % d == 0:
                        panel = d
            mem_unit_a = unit_a if res_a else l1_a * (1 if a_chip else panel)
            mem_unit_b = unit_b if res_b else l1_b * panel
            chip_a, chip_c = part_a, mt * nt * c_tile
            if ip[I_WINDOW] != 0:
                chip_a = max(min(part_a, fp[F_WINDOW_BYTES]), l1_a)
                chip_c = max(min(chip_c, fp[F_WINDOW_BYTES]), c_tile)
            join = groups * chip_c if c_chip else ip[I_C_BUFFERS] * groups * c_tile
            held_a = chip_a if a_chip else mdepth_a * mem_unit_a
            if ha * held_a + hb * mdepth_b * mem_unit_b + join > fp[F_MEM_MEM]:
                if res_a:
                    mdepth_a = 1
                if res_b:
                    mdepth_b = 1
            held_a = chip_a if a_chip else mdepth_a * mem_unit_a
            l2 = ha * held_a + hb * mdepth_b * mem_unit_b + join
            send_bds_a = _cdiv(reps_a, ip[I_ITMAX]) if res_a else 1
            send_bds_b = _cdiv(reps_b, ip[I_ITMAX]) if res_b else 1
            bds_a = ha if a_chip else ha * mdepth_a * (1 + send_bds_a)
            mem_bds = bds_a + hb * mdepth_b * (1 + send_bds_b) + (1 if c_chip else 2 * ip[I_C_BUFFERS]) * groups
            # the first violated limit, in ``plan.problems`` order
            reason = -1
            if l1 > fp[F_CORE_MEM]:
                reason = 0
            elif l2 > fp[F_MEM_MEM]:
                reason = 1
            elif mem_bds > ip[I_MEM_BDS]:
                reason = 2
            elif max(mem_unit_a, mem_unit_b) / 4 >= fp[F_MEM_LEN]:
                reason = 3
            elif max(l1_a, l1_b) / 4 >= fp[F_CORE_LEN]:
                reason = 4
            elif ha + hb + (0 if c_chip and ip[I_C_HANDOFF] == 0 else 1) > ip[I_MEM_MM2S]:
                reason = 5
            elif (1 if ha > 0 and not a_chip else 0) + (1 if hb > 0 else 0) + groups > ip[I_MEM_S2MM]:
                reason = 6
            elif ha + hb > ip[I_PORTS_DOWN]:
                reason = 7
            elif groups > ip[I_PORTS_UP]:
                reason = 8
            elif 2 * ha * (0 if a_chip else 1) + 2 * hb + 2 * groups * (0 if c_chip else 1) > ip[I_MEM_LOCKS]:
                reason = 9
            elif nt > 1 and static:
                reason = 10
            if reason >= 0 and not illegal_numbers:
                out_s[count], out_t[count], out_reason[count] = s, t, reason
                out_bound[count] = np.nan
                out_energy[count] = np.nan
                out_transfers[count] = np.nan
                out_layer[count] = np.nan
                out_repeat[count] = np.nan
                count += 1
                continue
            # DDR traffic
            a_part = 0.0 if a_chip else part_a * (1 if res_a else reps_a)
            b_part = 0.0 if static else part_b * (1 if res_b else reps_b)
            read = sum_a * a_part + sum_b * b_part
            write = 0.0 if c_chip else cols * groups * core_c
            # core cycles: the microkernel call (``plan._call_cycles``), conversions, partial sums
            if ip[I_MODELLED] != 0:
                mm, conv = model_mm[s, t], model_conv[s, t]
            else:
                r, s_, t_ = shape[s, 0], shape[s, 1], shape[s, 2]
                call_fixed = dp[s, D_CALL] + _cdiv(m, 2 * r) * _cdiv(n, 2 * t_) * dp[s, D_BLOCK]
                macs = np.ceil(float(_cdiv(m, r) * r * (_cdiv(k, s_) * s_) * (_cdiv(n, t_) * t_)) * fp[F_MACS_SCALE])
                kernel_cycles = max(1.0, np.ceil(macs / dp[s, D_RATE] + call_fixed) + ip[I_OVERHEAD])
                mm = (max(kernel_cycles, np.ceil((a_tile + b_tile) / fp[F_LOAD])) + np.ceil(c_tile / fp[F_LOAD])
                      + np.ceil(c_tile / fp[F_STORE]))
                conv = np.ceil((m * k + k * n) * conv_cpe[s])
            cast = np.ceil(k * n * fp[F_CAST_CPW])
            add = np.ceil(m * n / fp[F_ACC]) if pk > 1 else 0
            core_cycles = mt * nt * (kt * (mm + conv + cast) + add)
            # pipeline ends
            call = mm + conv + cast
            c_out = (1 if c_chip else 2) * c_tile / stream
            fill_a = (0 if a_chip else mem_unit_a / stream) + l1_a / stream
            fill_b = 0.0 if static else mem_unit_b / stream + l1_b / stream
            first_call = max(fill_a, fill_b)
            calls = mt * nt * kt
            after_a = mem_unit_a / stream + call * calls / max(core_a / l1_a, 1.0) + c_out
            after_b = mem_unit_b / stream + call * calls / max(core_b / l1_b, 1.0) + c_out
            after_read = _streamed_min(not a_chip, not static, after_a, after_b)
            in_a = (0 if a_chip else mem_unit_a / stream) + kt * a_tile / stream
            in_b = 0.0 if static else mem_unit_b / stream + kt * b_tile / stream
            first_c = max(first_call + kt * call, max(in_a, in_b) + call)
            last_a = (0 if a_chip else ha * mem_unit_a / stream) + l1_a / stream
            last_b = 0.0 if static else hb * mem_unit_b / stream + l1_b / stream
            first_units = (0.0 if a_chip else sum_a * mem_unit_a) + sum_b * mem_unit_b
            l1_in = _streamed_min(not a_chip, not static, l1_a, l1_b)
            all_first = first_units / ddr_bpc + l1_in / stream if first_units > 0 else 0.0
            last_first_call = max(max(last_a, last_b), all_first)
            # bounds: compute, DDR, busiest shim column, busiest DMA channel
            compute = last_first_call + core_cycles + _lock_cycles(ip, flow, static, mt, nt, calls) + c_out
            streamed = (1 if flow != FLOW_IS else 0) + (1 if flow != FLOW_WS else 0)
            lock_call, lock_use = streamed * (ip[I_ACQ] + ip[I_REL]), (streamed - 1) * ip[I_ACQ]
            compute = max(compute, _paced(core_a, l1_a, depth_a, mt * nt * kt, last_first_call, call, c_out, stream,
                                          lock_call, lock_use))
            compute = max(compute, _paced(core_b, l1_b, depth_b, mt * nt * kt, last_first_call, call, c_out, stream,
                                          lock_call, lock_use))
            ddr = max((read + write) / ddr_bpc,
                      max(read / ddr_bpc + after_read, first_c + write / ddr_bpc if write > 0 else 0.0))
            if fp[F_RUN] > 0:
                ddr = max(ddr, _ddr_runs(ip, fp, flow, res_a, res_b, cols_a, cols_b, c_cols, groups, mt, nt, kt,
                                         a_tile, b_tile, c_tile, part_a, part_b, unit_a, unit_b, a_part, b_part, read,
                                         write, write_most[s] * (0.0 if c_chip else 1.0), after_read, first_c))
            col_read = 0.0
            for c in range(hosted_a.shape[1]):
                col_read = max(col_read, hosted_a[s, c] / read_rate[s, c] * a_part
                               + hosted_b[s, c] / read_rate[s, c] * b_part)
            col_write = core_c * per_c
            shim = max(col_read + after_read if col_read > 0 else 0.0, first_c + col_write if col_write > 0 else 0.0)
            mem_out_a = units_a * send_bds_a if res_a else core_a / mem_unit_a
            mem_out_b = units_b * send_bds_b if res_b else core_b / mem_unit_b
            drain = 0 if c_chip else 1
            unit_in_a = 0.0 if a_chip else mem_unit_a / stream
            last_call = call + c_out
            dma = _channel(core_a, core_a / l1_a, unit_in_a, last_call, stream, per_bd)
            dma = max(dma, _channel(core_c, mt * nt, first_c, c_out - c_tile / stream, stream, per_bd))
            dma = max(dma, _channel(core_a, mem_out_a, unit_in_a, last_call, stream, per_bd))
            dma = max(dma, _channel(drain * groups * core_c, drain * groups * mt * nt, first_c + c_tile / stream, 0.0,
                                    stream, per_bd))
            dma = max(dma, _channel(ha * a_part, ha * a_part / mem_unit_a, 0.0, after_a, stream, per_bd))
            if not static:
                unit_in_b = mem_unit_b / stream
                dma = max(dma, _channel(core_b, core_b / l1_b, unit_in_b, last_call, stream, per_bd))
                dma = max(dma, _channel(core_b, mem_out_b, unit_in_b, last_call, stream, per_bd))
                dma = max(dma, _channel(hb * b_part, hb * b_part / mem_unit_b, 0.0, after_b, stream, per_bd))
            bound = max(max(max(compute, ddr), shim), dma)
            # energy (ranks candidates whose bounds tie)
            padded_macs = (pm * m * mt) * (pk * k * kt) * (pn * n * nt)
            psum_bytes = (pk - 1) * (cols * groups) * mt * nt * psum_tile
            mem_compute = cols * (groups * pk) * (core_a + core_b) + write
            energy = (padded_macs * fp[F_MACS_SCALE] * fp[F_PJ_MAC] + (read + write) * fp[F_E_DDR]
                      + (read + write) * fp[F_E_SHIM] + mem_compute * fp[F_E_MC] + psum_bytes * fp[F_E_CC])
            out_s[count], out_t[count] = s, t
            out_bound[count], out_energy[count], out_reason[count] = bound, energy, reason
            out_transfers[count] = core_a / l1_a + core_b / l1_b + mt * nt
            out_layer[count], out_repeat[count] = _control(instructions, a_chip, c_chip, ip[I_C_BUFFERS], cols, groups,
                                                           pk, sum_a, sum_b, cols_a, cols_b, mdepth_a, mdepth_b,
                                                           send_bds_a, send_bds_b)
            count += 1
    return count


@kernel
def _control(instructions, a_chip, c_chip, c_buffers, cols, groups, pk, parts_a, parts_b, cols_a, cols_b, depth_a,
             depth_b, send_bds_a, send_bds_b):
    """The candidate's control counts (``plan.control_counts_of``) as the instructions of a set-up
    and of a re-run (``dispatch.layer_instructions``, ``repeat_instructions``); a search weighs them
    (``candidates.weighed_control``). ``cols_a`` is 0 for an on-chip A."""
    shim_tasks = cols_a + cols_b + (0 if c_chip else cols)
    tile_pushes = (parts_a if a_chip else 0) + (cols * groups if c_chip else 0)
    syncs = cols * (groups if c_chip else 1)
    mem_bds = ((parts_a if a_chip else parts_a * depth_a * (1 + send_bds_a))
               + parts_b * depth_b * (1 + send_bds_b) + (1 if c_chip else 2 * c_buffers) * cols * groups)
    mem_starts = (0 if a_chip else cols_a + parts_a) + cols_b + parts_b + (0 if c_chip else 1) * cols * (groups + 1)
    mem_locks = (0 if a_chip else 2 * parts_a) + 2 * parts_b + (0 if c_chip else 2) * cols * groups
    cores = cols * groups * pk
    layer = _instructions(instructions, 0, shim_tasks, tile_pushes, syncs, mem_bds, mem_starts, mem_locks, cores)
    repeat = _instructions(instructions, 1, shim_tasks, tile_pushes, syncs, mem_bds, mem_starts, mem_locks, cores)
    return layer, repeat


@kernel
def _instructions(instructions, row, shim_tasks, tile_pushes, syncs, mem_bds, mem_starts, mem_locks, cores):
    """One row of ``instructions`` (per count) times the counts: no array per candidate."""
    per = instructions[row]
    return (per[C_SHIM_TASKS] * shim_tasks + per[C_TILE_PUSHES] * tile_pushes + per[C_SYNCS] * syncs
            + per[C_MEM_BDS] * mem_bds + per[C_MEM_STARTS] * mem_starts + per[C_MEM_LOCKS] * mem_locks
            + per[C_CORES] * cores)


@kernel
def _ddr_runs(ip, fp, flow, res_a, res_b, cols_a, cols_b, c_cols, groups, mt, nt, kt, a_tile, b_tile, c_tile, part_a,
              part_b, unit_a, unit_b, a_part, b_part, read, write, write_most, after_read, first_c):
    """The DDR bound with a cost per run (``plan._ddr_bound``): every shim BD's bytes and runs at
    the rate the DDR serves both; after the last read only C writes use it."""
    run = fp[F_RUN]
    rate = (ip[I_DDR_UNITS] + (cols_a + cols_b + c_cols)) / UNITS_PER_BYTE
    piece_a = unit_a if res_a else part_a if flow == FLOW_WS else kt * a_tile
    piece_b = unit_b if res_b else part_b if flow == FLOW_IS else kt * b_tile
    read_load = read + run * (cols_a * (a_part / piece_a) + cols_b * (b_part / piece_b))
    write_load = write + run * (c_cols * (mt * nt))
    per_write = 1 + run / (groups * c_tile)
    tail = max(0.0, 1 - write_most * per_write / rate)
    return max((read_load + write_load) / rate + after_read * tail,
               max(read_load / rate + after_read, first_c + write_load / rate if write > 0 else 0.0))


@kernel
def _streamed_min(a_streams, b_streams, a, b):
    """The smaller of ``a`` and ``b`` over the operands that stream from DDR (0 when neither does)."""
    if a_streams and b_streams:
        return min(a, b)
    if a_streams:
        return a
    if b_streams:
        return b
    return 0.0


@kernel
def _lock_cycles(ip, flow, static, mt, nt, calls):
    """The last core's lock latencies after its first call starts (``plan._lock_cycles``)."""
    acq, rel = ip[I_ACQ], ip[I_REL]
    streamed = (1 if flow != FLOW_IS else 0) + (1 if flow != FLOW_WS else 0)
    held = (0 if static else nt) if flow == FLOW_WS else mt if flow == FLOW_IS else 0
    before = streamed * acq + acq + (acq if held > 0 else 0)
    return calls * streamed * (acq + rel) + mt * nt * (acq + rel) + held * (acq + rel) - before


@kernel
def _paced(moved, size, depth, calls, start, call, c_out, stream, lock_call, lock_use):
    """The last core's waits for one operand's L1 buffers (``plan._compute_bound``)."""
    n = moved / size
    uses = (call + lock_call) * calls / max(n, 1) - lock_use
    xfer = size / stream
    waits = np.floor((n - 1) / depth)
    bound = 0.0
    if n >= 1:
        bound = start + uses + waits * xfer + (n - 1 - waits * (depth - 1)) * uses + c_out
    if n > depth:
        bound = max(bound, start + uses + (n - depth) * xfer + uses + c_out)
    return bound


@kernel
def _channel(nbytes, count, before, after, stream, per_bd):
    """One DMA channel's cycles: it cannot start before ``before``, moves its bytes at the stream
    rate, pays BD chaining and locks per transfer, and ``after`` follows its last buffer."""
    if not nbytes > 0:
        return 0.0
    return before + nbytes / stream + per_bd * count + after
