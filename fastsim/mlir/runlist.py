"""Run lists: a runtime sequence that configures other devices of the file and runs them.

``aiex.configure @dev { aiex.run @seq(...) aiex.run @seq(...) }`` loads the configuration ``@dev``
and inlines its runtime sequence once per ``aiex.run``; the SSA form of mlir-aie's earlier syntax,
``%c = aiex.configure @dev`` then ``aiex.run %c -> @seq(...)`` ops, is read to the same blocks
(``fastsim.mlir.sequence``). Each configure block is one simulation of
its device with the runs' host steps one after the other: cores, locks and DMA state carry over
from one run to the next within a block, as on the part (the configuration is not reloaded). The
next block starts from that device's reset state. A run list's cycles are the sum of its blocks'
plus ``reconfigure_cycles`` per switch of configuration: fastsim does not model loading a
configuration (a PDI or control packets), so the default is 0 and a measured time is an input.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError, Problems
from .reader import DesignInfo
from .run import simulate_design, summary


@dataclass
class RunListResult:
    """Each configure block's step and Dataset, in order, and the run list's cycles."""

    steps: list  # [(RunStep, Dataset)]
    reconfigure_cycles: int  # per switch of configuration

    @property
    def total_cycles(self) -> int:
        return (sum(int(ds.total_cycles[0]) for _, ds in self.steps)
                + self.reconfigure_cycles * max(0, len(self.steps) - 1))


def simulate_run_list(info: DesignInfo, *, reconfigure_cycles: int = 0, skip: bool = True, trace: bool = False,
                      max_events: int = 200_000) -> RunListResult:
    """Simulate each configure block of ``info.run_list`` (see the module's docstring)."""
    p = Problems("run list")
    p.check(bool(info.run_list), "run_list", [], f"{info.design.name} holds no aiex.configure of another device")
    p.number("reconfigure_cycles", reconfigure_cycles, integer=True, lo=0, unit="cycles per switch")
    p.raise_if_any()
    return RunListResult([(step, _simulate_step(k, step, skip=skip, trace=trace, max_events=max_events))
                          for k, step in enumerate(info.run_list, 1)], int(reconfigure_cycles))


def _simulate_step(k: int, step, **options):
    """One configure block's simulation; a design error names the block, since every block's
    design is otherwise reported by its device alone."""
    try:
        return simulate_design(step.info, **options)
    except ConfigError as e:
        where = f"run list configuration {k} (aiex.configure @{step.device}, line {step.line})"
        raise ConfigError([f"{where}: {problem}" for problem in e.problems], e.what, e.over_capacity) from e


def run_list_summary(result: RunListResult, info: DesignInfo) -> dict:
    """``run.summary`` of each block, with its device and runs, and the run list's cycles."""
    return {"design": info.design.name, "total_cycles": result.total_cycles,
            "reconfigure_cycles": result.reconfigure_cycles,
            "run_list": [{"device": step.device, "runs": list(step.sequences), **summary(ds, step.info)}
                         for step, ds in result.steps]}


def format_run_list(s: dict) -> str:
    """``run_list_summary`` as ``fastsim run design`` prints it: one line per block, its summary,
    then the total."""
    from .run import format_design_summary

    lines = [f"run list {s['design']}: {len(s['run_list'])} configuration(s)"]
    for k, step in enumerate(s["run_list"], 1):
        runs = ", ".join(f"@{r}" for r in dict.fromkeys(step["runs"]))
        lines.append(f"[{k}] aiex.configure @{step['device']}: {len(step['runs'])} run(s) of {runs}, "
                     f"{step['total_cycles']:,} cycles")
        lines += ["  " + line for line in format_design_summary(step).splitlines()]
    switches = max(0, len(s["run_list"]) - 1)
    lines.append(f"total cycles    {s['total_cycles']:,}  ({switches} reconfiguration(s) at "
                 f"{s['reconfigure_cycles']:,} cycles each)")
    return "\n".join(lines)
