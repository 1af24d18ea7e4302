"""``tf.graph_util``: freezing (against TensorFlow's recording), sub-graph extraction and
inference-time pruning."""

import numpy as np
import pytest

import engine as tf
from engine.formats.tensorflow.proto import graph_pb2
from engine.formats.tensorflow.writer import graph_to_tf
from engine.saving.graph_def import GraphDef
from tests.engine.fixtures import make_graph_util_fixtures as fx
from tests.engine.fixtures.oracle import assert_recorded, load

REC = load("graph_util_tf.npz")


def _run_frozen(graph_def, x):
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=g) as sess:
            return sess.run("y:0", {"x:0": x})


def test_frozen_model_matches_tensorflow_and_the_trained_session():
    frozen, y_trained = fx.train_and_freeze(tf, tf.graph_util)
    assert isinstance(frozen, GraphDef)
    assert_recorded(y_trained, REC["tf_y_trained"], "y_trained", rtol=1e-5, atol=1e-6)
    ops = frozen.op_counts()
    assert "VariableV2" not in ops and ops["Const"] == 3
    # Pruned to what y needs: no loss, gradients, optimizer or initializers.
    assert sorted(ops) == ["AddV2", "Const", "Identity", "MatMul", "Placeholder", "Relu"]
    np.testing.assert_array_equal(_run_frozen(frozen, fx.X_NEW), y_trained)
    # The same through bytes: a frozen graph needs no session state.
    np.testing.assert_array_equal(_run_frozen(frozen.SerializeToString(), fx.X_NEW), y_trained)


def test_tensorflow_loads_the_engines_frozen_graph():
    data, y_trained = fx.engine_frozen_tf_bytes()
    recorded = graph_pb2.GraphDef.FromString(REC["engine_pb"].tobytes())
    assert graph_pb2.GraphDef.FromString(data) == recorded, "the graph TF loaded has changed"
    # TensorFlow, given the engine's frozen graph, computed the trained model's outputs.
    assert_recorded(REC["engine_frozen_y"], y_trained, "tf_on_engine_pb", rtol=1e-6)
    assert_recorded(REC["tf_frozen_y"], y_trained, "tf_frozen", rtol=1e-5, atol=1e-6)
    got = sorted(f"{n.name} {n.op}" for n in recorded.node)
    assert got == REC["engine_nodes"].tolist()
    # TF's own frozen graph has the same computation (its reads are resource reads).
    compute = {s for s in REC["tf_nodes"].tolist() if not s.endswith(" Identity")}
    assert compute == {s for s in got if not s.endswith(" Identity")}
    # And the engine imports TF's bytes back, with the same outputs.
    np.testing.assert_array_equal(_run_frozen(recorded, fx.X_NEW), y_trained)


def _small_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        v = tf.Variable([1.0, 2.0], name="v")
        u = tf.Variable([5.0, 6.0], name="u")
        a = tf.add(x, v, name="a")
        with tf.control_dependencies([a]):
            b = tf.multiply(a, u, name="b")
        tf.identity(b, name="out")
        tf.negative(x, name="unused")
    return g


def test_extract_sub_graph_keeps_order_and_control_inputs():
    gd = _small_graph().as_graph_def()
    sub = tf.graph_util.extract_sub_graph(gd, ["b"])
    names = [n.name for n in sub.node]
    assert names == [n.name for n in gd.node if n.name in set(names)]
    assert {"x", "v", "v/read", "u", "u/read", "a", "b"} <= set(names)
    assert "unused" not in names and "out" not in names
    assert [n.name for n in tf.graph_util.extract_sub_graph(gd, ["x"]).node] == ["x"]
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(gd, ["nope"])
    with pytest.raises(TypeError, match="dest_nodes must be an iterable of strings"):
        tf.graph_util.extract_sub_graph(gd, "b")
    with pytest.raises(TypeError, match="graph_def must be a GraphDef"):
        tf.graph_util.extract_sub_graph(b"junk", ["b"])


def test_whitelist_and_blacklist_choose_the_variables_frozen():
    g = _small_graph()
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        convert = tf.graph_util.convert_variables_to_constants
        gd = g.as_graph_def()
        only_v = convert(sess, gd, ["out"], variable_names_whitelist=["v"])
        not_v = convert(sess, gd, ["out"], variable_names_blacklist=["v"])
        both = convert(sess, gd, ["out"])
    ops = {k: {n.name: n.op for n in d.node} for k, d in (("v", only_v), ("nv", not_v))}
    assert ops["v"]["v"] == "Const" and ops["v"]["u"] == "VariableV2"
    assert ops["nv"]["v"] == "VariableV2" and ops["nv"]["u"] == "Const"
    const = {n.name: n for n in both.node}
    np.testing.assert_array_equal(const["u"].attr["value"], [5.0, 6.0])
    with tf.Graph().as_default(), tf.Session() as s2:
        tf.import_graph_def(both, name="")
        np.testing.assert_array_equal(s2.run("out:0", {"x:0": [1.0, 1.0]}), [10.0, 18.0])


def test_freezing_a_tensorflow_graph_def_proto():
    g = _small_graph()

    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        frozen = tf.graph_util.convert_variables_to_constants(sess, graph_to_tf(g), ["out"])
    assert "VariableV2" not in frozen.op_counts()
    np.testing.assert_array_equal(_run_frozen_out(frozen), [10.0, 18.0])


def _run_frozen_out(graph_def):
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(graph_def, name="")
        return sess.run("out:0", {"x:0": [1.0, 1.0]})


def test_remove_training_nodes_splices_identities_like_tensorflow():
    doc = {
        "format": "flowserve.graph",
        "version": 1,
        "nodes": [
            {"name": "x", "op": "Placeholder", "inputs": [], "device": "", "attrs": {}},
            {"name": "chk", "op": "CheckNumerics", "inputs": ["x:0"], "device": "", "attrs": {}},
            {"name": "i1", "op": "Identity", "inputs": ["x:0"], "device": "", "attrs": {}},
            {"name": "i2", "op": "StopGradient", "inputs": ["i1:0"], "device": "", "attrs": {}},
            {"name": "c", "op": "Identity", "inputs": ["x:0", "^chk"], "device": "", "attrs": {}},
            {"name": "ctl", "op": "Identity", "inputs": ["x:0"], "device": "", "attrs": {}},
            {"name": "y", "op": "Neg", "inputs": ["i2:0", "^ctl"], "device": "", "attrs": {}},
            {"name": "out", "op": "Identity", "inputs": ["y:0"], "device": "", "attrs": {}},
        ],
    }
    gd = GraphDef(doc)
    got = {n.name: n.input for n in tf.graph_util.remove_training_nodes(gd, ["out"]).node}
    # CheckNumerics goes (and the control input on it); the Identity chain is spliced; an
    # Identity used as a control input and a protected one stay; one with a control input
    # (removed here with its CheckNumerics, as TF decides before removing it) is spliced.
    assert list(got) == ["x", "ctl", "y", "out"]
    assert got["y"] == ["x:0", "^ctl"] and got["out"] == ["y:0"]
    kept = tf.graph_util.remove_training_nodes(gd)
    assert [n.name for n in kept.node] == ["x", "ctl", "y"]
    assert doc["nodes"][2]["inputs"] == ["x:0"], "the input graph is not modified"


def test_must_run_on_cpu_and_tensor_shape_from_node_def_name():
    g = tf.Graph()
    with g.as_default():
        i = tf.constant([1, 2], name="i")
        f = tf.constant([1.0], name="f")
        s = tf.constant(["a"], name="s")
        c = tf.cast(i, tf.float32)
        v = tf.Variable(1.0, name="v")
        tf.placeholder(tf.float32, [None, 4], name="p")
    cpu = tf.graph_util.must_run_on_cpu
    assert cpu(i.op) and cpu(s.op) and cpu(c.op) and cpu(i.op.node_def)
    assert not cpu(f.op) and not cpu(v.op) and cpu(v.op, pin_variables_on_cpu=True)
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "p").as_list() == [None, 4]
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "i:0").as_list() == [2]
    with pytest.raises(TypeError):
        cpu("Const")
