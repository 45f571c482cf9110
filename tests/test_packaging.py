"""Every subpackage is listed in pyproject.toml, so a normal (non-editable) install ships it."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_packaging__every_subpackage_is_installed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "fastsim").rglob("__init__.py")}
    found.add("fastsim.kernels")
    assert found <= listed, f"missing from pyproject packages: {sorted(found - listed)}"
