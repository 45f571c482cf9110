"""Regenerate the SCALE-Sim v3 golden numbers by running it on bench/scalesim/layers.csv.

SCALE-Sim needs its own environment (it breaks with numpy 2.4):

    python3 -m venv /tmp/ss && /tmp/ss/bin/pip install numpy==2.3.5 scalesim==3.0.0
    /tmp/ss/bin/python bench/scalesim/golden.py            # tests/golden/scalesim_v3.json
    /tmp/ss/bin/python bench/scalesim/golden.py bandwidth  # tests/golden/scalesim_v3_bandwidth.json

Every layer runs alone, for each dataflow (ws, is, os) and array shape. The first set uses 64 kB
SRAMs in both bandwidth modes (CALC: unlimited; USER: 4 words/cycle); the second uses small SRAMs
and narrow DRAM interfaces (VARIANTS) so that SCALE-Sim's buffers stall. In USER mode SCALE-Sim
reads ifmap/filter through `[layout] IfmapSRAMBankBandwidth`/`FilterSRAMBankBandwidth` and writes
the ofmap through `Bandwidth`. Reports are read from COMPUTE_REPORT.csv and
DETAILED_ACCESS_REPORT.csv.
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
# (ifmap kB, filter kB, ofmap kB, ifmap/filter read words/cycle, ofmap write words/cycle)
VARIANTS = [(1, 1, 1, 4, 4), (2, 1, 1, 2, 1)]

CONFIG = """[general]
run_name = run

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {ikb}
FilterSramSzkB: {fkb}
OfmapSramSzkB: {okb}
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
IfmapSRAMBankBandwidth: {rbw}
IfmapSRAMBankNum: {banks}
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: {rbw}
FilterSRAMBankNum: {banks}
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


def runs(which: str):
    """(mode, ifmap kB, filter kB, ofmap kB, read bw, write bw) per run of the chosen set."""
    if which == "bandwidth":
        return [("USER", *v) for v in VARIANTS]
    return [(mode, SRAM_KB, SRAM_KB, SRAM_KB, 10, bw) for mode, bw in MODES]


def main(which: str = "unlimited"):
    from scalesim.scale_sim import scalesim

    layers = list(csv.DictReader(open(HERE / "layers.csv")))
    out = OUT if which == "unlimited" else OUT.with_name("scalesim_v3_bandwidth.json")
    results = []
    t0 = time.time()
    for layer in layers:
        for rows, cols in ARRAYS:
            for df in DATAFLOWS:
                for mode, ikb, fkb, okb, rbw, bw in runs(which):
                    with tempfile.TemporaryDirectory() as tmp:
                        tmp = Path(tmp)
                        cfg = tmp / "scale.cfg"
                        cfg.write_text(CONFIG.format(rows=rows, cols=cols, ikb=ikb, fkb=fkb, okb=okb, bw=bw or 10,
                                                     rbw=rbw, banks=10 if rbw == 10 else 1, df=df, mode=mode))
                        (tmp / "layout.csv").write_text("Layer name,\n")
                        topo, is_gemm = topology(layer, tmp)
                        t = time.time()
                        sim = scalesim(save_disk_space=True, verbose=False, config=str(cfg), topology=str(topo),
                                       layout=str(tmp / "layout.csv"), input_type_gemm=is_gemm)
                        sim.run_scale(top_path=str(tmp / "out"))
                        wall = time.time() - t
                        compute = read_report(tmp / "out" / "run" / "COMPUTE_REPORT.csv")
                        access = read_report(tmp / "out" / "run" / "DETAILED_ACCESS_REPORT.csv")
                    run = {"layer": layer["name"], "rows": rows, "cols": cols, "dataflow": df,
                           "mode": mode, "bandwidth": bw, "sram_kb": ikb, "compute": compute, "access": access,
                           "scalesim_wall_s": wall}
                    if which == "bandwidth":
                        run.update(filter_sram_kb=fkb, ofmap_sram_kb=okb, read_bandwidth=rbw)
                    results.append(run)
        print(layer["name"], f"{time.time() - t0:.0f} s", file=sys.stderr)
    out.write_text(json.dumps({"source": "scalesim==3.0.0 (PyPI), numpy 2.3.5", "layers_csv": "bench/scalesim/layers.csv",
                               "results": results}, indent=1))
    print(f"{len(results)} runs -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
