"""Bandwidth-sweep harness (method step 4, docs/studies.md): what each column and channel really delivers.

Memcpy-style designs move bytes between DDR and the mem tiles and nothing else: a read streams a
DDR buffer from a shim MM2S channel into a ring of mem-tile buffers (a cyclic S2MM chain), a write
streams a mem-tile buffer (a cyclic MM2S chain) into a shim S2MM channel and on to DDR. The host
pushes transfers of the given size until every channel has moved ``total_bytes``. The harness varies
the transfer size, the concurrency (each column alone, all columns at once), the channels per
column and the direction (read, write, both at once), and reports effective bandwidth (bytes over
the simulated time, transfer set-up and the DDR cap included). It works on any arch: asymmetric
columns and the shared DDR cap show up as measured numbers, not assumptions.

It then compares two ways of splitting one streamed tensor over all columns: equal shares (every
column waits for the slowest: N x its bandwidth) against shares in proportion to each column's
measured bandwidth (approaching the sum), both simulated.
"""
from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..arch import NPU2, Arch
from ..design import Design, mm2s, s2mm
from ..mapping.paths import push_round, shares as split_units, whole_words
from ..simulation import simulate
from . import report
from .declaration import Study
from .variables import StudyVariable as Output, build

DIRECTIONS = ("read", "write", "both")
RING_BYTES = 4096  # mem-tile ring the stream lands in or leaves from (a sink/source, any size works)


def memcpy_design(arch: Arch, shares: dict[int, int], direction: str, channels: int, size: int) -> Design:
    """Columns ``shares`` (column -> bytes per channel) each move their bytes in ``size``-byte
    transfers on ``channels`` shim channels, reading, writing or both."""
    d = Design(arch, f"memcpy {direction} x{channels} {size} B")
    entries, waits = [], []
    for col, nbytes in shares.items():
        if nbytes <= 0:
            continue
        memt, shim = d.mem(col), d.shim(col)
        for ch in range(channels):
            unit = whole_words(min(size, nbytes))
            reps = math.ceil(nbytes / unit)
            for way in ("read", "write"):
                if direction not in (way, "both"):
                    continue
                # read: shim MM2S -> mem S2MM ring (a sink); write: mem MM2S ring (a source) -> shim S2MM
                src, dst = (mm2s(shim, ch), s2mm(memt, ch)) if way == "read" else (mm2s(memt, ch), s2mm(shim, ch))
                ring_ch = dst if way == "read" else src
                ring = d.buffer(memt, RING_BYTES, f"ring_{way}{col}_{ch}")
                d.start_chain(ring_ch, d.chain(d.bd(ring_ch, ring, RING_BYTES, name=f"ring_{way}{col}_{ch}"),
                                               cyclic=True))
                d.route(src, dst)
                host_ch = src if way == "read" else dst
                entries.append((d.bd(host_ch, d.ddr_buffer(unit, f"{way}{col}_{ch}"), unit, name=f"{way}{col}_{ch}"),
                                reps))
                waits.append(host_ch)
    push_round(d, entries)
    for ch in waits:
        d.wait(ch)
    return d


def _moved(shares: dict[int, int], size: int, channels: int, direction: str) -> float:
    per = sum(math.ceil(b / whole_words(min(size, b))) * whole_words(min(size, b)) for b in shares.values() if b > 0)
    return per * channels * (2 if direction == "both" else 1)


def bandwidth(arch: Arch = NPU2, sizes=(256, 1024, 4096, 16384, 65536), total_bytes: int = 1 << 18,
              channels=(1, 2)) -> xr.Dataset:
    """Effective bandwidth per column (alone) and for all columns at once, per direction, channel
    count and transfer size; and an equal vs proportional split of one streamed tensor.

    Returns
    -------
    xarray.Dataset: ``bytes_per_s`` over (column, direction, channels, size_bytes), where column
    ``all`` is every column at once (its bandwidth summed over columns); ``split_bytes_per_s`` over
    ``split`` (equal, proportional) for a tensor of ``total_bytes`` x columns read on every column
    with the largest size and one channel, with the shares each split gave each column.
    """
    cols = list(range(arch.columns))
    labels = [str(c) for c in cols] + ["all"]
    designs, where = [], []
    for ci, label in enumerate(labels):
        shares = {c: total_bytes for c in (cols if label == "all" else [int(label)])}
        for di, direction in enumerate(DIRECTIONS):
            for ki, n in enumerate(channels):
                for si, size in enumerate(sizes):
                    designs.append(memcpy_design(arch, shares, direction, n, size))
                    where.append((ci, di, ki, si, _moved(shares, size, n, direction)))
    # equal vs proportional split of one tensor over all columns: shares from each column's
    # measured single-channel read bandwidth at the largest size
    ds = simulate(designs)
    seconds = ds.total_cycles.values / arch.clock_hz
    bw = np.full((len(labels), len(DIRECTIONS), len(channels), len(sizes)), np.nan)
    for (ci, di, ki, si, moved), s in zip(where, seconds):
        bw[ci, di, ki, si] = moved / s
    alone = bw[:len(cols), DIRECTIONS.index("read"), 0, -1]
    tensor = total_bytes * len(cols)
    equal = {c: tensor // len(cols) for c in cols}
    prop = {c: 4 * words for c, words in zip(cols, split_units(tensor // 4, list(alone), "proportional"))}
    split = simulate([memcpy_design(arch, shares, "read", 1, sizes[-1]) for shares in (equal, prop)])
    split_bw = np.array([_moved(sh, sizes[-1], 1, "read") for sh in (equal, prop)]) / (
        split.total_cycles.values / arch.clock_hz)
    share = np.array([[equal[c] for c in cols], [prop[c] for c in cols]], float)
    return build(OUTPUTS, {
        "bytes_per_s": bw,
        "split_bytes_per_s": split_bw,
        "split_share_bytes": share,
        "column_read_bytes_per_s": alone,
    }, coords={"column": labels, "direction": list(DIRECTIONS), "channels": list(channels),
               "size_bytes": list(sizes), "split": ["equal", "proportional"], "split_column": cols},
        attrs={"study": "bandwidth", "arch": arch.name, "total_bytes": total_bytes,
               "ddr_bytes_per_s": arch.ddr_bytes_per_s, "clock_hz": arch.clock_hz})


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "bytes_per_s": Output(("column", "direction", "channels", "size_bytes"), "bytes/s",
        "effective bandwidth of memcpy transfers (bytes over simulated time; column all: every column at "
        "once, summed)"),
    "split_bytes_per_s": Output(("split",), "bytes/s",
        "one tensor read over every column, its bytes split equally or in proportion to each column's "
        "measured bandwidth"),
    "split_share_bytes": Output(("split", "split_column"), "bytes", "bytes each column reads under each split"),
    "column_read_bytes_per_s": Output(("split_column",), "bytes/s",
        "each column's measured read bandwidth alone (one channel, largest transfer): the proportional "
        "split's weights"),
}


STUDY = Study("bandwidth", bandwidth, OUTPUTS, report.bandwidth_markdown, report.bandwidth_figure)
