"""A profile of ONNX nodes (AI Analyzer, plain ``op,measured_s``, onnx-benchmark's whole-model
latency) against ``fastsim.onnx.simulate_onnx`` of the same model: rows are matched to ops by the
node names both keep, with every non-exact match said (renamed, split, fused) and every row that
could be several ops left out as ambiguous rather than guessed."""
from __future__ import annotations

import re
from collections import Counter

from ..arch import Arch
from ..onnx import simulate_onnx
from ..onnx.read import read_model
from .compare import HINTS, Comparison, Pair, refuse_kinds
from .profile import Profile, Row, bad

DECORATION = re.compile(r"(_Duplicated)?(#\d+)?$")  # AI Analyzer's marks of an instance split in copies


def node_owners(m, op_names: set[str]) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """ONNX node name -> the fastsim op that runs it: the op of that name, or (a node fastsim folds:
    BatchNormalization into its conv, views, Q/DQ) the one op its non-constant inputs come from.
    A folded node reading several ops' outputs is ambiguous: name -> those ops."""
    owner, ambiguous, tensor_op, seen = {}, {}, {}, Counter()
    for node in m.nodes:
        if not node.name:
            continue
        seen[node.name] += 1
        name = node.name if seen[node.name] == 1 else f"{node.name}#{seen[node.name]}"
        if name in op_names:
            ops = (name,)
        else:
            ops = tuple(sorted({tensor_op[x] for x in node.input if x in tensor_op}))
        if len(ops) == 1:
            owner[name] = ops[0]
        elif len(ops) > 1:
            ambiguous[name] = ops
        for out in node.output:
            if len(ops) == 1:
                tensor_op[out] = ops[0]
    return owner, ambiguous


def candidates(name: str) -> list[tuple[str, str]]:
    """(node name, match) to try for a profile row's name: itself, without its tool's decorations,
    and without a ``node_`` prefix as well."""
    stripped = DECORATION.sub("", name)
    out = [(name, "exact"), (stripped, "renamed")]
    if stripped.startswith("node_"):
        out.append((stripped[len("node_"):], "renamed"))
    return out


def place(rows, owner, ambiguous, aliases) -> tuple[dict[str, list], list[str], list[str]]:
    """op -> [(row, match)], and the rows left unmatched or ambiguous (each with why)."""
    placed: dict[str, list] = {}
    unmatched, unclear = [], []
    for r in rows:
        hit = None
        if r.name in aliases:
            hit = (aliases[r.name], "given")
        for node, match in ([] if hit else candidates(r.name)):
            if node in ambiguous:
                unclear.append(f"{r.name}@{r.where}: node {node} reads the outputs of {', '.join(ambiguous[node])}; "
                               f"say which with --match {r.name}=OP")
                hit = ()
                break
            if node in owner:
                hit = (owner[node], "fused" if owner[node] != node else match)
                break
        if hit is None:
            unmatched.append(f"{r.name}@{r.where}: no ONNX node of that name runs in fastsim's graph")
        elif hit:
            placed.setdefault(hit[0], []).append((r, hit[1]))
    return placed, unmatched, unclear


def compare_onnx(profile: Profile, model, arch: Arch, *, dims: dict[str, int] | None = None,
                 aliases: dict[str, str] | None = None, **simulate) -> Comparison:
    """``profile`` (rows of kind op, or a whole-model figure) against one simulated inference of
    ``model`` (a path or ModelProto) on ``arch``; ``simulate``: ``simulate_onnx``'s options.
    ``aliases``: profile row name -> fastsim op name, for the rows the names cannot place."""
    refuse_kinds(profile, ("op", "model"), "an ONNX comparison", HINTS)
    m = read_model(model, dims)
    ds = simulate_onnx(m, arch, **simulate)
    names = [str(x) for x in ds.op_name.values]
    aliases = dict(aliases or {})
    for row_name, op in aliases.items():
        if op not in names:
            raise bad(profile.path, 0, f"--match {row_name}", op, f"no such op in fastsim's graph of {m.name}")
    clock, source = (profile.clock_hz, "the profile's clock_freq_mhz") if profile.clock_hz else (
        arch.clock_hz, f"assumption: {arch.name}'s clock (the profile states none)")
    owner, ambiguous = node_owners(m, set(names))
    rows = [r for r in profile.rows if r.kind == "op"]
    placed, unmatched, unclear = place(rows, owner, ambiguous, aliases)
    pairs = [_pair(names[i], placed[names[i]], ds, i, clock) for i in range(len(names)) if names[i] in placed]
    unmeasured = tuple(n for n in names if n not in placed) if rows else ()
    whole, notes = _whole(profile, rows, ds, clock, pairs)
    return Comparison(m.name, profile.path, profile.fmt, tuple(pairs), clock, source, whole, tuple(unmatched),
                      tuple(unclear), unmeasured, profile.notes + notes)


def _pair(name: str, got: list[tuple[Row, str]], ds, i: int, clock: float) -> Pair:
    matches = {m for _, m in got}
    match = ("fused" if "fused" in matches else "given" if "given" in matches else "split" if len(got) > 1
             else got[0][1])
    note = ""
    if match == "fused":
        note = "runs inside it: " + ", ".join(r.name for r, m in got if m == "fused")
    elif match == "split":
        note = f"{len(got)} profile rows summed"
    return Pair(name, sum(r.seconds_at(clock) * r.count for r, _ in got), float(ds.op_seconds.values[i]), match,
                str(ds.op_class.values[i]), str(ds.bound_by.values[i]), tuple(f"{r.name}@{r.where}" for r, _ in got),
                note)


def _whole(profile: Profile, rows: list[Row], ds, clock: float, pairs: list[Pair]):
    """The whole run (measured total against simulated total) and, where the profile has both a
    total and op rows, the time between ops (dispatch, reloads) as a pair of its own."""
    model = [r for r in profile.rows if r.kind == "model"]
    total = model[0].seconds if model else profile.total_seconds
    if total is None:
        return None, ()
    host_s = float(ds.get("host_seconds", 0.0))
    npu = profile.total_scope == "npu" and not model
    sim_total = float(ds.total_seconds) - (float(ds.dispatch_seconds) + host_s if npu else 0.0)
    whole = Pair("(whole run)", total, sim_total, "whole", "whole", "", (f"{profile.path}",),
                 "NPU time: host dispatch excluded on both sides" if npu else "host-timed: dispatch included")
    if not rows:
        return whole, ()
    between = total - sum(r.seconds_at(clock) * r.count for r in rows)
    if between < 0:
        return whole, (f"the op rows sum to more than the whole run's {total:.3g} s (they overlap): no "
                       "between-ops pair",)
    sim_between = max(0.0, sim_total - float(ds.op_seconds.sum()) + (host_s if npu else 0.0))  # no rounding below 0
    what = "between_ops" if npu else "dispatch"
    pairs.append(Pair("(between ops)", between, sim_between, "residual", what, what, (),
                      "whole run minus every op row: " + ("weight preloads, program reloads, gaps" if npu else
                                                           "host dispatch, preloads, reloads, gaps")))
    return whole, ()
