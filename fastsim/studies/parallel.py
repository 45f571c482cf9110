"""The optimization checklist's four studies are independent of each other (each starts from the
baseline), and so are the latency tails, so they may run in worker processes at once: on two
cores the longest (the dataflow study) runs beside the others. So are the regimes' plans, and the
what-ifs (each lever on each regime's plan), after them. The results are those of one process:
every task is deterministic and the one cache only remembers answers (it never changes one).

Workers are spawned processes that ignore Ctrl-C (the caller stops them); each runs its tasks
under the caller's settings with its share of the cores as engine threads (all cores per worker
measured no faster: 342 s of CPU against 288-333 s for Llama-3.1-8B, the walls within the VM's
noise), and shares the caller's disk cache directory (``FASTSIM_CACHE_DIR``), so what one worker
searched another finds on disk.
"""
from __future__ import annotations

import multiprocessing
import signal
import time
from dataclasses import replace
from typing import Callable

from .. import settings
from ..threads import available_cores

WHAT = {"ablate": "ranking op classes by whole-run NOOP deltas",
        "cuts": "searching dispatch cuts (dynamic programming over layer boundaries)",
        "overlays": "placing each regime (request mix)",
        "dataflow": "choosing a style per op",
        "latency": "sampling per-token latency and time to first token"}
# longest first, so that the short ones fill in beside it (Llama-3.1-8B, one process: the dataflow
# study 54 s; overlays 21 s; ablation 8 s; latency tails 7 s; cuts less). Splitting the dataflow study by regime
# gained nothing there: its prefill regime alone takes as long (one run each, 84 s against 77 s)
LONGEST_FIRST = ("dataflow", "overlays", "ablate", "latency", "cuts")


class Workers:
    """Worker processes kept for every phase of a run (the studies, then the plan of each regime,
    then the what-ifs): each worker imports fastsim and loads the compiled kernels once (seconds on
    a small machine), and keeps in memory what its earlier tasks searched. One worker: every task
    runs in this process. Leaving the ``with`` block on an error (Ctrl-C, a failed task) stops the
    workers at once."""

    def __init__(self, workers: int | None, most: int):
        self.size = min(most, available_cores() if workers is None else workers)
        if self.size < 1:
            raise ValueError(f"workers = {workers}: must be >= 1 (or None: one per core)")
        self.pool = None
        self.chosen = replace(settings.current(), threads=max(1, available_cores() // self.size), progress=False)
        if self.size > 1:
            self.pool = multiprocessing.get_context("spawn").Pool(self.size, initializer=_worker_start)

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, kind, value, tb) -> None:
        if self.pool is None:
            return
        if kind is None:
            self.pool.close()  # the workers end on their own
        else:
            self.pool.terminate()  # Ctrl-C or a failed task: the others stop too
        self.pool.join()

    def run(self, calls: dict[str, tuple[Callable, tuple]], say=None, phase: str = "tasks") -> dict:
        """``{name: fn(*args)}`` in ``calls``' order, the tasks sent longest first (``say``:
        progress per task, None for none; ``phase`` names the batch in it)."""
        say = say or (lambda step, text: None)
        if self.pool is None:
            results = {}
            for name, (fn, args) in calls.items():
                say(name, WHAT.get(name, name))
                results[name] = fn(*args)
            return results
        say(phase, f"{', '.join(calls)} in {self.size} worker processes at once")
        order = sorted(calls, key=_expected_rank)
        start = time.perf_counter()
        pending = {name: self.pool.apply_async(_study, (calls[name][0], calls[name][1], self.chosen))
                   for name in order}
        results = {}
        for name in order:
            results[name] = pending[name].get()
            say(name, f"done ({time.perf_counter() - start:.0f} s)")
        return {name: results[name] for name in calls}


def _expected_rank(name: str) -> int:
    """Where ``name`` comes in ``LONGEST_FIRST`` (by its first matching prefix; unknown: last)."""
    ranks = [i for i, prefix in enumerate(LONGEST_FIRST) if name.startswith(prefix)]
    return min(ranks) if ranks else len(LONGEST_FIRST)


def _worker_start() -> None:
    """Ctrl-C reaches the caller only; tqdm's lock is a thread lock (its default, a named
    semaphore, is reported leaked when a worker is stopped)."""
    import threading

    from tqdm import tqdm

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tqdm.set_lock(threading.RLock())


def _study(fn: Callable, args: tuple, chosen: settings.Settings):
    with settings.use(chosen):
        return fn(*args)
