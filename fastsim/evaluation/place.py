"""Placement of a graph's ops: fusion groups applied (on-chip hand-offs, token blocks); each op
placed is then designed by its kind's mapper (``mapping.mappers``)."""
from __future__ import annotations

import math
from dataclasses import replace

from ..arch import Arch
from ..cache import CACHE, Region
from ..graph import OpGraph
from ..mapping.fusion import (FLASH_ATTENTION, FLASH_KV_BLOCK, Group, block_tokens, chain_groups,
                              intermediate_bytes_per_token, kind_by_op, on_chip_flags, runs_flash)
from ..mapping.mappers import KIND_TRAITS
from ..mapping.placed import Placed
from .pins import GraphPins


REGION = "placement"  # fastsim.cache region of placements (``place``)
# a chained placement is kept per cut: an ablation sweep's task meets its shapes' cuts (5 batches x
# 25 cuts, and 2 unchained placements per shape) between two uses of one, and 128 entries evicted
# them all (a third of a point's time). No more: a chained decode step's placement holds ~300 kB
CACHE.add_region(Region(REGION, 160))


def place(graph: OpGraph, groups: tuple[Group, ...], pins: GraphPins, arch: Arch, fused: set[str], chain: bool,
          dispatch: list[int]) -> list[Placed] | None:
    """The ops with the pattern ``groups`` of kinds ``fused`` or ``chain`` (a whole dispatch)
    applied; None if a chain cannot keep every activation on chip. Prefill groups run in token
    blocks whose intermediates fit (``fusion.block_tokens``); a group with no such block stays
    unfused.

    Kept by what decides it (cache region ``placement``): a sweep's points that differ only in what
    placement does not read (an ablation, DDR bandwidth, and the cuts unless the whole dispatch is
    chained) get the same ``Placed`` objects, whose keys are made once. The graph is keyed by
    identity (hashing every op per call would cost what is saved); each entry holds its graph, so
    no other graph can take its id while it is kept."""
    l2 = arch.columns * arch.mem_rows * arch.mem.memory_bytes
    key = (id(graph), groups, l2, frozenset(fused), chain, tuple(dispatch) if chain else ())  # only a chain reads it
    kept = CACHE.get(REGION, key)
    if kept is None:
        kept = (graph, _place(graph, groups, l2, fused, chain, dispatch))
        CACHE.put(REGION, key, kept)
    return None if kept[1] is None else list(kept[1])


def _place(graph: OpGraph, groups: tuple[Group, ...], l2: int, fused: set[str], chain: bool,
           dispatch: list[int]) -> tuple[Placed, ...] | None:
    """``place``'s placement, worked out."""
    tokens = graph.token_rows
    group_of: list[Group | None] = [None] * len(graph.ops)
    blocks = {}
    if chain:
        if block_tokens(tokens, graph.chain_live_bytes_per_token, l2) != tokens:
            return None
        chosen = chain_groups(graph, dispatch)
    else:
        chosen = []
        for g in groups:
            if g.kind not in fused:
                continue
            # flash attention needs no token blocks (its hand-offs stream through a ring)
            b = tokens if g.kind == FLASH_ATTENTION else block_tokens(tokens, intermediate_bytes_per_token(graph, g), l2)
            if b:
                blocks[g] = b
                chosen.append(g)
    for g in chosen:
        for i in g.ops:
            group_of[i] = g
    flash = {i for g in groups if g.kind == FLASH_ATTENTION for i in g.ops}
    kinds = kind_by_op(graph, groups)
    out = []
    for i, (op, chip) in enumerate(zip(graph.ops, on_chip_flags(graph, group_of, flash, KIND_TRAITS))):
        block, runs = blocks.get(group_of[i], tokens), 1
        if block < tokens and op.m == tokens:
            runs = math.ceil(tokens / block)
            op = replace(op, m=block, repeat=op.repeat * runs)
        if op.online_rescale_cycles and runs_flash(group_of[i], i, flash):
            extra = op.online_rescale_cycles / FLASH_KV_BLOCK  # once per block of keys
            op = replace(op, vector_cycles_per_elem=op.vector_cycles_per_elem + extra)
        out.append(Placed(op, chip, kind=kinds[i], runs=runs))
    return tuple(out)
