"""Static checks aie-opt makes before any pass runs, made before a design is read: a use of an SSA
value nothing defines (MLIR's parser: "use of undeclared SSA value name") and a ``func.call`` of
a function no ``func.func`` declares ("does not reference a valid function"). A file aie-opt
rejects is refused with the op and line, not simulated.

The check is file-wide, not by dominance: a name defined anywhere in the file counts as defined
(MLIR scopes names by region; a design that uses a value outside its scope is not caught here).
"""
from __future__ import annotations

from .syntax import Atom, Group, Op, atoms as _atoms

def static_problems(ops) -> list[tuple[Op, str]]:
    """(op, problem) for each use of an undefined SSA value and each call of an undeclared
    function among ``ops`` and everything nested in them."""
    all_ops = list(_walk(ops))
    defined = set()
    for op, block_args in all_ops:
        defined.update(block_args)
        defined.update(_base(r) for r in op.results)
        defined.update(_bound(op))
    functions = {_symbol(op) for op, _ in all_ops if op.name == "func.func"}
    out = []
    for op, _ in all_ops:
        missing = sorted({_base(v) for v in _uses(op)} - defined)
        if missing:
            out.append((op, f"use of undeclared SSA value {', '.join(missing)} (no op, argument or loop defines "
                            "it; aie-opt rejects the file)"))
        if op.name == "func.call" and _symbol(op) not in functions:
            out.append((op, f"calls @{_symbol(op)}, which no func.func declares (aie-opt: 'does not reference a "
                            "valid function'); declare it: func.func private @NAME(ARGUMENT TYPES)"))
    return out


def _walk(ops, block_args=()):
    """(op, the names its block's label binds) for every op, depth first."""
    for op in ops:
        yield op, block_args
        for region in op.regions:
            for block in region.blocks:
                yield from _walk(block.ops, block.args)


def _base(name: str) -> str:
    return name.split("#")[0]


def _symbol(op: Op) -> str:
    return next((i.text.lstrip("@").strip('"') for i in op.items if isinstance(i, Atom) and i.kind == "SYMBOL"), "")


def _bound(op: Op) -> set:
    """Names an op binds besides its results: ``%i = `` inside it (a loop's index, ``iter_args``)
    and, for an op with a body, its ``(%arg: type)`` parameters."""
    out = set()
    flat = list(_atoms(op.items))
    for a, b in zip(flat, flat[1:]):
        if a.kind == "VALUE" and b.kind == "EQ":
            out.add(_base(a.text))
    if op.regions or op.name == "func.func":
        for g, nxt in zip(op.items, list(op.items[1:]) + [None]):
            if isinstance(g, Group) and g.kind == "(":
                items = [i for i in g.items if isinstance(i, Atom)]
                out.update(_base(a.text) for a, b in zip(items, items[1:]) if a.kind == "VALUE" and b.kind == "COLON")
                if isinstance(nxt, Atom) and (nxt.kind == "EQ" or nxt.text == "in"):  # scf.parallel, scf.forall
                    out.update(_base(a.text) for a in items if a.kind == "VALUE")
    return out


def _uses(op: Op) -> set:
    bound = _bound(op)
    return {a.text for a in _atoms(op.items) if a.kind == "VALUE" and _base(a.text) not in bound}


def check(top, source: str, error) -> None:
    """Raise ``error(problems, source, stops)`` (an MlirError) when ``static_problems`` finds any."""
    found = static_problems(top)
    if found:
        raise error([f"{source}:{op.line}: {op.name}: {text}" for op, text in found], source,
                    [(op.name, op.line) for op, _ in found])
