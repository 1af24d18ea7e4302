"""tf.layers convolution, pooling and batch-normalization layers, functional and classes:
variable names and shapes, op names, values against numpy, sharing, and batch norm's moving
averages through UPDATE_OPS."""

import numpy as np
import pytest

import engine as tf
from tests.engine.test_conv_ops import np_conv, np_pool

F = np.float32
rng = np.random.default_rng(11)


def _vars():
    return {v.name: v.shape.as_list() for v in tf.global_variables()}


def test_conv_and_pooling_layers_names_shapes_and_values():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    y = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    p = tf.layers.max_pooling2d(y, 2, 2)
    a = tf.layers.average_pooling2d(p, [2, 2], 1, padding="same")
    t = tf.layers.conv2d_transpose(a, 2, 3, strides=2, padding="valid")
    assert (y.name, y.shape.as_list()) == ("conv2d/Relu:0", [None, 8, 8, 4])
    assert (p.name, p.shape.as_list()) == ("max_pooling2d/MaxPool:0", [None, 4, 4, 4])
    assert (a.name, a.shape.as_list()) == ("average_pooling2d/AvgPool:0", [None, 4, 4, 4])
    assert t.shape.as_list() == [None, 9, 9, 2] and t.name == "conv2d_transpose/BiasAdd:0"
    assert _vars() == {
        "conv2d/kernel:0": [3, 3, 3, 4],
        "conv2d/bias:0": [4],
        "conv2d_transpose/kernel:0": [3, 3, 2, 4],
        "conv2d_transpose/bias:0": [2],
    }
    xv = rng.standard_normal((2, 8, 8, 3)).astype(F)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k, b, yv, pv, av, tv = sess.run(["conv2d/kernel:0", "conv2d/bias:0", y, p, a, t], {x: xv})
    want = np.maximum(np_conv(xv, k, (1, 1), "SAME") + b, 0)
    np.testing.assert_allclose(yv, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pv, np_pool(yv, (2, 2), (2, 2), "VALID", "max"), rtol=1e-6)
    np.testing.assert_allclose(av, np_pool(pv, (2, 2), (1, 1), "SAME", "avg"), rtol=1e-5)
    assert tv.shape == (2, 9, 9, 2)


def test_channels_first_conv_layer_matches_channels_last():
    xv = rng.standard_normal((2, 6, 6, 3)).astype(F)
    init = tf.constant_initializer(rng.standard_normal((3, 3, 3, 5)).astype(F))
    a = tf.layers.conv2d(tf.constant(xv), 5, 3, strides=2, kernel_initializer=init)
    b = tf.layers.conv2d(
        tf.constant(xv.transpose(0, 3, 1, 2)),
        5,
        3,
        strides=2,
        kernel_initializer=init,
        data_format="channels_first",
    )
    assert b.shape.as_list() == [2, 5, 2, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        av, bv = sess.run([a, b])
    np.testing.assert_allclose(bv.transpose(0, 2, 3, 1), av, rtol=1e-5, atol=1e-5)


def test_layer_classes_share_their_variables():
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    conv = tf.layers.Conv2D(3, [2, 2], activation=tf.nn.relu)
    dense = tf.layers.Dense(4)
    y1 = dense(tf.layers.Flatten()(conv(x)))
    y2 = dense(tf.layers.Flatten()(conv(x)))
    assert conv.kernel.name == "conv2d/kernel:0" and dense.bias.name == "dense/bias:0"
    assert [v.name for v in conv.trainable_variables] == ["conv2d/kernel:0", "conv2d/bias:0"]
    assert len(tf.global_variables()) == 4
    xv = rng.standard_normal((3, 6, 6, 2)).astype(F)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([y1, y2], {x: xv})
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("axis,rank", [(-1, 4), (1, 4), (-1, 2)])
def test_batch_normalization_training_updates_moving_averages(axis, rank):
    shape = (8, 3) if rank == 2 else (4, 3, 5, 2)
    xv = (rng.standard_normal(shape) * 2 + 3).astype(F)
    x = tf.placeholder(tf.float32, shape)
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, axis=axis, momentum=0.9, training=training)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    assert sorted(v.name for v in tf.trainable_variables()) == [
        "batch_normalization/beta:0",
        "batch_normalization/gamma:0",
    ]
    axes = tuple(i for i in range(rank) if i != axis % rank)
    mean = xv.astype(np.float64).mean(axes)
    var = xv.astype(np.float64).var(axes)
    n = xv.size / xv.shape[axis]
    fused = rank == 4
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        yv, _ = sess.run([y, updates], {x: xv, training: True})
        mm, mv = sess.run(
            ["batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
        )
        # Inference reads the moving averages and leaves them alone.
        yi, _ = sess.run([y, updates], {x: xv, training: False})
        mm2 = sess.run("batch_normalization/moving_mean:0")
    bshape = [1] * rank
    bshape[axis] = -1
    want = (xv - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-3)
    np.testing.assert_allclose(yv, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mm, 0.1 * mean, rtol=1e-5)
    # The fused op's batch variance carries Bessel's correction, as in TF.
    batch_var = var * n / (n - 1) if fused else var
    np.testing.assert_allclose(mv, 0.9 + 0.1 * batch_var, rtol=1e-5)
    np.testing.assert_allclose(mm2, mm, rtol=0)
    want_i = (xv - mm.reshape(bshape)) / np.sqrt(mv.reshape(bshape) + 1e-3)
    np.testing.assert_allclose(yi, want_i, rtol=1e-4, atol=1e-4)


def test_layer_argument_errors():
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    with pytest.raises(ValueError, match="padding"):
        tf.layers.conv2d(x, 2, 3, padding="full")
    with pytest.raises(ValueError, match="data_format"):
        tf.layers.max_pooling2d(x, 2, 2, data_format="nhwc")
    with pytest.raises(ValueError, match="expected ndim=4"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 4, 3]), 2, 3)
    with pytest.raises(ValueError, match="channel dimension"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 4, 4, None]), 2, 3)
