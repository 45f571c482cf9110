"""Kernel costs: the cycles each external kernel (a ``func.call``) takes, from the user's TOML,
and the documented per-op cost of inline code."""
from __future__ import annotations

import tomllib
from pathlib import Path

from ..errors import Problems

# Inline code in a core body (arith, memref, vector, math ops outside any func.call): one cycle per
# op, an assumption (a VLIW core issues several per cycle; a scalar loop's loads, adds and stores
# pipeline). Ops that only name values or reshape views take none.
INLINE_OP_CYCLES = 1
FREE_OPS = frozenset({
    "arith.constant", "arith.index_cast", "arith.index_castui", "memref.assume_alignment", "memref.subview",
    "memref.reinterpret_cast", "memref.collapse_shape", "memref.expand_shape", "memref.cast", "scf.yield",
    "aie.end", "aie.objectfifo.subview.access", "affine.yield", "memref.get_global", "llvm.mlir.undef",
})
INLINE_DIALECTS = ("arith.", "memref.", "vector.", "math.", "affine.load", "affine.store", "aievec.")


def load_kernel_costs(path: str | Path | None) -> dict[str, int]:
    """``[kernels]`` of a TOML file: kernel name -> cycles per call (a whole number >= 1). Every
    bad entry is reported at once."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        p = Problems(f"kernel costs {path}")
        p.add("file", str(path), f"must be a readable TOML file ({e})")
        p.raise_if_any()
    return kernel_costs(data.get("kernels", {}), str(path))


def kernel_costs(table: dict, source: str = "kernel costs") -> dict[str, int]:
    """Check a {name: cycles} table (``cycles`` may also be given as ``{cycles = N}``)."""
    p = Problems(source)
    out = {}
    if not isinstance(table, dict):
        p.add("kernels", table, "must be a table of kernel name = cycles")
        p.raise_if_any()
    for name, value in table.items():
        cycles = value.get("cycles") if isinstance(value, dict) else value
        if p.number(f"kernels.{name}", cycles, integer=True, lo=1, unit="cycles per call"):
            out[str(name)] = int(cycles)
    p.raise_if_any()
    return out
