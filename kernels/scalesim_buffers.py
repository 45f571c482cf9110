"""SCALE-Sim v3's SRAM buffers as state machines over int64 state rows, one request at a time.

- USER-mode read buffer (``rb_*``): the prefetch order cut into lines of ceil(words / 100) requests,
  a window of active lines (half the SRAM); a request outside it slides the window by the other
  half, fetched one line per cycle. SCALE-Sim's quirks are kept (a miss can move a row's offset
  backwards): the goal is its numbers.
- CALC-mode estimate read buffer (``eb_*``): every request hits; distinct addresses in sets of
  floor(words / 100), in demand order, schedule prefetches at the rate the traffic needs.
- Write buffer (``wb_*``): requests fill lines of ``bandwidth`` words; when the active half is full
  the drain half is written out one line per cycle (a flushed partial line counts as full unless it
  is the last of a drain, as in SCALE-Sim).
"""
from ._jit import inline
from .scalesim_addresses import cdiv, holds, in_window

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
RB_UNIQUE = 13  # 1: every address appears once in the prefetch order (lines[addr] is its line)
RB_NCOL = 14

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

READ_LATENCY = 1  # SCALE-Sim's DRAM read port


@inline
def rb_init(st, words, bw, per_line, valid, prefetch_elems, unique):
    """State after the first demand row's prefetch; `valid` non-null elements in the prefetch order
    make valid // per_line + 1 hashed lines (the last possibly empty, as in SCALE-Sim)."""
    n_lines = valid // per_line + 1
    st[RB_UNIQUE] = unique
    st[RB_BW] = bw
    st[RB_ACTIVE] = cdiv(words, 2)  # SCALE-Sim: ceil(words * 0.5)
    st[RB_PREFETCH] = words - st[RB_ACTIVE]
    st[RB_LINES] = n_lines
    st[RB_N_ACTIVE] = min(n_lines, cdiv(st[RB_ACTIVE], per_line))
    st[RB_N_PREFETCH] = min(n_lines - st[RB_N_ACTIVE], cdiv(st[RB_PREFETCH], per_line))
    st[RB_FETCH_ROWS] = cdiv(prefetch_elems, bw)
    # the first demand row (cycle 0) fills the active half before any request is served
    n = min(cdiv(st[RB_ACTIVE], bw), st[RB_FETCH_ROWS])
    st[RB_ACCESSES] = n * bw
    st[RB_FIRST] = -n
    st[RB_LAST] = -1
    st[RB_WIN_START] = 0
    st[RB_WIN_END] = st[RB_N_ACTIVE]
    st[RB_MISSING] = 0


@inline
def rb_read(st, starts, lines, addr, cycle, offset):
    """Serve one request; returns the row's new offset (SCALE-Sim would loop forever on an address
    missing from the prefetch order: flag it instead)."""
    slides = 0
    unique = st[RB_UNIQUE] == 1
    while not in_window(addr, unique, starts, lines, st[RB_WIN_START], st[RB_WIN_END]):
        if slides > st[RB_LINES] or not holds(addr, unique, starts, lines):
            st[RB_MISSING] = 1
            return offset
        slides += 1
        start = (st[RB_WIN_START] + st[RB_N_PREFETCH]) % st[RB_LINES]
        st[RB_WIN_START] = start
        st[RB_WIN_END] = (start + st[RB_N_ACTIVE]) % st[RB_LINES]
        n = cdiv(st[RB_PREFETCH], st[RB_BW])
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
def eb_init(st, words, bw):
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
def eb_read(st, last_set, addr, cycle):
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
        st[EB_LAST_START] = st[EB_LAST_END] - cdiv(EB_SETS * items, st[EB_BW]) + 1
        _eb_prefetch(st, EB_SETS * items, st[EB_BW])
        st[EB_PF_START] = st[EB_RB_END] + 1
        st[EB_PF_END] = st[EB_PF_START] + EB_SETS - 1
        st[EB_ACTIVE_DONE] = 1
    else:
        cycles = st[EB_LAST_END] - st[EB_LAST_START] + 1
        if cycles <= 0:
            st[EB_ERROR] = 1
            cycles = 1
        _eb_prefetch(st, EB_SETS * items, cdiv(EB_SETS * items, cycles))
        st[EB_PF_START] += EB_SETS
        st[EB_PF_END] += EB_SETS
    st[EB_RB_START] += EB_SETS
    st[EB_RB_END] += EB_SETS
    st[EB_LAST_START] = st[EB_LAST_END] + 1
    st[EB_LAST_END] = cycle


@inline
def eb_finish(st):
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
        st[EB_LAST_START] = st[EB_LAST_END] - cdiv(n_sets * items, st[EB_BW]) + 1
        _eb_prefetch(st, n_sets * items - partial, st[EB_BW])
        st[EB_ACTIVE_DONE] = 1
    else:
        n_sets = st[EB_SET] - st[EB_PF_START] + 1
        cycles = st[EB_LAST_END] - st[EB_LAST_START] + 1
        if cycles <= 0:
            st[EB_ERROR] = 1
            cycles = 1
        n_addr = n_sets * items - partial if n_sets > 0 else 0
        _eb_prefetch(st, n_addr, cdiv(n_sets * items, cycles))


@inline
def serve_read(estimate, rb_st, eb_st, starts, lines, last_set, addr, cycle, offset):
    """One read request in the item's mode; returns the row's offset (estimate reads never stall)."""
    if estimate:
        eb_read(eb_st, last_set, addr, cycle)
        return offset
    return rb_read(rb_st, starts, lines, addr, cycle, offset)


@inline
def wb_init(st, words, bw):
    st[WB_BW] = bw
    st[WB_TOTAL] = words
    st[WB_DRAIN] = words - cdiv(words, 2)
    st[WB_FREE] = words
    st[WB_LINE_IDX] = 0
    st[WB_LINES] = 0
    st[WB_DRAIN_LINE] = 0
    st[WB_DRAIN_END] = 0
    st[WB_ACCESSES] = 0
    st[WB_FIRST] = -1
    st[WB_LAST] = -1


@inline
def wb_flush(st, fill):
    if st[WB_LINE_IDX] > 0:
        fill[st[WB_LINES], 0] = st[WB_LINE_IDX]
        st[WB_LINES] += 1
        st[WB_LINE_IDX] = 0


@inline
def wb_drain(st, fill, start):
    """Write the drain half out, one line per cycle; returns the last cycle."""
    end_line = min(st[WB_DRAIN_LINE] + cdiv(st[WB_DRAIN], st[WB_BW]), st[WB_LINES])
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
def wb_write(st, fill, current):
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
        wb_flush(st, fill)
        st[WB_DRAIN_END] = wb_drain(st, fill, current)
    return current
