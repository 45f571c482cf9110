"""The ``aie`` dialect read into a fastsim Design.

``read`` walks one ``aie.device``: tiles, buffers and locks first, then object FIFOs, flows and
shim allocations, then DMA programs and cores, and last the runtime sequence, so that the order of
ops in the file does not matter (MLIR allows a symbol to be used before it is defined). Every op it
cannot read is a problem naming the op and its line; all are reported together in one MlirError.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..arch import NPU1, NPU2, Arch
from ..design import BD, MM2S, S2MM, Channel, Design, Lock, Tile
from ..errors import ConfigError
from .cascade import Cascades
from .core import CoreReader, _callee
from .kernels import DefaultCost, KernelLocks, checked_table, default_kernel_cost, matmul_shape
from .place import PlacementError, place
from .place_graph import has_logical_tiles, read_graph
from .syntax import Atom, Op, parse
from .tile_array import tile_array
from .verify import check
from .records import NO_TIMING, FifoObject, RunCall, Task, pad_layout
from .values import (Unreadable, attrs, call_memrefs, groups, int_list, int_of, memref_bytes, memref_of,
                     operand_problem, packet_id_of, split, word)


class MlirError(ConfigError):
    """An MLIR design fastsim cannot read. ``stops`` lists (op name, line) of every op outside the
    subset (docs/mlir.md), so a caller can say which op stops a design without reading the text."""

    def __init__(self, problems: list[str], source: str, stops: list[tuple[str, int]]):
        self.stops = list(stops)
        super().__init__(problems, f"MLIR design {source}")


ENDLESS_FLOW_BUNDLES = ("Trace",)
# task-completion tokens a tile's controller sends south to the host (``issue_token``): a few words
# that tell the host a task is done, which fastsim's Wait already models
TOKEN_FLOW_BUNDLES = ("TileControl", "CTRL", "Ctrl")


@dataclass
class DesignInfo:
    """What ``read`` returns: the Design, the cores whose loops never end (persistent kernels),
    and the ops it read without giving them time (trace setup, runtime parameters). A device
    whose runtime sequence is a run list has an empty Design and its configurations in
    ``run_list`` (``fastsim.mlir.runlist``)."""

    design: Design
    endless_cores: set = field(default_factory=set)
    untimed: list = field(default_factory=list)
    kernels: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # what the reader changed to run the design, and why
    run_list: list = field(default_factory=list)  # RunStep per aiex.configure of another device
    defaulted: list = field(default_factory=list)  # kernels.DefaultCost: costs fastsim guessed, with the rule
    runtime_args: dict = field(default_factory=dict)  # scalar runtime arguments given and used: name -> value
    scalar_args: set = field(default_factory=set)  # names of the runtime sequences' scalar arguments
    matmul_macs: dict = field(default_factory=dict)  # kernel -> MACs per call (m k n), for matmuls by name and shape


@dataclass
class RunStep:
    """One ``aiex.configure @device {aiex.run @seq(...) ...}`` of a run list (or its SSA form,
    ``%c = aiex.configure @device`` and the ``aiex.run %c -> @seq(...)`` ops after it): the
    configured device, read with its runtime sequences inlined once per ``aiex.run`` in
    ``sequences`` order; ``line``, the configure op's, names the step in errors."""

    device: str
    sequences: tuple
    info: DesignInfo
    line: int = 0


def device_arch(name: str) -> Arch:
    """``npu1*`` (and its earlier names ``npu``, ``ipu``) -> NPU1, ``npu2*`` -> NPU2; any other part
    (``xcve2802``, ``xcvc1902``, a test's ``NPUDEVICE`` placeholder) is an error unless the caller
    chose an arch: simulating a part fastsim does not model on an NPU's numbers would be a
    plausible answer for the wrong hardware."""
    if name.startswith("npu1") or name in ("npu", "ipu"):  # npu1's names before May 2024 (mlir-aie #1443, #1305)
        return NPU1
    if name.startswith("npu2"):
        return NPU2
    raise Unreadable(f"aie.device({name}): not a part fastsim models (npu1*, npu2*); choose an arch to "
                     "simulate it on (fastsim run design --arch npu1|npu2|FILE)")


def read(text: str, kernel_cycles: dict[str, int] | None = None, *, arch: Arch | None = None,
         source: str = "<mlir>", device: str | None = None,
         default_kernel_cycles: int | None = None, args: dict[str, int] | None = None) -> DesignInfo:
    """Read the MLIR text of one ``aie.device`` into a Design (see ``fastsim.mlir.read_design``):
    the file's only device, or the one whose symbol is ``device``. ``kernel_cycles`` is checked
    (``kernels.kernel_costs``), and an entry that names no kernel the file calls is an error;
    ``args`` gives the runtime sequence's scalar arguments (name without ``%`` -> value), and one
    that names none is an error."""
    top = parse(text, source)
    check(top, source, MlirError)
    devices = _devices(top)
    names = [_device_symbol(d) for d in devices]
    if device is not None:
        if device.lstrip("@") not in names:
            raise MlirError([f"{source}: no aie.device @{device.lstrip('@')} (devices: {names})"], source, [])
        dev = devices[names.index(device.lstrip("@"))]
    elif len(devices) != 1 and len(_run_list_devices(devices)) == 1:
        dev = _run_list_devices(devices)[0]
    elif len(devices) != 1:
        raise MlirError([f"{source}: {len(devices)} aie.device ops ({', '.join('@' + n for n in names)}): "
                         "choose one (device=...)"], source, [("aie.device", d.line) for d in devices[1:]])
    else:
        dev = devices[0]
    kernel_cycles, locks, costs_wrong = _checked_costs(kernel_cycles, top)
    args, args_wrong = checked_args(args)
    info = _with_problems(costs_wrong + args_wrong, source, lambda: _read_device(
        dev, kernel_cycles, arch, source, default_kernel_cycles, devices, locks=locks, args=args))
    unused = sorted(set(args) - set(info.runtime_args))
    if unused:
        raise MlirError([f"args.{name} = {args[name]}: names no scalar argument of the runtime sequence "
                         f"(it has {sorted(info.scalar_args) or 'none'})" for name in unused], source, [])
    return info


def read_all(text: str, kernel_cycles: dict[str, int] | None = None, *, arch: Arch | None = None,
             source: str = "<mlir>", default_kernel_cycles: int | None = None,
             args: dict[str, int] | None = None) -> list[DesignInfo]:
    """Every ``aie.device`` of the text, each read on its own (a file may hold several designs
    that the host runs one after the other)."""
    top = parse(text, source)
    check(top, source, MlirError)
    devices = _devices(top)
    kernel_cycles, locks, costs_wrong = _checked_costs(kernel_cycles, top)
    args, args_wrong = checked_args(args)
    return _with_problems(costs_wrong + args_wrong, source, lambda: [
        _read_device(d, kernel_cycles, arch, source, default_kernel_cycles, devices, locks=locks, args=args)
        for d in devices])


def checked_args(args) -> tuple[dict[str, int], list[str]]:
    """Scalar runtime arguments (name, with or without ``%``, -> a whole number) and the problems
    of the ones that are not whole numbers."""
    out, problems = {}, []
    for name, value in (args or {}).items():
        key = str(name).lstrip("%")
        if isinstance(value, str):
            try:
                value = int(value, 0)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"args.{key} = {value!r}: must be a whole number (the value the host passes)")
        else:
            out[key] = value
    return out, problems


def _checked_costs(kernel_cycles, top) -> tuple[dict, dict, list[str]]:
    """The kernel costs checked (``kernels.checked_table``: cycles, and the locks kernels take
    themselves) and the problems of the table: its bad values, and each entry naming a kernel no
    ``func.call`` of the file calls (a misspelled name would otherwise leave the kernel it meant at
    a guessed cost), with the kernels the file calls."""
    if not kernel_cycles:
        return {}, {}, []
    try:
        costs, locks = checked_table(kernel_cycles, "kernel costs")
    except ConfigError as e:
        return {}, {}, list(e.problems)
    called = sorted({_callee(op) for op in _walk_all(top) if op.name == "func.call"})
    calls = f"the design calls {', '.join(called)}" if called else "the design calls no kernel"
    return costs, locks, [f"kernels.{name} = {cycles}: names no kernel of the design ({calls})"
                          for name, cycles in costs.items() if name not in called]


def _with_problems(problems: list[str], source: str, read_fn):
    """``read_fn()``, with ``problems`` (of the kernel costs) reported before the design's own in
    one MlirError."""
    try:
        out = read_fn()
    except MlirError as e:
        if problems:
            raise MlirError(problems + e.problems, source, e.stops) from None
        raise
    if problems:
        raise MlirError(problems, source, [])
    return out


def _walk_all(ops):
    """Every op of ``ops`` and of their regions, depth first."""
    for op in ops:
        yield op
        for region in op.regions:
            yield from _walk_all(region.ops)


def _run_list_devices(devices: list[Op]) -> list[Op]:
    """The devices whose runtime sequence configures another device and runs it (a run list)."""
    def configures_other(op: Op, own: str) -> bool:
        return any(inner.name == "aiex.configure" and _symbol(inner) not in (None, own)
                   or configures_other(inner, own) for region in op.regions for inner in region.ops)
    return [d for d in devices if configures_other(d, _device_symbol(d))]


def _symbol(op: Op) -> str | None:
    return next((i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), None)


def _empty(devices: list[Op]) -> frozenset:
    """Symbols of the devices that hold no ops (a blank configuration ``load_pdi`` resets to)."""
    return frozenset(_device_symbol(d) for d in devices if not (d.regions and d.regions[0].ops))


def _devices(top) -> list[Op]:
    return [op for op in _walk_top(top) if op.name == "aie.device"]


def _device_symbol(dev: Op) -> str:
    return next((i.text.lstrip("@") for i in dev.items if isinstance(i, Atom) and i.kind == "SYMBOL"), "")


def _read_device(dev: Op, kernel_cycles, arch, source, default_kernel_cycles, devices: list[Op],
                 sequences: list[str] | None = None, locks: dict | None = None, args: dict | None = None) -> DesignInfo:
    """One device. ``sequences``: the runtime sequences to inline, in order (a run list's
    ``aiex.run``s); None reads every sequence once. ``locks``: kernel name -> KernelLocks."""
    name = word(groups(dev, "(")[0].items) if groups(dev, "(") else ""
    try:
        arch_here = device_arch(name) if arch is None else arch
    except Unreadable as e:
        raise MlirError([f"{source}:{dev.line}: {e}"], source, [("aie.device", dev.line)]) from None
    symbol = _device_symbol(dev)
    r = Reader(Design(arch_here, _design_name(source) + (f"@{symbol}" if symbol else "")), kernel_cycles or {},
               source)
    r.default_kernel_cycles = default_kernel_cycles
    r.kernel_locks = locks or {}
    r.runtime_args = args or {}
    r.device_symbol = symbol
    r.device_name = name
    r.empty_devices = _empty(devices)
    r.run_sequences = sequences
    r.read_device(dev)
    r.design.output_on_chip = "fastsim.output_on_chip" in attrs(dev)
    steps = []
    by_symbol = {_device_symbol(d): d for d in devices}
    for call in r.run_calls:
        target = by_symbol.get(call.device)
        if target is None or sequences is not None or _run_list_devices([target]):
            r.unsupported(call.op, f"@{call.device} is no device of this file" if target is None
                          else "a run list inside a run list")
            continue
        try:
            step = _read_device(target, kernel_cycles, arch, source, default_kernel_cycles, devices,
                                call.sequences, locks, args)
        except MlirError as e:
            r.problems += e.problems
            r.stops += e.stops
            continue
        steps.append(RunStep(call.device, tuple(call.sequences), step, call.op.line))
    if steps and (r.design.host or r.design.cores):
        r.problem(r.run_calls[0].op, "a run list beside the device's own cores or host steps")
    if r.problems:
        raise MlirError(r.problems, source, r.stops)
    used = {**r.args_used, **{k: v for step in steps for k, v in step.info.runtime_args.items()}}
    scalars = r.scalar_args | {k for step in steps for k in step.info.scalar_args}
    return DesignInfo(r.design, r.endless, r.untimed, r.kernels_used, r.notes, steps, r.defaulted, used, scalars,
                      {k: v for k, v in r.matmul_macs.items() if v})


def _design_name(source: str) -> str:
    parts = source.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else source


def _walk_top(ops):
    for op in ops:
        if op.name == "module":
            yield from _walk_top(op.regions[0].ops if op.regions else ())
        else:
            yield op


class Reader:
    """State while reading one device: SSA values, symbols, allocated channels and problems."""

    def __init__(self, design: Design, kernel_cycles: dict, source: str):
        self.design, self.kernel_costs, self.source = design, kernel_cycles, source
        self.env: dict = {}       # SSA name -> Tile, Buffer, Lock, int, Task
        self.symbols: dict = {}   # symbol -> Buffer, Lock, Channel (shim allocation), fifo
        self.problems: list[str] = []
        self.stops: list[tuple[str, int]] = []
        self.routes: dict[Channel, list[Channel]] = {}
        self.endless: set = set()
        self.untimed: list[tuple[str, int]] = []
        self.notes: list[str] = []
        self.kernels_used: dict[str, int] = {}
        self.defaulted: list[DefaultCost] = []  # costs fastsim guessed for kernels the costs do not name
        self.next_channel: dict[tuple[Tile, str], int] = {}
        self.fifos = None  # fastsim.mlir.fifo.Fifos, made when the device has object FIFOs
        self.element_bits: dict[int, int] = {}  # buffer id -> bits of its memref's element type
        self.default_kernel_cycles: int | None = None  # for kernels the costs do not name
        self.declared_costs: dict[str, int] = {}  # fastsim.cycles of func.func declarations
        self.kernel_locks: dict[str, KernelLocks] = {}  # locks kernels acquire and release themselves
        self.runtime_args: dict[str, int] = {}  # values given for the runtime sequence's scalar arguments
        self.args_used: dict[str, int] = {}
        self.scalar_args: set[str] = set()
        self.device_symbol = ""
        self.empty_devices: set[str] = set()  # symbols of the file's devices that hold no ops
        self.run_sequences: list[str] | None = None  # sequences to inline in order (a run list's aiex.run)
        self.run_calls: list[RunCall] = []  # aiex.configure of other devices in the runtime sequence
        self.cascades = Cascades(self)  # aie.cascade_flow between cores
        self.trace_sinks: set[Channel] = set()  # S2MM channels that flows from Trace ports reach
        self.device_name = ""  # the aie.device's target (npu1, npu2_4col, ...)
        self.placed: dict = {}  # logical tile value -> (col, row) (fastsim.mlir.place)
        self.senders: dict[Channel, Op] = {}  # MM2S channel -> the first op that gives it work
        self.packet_sources: dict[Channel, Op] = {}  # MM2S channel -> the aie.packet_flow it sends on
        # MM2S channel -> {packet flow id: (its destinations, the op)}: several ids fan out
        self.packet_ids: dict[Channel, dict[int, tuple[list[Channel], Op]]] = {}
        self.lock_ids: dict[tuple[Tile, int], Lock] = {}  # (tile, aie.lock id) -> lock (raw BDs name locks by id)
        self.buffer_addresses: dict[int, int] = {}  # buffer id -> its aie.buffer ``address`` (bytes)
        self.globals: dict[str, Op] = {}  # memref.global symbol -> op (the words a blockwrite writes)
        self.matmul_macs: dict[str, int | None] = {}  # kernel -> MACs per call; None when calls differ in shape

    # -- problems ---------------------------------------------------------------------------------
    def problem(self, op: Op, text: str) -> None:
        self.problems.append(f"{self.source}:{op.line}: {op.name}: {text}")

    def unsupported(self, op: Op, why: str = "") -> None:
        self.stops.append((op.name, op.line))
        self.problems.append(f"{self.source}:{op.line}: op '{op.name}' is outside the subset fastsim reads"
                             + (f" ({why})" if why else "") + " (docs/mlir.md)")

    # -- values -----------------------------------------------------------------------------------
    def value(self, items, kind=None):
        """The object an SSA value among ``items`` names (its first VALUE atom)."""
        for it in items:
            if isinstance(it, Atom) and it.kind == "VALUE":
                v = self.env.get(it.text)
                if v is None or (kind is not None and not isinstance(v, kind)):
                    raise Unreadable(f"{it.text} is not a known {kind.__name__ if kind else 'value'}")
                return v
        raise Unreadable("expected an SSA value")

    def constant(self, op: Op) -> None:
        try:
            self.env[op.results[0]] = int_of(op.items, None)
        except (Unreadable, IndexError):
            pass  # a float or vector constant: no integer value, no time

    def kernel_cycles(self, op: Op, name: str) -> int:
        """A call's cycles: the costs file's, else the call's own ``fastsim.cycles``, else its
        declaration's (both written by ``fastsim export``), else fastsim's cost model for a kernel
        it recognises by name and memref shapes (recorded in ``defaulted``), else the reader's
        default (the corpus script's), else an error naming the kernel."""
        cycles = self.kernel_costs.get(name)
        if cycles is None:
            own = attrs(op).get("fastsim.cycles")
            cycles = int_of(own) if own else self.declared_costs.get(name)
        why = ""
        if cycles is None:
            guess, why = default_kernel_cost(name, call_memrefs(op), self.design.arch, self._operand_layouts(op))
            if guess is not None:
                cycles = guess.cycles
                if guess not in self.defaulted:
                    self.defaulted.append(guess)
        if cycles is None:
            cycles = self.default_kernel_cycles
        if cycles is None:
            raise Unreadable(f"kernel '{name}' has no cost ({why}): give its cycles per call in the kernel costs "
                             f"TOML ([kernels] {name} = CYCLES, fastsim run design --kernels FILE)")
        self.kernels_used[name] = cycles
        shape = matmul_shape(name, call_memrefs(op))
        macs = shape[0] * shape[1] * shape[2] if shape else None
        self.matmul_macs[name] = macs if self.matmul_macs.get(name, macs) == macs else None  # one shape per kernel
        return cycles

    def _operand_layouts(self, op: Op) -> list[tuple]:
        """Per operand of a call, the layout its object reached local memory in: the
        ``dimensionsToStream`` of the FIFO it was acquired from (() when none or not a FIFO's)."""
        operands = groups(op, "(")
        out = []
        for entry in split(operands[0].items) if operands else []:
            value = self.env.get(entry[0].text) if entry and isinstance(entry[0], Atom) else None
            fifo = self.fifos.fifos.get(value.fifo) if isinstance(value, FifoObject) and self.fifos else None
            out.append(fifo.dims_to_stream if fifo is not None else ())
        return out

    # -- the device ---------------------------------------------------------------------------------
    def read_device(self, dev: Op) -> None:
        from .fifo import Fifos

        ops = dev.regions[0].ops if dev.regions else ()
        if not self._place_logical_tiles(dev):
            return
        later, dmas, cores, sequences = [], [], [], []
        for op in ops:  # pass 1: tiles, buffers, locks (also those inside DMA regions)
            self._guard(self._declare, op, later, dmas, cores, sequences)
        self.fifos = Fifos(self)
        for op in later:  # pass 2: FIFOs, flows, allocations
            self._guard(self._connect, op)
        self._guard_all(self.fifos.expand)
        for op in dmas:
            self._guard(self._dma_program, op)
        for op in cores:
            self._guard(self._core, op)
        self._emit_routes()
        self._sequences(sequences)
        self._unrouted()

    def gives_work(self, ch: Channel, op: Op) -> None:
        """Record the op that gives an MM2S channel work (a DMA program, a host task)."""
        if ch.direction == MM2S:
            self.senders.setdefault(ch, op)

    def _unrouted(self) -> None:
        """Refuse, naming the op and its line, each MM2S channel given work that no flow leaves:
        its data could go nowhere (validation would refuse the channel without the op)."""
        for ch, op in self.senders.items():
            if ch not in self.routes:
                self.unsupported(op, f"{ch} is given work, but no flow leaves it (an unrouted MM2S channel: "
                                     "its data could go nowhere)")

    def _place_logical_tiles(self, dev: Op) -> bool:
        """Place the device's ``aie.logical_tile``s as ``aie-opt --aie-place-tiles`` does
        (``fastsim.mlir.place``); False, with the problem recorded, when they cannot be."""
        if not has_logical_tiles(dev):
            return True
        try:
            graph = read_graph(dev)
        except Unreadable as e:
            op = next(o for o in dev.regions[0].ops if o.name == "aie.logical_tile")
            self.problem(op, str(e))
            return False
        array = tile_array(self.device_name)
        if array is None:
            self.unsupported(graph.logical[0].op, f"placing logical tiles on device {self.device_name!r}: "
                                                  "only the npu1* and npu2* tile arrays are known")
            return False
        try:
            self.placed = place(graph, array)
        except PlacementError as e:
            op = next((t.op for t in graph.logical if t.value == e.value), dev)
            self.problem(op, str(e))
            return False
        self.notes.append("logical tiles placed as aie-opt --aie-place-tiles places them: " + ", ".join(
            f"{t.value} -> ({self.placed[t.value][0]}, {self.placed[t.value][1]})" for t in graph.logical))
        return True

    def _guard(self, fn, op: Op, *args) -> None:
        try:
            fn(op, *args)
        except Unreadable as e:
            self.problem(op, str(e))
        except (IndexError, KeyError, ValueError) as e:
            self.problem(op, operand_problem(e))

    def _guard_all(self, fn) -> None:
        try:
            fn()
        except Unreadable as e:
            self.problems.append(f"{self.source}: {e}")

    def _declare(self, op: Op, later, dmas, cores, sequences) -> None:
        name = op.name
        if name == "aie.tile":
            col, row = int_list(groups(op, "(")[0])
            self.env[op.results[0]] = Tile(col, row)
        elif name == "aie.logical_tile":
            self.env[op.results[0]] = Tile(*self.placed[op.results[0]])
        elif name == "aie.buffer":
            self._buffer(op)
        elif name == "aie.lock":
            self._lock(op)
        elif name == "arith.constant":
            self.constant(op)
        elif name in ("aie.mem", "aie.memtile_dma"):
            for inner in op.regions[0].blocks[0].ops if op.regions else ():
                if inner.name in ("aie.buffer", "aie.lock"):
                    self._declare(inner, later, dmas, cores, sequences)
            dmas.append(op)
        elif name == "aie.core":
            cores.append(op)
        elif name in ("aie.runtime_sequence", "aiex.runtime_sequence"):
            sequences.append(op)
        elif name == "func.func":
            sym = next((i.text for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), "")
            if op.regions and sym == "@sequence":
                sequences.append(op)
            elif op.regions:
                self.unsupported(op, "a function with a body other than @sequence")
            elif "fastsim.cycles" in attrs(op):
                self.declared_costs[sym.lstrip("@").strip('"')] = int_of(attrs(op)["fastsim.cycles"])
        elif name in ("aie.objectfifo", "aie.objectfifo.link", "aie.flow", "aie.packet_flow",
                      "aie.shim_dma_allocation", "aie.cascade_flow"):
            later.append(op)
        elif name in NO_TIMING:
            if name == "memref.global":
                sym = next((i.text for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), "")
                self.globals[sym.lstrip("@")] = op
            self.untimed.append((name, op.line))
        else:
            self.unsupported(op)

    def _buffer(self, op: Op) -> None:
        tile = self.value(groups(op, "(")[0].items, Tile)
        shape, bits = memref_of(op.items)
        a = attrs(op)
        name = word(a["sym_name"]) if "sym_name" in a else (op.results[0].lstrip("%") if op.results else "")
        b = self.design.buffer(tile, memref_bytes(shape, bits), name)
        if op.results:
            self.env[op.results[0]] = b
        self.symbols[name] = b
        self.element_bits[b.id] = bits
        if "address" in a:
            self.buffer_addresses[b.id] = int_of(a["address"])

    def _lock(self, op: Op) -> None:
        args = split(groups(op, "(")[0].items)
        tile = self.value(args[0], Tile)
        a = attrs(op)
        init = int_of(a["init"]) if "init" in a else 0
        name = word(a["sym_name"]) if "sym_name" in a else (op.results[0].lstrip("%") if op.results else "")
        lk = self.design.lock(tile, init, name)
        if len(args) > 1 and len(args[1]) == 1 and isinstance(args[1][0], Atom) and args[1][0].kind == "INT":
            self.lock_ids[(tile, int_of(args[1]))] = lk
        if op.results:
            self.env[op.results[0]] = lk
        self.symbols[name] = lk

    def bits_of(self, buffer) -> int:
        return self.element_bits.get(buffer.id, 32)

    # -- connections ----------------------------------------------------------------------------------
    def _connect(self, op: Op) -> None:
        if op.name == "aie.flow":
            a = split(groups(op, "(")[0].items)
            self._flow(op, a[0], a[1], a[2], a[3])
        elif op.name == "aie.packet_flow":
            self._packet_flow(op)
        elif op.name == "aie.shim_dma_allocation":
            self._allocation(op)
        elif op.name == "aie.cascade_flow":
            try:
                self.cascades.declare(op)
            except Unreadable as e:  # a cascade fastsim cannot model: named as a stop
                self.unsupported(op, str(e))
        else:
            self.fifos.declare(op)

    def _port(self, tile_items, port_items) -> tuple[Tile, str, int]:
        tile = self.value(tile_items, Tile)
        bundle = word(port_items)
        index = int_of([i for i in port_items if isinstance(i, Atom) and i.kind == "INT"][-1:])
        return tile, bundle, index

    def _flow(self, op: Op, src_t, src_p, dst_t, dst_p) -> None:
        (st, sb, si), (dt, db, di) = self._port(src_t, src_p), self._port(dst_t, dst_p)
        if sb in ENDLESS_FLOW_BUNDLES or db in ENDLESS_FLOW_BUNDLES:
            if sb in ENDLESS_FLOW_BUNDLES and db == "DMA":
                self.trace_sinks.add(Channel(dt, S2MM, di))
            self.untimed.append((op.name, op.line))
            return
        if sb != "DMA" or db != "DMA":
            self.unsupported(op, f"a {sb} -> {db} stream: only DMA -> DMA streams are modelled")
            return
        self.connect(Channel(st, MM2S, si), Channel(dt, S2MM, di), op)

    def is_trace_sink(self, ch: Channel) -> bool:
        """Only flows from Trace ports reach this S2MM channel: what it writes is trace."""
        return ch in self.trace_sinks and not any(ch in dsts for dsts in self.routes.values())

    def connect(self, src: Channel, dst: Channel, op: Op | None = None) -> None:
        dsts = self.routes.setdefault(src, [])
        if dst not in dsts:
            dsts.append(dst)

    def _packet_flow(self, op: Op) -> None:
        """A packet flow from DMA to DMA: each source a route to the destination. Flows of several
        sources into one S2MM (several ``packet_source``s, or several flows) share it packet by
        packet; flows of several ids from one source to different destinations are fan-out by
        packet id: each BD's packet id picks its destination (``_emit_routes``)."""
        inner = op.regions[0].ops if op.regions else ()
        srcs = [i for i in inner if i.name == "aie.packet_source"]
        dsts = [i for i in inner if i.name == "aie.packet_dest"]
        if not srcs or not dsts:
            raise Unreadable("expected at least one aie.packet_source and one aie.packet_dest")
        ports = [self._port(*split(groups(x, "<")[0].items)[:2]) for x in srcs]
        ends = {self._port(*split(groups(d, "<")[0].items)[:2])[1] for d in dsts}
        if len(ports) == 1 and self._untimed_packet_flow(op, ports[0][1], ends, dsts):
            return
        for st, sb, si in ports:
            if not self._packet_route(op, Channel(st, MM2S, si), sb, dsts):
                return

    def _untimed_packet_flow(self, op: Op, sb: str, ends: set, dsts: list) -> bool:
        """Trace packets (recorded as untimed, their DMA ends as trace sinks) and task-completion
        tokens to the host take no time: True when ``op`` is one of those."""
        if not (sb in ENDLESS_FLOW_BUNDLES or sb in TOKEN_FLOW_BUNDLES and ends == {"South"}):
            return False
        if sb in ENDLESS_FLOW_BUNDLES:
            for d in dsts:
                dt, db, di = self._port(*split(groups(d, "<")[0].items)[:2])
                if db == "DMA":
                    self.trace_sinks.add(Channel(dt, S2MM, di))
        self.untimed.append((op.name, op.line))
        return True

    def _packet_route(self, op: Op, src: Channel, sb: str, dsts: list) -> bool:
        """Connect one packet source to the flow's destinations; False (the op refused) when it
        cannot be modelled."""
        for d in dsts:
            dt, db, di = self._port(*split(groups(d, "<")[0].items)[:2])
            if sb != "DMA" or db != "DMA":
                self.unsupported(op, f"a {sb} -> {db} packet stream: only DMA -> DMA streams are modelled")
                return False
            dst = Channel(dt, S2MM, di)
            flow_id = int_of(groups(op, "(")[0].items) if groups(op, "(") else None
            to = self.packet_ids.setdefault(src, {}).setdefault(flow_id, ([], op))[0]
            if to and dst not in to:
                self.unsupported(op, f"packets of id {flow_id} from {src} to several channels (multicast "
                                     "of a packet flow) are not modelled")
                return False
            if dst not in to:
                to.append(dst)
            self.packet_sources.setdefault(src, op)
            self.connect(src, dst, op)
        return True

    def _emit_routes(self) -> None:
        """Every connection becomes a Route. An S2MM that several sources reach is shared packet
        by packet when all of them are packet flows (each route a packet route); a circuit flow
        into a channel a packet flow also reaches is refused at the packet flow."""
        feeders: dict[Channel, list[Channel]] = {}
        for src, dsts in self.routes.items():
            for d in dsts:
                feeders.setdefault(d, []).append(src)
        for src, dsts in self.routes.items():
            ids = self.packet_ids.get(src, {})
            if len(ids) > 1:  # fan-out by packet id: a packet route per id
                shared = [d for d in dsts if len(feeders[d]) > 1]
                circuit = [d for d in dsts if not any(d in to for to, _ in ids.values())]
                if circuit:
                    self.unsupported(next(iter(ids.values()))[1], f"packets from {src} fan out by packet id while "
                                     f"a circuit flow also leaves it (to {circuit[0]}): not modelled")
                    continue
                if shared:
                    self.unsupported(next(iter(ids.values()))[1], f"packets from {src} fan out by packet id to "
                                     f"{shared[0]}, which another source also feeds: not modelled")
                    continue
                for pid, (to, _) in ids.items():
                    self.design.route(src, *to, packet_id=pid)
                continue
            shared = [s for d in dsts if len(feeders[d]) > 1 for s in feeders[d]]
            packet = bool(shared) and all(s in self.packet_sources for s in shared)
            if shared and not packet and src in self.packet_sources:
                self.unsupported(self.packet_sources[src], "a packet flow into a channel a circuit flow "
                                                           "also feeds")
                continue
            self.design.route(src, *dsts, packet=packet)

    def _allocation(self, op: Op) -> None:
        sym = next(i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL")
        args = split(groups(op, "(")[0].items)
        plio = attrs(op).get("plio")
        if plio is not None and (not plio or int_of(plio)):
            raise Unreadable("plio = true: a PLIO shim port, not a shim DMA (fastsim models no PL)")
        if word(args[0]) in ("MM2S", "S2MM"):  # (dir, channel, column): the form before the tile operand
            tile, args = Tile(int_of(args[2]), 0), [None, *args]
        else:  # (%shim_tile, dir, channel)
            tile = self.value(args[0], Tile)
        direction = MM2S if word(args[1]) == "MM2S" else S2MM
        ch = Channel(tile, direction, int_of(args[2]))
        self.symbols.setdefault(sym, ch)

    def channel_for(self, tile: Tile, direction: str) -> Channel:
        """The next free channel of a direction on a tile (how mlir-aie assigns FIFO channels)."""
        key = (tile, direction)
        index = self.next_channel.get(key, 0)
        self.next_channel[key] = index + 1
        return Channel(tile, direction, index)

    # -- DMA programs ---------------------------------------------------------------------------------
    def _dma_program(self, op: Op) -> None:
        """``aie.mem``/``aie.memtile_dma``: ``aie.dma_start(dir, ch, ^first, ^next)`` over BD blocks,
        or ``aie.dma(dir, ch) [{bd}, {bd}]`` (a cyclic ring unless ``loop = false``)."""
        tile = self.value(groups(op, "(")[0].items, Tile)
        blocks = {b.label: b for b in op.regions[0].blocks}
        for block in op.regions[0].blocks:
            for inner in block.ops:
                if inner.name == "aie.dma_start":
                    self._dma_start(inner, tile, blocks)
                elif inner.name == "aie.dma":
                    self._dma_op(inner, tile)
                elif inner.name in ("aie.buffer", "aie.lock", "aie.end", "arith.constant",
                                    "aie.use_lock", "aie.dma_bd", "aie.next_bd"):
                    if inner.name == "arith.constant":
                        self.constant(inner)
                else:
                    self.unsupported(inner)

    def _dma_start(self, op: Op, tile: Tile, blocks: dict) -> None:
        """``aie.dma_start(dir, ch, ^first, ^next[, repeat_count = n])``: the chain from ``^first``,
        n + 1 times over when it ends. A second start on the same channel queues its chain after
        the first (the channel's task queue), as the hardware runs them."""
        a = split(groups(op, "(")[0].items)
        ch = Channel(tile, MM2S if word(a[0]) == "MM2S" else S2MM, int_of(a[1], self.env))
        named = {word(e[:1]): e[2:] for e in a[4:] if len(e) >= 3}
        runs = int_of(named["repeat_count"], self.env) + 1 if "repeat_count" in named else 1
        chains = [self.bd_chain(blocks, word(a[2]), ch, op) for _ in range(runs)]
        if chains[0] is None:
            return
        if self.chain_end(chains[0]) is None:  # cyclic: it never ends, repeats change nothing
            chains = chains[:1]
        if ch in self.design.static_chains:
            chains.insert(0, self.design.static_chains[ch])
        for before, after in zip(chains, chains[1:]):
            end = self.chain_end(before)
            if end is None:
                raise Unreadable(f"a chain queued on {ch} after a chain that never ends")
            end.next = after
        self.design.start_chain(ch, chains[0])
        self.gives_work(ch, op)

    @staticmethod
    def chain_end(first: BD) -> BD | None:
        """The last BD of a chain, None when it is cyclic."""
        seen, cur = set(), first
        while cur.next is not None:
            if cur.id in seen:
                return None
            seen.add(cur.id)
            cur = cur.next
        return cur

    def _dma_op(self, op: Op, tile: Tile) -> None:
        a = split(groups(op, "(")[0].items)
        ch = Channel(tile, MM2S if word(a[0]) == "MM2S" else S2MM, int_of(a[1], self.env))
        regions = [i for g in groups(op, "[") for i in g.items if hasattr(i, "blocks")]
        at = attrs(op)
        bds = []
        repeat = int_of(at["repeat_count"]) + 1 if "repeat_count" in at else 1
        for _ in range(repeat):
            for region in regions:
                bds.append(self.bd_block(region.ops, ch, op))
        if not bds:
            return
        cyclic = not ("loop" in at and int_of(at["loop"]) == 0)
        self.design.start_chain(ch, self.design.chain(*bds, cyclic=cyclic))
        self.gives_work(ch, op)

    def bd_chain(self, blocks: dict, label: str, ch: Channel, op: Op) -> BD | None:
        """BDs from block ``label`` along ``aie.next_bd`` until a block without a BD (``aie.end``)
        or back to a BD already made (a cyclic chain)."""
        made: dict[str, BD] = {}
        order: list[tuple[str, BD, str | None]] = []
        cur = label
        while cur is not None and cur not in made and cur in blocks:
            ops = blocks[cur].ops
            if not any(o.name == "aie.dma_bd" for o in ops):
                break
            bd = self.bd_block(ops, ch, op)
            made[cur] = bd
            nxt = next((o for o in ops if o.name == "aie.next_bd"), None)
            target = None
            if nxt is not None:
                target = next(i.text for i in nxt.items if isinstance(i, Atom) and i.kind == "BLOCK")
            order.append((cur, bd, target))
            cur = target
        for _, bd, target in order:
            if target in made:
                bd.next = made[target]
        for (_, bd, target), (_, nxt_bd, _) in zip(order, order[1:]):
            bd.next = nxt_bd
        return order[0][1] if order else None

    def bd_block(self, ops, ch: Channel, where: Op) -> BD:
        """One BD from a block's ``use_lock`` (acquire before, release after) and ``dma_bd``."""
        acquire = release = None
        bd_op = None
        for o in ops:
            if o.name == "aie.use_lock":
                lock, action, value = self.use_lock(o)
                if action.startswith("Acquire"):
                    acquire = (lock, value)
                else:
                    release = (lock, value)
            elif o.name == "aie.dma_bd":
                bd_op = o
            elif o.name == "arith.constant":
                self.constant(o)
            elif o.name not in ("aie.next_bd", "aie.end"):
                self.unsupported(o)
        if bd_op is None:
            raise Unreadable("a DMA block without aie.dma_bd")
        return self.dma_bd(bd_op, ch, acquire, release)

    def use_lock(self, op: Op):
        """(lock, action, value) of ``aie.use_lock(%lock, AcquireGreaterEqual|Acquire|Release, v)``.
        ``Acquire`` (acquire-equal) is read as AcquireGreaterEqual: fastsim's locks are semaphores."""
        a = split(groups(op, "(")[0].items)
        lock = self.value(a[0], Lock)
        value = int_of(a[2], self.env) if len(a) > 2 else 1
        return lock, word(a[1]), value

    def dma_bd(self, op: Op, ch: Channel, acquire, release) -> BD:
        """``aie.dma_bd(%buf : memref<..> offset = O len = L sizes = [..] strides = [..])``: offset,
        length, sizes and strides in elements (outermost first), as mlir-aie writes them."""
        inner = groups(op, "(")[0].items
        buf = self.value(inner)
        texts = [i.text if isinstance(i, Atom) else None for i in inner]
        _, bits = memref_of(inner)

        def after(key):
            if key not in texts:
                return None
            i = texts.index(key) + 1
            i += 1 if texts[i] == "=" else 0
            return inner[i:]

        pads = pad_layout(after("pad")[0]) if "pad" in texts else ()
        offset = int_of(after("offset"), self.env) if "offset" in texts else 0
        at = attrs(op)
        length_items = after("len") if "len" in texts else at.get("len")
        length = int_of(length_items, self.env) if length_items else None
        positional = [e for e in split(inner) if e][1:]  # the older form: (%buf : type, offset, len)
        if positional and "offset" not in texts and length_items is None and len(positional) >= 2:
            offset, length = int_of(positional[0], self.env), int_of(positional[1], self.env)
        sizes = int_list(after("sizes")[0], self.env) if "sizes" in texts else []
        strides = int_list(after("strides")[0], self.env) if "strides" in texts else []
        if length is None:
            length = buf.size_bytes * 8 // bits - offset
        if pads and not sizes:
            sizes, strides = [length], [1]
        bd = self.make_bd(ch, buf, bits, offset, length, sizes, strides, acquire, release, pads=pads,
                          packet_id=packet_id_of(at["packet"]) if "packet" in at else None)
        if "fastsim.iterations" in at:
            bd.iterations *= int_of(at["fastsim.iterations"])
        if "fastsim.compression_ratio" in at:
            bd.compression_ratio = float(str(at["fastsim.compression_ratio"][0]))
        return bd

    def make_bd(self, ch: Channel, buf, bits: int, offset: int, length: int, sizes, strides,
                acquire=None, release=None, name: str = "", pads=(), packet_id: int | None = None) -> BD:
        if pads:
            sizes, strides = padded(sizes, strides, pads, bits)
        dims, iterations, length_bytes = access_pattern(sizes, strides, bits, length)
        return self.design.bd(ch, buf, length_bytes, offset_bytes=offset * bits // 8, dims=dims,
                              acquire=acquire, release=release, iterations=iterations, name=name or buf.name,
                              packet_id=packet_id)

    # -- cores ----------------------------------------------------------------------------------------
    def _core(self, op: Op) -> None:
        tile = self.value(groups(op, "(")[0].items, Tile)
        cr = CoreReader(self, tile)
        program = cr.blocks(op.regions[0].blocks) if op.regions else []
        if cr.endless:
            self.endless.add(tile)
        if program:
            self.design.core_program(tile, *program)

    def fifo_locks(self, op: Op, fifo: str, port: str, tile: Tile):
        return self.fifos.core_locks(fifo, port, tile)

    # -- runtime sequence -------------------------------------------------------------------------------
    def _sequences(self, ops: list[Op]) -> None:
        """Every runtime sequence once, or, for a configuration of a run list, the sequences its
        ``aiex.run``s name, each read once and its host steps inlined once per run."""
        if self.run_sequences is None:
            for op in ops:
                self._guard(self._sequence, op)
            return
        named = {sequence_name(op): op for op in ops}
        steps: dict[str, list] = {}
        for name in dict.fromkeys(self.run_sequences):
            if name not in named:
                self.problems.append(f"{self.source}: aiex.run @{name}: @{self.device_symbol} has no runtime "
                                     f"sequence @{name} (it has {sorted(named)})")
                continue
            start = len(self.design.host)
            self._guard(self._sequence, named[name])
            steps[name] = self.design.host[start:]
        self.design.host = [step for name in self.run_sequences for step in steps.get(name, [])]

    def _sequence(self, op: Op) -> None:
        from .sequence import SequenceReader

        SequenceReader(self).read(op)


def sequence_name(op: Op) -> str:
    """A runtime sequence's symbol; ``sequence`` when it has none (the name ``aiex.run`` and XRT
    use for it)."""
    sym = next((i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), None)
    return sym or "sequence"


def padded(sizes, strides, pads, bits: int) -> tuple[list, list]:
    """Sizes of the stream a zero-padding MM2S sends: each dimension grows by its pads (matched to
    the dimensions from the innermost, as mlir-aie matches them). fastsim's DMA does not model
    padding: the BD moves the padded byte count contiguously (the zeros cost stream time as data
    would; the memory reads they save are not modelled)."""
    sizes = list(sizes)
    if len(pads) > len(sizes) or len(sizes) == 4 and len(pads) == 4:
        raise Unreadable(f"{len(pads)} pads for {len(sizes)} dimensions")
    first = len(sizes) - len(pads)
    grown = sizes[:first] + [s + b + a for s, (b, a) in zip(sizes[first:], pads)]
    if len(grown) == 4:  # the outermost of four is the iteration count, never padded
        return [grown[0], 1, 1, grown[1] * grown[2] * grown[3]], [0, 0, 0, 1]
    total = 1
    for s in grown:
        total *= s
    return [total], [1]


def access_pattern(sizes, strides, bits: int, length: int):
    """(dims in words innermost first, iterations, bytes per iteration) of an n-d access pattern
    given outermost first in elements. A pattern that reads contiguously needs no dims; a fourth
    (outermost) dimension becomes the BD's iteration count. Sizes that do not fill whole 32-bit
    words are moved as their byte count without dims."""
    sizes, strides = list(sizes), list(strides)
    if not sizes:
        return (), 1, length * bits // 8
    while len(sizes) > 1 and sizes[0] == 1:
        sizes, strides = sizes[1:], strides[1:]
    iterations = 1
    if len(sizes) == 4:
        iterations, sizes, strides = sizes[0], sizes[1:], strides[1:]
    total = 1
    for s in sizes:
        total *= s
    length_bytes = total * bits // 8
    contiguous, expect = True, 1
    for s, t in reversed(list(zip(sizes, strides))):
        if s > 1 and t != expect:
            contiguous = False
        expect *= s
    word_inner = strides[-1] == 1 or bits == 32  # a strided innermost dimension only over whole words
    if contiguous or not word_inner or (sizes[-1] * bits) % 32 or any((t * bits) % 32 for t in strides[:-1]):
        return (), iterations, length_bytes
    inner = (sizes[-1] * bits // 32, 1) if strides[-1] == 1 else (sizes[-1], strides[-1])
    dims = [inner] + [(s, t * bits // 32) for s, t in zip(sizes[-2::-1], strides[-2::-1])]
    while len(dims) > 1 and dims[-1][0] == 1:
        dims.pop()
    return tuple(dims), iterations, length_bytes
