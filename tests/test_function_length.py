"""Code is read more than written: no function of fastsim (outside the jitted kernels, whose
engine loop is one function on purpose) runs over 80 lines."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 80


def test_no_function_over_80_lines():
    long = []
    for path in sorted((ROOT / "fastsim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 80 lines: " + "; ".join(long)
