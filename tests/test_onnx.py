"""The ONNX front end (fastsim.onnx): real networks written by fastsim.onnx.zoo lower to the right
ops, MACs and shapes; BatchNorm folds; QDQ sets 1-byte operands; unsupported ops are listed with
their counts; host fallback is timed as given; a small CNN runs end to end."""
import json

import pytest
from onnx import TensorProto, helper

from fastsim.arch import NPU1, NPU2
from fastsim.errors import ConfigError
from fastsim.graph import CONV, MATMUL, TRANSPOSE, VECTOR
from fastsim.llm.transformer import VectorCosts
from fastsim.onnx import build_graph, onnx_summary, simulate_onnx, zoo
from fastsim.onnx.graph import macs

COSTS = VectorCosts.of(NPU2)


def _kinds(g):
    return [op.kind for op in g.graph.ops]


def _model(nodes, inputs, outputs, inits=(), opset=20):
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _value(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _weight(name, dims, dtype=TensorProto.FLOAT):
    t = TensorProto(name=name, data_type=dtype)
    t.dims.extend(dims)
    return t


def test_onnx__resnet50_has_its_convs_macs_and_shapes():
    g = build_graph(zoo.resnet50(shapes_only=True))
    kinds = _kinds(g)
    assert (kinds.count(CONV), kinds.count(MATMUL), kinds.count(VECTOR)) == (53, 1, 49 + 16 + 2)
    assert 4.05e9 < macs(g.graph) < 4.15e9  # torchvision: 4.09 G MACs at 224 x 224
    first = g.graph.ops[0].conv
    assert (first.c, first.h, first.k, first.r, first.stride, first.padding, first.oh) == (3, 224, 64, 7, 2, 3, 112)
    last = [op for op in g.graph.ops if op.kind == CONV][-1]
    assert (last.conv.c, last.conv.h, last.conv.k, last.conv.oh) == (512, 7, 2048, 7)
    fc = g.graph.ops[-1]
    assert (fc.op_class, fc.m, fc.k, fc.n, fc.w.kind) == ("gemm", 1, 2048, 1000, "weights")
    assert g.compute_dtype == "bf16" and g.graph.batch == 1
    assert all(op.x.elem_bytes == op.w.elem_bytes == op.y.elem_bytes == 2 for op in g.graph.ops if op.kind == CONV)


def test_onnx__mobilenet_v2_has_its_depthwise_convs_and_macs():
    g = build_graph(zoo.mobilenet_v2(shapes_only=True))
    convs = [op.conv for op in g.graph.ops if op.kind == CONV]
    assert len(convs) == 52 and sum(c.groups == c.c > 1 for c in convs) == 17
    assert 0.29e9 < macs(g.graph) < 0.31e9  # torchvision: 0.30 G MACs
    assert g.op_types.count("Clip") == 35 and g.op_types.count("Add") == 10
    assert convs[-1].k == 1280 and convs[-1].h == 7


def test_onnx__every_op_has_its_own_layer_and_producers_follow_tensors():
    g = build_graph(zoo.resnet50(shapes_only=True))
    assert g.graph.layers == list(range(len(g.graph.ops)))
    add = g.op_types.index("Add")
    # the first bottleneck's add reads its last conv (through the folded BatchNorm) and the shortcut conv
    assert [g.op_types[p] for p in g.graph.producers[add]] == ["Conv", "Conv"]
    relu = g.graph.ops[add + 1]
    assert relu.op_class == "elementwise" and g.graph.producers[add + 1] == (add,)


def test_onnx__batch_norm_folds_into_its_conv_and_is_an_op_elsewhere():
    g = build_graph(zoo.small_cnn(shapes_only=True))
    assert "BatchNormalization" not in g.op_types
    bn = helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"])
    model = _model([bn], [_value("x", [1, 8, 4, 4])], [_value("y", [1, 8, 4, 4])],
                   [_weight(n, [8]) for n in "gbmv"])
    (op,) = build_graph(model).graph.ops
    # a scale and a shift, each priced per call of the tile each core gets (the kernel model)
    assert (op.kind, op.op_class, op.vector_cycles_per_elem) == (
        VECTOR, "elementwise", 2 * COSTS.tile_cost("elementwise", op.m, op.n))


def test_onnx__vector_ops_take_their_class_and_cost():
    g = build_graph(zoo.encoder_layer(shapes_only=True))
    by_type = {t: op for t, op in zip(g.op_types, g.graph.ops)}
    assert (by_type["Softmax"].op_class, by_type["Softmax"].n, by_type["Softmax"].m) == ("softmax", 128, 12 * 128)
    assert by_type["Softmax"].vector_cycles_per_elem == COSTS.softmax_cost(128)
    assert by_type["Softmax"].online_rescale_cycles == COSTS.elementwise * 64  # head_dim
    assert (by_type["LayerNormalization"].op_class, by_type["LayerNormalization"].vector_cycles_per_elem) == (
        "norm", COSTS.norm_cost("layer", by_type["LayerNormalization"].n))
    gelu = by_type["Gelu"]
    assert gelu.vector_cycles_per_elem == COSTS.tile_cost("gelu", gelu.m, gelu.n)
    pool = build_graph(zoo.small_cnn(shapes_only=True)).graph.ops[-3]  # MaxPool 2x2 / 2 over 16 x 16 x 16
    assert (pool.op_class, pool.m * pool.n) == ("pool", 16 * 16 * 16)
    # 4 reads per output, 1/4 of inputs: the element-wise cost of its tile
    assert pool.vector_cycles_per_elem == pytest.approx(COSTS.tile_cost("elementwise", pool.m, pool.n))
    assert pool.y.elem_bytes == pytest.approx(0.5)


def test_onnx__data_movement_resize_and_activations():
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2),
             helper.make_node("HardSwish", ["a"], ["c"]), helper.make_node("Sigmoid", ["b"], ["d"]),
             helper.make_node("Concat", ["c", "d"], ["e"], axis=1),
             helper.make_node("Resize", ["e", "", "scales"], ["f"], mode="nearest"),
             helper.make_node("Transpose", ["f"], ["y"], perm=[0, 2, 3, 1])]
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1.0, 1.0, 2.0, 2.0])
    g = build_graph(_model(nodes, [_value("x", [1, 8, 4, 4])], [_value("y", [1, 8, 8, 8])], [scales]))
    assert g.op_types == ("HardSwish", "Sigmoid", "Resize", "Transpose")  # Split and Concat move no data
    swish, sigmoid, resize, transpose = g.graph.ops
    assert swish.vector_cycles_per_elem == 3 * COSTS.tile_cost("elementwise", swish.m, swish.n)
    assert sigmoid.vector_cycles_per_elem == COSTS.tile_cost("silu_mul", sigmoid.m, sigmoid.n)
    assert (resize.m * resize.n, resize.x.elem_bytes, resize.x_inputs) == (8 * 8 * 8, 0.5, 1)
    assert g.graph.producers[2] == (0, 1)
    # NCHW -> NHWC: the 8 channels swap with the 8 x 8 pixels (batch 1 dropped), element by element
    assert (transpose.kind, transpose.m, transpose.n, transpose.k, transpose.repeat) == (TRANSPOSE, 8, 64, 1, 1)


def test_onnx__encoder_matmuls_are_weights_or_attention_per_head():
    g = build_graph(zoo.encoder_layer(shapes_only=True))
    mm = [op for op in g.graph.ops if op.kind == MATMUL]
    assert [op.op_class for op in mm].count("gemm") == 6
    scores, context = [op for op in mm if op.op_class == "attention"]
    assert (scores.m, scores.k, scores.n, scores.repeat, scores.w.kind) == (128, 64, 128, 12, "activations")
    assert (context.m, context.k, context.n) == (128, 128, 64)
    assert g.graph.tokens == 128 and macs(g.graph) == 128 * (12 * 768 ** 2) + 2 * 12 * 128 * 128 * 64


def test_onnx__qdq_sets_one_byte_operands_and_int8_compute():
    for name in ("resnet50", "mobilenet_v2", "encoder"):
        g = build_graph(zoo.build(name, int8=True, shapes_only=True))
        mac_ops = [op for op in g.graph.ops if op.kind in (CONV, MATMUL)]
        assert g.compute_dtype == "int8", name
        assert all(op.x.elem_bytes == op.w.elem_bytes == 1 for op in mac_ops), name
        assert all(op.y.elem_bytes == 1 for op in mac_ops[:-1]), name  # requantized for the next op
        assert "QuantizeLinear" not in g.op_types and "DequantizeLinear" not in g.op_types
        assert macs(g.graph) == macs(build_graph(zoo.build(name, shapes_only=True)).graph)


def test_onnx__a_float_matmul_keeps_a_bf16_graph_and_int8_weights_dequantize():
    model = zoo.encoder_layer(shapes_only=True)
    g = build_graph(zoo.quantize_qdq(model))
    assert g.compute_dtype == "int8"
    w = helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"])
    mm = helper.make_node("MatMul", ["x", "w"], ["y"])
    model = _model([w, mm], [_value("x", [4, 16])], [_value("y", [4, 8])],
                   [_weight("wq", [16, 8], TensorProto.INT8), helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]),
                    helper.make_tensor("z", TensorProto.INT8, [], [0])])
    g = build_graph(model)
    (op,) = g.graph.ops
    assert g.compute_dtype == "bf16" and (op.x.elem_bytes, op.w.elem_bytes) == (2, 1)
    assert op.cast_cycles_per_weight == COSTS.dequant_cost(8)


def test_onnx__qlinear_conv_and_matmul_read_their_types():
    nodes = [helper.make_node("QLinearConv", ["x", "s", "z", "w", "s", "z", "s", "z"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Flatten", ["c"], ["f"]),
             helper.make_node("QLinearMatMul", ["f", "s", "z", "w2", "s", "z", "s", "z"], ["y"])]
    inits = [_weight("w", [8, 4, 3, 3], TensorProto.INT8), _weight("w2", [8 * 16, 10], TensorProto.INT8),
             helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("z", TensorProto.INT8, [], [0])]
    g = build_graph(_model(nodes, [_value("x", [1, 4, 4, 4], TensorProto.INT8)],
                           [_value("y", [1, 10], TensorProto.INT8)], inits))
    conv, fc = g.graph.ops
    assert (conv.x.elem_bytes, conv.w.elem_bytes, conv.y.elem_bytes, conv.conv.padding) == (1, 1, 1, 1)
    assert (fc.m, fc.k, fc.n, fc.y.elem_bytes) == (1, 128, 10, 1) and g.compute_dtype == "int8"
    assert g.graph.producers[1] == (0,)


def _with_unsupported():
    nodes = [helper.make_node("Cos", ["x"], ["a"]), helper.make_node("Cos", ["a"], ["b"]),
             helper.make_node("ConvTranspose", ["b", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])]
    return _model(nodes, [_value("x", [1, 4, 8, 8])], [_value("y", [1, 4, 10, 10])], [_weight("w", [4, 4, 3, 3])])


def test_onnx__unsupported_ops_are_listed_with_their_counts():
    with pytest.raises(ConfigError) as e:
        build_graph(_with_unsupported())
    text = str(e.value)
    assert "op type ConvTranspose: 1 node(s)" in text and "op type Cos: 2 node(s)" in text
    assert "zero-stuffed" in text and "cpu_fallback=('Cos',)" in text
    assert len(e.value.problems) == 2


def test_onnx__cpu_fallback_runs_ops_on_the_host_at_the_given_time(tmp_path):
    with pytest.raises(ConfigError) as e:
        build_graph(_with_unsupported(), cpu_fallback=("Cos", "ConvTranspose", "TopK"), host_seconds={"Cos": 1e-4})
    assert {p.split(":")[0] for p in e.value.problems} == {
        "cpu_fallback[TopK]", "host_seconds[ConvTranspose]", "host_seconds[TopK]"}
    toml = tmp_path / "host.toml"
    toml.write_text("[host_seconds]\nCos = 1e-4\nConvTranspose = 5e-4\n")
    g = build_graph(_with_unsupported(), cpu_fallback=("Cos", "ConvTranspose"), host_seconds=str(toml))
    assert g.host == {0: 1e-4, 1: 1e-4, 2: 5e-4}
    ds = simulate_onnx(g, NPU2)
    s = onnx_summary(ds)
    assert s["host"] == {"seconds": pytest.approx(7e-4), "ops": {"Cos": 2, "ConvTranspose": 1}}
    assert s["seconds"] > 7e-4 and s["time_by_bound"]["host"] == pytest.approx(7e-4)


def test_onnx__a_conv_it_cannot_express_says_why():
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 0, 1, 1], strides=[1, 2])]
    with pytest.raises(ConfigError) as e:
        build_graph(_model(nodes, [_value("x", [1, 4, 8, 8])], [_value("y", [1, 4, 7, 4])],
                           [_weight("w", [4, 4, 2, 2])]))
    assert "pads = [0, 0, 1, 1]: fastsim's conv takes symmetric padding" in str(e.value)
    assert "strides = [1, 2]" in str(e.value)


def test_onnx__symbolic_dims_must_be_given(tmp_path):
    model = zoo.small_cnn(shapes_only=True)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    with pytest.raises(ConfigError, match="input input dim 0 \\(N\\)"):
        build_graph(model)
    assert build_graph(model, dims={"N": 4}).graph.batch == 4
    with pytest.raises(ConfigError, match="dims\\[M\\]"):
        build_graph(model, dims={"N": 4, "M": 2})


def test_onnx__a_file_reads_as_the_model(tmp_path):
    path = tmp_path / "m.onnx"
    zoo.save("mobilenet_v2", str(path))
    assert _kinds(build_graph(str(path))) == _kinds(build_graph(zoo.mobilenet_v2(shapes_only=True)))
    with pytest.raises(ConfigError, match="no such file"):
        build_graph(str(tmp_path / "none.onnx"))


def test_onnx__folded_epilogues_leave_no_relu_op():
    g = build_graph(zoo.resnet50(shapes_only=True), fold_epilogues=True)
    assert "Relu" not in g.op_types and len(g.graph.ops) == 53 + 1 + 16 + 2
    add = g.graph.ops[g.op_types.index("Add")]
    relu = COSTS.tile_cost("elementwise", add.m, add.n)  # the ReLU folded into the add
    assert add.vector_cycles_per_elem == pytest.approx(COSTS.tile_cost("elementwise", add.m, add.n, inputs=2) + relu)


@pytest.mark.parametrize("arch,int8", [(NPU2, False), (NPU1, True)])
def test_onnx__small_cnn_runs_end_to_end(arch, int8):
    g = build_graph(zoo.build("small_cnn", int8=int8, shapes_only=True), arch)
    ds = simulate_onnx(g, arch)
    assert (ds.op_seconds.values > 0).all() and ds.sizes["op"] == len(g.graph.ops)
    assert list(ds.dataflow.values[:1]) == ["conv"] and ds.attrs["compute_dtype"] == ("int8" if int8 else "bf16")
    s = onnx_summary(ds, top=3)
    assert s["seconds"] == pytest.approx(float(ds.op_seconds.sum()) + s["dispatch_seconds"] + s["control_seconds"])
    assert len(s["top_layers"]) == 3 and s["energy_j"] > 0 and s["bytes_by_level"]["ddr_read"] > 0
    assert s["macs"] == macs(g.graph)


def test_onnx__an_encoder_layer_runs_end_to_end_with_its_attention():
    g = build_graph(zoo.build("encoder_int8", shapes_only=True))
    ds = simulate_onnx(g, NPU2)
    s = onnx_summary(ds, top=3)
    assert (ds.op_seconds.values > 0).all() and s["compute_dtype"] == "int8"
    assert s["by_class"]["attention"] > 0 and s["by_class"]["softmax"] > 0
    assert float(ds.tokens_per_s) == pytest.approx(128 / s["seconds"])


def test_onnx__cli_prints_latency_layers_bytes_and_energy(tmp_path):
    from click.testing import CliRunner

    from fastsim.cli import main

    path = tmp_path / "cnn.onnx"
    zoo.save("small_cnn", str(path))
    out = CliRunner().invoke(main, ["run", "onnx", str(path), "--top", "2"])
    assert out.exit_code == 0, out.output
    for words in ("latency", "bound by", "energy", "ddr_read", "top 2 layers"):
        assert words in out.output
    out = CliRunner().invoke(main, ["run", "--arch", "npu1", "onnx", str(path), "--json", "--fold-epilogues"])
    s = json.loads(out.output)
    assert s["arch"] == "npu1" and "Relu" not in s["by_type"] and s["units"]["seconds"] == "s"
    bad = CliRunner().invoke(main, ["run", "onnx", str(path), "--cpu-fallback", "TopK"])
    assert bad.exit_code == 2 and "cpu_fallback[TopK]" in bad.output


def test_onnx__a_custom_domain_op_and_a_cubic_resize_are_refused_by_name():
    """A contrib op that shares a standard name (com.microsoft Gelu) is not the standard one, and
    a cubic resize costs more than the copy fastsim models: both are named, never run as if."""
    nodes = [helper.make_node("Gelu", ["x"], ["a"], domain="com.microsoft"),
             helper.make_node("Resize", ["a", "", "sc"], ["y"], mode="cubic")]
    scales = helper.make_tensor("sc", TensorProto.FLOAT, [4], [1.0, 1.0, 2.0, 2.0])
    model = _model(nodes, [_value("x", [1, 4, 8, 8])], [_value("y", [1, 4, 16, 16])], [scales])
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(ConfigError) as e:
        build_graph(model)
    assert "com.microsoft.Gelu" in str(e.value) and "mode 'cubic'" in str(e.value)


def test_onnx__cli_trace_writes_the_timeline_of_every_op(tmp_path):
    """``run onnx --trace`` writes the Perfetto timeline run llm writes: one slice per op, named
    after it, and dispatches whose slices add up to the reported latency (host ops included)."""
    from click.testing import CliRunner

    from fastsim.cli import main

    path, trace = tmp_path / "m.onnx", tmp_path / "t.json"
    import onnx

    onnx.save_model(_with_unsupported(), str(path))
    args = ["run", "onnx", str(path), "--cpu-fallback", "Cos,ConvTranspose", "--host-seconds", "Cos=1e-4",
            "--host-seconds", "ConvTranspose=5e-4", "--json", "--trace", str(trace)]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    s = json.loads(out.stdout)
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert s["trace_events"] == len(slices) > 0
    ops = [e for e in slices if e["tid"] == 1]
    assert [e["name"] for e in ops] == ["Cos_0", "Cos_1", "ConvTranspose_2", "Relu_3"]
    assert [e["args"]["bound_by"] for e in ops[:3]] == ["host"] * 3
    dispatches = [e for e in slices if e["tid"] == 0 and e["name"].startswith("dispatch ")]
    assert sum(e["dur"] for e in dispatches) == pytest.approx(s["seconds"] * 1e6)
    bad = CliRunner().invoke(main, args[:-1] + [str(tmp_path / "no" / "such" / "t.json")])
    assert bad.exit_code == 2 and "--trace = " in bad.output and "Traceback" not in bad.output
