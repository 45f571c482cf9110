"""The tile array of an NPU device as mlir-aie's target model describes it, for placement.

``aie.logical_tile`` placement needs what the compiler knows of the device: which tile is a core,
mem or shim tile, how many DMA channels each has, which neighbour's memory a core can use and where
a cascade may run. These are the AIE-ML (AIE2) rules of mlir-aie's ``AIETargetModel.cpp``
(``BaseNPU1TargetModel``, ``BaseNPU2TargetModel``): row 0 shim NOC tiles, row 1 mem tiles, rows 2
to 5 compute tiles.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

CORE, MEM, SHIM, SHIM_PL = "CoreTile", "MemTile", "ShimNOCTile", "ShimPLTile"
TILE_TYPES = (CORE, MEM, SHIM, SHIM_PL)

# device -> columns (mlir-aie's AIEDevice enum: npu1 is the 4-column Phoenix array, npu2 Strix's 8)
_FULL_COLUMNS = {"npu1": 4, "npu2": 8}
# (S2MM, MM2S) DMA channels per tile type: AIE2TargetModel's DMA switchbox/shim-mux connections
DMA_CHANNELS = {CORE: (2, 2), MEM: (6, 6), SHIM: (2, 2)}


@dataclass(frozen=True)
class TileArray:
    """One device's tiles: ``columns`` x ``rows`` (6 on every NPU)."""

    name: str
    columns: int
    rows: int = 6

    def tile_type(self, col: int, row: int) -> str:
        return SHIM if row == 0 else MEM if row == 1 else CORE

    def has(self, col: int, row: int) -> bool:
        return 0 <= col < self.columns and 0 <= row < self.rows

    def dma_channels(self, tile: tuple[int, int]) -> tuple[int, int]:
        """(S2MM, MM2S) channels of a tile (mlir-aie's ``getDMACapacity``)."""
        return DMA_CHANNELS[self.tile_type(*tile)]

    def mem_affinity(self, core: tuple[int, int], mem: tuple[int, int]) -> bool:
        """Whether a core can use the memory of tile ``mem`` (``isLegalMemAffinity``): its own, the
        one west of it and the ones north and south (a mem tile's memory below it is not)."""
        (cc, cr), (mc, mr) = core, mem
        west = cc == mc + 1 and cr == mr
        internal = cc == mc and cr == mr
        north = cc == mc and cr == mr - 1
        south = cc == mc and cr == mr + 1
        if self.tile_type(cc, cr) == MEM:
            return cc == mc - 1 and cr == mr or internal or west
        return south and self.tile_type(mc, mr) != MEM or north or west or internal

    def cascade_ok(self, src: tuple[int, int], dst: tuple[int, int]) -> bool:
        """A cascade runs from a core to the one below it or to the one east of it (the placer's
        predicate, as ``AIELowerCascadeFlows`` checks it)."""
        (sc, sr), (dc, dr) = src, dst
        return sc == dc and sr == dr + 1 or sc == dc - 1 and sr == dr

    def core_neighbour_count(self, tile: tuple[int, int]) -> int:
        """Compute tiles directly above and below (how the placer finds interior tiles)."""
        col, row = tile
        return sum(0 <= r < self.rows and self.tile_type(col, r) == CORE for r in (row - 1, row + 1))

    def mem_affinity_neighbours(self, tile: tuple[int, int]) -> list[tuple[int, int]]:
        """Compute tiles next to ``tile`` whose memory it shares (``forEachMemAffinityNeighbor``)."""
        out = []
        for dc, dr in ((0, -1), (0, 1), (-1, 0), (1, 0)):
            nb = (tile[0] + dc, tile[1] + dr)
            if self.has(*nb) and self.tile_type(*nb) == CORE and self.mem_affinity(tile, nb):
                out.append(nb)
        return out


def tile_array(device: str) -> TileArray | None:
    """The tile array of an ``aie.device`` name (``npu1``, ``npu1_2col``, ``npu2``, ``npu2_4col``),
    or None for a device whose array fastsim does not know (AIE1, Versal, placeholders)."""
    m = re.fullmatch(r"(npu[12])(?:_(\d)col)?", device)
    if not m:
        return None
    return TileArray(device, int(m.group(2)) if m.group(2) else _FULL_COLUMNS[m.group(1)])
