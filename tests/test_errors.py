"""Bad input raises one ConfigError naming every field; stuck designs raise with the stuck parts."""
import pytest

import fastsim
from fastsim import NPU2, Acquire, Compute, ConfigError, Design, Loop, Release, mm2s, s2mm
from fastsim.arch import from_dict, load
from fastsim.design import Push
from helpers import passthrough


def test_arch__bad_fields_are_all_listed():
    with pytest.raises(ConfigError) as e:
        NPU2.replace(columns=0, clock_hz=-1, lock_max_value=0, stream_bytes_per_cycle=0)
    text = str(e.value)
    for field in ("columns", "clock_hz", "lock_max_value", "stream_bytes_per_cycle"):
        assert field in text
    assert len(e.value.problems) >= 4


def test_arch__unknown_field_is_named():
    with pytest.raises(ConfigError, match="colums"):
        from_dict({**NPU2.__dict__, "colums": 3})


def test_arch__toml_overrides_a_preset(tmp_path):
    f = tmp_path / "wide.toml"
    f.write_text('[arch]\nbase = "npu2"\ncolumns = 12\nshim_read_bytes_per_cycle = 6.0\n'
                 '[arch.compute]\nmemory_bytes = 131072\n')
    a = load(f)
    assert a.columns == 12 and a.compute.memory_bytes == 131072
    assert a.shim_read_bytes_per_cycle == (6.0,) * 12
    assert a.shim_write_bytes_per_cycle == (8.0,) * 12
    assert a.mem == NPU2.mem


def test_arch__asymmetric_columns_need_one_value_each():
    with pytest.raises(ConfigError, match="one value per column"):
        NPU2.replace(shim_read_bytes_per_cycle=(8.0, 4.0, 8.0))


def test_design__buffer_over_capacity():
    d = Design(NPU2)
    t = d.compute(0, 0)
    d.buffer(t, 40000)
    d.buffer(t, 40000)
    with pytest.raises(ConfigError, match=r"tile\(0,2\) buffers = 80000: must fit in the tile's 65536"):
        fastsim.simulate(d)


def test_design__too_many_bds_and_locks():
    d = Design(NPU2)
    t = d.compute(0, 0)
    buf = d.buffer(t, 64)
    for _ in range(17):
        d.lock(t)
        d.bd(s2mm(t, 0), buf, 64)
    with pytest.raises(ConfigError) as e:
        fastsim.simulate(d)
    assert "at most 16 BDs" in str(e.value) and "at most 16 locks" in str(e.value)


def test_design__lock_value_out_of_range():
    d = Design(NPU2)
    t = d.compute(0, 0)
    d.lock(t, init=64)
    d.core_program(t, Acquire(d.lock(t), 70))
    with pytest.raises(ConfigError) as e:
        fastsim.simulate(d)
    assert "init = 64: must be in 0..63" in str(e.value) and "value = 70" in str(e.value)


def test_design__route_to_missing_channel():
    d = Design(NPU2)
    d.route(mm2s(d.mem(0), 0), s2mm(d.compute(0, 0), 5), s2mm(d.shim(9), 0))
    with pytest.raises(ConfigError) as e:
        fastsim.simulate(d)
    text = str(e.value)
    assert "compute tiles have s2mm channels 0..1" in text and "column must be in 0..7" in text


def test_design__negative_sizes_and_strides_outside_buffer():
    d = Design(NPU2)
    t = d.mem(0)
    buf = d.buffer(t, 1024)
    d.bd(s2mm(t, 0), buf, -4)
    d.bd(s2mm(t, 0), buf, 512, dims=((16, 64), (8, 1)))  # reaches word 15*64+7 > 256 words
    with pytest.raises(ConfigError) as e:
        fastsim.simulate(d)
    text = str(e.value)
    assert "length_bytes = -4: must be > 0" in text
    assert "addresses outside buffer" in text


def test_design__shim_cannot_compress_and_pushed_chain_must_end():
    d = Design(NPU2)
    sh = d.shim(0)
    buf = d.ddr_buffer(64)
    a = d.bd(mm2s(sh, 0), buf, 64, compression_ratio=2.0)
    b = d.bd(mm2s(sh, 0), buf, 64)
    d.chain(a, b, cyclic=True)
    d.route(mm2s(sh, 0), s2mm(d.mem(0), 0))
    d.push(mm2s(sh, 0), a)
    with pytest.raises(ConfigError) as e:
        fastsim.simulate(d)
    assert "cannot compress" in str(e.value) and "loops forever" in str(e.value)


def test_deadlock__reports_stuck_channels_locks_and_cycle():
    d = passthrough()
    d.host = [op for op in d.host if not (isinstance(op, Push) and op.channel.direction == "s2mm")]
    d.host = d.host[:1]  # nobody drains the output: the core fills both output buffers and stops
    with pytest.raises(fastsim.DeadlockError) as e:
        fastsim.simulate(d)
    text = str(e.value)
    assert "deadlock" in text and "at cycle" in text
    assert "core tile(0,2): waiting to acquire 1 of lock out_prod" in text
    assert "backpressure" in text
    assert e.value.cycle > 0


def test_deadlock__record_mode_keeps_going():
    good = passthrough()
    bad = passthrough()
    bad.host = bad.host[:1]
    ds = fastsim.simulate([good, bad], on_error="record")
    assert list(ds.status.values) == ["ok", "deadlock"]


def test_livelock__free_running_chain_without_progress():
    d = Design(NPU2)
    mt, ct = d.mem(0), d.compute(0, 0)
    a, b = d.buffer(mt, 64), d.buffer(ct, 64)
    d.start_chain(mm2s(mt, 0), d.chain(d.bd(mm2s(mt, 0), a, 64), cyclic=True))
    d.start_chain(s2mm(ct, 0), d.chain(d.bd(s2mm(ct, 0), b, 64), cyclic=True))
    d.route(mm2s(mt, 0), s2mm(ct, 0))
    never = d.lock(ct, 0)
    d.core_program(ct, Acquire(never))
    with pytest.raises(fastsim.LivelockError) as e:
        fastsim.simulate(d, livelock_cycles=5000)
    assert "lock lock0" in str(e.value)


def test_cycle_limit__is_reported():
    with pytest.raises(fastsim.CycleLimitError):
        fastsim.simulate(passthrough(), max_cycles=100)


def test_lock_overflow__is_reported():
    d = Design(NPU2)
    ct = d.compute(0, 0)
    lk = d.lock(ct, 60)
    d.core_program(ct, Loop(2, (Compute(1), Release(lk, 2))))
    with pytest.raises(fastsim.SimulationError, match="overflowed past 63"):
        fastsim.simulate(d)


def test_threads__bad_counts_are_config_errors(monkeypatch):
    from fastsim.threads import resolve_threads

    assert resolve_threads(3) == 3
    monkeypatch.setenv("FASTSIM_THREADS", "2")
    assert resolve_threads() == 2
    monkeypatch.setenv("FASTSIM_THREADS", "two")
    with pytest.raises(fastsim.ConfigError, match=r"\$FASTSIM_THREADS = 'two'"):
        resolve_threads()
    with pytest.raises(fastsim.ConfigError, match="threads = 0"):
        resolve_threads(0)


def test_cli__bad_input_is_one_message_and_status_2_and_debug_shows_the_traceback():
    from click.testing import CliRunner

    from fastsim.cli import main

    r = CliRunner().invoke(main, ["run", "llm", "--context", "-5"])
    assert r.exit_code == 2 and "context = -5" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["--debug", "run", "llm", "--context", "-5"])
    assert isinstance(r.exception, fastsim.ConfigError)  # --debug lets it through, traceback and all


def test_cli__sizes_that_take_minutes_need_yes():
    from click.testing import CliRunner

    from fastsim.cli import main

    r = CliRunner().invoke(main, ["run", "llm", "--context", "500000"])
    assert r.exit_code == 2 and "--yes" in r.output and "500,000" in r.output
    r = CliRunner().invoke(main, ["run", "gemm", "--m", "8192", "--k", "8192", "--n", "8192"])
    assert r.exit_code == 2 and "--yes" in r.output and "cycles" in r.output


def test_arch__wrong_types_and_huge_values_are_config_errors(tmp_path):
    from fastsim.arch import load

    bad = tmp_path / "a.toml"
    bad.write_text('[arch]\nclock_hz = "fast"\ncolumns = 2.5\nmem_rows = 9223372036854775807\n'
                   'lock_acquire_cycles = 1e30\n[arch.compute]\nbd_wrap_bits = {a = 1}\n')
    with pytest.raises(fastsim.ConfigError) as e:
        load(bad)
    for field in ("clock_hz", "columns", "mem_rows", "lock_acquire_cycles", "compute.bd_wrap_bits"):
        assert field in str(e.value)
    bad.write_text("[arch\n")
    with pytest.raises(fastsim.ConfigError, match="not readable TOML"):
        load(bad)
    bad.write_text('[arch]\nbase = "npu9"\n')
    with pytest.raises(fastsim.ConfigError, match="base"):
        load(bad)


def test_cli__run_options_are_accepted_after_the_workload_too(tmp_path):
    import json

    from click.testing import CliRunner

    from fastsim.cli import main

    r = CliRunner().invoke(main, ["run", "gemm", "--m", "64", "--k", "64", "--n", "64", "--json", "--arch", "npu1",
                                  "--trace", str(tmp_path / "t.json")])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["arch"] == "npu1" and got["trace_events"] > 0 and (tmp_path / "t.json").is_file()
    before = json.loads(CliRunner().invoke(main, ["run", "--json", "--arch", "npu1", "gemm", "--m", "64", "--k", "64",
                                                  "--n", "64"]).output)
    assert before["total_cycles"] == got["total_cycles"]


def test_cli__every_command_shows_an_example_in_its_help():
    from click.testing import CliRunner

    from fastsim.cli import main

    studies = main.commands["study"].list_commands(None)
    commands = [["run"], ["run", "gemm"], ["run", "llm"], ["map", "gemm"], ["sweep"], ["systolic"], ["arch"],
                ["optimize"], ["calibrate"], ["plot"]] + [["study", s] for s in studies]
    assert {"ablate", "cuts", "overlays", "dataflow", "bandwidth", "compression", "kv", "traffic"} <= set(studies)
    for c in commands:
        r = CliRunner().invoke(main, c + ["--help"])
        assert r.exit_code == 0 and "Example" in r.output, c


def test_design__a_shim_to_shim_stream_is_refused_by_name():
    """DDR to DDR through the stream switch has no level in the results: refused, not guessed."""
    d = Design(NPU2, "loopback")
    src, dst = d.ddr_buffer(1024, "a"), d.ddr_buffer(1024, "b")
    out, back = mm2s(d.shim(0), 0), s2mm(d.shim(1), 0)
    d.route(out, back)
    d.host += [Push(out, d.bd(out, src)), Push(back, d.bd(back, dst))]
    with pytest.raises(ConfigError, match="shim-to-shim stream"):
        fastsim.simulate(d)


def test_llm__a_pin_that_selects_nothing_is_refused_by_name():
    """A typo in a pin, or a dataflow pin on ops that only stream, would otherwise be ignored."""
    from fastsim.llm import LlmStudy, ModelConfig, simulate_llm

    tiny = ModelConfig("tiny", 256, 2, 4, 2, 64, 512, 1024, True)
    with pytest.raises(ConfigError) as e:
        simulate_llm(LlmStudy(model=tiny, context=64, dataflow={"gem": "ws", "norm": "ws"}, columns={"atention": 2}))
    text = str(e.value)
    assert "dataflow[gem]" in text and "columns[atention]" in text and "only vector ops" in text
    assert "q_proj" in text and "flash_attention" in text  # what it could have named
