"""tf.layers: dense (variable names, shapes, sharing, activation, rank > 2 inputs,
regularizers), flatten and dropout, with names and messages as TF1's legacy layers give them."""

import numpy as np
import pytest

import engine as tf

F = np.float32
rng = np.random.default_rng(0)


def _vars():
    return {v.name: v.shape.as_list() for v in tf.global_variables()}


# -----------------------------------------------------------------------------------------
# dense
# -----------------------------------------------------------------------------------------


def test_dense_variable_names_and_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.dense(x, 4, activation=tf.nn.relu)
    y2 = tf.layers.dense(x, 5)
    assert (y.name, y.shape.as_list()) == ("dense/Relu:0", [None, 4])
    assert (y2.name, y2.shape.as_list()) == ("dense_1/BiasAdd:0", [None, 5])
    assert _vars() == {
        "dense/kernel:0": [3, 4],
        "dense/bias:0": [4],
        "dense_1/kernel:0": [3, 5],
        "dense_1/bias:0": [5],
    }
    assert [v.name for v in tf.trainable_variables()] == list(_vars())
    ops = {o.name: o.type for o in tf.get_default_graph().get_operations()}
    assert ops["dense/MatMul"] == "MatMul" and ops["dense/BiasAdd"] == "BiasAdd"
    assert ops["dense/kernel/Initializer/random_uniform"] == "AddV2"
    assert ops["dense/bias/Initializer/zeros"] == "Const"


def test_dense_values_match_numpy():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.dense(x, 4, activation=tf.nn.relu, bias_initializer=tf.constant_initializer(0.5))
    xv = rng.standard_normal((6, 3)).astype(F)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias, got = sess.run(["dense/kernel:0", "dense/bias:0", y], {x: xv})
    # Glorot-uniform kernel: limit sqrt(6 / (3 + 4)).
    assert np.abs(kernel).max() <= np.sqrt(6 / 7) and np.abs(kernel).max() > 0
    np.testing.assert_array_equal(bias, np.full(4, 0.5, F))
    np.testing.assert_allclose(got, np.maximum(xv @ kernel + bias, 0), rtol=1e-6, atol=1e-6)
    assert got.min() >= 0


def test_dense_reuse_by_name():
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.variable_scope("foo"):
        y1 = tf.layers.dense(x, 2, name="d")
    y2 = tf.layers.dense(x, 2, name="foo/d", reuse=True)
    y3 = tf.layers.dense(x, 2)
    y4 = tf.layers.dense(x, 2, name="dense", reuse=True)
    assert y1.name == "foo/d/BiasAdd:0" and y2.name == "foo/d_1/BiasAdd:0"
    assert y4.name == "dense_1/BiasAdd:0"
    assert _vars() == {
        "foo/d/kernel:0": [3, 2],
        "foo/d/bias:0": [2],
        "dense/kernel:0": [3, 2],
        "dense/bias:0": [2],
    }
    # The shared layer reads the same kernel.
    assert y2.op.inputs[0].op.inputs[1].op.inputs[0] is y1.op.inputs[0].op.inputs[1].op.inputs[0]
    xv = rng.standard_normal((2, 3)).astype(F)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c, d = sess.run([y1, y2, y3, y4], {x: xv})
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c, d)


def test_dense_reuse_errors():
    x = tf.placeholder(tf.float32, [2, 3])
    tf.layers.dense(x, 2, name="d")
    with pytest.raises(ValueError, match="Variable d/kernel already exists, disallowed"):
        tf.layers.dense(x, 2, name="d")
    with pytest.raises(
        ValueError,
        match=r"Trying to share variable d/kernel, but specified "
        r"shape \(4, 2\) and found shape \(3, 2\)",
    ):
        tf.layers.dense(tf.placeholder(tf.float32, [2, 4]), 2, name="d", reuse=True)
    with pytest.raises(ValueError, match="Variable e/kernel does not exist"):
        tf.layers.dense(x, 2, name="e", reuse=True)
    with tf.variable_scope("outer", reuse=tf.AUTO_REUSE):
        a = tf.layers.dense(x, 2, name="shared")
        b = tf.layers.dense(x, 2, name="shared")
    assert a.name != b.name
    assert len([v for v in tf.global_variables() if v.name.startswith("outer/")]) == 2


def test_dense_rank3_inputs_with_unknown_batch():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    y = tf.layers.dense(x, 4, use_bias=False, activation=tf.nn.tanh)
    assert y.shape.as_list() == [None, 5, 4] and y.op.type == "Tanh"
    assert _vars() == {"dense/kernel:0": [3, 4]}
    assert "dense/Tensordot" in {o.name for o in tf.get_default_graph().get_operations()}
    z = tf.layers.dense(tf.placeholder(tf.float32, [None, None, 3]), 2)
    assert z.shape.as_list() == [None, None, 2]
    xv = rng.standard_normal((2, 5, 3)).astype(F)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, got = sess.run(["dense/kernel:0", y], {x: xv})
        got_z = sess.run(z, {"Placeholder_1:0": rng.standard_normal((4, 7, 3))})
    np.testing.assert_allclose(got, np.tanh(xv @ kernel), rtol=1e-5, atol=1e-6)
    assert got_z.shape == (4, 7, 2)


def test_dense_options():
    x = tf.placeholder(tf.float64, [None, 2])
    y = tf.layers.dense(
        x,
        3,
        kernel_initializer=tf.ones_initializer(),
        trainable=False,
        kernel_regularizer=tf.nn.l2_loss,
        bias_regularizer=tf.nn.l2_loss,
        activity_regularizer=tf.nn.l2_loss,
    )
    assert y.dtype == tf.float64
    assert tf.trainable_variables() == []
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name for t in losses] == [
        "dense/kernel/Regularizer/L2Loss:0",
        "dense/bias/Regularizer/L2Loss:0",
        "dense/ActivityRegularizer/truediv:0",
    ]
    xv = np.array([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, kernel_loss, bias_loss, activity = sess.run([y] + losses, {x: xv})
    np.testing.assert_array_equal(out, [[3.0] * 3, [7.0] * 3])
    assert kernel_loss == 3.0 and bias_loss == 0.0
    assert activity == pytest.approx((9 * 3 + 49 * 3) / 2 / 2)  # per example


def test_dense_errors():
    with pytest.raises(
        ValueError,
        match=r"Input 0 of layer dense is incompatible with the "
        r"layer: : expected min_ndim=2, found ndim=1. Full "
        r"shape received: \(3,\)",
    ):
        tf.layers.dense(tf.placeholder(tf.float32, [3]), 2)
    for shape in ([3, None], None):
        with pytest.raises(
            ValueError,
            match="The last dimension of the inputs to `Dense` should be defined. Found `None`.",
        ):
            tf.layers.dense(tf.placeholder(tf.float32, shape), 2)
    with pytest.raises(
        TypeError,
        match="Unable to build `Dense` layer with non-floating point dtype <dtype: 'int32'>",
    ):
        tf.layers.dense(tf.placeholder(tf.int32, [2, 3]), 2)


def test_layers_namespace():
    names = set(tf.layers.__all__)
    assert {"dense", "dropout", "flatten", "conv2d", "max_pooling2d", "Dense", "Conv2D"} <= names
    assert all(callable(getattr(tf.layers, n)) for n in names)


# -----------------------------------------------------------------------------------------
# flatten
# -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, static, feed_shape",
    [
        ([None, 5, 3], [None, 15], (2, 5, 3)),
        ([4, None, 3], [4, None], (4, 2, 3)),
        ([None, None, 3], [None, None], (2, 4, 3)),
        (None, [None, None], (3, 2, 2)),
        ([4], [4, 1], (4,)),
        ([2, 3], [2, 3], (2, 3)),
    ],
)
def test_flatten(shape, static, feed_shape):
    x = tf.placeholder(tf.float32, shape)
    y = tf.layers.flatten(x)
    assert y.shape.as_list() == static and y.name.startswith("flatten/")
    xv = rng.standard_normal(feed_shape).astype(F)
    with tf.Session() as sess:
        got = sess.run(y, {x: xv})
    np.testing.assert_array_equal(got, xv.reshape(feed_shape[0], -1))


def test_flatten_names_and_errors():
    x = tf.placeholder(tf.float32, [None, 2, 2])
    assert tf.layers.flatten(x).name == "flatten/Reshape:0"
    assert tf.layers.flatten(x).name == "flatten_1/Reshape:0"
    assert tf.layers.flatten(x, name="flat").name == "flat/Reshape:0"
    with pytest.raises(
        ValueError,
        match=r"expected min_ndim=1, found ndim=0. Full shape "
        r"received: \(\)",
    ):
        tf.layers.flatten(tf.constant(1.0))


# -----------------------------------------------------------------------------------------
# dropout
# -----------------------------------------------------------------------------------------


def test_dropout_inference_is_identity():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.dropout(x, 0.3)
    assert (y.op.type, y.name) == ("Identity", "dropout/Identity:0")
    assert tf.layers.dropout(x, 0.3, training=tf.constant(False)).op.type == "Identity"
    xv = rng.standard_normal((4, 3)).astype(F)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: xv}), xv)


def test_dropout_training_masks_and_scales():
    x = tf.placeholder(tf.float32, [None, 400])
    y = tf.layers.dropout(x, rate=0.25, training=True, seed=7)
    assert y.name == "dropout/dropout/SelectV2:0" and y.shape.as_list() == [None, 400]
    xv = np.full((250, 400), 2.0, F)
    with tf.Session() as sess:
        got = sess.run(y, {x: xv})
    dropped = got == 0
    assert abs(dropped.mean() - 0.25) < 0.01
    np.testing.assert_allclose(got[~dropped], 2.0 / 0.75, rtol=1e-6)
    assert abs(got.mean() - 2.0) < 0.05  # the expectation is preserved


def test_dropout_noise_shape_with_unknown_dims():
    x = tf.placeholder(tf.float32, [None, 6])
    y = tf.layers.dropout(x, 0.5, noise_shape=[None, 1], training=True)
    with tf.Session() as sess:
        got = sess.run(y, {x: np.ones((40, 6), F)})
    # One decision per row, shared along the row.
    assert (got == got[:, :1]).all()
    assert set(np.unique(got)) == {0.0, 2.0}


def test_dropout_training_placeholder_chooses_at_run_time():
    x = tf.placeholder(tf.float32, [None, 50])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, 0.5, training=training)
    assert y.shape.as_list() == [None, 50] and y.name.startswith("dropout/")
    xv = np.ones((40, 50), F)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: xv, training: False}), xv)
        got = sess.run(y, {x: xv, training: True})
    assert set(np.unique(got)) == {0.0, 2.0}
    assert abs((got == 0).mean() - 0.5) < 0.05


def test_dropout_errors():
    x = tf.placeholder(tf.float32, [2])
    with pytest.raises(
        ValueError, match="Invalid value 1.5 received for `rate`, expected a value between 0 and 1."
    ):
        tf.layers.dropout(x, 1.5, training=True)
    assert tf.layers.dropout(x, 0.0, training=True) is x  # rate 0: the input itself


def test_reentering_a_scope_reuses_layer_default_names():
    # As TF: leaving a variable scope forgets its sub-scopes' default names, so a model
    # function called again under reuse=True finds conv2d, dense, ... not conv2d_1.
    def model(x, reuse):
        with tf.variable_scope("Net", reuse=reuse):
            h = tf.layers.dense(x, 3, name=None)
            return tf.layers.dense(h, 2)

    x = tf.placeholder(tf.float32, [None, 4])
    model(x, False)
    model(x, True)
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == [
        "Net/dense/bias",
        "Net/dense/kernel",
        "Net/dense_1/bias",
        "Net/dense_1/kernel",
    ]
