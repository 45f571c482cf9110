"""SCALE-Sim v3's memory models, request by request, batched over layers x mesh configs.

Per demand row (one mesh cycle) the ifmap and filter read buffers and the ofmap write buffer are
served at ``cycle = row + stalls so far``; the row adds max(ifmap, filter, ofmap stall) to the
stalls. With a bandwidth limit (USER mode) the read buffers are SCALE-Sim's line-hashed double
buffers; without one (CALC mode, ``X_ESTIMATE``) its estimate buffers, and the ofmap drains
``cols`` words per cycle (``scalesim_buffers.py``). Addresses are generated on the fly from the
layer geometry (``scalesim_addresses.py``), walking SCALE-Sim's demand matrices fold by fold
without building them.

``tests/scalesim_memory_reference.py`` builds every matrix in full and runs the buffers with Python
sets; property tests demand equality with this kernel, golden tests with SCALE-Sim itself.
"""
from ._jit import inline, kernel
from .scalesim_addresses import (G_CHANNELS, G_FILTER_H, G_FILTER_W, G_IFMAP_H, G_IFMAP_W, G_K, G_M, G_N,
                                 G_OFMAP_H, G_OFMAP_W, G_STRIDE, G_STRIDE_W, NULL, build_lines, cdiv, count_valid,
                                 filter_addr, fill_ifmap_tables, ifmap_addr, prefetch_elems)
from .scalesim_buffers import (EB_ACCESSES, EB_DRAM_FIRST, EB_DRAM_LAST, EB_ERROR, EB_PEAK, RB_ACCESSES, RB_FIRST,
                               RB_LAST, RB_LINES, RB_MISSING, RB_N_ACTIVE, RB_NCOL, WB_ACCESSES, WB_DRAIN_END,
                               WB_DRAIN_LINE, WB_FIRST, WB_LAST, WB_LINES, eb_finish, eb_init, rb_init, serve_read,
                               wb_drain, wb_flush, wb_init, wb_write)
from .systolic import DF_OS, DF_WS

# per-item input columns
X_IFMAP_H = 0
X_IFMAP_W = 1
X_FILTER_H = 2
X_FILTER_W = 3
X_CHANNELS = 4
X_FILTERS = 5
X_STRIDE = 6  # rows
X_ROWS = 7
X_COLS = 8
X_DF = 9  # 0 ws, 1 is, 2 os (as kernels/systolic.py)
X_IFMAP_WORDS = 10
X_FILTER_WORDS = 11
X_OFMAP_WORDS = 12
X_IFMAP_BW = 13
X_FILTER_BW = 14
X_OFMAP_BW = 15
X_STRIDE_W = 16  # columns
X_FOLD_BASE = 17  # where this item's fold start cycles go in `fold_start`
X_ESTIMATE = 18  # 1: SCALE-Sim's CALC mode (estimate read buffers)
X_NCOL = 19

# outputs
Y_STATUS = 0  # 0 ok; 1 a demanded address is not in the operand's prefetch order; 2 an
# estimate-mode prefetch does not fit the cycles it was given (SCALE-Sim fails there)
Y_TOTAL = 1  # SCALE-Sim "Total Cycles": last ofmap row served
Y_STALLS = 2
Y_STALL_IFMAP = 3  # stall cycles by the operand that set the row's stall
Y_STALL_FILTER = 4
Y_STALL_OFMAP = 5
Y_DRAM_IFMAP = 6
Y_DRAM_FILTER = 7
Y_DRAM_OFMAP = 8
Y_IFMAP_START = 9  # DRAM access start/stop cycles (SCALE-Sim's detailed access report)
Y_IFMAP_STOP = 10
Y_FILTER_START = 11
Y_FILTER_STOP = 12
Y_OFMAP_START = 13
Y_OFMAP_STOP = 14
Y_ROWS = 15  # demand rows (compute cycles + 1)
Y_OFMAP_LINES = 16  # ofmap buffer lines written (rows of `fill` in use)
Y_PEAK_IFMAP = 17  # highest DRAM words/cycle of the operand's requests
Y_PEAK_FILTER = 18
Y_PEAK_OFMAP = 19
Y_NCOL = 20

@inline
def _geometry(x, g):
    ofmap_h = cdiv(x[X_IFMAP_H] - x[X_FILTER_H] + x[X_STRIDE], x[X_STRIDE])
    ofmap_w = cdiv(x[X_IFMAP_W] - x[X_FILTER_W] + x[X_STRIDE_W], x[X_STRIDE_W])
    g[G_M] = ofmap_h * ofmap_w
    g[G_K] = x[X_FILTER_H] * x[X_FILTER_W] * x[X_CHANNELS]
    g[G_N] = x[X_FILTERS]
    g[G_OFMAP_W] = ofmap_w
    g[G_IFMAP_H] = x[X_IFMAP_H]
    g[G_IFMAP_W] = x[X_IFMAP_W]
    g[G_FILTER_W] = x[X_FILTER_W]
    g[G_CHANNELS] = x[X_CHANNELS]
    g[G_STRIDE] = x[X_STRIDE]
    g[G_STRIDE_W] = x[X_STRIDE_W]
    g[G_FILTER_H] = x[X_FILTER_H]
    g[G_OFMAP_H] = ofmap_h


@kernel
def memory_batch(inp, out, g, rb, wb, if_starts, if_count, if_lines, fi_starts, fi_count, fi_lines, fill,
                 trace, fold_start, pix, win, eb):
    """inp: int64[n, X_NCOL]; out: int64[n, Y_NCOL]. Scratch, sized for the largest item: g
    (geometry, G_NCOL), rb / wb / eb (read, write, estimate buffer state rows); per operand CSR
    starts and count (address space + 1) and lines (max(prefetch elements, address space)); fill
    int64[ofmap requests + 1, 2] (per ofmap buffer line: words, cycle written to DRAM); pix
    int64[ofmap pixels, 3] and win int64[window, 3] (ifmap address tables). In estimate mode the
    count arrays hold, per address, the set it last joined.
    Outputs beyond ``out``: trace int64[rows, 3] gets the cycle each demand row is served (ifmap,
    filter, ofmap) for SRAM traces of a one-item batch (shape (0, 3) otherwise); fold_start
    int64[sum of folds + 1 per item] gets the cycle each fold starts, stalls included, and last the
    cycle the item ends (the occupancy timeline)."""
    for item in range(inp.shape[0]):
        x = inp[item]
        _geometry(x, g)
        fill_ifmap_tables(g, pix, win)
        m, k, n = g[G_M], g[G_K], g[G_N]
        r, c, df = x[X_ROWS], x[X_COLS], x[X_DF]
        for j in range(Y_NCOL):
            out[item, j] = 0
        if_space = x[X_IFMAP_H] * x[X_IFMAP_W] * x[X_CHANNELS]
        if_per_line = cdiv(x[X_IFMAP_WORDS], 100)
        fi_per_line = cdiv(x[X_FILTER_WORDS], 100)
        estimate = x[X_ESTIMATE] == 1
        if estimate:
            for a in range(if_space):
                if_count[a] = -1
            for a in range(k * n):
                fi_count[a] = -1
            eb_init(eb[0], x[X_IFMAP_WORDS], x[X_IFMAP_BW])
            eb_init(eb[1], x[X_FILTER_WORDS], x[X_FILTER_BW])
            for j in range(RB_NCOL):
                rb[0, j] = 0
                rb[1, j] = 0
        else:
            # line tables are built only for operands that do not fit the active window (the
            # others never miss); filters and non-overlapping conv windows have distinct addresses
            if_unique = ((x[X_STRIDE] >= x[X_FILTER_H] or g[G_OFMAP_H] == 1)
                         and (x[X_STRIDE_W] >= x[X_FILTER_W] or g[G_OFMAP_W] == 1))
            for op in range(2):
                words = x[X_IFMAP_WORDS] if op == 0 else x[X_FILTER_WORDS]
                per_line = if_per_line if op == 0 else fi_per_line
                valid = count_valid(g, op)
                unique = op == 1 or if_unique
                if valid // per_line + 1 <= cdiv(cdiv(words, 2), per_line):  # all lines active: resident
                    elems = prefetch_elems(g, df, op, r, c)
                elif op == 0:
                    elems = build_lines(g, pix, win, df, 0, r, c, per_line, unique, if_starts, if_count, if_lines,
                                        if_space)
                else:
                    elems = build_lines(g, pix, win, df, 1, r, c, per_line, unique, fi_starts, fi_count, fi_lines,
                                        k * n)
                rb_init(rb[op], words, x[X_IFMAP_BW] if op == 0 else x[X_FILTER_BW], per_line, valid, elems,
                        1 if unique else 0)
        wb_init(wb, x[X_OFMAP_WORDS], x[X_OFMAP_BW])
        if df == DF_OS:
            nc, nr, t = cdiv(n, c), cdiv(m, r), k
            fold_len = k + r + c - 2
        elif df == DF_WS:
            nc, nr, t = cdiv(n, c), cdiv(k, r), m
            fold_len = 2 * r + c + m - 2
        else:
            nc, nr, t = cdiv(m, c), cdiv(k, r), n
            fold_len = 2 * r + c + n - 2
        stalls = 0
        total = 0
        done = 0
        row = 0
        status = 0
        base = x[X_FOLD_BASE]
        # an operand whose lines all fit the active window never misses: skip its requests
        if_resident = not estimate and rb[0, RB_N_ACTIVE] == rb[0, RB_LINES]
        fi_resident = not estimate and rb[1, RB_N_ACTIVE] == rb[1, RB_LINES]
        for fc in range(nc):
            for fr in range(nr):
                fold_start[base + fc * nr + fr] = row + stalls
                for q in range(fold_len):
                    cycle = row + stalls
                    row += 1
                    # ---- ifmap reads
                    off = 1
                    if if_resident:
                        pass
                    elif df == DF_OS:  # skewed over R columns: IF[fr*R + col, q - col]
                        for col in range(max(0, q - t + 1), min(r - 1, q) + 1):
                            s = fr * r + col
                            if s < m:
                                a = ifmap_addr(g, pix, win, s, q - col)
                                if a != NULL:
                                    off = serve_read(estimate, rb[0], eb[0], if_starts, if_lines, if_count, a, cycle, off)
                    elif df == DF_WS:  # after R idle rows, skewed: IF[q - col - R, fr*R + col]
                        for col in range(max(0, q - r - t + 1), min(r - 1, q - r) + 1):
                            s = fr * r + col
                            if s < k:
                                a = ifmap_addr(g, pix, win, q - col - r, s)
                                if a != NULL:
                                    off = serve_read(estimate, rb[0], eb[0], if_starts, if_lines, if_count, a, cycle, off)
                    elif q < r:  # is: stationary block, rows flipped: IF[fc*C + col, fr*R + R-1-q]
                        s = fr * r + r - 1 - q
                        if s < k:
                            for col in range(c):
                                p = fc * c + col
                                if p < m:
                                    a = ifmap_addr(g, pix, win, p, s)
                                    if a != NULL:
                                        off = serve_read(estimate, rb[0], eb[0], if_starts, if_lines, if_count, a, cycle, off)
                    s_if = off - 1
                    # ---- filter reads
                    off = 1
                    if fi_resident:
                        pass
                    elif df == DF_OS:  # skewed over C columns: FI[q - col, fc*C + col]
                        for col in range(max(0, q - t + 1), min(c - 1, q) + 1):
                            s = fc * c + col
                            if s < n:
                                off = serve_read(estimate, rb[1], eb[1], fi_starts, fi_lines, fi_count, filter_addr(g, q - col, s), cycle, off)
                    elif df == DF_WS:  # stationary block, rows flipped: FI[fr*R + R-1-q, fc*C + col]
                        if q < r:
                            s = fr * r + r - 1 - q
                            if s < k:
                                for col in range(c):
                                    p = fc * c + col
                                    if p < n:
                                        off = serve_read(estimate, rb[1], eb[1], fi_starts, fi_lines, fi_count, filter_addr(g, s, p), cycle, off)
                    else:  # is: after R idle rows, skewed over R columns: FI[fr*R + col, q - col - R]
                        for col in range(max(0, q - r - t + 1), min(r - 1, q - r) + 1):
                            s = fr * r + col
                            if s < k:
                                off = serve_read(estimate, rb[1], eb[1], fi_starts, fi_lines, fi_count, filter_addr(g, s, q - col - r), cycle, off)
                    s_fi = off - 1
                    if rb[0, RB_MISSING] or rb[1, RB_MISSING]:  # (always 0 in estimate mode)
                        status = 1
                        break
                    # ---- ofmap writes
                    current = cycle
                    if df == DF_OS:  # after T-1 rows, the flipped R x C block, skewed over C
                        for col in range(max(0, q - (t - 1) - (r - 1)), min(c - 1, q - (t - 1)) + 1):
                            rr = r - 1 - (q - col - (t - 1))
                            i = fr * r + rr
                            j = fc * c + col
                            if i < m and j < n:
                                current = wb_write(wb, fill, current)
                    else:  # ws/is: after 2R-1 rows, T rows skewed over C
                        lead = 2 * r - 1
                        for col in range(max(0, q - lead - t + 1), min(c - 1, q - lead) + 1):
                            if fc * c + col < (n if df == DF_WS else m):
                                current = wb_write(wb, fill, current)
                    done = current
                    if done > total:
                        total = done
                    s_of = done - cycle
                    if trace.shape[0] >= row:
                        trace[row - 1, 0] = cycle + s_if + 1
                        trace[row - 1, 1] = cycle + s_fi + 1
                        trace[row - 1, 2] = done
                    stall = max(s_if, s_fi, s_of)
                    if stall > 0:
                        if s_if == stall:
                            out[item, Y_STALL_IFMAP] += stall
                        elif s_fi == stall:
                            out[item, Y_STALL_FILTER] += stall
                        else:
                            out[item, Y_STALL_OFMAP] += stall
                    stalls += stall
                if status:
                    break
            if status:
                break
        fold_start[base + nc * nr] = row + stalls
        # drain what the ofmap buffer still holds, one half after another
        wb_flush(wb, fill)
        cyc = done
        while wb[WB_DRAIN_LINE] < wb[WB_LINES]:
            wb[WB_DRAIN_END] = wb_drain(wb, fill, cyc)
            cyc = wb[WB_DRAIN_END] + 1
        if estimate:
            eb_finish(eb[0])
            eb_finish(eb[1])
            if eb[0, EB_ERROR] or eb[1, EB_ERROR]:
                status = 2
            for op in range(2):
                rb[op, RB_ACCESSES] = eb[op, EB_ACCESSES]
                rb[op, RB_FIRST] = eb[op, EB_DRAM_FIRST]
                rb[op, RB_LAST] = eb[op, EB_DRAM_LAST]
            out[item, Y_PEAK_IFMAP] = eb[0, EB_PEAK]
            out[item, Y_PEAK_FILTER] = eb[1, EB_PEAK]
        else:  # each prefetch or drain moves one line per cycle
            out[item, Y_PEAK_IFMAP] = x[X_IFMAP_BW] if rb[0, RB_ACCESSES] > 0 else 0
            out[item, Y_PEAK_FILTER] = x[X_FILTER_BW] if rb[1, RB_ACCESSES] > 0 else 0
        out[item, Y_PEAK_OFMAP] = x[X_OFMAP_BW] if wb[WB_ACCESSES] > 0 else 0
        out[item, Y_STATUS] = status
        out[item, Y_TOTAL] = total
        out[item, Y_STALLS] = stalls
        out[item, Y_DRAM_IFMAP] = rb[0, RB_ACCESSES]
        out[item, Y_DRAM_FILTER] = rb[1, RB_ACCESSES]
        out[item, Y_DRAM_OFMAP] = wb[WB_ACCESSES]
        out[item, Y_IFMAP_START] = rb[0, RB_FIRST]
        out[item, Y_IFMAP_STOP] = rb[0, RB_LAST]
        out[item, Y_FILTER_START] = rb[1, RB_FIRST]
        out[item, Y_FILTER_STOP] = rb[1, RB_LAST]
        out[item, Y_OFMAP_START] = wb[WB_FIRST]
        out[item, Y_OFMAP_STOP] = wb[WB_LAST]
        out[item, Y_ROWS] = row
        out[item, Y_OFMAP_LINES] = wb[WB_LINES]
