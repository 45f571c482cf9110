"""The optimization checklist's four studies are independent of each other (each starts from the
baseline), and so are the latency tails, so they may run in worker processes at once: on two
cores the longest (the dataflow study's prefill regime) runs beside the others. So are the
regimes' plans, and the what-ifs (each lever on each regime's plan), after them. Tasks that
simulate the same large designs (the overlays study and the dataflow study's regimes of the same
request mix) share them through the cache directory: a worker claims a large candidate while it
simulates it, and another that reaches it waits for its result (``result_cache``); without a
disk tier such tasks run in one worker, one after the other. The results are those of one process:
every task is deterministic and the one cache only remembers answers (it never changes one).

Workers are spawned processes that ignore Ctrl-C (the caller stops them); each runs its tasks
under the caller's settings with its share of the cores as engine threads (all cores per worker
measured slower: Llama-3.1-8B 213 s and 324 s of CPU against 175 s and 233 s, though one worker
idles most of the studies phase), and shares the caller's disk cache directory (``FASTSIM_CACHE_DIR``), so what one worker
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
from .registry import STEPS, STUDIES

# the progress words and places of the tasks that are not a study's step (the steps': their registry)
OWN_WHAT = {"latency": "sampling per-token latency and time to first token",
            "prefetch": "simulating ahead the dataflow study's other style runs"}
OWN_ORDER = {"prefetch": 1, "latency": 4}
WHAT = {**{name: STUDIES[name].step.what for name in STEPS}, **OWN_WHAT}
# longest first, so that the short ones fill in beside it (Llama-3.1-8B, 2 workers, seconds in
# its worker: the dataflow study's prefill regime 144, overlays 49 once that regime's runs are on
# disk, latency tails 16, its decode regime 8, ablation 7, cuts 8); the prefill regime's other
# style runs are simulated ahead beside it (``dataflow_prefetch``), and the overlays study goes
# last, so that it finds the prefill runs it shares on disk (``result_cache``) rather than waits
# for them. A task named ``study@regime`` is one regime of a study; its rank is its best
# matching prefix's. Each step declares the places of its tasks (``Step.order``).
_PLACES = {**{prefix: place for name in STEPS for prefix, place in STUDIES[name].step.order.items()}, **OWN_ORDER}
LONGEST_FIRST = tuple(sorted(_PLACES, key=_PLACES.get))


def step_of(name: str) -> tuple[str, str]:
    """A task's progress step (its study) and what it does (``dataflow@prefill@1024``: the
    dataflow study's prefill regime)."""
    study, _, regime = name.partition("@")
    what = WHAT.get(study, study)
    return study, f"{what} ({regime})" if regime else what


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

    def run(self, calls: dict[str, tuple[Callable, tuple]], say=None, phase: str = "tasks",
            together: tuple[tuple[str, ...], ...] = ()) -> dict:
        """``{name: fn(*args)}`` in ``calls``' order, the tasks sent longest first (``say``:
        progress per task, None for none; ``phase`` names the batch in it). Each group of names
        in ``together`` runs in one worker, in ``calls``' order: tasks that simulate the same large
        designs then share them through that worker's memory instead of both simulating them."""
        say = say or (lambda step, text: None)
        if self.pool is None:
            results = {}
            for name, (fn, args) in calls.items():
                say(*step_of(name))
                results[name] = fn(*args)
            return results
        say(phase, f"{', '.join(calls)} in {self.size} worker processes at once")
        units = sorted(_units(calls, together), key=lambda unit: min(map(_expected_rank, unit)))
        start = time.perf_counter()
        pending = [(unit, self.pool.apply_async(_tasks, ([calls[name] for name in unit], self.chosen)))
                   for unit in units]
        results = {}
        for unit, answer in pending:
            for name, (value, seconds) in zip(unit, answer.get()):
                results[name] = value
                study, regime = name.partition("@")[::2]
                say(study, f"{regime + ' ' if regime else ''}done ({time.perf_counter() - start:.0f} s; "
                           f"{seconds:.0f} s in its worker)")
        return {name: results[name] for name in calls}


def _units(calls: dict, together) -> list[list[str]]:
    """The tasks of ``calls`` as units that each run in one worker: every group of ``together``
    (its names present in ``calls``, in ``calls``' order), every other task alone."""
    grouped = [[name for name in calls if name in group] for group in together]
    grouped = [unit for unit in grouped if unit]
    seen = {name for unit in grouped for name in unit}
    if len(seen) < sum(map(len, grouped)):
        raise ValueError(f"together = {together!r}: a task in two groups")
    return grouped + [[name] for name in calls if name not in seen]


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


def _tasks(tasks: list[tuple[Callable, tuple]], chosen: settings.Settings) -> list[tuple]:
    """Each task's (result, seconds it took), in order."""
    out = []
    with settings.use(chosen):
        for fn, args in tasks:
            start = time.perf_counter()
            out.append((fn(*args), time.perf_counter() - start))
    return out
