"""A fused group as a spatial pipeline (prefill): each op of the group on its own columns, the
stages running concurrently over token blocks and handing activations over through mem tiles
(``fastsim.mapping.pipeline``).

Columns go to the ops in proportion to their time on the whole array (``stage_columns``), so the
slowest stage, which sets the pace, is as fast as the split allows. The prompt runs in at least
``PIPELINE_BLOCKS`` blocks (fewer blocks leave nothing to overlap; each block re-streams the
group's weights). Per-op rows of a pipelined group carry shares of what the whole pipeline
measured (time, data-movement time, traffic), in proportion to each op's time alone on its
columns; the group's totals are exactly the pipeline's.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..arch import Arch
from ..errors import ConfigError
from ..graph import MATMUL
from ..mapping.mappers import op_design
from ..mapping.pipeline import pipeline, stage_columns
from ..mapping.placed import Placed
from ..validate import validate_design
from .op_result import OpResult

PIPELINE_BLOCKS = 4  # token blocks a pipelined prefill group runs in, at least (assumption)
MAX_BLOCKS = 256  # most blocks tried before a group is declared unpipelinable


def _stage_design(p: Placed, pins, arch: Arch, cols: int, col0: int):
    """(design, NOOP twin, dataflow, kernels, search gap) of one op on columns col0..col0+cols-1
    for one token block (``op_design`` placed there); an op class under ablation runs as its own
    twin."""
    made = op_design(p, arch, pins, at=(cols, col0))
    return (made.design, made.twin.build() if made.twin is not None else made.design, made.dataflow, made.kernels,
            made.search_gap)


def pipelined_group(unfused: list[list[Placed]], grouped: list[list[Placed]], alone: list[list[OpResult]],
                    tokens: int, pins, arch: Arch, kind: str):
    """One layer's ops of group ``kind`` as a pipeline, stage by stage. ``unfused``/``grouped``:
    the ops alone and fused (on-chip flags, token block); ``alone``: each one's fused engine result
    on the whole array, which sets the column split. Returns (placed ops, their stage designs, the
    pipeline, its NOOP twin, blocks, (dataflow, kernels) per op), ops in stage order; raises
    ConfigError saying why the group cannot be pipelined. Blocks double (from
    ``PIPELINE_BLOCKS``) until every stage's buffers fit."""
    sizes = [len(s) for s in unfused]
    flat_unfused, flat_grouped = [p for s in unfused for p in s], [p for s in grouped for p in s]
    if any(p.op.repeat != 1 for p in flat_unfused):
        raise ConfigError([f"{kind}: ops that repeat (per head) cannot be pipelined"], "pipeline")
    stages, start = [], 0
    for size in sizes:
        stages.append(list(range(start, start + size)))
        start += size
    weights = [r.cycles * p.op.repeat for r, p in zip((r for s in alone for r in s), flat_grouped)]
    cols = _columns(stages, weights, flat_unfused, pins, arch)
    blocks = max(PIPELINE_BLOCKS, max(math.ceil(tokens / p.op.m) for p in flat_grouped))
    while True:
        try:
            return _build(stages, cols, blocks, tokens, flat_unfused, flat_grouped, pins, arch, kind)
        except ConfigError as e:
            if blocks * 2 > min(tokens, MAX_BLOCKS) or not e.over_capacity:
                raise
            blocks *= 2


def _columns(stages, weights, unfused, pins, arch: Arch) -> list[int]:
    """Columns per op, the most balanced split in which each consumer has a free mem-tile S2MM for
    every producer column of the stage before (see ``_free_receives``)."""

    def feasible(split):
        for before, stage in zip(stages, stages[1:]):
            sources = sum(split[i] for i in before)
            if any(split[i] * _free_receives(unfused[i].op, pins, arch) < sources for i in stage):
                return False
        return True

    return stage_columns(weights, arch.columns, feasible)


def _free_receives(op, pins, arch: Arch) -> int:
    """Mem-tile S2MM channels per column a stage with its input on chip leaves free: the join takes
    one per compute row; a matmul's streamed weights take one more (see the design builders)."""
    weights = op.kind == MATMUL and not (pins.residency == "static" and op.w.kind == "weights")
    return max(1, arch.mem.s2mm_channels - arch.compute_rows - (1 if weights else 0))


def _build(stages, cols, blocks, tokens, unfused, grouped, pins, arch, kind):
    block = math.ceil(tokens / blocks)
    placed, designs, twins, how, start = {}, {}, {}, {}, 0
    order = [i for s in stages for i in s]
    for i, c in zip(order, cols):
        chip = replace(grouped[i].chip, window_bytes=0)
        one = Placed(replace(unfused[i].op, m=block), chip, kind=unfused[i].kind)
        designs[i], twins[i], *how[i] = _stage_design(one, pins, arch, c, start)
        placed[i] = Placed(replace(one.op, repeat=blocks), chip, (kind, c, start, blocks), unfused[i].kind)
        start += c
    whole = pipeline([[designs[i] for i in s] for s in stages], blocks, f"{kind} pipeline x{blocks}")
    validate_design(whole)
    twin = pipeline([[twins[i] for i in s] for s in stages], blocks, f"{kind} pipeline x{blocks} (noop)")
    return ([placed[i] for i in order], [designs[i] for i in order], whole, twin, blocks,
            [how[i] for i in order])


def share_results(placed: list[Placed], stage_results: list[OpResult], sim, where: tuple[int, int],
                  blocks: int) -> dict:
    """Per-op results of a pipelined group: each op's own stage results (bytes, buffers, kernels)
    with the pipeline's time, data-movement time and extra (hand-off) traffic shared out per
    block in proportion to the op's time alone on its columns."""
    whole, twin = where
    cycles = int(sim.total_cycles.values[whole])
    movement = int(sim.total_cycles.values[twin])
    levels = sim.level_bytes.values[whole] / blocks
    alone = np.array([r.cycles for r in stage_results], float)
    share = alone / alone.sum()
    extra = levels - sum(r.level_bytes for r in stage_results)
    out = {}
    for p, r, s in zip(placed, stage_results, share):
        out[p.key] = replace(r, cycles=int(round(cycles * s / blocks)), movement_cycles=int(round(movement * s / blocks)),
                             level_bytes=r.level_bytes + s * extra)
    return out
