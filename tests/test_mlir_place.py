"""``aie.logical_tile`` placement (fastsim.mlir.place) held to mlir-aie's own expectations.

mlir-aie tests its placer with FileCheck lines in the design files (``// CHECK-DAG: %[[CORE:.*]] =
aie.tile(0, 2)`` above a logical tile, ``// CHECK: aie.objectfifo @of(%[[SHIM]], {%[[CORE]]} ...``
over the FIFO that uses it). ``check_file`` reads those lines and checks fastsim's placement
against them, the way FileCheck checks ``aie-opt --aie-place-tiles``'s output: every positive
``aie.tile(c, r)`` line names a tile the design ends up with, no ``CHECK-NOT`` one does, an op
that uses bound tiles uses tiles at those coordinates, and an ``error:`` line is the placer's
error. The designs in tests/mlir/place_*.mlir are written in the same form, with the expected
tiles derived by hand from the algorithm (each says why), so the same file also checks with
``aie-opt`` and FileCheck.

Run it on a directory of mlir-aie's placer tests (its ``test/place-tiles``)::

    python tests/test_mlir_place.py DIR
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from fastsim import NPU2

from fastsim.mlir import read_text, simulate_design
from fastsim.mlir.place import PlacementError, place
from fastsim.mlir.place_graph import read_graph, values_of
from fastsim.mlir.reader import MlirError
from fastsim.mlir.syntax import Atom, parse
from fastsim.mlir.tile_array import tile_array
from fastsim.mlir.values import attrs, word

HERE = Path(__file__).parent / "mlir"
USE_OPS = ("aie.core", "aie.objectfifo", "aie.flow", "aie.buffer", "aie.cascade_flow")


# -- reading FileCheck lines ---------------------------------------------------------------------------
def runs(text: str) -> list[dict]:
    """The ``aie-opt --aie-place-tiles`` RUN lines of a file: prefix, options, split, failure."""
    lines = re.sub(r"\\\n//\s*RUN:", " ", text)
    out = []
    for m in re.finditer(r"//\s*RUN:(.*)", lines):
        cmd = m.group(1)
        if "--aie-place-tiles" not in cmd or "placer=" in cmd:
            continue  # other tools, or the simulated-annealing placer, which fastsim does not follow
        prefix = re.search(r"--check-prefix[= ](\S+)", cmd)
        cores = re.search(r"cores-per-col=(\d+)", cmd)
        out.append({"prefix": prefix.group(1) if prefix else "CHECK", "split": "split-input-file" in cmd,
                    "fails": cmd.strip().startswith("not "), "merge": "merge-logical-tiles=false" not in cmd,
                    "cores_per_col": int(cores.group(1)) if cores else None})
    return out


def chunks(text: str, split: bool) -> list[str]:
    """The file's parts as ``--split-input-file`` cuts them, each padded to keep its line numbers."""
    if not split:
        return [text]
    out, start = [], 0
    for part in re.split(r"^// -----.*$", text, flags=re.M):
        out.append("\n" * start + part)
        start += part.count("\n")
    return out


def pattern(check: str) -> re.Pattern:
    """A FileCheck pattern as a regex: ``{{re}}`` raw, ``[[N:re]]`` a named group, ``[[N]]`` any
    SSA name (uses are checked apart, by coordinates)."""
    out, pos = "", 0
    for m in re.finditer(r"\{\{(.*?)\}\}|\[\[(\w+):(.*?)\]\]|\[\[(\w+)\]\]", check):
        out += re.escape(check[pos:m.start()])
        if m.group(1) is not None:
            out += "(?:" + m.group(1) + ")"
        elif m.group(2) is not None:
            out += "(?P<" + m.group(2) + ">" + m.group(3) + ")"
        else:
            out += r"[\w.$-]+"
        pos = m.end()
    return re.compile(out + re.escape(check[pos:]))


def directives(text: str, prefix: str) -> list[tuple[int, str, str]]:
    """(line, kind: '' / '-DAG' / '-NOT' / ..., pattern text) of one prefix's lines."""
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        m = re.search(r"//\s*" + re.escape(prefix) + r"(-DAG|-NOT|-LABEL|-NEXT|-SAME)?:\s*(.*?)\s*$", line)
        if m:
            out.append((n, m.group(1) or "", m.group(2)))
    return out


# -- checking one part -----------------------------------------------------------------------------------
def check_chunk(text: str, run: dict, source: str) -> list[str]:
    """Failures of fastsim's placement of one part against the run's FileCheck lines."""
    ds = directives(text, run["prefix"])
    devices = [op for top in parse(text, source) for op in ([top] if top.name == "aie.device" else
               [o for r in top.regions for o in r.ops if o.name == "aie.device"])]
    if not ds or not devices:
        return []
    error, coords_of, tiles = None, {}, []
    for dev in devices:
        graph, array = read_graph(dev), tile_array(word(dev.items[0].items))
        if array is None:
            error = f"no tile array for device {word(dev.items[0].items)}"
            continue
        try:
            placed = place(graph, array, run["cores_per_col"], run["merge"])
        except PlacementError as e:
            error = str(e)
            continue
        coords_of.update(graph.physical)
        coords_of.update(placed)
        tiles += _output_tiles(graph, placed)
    errors = [p for _, kind, p in ds if kind == "" and p.startswith("error:")]
    if run["fails"] or errors:
        if error is None:
            return [f"{source}: expected a placement error ({errors[:1]}), got none"]
        return [f"{source}: error {error!r} is not {p!r}" for p in errors
                if not pattern(p[len("error:"):].strip()).search(error)]
    if error is not None:
        return [f"{source}: unexpected placement error: {error}"]
    return _check_tiles(ds, tiles, [op for dev in devices for op in _all_ops(dev)], coords_of, source)


def _output_tiles(graph, placed) -> list[tuple[tuple[int, int], str]]:
    """((col, row), printed line) of each ``aie.tile`` in the order aie-opt prints them: the pass
    creates a tile per new coordinate, each at the start of the device (so the last created comes
    first), before the tiles the file already had."""
    created, schemes = [], {}
    for t in graph.logical:
        pos = placed[t.value]
        if pos not in created and pos not in graph.physical.values():
            created.append(pos)
        scheme = attrs(t.op).get("allocation_scheme")
        if scheme:
            schemes[pos] = f" {{allocation_scheme = {scheme[0].text}}}"
    names = {0: "shim_noc_tile", 1: "mem_tile"}  # how aie-opt names tiles
    return [((c, r), f"%{names.get(r, 'tile')}_{c}_{r} = aie.tile({c}, {r}){schemes.get((c, r), '')}")
            for c, r in created[::-1] + list(graph.physical.values())]


def _check_tiles(ds, tiles, ops, coords_of, source) -> list[str]:
    """FileCheck's scan over the printed tiles: a CHECK matches after the last match, a CHECK-DAG
    after the last CHECK's and not on another DAG's, a CHECK-NOT must not match between the
    matches around it; op lines that use bound tiles are checked by coordinates."""
    failures, bound = [], {}
    start = last = 0        # after the last CHECK's match; after every match so far
    used, nots = set(), []  # DAG matches since the last CHECK; CHECK-NOTs waiting for the next match

    def close_nots(end):
        for line, rx, p in nots:
            hit = next((t for _, t in tiles[last:end] if rx.search(t)), None)
            if hit:
                failures.append(f"{source}:{line}: CHECK-NOT {p!r} matches {hit!r}")
        nots.clear()

    for line, kind, p in ds:
        if "= aie.tile" in p or p.startswith("aie.tile("):
            rx = pattern(p)
            if kind == "-NOT":
                nots.append((line, rx, p))
                continue
            first = start if kind == "-DAG" else last
            hit = next((i for i in range(first, len(tiles)) if i not in used and rx.search(tiles[i][1])), None)
            if hit is None:
                failures.append(f"{source}:{line}: no tile matches {p!r} (tiles: {[t for _, t in tiles]})")
                continue
            close_nots(hit)
            if kind == "-DAG":
                used.add(hit)
            else:
                start, used = hit + 1, set()
            last = max(last, hit + 1)
            for name in rx.groupindex:
                bound[name] = {tiles[hit][0]}
        elif kind in ("", "-DAG") and any(p.startswith(o + "(") or p.startswith(o + " @") for o in USE_OPS):
            failures += _check_use(p, line, kind, ops, bound, coords_of, source)
    close_nots(len(tiles))
    return failures


def _check_use(p: str, line: int, kind: str, ops, bound, coords_of, source) -> list[str]:
    """An op line that uses bound tiles: the source op it checks uses tiles at their coordinates."""
    name = p.split("(")[0].split(" ")[0]
    symbol = re.match(r"[\w.]+ (@\w+)", p)
    names = [n for n in re.findall(r"%\[\[(\w+)\]\]", p)]
    if not names or any(n not in bound for n in names):
        return []
    candidates = [op for op in ops if op.name == name and (kind == "-DAG" or op.line > line)
                  and (symbol is None or any(isinstance(i, Atom) and i.text == symbol.group(1) for i in op.items))]
    for op in candidates if kind == "-DAG" else candidates[:1]:
        used = [v for v in values_of(op.items) if v in coords_of]
        if len(used) == len(names) and all(coords_of[v] in bound[n] for v, n in zip(used, names)):
            return []
    return [f"{source}:{line}: {p!r}: the op's tiles are not at the bound coordinates"]


def _all_ops(op):
    for region in op.regions:
        for inner in region.ops:
            yield inner
            yield from _all_ops(inner)


def check_file(path: Path) -> tuple[int, list[str]]:
    """(parts checked, failures) of one file, over each of its placer RUN lines."""
    text = path.read_text()
    checked, failures = 0, []
    for run in runs(text):
        for part in chunks(text, run["split"]):
            f = check_chunk(part, run, str(path))
            checked += bool(directives(part, run["prefix"]))
            failures += f
    return checked, failures


# -- tests -------------------------------------------------------------------------------------------------
PLACE_DESIGNS = sorted(HERE.glob("place_*.mlir"))


@pytest.mark.parametrize("path", PLACE_DESIGNS, ids=lambda p: p.stem)
def test_place__own_designs_match_their_check_lines(path):
    checked, failures = check_file(path)
    assert checked and not failures, failures


def test_place__logical_design_simulates_as_its_placed_twin():
    """A design written with logical tiles runs exactly as the same design written with the
    physical tiles the placer gives it."""
    logical = (HERE / "place_passthrough.mlir").read_text()
    info = read_text(logical, source="logical")
    placed = logical
    for value, pos in [("%shim", "(0, 0)"), ("%shim_out", "(0, 0)"), ("%mem", "(0, 1)"), ("%mem_out", "(0, 1)"),
                       ("%core", "(0, 2)")]:
        placed = re.sub(re.escape(value) + r" = aie\.logical_tile<\w+>\([^)]*\)", f"{value} = aie.tile{pos}", placed)
    twin = read_text(placed, source="physical")
    assert "aie.logical_tile" not in placed
    assert int(simulate_design(info).total_cycles[0]) == int(simulate_design(twin).total_cycles[0]) > 0
    assert any("logical tiles placed" in n for n in info.notes)


def test_place__unplaceable_design_names_the_logical_tile_and_line():
    text = """module {
  aie.device(npu1_1col) {
    %shim = aie.logical_tile<ShimNOCTile>(?, ?)
    %core = aie.logical_tile<CoreTile>(0, 2)
    aie.objectfifo @a(%shim, {%core}, 2 : i32) : !aie.objectfifo<memref<16xi32>>
    aie.objectfifo @b(%shim, {%core}, 2 : i32) : !aie.objectfifo<memref<16xi32>>
    aie.objectfifo @c(%shim, {%core}, 2 : i32) : !aie.objectfifo<memref<16xi32>>
  }
}"""
    with pytest.raises(MlirError) as e:
        read_text(text, source="three_inputs")
    assert "three_inputs:4: aie.logical_tile: tile (0, 2) requires 3 input/0 output DMA channels, but only " \
           "2 input/2 output available" in str(e.value)


def test_device__earlier_names_of_npu1_read_as_npu1():
    from fastsim import NPU1
    from fastsim.mlir.reader import device_arch

    assert [device_arch(name) for name in ("npu", "ipu", "npu1_2col")] == [NPU1] * 3


def test_place__unknown_device_is_a_stop():
    text = """module {
  aie.device(xcve2802) {
    %core = aie.logical_tile<CoreTile>(?, ?)
  }
}"""
    with pytest.raises(MlirError) as e:  # a part fastsim does not model: refused, never simulated as an NPU
        read_text(text, source="versal")
    assert e.value.stops == [("aie.device", 2)] and "aie.device(xcve2802): not a part fastsim models" in str(e.value)
    with pytest.raises(MlirError) as e:  # an arch chosen: its tiles still cannot be placed on that part's array
        read_text(text, source="versal", arch=NPU2)
    assert e.value.stops == [("aie.logical_tile", 3)]


if __name__ == "__main__":
    total, bad = 0, []
    for f in sorted(Path(sys.argv[1]).rglob("*.mlir")):
        n, failures = check_file(f)
        total += n
        bad += failures
        print(f"{'ok  ' if not failures else 'FAIL'} {n:3d} parts  {f.relative_to(sys.argv[1])}")
    print(f"{total} parts checked, {len(bad)} failures")
    print("\n".join(bad))
