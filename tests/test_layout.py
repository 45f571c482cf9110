"""One layout record (``mapping.layout.Layout``): the overlay and as-built files, the Python API
(``LlmStudy``) and the evaluator's pins read the same fields, checked by one validator."""
from dataclasses import fields

import pytest

from fastsim.errors import ConfigError
from fastsim.evaluation import GraphPins
from fastsim.llm import LlmStudy
from fastsim.llm.run import apply_overlay, study_pins
from fastsim.llm.model import Precision
from fastsim.mapping.layout import Layout, layout_of
from fastsim.mapping.overlay import Overlay

LAYOUT_FIELDS = {f.name for f in fields(Layout)}


def test_layout__is_the_overlays_record_and_every_field_is_a_study_field():
    assert issubclass(Overlay, Layout) and {f.name for f in fields(Overlay)} == LAYOUT_FIELDS | {"regime"}
    # (a regime table's keys, REGIME_KEYS, are held to the Layout's fields when fastsim.mapping.overlay loads)
    assert LAYOUT_FIELDS <= {f.name for f in fields(LlmStudy)}


@pytest.mark.parametrize("pin, value, named", [
    ("tiles", {"gemm": (64, 64)}, "three sizes (m, k, n)"), ("l2", {"gemm": "c"}, "'', a, b or ab"),
    ("dataflow", {"gemm": "xs"}, "one of"), ("columns", {"gemm": 0}, "must be an integer"),
    ("host", {"attention": -1.0}, "s per op instance"), ("fusion", "sometimes", "group kinds joined by +"),
    ("cuts", (-1,), "layer indices"), ("rows", {"gemm": 0}, "integer in [1, 64]"),
    ("buffers", {"gemm": 3}, "1 (A and B single-buffered) or 2")])
def test_layout__one_validator_refuses_a_bad_pin_alike_in_a_study_and_an_overlay(pin, value, named):
    with pytest.raises(ConfigError) as in_study:
        LlmStudy(**{pin: value}).validate(LlmStudy().model_config())
    with pytest.raises(ConfigError) as in_overlay:
        Overlay(regime="decode", **{pin: value}).validate()
    assert named in str(in_study.value) and named in str(in_overlay.value)


def test_layout__an_overlays_pins_win_and_its_open_choices_keep_the_studys():
    study = LlmStudy(fusion="none", residency="static", columns={"gemm": 4, "ffn": 2}, cuts=(3,), causal_halving=False)
    overlay = Overlay(regime="prefill", columns={"gemm": 8}, dataflow={"q_proj": "ws"}, row_major_ddr=True)
    laid = apply_overlay(study, overlay)
    assert laid.columns == {"gemm": 8, "ffn": 2} and laid.dataflow == {"q_proj": "ws"}
    assert (laid.fusion, laid.residency, laid.cuts, laid.causal_halving, laid.row_major_ddr) == (
        "none", "static", (3,), False, True)
    assert layout_of(laid) == overlay.layout.over(study.layout)


def test_layout__the_evaluators_pins_are_derived_from_it():
    study = LlmStudy(columns={"gemm": 4}, tiles={"q_proj": [4, 64, 64]}, l2={"gemm": "b"}, cuts=[2], row_major_ddr=True,
                     rows={"gemm": 2}, buffers={"o_proj": 1})
    pins = study_pins(study, Precision())
    assert pins.columns == (("gemm", 4),) and pins.tiles == (("q_proj", (4, 64, 64)),) and pins.l2 == (("gemm", "b"),)
    assert pins.rows == (("gemm", 2),) and pins.buffers == (("o_proj", 1),)
    assert pins.cuts == (2,) and pins.row_major_ddr is True and pins.residency == "streamed"
    assert GraphPins.of(Layout()) == GraphPins()  # an open layout pins nothing


def test_layout__rows_and_buffers_reach_a_matmuls_search_and_a_vector_op_refuses_them():
    """The as-built GEMV herds (a row per column, nothing double-buffered) pin what ``[gemm]`` pins."""
    from fastsim.arch import NPU2
    from fastsim.graph import Op, Operand
    from fastsim.mapping.mappers import search_request
    from fastsim.mapping.placed import Placed

    act = Operand("activations", 2.0)
    op = Op("o_proj", "gemm", 0, "matmul", 1, 2048, 2048, act, Operand("weights", 2.0), act)
    pins = GraphPins(rows=(("gemm", 1),), buffers=(("o_proj", 1),))
    searched = search_request(Placed(op), NPU2, pins)[2]
    assert (searched.rows, searched.buffers) == (1, 1)
    assert search_request(Placed(op), NPU2, GraphPins())[2].buffers is None
    from fastsim.llm import simulate_llm

    with pytest.raises(ConfigError, match="a rows pin is for matmul"):
        simulate_llm(LlmStudy(context=64, rows={"norm": 1}))
