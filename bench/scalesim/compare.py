"""Whole-process wall time: fastsim vs SCALE-Sim v3 on the same files, and their cycle counts.

    SCALESIM_PYTHON=/tmp/ss/bin/python python bench/scalesim/compare.py [--config CFG] [topology.csv ...]

The default config is mesh32_os.cfg (unlimited bandwidth); mesh32_os_user.cfg is the same mesh
with SCALE-Sim's USER-mode interfaces, where both tools run their request-level buffer models.

SCALE-Sim runs with traces off (save_disk_space=True) in its own environment; fastsim runs its CLI
(`fastsim systolic --json`) in a fresh process, so both include interpreter start-up.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUN_SCALESIM = """
import sys
from scalesim.scale_sim import scalesim
cfg, topo, layout, out, gemm = sys.argv[1:6]
s = scalesim(save_disk_space=True, verbose=False, config=cfg, topology=topo, layout=layout, input_type_gemm=gemm == "1")
s.run_scale(top_path=out)
"""


def compare(topology: Path, config: Path, scalesim_python: str) -> dict:
    gemm = topology.read_text().splitlines()[0].replace(" ", "").lower().startswith("layer,m,n,k")
    with tempfile.TemporaryDirectory() as tmp:
        layout = Path(tmp) / "layout.csv"
        layout.write_text("Layer name,\n")
        t = time.perf_counter()
        subprocess.run([scalesim_python, "-c", RUN_SCALESIM, str(config), str(topology), str(layout), tmp,
                        "1" if gemm else "0"], check=True, capture_output=True)
        scalesim_s = time.perf_counter() - t
        report = next(Path(tmp).rglob("COMPUTE_REPORT.csv")).read_text().splitlines()[1:]
        ss_cycles = [(int(line.split(",")[2]), int(line.split(",")[3])) for line in report if line.strip()]
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fastsim.cli", "systolic", "-c", str(config), "-t", str(topology),
                          "--json"], check=True, capture_output=True, text=True)
    fastsim_s = time.perf_counter() - t
    fs_cycles = [(row["total_cycles"], row["stall_cycles"]) for row in json.loads(out.stdout)["layers"]]
    return {"topology": topology.name, "scalesim_s": scalesim_s, "fastsim_s": fastsim_s,
            "speedup": scalesim_s / fastsim_s, "cycles_equal": ss_cycles == fs_cycles,
            "cycles": fs_cycles}


def main():
    python = os.environ.get("SCALESIM_PYTHON")
    if not python:
        sys.exit("set SCALESIM_PYTHON to a python with scalesim==3.0.0 (see golden.py)")
    args = sys.argv[1:]
    config = HERE / "mesh32_os.cfg"
    if args[:1] == ["--config"]:
        config, args = Path(args[1]), args[2:]
    tops = [Path(p) for p in args] or [HERE / "gemm256.csv", HERE / "resnet50_first4.csv"]
    for top in tops:
        r = compare(top, config, python)
        print(f"{r['topology']} ({config.name}): SCALE-Sim {r['scalesim_s']:.1f} s, fastsim {r['fastsim_s']:.2f} s "
              f"(whole process) -> {r['speedup']:.0f}x; (total, stall) cycles equal: {r['cycles_equal']} {r['cycles']}")


if __name__ == "__main__":
    main()
