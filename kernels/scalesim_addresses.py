"""SCALE-Sim's operand addresses, generated from the layer geometry instead of materialised:
the ifmap/filter/ofmap address of an operand-matrix element, the order each read buffer prefetches
its operand in (column blocks of the operand, diagonally rolled out for some dataflows), and a CSR
table saying which hashed buffer lines hold each address. ``fastsim/systolic/demand.py`` builds the
same matrices in full with numpy; tests compare them.
"""
from ._jit import inline, kernel
from .systolic import DF_OS, DF_WS

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
G_FILTER_H = 10
G_OFMAP_H = 11
G_NCOL = 12

NULL = -1


@inline
def cdiv(a, b):
    return (a + b - 1) // b


@kernel
def fill_ifmap_tables(g, pix, win):
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
def prefetch_shape(g, df, operand, r, c):
    """(blocks, rows per block, width, diagonal rollout) of an operand's prefetch matrix."""
    m, k, n = g[G_M], g[G_K], g[G_N]
    if df == DF_OS:
        if operand == 0:
            return cdiv(m, r), k, r, True
        return cdiv(n, c), k, c, True
    if df == DF_WS:
        if operand == 0:
            return cdiv(k, r), m, r, True
        return cdiv(n, c), k, c, False
    if operand == 0:
        return cdiv(m, c), k, c, False
    return cdiv(k, r), n, r, True


@inline
def prefetch_elem(g, pix, win, df, operand, width, b, t, col):
    """Element (row b * rows per block + t, col) of the prefetch matrix: blocks of operand columns
    padded to `width`."""
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
def prefetch_elems(g, df, operand, r, c):
    """Length of the operand's prefetch order, padding nulls included."""
    blocks, brows, width, _ = prefetch_shape(g, df, operand, r, c)
    return blocks * brows * width


@inline
def _place(addr, unique, starts, count, lines, line, in_line, per_line):
    """Record that `line` holds `addr` (directly, or appended to its CSR list); returns the line
    and fill of the next address (SCALE-Sim's lines hold `per_line` addresses)."""
    if unique:
        lines[addr] = line
    else:
        lines[starts[addr] + count[addr]] = line
        count[addr] += 1
    if in_line + 1 == per_line:
        return line + 1, 0
    return line, in_line + 1


@kernel
def count_valid(g, operand):
    """Non-null elements of the operand's prefetch order: each operand element appears once. An
    ifmap window position is on the map when its row and its column are, independently, so the
    count is channels x (on-map rows summed over window rows) x (on-map columns over columns)."""
    if operand == 1:
        return g[G_K] * g[G_N]
    rows = 0
    for o_row in range(g[G_OFMAP_H]):
        rows += max(0, min(g[G_FILTER_H], g[G_IFMAP_H] - o_row * g[G_STRIDE]))
    cols = 0
    for o_col in range(g[G_OFMAP_W]):
        cols += max(0, min(g[G_FILTER_W], g[G_IFMAP_W] - o_col * g[G_STRIDE_W]))
    return g[G_CHANNELS] * rows * cols


@kernel
def build_lines(g, pix, win, df, operand, r, c, per_line, unique, starts, count, lines, addr_space):
    """Which hashed lines hold each address, in the prefetch order. Operands whose addresses are
    all distinct (filters; ifmaps whose conv windows do not overlap) need one pass: lines[addr] is
    the line. Otherwise (overlapping conv windows: ifmap only) a CSR table addr -> sorted line ids:
    addresses are counted in operand order (each element appears once in the prefetch order, and
    operand order is cache-friendly), then lines are appended in prefetch order. Returns the number
    of prefetch elements, nulls included."""
    blocks, brows, width, rollout = prefetch_shape(g, df, operand, r, c)
    rows = blocks * brows
    if unique:
        for a in range(addr_space):
            lines[a] = -1
    else:
        for a in range(addr_space + 1):
            starts[a] = 0
            count[a] = 0
        for i in range(g[G_M]):
            for j in range(g[G_K]):
                a = ifmap_addr(g, pix, win, i, j)
                if a != NULL:
                    starts[a + 1] += 1
        for a in range(addr_space):
            starts[a + 1] += starts[a]
    line = 0  # hashed line being filled, and how many addresses it holds
    in_line = 0
    if rollout:  # anti-diagonals from the top-left corner, each read bottom-up
        for d in range(rows + width):
            top = min(d, rows - 1)
            bottom = max(0, d - width + 1)
            b = top // brows
            t = top - b * brows
            for row in range(top, bottom - 1, -1):
                addr = prefetch_elem(g, pix, win, df, operand, width, b, t, d - row)
                if addr != NULL:
                    line, in_line = _place(addr, unique, starts, count, lines, line, in_line, per_line)
                t -= 1
                if t < 0:
                    b -= 1
                    t = brows - 1
    else:
        for b in range(blocks):
            for t in range(brows):
                for col in range(width):
                    addr = prefetch_elem(g, pix, win, df, operand, width, b, t, col)
                    if addr != NULL:
                        line, in_line = _place(addr, unique, starts, count, lines, line, in_line, per_line)
    return rows * width


@inline
def _circular(line, win_start, win_end):
    if win_start < win_end:
        return win_start <= line < win_end
    return line >= win_start or line < win_end


@inline
def holds(addr, unique, starts, lines):
    """Is `addr` in the prefetch order at all?"""
    if unique:
        return lines[addr] >= 0
    return starts[addr] < starts[addr + 1]


@inline
def in_window(addr, unique, starts, lines, win_start, win_end):
    """Does a line of the circular window [win_start, win_end) hold `addr`? (start == end: all.)"""
    if unique:
        return lines[addr] >= 0 and _circular(lines[addr], win_start, win_end)
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
