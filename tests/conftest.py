"""What the test modules share: the hypothesis profiles, a disk cache of the session's own, one
dask cluster and one run of each ``fastsim optimize`` case that several tests read.

Two tiers (docs/testing.md): ``python -m pytest -q`` runs the default tier (``not slow``, a few
minutes); ``python -m pytest -q -m slow`` the slow one (long property runs, whole studies, CLI
subprocesses). ``HYPOTHESIS_PROFILE=full`` runs every property test of either tier with more
examples (each derandomized: the same examples every run)."""
import os
import shutil
import sys
import tempfile
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
# a test's own @settings(max_examples=...) wins over the profile's
settings.register_profile("default", deadline=None, max_examples=50, derandomize=True, suppress_health_check=_QUIET)
settings.register_profile("full", deadline=None, max_examples=200, derandomize=True, suppress_health_check=_QUIET)
settings.register_profile("slow", deadline=None, max_examples=2000, derandomize=True, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

_ENVIRON = pytest.StashKey[pytest.MonkeyPatch]()
_CACHE_DIR = pytest.StashKey[str]()


def pytest_configure(config):
    """Searches cached on disk go to a directory of this session (CLI subprocesses inherit it),
    set before collection and removed, with the variable restored, when the session ends."""
    config.stash[_CACHE_DIR] = tempfile.mkdtemp(prefix="fastsim-test-cache-")
    config.stash[_ENVIRON] = pytest.MonkeyPatch()
    config.stash[_ENVIRON].setenv("FASTSIM_CACHE_DIR", config.stash[_CACHE_DIR])


def pytest_unconfigure(config):
    if _ENVIRON in config.stash:
        config.stash[_ENVIRON].undo()
        shutil.rmtree(config.stash[_CACHE_DIR], ignore_errors=True)


class Cluster(NamedTuple):
    """The session's dask cluster: a client of the tests' own, the LocalCluster, and this
    process's NUMBA_NUM_THREADS and FASTSIM_THREADS just before and just after it started."""
    client: object
    cluster: object
    environ_before: dict
    environ_after: dict


@pytest.fixture(scope="session")
def dask_cluster():
    """One LocalCluster for the session, started as fastsim starts one (``_client``: two
    single-threaded worker processes under nannies, which restart a killed worker). A test that
    stops a cluster's scheduler starts a cluster of its own."""
    from fastsim.sweeping.engine import _client

    ours = ("NUMBA_NUM_THREADS", "FASTSIM_THREADS")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # an earlier dask cluster may have set it here
        mp.delenv("NUMBA_NUM_THREADS", raising=False)  # a value set here would be the workers' too
        before = {name: os.environ.get(name) for name in ours}
        client, cluster = _client(2, None)
        after = {name: os.environ.get(name) for name in ours}
    yield Cluster(client, cluster, before, after)
    client.close()
    cluster.close()


@pytest.fixture(scope="session")
def optimize_run(tmp_path_factory):
    """``fastsim optimize`` (the API) on helpers.SMALL, a two-layer model, at decode 256 and prefill
    128 with one mix: (out directory, plan, each step's Dataset, the progress steps said). The
    memo's tests read this one run (tests/test_optimize_report.py and the modules that take it)."""
    import xarray as xr

    from fastsim.llm import LlmStudy
    from fastsim.studies.registry import STEPS
    from fastsim.studies.optimize import optimize
    from helpers import SMALL

    out = tmp_path_factory.mktemp("optimize")
    steps = []
    plan = optimize(LlmStudy(model=SMALL), ["decode:256", "prefill:128"], ["128:16"], out=out,
                    progress=lambda step, text: steps.append(step))
    results = {s: xr.open_zarr(out / f"{s}.zarr").load() for s in STEPS}
    return out, plan, results, steps


@pytest.fixture(scope="session")
def cnn_optimize_run(tmp_path_factory):
    """``fastsim optimize --onnx`` (the CLI, ``--json``) on the zoo's small CNN at 16 x 16 on npu2:
    (the model's path, out directory, the printed plan)."""
    import json

    from click.testing import CliRunner

    from fastsim.cli import main
    from fastsim.onnx import zoo

    root = tmp_path_factory.mktemp("cnn")
    path = root / "small_cnn.onnx"
    zoo.save("small_cnn", str(path), size=16)
    out = root / "opt"
    result = CliRunner().invoke(main, ["optimize", "--onnx", str(path), "--arch", "npu2", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return path, out, json.loads(result.stdout)


# slow-tier tests of modules other engineers were changing when the tiers were drawn (marked here,
# by node id without parameters, rather than in their files)
SLOW_ELSEWHERE = {
    "tests/test_llm.py::" + name for name in (
        "test_cache__cached_results_equal_fresh_ones", "test_cli__presets_run_both_regimes",
        "test_ddr__doubling_bandwidth_never_slows_decode_or_prefill", "test_decode__kv_traffic_and_time_grow_with_context",
        "test_generation__prefill_overlay_switch_and_growing_decode",
        "test_mapping__random_models_and_placements_never_deadlock",
        "test_movement__leaving_twins_out_changes_only_the_movement_split")} | {
    "tests/test_metamorphic.py::" + name for name in (
        "test_llm__an_answer_does_not_depend_on_the_runs_before_it", "test_llm__less_ddr_bandwidth_is_never_faster",
        "test_llm__lower_kernel_efficiency_is_never_faster", "test_llm__more_context_prompt_and_layers_take_longer",
        "test_llm__noop_of_any_class_never_adds_time")} | {
    "tests/test_families.py::" + name for name in (
        "test_precision__per_kind_dtypes_change_only_their_tensors", "test_simulate__batch_scales_moe_weights_sublinearly",
        "test_simulate__families_run_and_sliding_window_saturates")} | {
    # the default tier measured at 8:32 on an idle 2-core VM (--durations=30): its slowest tests go
    # where a faster one of the same subsystem stays (sweeps: the README's sweep command, the
    # axes-as-dims test (its spec's searches budgeted) and a bad point; studies: the ablation; fuzzing: every other front end and tests/test_fuzz_regressions.py)
    "tests/test_sweep.py::test_sweep__takes_a_spec_as_a_dict_the_same_as_its_toml",
    "tests/test_fuzz.py::test_gemm", "tests/test_fuzz.py::test_llm_study",
    "tests/test_closed_form_kernel.py::test_grid_gives_each_structure_exactly_its_own_tile_sizes",
    "tests/test_cache.py::test_cache__other_code_versions_and_off_never_answer",
    "tests/test_studies.py::test_overlays__report_lists_plans_and_classes_whose_binding_differs",
    "tests/test_studies.py::test_dataflow__playbook_numbers_are_the_datasets",
    "tests/test_studies.py::test_variables__every_study_output_is_declared_once_with_units",
    "tests/test_studies.py::test_sweep__ablate_kind_stores_a_ranking_per_point",
    "tests/test_latency.py::test_without_variance_every_sample_is_the_simulated_step",
    "tests/test_fusion.py::test_llm__flash_attention_keeps_long_scores_in_a_ring_of_blocks",
    "tests/test_fusion.py::test_prefill__gemms_are_compute_bound_where_compute_outlasts_movement",
    "tests/test_calibration.py::test_calibrate__refuses_8_parameters_from_7_measurements_unless_allowed",
    "tests/test_metamorphic.py::test_llm__fewer_columns_for_a_class_is_never_faster",
    "tests/test_sweep_families.py::test_kv_figure__panels_per_batch_curves_per_model_and_the_interpolated_crossover",
    "tests/test_sweep_families.py::test_families_sweep__routing_and_per_kind_dtypes_as_axes",
    "tests/test_cli_families.py::test_run_llm__routing_samples_report_ordered_quantiles_and_repeat_exactly",
    "tests/test_cli_families.py::test_run_llm__tensor_dtype_widens_the_lm_head_by_the_closed_form",
    "tests/test_imports.py::test_script__the_command_exits_with_its_status_and_its_whole_output",
    "tests/test_dispatch_commands.py::test_simulate_llm__chained_dispatches_save_the_round_trips_after_the_first",
    "tests/test_gemm.py::test_summary__bound_by_and_peak_fraction",
}


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("[")[0] in SLOW_ELSEWHERE:
            item.add_marker(pytest.mark.slow)
