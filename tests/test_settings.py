"""Settings are scoped values (fastsim.settings): an explicit argument beats the settings in force,
which beat the environment; nothing is left changed after a call, and nothing writes os.environ."""
import json
import os

import pytest
from click.testing import CliRunner

import fastsim
import fastsim.cli
from fastsim import settings
from fastsim.settings import Settings, resolve_jit
from fastsim.threads import resolve_threads


def test_settings__use_scopes_a_block_and_restores_the_previous_ones():
    assert settings.current() == Settings()
    with settings.use(threads=3) as outer:
        assert outer == Settings(threads=3) and resolve_threads() == 3
        with settings.use(jit=False):
            assert settings.current() == Settings(threads=3, jit=False)
        assert settings.current() == outer
        with pytest.raises(RuntimeError), settings.use(threads=1):
            raise RuntimeError("left by an exception")
        assert settings.current() == outer
    assert settings.current() == Settings()


def test_settings__explicit_argument_beats_settings_beats_environment(monkeypatch):
    monkeypatch.setenv("FASTSIM_THREADS", "5")
    monkeypatch.setenv("FASTSIM_JIT", "0")
    assert resolve_threads() == 5 and resolve_jit() is False
    with settings.use(threads=2, jit=True):
        assert resolve_threads() == 2 and resolve_threads(4) == 4
        assert resolve_jit() is True and resolve_jit(False) is False
    monkeypatch.delenv("FASTSIM_JIT")
    assert resolve_jit() is True and resolve_jit(default=False) is False


def test_settings__bad_thread_counts_are_config_errors():
    with settings.use(threads=0), pytest.raises(fastsim.ConfigError, match="threads = 0"):
        resolve_threads()


def test_cli__threads_option_is_in_force_for_the_command_only(monkeypatch):
    """``fastsim --threads N`` is a settings scope around the command, not an environment variable."""
    import fastsim.evaluation.standalone as run_module

    monkeypatch.delenv("FASTSIM_THREADS", raising=False)
    seen = []
    original = run_module.engine_result

    def spy(*args, **kwargs):
        seen.append(settings.current().threads)
        return original(*args, **kwargs)

    monkeypatch.setattr(run_module, "engine_result", spy)
    r = CliRunner().invoke(fastsim.cli.main, ["--threads", "1", "run", "gemm", "--m", "64", "--k", "64", "--n", "64"])
    assert r.exit_code == 0, r.output
    assert seen == [1] and settings.current() == Settings() and "FASTSIM_THREADS" not in os.environ


def test_cli__run_gemm_reports_the_searchs_design_and_simulation(monkeypatch):
    """``run gemm`` takes the search's simulation of its chosen design (no second simulation, in the
    evaluator or after it); a run that steps every cycle simulates that same design object, never a
    rebuilt one."""
    import importlib

    import fastsim.evaluation.standalone
    from fastsim.arch import load

    # the module (the package exports a function of its name)
    evaluator = importlib.import_module("fastsim.evaluation.evaluate")
    from fastsim.workloads.gemm import Gemm, gemm_mapping

    args = ["run", "--json", "gemm", "--m", "96", "--k", "64", "--n", "80", "--dtype", "int8"]
    first = json.loads(CliRunner().invoke(fastsim.cli.main, args).output)
    found = gemm_mapping(Gemm(96, 64, 80, "int8"), load("npu2"))  # the same search, cached
    assert first["total_cycles"] == found.best_cycles

    def no_simulation(*args, **kwargs):
        raise AssertionError("simulated again")

    monkeypatch.setattr(fastsim.evaluation.standalone, "simulate", no_simulation)
    monkeypatch.setattr(evaluator, "simulate_arrays", no_simulation)
    again = CliRunner().invoke(fastsim.cli.main, args)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output) == first

    designs = []
    monkeypatch.setattr(fastsim.evaluation.standalone, "simulate",
                        lambda design, **kw: designs.append(design) or found.best_simulation)
    stepped = CliRunner().invoke(fastsim.cli.main, args + ["--no-skip"])
    assert stepped.exit_code == 0, stepped.output
    assert len(designs) == 1 and designs[0] is found.best_design


def test_sweep__workers_run_under_the_callers_settings_local_ones_on_one_thread(monkeypatch):
    import fastsim.sweeping.engine as engine

    monkeypatch.setattr(engine, "run_chunks", lambda spec, out, chunks: (chunks, settings.current()))
    with settings.use(threads=4, jit=False, cache=False, cache_dir="/tmp/x", progress=True):
        local, remote = engine.worker_settings(local=True), engine.worker_settings(local=False)
        assert local == settings.Settings(threads=1, jit=False, cache=False, cache_dir="/tmp/x", progress=False)
        assert remote == settings.Settings(threads=4, jit=False, cache=False, cache_dir="/tmp/x", progress=False)
    assert engine._run_chunks_with(None, "", [7], local) == ([7], local, "")  # no dask worker: no address
    assert settings.current() == settings.Settings()
