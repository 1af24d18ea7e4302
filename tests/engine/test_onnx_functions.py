"""Model-local ONNX functions (``ModelProto.functions``), inlined at import: checked against
onnxruntime, which runs the same models."""

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx.functions import MAX_CALL_DEPTH
from engine.formats.onnx.mapping import UnsupportedModelError
from engine.formats.onnx.tensors import OnnxFormatError

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper  # noqa: E402

F = TensorProto.FLOAT
rng = np.random.default_rng(5)
LOCAL = "local.fns"


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def make(nodes, inputs, outputs, functions, opset=18, fn_domains=(LOCAL,)):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in fn_domains]
    m = helper.make_model(graph, opset_imports=imports, functions=functions)
    m.ir_version = 9
    return m.SerializeToString()


def function(name, inputs, outputs, nodes, attributes=(), defaults=(), opset=18, domain=LOCAL):
    f = helper.make_function(
        domain,
        name,
        list(inputs),
        list(outputs),
        nodes,
        [helper.make_opsetid("", opset)] + [helper.make_opsetid(LOCAL, 1)],
        attributes=list(attributes),
    )
    f.attribute_proto.extend(defaults)
    return f


def ref_attr(name, ref, kind):
    a = helper.make_attribute_ref(name, kind)
    a.ref_attr_name = ref
    return a


def compare(data, feeds, rtol=1e-6, atol=1e-6):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    m = tf.onnx.import_model(data)
    names = list(m.signature.outputs)
    with tf.Session(graph=m.graph) as sess:
        got = sess.run(
            [m.signature.outputs[n].name for n in names],
            {m.signature.inputs[k].name: v for k, v in feeds.items()},
        )
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return m, got


def linear_relu():
    return function(
        "LinearRelu",
        ["x", "w", "b"],
        ["y"],
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["z"]),
            helper.make_node("Relu", ["z"], ["y"]),
        ],
    )


def test_two_calls_of_one_function_keep_their_values_apart():
    nodes = [
        helper.make_node("LinearRelu", ["x", "w1", "b1"], ["h"], domain=LOCAL, name="layer1"),
        helper.make_node("LinearRelu", ["h", "w2", "b2"], ["y"], domain=LOCAL, name="layer2"),
    ]
    inputs = [vi("x", [2, 4]), vi("w1", [4, 5]), vi("b1", [5]), vi("w2", [5, 3]), vi("b2", [3])]
    data = make(nodes, inputs, [vi("y", [2, 3])], [linear_relu()])
    feeds = {
        "x": rng.normal(size=(2, 4)).astype(np.float32),
        "w1": rng.normal(size=(4, 5)).astype(np.float32),
        "b1": rng.normal(size=5).astype(np.float32),
        "w2": rng.normal(size=(5, 3)).astype(np.float32),
        "b2": rng.normal(size=3).astype(np.float32),
    }
    m, _ = compare(data, feeds)
    assert m.op_histogram == {"MatMul": 2, "Add": 2, "Relu": 2}


def test_attribute_references_take_the_call_value_then_the_default_then_the_op_default():
    leaky = function(
        "Leaky",
        ["x"],
        ["y"],
        [helper.make_node("LeakyRelu", ["x"], ["y"])],
        defaults=[helper.make_attribute("alpha", 0.5)],
    )
    leaky.node[0].attribute.append(ref_attr("alpha", "alpha", onnx.AttributeProto.FLOAT))
    # No default: an unset reference drops the attribute (Elu's own alpha=1.0 applies).
    elu = function("MyElu", ["x"], ["y"], [helper.make_node("Elu", ["x"], ["y"])], ["a"])
    elu.node[0].attribute.append(ref_attr("alpha", "a", onnx.AttributeProto.FLOAT))
    nodes = [
        helper.make_node("Leaky", ["x"], ["set"], domain=LOCAL, alpha=0.1),
        helper.make_node("Leaky", ["x"], ["default"], domain=LOCAL),
        helper.make_node("MyElu", ["x"], ["elu_set"], domain=LOCAL, a=0.25),
        helper.make_node("MyElu", ["x"], ["elu_default"], domain=LOCAL),
    ]
    outs = [vi(n, [6]) for n in ("set", "default", "elu_set", "elu_default")]
    data = make(nodes, [vi("x", [6])], outs, [leaky, elu])
    x = np.array([-3, -1, -0.5, 0, 0.5, 2], np.float32)
    _, got = compare(data, {"x": x})
    np.testing.assert_allclose(got[0][:2], [-0.3, -0.1], rtol=1e-6)
    np.testing.assert_allclose(got[1][:2], [-1.5, -0.5], rtol=1e-6)
    np.testing.assert_allclose(got[3][0], np.expm1(-3.0), rtol=1e-6)


def test_nested_calls_and_calls_inside_subgraphs():
    inner = function(
        "Inner",
        ["a"],
        ["sq", "neg"],
        [helper.make_node("Mul", ["a", "a"], ["sq"]), helper.make_node("Neg", ["a"], ["neg"])],
    )
    then_g = helper.make_graph(
        [helper.make_node("Inner", ["v"], ["t_out", "t_neg"], domain=LOCAL)],
        "then",
        [],
        [vi("t_out", [3])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["v", "v"], ["e_out"])], "else", [], [vi("e_out", [3])]
    )
    outer = function(
        "Outer",
        ["v", "flag"],
        ["r"],
        [helper.make_node("If", ["flag"], ["r"], then_branch=then_g, else_branch=else_g)],
    )
    nodes = [helper.make_node("Outer", ["x", "c"], ["y"], domain=LOCAL)]
    inputs = [vi("x", [3]), vi("c", [], TensorProto.BOOL)]
    data = make(nodes, inputs, [vi("y", [3])], [outer, inner])
    x = np.array([1.5, -2, 3], np.float32)
    _, got = compare(data, {"x": x, "c": np.array(True)})
    np.testing.assert_array_equal(got[0], x * x)
    _, got = compare(data, {"x": x, "c": np.array(False)})
    np.testing.assert_array_equal(got[0], np.zeros(3, np.float32))


def test_a_function_with_its_own_older_opset_uses_that_opsets_operator_forms():
    # Squeeze takes its axes as an attribute up to opset 12, as an input from 13.
    old = function(
        "Drop0", ["x"], ["y"], [helper.make_node("Squeeze", ["x"], ["y"], axes=[0])], opset=11
    )
    nodes = [
        helper.make_node("Drop0", ["x"], ["s"], domain=LOCAL),
        helper.make_node("Squeeze", ["x", "axes"], ["t"]),
    ]
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [0])
    graph = helper.make_graph(nodes, "g", [vi("x", [1, 4])], [vi("s", [4]), vi("t", [4])], [axes])
    m = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(LOCAL, 1)],
        functions=[old],
    )
    m.ir_version = 9
    x = rng.normal(size=(1, 4)).astype(np.float32)
    model = tf.onnx.import_model(m.SerializeToString())
    with tf.Session(graph=model.graph) as sess:
        s, t = sess.run(
            [model.signature.outputs["s"].name, model.signature.outputs["t"].name],
            {model.signature.inputs["x"].name: x},
        )
    np.testing.assert_array_equal(s, x[0])
    np.testing.assert_array_equal(t, x[0])


def test_overloads_and_domains_select_the_right_body():
    double = function("Op", ["x"], ["y"], [helper.make_node("Add", ["x", "x"], ["y"])])
    square = function("Op", ["x"], ["y"], [helper.make_node("Mul", ["x", "x"], ["y"])])
    square.overload = "sq"
    other = function(
        "Op", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])], domain="other.fns"
    )
    call = helper.make_node("Op", ["x"], ["b"], domain=LOCAL)
    call.overload = "sq"
    nodes = [
        helper.make_node("Op", ["x"], ["a"], domain=LOCAL),
        call,
        helper.make_node("Op", ["x"], ["c"], domain="other.fns"),
    ]
    outs = [vi(n, [3]) for n in "abc"]
    data = make(
        nodes, [vi("x", [3])], outs, [double, square, other], fn_domains=(LOCAL, "other.fns")
    )
    x = np.array([1, 2, 3], np.float32)
    model = tf.onnx.import_model(data)
    with tf.Session(graph=model.graph) as sess:
        got = sess.run(
            [model.signature.outputs[n].name for n in "abc"], {model.signature.inputs["x"].name: x}
        )
    np.testing.assert_array_equal(got[0], 2 * x)
    np.testing.assert_array_equal(got[1], x * x)
    np.testing.assert_array_equal(got[2], -x)


def _single_call(fn, call_kwargs=None, inputs=("x",)):
    call = helper.make_node(fn.name, list(inputs), ["y"], domain=LOCAL, **(call_kwargs or {}))
    return make([call], [vi("x", [2])], [vi("y", [2])], [fn])


def test_recursion_is_refused():
    loop = function("Loop1", ["x"], ["y"], [helper.make_node("Loop1", ["x"], ["y"], domain=LOCAL)])
    with pytest.raises(UnsupportedModelError, match="Loop1 calls itself"):
        tf.onnx.import_model(_single_call(loop))


def test_call_chains_deeper_than_the_limit_are_refused():
    fns = [
        function(f"F{i}", ["x"], ["y"], [helper.make_node(f"F{i + 1}", ["x"], ["y"], domain=LOCAL)])
        for i in range(MAX_CALL_DEPTH + 1)
    ]
    fns.append(
        function(f"F{MAX_CALL_DEPTH + 1}", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])])
    )
    data = make(
        [helper.make_node("F0", ["x"], ["y"], domain=LOCAL)], [vi("x", [2])], [vi("y", [2])], fns
    )
    with pytest.raises(UnsupportedModelError, match=f"deeper than {MAX_CALL_DEPTH}"):
        tf.onnx.import_model(data)


def test_bad_calls_name_what_was_wrong():
    neg = function("N", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])], ["k"])
    with pytest.raises(
        OnnxFormatError, match=r"sets attribute\(s\) \['bogus'\].*declared: \['k'\]"
    ):
        tf.onnx.import_model(_single_call(neg, {"bogus": 1}))
    with pytest.raises(
        OnnxFormatError, match="has 2 inputs and 1 outputs; the function declares 1"
    ):
        tf.onnx.import_model(_single_call(neg, inputs=("x", "x")))


def test_unsupported_operators_inside_a_function_are_reported_by_name():
    fn = function("Odd", ["x"], ["y"], [helper.make_node("ImageDecoder", ["x"], ["y"])])
    data = _single_call(fn)
    with pytest.raises(UnsupportedModelError, match="ImageDecoder"):
        tf.onnx.import_model(data)
    assert tf.onnx.summarize(data).unsupported == {"ImageDecoder": 1}


def test_an_output_the_call_leaves_empty_is_still_computed_for_the_body():
    # "t" feeds "y" inside the body; the call names only "y" (its "t" is the empty name).
    fn = function(
        "TwoOut",
        ["x"],
        ["t", "y"],
        [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["y"])],
    )
    call = helper.make_node("TwoOut", ["x"], ["", "y"], domain=LOCAL)
    data = make([call], [vi("x", [3])], [vi("y", [3])], [fn])
    compare(data, {"x": np.array([-1.0, 2.0, -3.0], np.float32)})


def test_body_names_never_collide_with_graph_names_that_look_scoped():
    fn = function(
        "H",
        ["x"],
        ["y"],
        [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["y"])],
    )
    nodes = [
        helper.make_node("Abs", ["x"], ["H__call1/t"]),
        helper.make_node("H", ["x"], ["h"], domain=LOCAL),
        helper.make_node("Add", ["h", "H__call1/t"], ["y"]),
    ]
    data = make(nodes, [vi("x", [2])], [vi("y", [2])], [fn])
    compare(data, {"x": np.array([-1.0, 2.0], np.float32)})


def test_calls_that_fan_out_without_leaf_nodes_are_bounded():
    # Each level calls the next 300 times; only call nodes, so no operator is ever counted.
    fns = [
        function(
            f"Fan{i}",
            ["x"],
            ["y"],
            [helper.make_node(f"Fan{i + 1}", ["x"], [f"t{k}"], domain=LOCAL) for k in range(300)]
            + [helper.make_node("Identity", ["x"], ["y"])],
        )
        for i in range(3)
    ]
    fns.append(function("Fan3", ["x"], ["y"], [helper.make_node("Identity", ["x"], ["y"])]))
    data = make(
        [helper.make_node("Fan0", ["x"], ["y"], domain=LOCAL)], [vi("x", [2])], [vi("y", [2])], fns
    )
    with pytest.raises(UnsupportedModelError, match="more than .* nodes"):
        tf.onnx.import_model(data)
