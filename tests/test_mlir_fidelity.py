"""mlir-aie designs read as written: kernels that take their locks as arguments, the older forms
and one-line regions the reader once misread, files that are not MLIR, static checks as aie-opt
makes them, and the runtime sequence's raw register writes and scalar arguments."""
from pathlib import Path

import pytest

from fastsim.errors import ConfigError
from fastsim.mlir import MlirError, load_kernel_costs, read_design, read_text, simulate_design

HERE = Path(__file__).parent / "mlir"
HELD = {"cycles": 300, "acquire": [[2, 1], [3, 1]], "release": [[4, 1], [5, 1]]}


def run(name_or_text, kernels) -> tuple:
    info = read_design(HERE / f"{name_or_text}.mlir", kernels) if "\n" not in name_or_text \
        else read_text(name_or_text, kernels)
    ds = simulate_design(info)
    return int(ds.total_cycles[0]), ds.level_bytes.values[0].tolist(), ds.kernel_calls.values[0].tolist()


@pytest.mark.parametrize("kernel_cycles", [1, 300, 2000])
def test_kernel_locks__declared_locks_run_as_the_use_locks_around_the_call(kernel_cycles):
    """The kernel acquires and releases what physical_passthrough's core does around its call."""
    held = run("kernel_held_locks", {"kernel": {**HELD, "cycles": kernel_cycles}})
    assert held == run("physical_passthrough", {"kernel": kernel_cycles})
    assert held[2] == [4]


def test_kernel_locks__undeclared_locks_are_refused_by_name_not_a_deadlock():
    with pytest.raises(MlirError) as e:
        read_design(HERE / "kernel_held_locks.mlir", {"kernel": 300})
    text = str(e.value)
    assert "kernel_held_locks.mlir:30: func.call: kernel 'kernel' is passed lock(s) %in_full (operand 2)" in text
    assert "[kernels.kernel] cycles = N, acquire = [[OPERAND, VALUE], ...]" in text


def test_kernel_locks__a_declared_operand_that_passes_no_lock_is_refused():
    with pytest.raises(MlirError, match=r"kernels.kernel declares lock operand\(s\) \[0\], but this call passes "
                                        r"locks at operand\(s\) \[2, 3, 4, 5\] only"):
        read_design(HERE / "kernel_held_locks.mlir", {"kernel": {**HELD, "acquire": [[0, 1]]}})


def test_kernel_locks__toml_entries_keep_their_locks_and_bad_lists_are_refused(tmp_path):
    good = tmp_path / "k.toml"
    good.write_text("[kernels.kernel]\ncycles = 300\nacquire = [[2, 1], [3, 1]]\nrelease = [[4, 1], [5, 1]]\n")
    assert load_kernel_costs(good) == {"kernel": HELD}
    assert run("kernel_held_locks", good) == run("physical_passthrough", {"kernel": 300})
    bad = tmp_path / "bad.toml"
    bad.write_text("[kernels.kernel]\ncycles = 300\nacquire = [[2]]\nrelease = [[-1, 1]]\n")
    with pytest.raises(ConfigError) as e:
        load_kernel_costs(bad)
    assert [p.split(" = ")[0] for p in e.value.problems] == ["kernels.kernel.acquire", "kernels.kernel.release"]
