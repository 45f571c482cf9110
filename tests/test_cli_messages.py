"""What a new user reads (issue 28): errors that say what to do in a line or two, units on every
number of the tables and JSON, an occupancy figure of an LLM run's trace."""
import json

import pytest
from click.testing import CliRunner

from fastsim.cli import main

TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A two-layer model's config.json and one traced decode step of it, as JSON."""
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "config.json").write_text(json.dumps(TINY))
    trace = folder / "trace.json"
    r = invoke("run", "--json", "--trace", trace, "llm", "--model", folder / "config.json", "--context", 64)
    assert r.exit_code == 0, r.output
    return folder / "config.json", trace, json.loads(r.stdout)


def test_run_gemm__an_unknown_dtype_is_the_only_problem_named():
    r = invoke("run", "gemm", "--dtype", "fp8", "--m", 64, "--k", 64, "--n", 64)
    assert r.exit_code == 2
    assert "dtype = 'fp8'" in r.output
    assert "out_dtype" not in r.output and "weight_dtype" not in r.output  # never set by the user


def test_run_gemm__a_dtype_without_a_matmul_datapath_says_which_to_use():
    for command in ("run", "map"):
        r = invoke(command, "gemm", "--dtype", "int4", "--m", 64, "--k", 64, "--n", 64)
        assert r.exit_code == 2
        assert "no int4 matmul datapath" in r.output and "use --dtype bf16 or int8" in r.output
        assert "Pins(" not in r.output and len(r.output.strip().splitlines()) == 1


def test_run_llm__static_weights_that_cannot_fit_say_so_in_one_line():
    r = invoke("run", "llm", "--residency", "static")
    assert r.exit_code == 2
    line = r.output.strip()
    assert len(line.splitlines()) == 1
    assert "MB of weights do not fit in 6.3 MB of on-chip memory" in line and "--residency streamed" in line


def test_plot__occupancy_of_an_llm_trace(tiny, tmp_path):
    _, trace, _ = tiny
    out = tmp_path / "occupancy.png"
    r = invoke("plot", "--kind", "occupancy", trace, "--out", out)
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 0


def test_plot__occupancy_of_a_trace_without_slices_or_counters_says_which_traces_work(tmp_path):
    empty = tmp_path / "t.json"
    empty.write_text(json.dumps({"traceEvents": []}))
    r = invoke("plot", "--kind", "occupancy", empty, "--out", tmp_path / "o.png")
    assert r.exit_code == 2 and "fastsim run llm --trace" in r.output


def test_run_llm_json__a_units_block_names_the_unit_of_every_number(tiny):
    _, _, run = tiny
    units = run["units"]
    assert units["by_class"] == "s" and units["by_layer"] == "s" and units["seconds"] == "s"
    assert units["ddr_bytes"] == "bytes" and units["energy_j"] == "J" and units["tokens_per_s"] == "tokens/s"
    numeric = [k for k, v in run.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert set(numeric) <= set(units), set(numeric) - set(units)


def test_run_llm_generate__every_time_in_ms(tiny):
    config, _, _ = tiny
    r = invoke("run", "llm", "--model", config, "--regime", "generate", "--prompt", 16, "--new-tokens", 2)
    assert r.exit_code == 0, r.output
    assert " us" not in r.output and "overlay switch" in r.output
    times = [line for line in r.output.splitlines()[1:] if line.strip()]
    assert all(" ms" in line for line in times), times


def test_map_gemm__bound_and_simulated_columns_say_cycles():
    r = invoke("map", "gemm", "--m", 64, "--k", 64, "--n", 64, "--top", 2)
    assert r.exit_code == 0, r.output
    header = r.output.splitlines()[1]
    assert "bound cycles" in header and "simulated cycles" in header and "KiB" in header


def test_study_overlays__refuses_regime_the_mix_sets_the_regimes():
    r = invoke("study", "overlays", "--regime", "decode:128")
    assert r.exit_code == 2 and "--regime" in r.output
    assert "--regime TEXT" not in invoke("study", "overlays", "--help").output  # no longer an option


def test_stream_split__one_value_set_on_every_command():
    """run gemm, map gemm and run llm take the same --stream-split values with the same default
    (auto: fastsim chooses), and a GEMM's auto is its unpinned search."""
    from fastsim.cli import main
    from fastsim.workloads.gemm import Gemm

    commands = {"run gemm": main.commands["run"].commands["gemm"], "map gemm": main.commands["map"].commands["gemm"],
                "run llm": main.commands["run"].commands["llm"]}
    found = {name: next(p for p in cmd.params if p.name == "stream_split") for name, cmd in commands.items()}
    assert {tuple(p.type.choices) for p in found.values()} == {("auto", "equal", "proportional")}
    assert {p.default for p in found.values()} == {"auto"}
    assert Gemm(64, 64, 64, stream_split="auto").pins() == Gemm(64, 64, 64).pins()
