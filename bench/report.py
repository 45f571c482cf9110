"""Measure the speed figures of docs/speed.md (and the README's summary): medians of repeated runs
on this machine, as Markdown.

    python bench/report.py                 # engine, workloads and calibration (a few minutes)
    python bench/report.py sweeps          # sweep points/s with 1 and 2 workers
    python bench/report.py llm             # Llama-3.2-1B decode and prefill simulation times
    python bench/report.py systolic        # mesh model: whole-process CLI and in-process times
    python bench/report.py studies         # fastsim optimize on Llama-3.2-1B, one thread
    python bench/report.py optimize        # fastsim optimize --model llama-3.1-8b, whole process

Sections other than the engine's print this machine's speed before and after (``machine_speed``):
read a timing against it, not against a figure measured on another day.
"""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastsim  # noqa: E402
import fastsim.workloads.gemm  # noqa: E402
from benchmarks.bench_engine import _STARTUP  # noqa: E402
from benchmarks.common import COLD_ENV, DESIGNS, ENGINE_MODES, cold, gemm_candidates, kernel_run, machine_speed, passthrough_design, reference_rate  # noqa: E402
from benchmarks.common import YARDSTICK_TABLE_CYCLES_PER_S  # noqa: E402
from fastsim.kernels import layout as L  # noqa: E402
from fastsim.lower import lower  # noqa: E402
from fastsim.report import summarize  # noqa: E402
from fastsim.simulation import run_batch  # noqa: E402
from fastsim.mapping import baseline_mapping  # noqa: E402
from fastsim.workloads.gemm import Gemm  # noqa: E402

REPEATS = 5


def median_time(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    rows = []
    for name in ("passthrough", "gemm_512", "gemm_2048"):
        design = DESIGNS[name]()
        for mode, options in ENGINE_MODES.items():
            reps = 1 if (name == "gemm_2048" and mode == "step") else REPEATS
            seconds, batch = kernel_run(design, repeats=reps, **options)
            cycles = int(batch.outputs["res"][0, L.R_CYCLES])
            steps = int(batch.outputs["res"][0, L.R_STEPS])
            rows.append((name, f"kernel, {mode}", cycles, steps, seconds))
        ref_cycles = 20000
        rate = statistics.median(reference_rate(design, ref_cycles) for _ in range(3))
        rows.append((name, f"reference (first {ref_cycles} cycles)", ref_cycles, ref_cycles, ref_cycles / rate))
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"medians of {REPEATS} runs (stepping the 2048^3 GEMM: 1 run)\n")
    print("| design | engine | simulated cycles | stepped cycles | wall s | cycles/s |")
    print("|---|---|---:|---:|---:|---:|")
    for name, engine, cycles, steps, s in rows:
        print(f"| {name} | {engine} | {cycles:,} | {steps:,} | {s:.4f} | {cycles / s:,.0f} |")

    one = lower(passthrough_design(16))
    run_batch([one], cache=False)
    t1 = median_time(lambda: run_batch([one], cache=False))
    t64 = median_time(lambda: run_batch([one] * 64, cache=False))
    print(f"\nBatch: 1 design {t1 * 1e3:.2f} ms, 64 designs {t64 * 1e3:.1f} ms "
          f"({t64 / t1:.1f}x one design; {64 / t64:,.0f} designs/s)")

    candidates = gemm_candidates()
    per_thread = {n: median_time(lambda: run_batch(candidates, threads=n, cache=False)) for n in (1, 2)}
    print(f"Batch of {len(candidates)} different 512^3 GEMM mapping candidates: 1 thread {per_thread[1]:.3f} s, "
          f"2 threads {per_thread[2]:.3f} s ({per_thread[1] / per_thread[2]:.2f}x)")

    def startup(cache):
        env = {**os.environ, **COLD_ENV, "FASTSIM_NUMBA_CACHE": cache}
        out = subprocess.run([sys.executable, "-c", _STARTUP], env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])
    startup("1")
    print(f"Start-up to first result: cold compile {startup('0'):.1f} s, cached {startup('1'):.2f} s")

    g = Gemm(2048, 2048, 2048, "bf16")
    ds = fastsim.simulate(fastsim.workloads.gemm.gemm_design(g, fastsim.NPU2, baseline_mapping(fastsim.NPU2)))
    s = summarize(ds, 0, fastsim.NPU2, g.ops, "bf16")
    print(f"\nIRON GEMM 2048^3 bf16, 64^3 tiles, 8 columns: predicted {s['seconds'] * 1e6:,.0f} us "
          f"(kernel efficiency {fastsim.NPU2.efficiency('bfp16')}, bound by {s['bound_by']}); measured 24,679 us "
          f"(amd/IRON #55); "
          f"measured/predicted = {24679e-6 / s['seconds']:.2f}")


def mapping(repeats: int = 3):
    """Searched vs fixed (whole_array 64^3) GEMM mappings on npu2, and the search's wall time."""
    from fastsim.mapping import Matmul, search

    search(Matmul(64, 64, 64), fastsim.NPU2, top=1)  # JIT warm-up
    times = []
    for _ in range(repeats):
        with cold():
            t = time.perf_counter()
            search(Matmul(2048, 2048, 2048), fastsim.NPU2)
            times.append(time.perf_counter() - t)
    print(f"Search of the 2048^3 bf16 GEMM mapping: {statistics.median(times):.2f} s (median of {repeats})\n")
    print("| GEMM | dtype | fixed 64^3 cycles | fixed % peak | searched cycles | searched % peak | searched mapping |")
    print("|---|---|---:|---:|---:|---:|---|")
    arch = fastsim.NPU2
    for dtype in ("bf16", "int8"):
        for size in (512, 1024, 2048, 4096):
            g = Gemm(size, size, size, dtype)
            found = search(g.matmul(), arch)
            fixed = int(fastsim.simulate(fastsim.workloads.gemm.gemm_design(g, arch, baseline_mapping(arch)))
                        .total_cycles[0])
            peak = arch.peak_macs_per_s(dtype) / arch.clock_hz
            print(f"| {size}^3 | {dtype} | {fixed:,} | {100 * g.macs / peak / fixed:.1f} | {found.best_cycles:,} | "
                  f"{100 * g.macs / peak / found.best_cycles:.1f} | {found.best.label()} |")


def sweeps(repeats: int = 3):
    import tempfile

    from benchmarks.bench_sweeps import _spec
    from benchmarks.common import first_sweep
    from fastsim.sweeping import sweep

    rates, first = {}, {}
    for workers in (1, 2):
        runs, firsts = [], []
        for _ in range(repeats):
            spec = _spec()
            report = []
            t = time.perf_counter()
            with first_sweep():  # each run from an empty disk tier, as a user's first sweep
                sweep(spec, f"{tempfile.mkdtemp()}/s.zarr", workers=workers, progress=False, report=report)
            runs.append(spec.n_points / (time.perf_counter() - t))
            firsts.append(report[0].first_result_s)
        rates[workers], first[workers] = statistics.median(runs), statistics.median(firsts)
    import resource

    from benchmarks.bench_sweeps import LargeStore
    from fastsim.sweeping import store

    large = LargeStore()
    large.setup()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.perf_counter()
    store.create(large.spec, f"{large.dir}/large.zarr")
    chunks = len(store.pending(large.spec, f"{large.dir}/large.zarr"))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"Creating a {large.spec.n_points:,}-point store and listing its {chunks} pending chunks: "
          f"{time.perf_counter() - t:.1f} s, peak RSS {after:.0f} MB ({after - before:.0f} MB above the process "
          f"before it)")
    print(f"Sweep of {_spec().n_points} Llama-3.2-1B decode points (cluster start-up included), "
          f"medians of {repeats}: 1 worker {rates[1]:.2f} points/s, 2 workers {rates[2]:.2f} points/s, "
          f"scaling {rates[2] / rates[1]:.2f}x; the first chunk ({_spec().chunk_points} points) is stored after "
          f"{first[1]:.1f} s with 1 worker, {first[2]:.1f} s with 2 (cluster start, store, a worker's imports and "
          f"JIT, its points)")


def llm(repeats: int = 5):
    from fastsim.llm import LlmStudy, simulate_llm

    simulate_llm(LlmStudy(regime="decode", context=128))

    def fresh(study, searches: bool):
        # neither op results nor engine results by design content answer, nor an earlier run's
        regions = ("op", "engine", "search", "search_bound") if searches else ("op", "engine")
        with cold(*regions):
            simulate_llm(study)

    for name, study in (("decode step, 4k context", LlmStudy(regime="decode", context=4096)),
                        ("prefill, 2k prompt", LlmStudy(regime="prefill", prompt=2048))):
        searched = median_time(lambda: fresh(study, True), repeats)
        known = median_time(lambda: fresh(study, False), repeats)
        print(f"Llama-3.2-1B {name}: {searched:.2f} s with every op's mapping searched, {known:.2f} s with "
              f"the searches cached (their simulations reused; medians of {repeats})")


def studies():
    """fastsim optimize on Llama-3.2-1B / npu2 on one thread, caches cleared (one run: minutes)."""
    from benchmarks.bench_studies import Optimize1B

    bench = Optimize1B()
    bench.setup()
    t = median_time(bench.time_optimize, 1)
    print(f"fastsim optimize, Llama-3.2-1B (decode:4096, prefill:1024, mix 1024:128), one thread: {t:.0f} s")


def systolic(repeats: int = 5):
    """Whole-process CLI time on full ResNet-50 (32x32 os mesh), unlimited and bandwidth-limited,
    and the in-process cost of the bandwidth-limited memory model."""
    from fastsim.systolic import mesh_metrics, read_config, read_topology

    here = Path(__file__).resolve().parent / "scalesim"
    topo = here / "resnet50.csv"
    for cfg in ("mesh32_os.cfg", "mesh32_os_user.cfg"):
        cmd = [sys.executable, "-m", "fastsim.cli", "systolic", "-c", str(here / cfg), "-t", str(topo), "--json"]
        t = median_time(lambda: subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **COLD_ENV}),
                        repeats)
        print(f"fastsim systolic, ResNet-50 (54 layers), {cfg}: {t:.2f} s whole process (median of {repeats})")
    layers, cfg = read_topology(topo), read_config(here / "mesh32_os_user.cfg")
    mesh_metrics(layers[:1], [cfg])
    t = median_time(lambda: mesh_metrics(layers, [cfg]), 3)
    m = mesh_metrics(layers, [cfg])
    requests = int((m["sram_ifmap_reads"] + m["sram_filter_reads"] + m["sram_ofmap_writes"]).sum())
    print(f"  bandwidth-limited model in-process: {t:.2f} s, {requests / t / 1e6:.0f} M requests/s "
          f"({int(m['compute_cycles'].sum()):,} compute cycles, {int(m['stall_cycles'].sum()):,} stall cycles)")


def optimize():
    """``fastsim optimize --model llama-3.1-8b`` as a user's first run: a whole process (its worker
    processes included), the disk tier on in a new, empty directory (one run: minutes)."""
    import tempfile

    with tempfile.TemporaryDirectory() as cache_dir, tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "fastsim.cli", "optimize", "--model", "llama-3.1-8b", "--out", out]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "FASTSIM_CACHE": "1",
                                                                   "FASTSIM_CACHE_DIR": cache_dir})
        print(f"fastsim optimize --model llama-3.1-8b, whole process, empty caches: {time.perf_counter() - t:.1f} s")


def with_machine_speed(section):
    """``section`` between two readings of this machine's speed: this VM runs up to 3x slower on
    some days than on others, so a timing compares only with one taken at the same machine speed."""
    before = machine_speed()
    section()
    after = machine_speed()
    print(f"Machine speed (reference simulator, gemm_512's first 20,000 cycles): {before:,.0f} cycles/s before, "
          f"{after:,.0f} after; docs/speed.md's engine table: {YARDSTICK_TABLE_CYCLES_PER_S:,}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "engine"
    section = {"engine": main, "sweeps": sweeps, "llm": llm, "systolic": systolic, "mapping": mapping,
               "studies": studies, "optimize": optimize}[what]
    if what == "engine":  # its table holds the yardstick's own row
        section()
    else:
        with_machine_speed(section)
