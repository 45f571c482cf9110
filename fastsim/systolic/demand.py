"""SCALE-Sim's operand, prefetch and demand matrices, materialised with numpy.

Only for what needs every address: SRAM traces (``traces.py``) and the slow reference in tests.
The kernels never build these; they generate the same addresses on the fly.

Operand matrices hold addresses (SCALE-Sim's offsets: ifmap 0, filter 10,000,000, ofmap
20,000,000; -1 where a conv window runs off the ifmap). Demand matrices have one row per mesh
cycle and one column per mesh edge port, -1 where a port is idle.
"""
from __future__ import annotations


import numpy as np

from .inputs import Layer

NULL = -1
OFFSETS = (0, 10_000_000, 20_000_000)


def operand_matrices(layer: Layer, offsets=OFFSETS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ifmap M x K, filter K x N, ofmap M x N) address matrices."""
    ih, iw, fh, fw, ch, nf, sh, sw = layer.geometry
    ow = layer.ofmap_w
    i = np.arange(layer.m)[:, None]
    j = np.arange(layer.k)[None, :]
    i_row, i_col = (i // ow) * sh, (i % ow) * sw
    c_row, rest = np.divmod(j, fw * ch)
    c_col, c_ch = np.divmod(rest, ch)
    inside = (c_row + i_row < ih) & (c_col + i_col < iw)
    ifmap = np.where(inside, ((i_row + c_row) * iw + i_col + c_col) * ch + c_ch + offsets[0], NULL)
    k = np.arange(layer.k)[:, None]
    filt = np.arange(nf)[None, :] * layer.k + k + offsets[1]
    ofmap = nf * np.arange(layer.m)[:, None] + np.arange(nf)[None, :] + offsets[2]
    return ifmap.astype(np.int64), filt.astype(np.int64), ofmap.astype(np.int64)


def _pad(mat: np.ndarray, rows: int, cols: int) -> np.ndarray:
    out = np.full((rows, cols), NULL, dtype=np.int64)
    out[:mat.shape[0], :mat.shape[1]] = mat
    return out


def _nulls(rows: int, cols: int) -> np.ndarray:
    return np.full((rows, cols), NULL, dtype=np.int64)


def skew(mat: np.ndarray) -> np.ndarray:
    """Delay column c by c rows (the systolic wavefront)."""
    rows, cols = mat.shape
    out = _nulls(rows + cols - 1, cols)
    c = np.arange(cols)
    out[np.arange(rows)[:, None] + c[None, :], c[None, :]] = mat
    return out


def diagonal_rollout(mat: np.ndarray) -> np.ndarray:
    """Anti-diagonals from the top-left corner, each read bottom-up (SCALE-Sim's prefetch order)."""
    rows, cols = mat.shape
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    order = np.lexsort((-r.ravel(), (r + c).ravel()))
    return mat.ravel()[order]


def _slices(extent: int, size: int) -> list[tuple[int, int]]:
    return [(s, min(s + size, extent)) for s in range(0, extent, size)]


def _stack_cols(mat: np.ndarray, width: int) -> np.ndarray:
    """Column blocks of `width` (the last padded), stacked vertically."""
    return np.vstack([_pad(mat[:, a:b], mat.shape[0], width) for a, b in _slices(mat.shape[1], width)])


def prefetch_orders(layer: Layer, rows: int, cols: int, dataflow: str, offsets=OFFSETS):
    """(ifmap, filter) in the order SCALE-Sim's read buffers fetch them from DRAM (-1: padding)."""
    ifmap, filt, _ = operand_matrices(layer, offsets)
    if dataflow == "os":
        return diagonal_rollout(_stack_cols(ifmap.T, rows)), diagonal_rollout(_stack_cols(filt, cols))
    if dataflow == "ws":
        return diagonal_rollout(_stack_cols(ifmap, rows)), _stack_cols(filt, cols).ravel()
    return _stack_cols(ifmap.T, cols).ravel(), diagonal_rollout(_stack_cols(filt.T, rows))


def demand_matrices(layer: Layer, rows: int, cols: int, dataflow: str, offsets=OFFSETS):
    """(ifmap, filter, ofmap) demand matrices, folds in SCALE-Sim's order (column tiles outer)."""
    R, C = rows, cols
    ifmap, filt, ofmap = operand_matrices(layer, offsets)
    M, K, N = layer.m, layer.k, layer.n
    d_if, d_fi, d_of = [], [], []
    if dataflow == "os":
        for c0, c1 in _slices(N, C):
            for r0, r1 in _slices(M, R):
                d_if.append(skew(np.vstack([_pad(ifmap.T[:, r0:r1], K, R), _nulls(C - 1, R)])))
                d_fi.append(skew(np.vstack([_pad(filt[:, c0:c1], K, C), _nulls(R - 1, C)])))
                block = np.flip(_pad(ofmap[r0:r1, c0:c1], R, C), 0)
                d_of.append(skew(np.vstack([_nulls(K - 1, C), block])))
    elif dataflow == "ws":
        for c0, c1 in _slices(N, C):
            for r0, r1 in _slices(K, R):
                d_if.append(skew(np.vstack([_nulls(R, R), _pad(ifmap[:, r0:r1], M, R), _nulls(C - 1, R)])))
                d_fi.append(np.vstack([np.flip(_pad(filt[r0:r1, c0:c1], R, C), 0), _nulls(R + C + M - 2, C)]))
                d_of.append(skew(np.vstack([_nulls(2 * R - 1, C), _pad(ofmap[:, c0:c1], M, C)])))
    else:
        for c0, c1 in _slices(M, C):
            for r0, r1 in _slices(K, R):
                d_if.append(np.vstack([np.flip(_pad(ifmap.T[r0:r1, c0:c1], R, C), 0), _nulls(R + C + N - 2, C)]))
                d_fi.append(skew(np.vstack([_nulls(R, R), _pad(filt[r0:r1, :].T, N, R), _nulls(C - 1, R)])))
                d_of.append(skew(np.vstack([_nulls(2 * R - 1, C), _pad(ofmap[c0:c1, :].T, N, C)])))
    return np.vstack(d_if), np.vstack(d_fi), np.vstack(d_of)
