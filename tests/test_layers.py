"""Imports flow one way: down the layer list of docs/architecture.md, never in a cycle between rooms.

A room is ``fastsim/__init__.py`` (the facade, named ``fastsim`` here), one top-level module of
``fastsim`` or one of its subpackages; ``kernels/`` (installed as ``fastsim.kernels``) is the room
``kernels``. The import graph is read with ``ast`` from every source file, imports inside functions
included, so a lazy import counts as much as one at the top.

How an import names a module: ``import a.b`` imports ``a.b``; ``from p import x`` imports the
module ``p.x`` when that is a module, else the module ``p``. So ``from . import result_cache`` inside
``fastsim`` imports ``fastsim.result_cache``, not the facade, while ``from .. import __version__``
or ``import fastsim`` import the facade.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Lowest first; a room may import rooms of its own layer or lower ones, never a higher one.
LAYERS = [
    ("kernels", {"kernels"}),
    ("hardware", {"errors", "dtypes", "arch", "gc_pause", "version", "settings"}),
    ("engine interface", {"design", "validate", "lower", "results", "report", "simulation", "cache",
                          "result_cache", "threads", "trace", "cost", "kernel_model", "systolic", "calls_done", "power"}),
    ("graph", {"graph"}),
    ("mapping", {"mapping"}),
    ("evaluation", {"evaluation"}),
    ("front ends", {"workloads", "llm", "mlir", "onnx"}),
    ("figures", {"figures"}),
    ("studies", {"studies"}),
    ("calibration", {"calibration", "calibration_split", "profiles"}),
    ("sweeping", {"sweeping"}),
    ("plot", {"plot"}),
    ("cli", {"cli"}),
    ("facade", {"fastsim"}),
]

# Known bad edges (importer, imported) in files that are being rewritten now; each is to be removed
# with the edit that ends it (docs/architecture.md, "Pending"). A new bad edge fails the tests, and
# so does an entry here whose edge is gone.
PENDING: set[tuple[str, str]] = set()  # none at present


def source_modules() -> dict[str, tuple[Path, bool]]:
    """Every module of fastsim and its kernels: name -> (file, is a package's __init__)."""
    modules = {}
    for top, prefix in ((ROOT / "fastsim", ["fastsim"]), (ROOT / "kernels", ["fastsim", "kernels"])):
        for path in sorted(top.rglob("*.py")):
            parts = prefix + list(path.relative_to(top).with_suffix("").parts)
            package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if package else parts)] = (path, package)
    return modules


def imported(module: str, source: str, package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``source`` (the text of ``module``) imports, itself excluded."""
    here = module.split(".") if package else module.split(".")[:-1]
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = here[:len(here) - node.level + 1] if node.level else []
            base = ".".join(parts + ([node.module] if node.module else []))
            names += [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:  # an attribute of a module names that module
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)
    return out


def declares_mapper(source: str) -> bool:
    """Whether a module assigns a top-level ``MAPPER``: ``fastsim.mapping.mappers`` imports it by
    discovery (``importlib``), an edge no import statement shows."""
    from fastsim.studies.registry import declares

    return declares(source, "MAPPER")


@functools.cache
def import_edges() -> frozenset[tuple[str, str]]:
    """Every (importer, imported) edge of the source tree: read once a session (the tree does not
    change while the tests run; this module's tests and tests/test_package_cycles.py share it),
    with the discovered imports of the mapper registry (each kind's module) and of the study
    registry (each study's module)."""
    from fastsim.studies.registry import declares

    modules = source_modules()
    known = set(modules)
    edges = {(m, target) for m, (path, package) in modules.items()
             for target in imported(m, path.read_text(), package, known)}
    edges |= {("fastsim.mapping.mappers", m) for m, (path, _) in modules.items()
              if m.startswith("fastsim.mapping.") and declares_mapper(path.read_text())}
    edges |= {("fastsim.studies.registry", m) for m, (path, _) in modules.items()  # the studies it finds
              if m.count(".") == 2 and m.startswith("fastsim.studies.") and declares(path.read_text())}
    return frozenset(edges)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "fastsim"


def layer_of(r: str) -> int | None:
    """Index of the layer of room ``r`` in LAYERS; None for a room in no layer (reported by
    test_layers__every_room_has_a_layer)."""
    return next((i for i, (_, rooms) in enumerate(LAYERS) if r in rooms), None)


def test_layers__resolves_relative_and_submodule_imports():
    known = {"fastsim", "fastsim.arch", "fastsim.cost", "fastsim.mapping", "fastsim.mapping.plan",
             "fastsim.kernels", "fastsim.kernels.systolic"}
    source = ("from . import arch\nfrom .. import __version__\nimport fastsim.kernels\n"
              "def f():\n    from ..cost import matmul_cycles\n    from fastsim.kernels import systolic as K\n")
    assert imported("fastsim.mapping.plan", source, False, known) == {
        "fastsim.mapping", "fastsim", "fastsim.kernels", "fastsim.cost", "fastsim.kernels.systolic"}
    assert imported("fastsim.mapping", "from . import plan\nfrom .plan import x\nfrom .. import arch", True,
                    known) == {"fastsim.mapping.plan", "fastsim.arch"}


def test_layers__the_walk_sees_imports_inside_functions():
    edges = import_edges()
    assert ("fastsim.plot", "fastsim.sweeping.store") in edges  # inside load_result
    assert ("fastsim.cost", "fastsim.kernels.systolic") in edges  # inside mesh_cycles


def test_layers__every_room_has_a_layer():
    listed = set().union(*(rooms for _, rooms in LAYERS))
    missing = sorted({room(m) for m in source_modules()} - listed)
    assert not missing, f"rooms in no layer of tests/test_layers.py LAYERS (and docs/architecture.md): {missing}"


def test_layers__imports_never_go_up_the_layer_list():
    bad = []
    for a, b in sorted(import_edges() - PENDING):
        if None not in (layer_of(room(a)), layer_of(room(b))) and layer_of(room(a)) < layer_of(room(b)):
            bad.append(f"{a} -> {b}: layer '{LAYERS[layer_of(room(a))][0]}' imports the higher layer "
                       f"'{LAYERS[layer_of(room(b))][0]}'")
    assert not bad, "imports up the layer list:\n" + "\n".join(bad)


def test_layers__no_cycles_between_rooms():
    edges = {(a, b) for a, b in import_edges() - PENDING if room(a) != room(b)}
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(room(a), set()).add(room(b))
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    shown = []
    for c in cycles:
        shown += [f"rooms {sorted(c)} import each other:"]
        shown += [f"  {a} -> {b}" for a, b in sorted(edges) if room(a) in c and room(b) in c]
    assert not cycles, "\n".join(shown)


def test_layers__docs_list_the_same_layers():
    """docs/architecture.md's layer table and LAYERS agree, row by row."""
    rows = [line.strip("|").split("|") for line in (ROOT / "docs" / "architecture.md").read_text().splitlines()
            if re.match(r"\| \d+ \|", line)]
    documented = [(label.strip(), {r for r in re.findall(r"`([^`]+)`", rooms) if "/" not in r})
                  for _, label, rooms in rows]
    assert documented == LAYERS


def test_layers__pending_edges_still_exist():
    gone = sorted(PENDING - import_edges())
    assert not gone, f"these edges are gone: remove them from PENDING in tests/test_layers.py: {gone}"


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph`` (node -> successors)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out
