"""A profile of an mlir-aie design (a hardware trace's core tiles, a plain ``kernel,cycles`` CSV,
a host-timed whole run) against ``fastsim.mlir.simulate_design`` of the same design: core tiles
by their column and row, kernels by their symbol, both in cycles of the array's clock."""
from __future__ import annotations

from ..mlir import read_design, simulate_design
from ..results import CORE_STATES
from .compare import HINTS, Comparison, Pair, refuse_kinds
from .profile import Profile

# trace stall events fastsim's core states can answer for (lock stalls: a core waiting on a lock)
STALL_STATES = {"LOCK_STALL": "lock_wait"}


def compare_design(profile: Profile, path: str, *, kernels_path: str | None = None, arch=None,
                   device: str | None = None) -> Comparison:
    """``profile`` (rows of kind tile, kernel or model) against one simulated run of the design
    at ``path`` (``read_design``'s arguments)."""
    refuse_kinds(profile, ("tile", "kernel", "model"), "a design comparison", HINTS)
    info = read_design(path, kernels_path, arch=arch, device=device)
    ds = simulate_design(info)
    clock = float(ds.attrs["clock_hz"])
    pairs, unmatched, notes = [], [], list(profile.notes)
    cores = [str(c) for c in ds.core_name.values[0]]
    kernels = [str(k) for k in ds.kernel.values]
    for r in profile.rows:
        if r.kind == "tile" and r.name in cores:
            pairs += _tile(r, ds, cores.index(r.name), clock, notes)
        elif r.kind == "kernel" and r.name in kernels and int(ds.kernel_calls.values[0, kernels.index(r.name)]):
            k = kernels.index(r.name)
            per_call = float(ds.kernel_cycles.values[0, k]) / float(ds.kernel_calls.values[0, k])
            pairs.append(Pair(r.name, r.seconds_at(clock), per_call / clock, "exact", "kernel", "compute",
                              (f"{r.name}@{r.where}",), f"per call ({int(ds.kernel_calls.values[0, k])} calls "
                              "simulated)"))
        elif r.kind != "model":
            known = cores if r.kind == "tile" else kernels
            unmatched.append(f"{r.name}@{r.where}: no {r.kind} of that name in the simulated design "
                             f"({', '.join(known) or 'none'})")
    whole = next((Pair("(whole run)", r.seconds_at(clock), float(ds.seconds.values[0]), "whole", "whole", "",
                       (f"{r.name}@{r.where}",)) for r in profile.rows if r.kind == "model"), None)
    measured = {p.name for p in pairs}
    unmeasured = tuple(n for n in (cores if profile.kinds() & {"tile"} else kernels) if n not in measured)
    return Comparison(info.design.name, profile.path, profile.fmt, tuple(pairs), clock,
                      "the simulated array's clock (trace and kernel cycles are array cycles)", whole,
                      tuple(unmatched), (), unmeasured if profile.kinds() - {"model"} else (), tuple(notes))


def _tile(r, ds, core: int, clock: float, notes: list) -> list[Pair]:
    """A core's kernel time (its event0..event1 spans, every call) against its simulated busy
    cycles, and each stall the trace shows that fastsim's core states name, against that state."""
    busy = float(ds.core_cycles.values[0, core, CORE_STATES.index("busy")])
    out = [Pair(r.name, r.cycles * r.count / clock, busy / clock, "exact", "core", "compute", (f"{r.name}@{r.where}",),
                f"kernel time of {r.count} call(s): event0..event1 spans against busy cycles")]
    for event, cycles in r.stalls:
        if event in STALL_STATES:
            state = STALL_STATES[event]
            sim = float(ds.core_cycles.values[0, core, CORE_STATES.index(state)])
            out.append(Pair(f"{r.name} {event.lower()}", cycles / clock, sim / clock, "exact", "core", state,
                            (f"{r.name}@{r.where}",), f"{event} spans against {state} cycles"))
        else:
            notes.append(f"{r.name}: {event} ({cycles:g} cycles) has no core state of its own in fastsim; not compared")
    return out
