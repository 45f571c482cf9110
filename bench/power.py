"""Regenerate docs/energy.md: predicted average power against public NPU power-rail figures.

    python bench/power.py      # about a minute on 2 cores

Each prediction is split at the boundaries of ``fastsim.power``: on-chip dynamic power (what an NPU
rail carries, less its static power) and DDR (which no NPU rail carries). Nothing here sets a
parameter: the energy table is an assumption and these figures only report how far it is.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "energy.md"

# (label, what runs, rail figure in W (low, high), boundary and source)
FLM = "FastFlowLM (Strix-class part, mid-2025 release), NPU rail only; the figure names no model"
CASES = [
    ("decode, llama-3.2-1b at 1k context", ("llm", "llama-3.2-1b", "decode", 1024), (1.17, 1.57), FLM),
    ("prefill, llama-3.2-1b, 1k prompt", ("llm", "llama-3.2-1b", "prefill", 1024), (0.9, 0.9), FLM),
    ("ResNet-50 int8, batch 1", ("onnx", "resnet50_int8"), (5.3, 5.3),
     "AMD onnx-benchmark on Strix, HWiNFO IPU_SOC rail (may include SoC logic)"),
]


def _dataset(what: tuple):
    from fastsim.arch import NPU2

    if what[0] == "llm":
        from fastsim.llm import LlmStudy, simulate_llm

        _, model, regime, tokens = what
        study = LlmStudy(model=model, regime=regime, **({"context": tokens} if regime == "decode" else {"prompt": tokens}))
        return simulate_llm(study, NPU2)
    from fastsim.onnx import simulate_onnx
    from fastsim.onnx.zoo import save

    path = Path(tempfile.gettempdir()) / f"fastsim_power_{what[1]}.onnx"
    save(what[1], str(path))
    return simulate_onnx(str(path), NPU2)


def main() -> None:
    from fastsim.arch import NPU2
    from fastsim.power import power_split

    rows = []
    for label, what, (lo, hi), source in CASES:
        p = power_split(_dataset(what), NPU2)
        rail = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
        rows.append(f"| {label} | {1e3 * p['seconds']:,.2f} ms | {p['on_chip_w']:.2f} W | {p['ddr_w']:.2f} W | "
                    f"{p['total_w']:.2f} W | {rail} W | {lo / p['on_chip_w']:.1f}-{hi / p['on_chip_w']:.1f}x | "
                    f"{source} |")
        print(rows[-1], flush=True)
    OUT.write_text("\n".join([
        "# Energy: predicted power against public power-rail figures", "",
        "Regenerate with `python bench/power.py`. fastsim's energy table (`Arch.pj_per_mac`, `Arch.pj_per_byte`) "
        "is an assumption (AMD publishes no per-operation energy for AIE-ML or AIE-ML v2: its power estimators, "
        "XPE and PDM, model an array from its clock, core count, kernel dtype and average vector load, UG1275 "
        "and UG1556, and no table behind them is public) and counts dynamic "
        "energy only. A rail figure covers one boundary, so each prediction is split "
        "(`fastsim.power.power_split`): **on-chip** (MACs and on-chip moves: what an NPU rail carries, less "
        "its static power) and **DDR** (DRAM interface energy, on no NPU rail). All on `npu2`.", "",
        "| workload | simulated time | on-chip | DDR | total | measured rail | rail / on-chip | boundary and source |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        *rows, "",
        "What the table says: the NPU rail carries power the energy table has no term for. Where the array "
        "is mostly waiting on DDR (decode) the on-chip dynamic power is a small fraction of the rail: the rest "
        "is static power (clock tree, leakage, idle tiles), which the table leaves out; in prefill the "
        "simulated time is itself too short (docs/validation.md), which inflates every predicted watt. A "
        "per-part static power and per-operation energies need measurements on one part at known activity "
        "(an idle array, a DMA-only loop, a MAC-only loop): none is public. Until then, energy figures are "
        "comparisons between designs on the same table, not predictions of a rail.", ""]))


if __name__ == "__main__":
    main()
