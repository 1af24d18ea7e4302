"""engine.onnx.export: checked by onnx.checker and run in onnxruntime."""

from pathlib import Path

import numpy as np
import pytest

import engine as tf

onnx = pytest.importorskip("onnx", reason="exports are checked with onnx.checker")
ort = pytest.importorskip("onnxruntime", reason="exports are run in onnxruntime")

MODELS = Path(__file__).resolve().parents[2] / "models"
rng = np.random.default_rng(5)


def _ort(data, feeds):
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def test_export_bundled_digits_saved_model(tmp_path):
    path = tmp_path / "digits.onnx"
    data = tf.onnx.export(str(MODELS / "digits" / "1"), path)
    assert path.read_bytes() == data
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    images = rng.integers(0, 17, (5, 64)).astype(np.float32)
    got = _ort(data, {"images": images})
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.load(sess, ["serve"], str(MODELS / "digits" / "1"))
        sig = meta.signature_def["serving_default"]
        want = sess.run(
            {k: v.name for k, v in sig.outputs.items()}, {sig.inputs["images"].name: images}
        )
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["classes"], want["classes"])
    # And back: the exported model imports into the engine with the same results.
    back = tf.onnx.import_model(data)
    with tf.Session(graph=back.graph) as sess:
        probs = sess.run(
            back.signature.outputs["probabilities"].name,
            {back.signature.inputs["images"].name: images},
        )
    np.testing.assert_allclose(probs, want["probabilities"], rtol=1e-5, atol=1e-6)


def test_export_graph_with_many_op_kinds():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.constant(rng.standard_normal((4, 6)).astype(np.float32))
        h = tf.nn.relu6(tf.matmul(x, w, transpose_b=False))
        r = tf.reshape(h, [-1, 2, 3])
        t = tf.transpose(r, [0, 2, 1])
        m = tf.reduce_mean(tf.square(t), axis=[1], keepdims=False)
        s = tf.reduce_sum(tf.concat([m, tf.sqrt(m + 1.0)], axis=1), axis=1)
        y = tf.where_v2(s > 1.0, tf.nn.sigmoid(s), tf.tanh(s))
        idx = tf.argmax(tf.nn.log_softmax(h), axis=1, output_type=tf.int32)
        e = tf.expand_dims(tf.cast(idx, tf.float32), 1)
    data = tf.onnx.export(g, inputs={"x": x}, outputs={"y": y, "idx": idx, "e": e})
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    xv = rng.standard_normal((3, 4)).astype(np.float32)
    got = _ort(data, {"x": xv})
    with tf.Session(graph=g) as sess:
        want = sess.run({"y": y, "idx": idx, "e": e}, {x: xv})
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_export_names_every_op_without_an_equivalent():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.cumsum(tf.nn.l2_loss(x) + tf.reduce_logsumexp(x, axis=1))
    with pytest.raises(tf.onnx.ExportError, match="without an ONNX equivalent: .*Cumsum.*L2Loss"):
        tf.onnx.export(g, inputs={"x": x}, outputs={"y": y})


def test_export_needs_the_session_for_variables():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        v = tf.Variable([1.0, 2.0], name="v")
        y = x * v
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.onnx.ExportError, match="pass the session"):
                tf.onnx.export(g, inputs={"x": x}, outputs={"y": y})
            data = tf.onnx.export(g, inputs={"x": x}, outputs={"y": y}, session=sess)
    np.testing.assert_array_equal(_ort(data, {"x": np.ones(2, np.float32)})["y"], [1.0, 2.0])
