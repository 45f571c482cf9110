"""MLIR's textual form read with a lark grammar into a tree of operations.

The grammar covers MLIR's op syntax in general, not one dialect: an operation is an optional list
of results, an op name and a sequence of items (values, symbols, numbers, strings, words, types
and attributes, bracketed groups, regions). Statements end at a newline outside brackets, which is
how ``mlir-opt`` and IRON print them, so a region is a ``{`` that ends its line and an attribute
dictionary is a ``{`` that does not, unless an op name follows it (a region on one line, whose
ops are split where one ends and the next begins). What the items mean is up to the reader of each op
(``fastsim.mlir.ops``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput

from ..errors import ConfigError

GRAMMAR = r"""
start: _NL? (_stmt _NL)* _stmt?

_stmt: op | label | alias
op: [results "="] opname item*
results: VALUE (":" INT)? ("," VALUE (":" INT)?)*
opname: DOTTED | MODULE | STRING
label: BLOCK ("(" [item+] ")")? ":"
alias: (HASHID | BANGID) "=" item+

?item: atom | paren | square | angle | brace | region
atom: VALUE | SYMBOL | BLOCK | INT | FLOAT | STRING | WORD | DOTTED | MODULE | HASHID | BANGID
    | COLON | COMMA | EQ | ARROW | STAR | PLUS | MINUS | QMARK | LE | GE
paren: "(" item* ")"
square: "[" item* "]"
angle: LANGLE item* ">"
brace: "{" (item+ _NL?)? "}"
region: "{" _NL (_stmt _NL)* "}"

MODULE.2: "module"
DOTTED: /[A-Za-z_][\w$]*(\.[\w$]+)+/
WORD: /[A-Za-z_][\w$]*/
VALUE: /%[\w.$-]+(#\d+)?/
SYMBOL: /@[\w.$-]+/ | /@"[^"]*"/
BLOCK: /\^[\w.$-]+/
HASHID: /#[\w.$-]+/
BANGID: /![\w.$-]+/
INT: /0x[0-9a-fA-F]+/ | /\d+(?![\d.eE])/
FLOAT: /\d+\.\d*([eE][-+]?\d+)?/ | /\d+[eE][-+]?\d+/
STRING: /"(\\.|[^"\\])*"/
COLON: ":"
COMMA: ","
EQ: "="
ARROW: "->"
STAR: "*"
PLUS: "+"
MINUS: "-"
QMARK: "?"
LE: "<="
GE: ">="
LANGLE: "<"
_NL: /\n/
COMMENT: /\/\/[^\n]*/
WS: /[ \t\r\f]+/
%ignore WS
%ignore COMMENT
"""


@dataclass(frozen=True)
class Atom:
    """One token: ``kind`` is its terminal (VALUE, SYMBOL, INT, WORD, ...), ``text`` as written."""

    kind: str
    text: str
    line: int

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Group:
    """Items in brackets: ``kind`` is '(', '[', '<' or '{' (an attribute dictionary or a set)."""

    kind: str
    items: tuple
    line: int

    def __str__(self) -> str:
        close = {"(": ")", "[": "]", "<": ">", "{": "}"}[self.kind]
        return self.kind + " ".join(str(i) for i in self.items) + close


@dataclass(frozen=True)
class Block:
    """A region's block: its label (``^bb1``, '' for the entry block) and operations."""

    label: str
    ops: tuple
    args: tuple = ()  # the SSA names its label binds (``^bb1(%x: i32):``)


@dataclass(frozen=True)
class Region:
    blocks: tuple
    line: int

    @property
    def ops(self) -> tuple:
        """The operations of every block, in order (most regions have one block)."""
        return tuple(op for b in self.blocks for op in b.ops)

    def __str__(self) -> str:
        return "{...}"


@dataclass(frozen=True)
class Op:
    """One operation: ``results`` (SSA names), ``name`` (``aie.tile``), ``items`` after the name
    (atoms, groups and regions, in order) and the source ``line``."""

    name: str
    results: tuple
    items: tuple
    line: int
    regions: tuple = field(default=())

    def __post_init__(self):
        object.__setattr__(self, "regions", tuple(i for i in self.items if isinstance(i, Region)))


@dataclass(frozen=True)
class Alias:
    """``#map = affine_map<...>`` or ``!t = type``: a name for an attribute or a type."""

    name: str
    items: tuple
    line: int


class _Statements:
    """Post-lexer: where statements end. Newlines inside ( [ < end no statement, so they are
    dropped there; inside { and at the top level they end one, except where the statement plainly
    goes on: after a comma or '=', or before a token no statement starts with (':', '->', '{',
    '[', ',' or a word such as an attribute's name).

    A ``{`` whose next token is an op name (a dotted name not followed by ``=``, ``,`` or ``}``,
    as an attribute's name would be) opens a region written on one line
    (``aie.packet_flow(1) { aie.packet_source<...> aie.packet_dest<...> }``): its statements are
    split where the grammar says one op ends and the next begins, a dotted name after a complete
    item, as if each stood on its own line."""

    always_accept = ("_NL",)
    GOES_ON_BEFORE = {"COLON", "ARROW", "LBRACE", "LSQB", "COMMA", "WORD"}
    GOES_ON_AFTER = {"COMMA", "EQ"}
    # tokens after which an item is complete, so that a dotted name starts the next op
    ENDS_ITEM = {"RPAR", "RSQB", "MORETHAN", "RBRACE", "INT", "FLOAT", "VALUE", "SYMBOL", "STRING", "WORD",
                 "HASHID", "BANGID", "DOTTED"}

    def process(self, stream):
        toks = list(stream)
        stack: list[str] = []  # open brackets; "r" marks a region written on one line
        closing = {")": "(", "]": "[", ">": "<", "}": "{"}
        held = None  # a newline waiting to see the token after it
        last = None
        for k, tok in enumerate(toks):
            t = tok.type
            if t == "_NL":
                if stack and stack[-1] not in ("{", "r"):
                    continue
                if held is None and last not in self.GOES_ON_AFTER:
                    held = tok
                continue
            if held is not None:
                if t not in self.GOES_ON_BEFORE:
                    yield held
                    last = "_NL"
                held = None
            if stack and stack[-1] == "r" and last != "_NL":
                if t == "DOTTED" and last in self.ENDS_ITEM or t == "RBRACE":
                    yield Token.new_borrow_pos("_NL", "\n", tok)
            if t == "LBRACE":
                stack.append("r" if _opens_region(toks, k) else "{")
            elif t in ("LPAR", "LSQB", "LANGLE"):
                stack.append(tok.value)
            elif t in ("RPAR", "RSQB", "MORETHAN", "RBRACE"):
                if stack and stack[-1] in (closing[tok.value], "r" if t == "RBRACE" else ""):
                    stack.pop()
            last = t
            yield tok
            if t == "LBRACE" and stack[-1] == "r":
                yield Token.new_borrow_pos("_NL", "\n", tok)
                last = "_NL"
        if held is not None:
            yield held


def _opens_region(toks: list, k: int) -> bool:
    """Whether the ``{`` at ``toks[k]`` opens a region on its own line: an op name follows it
    (not an attribute's name, which ``=``, ``,`` or ``}`` follows)."""
    nxt = toks[k + 1] if k + 1 < len(toks) else None
    after = toks[k + 2] if k + 2 < len(toks) else None
    return (nxt is not None and nxt.type == "DOTTED" and after is not None
            and after.type not in ("EQ", "COMMA", "RBRACE", "_NL"))


class _Build(Transformer):
    """The parse tree into Op, Group, Region, Block and Atom values."""

    def __default_token__(self, tok: Token):
        return tok

    @v_args(meta=True)
    def start(self, meta, stmts):
        return _blocks(stmts, getattr(meta, "line", 1))[0].ops

    def results(self, toks):
        return tuple(t.value for t in toks if t.type == "VALUE")

    def opname(self, toks):
        return toks[0]

    @v_args(meta=True)
    def op(self, meta, children):
        results, name, *items = children
        text = name.value.strip('"') if name.type == "STRING" else name.value
        return Op(text, results or (), tuple(items), name.line)

    @v_args(meta=True)
    def label(self, meta, children):
        items = [_item(c) for c in children[1:] if c is not None]
        args = tuple(a.text for a, b in zip(items, items[1:])
                     if isinstance(a, Atom) and a.kind == "VALUE" and isinstance(b, Atom) and b.kind == "COLON")
        return ("label", children[0].value, args)

    def alias(self, children):
        name, *items = children
        return Alias(name.value, tuple(_item(i) for i in items), name.line)

    def atom(self, toks):
        t = toks[0]
        return Atom(t.type, t.value, t.line)

    @v_args(meta=True)
    def paren(self, meta, items):
        return Group("(", tuple(items), meta.line if not meta.empty else 0)

    @v_args(meta=True)
    def square(self, meta, items):
        return Group("[", tuple(items), meta.line if not meta.empty else 0)

    @v_args(meta=True)
    def angle(self, meta, items):
        return Group("<", tuple(items[1:]), items[0].line)

    @v_args(meta=True)
    def brace(self, meta, items):
        return Group("{", tuple(items), meta.line if not meta.empty else 0)

    @v_args(meta=True)
    def region(self, meta, stmts):
        line = meta.line if not meta.empty else 0
        return Region(_blocks(stmts, line), line)


def _item(i):
    return Atom(i.type, i.value, i.line) if isinstance(i, Token) else i


def _blocks(stmts, line: int) -> tuple:
    """Split a region's statements into blocks at their labels."""
    blocks, label, args, ops = [], "", (), []
    for s in stmts:
        if isinstance(s, tuple) and s and s[0] == "label":
            if ops or label:
                blocks.append(Block(label, tuple(ops), args))
            label, args, ops = s[1], s[2], []
        elif isinstance(s, Op):
            ops.append(s)
    blocks.append(Block(label, tuple(ops), args))
    return tuple(blocks)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", lexer="basic", postlex=_Statements(), propagate_positions=True,
                maybe_placeholders=True)


def parse(text: str, source: str = "<mlir>") -> tuple:
    """The top-level operations of an MLIR file (usually one ``module``). A syntax error is a
    ConfigError naming the line and column and what was expected there; a text whose first token
    already starts no MLIR statement (C, Python, JSON, a binary file) is "not an MLIR text file"."""
    if "\x00" in text:
        raise ConfigError([f"{source}: not an MLIR text file (it holds NUL bytes: a binary file)"], "MLIR file")
    try:
        tree = _parser().parse(text if text.endswith("\n") else text + "\n")
    except UnexpectedInput as e:
        first = _first_token(text)
        if first is not None and getattr(e, "pos_in_stream", None) is not None and e.pos_in_stream <= first[0]:
            raise ConfigError([f"{source}: not an MLIR text file (it starts with {first[1]!r}, which starts no "
                               "MLIR operation)"], "MLIR file") from None
        expected = sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])
        shown = ", ".join(expected[:8]) + (", ..." if len(expected) > 8 else "")
        context = e.get_context(text, 40).rstrip()
        raise ConfigError([f"{source}:{e.line}:{e.column}: MLIR syntax error"
                           + (f" (expected one of {shown})" if shown else "") + f"\n{context}"],
                          "MLIR file") from None
    return _Build().transform(tree)


def _first_token(text: str) -> tuple[int, str] | None:
    """(offset, first line from there) of the first character outside whitespace and ``//``
    comments; None for a text of only those."""
    at = 0
    while at < len(text):
        if text[at].isspace():
            at += 1
        elif text.startswith("//", at):
            end = text.find("\n", at)
            at = len(text) if end < 0 else end
        else:
            return at, text[at:].split("\n", 1)[0].strip()[:40]
    return None


def atoms(items):
    """Atoms among ``items`` and inside their groups (not regions: their ops are walked on their own)."""
    for it in items:
        if isinstance(it, Atom):
            yield it
        elif isinstance(it, Group):
            yield from atoms(it.items)
