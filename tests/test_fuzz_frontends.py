"""Fuzz the ONNX and mlir-aie front ends (issue 49) as tests/test_fuzz.py fuzzes the others: a
model or design with one or more fields mutated to a value that broke them (absurd dims, conv
groups and loop bounds, non-UTF-8 names, bad kernel cost tables) must end in one ConfigError
naming the field, never an internal exception, a MemoryError or a plausible number; the same
model with valid values must run. Each case knows whether it is malformed, so a malformed input
that simulates fails the test.

Examples are derandomized and bounded (a few dozen per family; ``-m slow``: a few hundred)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from fastsim.arch import NPU2
from fastsim.cli import main
from fastsim.errors import ConfigError

FAST, SLOW = 25, 300
HANG_SECONDS = 300.0  # a bound on a hang, never on speed (tests/test_fuzz.py's)
HERE = Path(__file__).parent / "mlir"


def _settings(n):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _both(strategy):
    """The property at the CI size and, under -m slow, at the large size (as tests/test_fuzz.py)."""
    def wrap(check):
        def copy():
            def run(case):
                return check(case)
            run.__name__ = check.__name__
            return run
        return (given(strategy)(_settings(FAST)(copy())),
                pytest.mark.long(given(strategy)(_settings(SLOW)(copy()))))
    return wrap


def _expect(fn, bad: list[str]):
    """``fn()`` raises one ConfigError when ``bad`` (the mutated fields) is not empty, whose
    problems quote a bytes value only to say it is not UTF-8; returns without error otherwise; without hanging."""
    start = time.perf_counter()
    try:
        out = fn()
    except ConfigError as e:
        assert bad, f"valid input refused: {e}"
        for problem in e.problems:  # a bytes value only where it is the problem, never an exception's words
            assert "b'\\x" not in problem or "UTF-8" in problem, problem
            assert "Error" not in problem.split(":")[0] and "cannot lower" not in problem, problem
        out = None
    else:
        assert not bad, f"malformed input {bad} gave a result"
    assert time.perf_counter() - start < HANG_SECONDS, f"took {time.perf_counter() - start:.1f} s"
    return out


# ---- ONNX ------------------------------------------------------------------------------------------

# (value, malformed) of each mutable field of a small conv net: Conv(group) -> Relu -> pool -> MatMul
DIMS = st.sampled_from([(8, False), (16, False), (10**12, True), (2**40, True), (2**62, True), (0, True)])
BATCHES = st.sampled_from([(1, False), (2, False), (10**12, True), (-1, True)])
GROUPS = st.sampled_from([(1, False), (2, False), (8, False), (0, True), (-1, True), (3, True), (16, True),
                          (10**12, True), (2**63 - 1, True), (2.0, True), ("x", True)])
STRIDES = st.sampled_from([(1, False), (2, False), (0, True), (-2, True), (10**12, True)])
OUT_FEATURES = st.sampled_from([(4, False), (10**12, True)])
# names: ascii, or invalid UTF-8 patched into the file (a 4-byte marker replaced in place)
NAME_FIELDS = ("graph", "node", "domain", "tensor")
MARKERS = {"graph": b"GRPH", "node": b"NODE", "domain": b"DOMN", "tensor": b"TNSR"}


GOOD = {"h": (8, False), "w": (8, False), "batch": (1, False), "group": (1, False), "stride": (1, False),
        "out_features": (4, False)}
POOLS = {"h": DIMS, "w": DIMS, "batch": BATCHES, "group": GROUPS, "stride": STRIDES, "out_features": OUT_FEATURES}


@st.composite
def onnx_cases(draw):
    """One to three fields drawn from their pools (a valid value or one that broke a front end),
    the rest valid; now and then a name made non-UTF-8; with or without every tensor's shape."""
    mutated = draw(st.lists(st.sampled_from(sorted(POOLS)), min_size=1, max_size=3, unique=True))
    fields = {k: (draw(POOLS[k]) if k in mutated else v) for k, v in GOOD.items()}
    names = draw(st.lists(st.sampled_from(NAME_FIELDS), max_size=2, unique=True)) if not draw(
        st.integers(0, 3)) else []
    return fields, names, draw(st.booleans())  # the last: every tensor's shape given (no inference)


def _onnx_bytes(fields: dict, names: list[str], shapes: bool) -> bytes:
    from onnx import TensorProto, helper

    v = {k: val for k, (val, _) in fields.items()}
    n, h, w, g, s, f = v["batch"], v["h"], v["w"], v["group"], v["stride"], v["out_features"]
    x = "TNSR" if "tensor" in names else "x"

    def weight(name, dims):
        t = TensorProto(name=name, data_type=TensorProto.FLOAT)
        t.dims.extend(dims)
        return t

    def info(name, dims):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)

    div = g if isinstance(g, int) and g > 0 else 1
    oh = [(d + 2 - 3) // s + 1 if isinstance(s, int) and s > 0 else d for d in (h, w)]
    conv = helper.make_node("Conv", [x, "wc"], ["c"], name="NODE" if "node" in names else "conv",
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[s, s], group=g)
    relu = helper.make_node("Relu", ["c"], ["r"], domain="DOMN" if "domain" in names else "")
    nodes = [conv, relu, helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["fl"], axis=1), helper.make_node("MatMul", ["fl", "wm"], ["y"])]
    between = [info("c", [n, 8, *oh]), info("r", [n, 8, *oh]), info("p", [n, 8, 1, 1]), info("fl", [n, 8])]
    graph = helper.make_graph(nodes, "GRPH" if "graph" in names else "net", [info(x, [n, 8, h, w])],
                              [info("y", [n, f])], [weight("wc", [8, 8 // div, 3, 3]), weight("wm", [8, f])],
                              value_info=between if shapes else [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    if "domain" in names:
        model.opset_import.append(helper.make_opsetid("DOMN", 1))
    raw = model.SerializeToString()
    for name in names:
        raw = raw.replace(MARKERS[name], b"\xff\xfe" + MARKERS[name][2:])
    return raw


@_both(onnx_cases())
def _onnx_case(case):
    from fastsim.onnx import onnx_summary, simulate_onnx

    fields, names, shapes = case
    bad = [k for k, (_, wrong) in fields.items() if wrong] + names
    path = Path(_tmp()) / "m.onnx"
    path.write_bytes(_onnx_bytes(fields, names, shapes))
    ds = _expect(lambda: simulate_onnx(str(path), NPU2, search_budget=1), bad)
    if ds is not None:
        assert float(ds.total_seconds) > 0
        json.dumps(onnx_summary(ds))


test_onnx_model, test_onnx_model_slow = _onnx_case


def _tmp() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="fastsim-fuzz-onnx-")


def test_onnx_cli__a_non_utf8_graph_name_is_one_clean_error(tmp_path):
    """The CLI writes JSON of the names it read: a bytes name once ended in a TypeError."""
    path = tmp_path / "m.onnx"
    path.write_bytes(_onnx_bytes(GOOD, ["graph"], True))
    out = CliRunner().invoke(main, ["run", "onnx", str(path), "--json"])
    assert out.exit_code == 2 and "--debug" not in out.output, out.output
    assert "graph.name" in out.output and "UTF-8" in out.output


# ---- mlir-aie designs ------------------------------------------------------------------------------

FIXTURE = (HERE / "objectfifo_passthrough.mlir").read_text()
DEPTH = "@to_core(%shim, {%core_tile}, 2 : i32)"
LOOP = "%c4 = arith.constant 4 : index"
# (text, malformed); a loop bound is malformed only past a 64-bit index or not an integer: 0 or 1
# iterations against 4 objects sent is a valid design that deadlocks (a SimulationError), and
# 10**12 a persistent one
DEPTHS = st.sampled_from([("2", False), ("1", False), ("3", False), ("0", True), ("-1", True), ("64", True),
                          ("10000000000", True), ("99999999999999999999999", True)])
SIZES = st.sampled_from([("256", False), ("0", True), ("1000000000000", True), ("99999999999999999999999", True)])
LOOPS = st.sampled_from([("4", False), ("8", False), ("1000000000000", False), ("9223372036854775807", False),
                         ("0", None), ("1", None), ("99999999999999999999999", True), ("1.5", True)])
COSTS = st.sampled_from([("kernel = 300", False), ("kernel = { cycles = 5 }", False), ("kernel = 0", True),
                         ("kernel = -1", True), ('kernel = "fast"', True), ("kernel = 2.5", True),
                         ("kernel = inf", True), ("kernel = 9223372036854775807", True),
                         ("kernel = { cycle = 5 }", True), ("kernel = {}", True)])
EXTRA = st.sampled_from([("", False), ("kernal = 300", True), ("x = [", True), ("\udcff = 1", True)])
HEADERS = st.sampled_from([("[kernels]", False), ("[kernel]", True), ("", True)])


@st.composite
def mlir_cases(draw):
    return {"depth": draw(DEPTHS), "size": draw(SIZES) if not draw(st.integers(0, 2)) else ("256", False),
            "loop": draw(LOOPS), "header": draw(HEADERS) if not draw(st.integers(0, 2)) else ("[kernels]", False),
            "cost": draw(COSTS), "extra": draw(EXTRA) if not draw(st.integers(0, 2)) else ("", False)}


@_both(mlir_cases())
def _mlir_case(case):
    from fastsim.errors import SimulationError
    from fastsim.mlir import read_design, simulate_design

    v = {k: text for k, (text, _) in case.items()}
    text = (FIXTURE.replace(DEPTH, DEPTH.replace("2 : i32", f"{v['depth']} : i32"))
            .replace("memref<256xi32>", f"memref<{v['size']}xi32>").replace(LOOP, LOOP.replace("4 :", f"{v['loop']} :")))
    tmp = Path(_tmp())
    (tmp / "d.mlir").write_text(text)
    (tmp / "k.toml").write_bytes("\n".join((v["header"], v["cost"], v["extra"])).encode("utf-8", "surrogateescape"))
    bad = [k for k, (_, wrong) in case.items() if wrong]
    either = [k for k, (_, wrong) in case.items() if wrong is None]

    def run():
        try:
            return simulate_design(read_design(tmp / "d.mlir", tmp / "k.toml"))
        except SimulationError:
            assert either and not bad, "a valid design failed to simulate"
            return None
    ds = _expect(run, bad)
    if ds is not None:
        assert int(ds.total_cycles[0]) > 0


test_mlir_design, test_mlir_design_slow = _mlir_case
