"""Regenerate tests/golden/scalesim_v3.json by running SCALE-Sim v3 on bench/scalesim/layers.csv.

SCALE-Sim needs its own environment (it breaks with numpy 2.4):

    python3 -m venv /tmp/ss && /tmp/ss/bin/pip install numpy==2.3.5 scalesim==3.0.0
    /tmp/ss/bin/python bench/scalesim/golden.py

Every layer runs alone, for each dataflow (ws, is, os), array shape and bandwidth mode (CALC:
unlimited; USER: the DRAM bandwidth in words/cycle given below). Reports are read from SCALE-Sim's
COMPUTE_REPORT.csv and DETAILED_ACCESS_REPORT.csv.
"""
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "tests" / "golden" / "scalesim_v3.json"
ARRAYS = [(8, 8), (16, 8), (8, 32)]
DATAFLOWS = ["ws", "is", "os"]
MODES = [("CALC", None), ("USER", 4)]
SRAM_KB = 64

CONFIG = """[general]
run_name = run

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {kb}
FilterSramSzkB: {kb}
OfmapSramSzkB: {kb}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth : {bw}
Dataflow : {df}
MemoryBanks: 1
ReadRequestBuffer: 512
WriteRequestBuffer: 512

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: {mode}
UseRamulatorTrace: False
"""


def topology(layer, tmp: Path) -> tuple[Path, bool]:
    path = tmp / "topo.csv"
    if layer["kind"] == "gemm":
        path.write_text("Layer, M, N, K,\n" + f"{layer['name']}, {layer['m']}, {layer['n']}, {layer['k']},\n")
        return path, True
    keys = ["ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "num_filters", "stride"]
    path.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                    "Num Filter, Strides,\n" + layer["name"] + ", " + ", ".join(layer[k] for k in keys) + ",\n")
    return path, False


def read_report(path: Path) -> dict:
    with open(path) as f:
        rows = [[x.strip() for x in r if x.strip() != ""] for r in csv.reader(f)]
    return dict(zip(rows[0], rows[1]))


def main():
    from scalesim.scale_sim import scalesim

    layers = list(csv.DictReader(open(HERE / "layers.csv")))
    results = []
    t0 = time.time()
    for layer in layers:
        for rows, cols in ARRAYS:
            for df in DATAFLOWS:
                for mode, bw in MODES:
                    with tempfile.TemporaryDirectory() as tmp:
                        tmp = Path(tmp)
                        cfg = tmp / "scale.cfg"
                        cfg.write_text(CONFIG.format(rows=rows, cols=cols, kb=SRAM_KB, bw=bw or 10, df=df, mode=mode))
                        (tmp / "layout.csv").write_text("Layer name,\n")
                        topo, is_gemm = topology(layer, tmp)
                        t = time.time()
                        sim = scalesim(save_disk_space=True, verbose=False, config=str(cfg), topology=str(topo),
                                       layout=str(tmp / "layout.csv"), input_type_gemm=is_gemm)
                        sim.run_scale(top_path=str(tmp / "out"))
                        wall = time.time() - t
                        compute = read_report(tmp / "out" / "run" / "COMPUTE_REPORT.csv")
                        access = read_report(tmp / "out" / "run" / "DETAILED_ACCESS_REPORT.csv")
                    results.append({"layer": layer["name"], "rows": rows, "cols": cols, "dataflow": df,
                                    "mode": mode, "bandwidth": bw, "sram_kb": SRAM_KB,
                                    "compute": compute, "access": access, "scalesim_wall_s": wall})
        print(layer["name"], f"{time.time() - t0:.0f} s", file=sys.stderr)
    OUT.write_text(json.dumps({"source": "scalesim==3.0.0 (PyPI), numpy 2.3.5", "layers_csv": "bench/scalesim/layers.csv",
                               "results": results}, indent=1))
    print(f"{len(results)} runs -> {OUT}")


if __name__ == "__main__":
    main()
