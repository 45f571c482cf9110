"""Slow reference for SCALE-Sim v3's bandwidth-limited memory model (USER mode), written from its
source: build the operand, prefetch and demand matrices in full, then run the double-buffered
read buffers (line-hashed active/prefetch windows) and the write buffer request by request with
Python sets. The numba kernel (kernels/systolic_memory.py) generates addresses on the fly and must
agree with this on every output."""
from __future__ import annotations

import math

import numpy as np

NULL = -1
HIT_LATENCY = 1  # read buffer hit latency
READ_PORT_LATENCY = 1  # DRAM read port latency; the write port's is 0


# ---- operand matrices (addresses), as SCALE-Sim's operand_matrix builds them -----------------

def operand_matrices(ifmap_h, ifmap_w, filter_h, filter_w, channels, num_filters, stride, stride_w=None,
                     offsets=(0, 10_000_000, 20_000_000)):
    stride_w = stride_w or stride
    ofmap_h = math.ceil((ifmap_h - filter_h + stride) / stride)
    ofmap_w = math.ceil((ifmap_w - filter_w + stride_w) / stride_w)
    m, k, n = ofmap_h * ofmap_w, filter_h * filter_w * channels, num_filters
    ifmap = np.full((m, k), NULL, dtype=np.int64)
    for i in range(m):
        o_row, o_col = divmod(i, ofmap_w)
        i_row, i_col = o_row * stride, o_col * stride_w
        for j in range(k):
            c_row, rest = divmod(j, filter_w * channels)
            c_col, c_ch = divmod(rest, channels)
            if c_row + i_row < ifmap_h and c_col + i_col < ifmap_w:
                ifmap[i, j] = ((i_row + c_row) * ifmap_w + i_col + c_col) * channels + c_ch + offsets[0]
    filt = np.array([[j * k + i + offsets[1] for j in range(n)] for i in range(k)], dtype=np.int64)
    ofmap = np.array([[n * i + j + offsets[2] for j in range(n)] for i in range(m)], dtype=np.int64)
    return ifmap, filt, ofmap


# ---- prefetch and demand matrices, per dataflow ----------------------------------------------

def _pad_cols(mat, cols):
    out = np.full((mat.shape[0], cols), NULL, dtype=np.int64)
    out[:, :mat.shape[1]] = mat
    return out


def _pad(mat, rows, cols):
    out = np.full((rows, cols), NULL, dtype=np.int64)
    out[:mat.shape[0], :mat.shape[1]] = mat
    return out


def _nulls(rows, cols):
    return np.full((rows, cols), NULL, dtype=np.int64)


def _skew(mat):
    rows, cols = mat.shape
    out = _nulls(rows + cols - 1, cols)
    for c in range(cols):
        out[c:c + rows, c] = mat[:, c]
    return out


def _diagonal_rollout(mat):
    """Anti-diagonals from the top-left corner, each read bottom-up (SCALE-Sim's prefetch order)."""
    rows, cols = mat.shape
    out = []
    for d in range(rows + cols):
        for r in range(min(d, rows - 1), max(0, d - cols + 1) - 1, -1):
            out.append(mat[r, d - r])
    return np.array(out, dtype=np.int64)


def _slices(extent, size):
    return [(s, min(s + size, extent)) for s in range(0, extent, size)]


def matrices(ifmap, filt, ofmap, rows, cols, dataflow):
    """(ifmap prefetch, filter prefetch) as flat orders and (ifmap, filter, ofmap) demand matrices."""
    R, C = rows, cols
    M, K = ifmap.shape
    N = filt.shape[1]
    if dataflow == "os":
        T = K
        pre_if = _diagonal_rollout(np.vstack([_pad_cols(ifmap.T[:, a:b], R) for a, b in _slices(M, R)]))
        pre_fi = _diagonal_rollout(np.vstack([_pad_cols(filt[:, a:b], C) for a, b in _slices(N, C)]))
        d_if, d_fi, d_of = [], [], []
        for c0, c1 in _slices(N, C):
            for r0, r1 in _slices(M, R):
                d_if.append(_skew(np.vstack([_pad_cols(ifmap.T[:, r0:r1], R), _nulls(C - 1, R)])))
                d_fi.append(_skew(np.vstack([_pad_cols(filt[:, c0:c1], C), _nulls(R - 1, C)])))
                block = np.flip(_pad(ofmap[r0:r1, c0:c1], R, C), 0)
                d_of.append(_skew(np.vstack([_nulls(T - 1, C), block])))
    elif dataflow == "ws":
        T = M
        pre_if = _diagonal_rollout(np.vstack([_pad_cols(ifmap[:, a:b], R) for a, b in _slices(K, R)]))
        pre_fi = np.vstack([_pad_cols(filt[:, a:b], C) for a, b in _slices(N, C)]).ravel()
        d_if, d_fi, d_of = [], [], []
        for c0, c1 in _slices(N, C):
            for r0, r1 in _slices(K, R):
                d_if.append(_skew(np.vstack([_nulls(R, R), _pad_cols(ifmap[:, r0:r1], R), _nulls(C - 1, R)])))
                block = np.flip(_pad(filt[r0:r1, c0:c1], R, C), 0)
                d_fi.append(np.vstack([block, _nulls(R + C + T - 2, C)]))
                d_of.append(_skew(np.vstack([_nulls(2 * R - 1, C), _pad_cols(ofmap[:, c0:c1], C)])))
    else:  # is
        T = N
        pre_if = np.vstack([_pad_cols(ifmap.T[:, a:b], C) for a, b in _slices(M, C)]).ravel()
        pre_fi = _diagonal_rollout(np.vstack([_pad_cols(filt[a:b, :].T, R) for a, b in _slices(K, R)]))
        d_if, d_fi, d_of = [], [], []
        for c0, c1 in _slices(M, C):
            for r0, r1 in _slices(K, R):
                block = np.flip(_pad(ifmap.T[r0:r1, c0:c1], R, C), 0)
                d_if.append(np.vstack([block, _nulls(R + C + T - 2, C)]))
                d_fi.append(_skew(np.vstack([_nulls(R, R), _pad_cols(filt[r0:r1, :].T, R), _nulls(C - 1, R)])))
                d_of.append(_skew(np.vstack([_nulls(2 * R - 1, C), _pad_cols(ofmap[c0:c1, :].T, C)])))
    return pre_if, pre_fi, np.vstack(d_if), np.vstack(d_fi), np.vstack(d_of)


# ---- buffers ---------------------------------------------------------------------------------

class ReadBuffer:
    """Double-buffered read SRAM: the fetch order is cut into lines of ceil(size/100) requests; an
    active window of lines serves hits, each miss slides the window by the prefetch lines."""

    def __init__(self, size_words, bw, prefetch_order):
        self.bw = bw
        self.active_size = math.ceil(size_words * 0.5)
        self.prefetch_size = size_words - self.active_size
        per_line = math.ceil(size_words / 100)
        fetch_rows = math.ceil(len(prefetch_order) / bw)
        self.fetch_rows = fetch_rows
        self.lines, current, count = [], set(), 0
        for addr in prefetch_order:
            if addr != NULL:
                current.add(int(addr))
                count += 1
            if count >= per_line:
                self.lines.append(current)
                current, count = set(), 0
        self.lines.append(current)
        n = len(self.lines)
        self.n_active = min(n, math.ceil(self.active_size / per_line))
        self.n_prefetch = min(n - self.n_active, math.ceil(self.prefetch_size / per_line))
        self.started = False
        self.accesses = 0
        self.dram_first = None
        self.last_prefetch = None

    def _hit(self, addr):
        s, e = self.window
        ids = range(s, e) if s < e else list(range(s, len(self.lines))) + list(range(e))
        return any(addr in self.lines[i] for i in ids)

    def _start(self, cycle):
        n = min(math.ceil(self.active_size / self.bw), self.fetch_rows)
        self.accesses += n * self.bw
        responses = [cycle + i - n - READ_PORT_LATENCY + READ_PORT_LATENCY for i in range(n)]
        self.dram_first = min(responses)
        self.last_prefetch = max(responses)
        self.window = (0, self.n_active)
        self.started = True

    def _prefetch(self):
        n_lines = len(self.lines)
        start = (self.window[0] + self.n_prefetch) % n_lines
        self.window = (start, (start + self.n_active) % n_lines)
        n = math.ceil(self.prefetch_size / self.bw)
        self.accesses += n * self.bw
        self.last_prefetch = max(self.last_prefetch + i + 1 + READ_PORT_LATENCY for i in range(n))

    def service(self, line, cycle):
        """Cycle at which the demand line is served."""
        if not self.started:
            self._start(cycle)
        offset = HIT_LATENCY
        for addr in line:
            if addr == NULL:
                continue
            while not self._hit(int(addr)):
                self._prefetch()
                stall = self.last_prefetch - (cycle + offset)
                offset += stall
                if stall > 0:
                    offset += stall
        return cycle + offset


class EstimateReadBuffer:
    """CALC mode: every request hits; distinct addresses, in sets of floor(words/100) in demand
    order, schedule prefetches sized to what the traffic needs (SCALE-Sim's ReadBufferEstimateBw)."""

    SETS = 50

    def __init__(self, size_words, bw=10):
        self.items = size_words // 100
        self.bw = bw
        self.sets = []  # closed sets (None once evicted)
        self.current = set()
        self.start, self.end = 0, self.SETS - 1
        self.pf_start = self.pf_end = -1
        self.last_start, self.last_end = -2, -1
        self.first_request = None
        self.active_done = False
        self.accesses = 0
        self.dram_first = self.dram_last = None
        self.peak = 0

    def _hit(self, addr):
        return any(addr in self.sets[i] for i in range(self.start, min(len(self.sets), self.end + 1)))

    def _prefetch(self, first_set, last_set, bw):
        n = sum(len(self.sets[i]) for i in range(first_set, last_set + 1))
        self.accesses += n
        rows = self.last_end - self.last_start + 1
        assert n <= rows * bw, "SCALE-Sim's reshape fails here"
        if rows > 0:
            if self.dram_first is None:
                self.dram_first = self.last_start + READ_PORT_LATENCY
            self.dram_last = self.last_end + READ_PORT_LATENCY
            self.peak = max(self.peak, bw)

    def service(self, line, cycle):
        if self.first_request is None and (line != NULL).any():
            self.first_request = cycle
        for addr in line:
            if addr == NULL or self._hit(int(addr)) or int(addr) in self.current:
                continue
            self.current.add(int(addr))
            if len(self.current) < self.items:
                continue
            self.sets.append(self.current)
            self.current = set()
            if len(self.sets) != self.end + 1:
                continue
            if not self.active_done:
                self.last_end = self.first_request - 1 - READ_PORT_LATENCY
                self.last_start = self.last_end - math.ceil(self.SETS * self.items / self.bw) + 1
                self._prefetch(0, self.SETS - 1, self.bw)
                self.pf_start, self.pf_end = self.end + 1, self.end + self.SETS
                self.active_done = True
            else:
                bw = math.ceil(self.SETS * self.items / (self.last_end - self.last_start + 1))
                self._prefetch(self.pf_start, self.pf_end, bw)
                self.pf_start += self.SETS
                self.pf_end += self.SETS
            for i in range(self.start, self.start + self.SETS):
                self.sets[i] = None
            self.start += self.SETS
            self.end += self.SETS
            self.last_start, self.last_end = self.last_end + 1, cycle
        return cycle + HIT_LATENCY

    def finish(self):
        if self.current:
            self.sets.append(self.current)
        last = len(self.sets) - 1
        if not self.active_done:
            self.last_end = -1 - READ_PORT_LATENCY
            self.last_start = self.last_end - math.ceil((last + 1) * self.items / self.bw) + 1
            self._prefetch(0, last, self.bw)
        else:
            n_sets = last - self.pf_start + 1
            bw = math.ceil(n_sets * self.items / (self.last_end - self.last_start + 1))
            self._prefetch(self.pf_start, last, bw)

    @property
    def last_prefetch(self):
        return self.dram_last


class WriteBuffer:
    """Ofmap SRAM: requests fill lines of `bw` words; when the active half is full, the drain half
    (whole lines, a partial last line counted as what it holds) is written out one line per cycle."""

    def __init__(self, size_words, bw):
        self.bw = bw
        self.total = size_words
        self.active_size = math.ceil(size_words * 0.5)
        self.drain_size = size_words - self.active_size
        self.free = size_words
        self.line_fill = []  # valid words per flushed line
        self.line_idx = 0
        self.drain_start_line = 0
        self.drain_end = 0
        self.accesses = 0
        self.dram_first = None
        self.dram_last = None

    def _flush(self):
        if self.line_idx:
            self.line_fill.append(self.line_idx)
            self.line_idx = 0

    def _drain(self, start):
        lines = math.ceil(self.drain_size / self.bw)
        end_line = min(self.drain_start_line + lines, len(self.line_fill))
        n = end_line - self.drain_start_line
        words = n * self.bw - (self.bw - self.line_fill[end_line - 1])
        self.accesses += words
        self.free += words
        self.drain_start_line = end_line
        self.dram_first = start if self.dram_first is None else min(self.dram_first, start)
        last = start + n - 1
        self.dram_last = last if self.dram_last is None else max(self.dram_last, last)
        return last

    def service(self, line, cycle):
        current = cycle
        for addr in line:
            if addr == NULL:
                continue
            self.line_idx += 1
            self.free -= 1
            if self.line_idx == self.bw:
                self.line_fill.append(self.bw)
                self.line_idx = 0
            if current < self.drain_end:
                if not self.free > 0:
                    current = self.drain_end
            elif self.free < self.total - self.drain_size:
                self._flush()
                self.drain_end = self._drain(current)
        return current

    def empty(self, cycle):
        self._flush()
        while self.drain_start_line < len(self.line_fill):
            self.drain_end = self._drain(cycle)
            cycle = self.drain_end + 1


def simulate(layer: dict, rows: int, cols: int, dataflow: str, ifmap_words: int, filter_words: int,
             ofmap_words: int, ifmap_bw: int | None, filter_bw: int | None, ofmap_bw: int | None) -> dict:
    """One layer (conv geometry as keyword arguments of operand_matrices) in SCALE-Sim's USER mode,
    or in its CALC mode when the bandwidths are None."""
    ifmap, filt, ofmap = operand_matrices(**layer)
    pre_if, pre_fi, d_if, d_fi, d_of = matrices(ifmap, filt, ofmap, rows, cols, dataflow)
    if ofmap_bw is None:
        rb_if, rb_fi = EstimateReadBuffer(ifmap_words), EstimateReadBuffer(filter_words)
        wb = WriteBuffer(ofmap_words, cols)
    else:
        rb_if = ReadBuffer(ifmap_words, ifmap_bw, pre_if)
        rb_fi = ReadBuffer(filter_words, filter_bw, pre_fi)
        wb = WriteBuffer(ofmap_words, ofmap_bw)
    stalls, out_cycles = 0, []
    for i in range(d_of.shape[0]):
        cycle = i + stalls
        s_if = rb_if.service(d_if[i], cycle) - cycle - HIT_LATENCY
        s_fi = rb_fi.service(d_fi[i], cycle) - cycle - HIT_LATENCY
        done = wb.service(d_of[i], cycle)
        out_cycles.append(done)
        stalls += max(s_if, s_fi, done - cycle)
    if ofmap_bw is None:
        rb_if.finish()
        rb_fi.finish()
    wb.empty(out_cycles[-1])
    total = max(out_cycles)
    return {"total_cycles": total, "stall_cycles": stalls,
            "dram_ifmap_reads": rb_if.accesses, "dram_filter_reads": rb_fi.accesses,
            "dram_ofmap_writes": wb.accesses,
            "dram_ifmap_start": rb_if.dram_first, "dram_ifmap_stop": rb_if.last_prefetch,
            "dram_filter_start": rb_fi.dram_first, "dram_filter_stop": rb_fi.last_prefetch,
            "dram_ofmap_start": wb.dram_first, "dram_ofmap_stop": wb.dram_last,
            "peak_ifmap": rb_if.peak if ofmap_bw is None else (ifmap_bw if rb_if.accesses else 0),
            "peak_filter": rb_fi.peak if ofmap_bw is None else (filter_bw if rb_fi.accesses else 0)}
