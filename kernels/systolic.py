"""Systolic PE-mesh timing in closed form, batched over layers x array shapes x dataflows.

Each fold maps a tile of the operand matrices onto the R x C mesh. Per dataflow (S_r x S_c is the
spatial extent mapped onto rows x columns, T the temporal extent; M x K times K x N GEMM):

- os: S_r = M, S_c = N, T = K; a fold lasts T + R + C - 2 cycles (feed, skew, drain);
- ws: S_r = K, S_c = N, T = M; a fold lasts 2R + C + T - 2 (weight load, feed, skew, drain);
- is: S_r = K, S_c = M, T = N; a fold lasts 2R + C + T - 2.

Total cycles with unlimited bandwidth = folds x fold length - 1 (SCALE-Sim's convention). The slow
reference in tests/systolic_reference.py builds SCALE-Sim's demand matrices element by element;
property tests demand equality.
"""
from ._jit import inline, kernel

DF_WS = 0
DF_IS = 1
DF_OS = 2

# input columns
I_M = 0
I_N = 1
I_K = 2
I_R = 3
I_C = 4
I_DF = 5
I_IFMAP_UNIQUE = 6  # distinct ifmap elements (conv: H*W*C; GEMM: M*K)
I_NCOL = 7

# integer outputs
O_CYCLES = 0
O_FOLDS = 1
O_FOLD_CYCLES = 2
O_FILL_DRAIN = 3  # cycles of a fold that are not the T streaming cycles
O_SRAM_IFMAP = 4
O_SRAM_FILTER = 5
O_SRAM_OFMAP = 6
O_DRAM_IFMAP = 7
O_DRAM_FILTER = 8
O_DRAM_OFMAP = 9
O_FOLDS_FULL = 10  # tile-mismatch histogram: folds using all rows and columns
O_FOLDS_ROWS_SHORT = 11  # ... a partial row tile only
O_FOLDS_COLS_SHORT = 12  # ... a partial column tile only
O_FOLDS_BOTH_SHORT = 13
O_MACS = 14
O_NCOL = 15

# float outputs
F_MAPPING_EFF = 0
F_COMPUTE_UTIL = 1
F_OVERALL_UTIL = 2
F_NCOL = 3


@kernel
def _tiles(extent, size):
    """(number of tiles, size of the last tile)."""
    n = (extent + size - 1) // size
    return n, extent - (n - 1) * size


@kernel
def systolic_batch(inp, out, fout, occupancy):
    """inp: int64[n, I_NCOL]; out: int64[n, O_NCOL]; fout: float64[n, F_NCOL];
    occupancy: float64[n, S] (mean fraction of busy MACs in S equal time bins)."""
    for i in range(inp.shape[0]):
        m, n, k = inp[i, I_M], inp[i, I_N], inp[i, I_K]
        r, c, df = inp[i, I_R], inp[i, I_C], inp[i, I_DF]
        if df == DF_OS:
            sr, sc, t = m, n, k
            fold_cycles = t + r + c - 2
            util_cycles = t + r + c - 2
        elif df == DF_WS:
            sr, sc, t = k, n, m
            fold_cycles = 2 * r + c + t - 2
            util_cycles = 2 * r + 2 * c + t - 3
        else:
            sr, sc, t = k, m, n
            fold_cycles = 2 * r + c + t - 2
            util_cycles = 2 * r + 2 * c + t - 3
        nr, last_r = _tiles(sr, r)
        nc, last_c = _tiles(sc, c)
        folds = nr * nc
        cycles = folds * fold_cycles - 1
        out[i, O_CYCLES] = cycles
        out[i, O_FOLDS] = folds
        out[i, O_FOLD_CYCLES] = fold_cycles
        out[i, O_FILL_DRAIN] = fold_cycles - t
        out[i, O_MACS] = m * n * k
        full_r = nr - 1 if last_r < r else nr
        full_c = nc - 1 if last_c < c else nc
        out[i, O_FOLDS_FULL] = full_r * full_c
        out[i, O_FOLDS_ROWS_SHORT] = (nr - full_r) * full_c
        out[i, O_FOLDS_COLS_SHORT] = full_r * (nc - full_c)
        out[i, O_FOLDS_BOTH_SHORT] = (nr - full_r) * (nc - full_c)
        if df == DF_OS:
            out[i, O_SRAM_IFMAP] = nc * k * m
            out[i, O_SRAM_FILTER] = nr * k * n
            out[i, O_SRAM_OFMAP] = m * n + folds * (r + c)
            out[i, O_DRAM_OFMAP] = m * n
        elif df == DF_WS:
            out[i, O_SRAM_IFMAP] = nc * m * k
            out[i, O_SRAM_FILTER] = k * n
            out[i, O_SRAM_OFMAP] = nr * m * n
            out[i, O_DRAM_OFMAP] = nr * m * n
        else:
            out[i, O_SRAM_IFMAP] = m * k
            out[i, O_SRAM_FILTER] = nc * k * n
            out[i, O_SRAM_OFMAP] = nr * m * n
            out[i, O_DRAM_OFMAP] = nr * m * n
        out[i, O_DRAM_IFMAP] = inp[i, I_IFMAP_UNIQUE]
        out[i, O_DRAM_FILTER] = k * n
        # used rows x used columns summed over folds = S_r x S_c
        mesh = r * c
        fout[i, F_MAPPING_EFF] = 100.0 * sr * sc / (folds * mesh)
        fout[i, F_COMPUTE_UTIL] = 100.0 * sr * sc * t / (folds * mesh * util_cycles)
        fout[i, F_OVERALL_UTIL] = 100.0 * m * n * k / (max(cycles, 1) * mesh)  # 1x1x1 on 1x1: 0 cycles
        # occupancy timeline: folds run column tile outer, row tile inner (SCALE-Sim's order)
        clear_bins(occupancy[i])
        for fc in range(nc):
            used_c = c if fc < nc - 1 else last_c
            for fr in range(nr):
                used_r = r if fr < nr - 1 else last_r
                start = (fc * nr + fr) * fold_cycles
                spread_fold(occupancy[i], used_r * used_c * t / mesh, start, start + fold_cycles, cycles + 1)
        normalise_bins(occupancy[i], cycles + 1)


@inline
def clear_bins(occ):
    for b in range(occ.shape[0]):
        occ[b] = 0.0


@inline
def spread_fold(occ, busy_pe_cycles, start, stop, span):
    """Add a fold's busy PE-cycles, spread evenly over cycles [start, stop), into the bins of
    the timeline [0, span) (bins with integer edges b * span // bins)."""
    bins = occ.shape[0]
    if stop <= start or span <= 0:
        return
    rate = busy_pe_cycles / (stop - start)
    b0 = start * bins // span
    b1 = min(bins - 1, (stop - 1) * bins // span)
    for b in range(b0, b1 + 1):
        lo = max(start, b * span // bins)
        hi = min(stop, (b + 1) * span // bins)
        if hi > lo:
            occ[b] += rate * (hi - lo)


@inline
def normalise_bins(occ, span):
    """Busy PE-cycles per bin -> mean fraction of busy PEs (empty bins stay 0)."""
    bins = occ.shape[0]
    for b in range(bins):
        width = (b + 1) * span // bins - b * span // bins
        if width > 0:
            occ[b] /= width


@kernel
def fold_occupancy(fold_start, busy, occ):
    """Occupancy timeline from fold boundaries: fold f runs [fold_start[f], fold_start[f + 1]) and
    keeps `busy[f]` of the mesh busy on average (fractions of all PEs x fold cycles); the timeline
    is [0, fold_start[-1]). Used where stalls stretch folds unevenly."""
    span = fold_start[fold_start.shape[0] - 1]
    clear_bins(occ)
    for f in range(busy.shape[0]):
        spread_fold(occ, busy[f], fold_start[f], fold_start[f + 1], span)
    normalise_bins(occ, span)
