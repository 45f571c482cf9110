"""The kernel calls a run completed, read from where each core's program stopped.

A core program's static totals (loops multiplied out) are what it would run to its end; a core
that loops "forever" (IRON's persistent cores) or is left waiting never gets there, so its totals
say nothing. Where the engine left the core (its program counter and the stack of open loops with
their remaining iterations) determines exactly how often each call has completed: every call
before that point in the current iteration of every open loop, plus whole bodies for the
iterations each open loop has finished. A call still running when the run ended is not counted.
"""
from __future__ import annotations

import numpy as np

from fastsim.kernels import layout as L


def calls_done(prog: np.ndarray, cores: np.ndarray, kst: np.ndarray, kloop: np.ndarray,
               kernel_names: list[str]) -> dict[str, tuple[int, int]]:
    """Completed (calls, cycles) per kernel name over all cores, from one design's tables and the
    engine's final core state (``kst``, ``kloop``)."""
    out: dict[str, tuple[int, int]] = {}
    for k in range(len(cores)):
        start, end = int(cores[k, L.CORE_START]), int(cores[k, L.CORE_END])
        stack = [(int(kloop[k, d, 0]), int(kloop[k, d, 1])) for d in range(int(kst[k, L.K_DEPTH]))]
        done = int(kst[k, L.K_STATE]) == L.KS_DONE
        for row, times in _times_done(prog, start, end, int(kst[k, L.K_PC]), stack, done):
            name = kernel_names[int(prog[row, L.PROG_B])]
            calls, cycles = out.get(name, (0, 0))
            out[name] = (calls + times, cycles + times * int(prog[row, L.PROG_A]))
    return out


def _times_done(prog, start: int, end: int, pc: int, stack: list[tuple[int, int]], done: bool):
    """(row, completed executions) of every compute row of one core's program.

    A row inside open loops 0..e-1 (and not inside open loop e) has run, for each open loop d < e,
    ``iterations finished by d`` times the product of the counts of its loops nested in d; plus,
    when it lies before the current position at level e, once per iteration of its own loops
    inside level e."""
    open_starts = [s for s, _ in stack]
    finished = [int(prog[s, L.PROG_A]) - left for s, left in stack]
    enclosing: list[int] = []
    for row in range(start, end):
        op = int(prog[row, L.PROG_OP])
        if op == L.OP_LOOP:
            enclosing.append(row)
        elif op == L.OP_END:
            enclosing.pop()
        elif op == L.OP_COMPUTE:
            counts = [int(prog[s, L.PROG_A]) for s in enclosing]
            if done:
                yield row, _product(counts)
                continue
            e = 0
            while e < len(stack) and e < len(enclosing) and enclosing[e] == open_starts[e]:
                e += 1
            times = sum(finished[d] * _product(counts[d + 1:]) for d in range(e))
            here = open_starts[e] if e < len(stack) else pc
            if row < here:
                times += _product(counts[e:])
            yield row, times


def _product(counts: list[int]) -> int:
    result = 1
    for c in counts:
        result *= c
    return result
