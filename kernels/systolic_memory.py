"""SCALE-Sim v3's bandwidth-limited memory model (USER mode), request by request, batched over
layers x mesh configs.

Per demand row (one mesh cycle) the ifmap and filter read buffers and the ofmap write buffer are
served at ``cycle = row + stalls so far``; the row adds max(ifmap, filter, ofmap stall) to the
stalls. Read buffers cut their prefetch order into lines of ceil(words / 100) requests and hold a
window of active lines; a request outside the window slides it by the prefetch lines, each slide
costing one DRAM line per cycle (SCALE-Sim's quirks, such as a miss moving the offset backwards,
are kept: the goal is its numbers). The write buffer fills lines of ``bandwidth`` words and drains
half the SRAM when the other half is full.

Without a bandwidth limit (SCALE-Sim's CALC mode, ``X_ESTIMATE``) the read buffers are SCALE-Sim's
estimate buffers instead: every request hits, and the distinct addresses, grouped in sets of
floor(words / 100) in demand order, schedule prefetches whose bandwidth is what the traffic needs
(the DRAM timing, traffic and peak rates of that mode); the ofmap drains ``cols`` words per cycle.

Addresses are generated on the fly from the layer geometry (SCALE-Sim materialises the operand,
prefetch and demand matrices); which lines hold an address is a CSR table built from the prefetch
order. ``tests/scalesim_memory_reference.py`` builds every matrix in full and runs the buffers
with Python sets; property tests demand equality with this kernel.
"""
from ._jit import inline, kernel

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

DF_WS = 0
DF_IS = 1
DF_OS = 2

# geometry vector
G_M = 0
G_K = 1
G_N = 2
G_OFMAP_W = 3
G_IFMAP_H = 4
G_IFMAP_W = 5
G_FILTER_W = 6
G_CHANNELS = 7
G_STRIDE = 8
G_STRIDE_W = 9
G_NCOL = 10

# read-buffer state
RB_BW = 0
RB_ACTIVE = 1  # active half, words
RB_PREFETCH = 2
RB_LINES = 3  # hashed lines
RB_N_ACTIVE = 4
RB_N_PREFETCH = 5
RB_WIN_START = 6
RB_WIN_END = 7
RB_LAST = 8  # cycle the last prefetch completes
RB_ACCESSES = 9
RB_FETCH_ROWS = 10
RB_FIRST = 11
RB_MISSING = 12  # set when a demanded address is not in the prefetch order
RB_NCOL = 13

# write-buffer state
WB_BW = 0
WB_TOTAL = 1
WB_DRAIN = 2
WB_FREE = 3
WB_LINE_IDX = 4
WB_LINES = 5
WB_DRAIN_LINE = 6
WB_DRAIN_END = 7
WB_ACCESSES = 8
WB_FIRST = 9
WB_LAST = 10
WB_NCOL = 11

NULL = -1
READ_LATENCY = 1  # SCALE-Sim's DRAM read port


@inline
def _cdiv(a, b):
    return (a + b - 1) // b


@kernel
def _fill_ifmap_tables(g, pix, win):
    """Per ofmap pixel its window origin (row, col, base address) and per window position its
    offset (row, col, address): ifmap addresses then need no divisions in the request loops."""
    for i in range(g[G_M]):
        o_row = i // g[G_OFMAP_W]
        o_col = i - o_row * g[G_OFMAP_W]
        pix[i, 0] = o_row * g[G_STRIDE]
        pix[i, 1] = o_col * g[G_STRIDE_W]
        pix[i, 2] = (pix[i, 0] * g[G_IFMAP_W] + pix[i, 1]) * g[G_CHANNELS]
    span = g[G_FILTER_W] * g[G_CHANNELS]
    for j in range(g[G_K]):
        c_row = j // span
        rest = j - c_row * span
        c_col = rest // g[G_CHANNELS]
        win[j, 0] = c_row
        win[j, 1] = c_col
        win[j, 2] = (c_row * g[G_IFMAP_W] + c_col) * g[G_CHANNELS] + rest - c_col * g[G_CHANNELS]


@inline
def ifmap_addr(g, pix, win, i, j):
    """Ifmap element (ofmap pixel i, window position j), relative to the ifmap offset; -1 where
    the window runs off the ifmap."""
    if pix[i, 0] + win[j, 0] < g[G_IFMAP_H] and pix[i, 1] + win[j, 1] < g[G_IFMAP_W]:
        return pix[i, 2] + win[j, 2]
    return NULL


@inline
def filter_addr(g, i, j):
    """Filter element (window position i, filter j)."""
    return j * g[G_K] + i


@inline
def ofmap_addr(g, i, j):
    return g[G_N] * i + j


@inline
def _prefetch_shape(g, df, operand, r, c):
    """(blocks, rows per block, width, diagonal rollout) of an operand's prefetch matrix."""
    m, k, n = g[G_M], g[G_K], g[G_N]
    if df == DF_OS:
        if operand == 0:
            return _cdiv(m, r), k, r, True
        return _cdiv(n, c), k, c, True
    if df == DF_WS:
        if operand == 0:
            return _cdiv(k, r), m, r, True
        return _cdiv(n, c), k, c, False
    if operand == 0:
        return _cdiv(m, c), k, c, False
    return _cdiv(k, r), n, r, True


@inline
def _prefetch_elem(g, pix, win, df, operand, width, row, brows, col):
    """Element (row, col) of the prefetch matrix: blocks of operand columns padded to `width`."""
    b = row // brows
    t = row - b * brows
    s = b * width + col
    m, k, n = g[G_M], g[G_K], g[G_N]
    if df == DF_OS:
        if operand == 0:
            return ifmap_addr(g, pix, win, s, t) if s < m else NULL
        return filter_addr(g, t, s) if s < n else NULL
    if df == DF_WS:
        if operand == 0:
            return ifmap_addr(g, pix, win, t, s) if s < k else NULL
        return filter_addr(g, t, s) if s < n else NULL
    if operand == 0:
        return ifmap_addr(g, pix, win, s, t) if s < m else NULL
    return filter_addr(g, s, t) if s < k else NULL


@inline
def _hash_one(addr, pass_no, count, starts, lines, line):
    """Pass 0 counts the address; pass 1 appends the current line id to its CSR list."""
    if pass_no == 0:
        starts[addr + 1] += 1
    else:
        lines[starts[addr] + count[addr]] = line
        count[addr] += 1


@kernel
def _build_lines(g, pix, win, df, operand, r, c, per_line, starts, count, lines, addr_space):
    """CSR table addr -> ids of the hashed lines holding it (sorted), in two passes over the
    prefetch order. Returns (number of lines, prefetch elements incl. nulls)."""
    blocks, brows, width, rollout = _prefetch_shape(g, df, operand, r, c)
    rows = blocks * brows
    for a in range(addr_space + 1):
        starts[a] = 0
        count[a] = 0
    n_lines = 0
    for pass_no in range(2):
        valid = 0
        if rollout:
            for d in range(rows + width):
                top = min(d, rows - 1)
                bottom = max(0, d - width + 1)
                for row in range(top, bottom - 1, -1):
                    addr = _prefetch_elem(g, pix, win, df, operand, width, row, brows, d - row)
                    if addr != NULL:
                        _hash_one(addr, pass_no, count, starts, lines, valid // per_line)
                        valid += 1
        else:
            for row in range(rows):
                for col in range(width):
                    addr = _prefetch_elem(g, pix, win, df, operand, width, row, brows, col)
                    if addr != NULL:
                        _hash_one(addr, pass_no, count, starts, lines, valid // per_line)
                        valid += 1
        if pass_no == 0:
            for a in range(addr_space):
                starts[a + 1] += starts[a]
        n_lines = valid // per_line + 1
    return n_lines, rows * width


@inline
def _in_window(addr, starts, lines, win_start, win_end):
    lo = starts[addr]
    hi = starts[addr + 1]
    if lo == hi:
        return False
    if win_start < win_end:
        a, b = lo, hi  # first line id >= win_start
        while a < b:
            mid = (a + b) // 2
            if lines[mid] < win_start:
                a = mid + 1
            else:
                b = mid
        return a < hi and lines[a] < win_end
    return lines[hi - 1] >= win_start or lines[lo] < win_end


@inline
def _rb_init(st, words, bw, per_line, n_lines, prefetch_elems):
    st[RB_BW] = bw
    st[RB_ACTIVE] = _cdiv(words, 2)  # SCALE-Sim: ceil(words * 0.5)
    st[RB_PREFETCH] = words - st[RB_ACTIVE]
    st[RB_LINES] = n_lines
    st[RB_N_ACTIVE] = min(n_lines, _cdiv(st[RB_ACTIVE], per_line))
    st[RB_N_PREFETCH] = min(n_lines - st[RB_N_ACTIVE], _cdiv(st[RB_PREFETCH], per_line))
    st[RB_FETCH_ROWS] = _cdiv(prefetch_elems, bw)
    # the first demand row (cycle 0) fills the active half before any request is served
    n = min(_cdiv(st[RB_ACTIVE], bw), st[RB_FETCH_ROWS])
    st[RB_ACCESSES] = n * bw
    st[RB_FIRST] = -n
    st[RB_LAST] = -1
    st[RB_WIN_START] = 0
    st[RB_WIN_END] = st[RB_N_ACTIVE]
    st[RB_MISSING] = 0


@inline
def _rb_read(st, starts, lines, addr, cycle, offset):
    """Serve one request; returns the row's new offset (SCALE-Sim would loop forever on an address
    missing from the prefetch order: flag it instead)."""
    slides = 0
    while not _in_window(addr, starts, lines, st[RB_WIN_START], st[RB_WIN_END]):
        if slides > st[RB_LINES] or starts[addr] == starts[addr + 1]:
            st[RB_MISSING] = 1
            return offset
        slides += 1
        start = (st[RB_WIN_START] + st[RB_N_PREFETCH]) % st[RB_LINES]
        st[RB_WIN_START] = start
        st[RB_WIN_END] = (start + st[RB_N_ACTIVE]) % st[RB_LINES]
        n = _cdiv(st[RB_PREFETCH], st[RB_BW])
        st[RB_ACCESSES] += n * st[RB_BW]
        st[RB_LAST] = st[RB_LAST] + n + 1
        stall = st[RB_LAST] - (cycle + offset)
        offset += stall
        if stall > 0:
            offset += stall
    return offset


# estimate read-buffer state (CALC mode)
EB_ITEMS = 0  # addresses per set: floor(words / 100)
EB_ELEMS = 1  # addresses in the set being filled
EB_SET = 2  # id of the set being filled
EB_RB_START = 3  # active window of sets [start, end]
EB_RB_END = 4
EB_PF_START = 5  # sets the next prefetch brings in
EB_PF_END = 6
EB_LAST_START = 7  # cycles of the last prefetch
EB_LAST_END = 8
EB_FIRST_REQ = 9
EB_FIRST_SEEN = 10
EB_ACTIVE_DONE = 11
EB_BW = 12  # default prefetch words/cycle
EB_ACCESSES = 13
EB_DRAM_FIRST = 14
EB_DRAM_LAST = 15
EB_PEAK = 16
EB_ERROR = 17
EB_NCOL = 18
EB_SETS = 50  # sets per half of the SRAM (active fraction 0.5)


@inline
def _eb_init(st, words, bw):
    for j in range(EB_NCOL):
        st[j] = 0
    st[EB_ITEMS] = words // 100
    st[EB_RB_END] = EB_SETS - 1
    st[EB_PF_START] = -1
    st[EB_PF_END] = -1
    st[EB_LAST_START] = -2
    st[EB_LAST_END] = -1
    st[EB_BW] = bw
    st[EB_DRAM_FIRST] = -(1 << 62)


@inline
def _eb_prefetch(st, n_addr, bw):
    """One prefetch of `n_addr` words over the cycles [last start, last end] at `bw` words/cycle."""
    st[EB_ACCESSES] += n_addr
    rows = st[EB_LAST_END] - st[EB_LAST_START] + 1
    if n_addr > rows * bw or rows <= 0 and n_addr > 0:
        st[EB_ERROR] = 1
    if rows > 0:
        if st[EB_DRAM_FIRST] == -(1 << 62):
            st[EB_DRAM_FIRST] = st[EB_LAST_START] + READ_LATENCY
        st[EB_DRAM_LAST] = st[EB_LAST_END] + READ_LATENCY
        if bw > st[EB_PEAK]:
            st[EB_PEAK] = bw


@inline
def _eb_read(st, last_set, addr, cycle):
    """Track one request: a new distinct address joins the current set; closing the set at the end
    of the active window schedules the next prefetch (SCALE-Sim's ReadBufferEstimateBw)."""
    if st[EB_FIRST_SEEN] == 0:
        st[EB_FIRST_SEEN] = 1
        st[EB_FIRST_REQ] = cycle
    seen = last_set[addr]
    if seen >= st[EB_RB_START] and seen < min(st[EB_SET], st[EB_RB_END] + 1):
        return  # hit
    if seen == st[EB_SET]:
        return  # already in the set being filled
    last_set[addr] = st[EB_SET]
    st[EB_ELEMS] += 1
    if st[EB_ELEMS] != st[EB_ITEMS]:
        return
    st[EB_ELEMS] = 0
    st[EB_SET] += 1
    if st[EB_SET] != st[EB_RB_END] + 1:
        return
    items = st[EB_ITEMS]
    if st[EB_ACTIVE_DONE] == 0:
        st[EB_LAST_END] = st[EB_FIRST_REQ] - 1 - READ_LATENCY
        st[EB_LAST_START] = st[EB_LAST_END] - _cdiv(EB_SETS * items, st[EB_BW]) + 1
        _eb_prefetch(st, EB_SETS * items, st[EB_BW])
        st[EB_PF_START] = st[EB_RB_END] + 1
        st[EB_PF_END] = st[EB_PF_START] + EB_SETS - 1
        st[EB_ACTIVE_DONE] = 1
    else:
        cycles = st[EB_LAST_END] - st[EB_LAST_START] + 1
        if cycles <= 0:
            st[EB_ERROR] = 1
            cycles = 1
        _eb_prefetch(st, EB_SETS * items, _cdiv(EB_SETS * items, cycles))
        st[EB_PF_START] += EB_SETS
        st[EB_PF_END] += EB_SETS
    st[EB_RB_START] += EB_SETS
    st[EB_RB_END] += EB_SETS
    st[EB_LAST_START] = st[EB_LAST_END] + 1
    st[EB_LAST_END] = cycle


@inline
def _eb_finish(st):
    """Prefetch what remains after the last request (complete_all_prefetches)."""
    items = st[EB_ITEMS]
    partial = 0
    if st[EB_ELEMS] > 0:
        partial = items - st[EB_ELEMS]  # the last set holds fewer than `items`
    else:
        st[EB_SET] -= 1
    if st[EB_ACTIVE_DONE] == 0:
        n_sets = st[EB_SET] + 1
        st[EB_LAST_END] = -1 - READ_LATENCY
        st[EB_LAST_START] = st[EB_LAST_END] - _cdiv(n_sets * items, st[EB_BW]) + 1
        _eb_prefetch(st, n_sets * items - partial, st[EB_BW])
        st[EB_ACTIVE_DONE] = 1
    else:
        n_sets = st[EB_SET] - st[EB_PF_START] + 1
        cycles = st[EB_LAST_END] - st[EB_LAST_START] + 1
        if cycles <= 0:
            st[EB_ERROR] = 1
            cycles = 1
        n_addr = n_sets * items - partial if n_sets > 0 else 0
        _eb_prefetch(st, n_addr, _cdiv(n_sets * items, cycles))


@inline
def _read(estimate, rb_st, eb_st, starts, lines, last_set, addr, cycle, offset):
    if estimate:
        _eb_read(eb_st, last_set, addr, cycle)
        return offset
    return _rb_read(rb_st, starts, lines, addr, cycle, offset)


@inline
def _wb_init(st, words, bw):
    st[WB_BW] = bw
    st[WB_TOTAL] = words
    st[WB_DRAIN] = words - _cdiv(words, 2)
    st[WB_FREE] = words
    st[WB_LINE_IDX] = 0
    st[WB_LINES] = 0
    st[WB_DRAIN_LINE] = 0
    st[WB_DRAIN_END] = 0
    st[WB_ACCESSES] = 0
    st[WB_FIRST] = -1
    st[WB_LAST] = -1


@inline
def _wb_flush(st, fill):
    if st[WB_LINE_IDX] > 0:
        fill[st[WB_LINES], 0] = st[WB_LINE_IDX]
        st[WB_LINES] += 1
        st[WB_LINE_IDX] = 0


@inline
def _wb_drain(st, fill, start):
    """Write the drain half out, one line per cycle; returns the last cycle."""
    end_line = min(st[WB_DRAIN_LINE] + _cdiv(st[WB_DRAIN], st[WB_BW]), st[WB_LINES])
    n = end_line - st[WB_DRAIN_LINE]
    if n <= 0:
        return start
    words = n * st[WB_BW] - (st[WB_BW] - fill[end_line - 1, 0])  # only the last line's gap is known
    for line in range(n):
        fill[st[WB_DRAIN_LINE] + line, 1] = start + line
    st[WB_ACCESSES] += words
    st[WB_FREE] += words
    st[WB_DRAIN_LINE] = end_line
    if st[WB_FIRST] < 0 or start < st[WB_FIRST]:
        st[WB_FIRST] = start
    last = start + n - 1
    if last > st[WB_LAST]:
        st[WB_LAST] = last
    return last


@inline
def _wb_write(st, fill, current):
    st[WB_LINE_IDX] += 1
    st[WB_FREE] -= 1
    if st[WB_LINE_IDX] == st[WB_BW]:
        fill[st[WB_LINES], 0] = st[WB_BW]
        st[WB_LINES] += 1
        st[WB_LINE_IDX] = 0
    if current < st[WB_DRAIN_END]:
        if st[WB_FREE] <= 0:
            current = st[WB_DRAIN_END]
    elif st[WB_FREE] < st[WB_TOTAL] - st[WB_DRAIN]:
        _wb_flush(st, fill)
        st[WB_DRAIN_END] = _wb_drain(st, fill, current)
    return current


@inline
def _geometry(x, g):
    ofmap_h = _cdiv(x[X_IFMAP_H] - x[X_FILTER_H] + x[X_STRIDE], x[X_STRIDE])
    ofmap_w = _cdiv(x[X_IFMAP_W] - x[X_FILTER_W] + x[X_STRIDE_W], x[X_STRIDE_W])
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


@kernel
def memory_batch(inp, out, g, rb, wb, if_starts, if_count, if_lines, fi_starts, fi_count, fi_lines, fill,
                 trace, fold_start, pix, win, eb):
    """inp: int64[n, X_NCOL]; out: int64[n, Y_NCOL]; the rest is scratch sized for the largest item
    (g[G_NCOL], rb[2, RB_NCOL], wb[WB_NCOL]; CSR starts/count: address space + 1; lines: prefetch
    elements; fill: int64[ofmap requests + 1, 2], per ofmap buffer line its words and the cycle it
    was written to DRAM). trace: int64[rows, 3] receives the cycle each demand row
    is served (ifmap, filter, ofmap) for SRAM traces of a one-item batch; pass shape (0, 3) otherwise.
    fold_start: int64[sum over items of folds + 1] receives the cycle each fold starts (stalls
    included) and, last, the cycle the item ends: the occupancy timeline with stalls.
    pix: int64[ofmap pixels, 3] and win: int64[window, 3] are scratch for ifmap address tables;
    eb: int64[2, EB_NCOL] estimate read-buffer state (in that mode if_count/fi_count hold, per
    address, the set it last joined)."""
    for item in range(inp.shape[0]):
        x = inp[item]
        _geometry(x, g)
        _fill_ifmap_tables(g, pix, win)
        m, k, n = g[G_M], g[G_K], g[G_N]
        r, c, df = x[X_ROWS], x[X_COLS], x[X_DF]
        for j in range(Y_NCOL):
            out[item, j] = 0
        if_space = x[X_IFMAP_H] * x[X_IFMAP_W] * x[X_CHANNELS]
        if_per_line = _cdiv(x[X_IFMAP_WORDS], 100)
        fi_per_line = _cdiv(x[X_FILTER_WORDS], 100)
        estimate = x[X_ESTIMATE] == 1
        if estimate:
            for a in range(if_space):
                if_count[a] = -1
            for a in range(k * n):
                fi_count[a] = -1
            _eb_init(eb[0], x[X_IFMAP_WORDS], x[X_IFMAP_BW])
            _eb_init(eb[1], x[X_FILTER_WORDS], x[X_FILTER_BW])
            for j in range(RB_NCOL):
                rb[0, j] = 0
                rb[1, j] = 0
        else:
            if_n, if_elems = _build_lines(g, pix, win, df, 0, r, c, if_per_line, if_starts, if_count, if_lines,
                                          if_space)
            fi_n, fi_elems = _build_lines(g, pix, win, df, 1, r, c, fi_per_line, fi_starts, fi_count, fi_lines,
                                          k * n)
            _rb_init(rb[0], x[X_IFMAP_WORDS], x[X_IFMAP_BW], if_per_line, if_n, if_elems)
            _rb_init(rb[1], x[X_FILTER_WORDS], x[X_FILTER_BW], fi_per_line, fi_n, fi_elems)
        _wb_init(wb, x[X_OFMAP_WORDS], x[X_OFMAP_BW])
        if df == DF_OS:
            nc, nr, t = _cdiv(n, c), _cdiv(m, r), k
            fold_len = k + r + c - 2
        elif df == DF_WS:
            nc, nr, t = _cdiv(n, c), _cdiv(k, r), m
            fold_len = 2 * r + c + m - 2
        else:
            nc, nr, t = _cdiv(m, c), _cdiv(k, r), n
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
                                    off = _read(estimate, rb[0], eb[0], if_starts, if_lines, if_count, a, cycle, off)
                    elif df == DF_WS:  # after R idle rows, skewed: IF[q - col - R, fr*R + col]
                        for col in range(max(0, q - r - t + 1), min(r - 1, q - r) + 1):
                            s = fr * r + col
                            if s < k:
                                a = ifmap_addr(g, pix, win, q - col - r, s)
                                if a != NULL:
                                    off = _read(estimate, rb[0], eb[0], if_starts, if_lines, if_count, a, cycle, off)
                    elif q < r:  # is: stationary block, rows flipped: IF[fc*C + col, fr*R + R-1-q]
                        s = fr * r + r - 1 - q
                        if s < k:
                            for col in range(c):
                                p = fc * c + col
                                if p < m:
                                    a = ifmap_addr(g, pix, win, p, s)
                                    if a != NULL:
                                        off = _read(estimate, rb[0], eb[0], if_starts, if_lines, if_count, a, cycle, off)
                    s_if = off - 1
                    # ---- filter reads
                    off = 1
                    if fi_resident:
                        pass
                    elif df == DF_OS:  # skewed over C columns: FI[q - col, fc*C + col]
                        for col in range(max(0, q - t + 1), min(c - 1, q) + 1):
                            s = fc * c + col
                            if s < n:
                                off = _read(estimate, rb[1], eb[1], fi_starts, fi_lines, fi_count, filter_addr(g, q - col, s), cycle, off)
                    elif df == DF_WS:  # stationary block, rows flipped: FI[fr*R + R-1-q, fc*C + col]
                        if q < r:
                            s = fr * r + r - 1 - q
                            if s < k:
                                for col in range(c):
                                    p = fc * c + col
                                    if p < n:
                                        off = _read(estimate, rb[1], eb[1], fi_starts, fi_lines, fi_count, filter_addr(g, s, p), cycle, off)
                    else:  # is: after R idle rows, skewed over R columns: FI[fr*R + col, q - col - R]
                        for col in range(max(0, q - r - t + 1), min(r - 1, q - r) + 1):
                            s = fr * r + col
                            if s < k:
                                off = _read(estimate, rb[1], eb[1], fi_starts, fi_lines, fi_count, filter_addr(g, s, q - col - r), cycle, off)
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
                                current = _wb_write(wb, fill, current)
                    else:  # ws/is: after 2R-1 rows, T rows skewed over C
                        lead = 2 * r - 1
                        for col in range(max(0, q - lead - t + 1), min(c - 1, q - lead) + 1):
                            if fc * c + col < (n if df == DF_WS else m):
                                current = _wb_write(wb, fill, current)
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
        _wb_flush(wb, fill)
        cyc = done
        while wb[WB_DRAIN_LINE] < wb[WB_LINES]:
            wb[WB_DRAIN_END] = _wb_drain(wb, fill, cyc)
            cyc = wb[WB_DRAIN_END] + 1
        if estimate:
            _eb_finish(eb[0])
            _eb_finish(eb[1])
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
