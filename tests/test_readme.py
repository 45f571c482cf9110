"""Every command in the README's console blocks runs, on small inputs (issue 16): a command added
to the README without a small-input form here fails this test, and so does one that stops working."""
import json
import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from fastsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 512, "vocab_size": 512}


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```console\n(.*?)```", text, flags=re.S)
    return [line[2:].split("  #")[0].strip() for b in blocks for line in b.splitlines() if line.startswith("$ ")]


def small(command: str, tmp: Path) -> list[str]:
    """The README command with small inputs (same subcommand and options, smaller sizes)."""
    tiny = tmp / "tiny.json"
    tiny.write_text(json.dumps(TINY))
    forms = {
        "fastsim run gemm --m 2048 --k 2048 --n 2048 --dtype bf16":
            "run gemm --m 256 --k 256 --n 256 --dtype bf16",
        "fastsim run llm --model llama-3.2-1b --context 4096 --json":
            f"run llm --model {tiny} --context 256 --json",
        "fastsim sweep sweeps/gemm_quick.toml --out quick.zarr":  # its spec on one size (8 exact searches: 45 s)
            f"sweep {_fewer_points(ROOT / 'sweeps/gemm_quick.toml', tmp)} --out {tmp / 'quick.zarr'} --workers 0 "
            "--no-progress",
        "fastsim optimize --out opt/":
            f"optimize --model {tiny} --regime decode:128 --regime prefill:32 --mix 32:4 --out {tmp / 'opt'}",
        "fastsim systolic -c bench/scalesim/mesh32_os.cfg -t bench/scalesim/resnet50_first4.csv":
            "systolic -c bench/scalesim/mesh32_os.cfg -t bench/scalesim/resnet50_first4.csv",
    }
    assert command in forms, f"README command without a small-input form in tests/test_readme.py: {command}"
    return shlex.split(forms[command])


def _fewer_points(spec: Path, tmp: Path) -> Path:
    """The README's sweep spec with its ``m`` axis cut to its first value: the same study, kinds
    and outputs, one point per dtype."""
    text = spec.read_text()
    line = next(x for x in text.splitlines() if x.startswith("m = ["))
    small = tmp / spec.name
    small.write_text(text.replace(line, "m = [" + line[5:].split(",")[0].rstrip("]") + "]"))
    return small


def test_readme_is_a_short_front_door():
    assert len((ROOT / "README.md").read_text().encode()) < 5000
    assert (ROOT / "docs" / "figures" / "kv_growth.png").is_file()


# the optimize command (two minutes on 2 cores) in the slow tier; tests/test_cnn_optimize.py runs
# fastsim optimize in the default one
@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c.startswith("fastsim optimize")
                                     else c for c in readme_commands()])
def test_readme_command_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(main, small(command, tmp_path))
    assert r.exit_code == 0, r.output
    assert r.output.strip()
