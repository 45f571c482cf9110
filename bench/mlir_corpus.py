"""Run every ``.mlir`` file under a directory (an mlir-aie checkout, e.g. its ``test/npu-xrt``)
through fastsim: which parse, read, validate and simulate, and for the rest the op or problem that
stops each.

    python bench/mlir_corpus.py DIR [--kernel-cycles N] [--json] [--list]

A file passes a stage when every ``aie.device`` in it does; a run list (a device whose runtime
sequence configures and runs the others) passes when each of its configurations does, and its
cycles are their sum (reconfiguration taking no time). Kernels have no measured costs here: a
``func.call`` of a kernel fastsim recognises (matmul, element-wise, softmax, norms: docs/mlir.md)
takes fastsim's cost model's cycles, any other ``--kernel-cycles`` (default 1000), so the cycle
counts printed with ``--list`` say that the design runs, not how fast it runs on silicon. A lit
test's ``aie.device(NPUDEVICE)`` placeholder becomes ``npu2_1col``, as the test's own RUN line
substitutes it on npu2; any other part fastsim does not model stops at ``aie.device``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from fastsim.design import Compute, Loop
from fastsim.errors import ConfigError, SimulationError
from fastsim.mlir import MlirError, read_all, simulate_design, simulate_run_list
from fastsim.mlir.syntax import parse
from fastsim.validate import validate_design

STAGES = ("parse", "read", "validate", "simulate")
LEAKED = re.compile(r"\b(IndexError|KeyError|ValueError|TypeError|AttributeError|UnicodeDecodeError|Traceback)\b")


def run_file(path: Path, kernel_cycles: int) -> dict:
    """{'file', 'stage' (the last stage passed, or 'simulate' for all), 'stop' (why not further),
    'cycles' (per device)}."""
    # mlir-aie's lit tests write the part as NPUDEVICE and substitute it before compiling
    # (sed 's/NPUDEVICE/npu2_1col/g' when they run on npu2): the same here
    text = path.read_text(errors="replace").replace("aie.device(NPUDEVICE)", "aie.device(npu2_1col)")
    out = {"file": str(path), "stage": "none", "stop": "", "cycles": [], "flags": [], "device": device_family(text)}
    try:
        parse(text, str(path))
    except ConfigError as e:
        out["stop"] = "syntax: " + e.problems[0].split("\n")[0].split(": ", 1)[-1]
        return out
    out["stage"] = "parse"
    try:
        infos = read_all(text, {}, source=str(path), default_kernel_cycles=kernel_cycles)
    except MlirError as e:
        out["stop"] = _problem(e)
        if LEAKED.search(" ".join(e.problems)):
            out["flags"].append("leaked Python exception text")
        return out
    if not infos:
        out["stop"] = "no aie.device"
        return out
    out["stage"] = "read"
    try:
        for info in infos:
            for design in [step.info.design for step in info.run_list] or [info.design]:
                validate_design(design)
    except ConfigError as e:
        out["stop"] = "validate: " + _problem(e)
        return out
    out["stage"] = "validate"
    try:
        for info in infos:
            if info.run_list:
                out["cycles"].append(int(simulate_run_list(info).total_cycles))
                continue
            ds = simulate_design(info)
            out["cycles"].append(int(ds.total_cycles[0]))
            out["flags"] += run_flags(info, ds)
    except SimulationError as e:
        out["stop"] = f"simulate: {type(e).__name__}"
        return out
    out["stage"] = "simulate"
    return out


def device_family(text: str) -> str:
    """The part a file's ``aie.device``s target: ``npu1`` (``npu1*``, and ``npu``, its older name),
    ``npu2`` (``npu2*``), another target's name, several joined by ``+``, or ``none``."""
    names = set(re.findall(r"aie\.device\(\s*(\w+)", text))
    fams = {"npu1" if n == "npu" or n.startswith("npu1") else "npu2" if n.startswith("npu2") else n for n in names}
    return "+".join(sorted(fams)) or "none"


def _guarded(path: Path, kernel_cycles: int) -> dict:
    """``run_file``, with an unexpected exception recorded as the file's stop (a bug of fastsim's
    reader to fix, not a reason to lose the other files' results)."""
    try:
        return run_file(path, kernel_cycles)
    except Exception as e:  # noqa: BLE001 - recorded and reported per file
        return {"file": str(path), "stage": "none", "stop": f"crash: {type(e).__name__}: {e}"[:120], "cycles": [],
                "flags": ["crash"], "device": "none"}


def _problem(e: ConfigError) -> str:
    """A problem without its file, line and the design's own names and numbers, so that the same
    cause counts once."""
    text = e.problems[0].split("\n")[0]
    parts = text.split(": ", 2)
    text = parts[-1] if parts[0].endswith(".mlir") or ".mlir:" in parts[0] else text
    if len(parts) == 3 and (parts[0].endswith(".mlir") or ".mlir:" in parts[0]):
        text = f"{parts[1]}: {text}"  # the op
    text = re.sub(r"%[\w.$#-]+", "%v", re.sub(r"@[\w.$-]+", "@s", text))
    text = re.sub(r"kernel '[^']*'", "kernel 'k'", re.sub(r"\b(0x[0-9A-Fa-f]+|\d+)\b", "N", text))
    return text[:110]


def run_flags(info, ds) -> list[str]:
    """What a run that simulated may still have wrong: a core stranded while data was still on its
    way to it (``simulate_design``'s ``data_left``: a lost object, or a FIFO the design feeds in
    balance, not a loop that outlasts what the host sends), a kernel whose completed calls differ
    from what the finite loops of the cores that finished imply, and leaked Python exception text."""
    flags = []
    if ds.attrs.get("stranded_cores", 0) and ds.attrs.get("data_left"):
        flags.append(f"stranded cores: {ds.attrs['stranded_cores']} with data left in "
                     f"{', '.join(ds.attrs['data_left'])}")
    left = set(ds.attrs.get("cores_left", []))
    implied: dict[str, int] = {}
    skipped = set()  # kernels of cores that never finish: their calls imply nothing
    for tile, program in info.design.cores.items():
        calls_of = _calls(program)
        if tile in info.endless_cores or str(tile) in left:
            skipped.update(calls_of)
            continue
        for name, calls in calls_of.items():
            implied[name] = implied.get(name, 0) + calls
    done = {str(k): int(c) for k, c in zip(ds.kernel.values, ds.kernel_calls.values[0])}
    for name in sorted(set(implied) - skipped):
        if done.get(name, 0) != implied[name]:
            flags.append(f"kernel {name}: {done.get(name, 0)} calls completed, the loops imply {implied[name]}")
    return flags


def _calls(ops, times: int = 1) -> dict[str, int]:
    """Kernel calls a core program makes, its loops multiplied out."""
    out: dict[str, int] = {}
    for op in ops:
        inner = {op.name: times} if isinstance(op, Compute) else (
            _calls(op.body, times * op.count) if isinstance(op, Loop) else {})
        for name, n in inner.items():
            out[name] = out.get(name, 0) + n
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--kernel-cycles", type=int, default=1000, help="cycles of every call of a kernel fastsim does not recognise (default 1000)")
    ap.add_argument("--json", action="store_true", help="one JSON object with every file's result")
    ap.add_argument("--list", action="store_true", help="one line per file")
    args = ap.parse_args(argv)
    files = sorted(args.dir.rglob("*.mlir"))
    results = [_guarded(f, args.kernel_cycles) for f in files]
    passed = {s: sum(STAGES.index(r["stage"]) >= i for r in results if r["stage"] in STAGES)
              for i, s in enumerate(STAGES)}
    stops = Counter(r["stop"] for r in results if r["stop"])
    if args.json:
        print(json.dumps({"files": len(files), "passed": passed, "stops": dict(stops), "results": results}))
        return 0
    print(f"{len(files)} .mlir files under {args.dir}")
    for s in STAGES:
        print(f"  {s:<9} {passed[s]}")
    families = Counter(r["device"] for r in results)
    print("simulate by device (files with an aie.device of that part)")
    for fam, n in sorted(families.items(), key=lambda kv: -kv[1])[:8]:
        done = sum(r["device"] == fam and r["stage"] == "simulate" for r in results)
        print(f"  {fam:<12} {done} of {n}")
    print("stopped by")
    for stop, n in stops.most_common():
        print(f"  {n:4d}  {stop}")
    flagged = [r for r in results if r["flags"]]
    print(f"flagged runs    {len(flagged)}")
    for r in flagged:
        print(f"  {Path(r['file']).relative_to(args.dir)}: {'; '.join(r['flags'])}")
    if args.list:
        for r in results:
            print(f"{r['stage']:<9} {Path(r['file']).relative_to(args.dir)}  {r['cycles'] or r['stop']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
