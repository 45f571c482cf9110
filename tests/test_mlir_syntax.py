"""The lark grammar reads MLIR's op syntax in general: results, names, operands, attribute
dictionaries, regions with blocks, nested types; and says where a syntax error is."""
import pytest

from fastsim.errors import ConfigError
from fastsim.mlir.syntax import Group, parse
from fastsim.mlir.values import attrs, memref_of


def test_syntax__results_name_operands_attributes_and_type():
    (op,) = parse('%l = aie.lock(%t, 3) {init = 2 : i32, sym_name = "x"}\n')
    assert op.name == "aie.lock" and op.results == ("%l",) and op.line == 1
    assert attrs(op)["sym_name"][0].text == '"x"'
    assert [str(i) for i in op.items[0].items] == ["%t", ",", "3"]


def test_syntax__regions_hold_blocks_with_labels():
    text = "aie.mem(%t) {\n  %0 = aie.dma_start(S2MM, 0, ^a, ^b)\n^a:\n  aie.next_bd ^a\n^b:\n  aie.end\n}\n"
    (op,) = parse(text)
    (region,) = op.regions
    assert [b.label for b in region.blocks] == ["", "^a", "^b"]
    assert [o.name for o in region.ops] == ["aie.dma_start", "aie.next_bd", "aie.end"]


def test_syntax__statements_continue_on_the_next_line_where_mlir_allows():
    text = ("aiex.npu.dma_memcpy_nd (%out[0, 0][1, 16]\n    [0, 1])\n    {metadata = @out, id = 0 : i64}\n"
            "func.call @k(%a)\n    : (memref<8xi32>) -> ()\nx.y {\n  a = 1,\n  b = 2\n}\n")
    ops = parse(text)
    assert [o.name for o in ops] == ["aiex.npu.dma_memcpy_nd", "func.call", "x.y"]
    assert set(attrs(ops[0])) == {"metadata", "id"} and set(attrs(ops[2])) == {"a", "b"}


def test_syntax__nested_types_and_shapes():
    (op,) = parse("aie.objectfifo @f(%a, {%b, %c}, 2 : i32) : !aie.objectfifo<memref<16x8xbf16>>\n")
    assert memref_of(op.items) == ((16, 8), 16)
    consumers = op.items[1].items[2]
    assert isinstance(consumers, Group) and consumers.kind == "{"


def test_syntax__error_names_line_and_column():
    with pytest.raises(ConfigError, match=r"f.mlir:2:\d+: MLIR syntax error"):
        parse("aie.tile(0, 0)\naie.tile(0, ]\n", "f.mlir")
