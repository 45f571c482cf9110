"""MLIR's textual form read with a lark grammar into a tree of operations.

The grammar covers MLIR's op syntax in general, not one dialect: an operation is an optional list
of results, an op name and a sequence of items (values, symbols, numbers, strings, words, types
and attributes, bracketed groups, regions). Statements end at a newline outside brackets, which is
how ``mlir-opt`` and IRON print them, so a region is a ``{`` that ends its line and an attribute
dictionary is a ``{`` that does not. What the items mean is up to the reader of each op
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
    '[', ',' or a word such as an attribute's name)."""

    always_accept = ("_NL",)
    GOES_ON_BEFORE = {"COLON", "ARROW", "LBRACE", "LSQB", "COMMA", "WORD"}
    GOES_ON_AFTER = {"COMMA", "EQ"}

    def process(self, stream):
        stack: list[str] = []
        closing = {")": "(", "]": "[", ">": "<", "}": "{"}
        held = None  # a newline waiting to see the token after it
        last = None
        for tok in stream:
            t = tok.type
            if t == "_NL":
                if stack and stack[-1] != "{":
                    continue
                if held is None and last not in self.GOES_ON_AFTER:
                    held = tok
                continue
            if held is not None:
                if t not in self.GOES_ON_BEFORE:
                    yield held
                held = None
            if t in ("LPAR", "LSQB", "LANGLE", "LBRACE"):
                stack.append(tok.value)
            elif t in ("RPAR", "RSQB", "MORETHAN", "RBRACE"):
                if stack and stack[-1] == closing[tok.value]:
                    stack.pop()
            last = t
            yield tok
        if held is not None:
            yield held


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
        return ("label", children[0].value)

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
    blocks, label, ops = [], "", []
    for s in stmts:
        if isinstance(s, tuple) and s and s[0] == "label":
            if ops or label:
                blocks.append(Block(label, tuple(ops)))
            label, ops = s[1], []
        elif isinstance(s, Op):
            ops.append(s)
    blocks.append(Block(label, tuple(ops)))
    return tuple(blocks)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", lexer="basic", postlex=_Statements(), propagate_positions=True,
                maybe_placeholders=True)


def parse(text: str, source: str = "<mlir>") -> tuple:
    """The top-level operations of an MLIR file (usually one ``module``). A syntax error is a
    ConfigError naming the line and column and what was expected there."""
    try:
        tree = _parser().parse(text if text.endswith("\n") else text + "\n")
    except UnexpectedInput as e:
        expected = sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])
        shown = ", ".join(expected[:8]) + (", ..." if len(expected) > 8 else "")
        context = e.get_context(text, 40).rstrip()
        raise ConfigError([f"{source}:{e.line}:{e.column}: MLIR syntax error"
                           + (f" (expected one of {shown})" if shown else "") + f"\n{context}"],
                          "MLIR file") from None
    return _Build().transform(tree)
