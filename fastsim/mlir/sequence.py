"""The runtime sequence: what the host does, as Push and Wait steps.

``aiex.npu.dma_memcpy_nd`` makes a shim BD over a runtime argument (a DDR buffer) and pushes it to
the channel its ``metadata`` symbol names (a shim allocation or an object FIFO's shim end);
``dma_wait`` and ``npu.sync`` wait for that channel's tasks. ``dma_configure_task(_for)`` makes a
BD chain that ``dma_start_task`` pushes (``repeat_count`` more times) and ``dma_await_task``
waits for.

A run list (``fastsim.mlir.runlist``) configures other devices of the file and runs their
sequences, in one of two forms read to the same RunCalls: regions
(``aiex.configure @dev { aiex.run @seq(...) }``) or SSA values (``%c = aiex.configure @dev``, then
``aiex.run %c -> @seq(...)``, mlir-aie's earlier syntax).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..design import MM2S, S2MM, Channel, Tile
from .records import NO_TIMING, RunCall, Task
from .syntax import Atom, Group, atoms as _atoms
from .raw_dma import NOT_MINE, RawDma, block_write, register_write
from .trace_setup import INERT_REGISTERS, REGISTER_WRITES, TraceSetup
from .values import (Unreadable, attrs, element_bits, groups, int_list, int_of, memref_bytes, memref_of,
                     operand_problem, packet_id_of, split, word)


__all__ = ["SequenceReader", "INERT_REGISTERS", "bd_extent", "RuntimeScalar"]
# integer arith ops the sequence evaluates when their operands are known (an index or a size
# computed from a runtime argument); casts keep the value
ARITH = {
    "arith.index_cast": lambda a: a, "arith.index_castui": lambda a: a, "arith.extsi": lambda a: a,
    "arith.extui": lambda a: a, "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b, "arith.divsi": lambda a, b: _trunc_div(a, b), "arith.divui": lambda a, b: a // b,
    "arith.floordivsi": lambda a, b: a // b, "arith.ceildivsi": lambda a, b: -(-a // b),
    "arith.remsi": lambda a, b: a - b * _trunc_div(a, b), "arith.remui": lambda a, b: a % b,
    "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min,
}


@dataclass(frozen=True)
class RuntimeScalar:
    """A scalar runtime argument whose value was not given: an op that needs it is refused naming it."""

    name: str
    type: str


# the most passes of a runtime-sequence scf.for that are unrolled into host steps
MAX_SEQUENCE_PASSES = 1 << 20
# ops that name runtime-argument views for an aiex.run (no host time)
VIEW_OPS = frozenset({"memref.subview", "memref.reinterpret_cast", "memref.cast", "arith.constant"})
# ops that load a configuration, replacing the one an SSA aiex.run could still name
LOADS = frozenset({"aiex.configure", "aiex.npu.load_pdi"})


class SequenceReader:
    def __init__(self, reader):
        self.r = reader
        self.d = reader.design
        self.bds: dict = {}  # identical shim BDs are one BD (a sequence reuses a few BD ids)
        self.trace = TraceSetup(reader)  # trace set up by register writes: no time
        self.raw = RawDma(self)  # data BDs written and started by register writes: host pushes
        self.argument_buffers: list = []  # the runtime arguments in order: a DDR buffer, None for a scalar
        self.configs: dict = {}  # SSA value of an aiex.configure of another device -> its RunCall
        self.loaded = None  # the RunCall of the last SSA aiex.configure, while no load replaced it
        self.last_load = None  # the op that loaded the current configuration (configure or load_pdi)
        self.reloads: set = set()  # id() of the ops that load an SSA aiex.configure's configuration
        self.ssa_run_list = False  # the sequence loads another device by SSA aiex.configure

    def read(self, op) -> None:
        self._arguments(op)
        ops = op.regions[0].ops if op.regions else ()
        self.ssa_run_list = any(_loads_other(inner, self.r.device_symbol) for inner in ops)
        self.reloads = _reconfiguration_loads(ops, self.r.device_symbol)
        self._ops(ops)
        self._close_loaded(None)
        self.trace.finish()
        self._fit_arguments()

    def _ops(self, ops) -> None:
        for inner in ops:
            try:
                self._op(inner)
            except Unreadable as e:
                self.r.problem(inner, str(e))
            except (IndexError, KeyError, ValueError) as e:
                self.r.problem(inner, operand_problem(e))

    def _fit_arguments(self) -> None:
        """Grow a runtime argument to the furthest byte its shim BDs reach. The memref type of a
        runtime argument does not bound the buffer: the host allocates it (mlir-aie's
        ``add_one_ctrl_packet_col_overlay`` declares ``memref<8xi32>`` and its host 64 words), and
        mlir-aie does not check accesses against the type."""
        reach: dict[int, int] = {}
        for bd in self.d.bds:
            if bd.buffer.tile is None:
                reach[bd.buffer.id] = max(reach.get(bd.buffer.id, 0), bd.offset_bytes + bd_extent(bd))
        for i, b in enumerate(self.d.buffers):
            if b.tile is None and reach.get(b.id, 0) > b.size_bytes:
                grown = replace(b, size_bytes=reach[b.id])
                self.d.buffers[i] = grown
                for bd in self.d.bds:
                    if bd.buffer is b:
                        bd.buffer = grown
                self.r.notes.append(f"runtime argument %{b.name}: declared {b.size_bytes} bytes, accessed up to "
                                    f"byte {grown.size_bytes}: sized to the access")

    def _arguments(self, op) -> None:
        """Runtime arguments (``%a: memref<64xi32>``) become DDR buffers."""
        params = groups(op, "(")
        if not params:
            return
        for entry in split(params[0].items):
            values = [i for i in entry if isinstance(i, Atom) and i.kind == "VALUE"]
            if not values:
                continue
            if not any(isinstance(i, Atom) and i.text == "memref" for i in entry):
                self._scalar(values[0].text, entry)
                self.argument_buffers.append(None)
                continue
            shape, bits = memref_of(entry)
            buf = self.d.ddr_buffer(memref_bytes(shape, bits), values[0].text.lstrip("%"))
            self.r.env[values[0].text] = buf
            self.r.element_bits[buf.id] = bits
            self.argument_buffers.append(buf)

    def _scalar(self, value: str, entry) -> None:
        """A scalar the host passes (``%n: i32``): its given value (``args``), else a
        RuntimeScalar that an op needing its value names."""
        name = value.lstrip("%")
        self.r.scalar_args.add(name)
        if name in self.r.runtime_args:
            self.r.env[value] = self.r.args_used[name] = self.r.runtime_args[name]
        else:
            colon = next((k for k, i in enumerate(entry) if isinstance(i, Atom) and i.kind == "COLON"), len(entry))
            self.r.env[value] = RuntimeScalar(name, " ".join(str(i) for i in entry[colon + 1:]))

    def _unbound(self, op) -> bool:
        """Refuse (as a stop, naming it) an op that needs the value of a scalar runtime argument
        no one gave; True when it did."""
        for a in _region_atoms(op):
            v = self.r.env.get(a.text) if a.kind == "VALUE" else None
            if isinstance(v, RuntimeScalar):
                for result in op.results:  # what it would compute depends on the argument too
                    self.r.env[result] = v
                self.r.stops.append((op.name, op.line))
                self.r.problem(op, f"%{v.name} is a runtime argument ({v.type}) whose value the host passes at "
                                   f"run time: give it (fastsim run design --arg {v.name}=VALUE; read_design(..., "
                                   f"args={{'{v.name}': VALUE}}))")
                return True
        return False

    def _arith(self, op) -> None:
        """An integer ``arith`` op over known values (constants, given runtime arguments): its value."""
        fn = ARITH[op.name]
        operands = [e for e in split(op.items[:_colon(op.items)]) if e]
        try:
            self.r.env[op.results[0]] = fn(*(int_of(e, self.r.env) for e in operands))
        except ZeroDivisionError:
            raise Unreadable("divides by zero") from None
        except TypeError:
            raise Unreadable(f"expected the operands of {op.name}, found {len(operands)}") from None

    def _trunci(self, op) -> None:
        """``%r = arith.trunci %a : i64 to i32``: the low bits of a known value, read as signed."""
        bits = element_bits(word(op.items[_colon(op.items) + 1:][-1:]))
        v = int_of(op.items[:_colon(op.items)], self.r.env) & ((1 << bits) - 1)
        self.r.env[op.results[0]] = v - (1 << bits) if v >> (bits - 1) else v

    def _for(self, op) -> None:
        """``[%r =] scf.for %i = %lb to %ub step %s [iter_args(%x = %init)] { ... scf.yield %y }``
        with bounds known before the run (constants, given runtime arguments): the body once per
        pass, its iteration arguments carried from each ``scf.yield`` to the next pass and the
        results bound to the last (mlir-aie's dynamic runtime sequences loop over DMA tasks so)."""
        items = op.items
        texts = [i.text if isinstance(i, Atom) else None for i in items]
        env = self.r.env
        lb = int_of(items[2:texts.index("to")], env)
        ub = int_of(items[texts.index("to") + 1:texts.index("step")], env)
        end = texts.index("iter_args") if "iter_args" in texts else len(items)
        step = int_of(items[texts.index("step") + 1:end], env)
        if step <= 0:
            raise Unreadable(f"a loop of step {step}")
        passes = max(0, -(-(ub - lb) // step))
        if passes > MAX_SEQUENCE_PASSES:
            raise Unreadable(f"a runtime-sequence loop of {passes:,} passes (at most {MAX_SEQUENCE_PASSES:,} "
                             "are unrolled)")
        names, current = [], []
        if end < len(items):
            for entry in split(items[end + 1].items):
                names.append(entry[0].text)
                current.append(env.get(entry[2].text) if entry[2].kind == "VALUE" else int_of(entry[2:], env))
        body = op.regions[0].ops if op.regions else ()
        for k in range(passes):
            env[items[0].text] = lb + k * step
            env.update(zip(names, current))
            self._ops(o for o in body if o.name != "scf.yield")
            current = self._yielded(body, current)
        env.update(zip(op.results, current))

    def _yielded(self, body, current: list) -> list:
        """The values a region's ``scf.yield`` gives back (the current ones when it has none)."""
        ys = [o for o in body if o.name == "scf.yield"]
        if not ys or not current:
            return current
        values = [a for a in ys[-1].items[:_colon(ys[-1].items)] if isinstance(a, Atom) and a.kind == "VALUE"]
        return [self.r.env.get(a.text) for a in values]

    def _if(self, op) -> None:
        """``scf.if %c { ... } [else { ... }]`` on a condition known before the run (a given
        runtime argument, a constant): the ops of the branch it takes."""
        cond = next((a for a in op.items if isinstance(a, Atom) and a.kind == "VALUE"), None)
        if cond is None:
            raise Unreadable("scf.if without a condition")
        branch = 0 if int_of([cond], self.r.env) else 1
        if branch < len(op.regions):
            self._ops(o for o in op.regions[branch].ops if o.name != "scf.yield")

    def _op(self, op) -> None:
        name = op.name
        if name not in NO_TIMING and self._unbound(op):
            return
        if name in ARITH:
            self._arith(op)
            return
        structured = {"arith.trunci": self._trunci, "scf.for": self._for, "scf.if": self._if}.get(name)
        if structured is not None:  # values and control flow evaluated before the run
            structured(op)
            return
        if name in LOADS:
            self._close_loaded(op)
        if name == "arith.constant":
            self.r.constant(op)
        elif name == "aiex.npu.dma_memcpy_nd":
            self._memcpy(op)
        elif name == "aiex.npu.dma_wait":
            self.d.wait(self._symbol_channel(op, attrs(op)["symbol"]))
        elif name == "aiex.npu.sync":
            a = attrs(op)
            if "column" not in a:  # the positional form: (column, row, direction, channel, ...)
                values = split(groups(op, "(")[0].items)
                a = dict(zip(("column", "row", "direction", "channel"), values))
            env = self.r.env
            tile = Tile(int_of(a["column"], env), int_of(a["row"], env))
            direction = S2MM if int_of(a["direction"], env) == 0 else MM2S
            self.d.wait(Channel(tile, direction, int_of(a["channel"], env)))
        elif name == "aiex.npu.load_pdi" and self._loads_itself_or_nothing(op):
            self.r.untimed.append((name, op.line))
        elif name in ("aiex.npu.patch_marker", "aiex.npu.load_pdi") and id(op) in self.reloads:
            self.r.untimed.append((name, op.line))  # part of the next configure: reconfigure_cycles
        elif name in REGISTER_WRITES:
            why = self._raw_register(op)
            if why is NOT_MINE:
                why = {"aiex.npu.blockwrite": self.trace.blockwrite,
                       "aiex.buffer_clear": self.trace.buffer_clear}.get(name, self.trace.write)(op)
            if why is None:
                self.r.untimed.append((name, op.line))  # set-up: an instruction, no data
            else:
                self.r.unsupported(op, why)
        elif name == "aiex.set_lock":
            self.raw.set_lock_op(op)
        elif name == "aiex.npu.writebd":
            self.trace.writebd(op)  # pending until a queue write starts it (refused at the end if none)
            self.raw.writebd(op)
        elif name == "aiex.npu.address_patch":
            self.trace.address_patch(op)  # likewise, with the BD it patches
            self.raw.address_patch(op)
        elif name == "memref.get_global":
            self.r.env[op.results[0]] = ("global", _symbol(op) or "") if op.results else None  # constant data
        elif name == "memref.assume_alignment":
            pass  # a promise about a runtime argument's address: no host time
        elif name in VIEW_OPS and self.ssa_run_list:
            pass  # a view of a runtime argument for an aiex.run (SSA form): no host time
        elif name == "aiex.configure" and self._configures_itself(op):
            self.r.untimed.append((name, op.line))  # loading the configuration: not modelled
            self._ops(op.regions[0].ops if op.regions else ())
        elif name == "aiex.configure" and not op.regions:
            self._load(op)
        elif name == "aiex.configure":
            self._run_list_entry(op)
        elif name == "aiex.run":
            self._run(op)
        elif name in ("aiex.dma_configure_task", "aiex.dma_configure_task_for"):
            self._configure(op)
        elif name == "aiex.dma_start_task":
            for task in self._tasks(op):
                self.d.push(task.channel, task.bd, task.repeat)
                self.r.gives_work(task.channel, op)
        elif name == "aiex.dma_await_task":
            for task in self._tasks(op):
                self.d.wait(task.channel)
        elif name in NO_TIMING or name == "func.return":
            if name != "aie.end":
                self.r.untimed.append((name, op.line))
        else:
            self.r.unsupported(op)

    def _raw_register(self, op):
        """A register write that programs or starts a data DMA (``fastsim.mlir.raw_dma``): None
        when read, a reason when refused, NOT_MINE for the trace setup to judge."""
        if op.name == "aiex.buffer_clear" or self.trace.into_buffer(op):
            return NOT_MINE
        block = op.name == "aiex.npu.blockwrite"
        try:
            parsed = block_write(op, self.r) if block else register_write(op, self.r.env)
        except (Unreadable, KeyError, IndexError):
            return NOT_MINE  # not a form read here (or not constant): the trace setup names it
        if block:
            bd = self.raw.blockwrite(*parsed)
            if bd is not None:
                self.trace.pending.setdefault((parsed[0], bd), []).append(op)
                return None
            return NOT_MINE
        try:
            return self.raw.write(op, *parsed)
        except Unreadable as e:
            return str(e)  # a raw BD or start fastsim does not model: refused naming this op

    def _configures_itself(self, op) -> bool:
        """``aiex.configure @this_device {ops}`` (re)loads the device's own configuration (by
        control packets or a PDI), then runs the ops; a configuration of another device is an
        entry of a run list (``_run_list_entry``, ``_load``)."""
        sym = next((i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), None)
        return sym is not None and sym == self.r.device_symbol

    def _run_list_entry(self, op) -> None:
        """``aiex.configure @other { aiex.run @seq(%view) ... }``: an entry of a run list, read by
        ``reader`` once the device is read. Inside, only ``aiex.run`` and the views of runtime
        arguments it passes are read: a run's arguments are host buffers, whose addresses do not
        change timing."""
        sym = next((i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), None)
        runs = []
        for inner in op.regions[0].ops if op.regions else ():
            if inner.name == "aiex.run":
                runs.append(word([i for i in inner.items if isinstance(i, Atom) and i.kind == "SYMBOL"][:1])
                            .lstrip("@"))
            elif inner.name in VIEW_OPS:
                if inner.name == "arith.constant":
                    self.r.constant(inner)
            else:
                self.r.unsupported(inner, f"inside aiex.configure of another device (@{sym}) only aiex.run "
                                          "and views of runtime arguments are read")
        if sym is None or not runs:
            self.r.unsupported(op, "a configuration of another device without aiex.run")
            return
        self.r.run_calls.append(RunCall(sym, runs, op))

    def _load(self, op) -> None:
        """``%c = aiex.configure @other`` (SSA form): loads @other's configuration; the
        ``aiex.run %c -> @seq(...)`` ops that follow, until the next load, are one RunCall, as the
        ``aiex.run`` ops of a configure block are. A parametrised configuration
        (``@mm(1024, ...)``) names values fastsim cannot bind."""
        sym = _symbol(op)
        if sym is None or not op.results or groups(op, "("):
            self.r.unsupported(op, "an aiex.configure without a region is read as %c = aiex.configure @device "
                                   "(no parameters)")
            return
        self.loaded = self.configs[op.results[0]] = RunCall(sym, [], op)

    def _run(self, op) -> None:
        """``aiex.run %c -> @seq(args)``: one more run of the configuration ``%c`` loaded, its
        arguments read as a configure block's (views of runtime arguments, no host time). The run
        must follow ``%c``'s load with no other load between: loading a configuration replaces the
        previous one, and a run of a replaced one would need a reload the op does not say."""
        ref = next((i.text for i in op.items if isinstance(i, Atom) and i.kind == "VALUE"), None)
        sym = _symbol(op)
        call = self.configs.get(ref)
        if ref is None or sym is None:
            self.r.unsupported(op, "an aiex.run outside aiex.configure { } is read as aiex.run %c -> @sequence(...) "
                                   "of a %c = aiex.configure @device")
        elif call is None:
            self.r.unsupported(op, f"{ref} is no %c = aiex.configure of another device before it")
        elif call is not self.loaded:
            self.r.unsupported(op, f"{ref} (aiex.configure @{call.device}, line {call.op.line}) was replaced by "
                                   f"{self.last_load.name} at line {self.last_load.line}: loading a "
                                   f"configuration replaces the previous one; configure @{call.device} again")
        else:
            call.sequences.append(sym)

    def _close_loaded(self, op) -> None:
        """A load (``op``; None at the sequence's end) replaces the configuration an SSA
        ``aiex.configure`` loaded: its runs are complete, a RunCall of the run list in load order."""
        call, self.loaded = self.loaded, None
        if call is not None and call.sequences:
            self.r.run_calls.append(call)
        elif call is not None:
            self.r.unsupported(call.op, "a configuration of another device without aiex.run")
        if op is not None:
            self.last_load = op

    def _loads_itself_or_nothing(self, op) -> bool:
        """``load_pdi {device_ref = @d}`` of this device (its configuration, already what fastsim
        simulates) or of an empty device (a reset before it) changes no modelled state; the time a
        load takes is not modelled."""
        ref = attrs(op).get("device_ref")
        sym = word(ref).lstrip("@") if ref else None
        return sym is not None and (sym == self.r.device_symbol or sym in self.r.empty_devices)

    def _symbol_channel(self, op, items) -> Channel:
        sym = word(items).lstrip("@")
        ch = self.r.symbols.get(sym)
        if not isinstance(ch, Channel):
            raise Unreadable(f"@{sym} names no shim DMA channel (aie.shim_dma_allocation or an object FIFO's "
                             "shim end)")
        return ch

    def _memcpy(self, op) -> None:
        """``dma_memcpy_nd(%arg[offsets][sizes][strides]) {metadata = @x, id = n}``: four dims,
        outermost first, in elements; the outermost becomes the BD's iteration count. The older
        form (``dma_memcpy_nd(x, y, %arg[4 offsets][4 sizes][3 strides])``, mlir-aie until 2024)
        gives the three outer strides, the innermost being 1."""
        a = attrs(op)
        ch = self._symbol_channel(op, a["metadata"])
        inner = groups(op, "(")[0].items
        at = next(i for i, it in enumerate(inner) if isinstance(it, Atom) and it.kind == "VALUE")
        buf = self.r.value(inner[at:at + 1])
        squares = [g for g in inner[at + 1:] if isinstance(g, Group) and g.kind == "["]
        if len(squares) != 3:
            raise Unreadable(f"expected %buffer[offsets][sizes][strides], found {len(squares)} bracketed lists")
        offsets, sizes, strides = (int_list(g, self.r.env) for g in squares)
        if len(strides) == len(sizes) - 1:  # the older form: the outer strides; the innermost is 1
            strides.append(1)
        if not 1 <= len(sizes) <= 4 or len(offsets) != len(sizes) or len(strides) != len(sizes):
            raise Unreadable(f"offsets {offsets}, sizes {sizes}, strides {strides}: expected as many offsets, "
                             "sizes and strides (up to 4 each, outermost first; the older form gives one stride "
                             "fewer, the innermost being 1)")
        if ch.direction == MM2S and ch not in self.r.routes and any(
                isinstance(i, Atom) and i.text == "packet" for i in inner):
            self.r.unsupported(op, f"packets from @{word(a['metadata']).lstrip('@')} go to no DMA: control "
                                   "packets to tile control ports are not modelled")
            return
        bits = self.r.bits_of(buf)
        offset = sum(o * s for o, s in zip(offsets, strides)) if strides else 0
        if sizes and len(sizes) == len(strides) and strides[-1] == 0:
            strides[-1] = 1
        bd = self._bd(ch, buf, bits, offset, sizes, strides, packet_id_of(inner))
        self.d.push(ch, bd)
        self.r.gives_work(ch, op)

    def _bd(self, ch, buf, bits, offset, sizes, strides, packet_id=None):
        key = (ch, buf.id, offset, tuple(sizes), tuple(strides), packet_id)
        bd = self.bds.get(key)
        if bd is None:
            length = 1
            for s in sizes:
                length *= s
            bd = self.bds[key] = self.r.make_bd(ch, buf, bits, offset, length, sizes, strides, packet_id=packet_id)
        return bd

    def _configure(self, op) -> None:
        """A task: a channel (``(%tile, MM2S, 0)`` or ``_for @fifo``) and a BD chain in its region."""
        a = attrs(op)
        if op.name == "aiex.dma_configure_task_for":
            ch = self._symbol_channel(op, [i for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"])
        else:
            args = split(groups(op, "(")[0].items)
            tile = self.r.value(args[0], Tile)
            ch = Channel(tile, MM2S if word(args[1]) == "MM2S" else S2MM, int_of(args[2], self.r.env))
        region = op.regions[0]
        blocks = {b.label: b for b in region.blocks}
        first = self.r.bd_chain(blocks, region.blocks[0].label, ch, op)
        if first is None:
            raise Unreadable("a task without aie.dma_bd")
        repeat = int_of(a["repeat_count"]) + 1 if "repeat_count" in a else 1
        self.r.env[op.results[0]] = Task(ch, first, repeat)

    def _tasks(self, op) -> list[Task]:
        out = []
        for g in groups(op, "("):
            for it in g.items:
                if isinstance(it, Atom) and it.kind == "VALUE":
                    t = self.r.env.get(it.text)
                    if not isinstance(t, Task):
                        raise Unreadable(f"{it.text} is not a DMA task")
                    out.append(t)
        return out


def bd_extent(bd) -> int:
    """Bytes from a BD's offset to the end of the last word its dimensions address (as validation
    measures it)."""
    if not bd.dims:
        return bd.length_bytes
    return (sum((max(size, 1) - 1) * max(stride, 0) for size, stride in bd.dims) + 1) * 4


def _symbol(op) -> str | None:
    return next((i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), None)


def _loads_other(op, own: str) -> bool:
    """``%c = aiex.configure @other`` (SSA form of a run list's entry)."""
    return op.name == "aiex.configure" and not op.regions and _symbol(op) not in (None, own)


def _reconfiguration_loads(ops, own: str) -> set:
    """``id()`` of the ``aiex.npu.patch_marker {id = "loadpdi"}`` and ``aiex.npu.load_pdi`` without
    ``device_ref`` right before an SSA ``aiex.configure @other``: mlir-aie's SSA-form run lists reset
    the part and load the next configuration with them (a placeholder PDI the host patches), which
    the region form does inside ``aiex.configure``. They are that configure's load: its time is the
    run list's ``reconfigure_cycles``. Anywhere else they stay outside the subset."""
    def reload(op) -> bool:
        if op.name == "aiex.npu.patch_marker":
            marker = attrs(op).get("id")
            return bool(marker) and word(marker) == "loadpdi"
        return op.name == "aiex.npu.load_pdi" and "device_ref" not in attrs(op)

    marked, pending = set(), []
    for op in ops:
        if reload(op):
            pending.append(id(op))
            continue
        if _loads_other(op, own):
            marked.update(pending)
        pending = []
    return marked


def _region_atoms(op):
    """The atoms of an op and of the ops in its regions (a task's BDs); not of an ``scf.for``'s or
    ``scf.if``'s body, whose ops are read one by one."""
    yield from _atoms(op.items)
    for region in () if op.name in ("scf.for", "scf.if") else op.regions:
        for inner in region.ops:
            yield from _region_atoms(inner)


def _colon(items) -> int:
    """Index of the first top-level ``:`` (the type that ends an op), or the end."""
    return next((k for k, x in enumerate(items) if isinstance(x, Atom) and x.kind == "COLON"), len(items))


def _trunc_div(a: int, b: int) -> int:
    """Integer division rounding toward zero (``arith.divsi``), exact for any size."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q
