"""The optimization checklist's studies run in worker processes at once with the same results as
one after another in this process (``fastsim.studies.parallel``); a study's error reaches the
caller whole."""
import pytest
import xarray as xr

from fastsim import NPU2
from fastsim.errors import ConfigError
from fastsim.llm import LlmStudy
from fastsim.llm.model import ModelConfig
from fastsim.studies.ablate import ablate
from fastsim.studies.cuts import cuts
from fastsim.studies.parallel import Workers
from fastsim.studies.regimes import parse_regimes


def run_studies(calls, workers, say):
    """The studies of ``calls`` on a pool of ``workers`` (1: in this process), as optimize runs them."""
    with Workers(workers, len(calls)) as pool:
        return pool.run(calls, say, phase="studies")


SMALL = ModelConfig("small", 512, 2, 8, 2, 64, 1024, 1000)


@pytest.mark.slow
def test_workers__worker_processes_give_the_datasets_of_one_process():
    regimes = parse_regimes(["decode:256"])
    calls = {"ablate": (ablate, (LlmStudy(model=SMALL), regimes, NPU2)),
             "cuts": (cuts, (LlmStudy(model=SMALL), regimes, NPU2))}
    said = []
    alone = run_studies(calls, 1, lambda step, text: None)
    together = run_studies(calls, 2, lambda step, text: said.append(step))
    assert list(together) == ["ablate", "cuts"]  # the caller's order, whatever finished first
    for name in calls:
        xr.testing.assert_identical(alone[name], together[name])
    assert said[0] == "studies" and sorted(said[1:]) == ["ablate", "cuts"]


def test_workers__a_studys_config_error_reaches_the_caller_with_its_problems():
    regimes = parse_regimes(["decode:4096"])
    calls = {"ablate": (ablate, (LlmStudy(model=SMALL, weights="int3"), regimes, NPU2)),
             "cuts": (cuts, (LlmStudy(model=SMALL), parse_regimes(["decode:256"]), NPU2))}
    with pytest.raises(ConfigError) as alone:
        run_studies(calls, 1, lambda step, text: None)
    with pytest.raises(ConfigError) as together:
        run_studies(calls, 2, lambda step, text: None)
    assert together.value.problems == alone.value.problems and together.value.problems


def test_workers__a_group_runs_in_one_worker_and_results_keep_the_callers_order():
    import os

    calls = {name: (os.getpid, ()) for name in ("cuts", "dataflow@decode@256", "overlays", "dataflow@prefill@64")}
    with Workers(2, len(calls)) as pool:
        pids = pool.run(calls, together=(("overlays", "dataflow@prefill@64"),))
        with pytest.raises(ValueError, match="a task in two groups"):
            pool.run(calls, together=(("cuts", "overlays"), ("overlays",)))
    assert list(pids) == list(calls)
    assert pids["overlays"] == pids["dataflow@prefill@64"] != os.getpid()


def test_workers__zero_workers_is_refused():
    with pytest.raises(ValueError, match="workers = 0"):
        run_studies({"ablate": (ablate, ())}, 0, lambda step, text: None)
