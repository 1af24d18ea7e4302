"""TensorFlow GraphDefs: parsed from TF's bytes and text, imported with TF1 semantics, and
compared with the outputs TensorFlow recorded (tests/fixtures/tensorflow/frozen_graph)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import engine as tf
from engine.formats.tensorflow import graph_def as tfg
from engine.formats.tensorflow.proto import function_pb2, graph_pb2, types_pb2
from engine.formats.tensorflow.tensors import TFFormatError, array_to_proto
from engine.formats.tensorflow.writer import graph_to_tf

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow"
FROZEN = FIXTURES / "frozen_graph"
OUTPUTS = ["probs", "cat", "picked", "sel", "top_values", "classes", "rsqrt"]


def _run(gd, feeds, fetches, **kwargs):
    g = tf.Graph()
    with g.as_default():
        outs = tf.import_graph_def(gd, return_elements=fetches, **kwargs)
        with tf.Session() as sess:
            return sess.run(outs, feeds), g


@pytest.mark.parametrize("how", ["ParseFromString", "FromString", "raw bytes", "pbtxt"])
def test_frozen_graph_matches_tensorflow(how):
    io = np.load(FROZEN / "io.npz")
    data = (FROZEN / "model.pb").read_bytes()
    if how == "ParseFromString":
        gd = tf.GraphDef()
        gd.ParseFromString(data)
    elif how == "FromString":
        gd = tf.GraphDef.FromString(data)
    elif how == "raw bytes":
        gd = data
    else:
        gd = tf.GraphDef.from_text((FROZEN / "model.pbtxt").read_text())
    got, _ = _run(gd, {"import/x:0": io["x"]}, [f"{n}:0" for n in OUTPUTS])
    for name, value in zip(OUTPUTS, got):
        want = io[name]
        assert value.dtype == want.dtype, name
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_einsum_graph_matches_tensorflow():
    io = np.load(FIXTURES / "einsum" / "io.npz")
    names = ["scores", "proj", "total"]
    feeds = {"import/q:0": io["q"], "import/k:0": io["k"]}
    fetches = [f"{n}/Einsum:0" for n in names]
    got, g = _run((FIXTURES / "einsum" / "model.pb").read_bytes(), feeds, fetches)
    assert g.get_operation_by_name("import/total/Einsum").type == "Einsum"
    assert g.get_tensor_by_name("import/scores/Einsum:0").shape.as_list() == [None, 3, 5]
    assert g.get_tensor_by_name("import/proj/Einsum:0").shape.as_list() == [None, 3, 2]
    for name, value in zip(names, got):
        np.testing.assert_allclose(value, io[name], rtol=1e-5, atol=1e-5, err_msg=name)
    # written back as TF's GraphDef (with TF's N and T attrs), it imports and runs the same
    written = graph_to_tf(g)
    node = next(n for n in written.node if n.name == "import/scores/Einsum")
    assert node.attr["N"].i == 2 and node.attr["T"].type == types_pb2.DT_FLOAT
    again, _ = _run(
        written.SerializeToString(),
        {f"import/{k}": v for k, v in feeds.items()},
        [f"import/{f}" for f in fetches],
    )
    for a, b in zip(got, again):
        np.testing.assert_array_equal(a, b)


def test_input_map_prefix_and_return_operations():
    io = np.load(FROZEN / "io.npz")
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(io["x"])
        probs, op = tf.import_graph_def(
            (FROZEN / "model.pb").read_bytes(),
            input_map={"x": x},
            return_elements=["probs:0", "classes"],
            name="net",
        )
        assert probs.name == "net/probs:0" and op.name == "net/classes"
        assert g.get_operation_by_name("net/x").type == "Placeholder"
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(probs), io["probs"], rtol=1e-5)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="nope:0"):
        tf.import_graph_def((FROZEN / "model.pb").read_bytes(), input_map={"nope": x})


def _node(gd, name, op, inputs=(), **attrs):
    n = gd.node.add(name=name, op=op)
    n.input.extend(inputs)
    for k, v in attrs.items():
        n.attr[k].CopyFrom(v)
    return n


def _av(**kw):
    from engine.formats.tensorflow.proto.attr_value_pb2 import AttrValue

    return AttrValue(**kw)


def _const(gd, name, value):
    arr = np.asarray(value)
    t = array_to_proto(arr)
    return _node(gd, name, "Const", value=_av(tensor=t), dtype=_av(type=t.dtype))


def test_control_inputs_class_attrs_and_default_attrs():
    gd = graph_pb2.GraphDef()
    _const(gd, "a", np.array([[1.0, 2.0]], np.float32))
    _const(gd, "b", np.array([[3.0], [4.0]], np.float32))
    _node(gd, "init", "NoOp")
    _node(
        gd,
        "mm",
        "MatMul",
        ["a", "b:0", "^init"],
        transpose_a=_av(b=False),
        transpose_b=_av(b=False),
        T=_av(type=types_pb2.DT_FLOAT),
        grad_a=_av(b=False),  # attr newer than us, at its default: tolerated
        _class=_av(list={"s": [b"loc:@a"]}),
    )
    (value,), g = _run(gd.SerializeToString(), {}, ["mm:0"], name="")
    assert value.tolist() == [[11.0]]
    assert [op.name for op in g.get_operation_by_name("mm").control_inputs] == ["init"]
    gd.node[-1].attr["grad_a"].b = True
    with pytest.raises(tfg.UnsupportedOpsError, match="grad_a=True"):
        tf.GraphDef.FromString(gd.SerializeToString())


def test_every_attr_kind_decodes():
    t = array_to_proto(np.zeros((2, 2), np.float32))
    typed = graph_pb2.GraphDef()
    # value lists shorter than the shape repeat their last value, as in TF
    c = _node(typed, "c", "Const", dtype=_av(type=types_pb2.DT_INT32))
    c.attr["value"].tensor.dtype = types_pb2.DT_INT32
    c.attr["value"].tensor.tensor_shape.dim.add(size=4)
    c.attr["value"].tensor.int_val.extend([7, 9])
    s = _node(typed, "s", "Const", dtype=_av(type=types_pb2.DT_STRING))
    s.attr["value"].tensor.dtype = types_pb2.DT_STRING
    s.attr["value"].tensor.string_val.extend([b"hi", b"\xff"])
    s.attr["value"].tensor.tensor_shape.dim.add(size=2)
    _node(typed, "raw", "Const", value=_av(tensor=t), dtype=_av(type=types_pb2.DT_FLOAT))
    p = _node(typed, "p", "Placeholder", dtype=_av(type=types_pb2.DT_FLOAT))
    p.attr["shape"].shape.dim.add(size=-1)
    p.attr["shape"].shape.dim.add(size=2)
    _node(typed, "q", "Placeholder", dtype=_av(type=types_pb2.DT_FLOAT), shape=_av())
    typed.node[-1].attr["shape"].shape.unknown_rank = True
    sq = _node(typed, "sq", "Squeeze", ["raw"], T=_av(type=types_pb2.DT_FLOAT))
    sq.attr["squeeze_dims"].list.i.extend([])
    (cv, sv, pv), g = _run(
        typed, {"p:0": np.ones((3, 2), np.float32)}, ["c:0", "s:0", "p:0"], name=""
    )
    assert cv.tolist() == [7, 9, 9, 9]
    assert sv.tolist() == [b"hi", b"\xff"]
    assert g.get_tensor_by_name("p:0").shape.as_list() == [None, 2]
    assert g.get_tensor_by_name("q:0").shape.ndims is None


def _call_graph():
    """y = f(x) where f(x) = g(x) * 2 and g(x) = x + 1, through StatefulPartitionedCall."""
    gd = graph_pb2.GraphDef()
    g_fn = gd.library.function.add()
    g_fn.signature.name = "g"
    g_fn.signature.input_arg.add(name="x", type=types_pb2.DT_FLOAT)
    g_fn.signature.output_arg.add(name="out", type=types_pb2.DT_FLOAT)
    one = g_fn.node_def.add(name="one", op="Const")
    one.attr["value"].tensor.CopyFrom(array_to_proto(np.float32(1.0)))
    one.attr["dtype"].type = types_pb2.DT_FLOAT
    add = g_fn.node_def.add(name="add", op="AddV2", input=["x", "one:output:0"])
    add.attr["T"].type = types_pb2.DT_FLOAT
    g_fn.ret["out"] = "add:z:0"
    f_fn = gd.library.function.add()
    f_fn.signature.name = "f"
    f_fn.signature.input_arg.add(name="x", type=types_pb2.DT_FLOAT)
    f_fn.signature.output_arg.add(name="y", type=types_pb2.DT_FLOAT)
    f_fn.signature.output_arg.add(name="same", type=types_pb2.DT_FLOAT)
    call = f_fn.node_def.add(name="inner", op="PartitionedCall", input=["x"])
    call.attr["f"].func.name = "g"
    two = f_fn.node_def.add(name="two", op="Const")
    two.attr["value"].tensor.CopyFrom(array_to_proto(np.float32(2.0)))
    two.attr["dtype"].type = types_pb2.DT_FLOAT
    f_fn.node_def.add(name="mul", op="Mul", input=["inner:output:0", "two:output:0"])
    f_fn.ret["y"] = "mul:z:0"
    f_fn.ret["same"] = "x"
    p = _node(gd, "x", "Placeholder", dtype=_av(type=types_pb2.DT_FLOAT))
    p.attr["shape"].shape.dim.add(size=-1)
    c = _node(gd, "call", "StatefulPartitionedCall", ["x"])
    c.attr["f"].func.name = "f"
    _node(gd, "out", "Identity", ["call:0"])
    return gd


def test_function_calls_are_inlined_nested():
    gd = _call_graph()
    (y, same, out), g = _run(
        gd, {"x:0": np.array([1.0, 2.0], np.float32)}, ["call:0", "call:1", "out:0"], name=""
    )
    assert y.tolist() == [4.0, 6.0] and same.tolist() == [1.0, 2.0] and out.tolist() == [4.0, 6.0]
    assert g.get_operation_by_name("call").type == "IdentityN"
    assert g.get_operation_by_name("call/inner/add").type == "AddV2"


def test_function_call_errors():
    gd = _call_graph()
    gd.node[1].attr["f"].func.name = "missing"
    with pytest.raises(ValueError, match="unknown function 'missing'"):
        tf.GraphDef.FromString(gd.SerializeToString())
    gd = _call_graph()
    gd.library.function[0].node_def[1].input[1] = "nothere:output:0"
    with pytest.raises(ValueError, match="bad reference"):
        tf.GraphDef.FromString(gd.SerializeToString())
    # a function calling itself is bounded, not a RecursionError
    gd = _call_graph()
    gd.library.function[1].node_def[0].attr["f"].func.name = "f"
    with pytest.raises(ValueError, match="nested"):
        tf.GraphDef.FromString(gd.SerializeToString())


def test_missing_ops_are_reported_all_at_once():
    gd = graph_pb2.GraphDef()
    _const(gd, "a", np.float32(1.0))
    _node(gd, "u1", "FancyOp", ["a"])
    _node(gd, "u2", "FancyOp", ["u1"])
    _node(gd, "v", "OtherOp", ["a"])
    with pytest.raises(tfg.UnsupportedOpsError) as e:
        tf.GraphDef.FromString(gd.SerializeToString())
    assert e.value.missing == {"FancyOp": ["u1", "u2"], "OtherOp": ["v"]}
    assert "FancyOp (2 nodes, e.g. 'u1')" in str(e.value) and "OtherOp" in str(e.value)


@pytest.mark.parametrize(
    "mutate",
    ["truncate", "garbage", "huge_tensor", "content_size", "bad_dtype", "too_many_values"],
)
def test_hostile_graph_defs_raise_typed_errors(mutate):
    data = (FROZEN / "model.pb").read_bytes()
    if mutate == "truncate":
        data = data[: len(data) // 2 + 3]
    elif mutate == "garbage":
        data = bytes(np.random.RandomState(0).randint(0, 256, 4000, dtype=np.uint8))
        data = b"\x0a" + data
    else:
        gd = graph_pb2.GraphDef()
        n = _node(gd, "c", "Const", dtype=_av(type=types_pb2.DT_FLOAT))
        t = n.attr["value"].tensor
        t.dtype = types_pb2.DT_FLOAT
        if mutate == "huge_tensor":
            t.tensor_shape.dim.add(size=1 << 40)
            t.float_val.append(1.0)
        elif mutate == "content_size":
            t.tensor_shape.dim.add(size=4)
            t.tensor_content = b"\x00" * 15
        elif mutate == "bad_dtype":
            t.dtype = 99
        else:
            t.tensor_shape.dim.add(size=1)
            t.float_val.extend([1.0, 2.0])
        data = gd.SerializeToString()
    with pytest.raises(ValueError):
        tf.import_graph_def(data)


def test_empty_graph_def_imports_nothing():
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(b"")
    assert g.get_operations() == []


def test_function_attrs_keep_working_for_engine_graphs():
    # The engine's own msgpack documents still take the msgpack path.
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0, name="c")
    data = g.as_graph_def().to_bytes()
    assert not tfg.is_tf_graph_def_bytes(data)
    assert len(tf.GraphDef.FromString(data)) == 1


def test_unused_function_library_entries_are_ignored():
    gd = _call_graph()
    extra = gd.library.function.add()
    extra.CopyFrom(function_pb2.FunctionDef())
    extra.signature.name = "unused"
    extra.node_def.add(name="z", op="NotAnOp")
    tf.GraphDef.FromString(gd.SerializeToString())


def _doubling_if_chain(levels: int) -> graph_pb2.GraphDef:
    """f0 .. f{levels}: each f_k holds an If whose two branches both call f_{k+1}."""
    gd = graph_pb2.GraphDef()
    for k in range(levels + 1):
        f = gd.library.function.add()
        f.signature.name = f"f{k}"
        f.signature.input_arg.add(name="x", type=types_pb2.DT_FLOAT)
        f.signature.output_arg.add(name="y", type=types_pb2.DT_FLOAT)
        if k == levels:
            f.ret["y"] = "x"
            continue
        p = f.node_def.add(name="p", op="Const")
        p.attr["dtype"].type = types_pb2.DT_BOOL
        p.attr["value"].tensor.CopyFrom(array_to_proto(np.array(True)))
        n = f.node_def.add(name="cond", op="StatelessIf", input=["p:output:0", "x"])
        n.attr["then_branch"].func.name = f"f{k + 1}"
        n.attr["else_branch"].func.name = f"f{k + 1}"
        f.ret["y"] = "cond:output:0"
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    x.attr["shape"].shape.unknown_rank = True
    call = gd.node.add(name="call", op="PartitionedCall", input=["x"])
    call.attr["f"].func.name = "f0"
    return gd


def test_functional_control_flow_nests_and_its_size_is_bounded(monkeypatch):
    got, _ = _run(_doubling_if_chain(3), {"import/x:0": np.float32(2.5)}, ["call:0"])
    assert got[0] == np.float32(2.5)
    # functions referenced over and over count every time: the budget covers them all
    monkeypatch.setattr(tfg.GraphLimits, "max_nodes", 200)
    with pytest.raises(ValueError, match="more than 200 nodes"):
        tfg.inline_functions(_doubling_if_chain(8))


def test_output_args_table_matches_the_op_definitions_tensorflow_registers():
    """``node:arg:index`` references in function bodies resolve through OUTPUT_ARGS: every
    engine op TF defines with several (or list-valued) outputs must be listed as TF lists
    them (tests/fixtures/tensorflow/tf_output_args.json, written by make_fixtures.py)."""
    import json

    from engine.formats.tensorflow import op_table
    from engine.framework import registry

    recorded = json.loads((FIXTURES / "tf_output_args.json").read_text())
    wrong = {}
    for op_type in registry.registered_types():
        if op_type not in recorded or len(recorded[op_type]) == 1:
            continue  # one output arg, list-valued or not, starts at output 0
        want = tuple(name if attr is None else (name, attr) for name, attr in recorded[op_type])
        if op_table.OUTPUT_ARGS.get(op_type) != want:
            wrong[op_type] = want
    assert not wrong, f"OUTPUT_ARGS entries missing or unlike TF's: {wrong}"


def test_list_valued_output_args_resolve_by_their_length_attrs():
    from engine.formats.tensorflow.proto import attr_value_pb2

    attrs = {
        "Nsparse": attr_value_pb2.AttrValue(i=2),
        "sparse_types": attr_value_pb2.AttrValue(
            list=attr_value_pb2.AttrValue.ListValue(type=[types_pb2.DT_INT64] * 2)
        ),
        "Tdense": attr_value_pb2.AttrValue(
            list=attr_value_pb2.AttrValue.ListValue(type=[types_pb2.DT_FLOAT])
        ),
    }
    offsets = [
        tfg._output_offset("ParseExample", arg, "test", attrs)
        for arg in ("sparse_indices", "sparse_values", "sparse_shapes", "dense_values")
    ]
    assert offsets == [0, 2, 4, 6]
    with pytest.raises(TFFormatError, match="lacks attr 'Nsparse'"):
        tfg._output_offset("ParseExample", "dense_values", "test", {})
    with pytest.raises(TFFormatError, match="has no output arg 'nope'"):
        tfg._output_offset("ParseExample", "nope", "test", attrs)
