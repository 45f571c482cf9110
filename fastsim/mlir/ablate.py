"""Kernel ablation of a design read from MLIR: which kernel's time the design waits on.

Each kernel in turn becomes a 1-cycle pass (every byte still moves, every lock still turns) and the
design is simulated again; the cycles saved rank the kernels. A kernel whose removal saves little
is hidden behind data movement or other kernels; one that saves much is on the critical path.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..design import Compute, Loop
from .reader import DesignInfo
from .run import simulate_design


@dataclass(frozen=True)
class Ablation:
    """One kernel made a 1-cycle pass: the design's cycles then, and what that saved."""

    kernel: str
    calls: int  # calls the design's run completed, all cores (a persistent core's loops never end)
    cycles: int
    saved_cycles: int

    @property
    def saved_fraction(self) -> float:
        return self.saved_cycles / (self.cycles + self.saved_cycles) if self.cycles + self.saved_cycles else 0.0


def ablate(info: DesignInfo, *, skip: bool = True) -> tuple[int, list[Ablation]]:
    """The design's cycles, and one Ablation per kernel (``func.call`` target and inline code),
    most time saved first."""
    ran = simulate_design(info, skip=skip)
    base = int(ran.total_cycles[0])
    done = {str(k): int(c) for k, c in zip(ran.kernel.values, ran.kernel_calls.values[0])}
    out = []
    for name in sorted(_kernels(info)):
        calls = done.get(name, 0)
        cores = {tile: _as_pass(ops, name) for tile, ops in info.design.cores.items()}
        twin = replace(info, design=replace(info.design, cores=cores))
        cycles = int(simulate_design(twin, skip=skip).total_cycles[0])
        out.append(Ablation(name, calls, cycles, base - cycles))
    out.sort(key=lambda a: (-a.saved_cycles, a.kernel))
    return base, out


def _kernels(info: DesignInfo) -> set[str]:
    """Every kernel a core program calls (reached in the run or not)."""
    out: set[str] = set()

    def walk(ops):
        for op in ops:
            if isinstance(op, Compute):
                out.add(op.name)
            elif isinstance(op, Loop):
                walk(op.body)

    for ops in info.design.cores.values():
        walk(ops)
    return out


def _as_pass(ops, name: str) -> list:
    """A core program with ``name``'s calls taking 1 cycle each (the call still happens: the
    core still waits for its locks in the same order)."""
    out = []
    for op in ops:
        if isinstance(op, Compute) and op.name == name:
            out.append(Compute(1, name))
        elif isinstance(op, Loop):
            out.append(Loop(op.count, tuple(_as_pass(op.body, name))))
        else:
            out.append(op)
    return out


def format_ablation(base: int, rows: list[Ablation]) -> str:
    """The ranking as ``fastsim run design --ablate`` prints it."""
    lines = [f"  ablation        each kernel in turn a 1-cycle pass (design: {base:,} cycles)"]
    for a in rows:
        lines.append(f"    {a.kernel:<24}{a.calls:>10,} calls  {a.cycles:>14,} cycles  saves {a.saved_cycles:>12,}"
                     f"  ({100 * a.saved_fraction:5.1f} %)")
    return "\n".join(lines)
