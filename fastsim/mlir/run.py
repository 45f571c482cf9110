"""Simulating a design read from MLIR, with persistent and stranded cores.

IRON's cores often loop "forever" (to sys.maxsize): they wait for the next object after the host's
data has gone through. Such a run ends in the engine's deadlock state with only those cores
waiting; that is the design's natural end, and the cycle at which nothing could move any more is
its length. The same holds for cores whose loops expect more data than the host sends, once the
host's sequence (its waits included) has run to its end. Any other deadlock is raised as usual.
"""
from __future__ import annotations

import numpy as np

from fastsim.kernels import layout as L

from ..calls_done import calls_done
from ..design import Wait
from ..errors import ConfigError
from ..lower import lower
from ..results import to_dataset
from ..simulation import raise_on_failure, run_batch
from .reader import DesignInfo
from .trace_setup import REGISTER_WRITES


def simulate_design(info: DesignInfo, *, skip: bool = True, trace: bool = False, max_events: int = 200_000,
                    max_cycles: int = 2**40):
    """Simulate ``info.design``; returns the engine's Dataset with attrs ``persistent_cores`` (endless
    cores left waiting when the run ended) and ``stranded_cores`` (cores whose loops expected more
    data than the host sent, left waiting likewise); both 0 when every core finished; and
    ``cores_left`` and ``data_left`` (``_data_left``), the names of the cores left waiting and of
    the channels still holding data then. A run list
    is simulated by ``fastsim.mlir.simulate_run_list``."""
    if info.run_list:
        raise ConfigError([f"{info.design.name} is a run list of {len(info.run_list)} configuration(s): "
                           "simulate it with simulate_run_list"], "MLIR design")
    lowered = lower(info.design, skip=skip, max_cycles=max_cycles, max_events=max_events if trace else 0)
    batch = run_batch([lowered])
    left = _cores_left_after_host(batch, info)
    if left is None:
        raise_on_failure(batch, 0)
        left = []
    ds = to_dataset(batch, trace=trace)
    _add_kernel_calls(ds, batch)
    ds.attrs["persistent_cores"] = sum(t in info.endless_cores for t in left)
    ds.attrs["stranded_cores"] = sum(t not in info.endless_cores for t in left)
    # for checks of a run (bench/mlir_corpus.py): which cores were left waiting, and what data
    # was still on its way then (nothing, when they wait for data no one sends)
    ds.attrs["cores_left"] = [str(t) for t in left]
    ds.attrs["data_left"] = _data_left(batch) if left else []
    return ds


def _data_left(batch) -> list[str]:
    """The channels that still held data the design would have delivered when a run ended with
    cores left waiting: a task queued but not started, an MM2S with bytes to send, a stream with
    bytes no S2MM took. Two kinds of leftover are the design's, not a lost object: bytes that
    reached a shim S2MM the host no longer gives a task (the host took what it wanted), and bytes
    from an endless source (a cyclic BD chain that takes no lock, sending forever), with the MM2S
    channels that only wait for such full streams to drain. An empty list says the cores wait for
    data that nobody sends: they loop more often than the host feeds them."""
    lw = batch.designs[0]
    st, bds = batch.state[0][0], lw.bds
    ch = lw.ch
    n = len(lw.channels)
    excused = set()
    for c in range(n):
        if ch[c, L.CH_MM2S] == 0 and ch[c, L.CH_SHIM] == 1 and int(st[c, L.S_STATE]) == L.CS_IDLE \
                and int(st[c, L.S_QLEN]) == 0:
            excused.add(c)  # the host stopped receiving here
        if ch[c, L.CH_MM2S] == 1 and int(st[c, L.S_STATE]) != L.CS_IDLE:
            b = int(st[c, L.S_BD])
            if b >= 0 and bds[b, L.BD_CYCLIC] == 1 and bds[b, L.BD_ACQ_LOCK] < 0:
                excused.add(c)  # an endless source
                excused.update(_bd_consumers(lw, b))
    left = []
    for c in range(n):
        if c in excused:
            continue
        queued = int(st[c, L.S_QLEN]) > 0
        stream = ch[c, L.CH_MM2S] == 0 and int(st[c, L.S_FILL]) > 0
        sending = ch[c, L.CH_MM2S] == 1 and int(st[c, L.S_STATE]) == L.CS_TRANSFER and not all(
            s in excused and int(st[s, L.S_FILL]) >= ch[s, L.CH_FIFO_CAP]
            for s in _bd_consumers(lw, int(st[c, L.S_BD])))
        if queued or stream or sending:
            left.append(str(lw.channels[c]))
    return left


def _bd_consumers(lw, b: int) -> list[int]:
    """The S2MMs BD ``b``'s data goes to (its packet route's under fan-out by packet id, as the
    engine reads them)."""
    return [int(s) for s in lw.cons[lw.bds[b, L.BD_CONS_START]:lw.bds[b, L.BD_CONS_END]]]


def _add_kernel_calls(ds, batch) -> None:
    """The calls each kernel completed in the run (``calls_done``: a persistent core's program
    has no end to multiply out) as ``kernel_calls`` and ``kernel_cycles`` over a ``kernel`` axis."""
    lw = batch.designs[0]
    done = calls_done(lw.prog, lw.cores, batch.state[2][0], batch.state[3][0], lw.kernel_names)
    names = sorted(done)
    calls = np.array([[done[n][0] for n in names]], np.int64).reshape(1, len(names))
    cycles = np.array([[done[n][1] for n in names]], np.int64).reshape(1, len(names))
    ds.coords["kernel"] = np.array(names, dtype=object)
    ds["kernel_calls"] = (("design", "kernel"), calls, {"units": "calls",
                          "description": "kernel calls completed during the run, all cores"})
    ds["kernel_cycles"] = (("design", "kernel"), cycles, {"units": "cycles",
                           "description": "compute cycles of the completed kernel calls, all cores"})


def _cores_left_after_host(batch, info: DesignInfo) -> list | None:
    """The cores still waiting when the run stopped with nothing left to move after the host's
    sequence had run to its end, waits included; None for any other stop.

    That is how a run ends on the part: the host's last wait returns and XRT's call completes,
    whatever the cores still wait for. Persistent cores always end so; a core whose loop count
    exceeds the data the host sends (mlir-aie's ``two_col`` loops 4096 times over 16 objects)
    too. A host that never waits proves nothing, so its stop stays a deadlock."""
    res = batch.outputs["res"][0]
    if int(res[L.R_STATUS]) != L.ST_DEADLOCK:
        return None
    lw = batch.designs[0]
    _, _, kst, _, hst, _ = (a[0] for a in batch.state[:6])
    host = info.design.host
    if int(hst[0]) < len(host) or not (info.endless_cores or any(isinstance(op, Wait) for op in host)):
        return None
    waiting = [tile for k, tile in enumerate(lw.core_tiles) if int(kst[k, L.K_STATE]) != L.KS_DONE]
    return waiting or None


def summary(ds, info: DesignInfo) -> dict:
    """The headline numbers of a simulated MLIR design (``report.summarize`` without op counts:
    an MLIR design does not say how many operations its kernels do), its kernels and the ops read
    without time."""
    from ..report import summarize

    arch = info.design.arch
    s = summarize(ds, 0, arch, 0.0, "bf16")
    for key in ("ops", "ops_per_s", "peak_ops_per_s", "peak_fraction"):
        s.pop(key)
    per_kernel = {str(name): {"calls": int(ds.kernel_calls[0, i]), "cycles": int(ds.kernel_cycles[0, i])}
                  for i, name in enumerate(ds.kernel.values)}
    s["design"] = {"name": info.design.name, "cores": len(info.design.cores), "bds": len(info.design.bds),
                   "locks": len(info.design.locks), "buffers": len(info.design.buffers),
                   "host_steps": len(info.design.host), "persistent_cores": int(ds.attrs.get("persistent_cores", 0)),
                   "stranded_cores": int(ds.attrs.get("stranded_cores", 0)),
                   "data_left": list(ds.attrs.get("data_left", []))}
    s["kernels"] = {"cycles_per_call": dict(info.kernels), "completed": per_kernel,
                    "defaulted": [{"kernel": d.kernel, "cycles": d.cycles, "rule": d.rule} for d in info.defaulted]}
    s["untimed_ops"] = sorted({name for name, _ in info.untimed})
    s["runtime_sequence"] = sequence_instructions(info)
    macs = sum(per_kernel[k]["calls"] * m for k, m in info.matmul_macs.items() if k in per_kernel)
    if macs and s["seconds"]:
        # what mlir-aie's matmul test harnesses (test.cpp) print, for scripts that parse them: one run
        s["harness"] = {"avg_npu_time_us": s["seconds"] * 1e6, "gflops": 2 * macs / s["seconds"] / 1e9}
    return s


def sequence_instructions(info: DesignInfo) -> dict:
    """The runtime sequence's instructions: its host steps (pushes, waits) and the register writes
    read as set-up (trace, events: no data), each taking the command processor
    ``Arch.runtime_instruction_cycles``. The engine's host steps are pushes and waits, so this
    time is reported beside the simulated cycles, not in them."""
    writes = sum(name in REGISTER_WRITES for name, _ in info.untimed)
    steps = len(info.design.host)
    each = info.design.arch.runtime_instruction_cycles
    return {"host_steps": steps, "register_writes": writes, "cycles_per_instruction": each,
            "instruction_cycles": (steps + writes) * each}


def format_design_summary(s: dict) -> str:
    """``summary`` as the table ``fastsim run design`` prints."""
    d = s["design"]
    lines = [f"{d['name']} on {s['arch']}",
             f"  cycles          {s['total_cycles']:,}",
             f"  time            {s['seconds'] * 1e6:,.1f} us  (kernel {s['kernel_seconds'] * 1e6:,.1f} us"
             f" + dispatch {s['dispatch_overhead_s'] * 1e6:,.1f} us)",
             f"  design          {d['cores']} cores, {d['bds']} BDs, {d['locks']} locks, {d['buffers']} buffers, "
             f"{d['host_steps']} host steps",
             "  bytes by level"]
    lines += [f"    {level:<16}{b:,.0f} B" for level, b in s["bytes_by_level"].items() if b]
    lines.append("  utilization")
    lines += [f"    {k:<16}{100 * v:5.1f} %" for k, v in sorted(s["utilization"].items(), key=lambda kv: -kv[1])]
    lines.append(f"  bound by        {s['bound_by']}")
    for name, done in sorted(s["kernels"]["completed"].items()):
        lines.append(f"  kernel          {name}: {done['calls']:,} calls, {done['cycles']:,} cycles (all cores)")
    for guess in s["kernels"]["defaulted"]:
        lines.append(f"  guessed cost    {guess['kernel']}: {guess['cycles']:,} cycles per call, fastsim's cost "
                     f"model ({guess['rule']}); give a measured cost with --kernels")
    if d["persistent_cores"]:
        lines.append(f"  persistent      {d['persistent_cores']} core(s) loop forever; the run ends when "
                     "they wait for data that no longer comes")
    if d["stranded_cores"]:
        lines.append(f"  stranded        {d['stranded_cores']} core(s) loop more often than the host sends data; "
                     "the run ends with the host's last wait, as on the part")
    if d["data_left"]:
        lines.append(f"  data left       {', '.join(d['data_left'])} still held data when the cores stopped: "
                     "objects sent that no core took (more sent than the cores' loops take, or lost on the way)")
    seq = s["runtime_sequence"]
    if seq["register_writes"]:
        lines.append(f"  sequence        {seq['host_steps']} host steps + {seq['register_writes']} register writes "
                     f"(set-up, no data): {seq['instruction_cycles']:,.0f} command-processor cycles at "
                     f"{seq['cycles_per_instruction']:g} each, not in the cycles above")
    if s["untimed_ops"]:
        lines.append(f"  read, no time   {', '.join(s['untimed_ops'])}")
    if "harness" in s:  # mlir-aie's matmul harness lines (2 x the matmul calls' MACs / time)
        lines += [f"Avg NPU matmul time: {s['harness']['avg_npu_time_us']:.0f}us.",
                  f"Avg NPU gflops: {s['harness']['gflops']:g}"]
    return "\n".join(lines)
