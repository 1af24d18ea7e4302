"""Writing TensorFlow's format: SavedModels TF loads (checked against TensorFlow itself by
make_fixtures.py's ``engine_export`` part when fixtures are made; here read back with our
own parsers, as CI has no TensorFlow)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import engine as tf
from engine.formats.tensorflow import checkpoint as ckpt
from engine.formats.tensorflow.proto import saved_model_pb2

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow"


def _mlp(export_dir, fmt="tensorflow"):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.get_variable("dense/w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2))
        b = tf.Variable(np.array([0.5, -1.0], np.float32), name="dense/b")
        y = tf.nn.softmax(tf.matmul(x, w) + b, name="y")
        cls = tf.argmax(y, axis=1, name="cls")
        total = tf.reduce_sum(tf.concat([y, y], axis=1), axis=1, keepdims=True, name="total")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            outputs = {"y": y, "cls": cls, "total": total}
            want = sess.run(outputs, {x: np.ones((2, 3), np.float32)})
            tf.saved_model.simple_save(sess, export_dir, {"x": x}, outputs, format=fmt)
    return want


def test_simple_save_tensorflow_format_reads_back(tmp_path):
    d = str(tmp_path / "m")
    want = _mlp(d)
    assert sorted(p.name for p in pathlib.Path(d).iterdir()) == ["saved_model.pb", "variables"]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], d)
        sig = meta.signature_def["serving_default"]
        got = sess.run(
            {a: i.name for a, i in sig.outputs.items()},
            {sig.inputs["x"].name: np.ones((2, 3), np.float32)},
        )
    for k, v in want.items():
        assert np.array_equal(got[k], v), k


def test_written_graph_has_what_tensorflow_requires(tmp_path):
    d = tmp_path / "m"
    _mlp(str(d))
    sm = saved_model_pb2.SavedModel.FromString((d / "saved_model.pb").read_bytes())
    (mg,) = sm.meta_graphs
    nodes = {n.name: n for n in mg.graph_def.node}
    assert nodes["MatMul"].attr["T"].type == 1
    assert nodes["cls"].attr["Tidx"].type == 3 and nodes["cls"].attr["output_type"].type == 9
    assert nodes["concat"].attr["N"].i == 2
    assert mg.saver_def.restore_op_name == "save/restore_all"
    assert mg.saver_def.filename_tensor_name == "save/Const:0"
    assert nodes["save/RestoreV2"].attr["dtypes"].list.type == [1, 1]
    assert len(mg.collection_def["variables"].bytes_list.value) == 2
    assert mg.signature_def["serving_default"].inputs["x"].name == "x:0"
    reader = ckpt.BundleReader(str(d / "variables" / "variables"))
    assert sorted(reader.names()) == ["dense/b", "dense/w"]
    assert reader.read("dense/b").tolist() == [0.5, -1.0]


def test_tf_saved_model_round_trips_through_the_engine(tmp_path):
    """Load TF's SavedModel, write it in TF's format, load again: same outputs."""
    io = np.load(FIXTURES / "saved_model_ref" / "io.npz")
    out = str(tmp_path / "again")
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.load(sess, ["serve"], str(FIXTURES / "saved_model_ref"))
        b = tf.saved_model.Builder(out)
        sig = tf.saved_model.predict_signature_def(
            {"x": sess.graph.get_tensor_by_name("x:0")},
            {"y": sess.graph.get_tensor_by_name("y:0")},
        )
        b.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": sig})
        b.save(format="tensorflow")
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], out)
        got = sess.run(meta.signature_def["serving_default"].outputs["y"].name, {"x:0": io["x"]})
    np.testing.assert_allclose(got, io["y"], rtol=1e-6)


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="format"):
        _mlp(str(tmp_path / "m"), fmt="onnx")


def test_saver_tensorflow_format_checkpoint_and_meta(tmp_path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2))
        tf.Variable(np.int64(3), name="step")
        tf.matmul(x, w, name="y")
        saver = tf.train.Saver(format="tensorflow")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = saver.save(sess, str(tmp_path / "model"), global_step=7)
    assert ckpt.is_tf_bundle(prefix)
    assert tf.train.list_variables(str(tmp_path)) == [("step", []), ("w", [3, 2])]
    with tf.Graph().as_default():
        restorer = tf.train.import_meta_graph(prefix + ".meta")
        with tf.Session() as sess:
            restorer.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            assert sess.run("y:0", {"x:0": np.ones((1, 3), np.float32)}).tolist() == [[6.0, 9.0]]
            assert sess.run("step:0") == 3
    with pytest.raises(ValueError, match="format"):
        tf.train.Saver(format="pickle")
