"""Dispatches: what one host dispatch can hold, the greedy default cut, and what a cut costs.

A dispatch is one run of a runtime sequence on one configuration of the array. It holds only what
fits (``DispatchLimits``):

- the runtime sequence: its instructions (BD writes, task pushes, syncs) must fit the instruction
  buffer;
- core program memory: every distinct kernel a core runs in the dispatch is linked into its
  program; when they do not fit, the cores' programs are reloaded (an ELF load) at every layer;
- static weights: with ``residency="static"`` a dispatch's weights must fit in the array's memories.

BD and lock counts per tile are checked op by op (each op's design is validated; a dispatch
re-writes BDs between ops through its runtime sequence).

A cut costs the host round trip (``Arch.dispatch_overhead_s``), the activations that stayed on chip
across it now written out and read back (the ops on each side are simulated with DDR operands), and,
with static weights, reloading every dispatch's weights on every pass (one dispatch keeps them
resident across decode steps).
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import NamedTuple

from ..arch import Arch
from ..errors import ConfigError, Problems


@dataclass(frozen=True)
class DispatchLimits:
    """Capacities of one dispatch. Program memory: 16 KiB per compute tile (AM020, docs/calibration.md).
    Code sizes, instruction sizes and the instruction buffer are assumptions (no public figure):
    a BD write is about 8 register words, a task push or a sync 2 words."""

    program_memory_bytes: int = 16384
    matmul_kernel_bytes: int = 2048  # per distinct (tile shape, datapath) microkernel: assumption
    vector_kernel_bytes: int = 512  # per vector op class: assumption
    core_loop_bytes: int = 1024  # the core's main loop, locks and calls: assumption
    instruction_buffer_words: int = 262144  # 1 MiB runtime sequence: assumption
    words_per_bd: int = 8
    words_per_push: int = 2
    words_per_wait: int = 2

    def validate(self) -> "DispatchLimits":
        p = Problems("dispatch limits")
        for name, value in self.__dict__.items():
            p.check(isinstance(value, (int, float)) and value >= 0, name, value, "a number >= 0")
        p.raise_if_any()
        return self


@dataclass
class OpFootprint:
    """What one op (all its repeats) adds to a dispatch."""

    sequence_words: int
    kernels: frozenset
    static_weight_bytes: float = 0.0
    # runs in the launch of the op before it (a later stage of its fusion group: on-chip hand-offs
    # do not survive a launch's reconfiguration)
    joins_previous: bool = False


def host_counts(design) -> tuple[int, int]:
    """(distinct BDs pushed, syncs) of one design's runtime sequence."""
    from ..design import Push

    pushes = [op for op in design.host if isinstance(op, Push)]
    return len({id(op.bd) for op in pushes}), len(design.host) - len(pushes)


class ControlCounts(NamedTuple):
    """What the runtime sequence writes to set one op's design up between layers of a dispatch
    (``control_counts``), each one runtime-sequence instruction as mlir-aie lowers it."""

    shim_tasks: int  # distinct shim BDs the host pushes: blockwrite + address patch + queue push each
    tile_pushes: int  # distinct mem-tile BDs the host pushes (on-chip sends): a queue push each
    syncs: int  # host waits: one npu_sync each
    mem_bds: int  # mem-tile BDs: one blockwrite each (npu_writebd)
    mem_starts: int  # mem-tile BD chains started: one queue push each
    mem_locks: int  # mem-tile locks: one write32 each (set_lock)
    cores: int  # compute tiles: one runtime-parameter write32 each (the layer's shape)


NO_CONTROL = ControlCounts(0, 0, 0, 0, 0, 0, 0)
# instructions of one shim task (mlir-aie AIEDmaToNpu: npu_dma_memcpy_nd -> npu_writebd (one
# blockwrite) + npu_address_patch + npu_push_queue (one write32))
SHIM_TASK_INSTRUCTIONS = 3


def control_counts(design) -> ControlCounts:
    """The set-up a design needs when it follows another one in the same dispatch (an overlay:
    compute tiles keep their DMA programs and locks; shim and mem tiles are re-programmed)."""
    from ..design import Push

    arch = design.arch
    pushed = {id(op.bd): op.bd for op in design.host if isinstance(op, Push)}
    shim = sum(b.channel.tile.row == 0 for b in pushed.values())
    mem = [b for b in design.bds if 0 < b.channel.tile.row < arch.first_compute_row]
    return ControlCounts(
        shim_tasks=shim, tile_pushes=len(pushed) - shim,
        syncs=sum(not isinstance(op, Push) for op in design.host), mem_bds=len(mem),
        mem_starts=sum(0 < ch.tile.row < arch.first_compute_row for ch in design.static_chains),
        mem_locks=sum(0 < lk.tile.row < arch.first_compute_row for lk in design.locks), cores=len(design.cores))


# instructions per count (``ControlCounts`` order) of setting a design up after another op's (see
# docs/hardware.md "Control costs": each a cited lowering in mlir-aie), and of running one already
# set up once more on new operands: its shim tasks pushed again at the new addresses, its on-chip
# sends pushed, its waits, its mem-tile chains restarted; its mem-tile BDs, locks and core
# parameters stay as set. The compiled search loop takes these rows too (``candidates``).
LAYER_INSTRUCTIONS = ControlCounts(shim_tasks=SHIM_TASK_INSTRUCTIONS, tile_pushes=1, syncs=1, mem_bds=1,
                                   mem_starts=1, mem_locks=1, cores=1)
REPEAT_INSTRUCTIONS = ControlCounts(shim_tasks=SHIM_TASK_INSTRUCTIONS, tile_pushes=1, syncs=1, mem_bds=0,
                                    mem_starts=1, mem_locks=0, cores=0)


def _instructions(per_count: ControlCounts, c: ControlCounts):
    total = 0
    for each, n in zip(per_count, c):
        total = total + each * n  # integers: the order of the sum does not matter
    return total


# (layer, repeat) instructions of the counts seen so far: an evaluation weighs every op's control
# each time it totals a placement (hundreds of thousands of times in a sweep), from a few hundred
# distinct counts. Arrays of counts (the search's reference) are computed each time.
_KNOWN: dict[ControlCounts, tuple[int, int]] = {}


def _both(c: ControlCounts) -> tuple[int, int] | None:
    """(layer, repeat) instructions of plain-integer counts, kept; None for arrays of counts."""
    try:
        known = _KNOWN.get(c)
    except TypeError:  # arrays: unhashable
        return None
    if known is None:
        if type(c) is not ControlCounts or not all(type(n) is int for n in c):
            return None
        if len(_KNOWN) > 65536:
            _KNOWN.clear()
        known = _KNOWN[c] = (_instructions(LAYER_INSTRUCTIONS, c), _instructions(REPEAT_INSTRUCTIONS, c))
    return known


def instructions_of(c: ControlCounts) -> tuple:
    """(``layer_instructions``, ``repeat_instructions``) of ``c`` at once (kept for plain counts)."""
    known = _both(c)
    return known if known is not None else (_instructions(LAYER_INSTRUCTIONS, c), _instructions(REPEAT_INSTRUCTIONS, c))


def layer_instructions(c: ControlCounts) -> int:
    """Runtime-sequence instructions that set one op's design up after another op's."""
    known = _both(c)
    return _instructions(LAYER_INSTRUCTIONS, c) if known is None else known[0]


def repeat_instructions(c: ControlCounts):
    """Runtime-sequence instructions that run a design already set up once more on new operands (an
    op repeated per expert: each instance reads its own expert's weights and tokens, at addresses
    no multi-dimensional task can stride to)."""
    known = _both(c)
    return _instructions(REPEAT_INSTRUCTIONS, c) if known is None else known[1]


class ControlWeight(NamedTuple):
    """How much of a design's control one simulated run of it is charged inside a dispatch: its
    set-ups and its re-runs on new operands per run (``Placed``: runs / repeat, and for gathered
    repeats (repeat - runs) / repeat). A plain number is set-ups alone; 0 (or all zero): none."""

    setups: float
    reruns: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.setups or self.reruns)

    @classmethod
    def of(cls, weight) -> "ControlWeight":
        """``weight`` as a ``ControlWeight`` (a plain number: set-ups alone)."""
        return weight if isinstance(weight, ControlWeight) else cls(weight)


def weighted_instructions(c: ControlCounts, weight):
    """Control instructions per simulated run of a design weighted by ``weight`` (a
    ``ControlWeight`` or a number of set-ups): set-ups x ``layer_instructions`` + re-runs x
    ``repeat_instructions``. Works on arrays of counts."""
    w = ControlWeight.of(weight)
    layer, repeat = instructions_of(c)
    return w.setups * layer + w.reruns * repeat


def charged_runs(runs: int, reruns: int, resident: bool) -> ControlWeight:
    """How an op's runs inside its dispatch are charged: ``runs`` set-ups and ``reruns`` re-runs on
    new operands; in a dispatch whose programs stay resident (``resident``: one fused module) every
    run is a re-run (nothing but its shim tasks, on-chip sends, waits and chain starts is written)."""
    return ControlWeight(0, runs + reruns) if resident else ControlWeight(runs, reruns)


def control_instructions(counts: list[ControlCounts], runs: list[int], reruns: list[int],
                         of_op: list[int], resident: bool = False) -> list[int]:
    """Per op: the runtime-sequence instructions charged for setting it up inside its dispatch,
    ``runs`` times (a token-blocked fused group's ops take turns, block by block: each block of
    each op is set up anew), except the first run of each dispatch's first op (its set-up is the
    dispatch's own: part of ``host_seconds_per_dispatch``), and for re-running it ``reruns`` times
    on new operands (gathered repeats: ``repeat_instructions``). ``resident``: every run is a
    re-run (``charged_runs``), the dispatch's first still its own."""
    out, seen = [], set()
    for c, n, again, d in zip(counts, runs, reruns, of_op):
        first = d not in seen
        seen.add(d)
        w = charged_runs(n - 1 if first else n, again, resident)
        layer, repeat = instructions_of(c)  # one lookup: a sweep point asks this of every op several times
        out.append(layer * w.setups + repeat * w.reruns)
    return out


def control_seconds_per_dispatch(instructions: list[int], of_op: list[int], count: int, arch: Arch) -> list[float]:
    """Seconds of each dispatch's control instructions (``Arch.runtime_instruction_cycles`` each)."""
    out = [0.0] * count
    each, clock = arch.runtime_instruction_cycles, arch.clock_hz
    for n, d in zip(instructions, of_op):
        out[d] += n * each / clock
    return out


def sequence_words(counts: tuple[int, int], limits: DispatchLimits) -> int:
    """Runtime-sequence words. The engine's host pushes step by step; a compiled sequence covers
    each BD's whole access pattern with one multi-dimensional task (4D addressing and repeat
    counts), so each distinct BD costs one BD write and one push, plus every sync."""
    bds, waits = counts
    return (limits.words_per_bd + limits.words_per_push) * bds + limits.words_per_wait * waits


def program_bytes(kernels: set, limits: DispatchLimits, traits: dict) -> int:
    """Program memory of a core that runs ``kernels``, each tagged by its op kind (("matmul", ...),
    ("conv", ...), ("vector", class)): as large as its kind's ``KindTraits.kernel_size`` in ``traits``
    (``mappers.KIND_TRAITS``) says (a conv kernel as large as a matmul microkernel: an assumption)."""
    return limits.core_loop_bytes + sum(kernel_bytes(k, limits, traits) for k in kernels)


def kernel_bytes(kernel: tuple, limits: DispatchLimits, traits: dict) -> int:
    """Program memory one kernel adds to a core's (``program_bytes``)."""
    if kernel[0] not in traits:
        raise ValueError(f"kernel {kernel!r}: tagged by no op kind ({', '.join(traits)})")  # a caller's bug
    return limits.matmul_kernel_bytes if traits[kernel[0]].kernel_size == "matmul" else limits.vector_kernel_bytes


def reload_seconds(plan: "DispatchPlan", layers: list[int], limits: DispatchLimits, arch: Arch,
                   launches_reconfigure: bool = False) -> list[float]:
    """Per dispatch: its cores' program reloads (``Arch.core_program_load_s`` each), once per layer
    it holds, where its kernels exceed program memory (0 where they fit). Where every launch
    reconfigures the array (``launches_reconfigure``), each launch loads its own kernels: only a
    launch whose kernels exceed program memory (a chained group) reloads inside it."""
    out = []
    for d in range(plan.count):
        held = {layer for layer, x in zip(layers, plan.of_op) if x == d and layer >= 0}
        over = (plan.launch_overflows[d] if launches_reconfigure else
                plan.program_bytes[d] > limits.program_memory_bytes)
        out.append(arch.core_program_load_s * len(held) if over else 0.0)
    return out


def launch_starts(joins_previous: list[bool], of_op: list[int]) -> list[bool]:
    """Per op: whether it starts a launch. An op alone is one launch, a fusion group one (its later
    stages join the launch of the op before them: on-chip hand-offs do not survive a launch's
    reconfiguration); a dispatch's first op starts one whatever it joins."""
    return [not (j and i > 0 and of_op[i - 1] == of_op[i]) for i, j in enumerate(joins_previous)]


def launch_seconds(starts: list[bool], arch: Arch, launches_reconfigure: bool) -> list[float]:
    """Per op: the inline reconfiguration of the launch it starts (``Arch.launch_reconfiguration_s``:
    an ELF with expanded load_pdis rewrites the array's configuration, core programs included, at
    every launch), where the layout says launches reconfigure; 0 elsewhere."""
    return [arch.launch_reconfiguration_s if launches_reconfigure and s else 0.0 for s in starts]


def _launch_overflows(footprints, starts, of_op, count: int, limits: DispatchLimits, traits: dict) -> list[bool]:
    """Per dispatch: whether one of its launches runs more kernels than program memory holds."""
    out, kernels, size = [False] * count, set(), 0
    for i, (f, d) in enumerate(zip(footprints, of_op)):
        if starts[i]:
            kernels, size = set(), limits.core_loop_bytes
        for k in f.kernels:
            if k not in kernels:  # the launch's program grows by its new kernels alone
                kernels.add(k)
                size += kernel_bytes(k, limits, traits)
        out[d] = out[d] or size > limits.program_memory_bytes
    return out


@dataclass
class DispatchPlan:
    """Dispatch index per op, and per dispatch what it holds."""

    of_op: list[int]
    cuts: tuple[int, ...]
    sequence_words: list[int] = field(default_factory=list)
    program_bytes: list[int] = field(default_factory=list)
    static_weight_bytes: list[float] = field(default_factory=list)
    problems: list[list[str]] = field(default_factory=list)  # per dispatch: what does not fit
    # per op: whether it starts a launch (``launch_starts``); per dispatch: whether some launch's own
    # kernels exceed program memory (its cores reload inside the launch)
    starts_launch: list[bool] = field(default_factory=list)
    launch_overflows: list[bool] = field(default_factory=list)

    @property
    def fits(self) -> list[bool]:
        return [not x for x in self.problems]

    @property
    def count(self) -> int:
        return len(self.cuts) + 1


def cuts_text(cuts) -> str:
    """A cut set as results write it in text (a study's Dataset, plan.json, a table): the layers
    after which a dispatch ends, ``"1,3"`` (``""``: one dispatch). Runs keep the cut set itself
    (``attrs["cuts"]``, a list)."""
    return ",".join(str(int(c)) for c in cuts)


def cuts_of_text(text: str) -> tuple[int, ...]:
    """The cut set ``cuts_text`` wrote."""
    return tuple(int(c) for c in str(text).split(",") if c)


def dispatches_of_text(text: str) -> int:
    """Dispatches of the cut set ``cuts_text`` wrote: one more than its cuts."""
    return 1 + len(cuts_of_text(text))


def assign(layers: list[int], cuts: tuple[int, ...]) -> list[int]:
    """Dispatch of each op: the head's embedding runs in the first, final norm and LM head in the last."""
    n_layers = 1 + max(layers)
    ordered = sorted(cuts)
    out = []
    for i, layer in enumerate(layers):
        eff = layer if layer >= 0 else (-1 if i == 0 else n_layers)
        out.append(bisect_left(ordered, eff))  # the cuts below its layer
    return out


def plan(layers: list[int], footprints: list[OpFootprint], cuts: tuple[int, ...] | None,
         limits: DispatchLimits, capacity_bytes: int, traits: dict, strict: bool = True) -> DispatchPlan:
    """Check ``cuts`` (or, when None, find the greedy cut: fill each dispatch with whole layers while
    everything fits) against the limits; raise ConfigError naming what does not fit (``strict``),
    or record it per dispatch (``DispatchPlan.problems``: a cut search weighs infeasible ones)."""
    n_layers = 1 + max(layers)
    if cuts is None:
        cuts = _greedy(layers, footprints, limits, capacity_bytes, n_layers)
    of_op = assign(layers, cuts)
    p = DispatchPlan(of_op, tuple(sorted(cuts)))
    p.starts_launch = launch_starts([f.joins_previous for f in footprints], of_op)
    p.launch_overflows = _launch_overflows(footprints, p.starts_launch, of_op, p.count, limits, traits)
    by_dispatch = [[] for _ in range(p.count)]
    for f, x in zip(footprints, of_op):
        by_dispatch[x].append(f)
    for d, mine in enumerate(by_dispatch):
        words = sum(f.sequence_words for f in mine)
        kernels = set().union(*(f.kernels for f in mine)) if mine else set()
        static = sum(f.static_weight_bytes for f in mine)
        p.sequence_words.append(words)
        p.program_bytes.append(program_bytes(kernels, limits, traits))
        p.static_weight_bytes.append(static)
        problems = []
        if words > limits.instruction_buffer_words:
            problems.append(f"dispatch {d}: runtime sequence = {words} words; the instruction buffer holds "
                            f"{limits.instruction_buffer_words}: add cuts")
        if static > capacity_bytes:
            problems.append(f"dispatch {d}: static weights = {static:.0f} bytes; the array holds "
                            f"{capacity_bytes} bytes on chip: add cuts or stream weights")
        p.problems.append(problems)
    everything = [x for d in p.problems for x in d]
    if everything and strict:
        raise ConfigError(everything, "dispatch")
    return p


def _greedy(layers, footprints, limits, capacity_bytes, n_layers) -> tuple[int, ...]:
    per_layer = [[0, 0.0] for _ in range(n_layers)]  # the head's ops count with the first/last layer
    for i, (layer, f) in enumerate(zip(layers, footprints)):
        key = layer if layer >= 0 else (0 if i == 0 else n_layers - 1)
        per_layer[key][0] += f.sequence_words
        per_layer[key][1] += f.static_weight_bytes
    cuts, words, static = [], 0, 0.0
    for layer, (w, s) in enumerate(per_layer):
        if w > limits.instruction_buffer_words or s > capacity_bytes:
            what = "runtime sequence" if w > limits.instruction_buffer_words else "static weights"
            raise ConfigError([f"layer {layer}: its {what} alone does not fit one dispatch "
                               f"({w} words, {s:.0f} bytes of static weights)"], "dispatch")
        if layer and (words + w > limits.instruction_buffer_words or static + s > capacity_bytes):
            cuts.append(layer - 1)
            words, static = 0, 0.0
        words, static = words + w, static + s
    return tuple(cuts)


DISPATCH_COMMANDS = ("single", "chained")


def host_seconds_per_dispatch(arch, count: int, commands: str = "single") -> list[float]:
    """Host seconds of each of ``count`` dispatches. ``single``: each dispatch is its own command,
    submitted and waited for (``Arch.dispatch_overhead_s``, an empty kernel's xrt round trip);
    ``chained``: the pass's dispatches go as one run list (chained commands), the first paying the
    round trip and each further one ``Arch.chained_dispatch_s`` (``xrt-smi validate`` run-list
    latency: 27.7 us on Phoenix, 8.8 us on Strix, against 110 us single)."""
    if commands not in DISPATCH_COMMANDS:
        raise ConfigError([f"dispatch_commands = {commands!r}: one of {', '.join(DISPATCH_COMMANDS)}"], "dispatch")
    further = arch.dispatch_overhead_s if commands == "single" else arch.chained_dispatch_s
    return [arch.dispatch_overhead_s if d == 0 else further for d in range(count)]

