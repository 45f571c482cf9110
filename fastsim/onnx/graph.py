"""An ONNX model as an ``OpGraph``: every node lowered by its type (``nodes.py``), producer edges
from tensor names (through views, Q/DQ and folded nodes), one layer index per op (a dispatch cut
may fall between any two ops), element bytes from the tensors' types (QDQ: the quantized type),
and the ops of ``cpu_fallback`` types run on the host at given times.

Nodes whose inputs are all constants (initializers, Constant, Shape, and what is computed from
them only: shape arithmetic, weights dequantized or reshaped at load) are folded: no op.
"""
from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from ..arch import Arch, NPU2
from ..errors import ConfigError, Problems
from ..graph import CONV, MAC_KINDS, MATMUL, VECTOR, Op, OpGraph, Operand
from ..llm.transformer import VectorCosts
from . import nodes
from .read import ELEM_BYTES, OnnxModel, read_model


class Source(NamedTuple):
    """What a tensor name stands for on the array."""

    ops: tuple[int, ...] = ()  # the ops whose outputs it is made of (its readers' producer edges)
    elem_bytes: float = 2.0
    static: bool = False  # a constant: folded at load, read as a weight
    owner: int | None = None  # the one op that writes it (through views), if one


@dataclass(frozen=True)
class OnnxGraph:
    """A model's op graph, the dtype its MAC ops run in (int8 when every conv and matmul reads
    int8 operands, else bf16), each op's ONNX type and the ops run on the host (op index ->
    seconds per run, given)."""

    name: str
    graph: OpGraph
    compute_dtype: str
    op_types: tuple[str, ...]
    host: dict


def build_graph(model, arch: Arch = NPU2, *, dims: dict[str, int] | None = None, cpu_fallback=(),
                host_seconds=None, fold_epilogues: bool = False, costs: VectorCosts | None = None) -> OnnxGraph:
    """The op graph of ``model`` (a path, a ``ModelProto`` or a read ``OnnxModel``).

    ``dims`` sets the inputs' symbolic dimensions by name. ``cpu_fallback`` names op types that
    run on the host CPU, each op taking ``host_seconds[type]`` seconds (a dict, or a TOML file of
    ``TYPE = SECONDS`` at the top level or under ``[host_seconds]``): an input, never simulated.
    ``fold_epilogues``: a Relu, Clip or LeakyRelu that alone reads a conv's, matmul's or vector
    op's output runs inside that op (free in a conv or matmul kernel, its element-wise cost added
    to a vector op's), as fused deployments run them; otherwise each is its own op through DDR.
    Vector ops cost ``costs`` per element (default: the arch's). Every problem of the model (each
    unsupported op type with its count, each node that cannot be lowered) is one ConfigError."""
    m = model if isinstance(model, OnnxModel) else read_model(model, dims)
    fallback = _host_times(tuple(cpu_fallback), host_seconds, m)
    b = Lowering(m, costs or VectorCosts.of(arch), fallback, fold_epilogues)
    b.run()
    return b.finish()


def _host_times(types: tuple[str, ...], given, m: OnnxModel) -> dict[str, float]:
    if isinstance(given, (str, Path)):
        if not Path(given).is_file():
            raise ConfigError([f"host_seconds = {str(given)!r}: no such TOML file"], "cpu fallback")
        try:
            doc = tomllib.loads(Path(given).read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise ConfigError([f"host_seconds = {str(given)!r}: not readable TOML ({e})"], "cpu fallback") from None
        if "host_seconds" in doc:  # the [host_seconds] table and nothing beside it
            p = Problems(f"host seconds {given}")
            p.unknown_keys("", doc, ("host_seconds",))
            p.raise_if_any()
        given = doc.get("host_seconds", doc)
    given = dict(given or {})
    present = Counter(n.op_type for n in m.nodes)
    problems = [f"cpu_fallback[{t}]: no {t} node in the model" for t in types if t not in present]
    problems += [f"host_seconds[{t}]: missing; give the seconds one {t} takes on the host (measured: fastsim "
                 "never guesses a host time)" for t in types if t not in given]
    problems += [f"host_seconds[{t}] = {given[t]!r}: must be seconds >= 0" for t in types if t in given and
                 not (isinstance(given[t], (int, float)) and not isinstance(given[t], bool) and given[t] >= 0)]
    problems += [f"host_seconds[{t}]: {t} is not in cpu_fallback" for t in sorted(set(given) - set(types))]
    if problems:
        raise ConfigError(problems, "cpu fallback")
    return {t: float(given[t]) for t in types}


class Lowering:
    """The nodes of one model lowered in order (``nodes.HANDLERS``); ``finish`` makes the graph."""

    def __init__(self, m: OnnxModel, costs: VectorCosts, fallback: dict[str, float], fold_epilogues: bool = False):
        self.m, self.costs, self.fallback, self.opset = m, costs, fallback, m.opset
        self.fold_epilogues = fold_epilogues
        self.ops, self.producers, self.op_types, self.host = [], [], [], {}
        self.requantized: dict[int, float] = {}
        self.written: list[float] = []  # bytes per element of each op's output tensor
        self.problems: list[str] = []
        self.unsupported: Counter = Counter()
        self.names: Counter = Counter()
        self.sources = {x: Source(elem_bytes=self._bytes(x)) for x in m.inputs}
        self.sources.update({x: Source(elem_bytes=self._bytes(x), static=True) for x in m.initializers})
        self.reader_count = Counter(x for n in m.nodes for x in n.input if x)

    @property
    def layer(self) -> int:
        return len(self.ops)

    # ---- what handlers read -------------------------------------------------------------------
    def shape(self, name: str) -> tuple[int, ...]:
        if name not in self.m.tensors:
            raise nodes.NodeProblem(f"tensor {name!r}: shape unknown after shape inference (set the inputs' "
                                    "dims, or give the file its value_info)")
        return self.m.tensors[name].shape

    def tensor_type(self, name: str) -> int | None:
        info = self.m.tensors.get(name)
        return info.elem_type if info else None

    def _bytes(self, name: str) -> float:
        return ELEM_BYTES.get(self.tensor_type(name), 2.0)

    def source(self, name: str) -> Source:
        if name not in self.sources:
            raise nodes.NodeProblem(f"tensor {name!r}: read before any node writes it")
        return self.sources[name]

    def operand(self, name: str) -> Operand:
        return Operand("activations", self.source(name).elem_bytes)

    def out_bytes(self, node) -> float:
        return self._bytes(node.output[0])

    def readers(self, name: str) -> int:
        return self.reader_count[name]

    def name(self, node) -> str:
        base = node.name or f"{node.op_type}_{self.layer}"
        self.names[base] += 1
        return base if self.names[base] == 1 else f"{base}#{self.names[base]}"

    @staticmethod
    def merged(srcs: list[Source]) -> Source:
        ops = tuple(sorted({i for s in srcs for i in s.ops}))
        return Source(ops, max((s.elem_bytes for s in srcs), default=2.0), all(s.static for s in srcs))

    # ---- what handlers write ------------------------------------------------------------------
    def add(self, node, op: Op, *inputs: str, out_bytes: float | None = None) -> None:
        """Append ``op`` reading ``inputs``; its output tensor holds ``out_bytes`` per element
        (default: the op's Y operand's; a pool's Y is scaled to its extent, its tensor is not)."""
        edges = sorted({i for x in inputs if x for i in self.source(x).ops})
        self.producers.append(tuple(edges))
        self.op_types.append(node.op_type)
        self.ops.append(op)
        i = len(self.ops) - 1
        self.written.append(out_bytes or op.y.elem_bytes)
        self.sources[node.output[0]] = Source((i,), self.written[i], False, i)

    def alias(self, name: str, src: Source) -> None:
        self.sources[name] = src

    def requantize(self, src: Source, nbytes: float) -> None:
        if src.owner is not None:
            self.requantized[src.owner] = nbytes

    # ---- the walk -----------------------------------------------------------------------------
    def run(self) -> None:
        for node in self.m.nodes:
            inputs = [x for x in node.input if x]
            try:
                if node.domain not in ("", "ai.onnx"):  # a custom op that shares a standard name is not it
                    self.unsupported[f"{node.domain}.{node.op_type}"] += 1
                    self.skip(node)
                elif node.op_type in self.fallback:
                    self.on_host(node)
                elif node.op_type in ("Shape", "Size") or all(self.source(x).static for x in inputs):
                    self.fold(node, inputs)
                elif node.op_type in nodes.HANDLERS:
                    nodes.HANDLERS[node.op_type](self, node)
                else:
                    self.unsupported[node.op_type] += 1
                    self.skip(node)
            except nodes.NodeProblem as e:
                self.problems.append(f"{node.op_type} node {node.name or '(unnamed)'}: {e}")
                self.skip(node)
            except (ArithmeticError, IndexError, KeyError, TypeError, ValueError) as e:  # no rule checked this
                self.problems.append(f"{node.op_type} node {node.name or '(unnamed)'}: cannot lower its attributes "
                                     f"or shapes ({type(e).__name__}: {e})")
                self.skip(node)

    def fold(self, node, inputs: list[str]) -> None:
        keep = node.op_type in nodes.PASS_BYTES and inputs
        for y in node.output:
            if y:
                self.sources[y] = Source(elem_bytes=self.source(inputs[0]).elem_bytes if keep else self._bytes(y),
                                         static=True)

    def skip(self, node) -> None:
        for y in node.output:
            if y:
                self.sources.setdefault(y, Source(elem_bytes=self._bytes(y)))

    def on_host(self, node) -> None:
        """A placeholder op the host runs (``fastsim.llm.host`` cuts its edges and times it)."""
        y = node.output[0] if node.output else ""
        op = Op(self.name(node), "elementwise", self.layer, VECTOR, 1, 1, 1, Operand("activations", 2.0),
                y=Operand("activations", self._bytes(y)))
        self.host[self.layer] = self.fallback[node.op_type]
        self.add(node, op, *[x for x in node.input if x and x in self.sources])
        for extra in node.output[1:]:
            if extra:
                self.sources[extra] = self.sources[y]

    # ---- the graph ----------------------------------------------------------------------------
    def finish(self) -> OnnxGraph:
        problems = [f"op type {t}: {n} node(s), not supported ({nodes.UNSUPPORTED_NOTES.get(t, 'no lowering')}); "
                    f"run them on the host with cpu_fallback=({t!r},) and their host seconds"
                    for t, n in sorted(self.unsupported.items())]
        problems += self.problems
        if not self.ops and not problems:
            problems.append("no node computes anything on the array")
        if problems:
            raise ConfigError(problems, f"onnx model {self.m.name}")
        ops = [replace(op, y=replace(op.y, elem_bytes=op.y.elem_bytes * self.requantized[i] / self.written[i]))
               if i in self.requantized else op for i, op in enumerate(self.ops)]
        macs = [op for op in ops if op.kind in MAC_KINDS]
        int8 = bool(macs) and all(op.x.elem_bytes <= 1 and op.w.elem_bytes <= 1 for op in macs)
        ops = self.casts(ops, int8)
        ops = self.online_softmax(ops)
        batch = self.batch()
        rows = self.token_rows(ops, batch)
        graph = OpGraph(tuple(ops), tuple(self.producers), batch, max(1, rows // batch),
                        live_bytes(ops) / max(1, rows))
        return OnnxGraph(self.m.name, graph, "int8" if int8 else "bf16", tuple(self.op_types), dict(self.host))

    def casts(self, ops: list[Op], int8: bool) -> list[Op]:
        """A bf16 graph's matmuls over int8 (int4) weights dequantize them on the core."""
        if int8:
            return ops
        cost = {1.0: self.costs.dequant_cost(8), 0.5: self.costs.dequant_cost(4)}
        return [replace(op, cast_cycles_per_weight=cost[op.w.elem_bytes])
                if op.kind == MATMUL and op.w.kind == "weights" and op.w.elem_bytes in cost else op for op in ops]

    def online_softmax(self, ops: list[Op]) -> list[Op]:
        """A softmax read only by an attention matmul rescales that matmul's running output once
        per block of keys when run flash-style (as the transformer front end states)."""
        consumers = OpGraph(tuple(ops), tuple(self.producers)).consumers
        out = list(ops)
        for i, op in enumerate(ops):
            if op.op_class == "softmax" and len(consumers[i]) == 1 and ops[consumers[i][0]].op_class == "attention":
                out[i] = replace(op, online_rescale_cycles=self.costs.elementwise * ops[consumers[i][0]].n)
        return out

    def batch(self) -> int:
        """The first input's leading dimension (images or sequences per run)."""
        shapes = [self.m.tensors[x].shape for x in self.m.inputs if x in self.m.tensors]
        return shapes[0][0] if shapes and shapes[0] and shapes[0][0] > 0 else 1

    @staticmethod
    def token_rows(ops: list[Op], batch: int) -> int:
        """Rows of the weight matmuls (tokens of a transformer, images of a CNN's classifier): the
        most common M among them that the batch divides, else the batch."""
        ms = Counter(op.m for op in ops if op.op_class == "gemm" and op.w.kind == "weights" and op.m % batch == 0)
        return ms.most_common(1)[0][0] if ms else batch


def live_bytes(ops: list[Op]) -> float:
    """The most activation bytes one op reads and writes at once (what a chained dispatch keeps on
    chip between ops, at the least)."""
    def of(op: Op) -> float:
        if op.kind == CONV:
            g = op.conv
            return g.n * g.c * g.h * g.w * op.x.elem_bytes + op.m * op.n * op.y.elem_bytes
        if op.kind == VECTOR:
            return op.m * op.n * (op.x.elem_bytes * op.x_inputs + op.y.elem_bytes)
        w = op.k * op.n * op.w.elem_bytes if op.w.kind == "activations" else 0.0
        return op.repeat * (op.m * op.k * op.x.elem_bytes + w + op.m * op.n * op.y.elem_bytes)

    return max((of(op) for op in ops), default=0.0)


def macs(graph: OpGraph) -> int:
    return sum(op.macs for op in graph.ops)


