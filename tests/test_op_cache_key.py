"""The evaluator's op-result cache key is derived from the pins, not listed by hand: a pin added
later changes the key unless it is declared not to change an op's design."""
from dataclasses import field, fields, make_dataclass, replace

import pytest

from fastsim.arch import NPU1, NPU2
from fastsim.evaluation import GraphPins
from fastsim.evaluation.evaluate import NOT_IN_OP_DESIGN, _mapping_key
from fastsim.mapping.pins import Pins

# a value unlike the default for each field the key must see
CHANGED = {"compute_dtype": "int8", "dataflow": (("gemm", "ws"),), "columns": (("gemm", 4),),
           "datapath": (("gemm", "bfp16"),), "tiles": (("gemm", (8, 8, 8)),), "l2": (("gemm", "a"),),
           "rows": (("gemm", 1),), "buffers": (("gemm", 1),), "split": (("gemm", "2dt"),), "c_buffers": (("gemm", 1),),
           "k_panel": (("gemm", 4),), "codegen": (("gemm", "direct"),),
           "residency": "static", "kernel_efficiency": 0.5, "kernel_overhead_cycles": 7,
           "stream_split": "equal", "search_budget": None, "mapped_on": NPU1, "row_major_ddr": True, "resident_programs": True,
           "op_pins": (("gemm", Pins(rows=1)),), "out_dtype": (("conv", "int8"),), "search_top": 6, "search_keep": 50,
           "search_control": False}


def test_every_pin_that_can_change_a_design_changes_the_key():
    base = GraphPins()
    keyed = [f.name for f in fields(GraphPins) if f.name not in NOT_IN_OP_DESIGN]
    assert sorted(keyed) == sorted(CHANGED), "a new pin: add a changed value here or declare it in NOT_IN_OP_DESIGN"
    for name in keyed:
        assert _mapping_key(replace(base, **{name: CHANGED[name]}), NPU2) != _mapping_key(base, NPU2), name


def test_a_pin_added_later_changes_the_key_without_anyone_listing_it():
    Later = make_dataclass("Later", [("new_knob", int, field(default=0))], bases=(GraphPins,), frozen=True)
    assert _mapping_key(Later(new_knob=1), NPU2) != _mapping_key(Later(new_knob=0), NPU2)


@pytest.mark.parametrize("name, value", [("fusion", "none"), ("cuts", (3,)), ("pipelines", True),
                                         ("dispatch_commands", "chained"), ("static_weights_resident", True)])
def test_pins_declared_design_free_share_results(name, value):
    assert _mapping_key(replace(GraphPins(), **{name: value}), NPU2) == _mapping_key(GraphPins(), NPU2)


def test_table_order_does_not_split_the_cache():
    a = GraphPins(columns=(("q_proj", 4), ("gemm", 8)))
    b = GraphPins(columns=(("gemm", 8), ("q_proj", 4)))
    assert _mapping_key(a, NPU2) == _mapping_key(b, NPU2)
