"""Reading the items of a parsed op: comma-separated arguments, attribute dictionaries, integers
(literal or through ``arith.constant`` values) and memref types."""
from __future__ import annotations

from math import prod

from .syntax import Atom, Group

# element type -> bits; i<N>, ui<N>, si<N> and f<N> are read from their names
_NAMED_BITS = {"bf16": 16, "index": 64, "f8E4M3FN": 8, "f8E5M2": 8}


class Unreadable(Exception):
    """An item is not of the form an op's reader needs (the reader turns it into a problem)."""


def operand_problem(e: Exception) -> str:
    """What an op's reader met instead of the form it reads (an IndexError, KeyError or
    ValueError while reading its items), in words, without Python's exception text."""
    if isinstance(e, KeyError) and e.args:
        return f"cannot read its operands: it lacks {str(e.args[0])!r}, which this op's form needs (docs/mlir.md)"
    return "cannot read its operands: they are not in a form of this op fastsim reads (docs/mlir.md)"


def split(items) -> list[tuple]:
    """Items separated by top-level commas."""
    out, cur = [], []
    for it in items:
        if isinstance(it, Atom) and it.kind == "COMMA":
            out.append(tuple(cur))
            cur = []
        else:
            cur.append(it)
    if cur or out:
        out.append(tuple(cur))
    return out


def groups(op, kind: str) -> list[Group]:
    """The op's top-level groups of one kind ('(', '[', '<', '{')."""
    return [i for i in op.items if isinstance(i, Group) and i.kind == kind]


def attr_dict(group: Group) -> dict:
    """``{name = value, flag}`` -> {name: items of the value} (a flag maps to ())."""
    out = {}
    for entry in split(group.items):
        if not entry:
            continue
        name = entry[0].text.strip('"') if isinstance(entry[0], Atom) else str(entry[0])
        value = entry[2:] if len(entry) > 1 and isinstance(entry[1], Atom) and entry[1].kind == "EQ" else ()
        out[name] = value
    return out


def attrs(op) -> dict:
    """Every attribute dictionary of the op merged (``{...}`` groups at its top level that hold
    ``name = value`` entries)."""
    out = {}
    for g in groups(op, "{"):
        if g.items and isinstance(g.items[0], Atom) and g.items[0].kind in ("WORD", "DOTTED", "STRING"):
            out.update(attr_dict(g))
    return out


def int_of(items, env: dict | None = None) -> int:
    """An integer from ``5``, ``-5``, ``5 : i32``, ``true``, or an SSA value bound to a constant."""
    items = tuple(items)
    if not items:
        raise Unreadable("missing integer")
    sign = 1
    if isinstance(items[0], Atom) and items[0].kind == "MINUS":
        sign, items = -1, items[1:]
    first = items[0]
    if isinstance(first, Atom):
        if first.kind == "INT":
            return sign * int(first.text, 0)
        if first.kind == "WORD" and first.text in ("true", "false"):
            return int(first.text == "true")
        if first.kind == "VALUE" and env is not None and isinstance(env.get(first.text), int):
            return sign * env[first.text]
        if first.kind == "FLOAT" and float(first.text).is_integer():
            return sign * int(float(first.text))
    raise Unreadable(f"expected an integer, found {' '.join(str(i) for i in items)!r}")


def int_list(group: Group, env: dict | None = None) -> list[int]:
    return [int_of(e, env) for e in split(group.items) if e]


def packet_id_of(items) -> int | None:
    """The ``pkt_id`` of a ``#aie.packet_info<pkt_type = 0, pkt_id = 2>`` (or ``<pkt_id = 3, ...>``)
    anywhere in ``items``, or None."""
    flat = []

    def walk(xs):
        for x in xs:
            if isinstance(x, Group):
                walk(x.items)
            else:
                flat.append(x)
    walk(items)
    for i, x in enumerate(flat):
        if isinstance(x, Atom) and x.text == "pkt_id" and i + 2 < len(flat) and flat[i + 1].kind == "EQ":
            return int_of(flat[i + 2:i + 3])
    return None


def word(items) -> str:
    """The text of a single word or symbol item (``S2MM``, ``@of``, ``"x"``)."""
    items = tuple(items)
    if len(items) >= 1 and isinstance(items[0], Atom):
        return items[0].text.strip('"')
    raise Unreadable(f"expected a name, found {' '.join(str(i) for i in items)!r}")


def element_bits(name: str) -> int:
    if name in _NAMED_BITS:
        return _NAMED_BITS[name]
    digits = name.lstrip("uisf")
    if digits.isdigit() and name[: len(name) - len(digits)] in ("i", "ui", "si", "f"):
        return int(digits)
    raise Unreadable(f"element type {name!r}")


def memref_of(items) -> tuple[tuple[int, ...], int]:
    """(shape, element bits) of the first ``memref<...>`` among ``items`` (searched through
    groups too, so ``!aie.objectfifo<memref<16xi32>>`` works)."""
    items = tuple(items)
    for i, it in enumerate(items):
        if isinstance(it, Atom) and it.kind == "WORD" and it.text == "memref" and i + 1 < len(items) \
                and isinstance(items[i + 1], Group) and items[i + 1].kind == "<":
            return _shape(items[i + 1])
        if isinstance(it, Group):
            try:
                return memref_of(it.items)
            except Unreadable:
                pass
    raise Unreadable("expected a memref type")


def _shape(g: Group) -> tuple[tuple[int, ...], int]:
    shape, element = _shape_and_element(g)
    return shape, element_bits(element)


def _shape_and_element(g: Group) -> tuple[tuple[int, ...], str]:
    """``16x8xi32`` is lexed as INT 16 and WORD x8xi32: join the first entry's texts and split at 'x'."""
    first = split(g.items)[0]
    text = "".join(str(i) for i in first if isinstance(i, Atom))
    parts = text.split("x")
    if not parts or any(not p.isdigit() for p in parts[:-1]):
        raise Unreadable(f"memref<{text}>: only static shapes are read")
    return tuple(int(p) for p in parts[:-1]), parts[-1]


def call_memrefs(op) -> list[tuple[tuple[int, ...], str]]:
    """(shape, element type name) of each memref argument of a ``func.call`` (its types after
    ``:``), in order; scalars and memrefs of unknown shape are left out."""
    items = list(op.items)
    colon = next((i for i, it in enumerate(items) if isinstance(it, Atom) and it.kind == "COLON"), None)
    if colon is None or colon + 1 >= len(items) or not isinstance(items[colon + 1], Group):
        return []
    out = []
    for entry in split(items[colon + 1].items):
        for i, it in enumerate(entry[:-1]):
            if isinstance(it, Atom) and it.text == "memref" and isinstance(entry[i + 1], Group):
                try:
                    out.append(_shape_and_element(entry[i + 1]))
                except Unreadable:
                    pass
                break
    return out


def memref_bytes(shape: tuple[int, ...], bits: int) -> int:
    return prod(shape) * bits // 8
