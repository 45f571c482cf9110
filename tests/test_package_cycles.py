"""Inside a room (a package), modules import each other in one direction too: a circle between two
modules of one package means neither can be read, tested or moved without the other.

Imports are read as in ``tests/test_layers.py`` (inside functions too). A package's ``__init__``
re-exports its modules and so imports them all; it is left out of the circles it would close."""
from __future__ import annotations

from test_layers import import_edges, strongly_connected

# Known circles in files being rewritten now, each to be removed with the edit that ends it; a new
# circle fails, and so does an entry here whose circle is gone.
PENDING: set[frozenset[str]] = set()  # none at present


def module_edges() -> set[tuple[str, str]]:
    """Edges between two modules of one package, neither of them the package itself."""
    def package(m: str) -> str:
        return m.rpartition(".")[0]

    return {(a, b) for a, b in import_edges()
            if package(a) == package(b) and a.count(".") >= 2}


def test_package_cycles__the_walk_sees_modules_of_one_package():
    edges = module_edges()
    assert ("fastsim.llm.forward", "fastsim.llm.blocks") in edges
    assert ("fastsim.mapping.search", "fastsim.mapping.search_store") in edges


def circles() -> set[frozenset[str]]:
    graph: dict[str, set[str]] = {}
    for a, b in module_edges():
        graph.setdefault(a, set()).add(b)
    return {frozenset(c) for c in strongly_connected(graph) if len(c) > 1}


def test_package_cycles__no_circle_inside_a_package():
    new = circles() - PENDING
    assert not new, "modules of one package import each other: " + "; ".join(" <-> ".join(sorted(c)) for c in new)


def test_package_cycles__pending_circles_still_exist():
    gone = PENDING - circles()
    assert not gone, f"these circles are gone: remove them from PENDING in {__file__}: {[sorted(c) for c in gone]}"
