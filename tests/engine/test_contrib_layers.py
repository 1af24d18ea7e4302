"""tf.contrib.layers' layer functions: variable names as TF 1.15's contrib names them (so TF1
checkpoints restore), defaults, and values against numpy references."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf

layers = tf.contrib.layers
X = np.random.RandomState(11).uniform(-1, 1, (2, 6, 6, 3)).astype(np.float32)


def _names():
    return sorted(v.op.name for v in tf.global_variables())


def _conv_valid(x, w):
    kh, kw = w.shape[:2]
    out = np.zeros((x.shape[0], x.shape[1] - kh + 1, x.shape[2] - kw + 1, w.shape[3]), np.float32)
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j] = np.tensordot(x[:, i : i + kh, j : j + kw], w, axes=3)
    return out


def test_conv2d_and_fully_connected_name_and_compute_as_contrib():
    with tf.Graph().as_default():
        x = tf.constant(X)
        init = tf.constant_initializer
        h = layers.conv2d(x, 4, 3, padding="VALID", weights_initializer=init(0.1),
                          biases_initializer=init(-0.2))  # fmt: skip
        again = layers.conv2d(x, 2, [1, 1], activation_fn=None)
        out = layers.fully_connected(layers.flatten(h), 5)
        seq = layers.fully_connected(tf.constant(X[:, :, 0]), 3, activation_fn=None, scope="proj")
        assert _names() == [
            "Conv/biases",
            "Conv/weights",
            "Conv_1/biases",
            "Conv_1/weights",
            "fully_connected/biases",
            "fully_connected/weights",
            "proj/biases",
            "proj/weights",
        ]
        assert again.shape.as_list() == [2, 6, 6, 2]  # SAME and stride 1 by default
        assert seq.shape.as_list() == [2, 6, 3]  # over the last axis of a rank-3 input
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, o = sess.run([h, out])
    want = np.maximum(_conv_valid(X, np.full((3, 3, 3, 4), 0.1, np.float32)) - 0.2, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert o.shape == (2, 5) and (o >= 0).all()  # ReLU by default


def test_normalizer_fn_replaces_the_biases_and_batch_norm_trains_its_averages():
    with tf.Graph().as_default():
        training = tf.placeholder_with_default(False, [], name="training")
        h = layers.conv2d(tf.constant(X), 4, 3, activation_fn=None,
                          weights_initializer=tf.constant_initializer(0.05),
                          normalizer_fn=layers.batch_norm,
                          normalizer_params={"is_training": training, "scale": True,
                                             "decay": 0.9})  # fmt: skip
        assert _names() == [
            "Conv/BatchNorm/beta",
            "Conv/BatchNorm/gamma",
            "Conv/BatchNorm/moving_mean",
            "Conv/BatchNorm/moving_variance",
            "Conv/weights",
        ]
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert len(updates) == 2
        by_name = {v.op.name: v for v in tf.global_variables()}
        mean = by_name["Conv/BatchNorm/moving_mean"]
        variance = by_name["Conv/BatchNorm/moving_variance"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            trained = sess.run(h, {training: True})
            raw = sess.run(tf.get_default_graph().get_tensor_by_name("Conv/Conv2D:0"))
            sess.run(updates, {training: True})
            moved, moved_var = sess.run([mean, variance])
            inferred = sess.run(h)
    np.testing.assert_allclose(trained.mean(axis=(0, 1, 2)), 0, atol=1e-5)
    batch_var = raw.var(axis=(0, 1, 2))
    np.testing.assert_allclose(
        trained.var(axis=(0, 1, 2)), batch_var / (batch_var + 1e-3), rtol=1e-4
    )
    np.testing.assert_allclose(moved, raw.mean(axis=(0, 1, 2)) * 0.1, rtol=1e-5)
    n = raw.size // raw.shape[-1]  # the fused kernel's unbiased variance moves the average
    np.testing.assert_allclose(moved_var, 0.9 + 0.1 * batch_var * n / (n - 1), rtol=1e-5)
    assert not np.allclose(inferred, trained)  # inference reads the moving averages


def test_batch_norm_without_an_updates_collection_updates_as_it_runs():
    with tf.Graph().as_default():
        x = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))
        y = layers.batch_norm(x, updates_collections=None, decay=0.5, scope="bn")
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(y)
            np.testing.assert_allclose(sess.run("bn/moving_mean:0"), [1.5, 2.0])
            # a 2-D input moves the variance by the batch's biased variance
            np.testing.assert_allclose(sess.run("bn/moving_variance:0"), [3.0, 3.0])


def test_pools_dropout_and_embed_sequence():
    with tf.Graph().as_default():
        x = tf.constant(X)
        mx, av = layers.max_pool2d(x, 2), layers.avg_pool2d(x, [2, 3], stride=1, padding="SAME")
        kept = layers.dropout(x, keep_prob=0.5, is_training=False)
        emb = layers.embed_sequence(tf.constant([[1, 2], [0, 9]]), vocab_size=10, embed_dim=3,
                                    initializer=tf.constant_initializer(0.5))  # fmt: skip
        assert _names() == ["EmbedSequence/embeddings"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            m, a, k, e = sess.run([mx, av, kept, emb])
    np.testing.assert_allclose(m, X.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4)))
    assert a.shape == X.shape and e.shape == (2, 2, 3) and (e == 0.5).all()
    np.testing.assert_array_equal(k, X)
    with pytest.raises(ValueError, match="Must specify vocab size"):
        layers.embed_sequence(tf.constant([[1]]))
