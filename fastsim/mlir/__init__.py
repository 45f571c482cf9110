"""Bring your own design: mlir-aie's ``aie`` dialect read into a fastsim Design and simulated.

``read_design(path, kernels=...)`` parses the MLIR text with a lark grammar (``syntax``), lowers the
physical form (buffers, locks, flows, DMA BD chains, cores) and the object-FIFO form (``fifo``),
cores (``core``) and the runtime sequence (``sequence``) into a ``Design``, after placing
``aie.logical_tile``s as mlir-aie's placer does (``place``); ``simulate_design``
runs it. ``write_design`` writes any Design as physical-form MLIR that reads back to the same
cycles (``export``). A file whose runtime sequence configures and runs other devices (a run
list) is simulated by ``simulate_run_list``. docs/mlir.md lists the subset and the assumptions.
"""
from __future__ import annotations

from pathlib import Path

from .export import ExportError, write_design, write_kernel_costs
from .kernels import INLINE_OP_CYCLES, kernel_costs, load_kernel_costs
from .reader import DesignInfo, MlirError, read, read_all
from .run import simulate_design
from .runlist import RunListResult, simulate_run_list

__all__ = ["read_design", "read_text", "simulate_design", "load_kernel_costs", "kernel_costs", "DesignInfo",
           "MlirError", "INLINE_OP_CYCLES", "read_all", "write_design", "write_kernel_costs", "ExportError",
           "simulate_run_list", "RunListResult"]


def read_text(text: str, kernels: dict[str, int] | None = None, *, arch=None, source: str = "<mlir>",
              device: str | None = None, args: dict[str, int] | None = None) -> DesignInfo:
    """Read MLIR text (its one ``aie.device``, or the one named ``device``); ``kernels`` maps
    kernel names to cycles per call; ``args`` gives the runtime sequence's scalar arguments."""
    return read(text, kernels, arch=arch, source=source, device=device, args=args)


def read_design(path, kernels=None, *, arch=None, device: str | None = None,
                args: dict[str, int] | None = None) -> DesignInfo:
    """Read an ``.mlir`` file. ``kernels`` is a {name: cycles} dict or a TOML file with a
    ``[kernels]`` table (and nothing else), each entry naming a kernel the file calls; ``arch`` overrides the one the device names (npu1*, npu2*); ``device``
    picks one ``aie.device @name`` of a file that holds several; ``args`` gives the values of the
    runtime sequence's scalar arguments (``%n: i32`` -> ``{"n": 4}``) that the host passes."""
    if kernels is not None and not isinstance(kernels, dict):
        kernels = load_kernel_costs(kernels)
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise MlirError([f"file = {str(path)!r}: cannot be read ({e.strerror or e})"], str(path), []) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MlirError([f"{path}: not an MLIR text file (not UTF-8 text: byte 0x{raw[e.start]:02x} at offset "
                         f"{e.start})"], str(path), []) from None
    return read(text, kernels, arch=arch, source=str(path), device=device, args=args)
