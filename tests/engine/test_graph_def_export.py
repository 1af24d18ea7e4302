"""GraphDef.SerializeToString and tf.train.write_graph write TensorFlow's formats, as TF1
programs expect when they save a frozen.pb or a graph.pbtxt for TF, TF Serving or
TensorBoard; graphs TF cannot express fall back to the engine's own bytes."""

import numpy as np

import engine as tf
from engine.formats.tensorflow.proto import graph_pb2


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.constant(np.array([[1.0], [2.0]], np.float32), name="w")
        tf.nn.relu(tf.matmul(x, w), name="y")
    return g


def test_serialize_to_string_is_tensorflow_binary_and_reads_back():
    data = _graph().as_graph_def().SerializeToString()
    message = graph_pb2.GraphDef.FromString(data)
    assert [n.name for n in message.node] == ["x", "w", "MatMul", "y"]
    assert message.node[3].op == "Relu" and list(message.node[3].input) == ["MatMul"]
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(tf.GraphDef.FromString(data), name="")
        with tf.Session() as sess:
            out = sess.run("y:0", {"x:0": np.array([[1.0, 1.0], [-3.0, 1.0]], np.float32)})
    np.testing.assert_array_equal(out, [[3.0], [0.0]])


def test_graphs_tensorflow_cannot_express_keep_the_engines_bytes(monkeypatch):
    from engine.formats.tensorflow import writer
    from engine.formats.tensorflow.tensors import TFFormatError

    def refuse(_graph):
        raise TFFormatError("an op TensorFlow has no form for")

    monkeypatch.setattr(writer, "graph_to_tf", refuse)
    gd = _graph().as_graph_def()
    data = gd.SerializeToString()
    assert data == gd.to_bytes()
    assert [n.name for n in tf.GraphDef.FromString(data).node] == ["x", "w", "MatMul", "y"]


def test_write_graph_writes_pbtxt_and_binary(tmp_path):
    g = _graph()
    text_path = tf.train.write_graph(g, str(tmp_path), "graph.pbtxt", as_text=True)
    text = open(text_path, encoding="utf-8").read()
    assert 'name: "y"' in text and 'op: "Relu"' in text
    assert [n.name for n in tf.GraphDef.from_text(text).node] == ["x", "w", "MatMul", "y"]
    bin_path = tf.train.write_graph(g.as_graph_def(), str(tmp_path), "graph.pb", as_text=False)
    message = graph_pb2.GraphDef.FromString(open(bin_path, "rb").read())
    assert len(message.node) == 4
