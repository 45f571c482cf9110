"""Mapping of an LLM's ops: fusion groups applied to the graph (on-chip hand-offs, token blocks) and
one design per op instance, matmuls through the mapper's search."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

from ..arch import Arch
from ..design import Design
from ..errors import ConfigError
from ..validate import validate_design
from ..mapping import Matmul, Pins, matmul_design, search
from ..mapping.design import NOOP_DROPS as MATMUL_NOOP_DROPS
from ..mapping.fusion import FLASH_KV_BLOCK, GROUPS, OnChip, block_tokens, group_ids, is_flash, on_chip_flags
from ..workloads.vector import VectorOp, vector_design
from .graph import Op
from .model import ModelConfig, Precision
from .study import LlmStudy

_LLM_TOP = 3  # candidates simulated per distinct op (plus the baseline where it fits)


@dataclass(frozen=True)
class Placed:
    """One op as it runs: its (possibly token-blocked) shape and its on-chip hand-offs."""

    op: Op
    chip: OnChip = OnChip()
    pipelined: tuple = ()  # (group kind, columns, first column, blocks) when its group is a pipeline

    @property
    def key(self) -> tuple:
        """Instances with equal keys have identical designs (simulated once)."""
        return self.op.shape_key + (self.op.name, self.chip.x, self.chip.y, self.chip.window_bytes, self.pipelined)


def kind_of(name: str) -> str:
    """The fusion group kind an op belongs to ("" if none)."""
    return next((g for g, members in GROUPS.items() if name in members), "")


def place(ops: list[Op], model: ModelConfig, precision: Precision, study: LlmStudy, arch: Arch,
          fused: set[str], chain: bool, dispatch: list[int]) -> list[Placed] | None:
    """The ops with fusion ``fused`` (group kinds) or ``chain`` (a whole dispatch) applied; None if
    a chain cannot keep every activation on chip. Prefill groups run in token blocks whose
    intermediates fit (``fusion.block_tokens``); a group kind with no such block stays unfused."""
    tokens = study.batch * (1 if study.regime == "decode" else study.prompt)
    a = precision.activation_bytes
    l2 = arch.columns * arch.mem_rows * arch.mem.memory_bytes
    h, f = model.hidden_size, model.ffn_size
    widths = {"norm_qkv": h * a, "ffn": 2 * f * a}  # flash attention needs no token blocks (a ring)
    blocks = {}
    if chain:
        # live at once between ops: the residual stream, a normed copy and the FFN's two halves
        if block_tokens(tokens, (2 * h + 2 * f) * a, l2) != tokens:
            return None
    else:
        for kind in list(fused):
            b = tokens if kind == "flash_attention" else block_tokens(tokens, widths[kind], l2)
            if b:
                blocks[kind] = b
            else:
                fused = fused - {kind}
    names = [op.name for op in ops]
    layers = [op.layer for op in ops]
    groups = group_ids(names, layers, dispatch, fused, chain)
    flags = on_chip_flags(names, layers, groups, [op.y_kind for op in ops])
    out = []
    for op, chip in zip(ops, flags):
        kind = kind_of(op.name) if chip.group and not chain else ""
        block = blocks.get(kind, tokens)
        if kind and block < tokens and op.m == tokens:
            op = replace(op, m=block, repeat=op.repeat * math.ceil(tokens / block))
        if op.name == "softmax" and is_flash(chip.group, op.name):
            # online softmax: the running output (head_dim per row) is rescaled once per KV block
            extra = study.costs.elementwise * model.head_dim / FLASH_KV_BLOCK
            op = replace(op, vector_cycles_per_elem=op.vector_cycles_per_elem + extra)
        out.append(Placed(op, chip))
    return out


def _pinned(table: dict, op: Op):
    """A pin by op name, else by fusion group kind (overlays place groups), else by op class."""
    return table.get(op.name) or table.get(kind_of(op.name)) or table.get(op.op_class)


def _columns(study: LlmStudy, op: Op, arch: Arch) -> int | None:
    cols = _pinned(study.columns, op)
    if cols is not None and cols > arch.columns:
        raise ConfigError([f"columns[{op.name}] = {cols}: the arch has {arch.columns} columns"], "llm mapping")
    return cols


def _matmul(p: Placed, study: LlmStudy, precision: Precision) -> Matmul:
    op = p.op
    static = study.residency == "static" and op.w_kind == "weights"
    return Matmul(op.m, op.k, op.n, precision.compute_dtype, op.x_bytes, op.w_bytes, op.y_bytes,
                  study.kernel_efficiency, 0, op.cast_cycles_per_weight, op.macs_scale, static_b=static,
                  name=op.name, a_on_chip=p.chip.x, c_on_chip=p.chip.y,
                  onchip_window_bytes=p.chip.window_bytes)


@dataclass(frozen=True)
class NoopTwin:
    """An op design's NOOP twin: every kernel a 1-cycle pass, kernels named in ``drop`` gone, every
    byte still moving; its time is the op's data-movement time. ``build`` makes it as a Design
    (pipelines compose designs); a lone op derives it from its own lowered tables
    (``fastsim.lower.noop_twin`` with ``drop``), which is cheaper and the same."""

    build: Callable[[], Design]
    drop: tuple[str, ...] = ()


def op_design(p: Placed | Op, arch: Arch, study: LlmStudy, precision: Precision,
              at: tuple[int, int] | None = None):
    """(design, dataflow, engine result when the search already simulated exactly this design or
    None, kernels it links, its ``NoopTwin`` or None when it is a NOOP design already). Matmul-like ops take the mapper's searched mapping (``--dataflow`` and
    ``--columns`` pin the search); the search always sees the op as it really computes, so NOOP
    ablation keeps the mapping and removes only the compute. ``at`` = (columns, first column) places
    the op on its own columns (a pipeline stage) instead of where the search or pins put it."""
    p = p if isinstance(p, Placed) else Placed(p)
    op = p.op
    noop = op.op_class in study.noop
    cols, col0 = at if at else (_columns(study, op, arch), None)
    if op.kind == "vector":
        spec = VectorOp(op.m, op.n, op.x_bytes, op.y_bytes, op.vector_cycles_per_elem, op.x_inputs, noop,
                        cols, op.name, p.chip.x, p.chip.y, p.chip.window_bytes, col0 or 0,
                        "proportional" if study.stream_split == "auto" else study.stream_split)
        design = vector_design(spec, arch)
        if p.chip.any:  # on-chip buffers must fit next to the stream buffers: say so before simulating
            validate_design(design)
        twin = None if noop else NoopTwin(lambda: vector_design(replace(spec, noop=True), arch))
        return design, "stream", None, frozenset({("vector", op.op_class)}), twin
    real = _matmul(p, study, precision)
    chosen = _pinned(study.dataflow, op)
    flows = (chosen,) if chosen else (("ws",) if real.static_b else ())
    found = search(real, arch, Pins(dataflow=flows, cols=cols, col0=col0,
                                  stream_split=None if study.stream_split == "auto" else study.stream_split), top=1 if at else _LLM_TOP, keep=0)
    best = found.best
    kernels = {("matmul", best.tile, best.datapath or precision.compute_dtype)}
    if real.cast_cycles_per_weight:
        kernels.add(("vector", "cast"))
    twin = None if noop else NoopTwin(lambda: matmul_design(real, best, arch, noop=True), MATMUL_NOOP_DROPS)
    if not noop and "cast" not in study.noop:
        return found.best_design, best.dataflow, found.best_simulation, frozenset(kernels), twin
    run = replace(real, cast_cycles_per_weight=0.0) if "cast" in study.noop else real
    return matmul_design(run, best, arch, noop=noop), best.dataflow, None, frozenset(kernels), twin
