"""The optimization checklist's four studies are independent of each other (each starts from the
baseline), and so are the latency tails, so they may run in worker processes at once: on two
cores the longest (the dataflow study) runs beside the others. The results are the same Datasets as in one process: every
study is deterministic and the one cache only remembers answers (it never changes one).

Workers are spawned processes that ignore Ctrl-C (the caller stops them); each runs its studies
under the caller's settings with its share of the cores as engine threads, and shares the
caller's disk cache directory (``FASTSIM_CACHE_DIR``), so what one worker searched the plan
step finds on disk.
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


def run_studies(calls: dict[str, tuple[Callable, tuple]], workers: int | None, say) -> dict:
    """``{name: fn(*args)}`` for ``calls`` (name -> (function, arguments)), in ``calls``' order:
    in this process one after another (``workers`` 1), else in ``workers`` processes at once
    (None: one per core, at most one per study), the longest first."""
    workers = min(len(calls), available_cores() if workers is None else workers)
    if workers < 1:
        raise ValueError(f"workers = {workers}: must be >= 1 (or None: one per core)")
    if workers == 1:
        results = {}
        for name, (fn, args) in calls.items():
            say(name, WHAT.get(name, name))
            results[name] = fn(*args)
        return results
    say("studies", f"{', '.join(calls)} in {workers} worker processes at once")
    chosen = replace(settings.current(), threads=max(1, available_cores() // workers), progress=False)
    order = sorted(calls, key=_expected_rank)
    pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_worker_start)
    try:
        start = time.perf_counter()
        pending = {name: pool.apply_async(_study, (calls[name][0], calls[name][1], chosen)) for name in order}
        results = {}
        for name in order:
            results[name] = pending[name].get()
            say(name, f"done ({time.perf_counter() - start:.0f} s)")
        pool.close()  # the workers end on their own
        pool.join()
    except BaseException:
        pool.terminate()  # Ctrl-C or a failed study: the others stop too
        pool.join()
        raise
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
