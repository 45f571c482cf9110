"""Core bodies: an ``aie.core`` region becomes a core program of Acquire, Release, Compute and Loop.

``aie.use_lock`` and object-FIFO ``acquire``/``release`` become lock operations, ``func.call``
takes its kernel's cycles, inline ops ``INLINE_OP_CYCLES`` each, and ``scf.for``/``affine.for``
with constant bounds become loops. Adjacent inline costs merge into one Compute.
"""
from __future__ import annotations

from ..design import Acquire, Compute, Lock, Loop, Release
from .cascade import cascade_words
from .kernels import FREE_OPS, INLINE_DIALECTS, INLINE_OP_CYCLES
from .records import FifoObject
from .syntax import Atom, Group
from .values import Unreadable, groups, int_of, split, word

# a loop at least this long runs "forever" (IRON's persistent cores loop to sys.maxsize or 2^32-1)
ENDLESS = 2**31 - 1
INLINE = "inline"


class CoreReader:
    """Lowers one core's body. ``reader`` is the design reader (values, locks, fifo endpoints,
    kernel costs, problems); ``held`` counts the object-FIFO elements the core holds per
    (fifo, port), as mlir-aie tracks them: acquiring n while holding h takes only n - h more."""

    def __init__(self, reader, tile):
        self.r, self.tile = reader, tile
        self.endless = False
        self.cascade_named = False  # a kernel called here says put or get (fastsim.mlir.cascade)

    def blocks(self, blocks) -> list:
        """A core region: its entry block, then along ``cf.br``: a jump forward continues there,
        a block that jumps to itself is an endless loop (how ``while (true)`` lowers); any other
        control flow is outside the subset."""
        by_label = {b.label: b for b in blocks}
        self.cascade_named = any(cascade_words(_callee(op)) for b in blocks for op in _walk(b.ops)
                                 if op.name == "func.call")
        out: list = []
        held: dict = {}
        done: set = set()
        block = blocks[0]
        while block is not None:
            done.add(block.label)
            ops, last = list(block.ops), block.ops[-1] if block.ops else None
            target = None
            if last is not None and last.name == "cf.br":
                ops.pop()
                target = next((i.text for i in last.items if isinstance(i, Atom) and i.kind == "BLOCK"), None)
            if target == block.label:
                self.endless = True
                out.append(Loop(ENDLESS, tuple(self.body(ops, held))))
                break
            out += self.body(ops, held)
            if target is None:
                break
            if target in done or target not in by_label:
                self.r.unsupported(last, "a branch back to an earlier block (only a block's jump to itself, "
                                         "an endless loop, is read)")
                break
            block = by_label[target]
        return _merge(out)

    def body(self, ops, held: dict) -> list:
        out: list = []
        for op in ops:
            try:
                self._op(op, out, held)
            except Unreadable as e:
                self.r.problem(op, str(e))
        return _merge(out)

    def _op(self, op, out: list, held: dict) -> None:
        r, name = self.r, op.name
        if name == "arith.constant":
            r.constant(op)
        elif name == "aie.objectfifo.subview.access":
            source = next((it.text for it in op.items if isinstance(it, Atom) and it.kind == "VALUE"), None)
            if op.results and isinstance(r.env.get(source), FifoObject):
                r.env[op.results[0]] = r.env[source]
        elif name in FREE_OPS:
            pass
        elif name in ("scf.for", "affine.for"):
            self._loop(op, out, held)
        elif name == "aie.use_lock":
            lock, action, value = r.use_lock(op)
            out.append(Acquire(lock, value) if action.startswith("Acquire") else Release(lock, value))
        elif name == "aie.objectfifo.acquire":
            fifo, port, n = self._fifo_args(op)
            acq, _ = r.fifo_locks(op, fifo, port, self.tile)
            depth = r.fifos.depth_at(fifo, port, self.tile)
            if n > depth:
                raise Unreadable(f"acquires {n} objects of @{fifo}, more than its depth at this end ({depth}): "
                                 "aie-opt rejects it (the acquire could never be granted)")
            if op.results:
                r.env[op.results[0]] = FifoObject(fifo)
            have = held.get((fifo, port), 0)
            if n > have:
                out.append(Acquire(acq, n - have))
                held[(fifo, port)] = n
        elif name == "aie.objectfifo.release":
            fifo, port, n = self._fifo_args(op)
            _, rel = r.fifo_locks(op, fifo, port, self.tile)
            out.append(Release(rel, n))
            held[(fifo, port)] = max(0, held.get((fifo, port), 0) - n)
        elif name == "arith.cmpi":
            self._compare(op)
            out.append(Compute(INLINE_OP_CYCLES, INLINE))
        elif name == "scf.if":
            self._if(op, out, held)
        elif name == "func.call":
            callee = _callee(op)
            out += r.cascades.rendezvous(*r.cascades.flows_of_call(self.tile, callee, self.cascade_named))
            acquires, releases = self._kernel_locks(op, callee)
            out += acquires
            out.append(Compute(r.kernel_cycles(op, callee), callee))
            out += releases
        elif name.startswith(INLINE_DIALECTS):
            out.append(Compute(INLINE_OP_CYCLES, INLINE))
        else:
            r.unsupported(op)

    def _kernel_locks(self, op, callee: str) -> tuple[list, list]:
        """The Acquires before and Releases after a call whose kernel takes locks as arguments
        and acquires and releases them in its C code, as the kernel costs declare them
        (``kernels.KernelLocks``). A call that passes a lock its kernel's entry does not declare
        is refused by name: reading it as a plain call would leave the lock untouched and the
        design in a deadlock the part never reaches."""
        operands = [next((i.text for i in entry if isinstance(i, Atom) and i.kind == "VALUE"), None)
                    for entry in (split(groups(op, "(")[0].items) if groups(op, "(") else [])]
        locks = {k: self.r.env[v] for k, v in enumerate(operands) if isinstance(self.r.env.get(v), Lock)}
        uses = self.r.kernel_locks.get(callee)
        if uses is None:
            if locks:
                passed = ", ".join(f"{operands[k]} (operand {k})" for k in locks)
                raise Unreadable(f"kernel '{callee}' is passed lock(s) {passed}: its C code acquires and "
                                 "releases them, which the MLIR does not say; declare what it does in the kernel "
                                 f"costs ([kernels.{callee}] cycles = N, acquire = [[OPERAND, VALUE], ...], "
                                 "release = [[OPERAND, VALUE], ...])")
            return [], []
        wrong = [k for k, _ in uses.acquire + uses.release if k not in locks]
        if wrong:
            raise Unreadable(f"kernels.{callee} declares lock operand(s) {wrong}, but this call passes locks at "
                             f"operand(s) {sorted(locks)} only")
        return [Acquire(locks[k], v) for k, v in uses.acquire], [Release(locks[k], v) for k, v in uses.release]

    def _compare(self, op) -> None:
        """``%r = arith.cmpi PRED, %a, %b``: its value, when both sides are known before the run
        (constants, or the index of a loop that runs once); otherwise the comparison only costs
        its cycle, and an ``scf.if`` on it is refused."""
        parts = split(op.items[:_colon(op.items)])
        if len(parts) != 3 or not parts[0]:
            return
        predicate = parts[0][0].text.strip('"')
        try:
            a, b = int_of(parts[1], self.r.env), int_of(parts[2], self.r.env)
        except Unreadable:
            return
        if predicate.startswith("u") and min(a, b) < 0:
            return  # an unsigned compare of a negative value depends on the width: left unknown
        if predicate in _PREDICATES and op.results:
            self.r.env[op.results[0]] = int(_PREDICATES[predicate](a, b))

    def _if(self, op, out: list, held: dict) -> None:
        """``scf.if %c { ... } else { ... }`` whose condition is known before the run: the branch
        taken is read (a condition computed at run time would make the program data dependent,
        which fastsim does not model)."""
        cond = next((i for i in op.items if isinstance(i, Atom) and i.kind == "VALUE"), None)
        known = self.r.env.get(cond.text) if cond is not None else None
        if not isinstance(known, int):
            raise Unreadable(f"scf.if on {cond.text if cond else '?'}: only a condition known before the run "
                             "is read (a comparison of constants or of the index of a loop that runs once); "
                             "this one is computed at run time")
        taken = op.regions[0] if known else (op.regions[1] if len(op.regions) > 1 else None)
        if taken is not None:
            out += self.body(taken.ops, held)

    def _fifo_args(self, op) -> tuple[str, str, int]:
        sym = next((i.text.lstrip("@") for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), None)
        args = split(groups(op, "(")[0].items) if groups(op, "(") else []
        if sym is None or len(args) != 2:
            raise Unreadable("expected @fifo(Produce|Consume, N)")
        return sym, word(args[0]), int_of(args[1], self.r.env)

    def _loop(self, op, out: list, held: dict) -> None:
        """``scf.for %i = %lb to %ub step %s``: count = ceil((ub - lb) / step). A loop whose body
        holds a different number of FIFO elements after one pass than before (a sliding window)
        runs its first pass alone, then the steady body."""
        items = [i for i in op.items if not isinstance(i, Group) or i.kind != "{"]
        texts = [i.text if isinstance(i, Atom) else None for i in items]
        try:
            lb = int_of(items[texts.index("=") + 1:texts.index("to")], self.r.env)
            ub = int_of(items[texts.index("to") + 1:texts.index("step")], self.r.env)
            step = int_of(items[texts.index("step") + 1:], self.r.env) if "step" in texts else 1
        except ValueError:
            raise Unreadable("loop bounds: expected %i = LB to UB step S") from None
        wide = [f"{k} = {v}" for k, v in (("lb", lb), ("ub", ub), ("step", step)) if not -2**63 <= v < 2**63]
        if wide:
            raise Unreadable(f"loop bounds {', '.join(wide)}: must fit a 64-bit index")
        if step < 1:
            raise Unreadable(f"loop step = {step}: must be >= 1 (scf.for steps forward)")
        count = max(0, -(-(ub - lb) // step))
        if count >= ENDLESS:
            self.endless = True
        body_ops = op.regions[0].ops if op.regions else ()
        if count == 0:
            return
        index = items[0].text if items and isinstance(items[0], Atom) and items[0].kind == "VALUE" else None
        if count == 1 and index:  # its index is known: a condition on it can be read
            self.r.env[index] = lb
        before = _holding(held)
        first = self.body(body_ops, held)
        self.r.env.pop(index, None)
        if _holding(held) == before or count == 1:
            out.append(_loop(count, first))
            return
        settled = _holding(held)
        steady = self.body(body_ops, held)
        if _holding(held) != settled:
            raise Unreadable("object-FIFO acquires and releases in this loop never settle into a steady pattern")
        out.extend(first)
        out.append(_loop(count - 1, steady))


def _callee(op) -> str:
    return word([i for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"][:1]).lstrip("@")


def _walk(ops):
    """Ops and the ops of their regions, depth first."""
    for op in ops:
        yield op
        for region in op.regions:
            for block in region.blocks:
                yield from _walk(block.ops)


def _holding(held: dict) -> dict:
    return {k: v for k, v in held.items() if v}


def _loop(count: int, body: list):
    """A loop, or one Compute when its body is only inline/kernel time of one name."""
    if count == 1:
        return body
    if len(body) == 1 and isinstance(body[0], Compute):
        return Compute(body[0].cycles * count, body[0].name)
    return Loop(count, tuple(body)) if body else []


_PREDICATES = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b,
               "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
               "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b,
               "uge": lambda a, b: a >= b}


def _colon(items) -> int:
    """Index of the first top-level ``:`` (the type that ends an op), or the end."""
    return next((i for i, x in enumerate(items) if isinstance(x, Atom) and x.kind == "COLON"), len(items))


def _merge(ops: list) -> list:
    """Flatten nested lists and merge adjacent inline Computes."""
    flat = []
    for op in ops:
        for x in (op if isinstance(op, list) else [op]):
            if (flat and isinstance(x, Compute) and isinstance(flat[-1], Compute)
                    and x.name == INLINE and flat[-1].name == INLINE):
                flat[-1] = Compute(flat[-1].cycles + x.cycles, INLINE)
            else:
                flat.append(x)
    return flat
