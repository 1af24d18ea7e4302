"""tf.nn ops: a table against numpy references (constants, unknown dims, unknown rank), then
names, static shapes, stability, errors (messages from TF) and the composed helpers."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.framework import registry
from tests.conftest import TEST_DEVICE
from tests.engine.optable import Case, check_case

F = np.float32
D = np.float64
I32 = np.int32
rng = np.random.default_rng(0)
a = rng.standard_normal((2, 3)).astype(F)
a64 = rng.standard_normal((3, 4))
a3 = rng.standard_normal((2, 3, 4)).astype(F)
a4 = rng.standard_normal((2, 3, 2, 2)).astype(F)
half = rng.standard_normal((2, 5)).astype(np.float16)
ia = np.array([[7, -7, 3], [0, 5, -2]], I32)
i8 = np.array([-3, 0, 4, 9], np.int8)
u8 = np.array([0, 3, 7, 250], np.uint8)
big = np.array([[1000.0, 0.0, -1000.0], [-1000.0, -1000.0, -999.0]], F)
extreme = np.array([-1000.0, -20.0, -1.0, 0.0, 1.0, 20.0, 1000.0], F)
bias3 = rng.standard_normal(3).astype(F)
bias4 = rng.standard_normal(4).astype(F)
ties = np.array([[3, 1, 3, 2], [1, 1, 1, 1], [0, 5, 5, 4]], I32)
ftie = np.array([2.0, 7.0, -1.0, 7.0, 2.0, 0.5], F)


def np_softmax(x, axis=-1):
    x64 = x.astype(D)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def np_log_softmax(x, axis=-1):
    x64 = x.astype(D)
    s = x64 - x64.max(axis=axis, keepdims=True)
    return (s - np.log(np.exp(s).sum(axis=axis, keepdims=True))).astype(x.dtype)


def np_softplus(x):
    x64 = x.astype(D)
    return (np.maximum(x64, 0) + np.log1p(np.exp(-np.abs(x64)))).astype(x.dtype)


def np_elu(x):
    return np.where(x < 0, np.expm1(np.minimum(x, 0)), x).astype(x.dtype)


def np_top_k(x, k):
    order = np.argsort(-x.astype(D), axis=-1, kind="stable")[..., :k]
    return [np.take_along_axis(x, order, -1), order.astype(I32)]


def np_bias_nchw(x, b):
    return x + b.reshape((-1,) + (1,) * (x.ndim - 2))


def np_moments(x, axes, keepdims=False):
    x64 = x.astype(D)
    mean = x64.mean(axis=tuple(axes), keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=tuple(axes), keepdims=keepdims)
    if not keepdims:
        mean = np.squeeze(mean, axis=tuple(axes))
    return [mean.astype(x.dtype), var.astype(x.dtype)]


def np_batchnorm(x, mean, var, offset, scale, eps):
    inv = 1.0 / np.sqrt(var.astype(D) + eps) * scale
    return (x * inv + (offset - mean * inv)).astype(x.dtype)


def np_erf(x):
    import math

    return np.vectorize(math.erf)(x.astype(D)).astype(x.dtype)


def np_selu(x):
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return np.where(x > 0, scale * x, scale * alpha * np.expm1(np.minimum(x, 0))).astype(x.dtype)


CASES = [
    Case("erf", tf.erf, [a], np_erf, [2, 3]),
    Case("selu", tf.nn.selu, [a], np_selu, [2, 3]),
    Case(
        "gelu",
        tf.nn.gelu,
        [a],
        lambda x: (x * 0.5 * (1 + np_erf(x / np.sqrt(2)))).astype(x.dtype),
        [2, 3],
        rtol=1e-5,
    ),
    Case("relu", tf.nn.relu, [a], lambda x: np.maximum(x, 0), [2, 3]),
    Case("relu_extreme", tf.nn.relu, [extreme], lambda x: np.maximum(x, 0)),
    Case("relu_int32", tf.nn.relu, [ia], lambda x: np.maximum(x, 0).astype(I32)),
    Case("relu_int8", tf.nn.relu, [i8], lambda x: np.maximum(x, 0).astype(np.int8)),
    Case("relu6", tf.nn.relu6, [a * 5], lambda x: np.clip(x, 0, 6)),
    Case("relu6_uint8", tf.nn.relu6, [u8], lambda x: np.minimum(x, 6).astype(np.uint8)),
    Case("leaky_relu", tf.nn.leaky_relu, [a], lambda x: np.where(x > 0, x, F(0.2) * x)),
    Case(
        "leaky_relu_alpha",
        lambda x: tf.nn.leaky_relu(x, alpha=0.1),
        [extreme],
        lambda x: np.where(x > 0, x, F(0.1) * x),
    ),
    Case(
        "leaky_relu_alpha_gt_1",
        lambda x: tf.nn.leaky_relu(x, 2.0),
        [extreme],
        lambda x: np.where(x > 0, x, 2 * x),
    ),
    Case(
        "leaky_relu_int_to_float",
        tf.nn.leaky_relu,
        [ia],
        lambda x: np.where(x > 0, x, 0.2 * x).astype(F),
    ),
    Case("elu", tf.nn.elu, [a], np_elu),
    Case("elu_extreme", tf.nn.elu, [extreme], np_elu),
    Case("elu_f64", tf.nn.elu, [a64], np_elu),
    Case("softplus", tf.nn.softplus, [a], np_softplus),
    Case("softplus_extreme", tf.nn.softplus, [extreme], np_softplus),
    Case("softplus_f64_extreme", tf.nn.softplus, [extreme.astype(D) * 1e3], np_softplus),
    Case("softmax", tf.nn.softmax, [a], np_softmax, [2, 3]),
    Case("softmax_stable", tf.nn.softmax, [big], np_softmax),
    Case("softmax_1d", tf.nn.softmax, [extreme], np_softmax),
    Case("softmax_3d", tf.nn.softmax, [a3], np_softmax, [2, 3, 4]),
    Case("softmax_f64", tf.nn.softmax, [a64], np_softmax),
    Case("softmax_f16", tf.nn.softmax, [half], np_softmax, rtol=2e-3, atol=1e-3),
    Case(
        "softmax_axis0",
        lambda x: tf.nn.softmax(x, axis=0),
        [big],
        lambda x: np_softmax(x, 0),
        [2, 3],
    ),
    Case(
        "softmax_axis1_of_3",
        lambda x: tf.nn.softmax(x, axis=1),
        [a3],
        lambda x: np_softmax(x, 1),
        [2, 3, 4],
    ),
    Case(
        "softmax_dim_alias", lambda x: tf.nn.softmax(x, dim=-2), [a3], lambda x: np_softmax(x, -2)
    ),
    Case("log_softmax", tf.nn.log_softmax, [a], np_log_softmax, [2, 3]),
    Case("log_softmax_stable", tf.nn.log_softmax, [big], np_log_softmax),
    Case("log_softmax_f64", tf.nn.log_softmax, [a64 * 1e3], np_log_softmax),
    Case(
        "log_softmax_axis0",
        lambda x: tf.nn.log_softmax(x, axis=0),
        [big],
        lambda x: np_log_softmax(x, 0),
    ),
    Case(
        "l2_loss",
        tf.nn.l2_loss,
        [a],
        lambda x: np.asarray(np.sum(x.astype(D) ** 2) / 2, F),
        [],
        rtol=1e-5,
    ),
    Case("l2_loss_f64", tf.nn.l2_loss, [a64], lambda x: np.asarray(np.sum(x**2) / 2), []),
    Case("bias_add", tf.nn.bias_add, [a, bias3], lambda x, b: x + b, [2, 3]),
    Case(
        "bias_add_4d",
        tf.nn.bias_add,
        [a4.transpose(0, 2, 3, 1).copy(), bias3],
        lambda x, b: x + b,
        [2, 2, 2, 3],
    ),
    Case("bias_add_int", tf.nn.bias_add, [ia, np.array([1, 2, 3], I32)], lambda x, b: x + b),
    Case(
        "bias_add_nchw_3d",
        lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
        [a3.transpose(0, 2, 1).copy(), bias4],
        np_bias_nchw,
        [2, 4, 3],
    ),
    Case(
        "bias_add_nchw_4d",
        lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
        [a4, bias3],
        np_bias_nchw,
        [2, 3, 2, 2],
    ),
    Case(
        "bias_add_ncw_alias",
        lambda x, b: tf.nn.bias_add(x, b, data_format="NCW"),
        [a3.transpose(0, 2, 1).copy(), bias4],
        np_bias_nchw,
    ),
    Case(
        "top_k",
        lambda x: list(tf.nn.top_k(x, 2)),
        [a3],
        lambda x: np_top_k(x, 2),
        [[2, 3, 2], [2, 3, 2]],
    ),
    Case(
        "top_k_ties",
        lambda x: list(tf.nn.top_k(x, 3)),
        [ties],
        lambda x: np_top_k(x, 3),
        [[3, 3], [3, 3]],
    ),
    Case(
        "top_k_float_ties",
        lambda x: list(tf.nn.top_k(x, 6)),
        [ftie],
        lambda x: np_top_k(x, 6),
        [[6], [6]],
    ),
    Case("top_k_default_k1", lambda x: list(tf.nn.top_k(x)), [ftie], lambda x: np_top_k(x, 1)),
    Case(
        "top_k_zero",
        lambda x: list(tf.nn.top_k(x, 0)),
        [a],
        lambda x: np_top_k(x, 0),
        [[2, 0], [2, 0]],
    ),
    Case(
        "top_k_full_extreme", lambda x: list(tf.nn.top_k(x, 7)), [extreme], lambda x: np_top_k(x, 7)
    ),
    Case("top_k_uint8", lambda x: list(tf.nn.top_k(x, 2)), [u8], lambda x: np_top_k(x, 2)),
    Case(
        "top_k_fed_k",
        lambda x, k: list(tf.nn.top_k(x, k)),
        [ties, np.array(2, I32)],
        lambda x, k: np_top_k(x, 2),
    ),
    Case(
        "moments",
        lambda x: list(tf.nn.moments(x, [0])),
        [a3],
        lambda x: np_moments(x, [0]),
        [[3, 4], [3, 4]],
        rtol=1e-5,
        atol=1e-6,
    ),
    Case(
        "moments_two_axes",
        lambda x: list(tf.nn.moments(x, [0, 2])),
        [a3],
        lambda x: np_moments(x, [0, 2]),
        [[3], [3]],
        rtol=1e-5,
        atol=1e-6,
    ),
    Case(
        "moments_keepdims",
        lambda x: list(tf.nn.moments(x, [1], keep_dims=True)),
        [a3],
        lambda x: np_moments(x, [1], True),
        [[2, 1, 4], [2, 1, 4]],
        rtol=1e-5,
        atol=1e-6,
    ),
    Case(
        "moments_f16",
        lambda x: list(tf.nn.moments(x, [1])),
        [half],
        lambda x: np_moments(x, [1]),
        [[2], [2]],
        rtol=2e-3,
        atol=2e-3,
    ),
    Case(
        "batch_normalization",
        lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
        [a3, bias4, np.abs(bias4) + F(0.5), bias4[::-1].copy(), bias4 * 2],
        lambda x, m, v, o, s: np_batchnorm(x, m, v, o, s, F(1e-3)),
        [2, 3, 4],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "batch_normalization_no_scale_offset",
        lambda x, m, v: tf.nn.batch_normalization(x, m, v, None, None, 0.01),
        [a, bias3, np.abs(bias3) + F(1)],
        lambda x, m, v: np_batchnorm(x, m, v, F(0), F(1), F(0.01)),
        rtol=1e-5,
        atol=1e-5,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_nn_table(case):
    check_case(case)


# -----------------------------------------------------------------------------------------
# Names, types, static shapes
# -----------------------------------------------------------------------------------------


def test_op_types_and_names():
    x = tf.placeholder(tf.float32, [None, 4])
    expected = [
        (tf.nn.relu, "Relu"),
        (tf.nn.relu6, "Relu6"),
        (tf.nn.leaky_relu, "LeakyRelu"),
        (tf.nn.elu, "Elu"),
        (tf.nn.softplus, "Softplus"),
        (tf.nn.softmax, "Softmax"),
        (tf.nn.log_softmax, "LogSoftmax"),
        (tf.nn.l2_loss, "L2Loss"),
    ]
    for fn, op_type in expected:
        y = fn(x)
        assert y.op.type == op_type
        assert y.name == f"{op_type}:0"
    assert tf.nn.l2_loss(x).shape.as_list() == []
    assert tf.nn.relu(x, name="act").name == "act:0"
    assert tf.nn.leaky_relu(x, 0.3).op.get_attr("alpha") == pytest.approx(0.3)
    b = tf.nn.bias_add(x, tf.zeros([4]))
    assert (b.name, b.op.type, b.op.get_attr("data_format")) == ("BiasAdd:0", "BiasAdd", "NHWC")
    # Sigmoid and tanh come from math, under tf.nn too.
    assert tf.nn.sigmoid(x).op.type == "Sigmoid" and tf.nn.tanh(x).op.type == "Tanh"


def test_top_k_outputs():
    x = tf.placeholder(tf.float32, [None, 5])
    result = tf.nn.top_k(x, 2)
    values, indices = result
    assert result.values is values and result.indices is indices
    assert values.op.type == "TopKV2" and values.name == "TopKV2:0"
    assert indices.name == "TopKV2:1" and indices.dtype == tf.int32
    assert values.shape.as_list() == [None, 2] and indices.shape.as_list() == [None, 2]
    assert values.op.inputs[1].op.name == "TopKV2/k"
    unknown_k = tf.nn.top_k(x, tf.placeholder(tf.int32))
    assert unknown_k.values.shape.as_list() == [None, None]
    assert tf.nn.top_k(tf.placeholder(tf.float32), 3).values.shape.rank is None


def test_bias_add_fills_channel_dim_from_bias():
    x = tf.placeholder(tf.float32, [None, None])
    assert tf.nn.bias_add(x, tf.zeros([5])).shape.as_list() == [None, 5]
    x4 = tf.placeholder(tf.float32, [None, None, 2, 2])
    y = tf.nn.bias_add(x4, tf.zeros([3]), data_format="NCHW")
    assert y.shape.as_list() == [None, 3, 2, 2]


def test_moments_names():
    x = tf.placeholder(tf.float32, [None, 4])
    mean, variance = tf.nn.moments(x, [0])
    assert (mean.name, variance.name) == ("moments/Squeeze:0", "moments/Squeeze_1:0")
    assert mean.shape.as_list() == [4] and variance.shape.as_list() == [4]
    names = {o.name for o in tf.get_default_graph().get_operations()}
    assert {
        "moments/mean",
        "moments/variance",
        "moments/StopGradient",
        "moments/SquaredDifference",
    } <= names
    with pytest.raises(ValueError, match="Cannot specify both 'keep_dims' and 'keepdims'"):
        tf.nn.moments(x, [0], keep_dims=True, keepdims=True)


# -----------------------------------------------------------------------------------------
# Stability and values beyond the table
# -----------------------------------------------------------------------------------------


def test_softmax_large_logits_are_finite():
    logits = tf.placeholder(tf.float32, [None, 3])
    feed = {logits: [[1000.0, 1000.0, -1000.0], [1e30, 0.0, -1e30]]}
    with tf.Session() as sess:
        sm, lsm = sess.run([tf.nn.softmax(logits), tf.nn.log_softmax(logits)], feed)
    assert np.isfinite(sm).all() and np.isfinite(lsm).all()
    np.testing.assert_allclose(sm[0], [0.5, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(lsm[0, :2], [np.log(0.5)] * 2, rtol=1e-6)
    assert lsm[0, 2] == pytest.approx(-2000.0 - np.log(2), rel=1e-6)
    np.testing.assert_allclose(sm.sum(axis=-1), [1.0, 1.0], rtol=1e-6)


def test_softplus_large_magnitudes():
    x = tf.constant([-1e4, -100.0, 100.0, 1e4], tf.float32)
    with tf.Session() as sess:
        got = sess.run(tf.nn.softplus(x))
    assert np.isfinite(got).all()
    # A GPU may flush the subnormal e^-100 to zero (TF's GPU kernels do): no closer than that.
    atol = np.finfo(np.float32).tiny if TEST_DEVICE == "gpu" else 1e-45
    np.testing.assert_allclose(got, [0.0, 3.7200760e-44, 100.0, 1e4], rtol=1e-6, atol=atol)


def test_top_k_ties_lower_index_first():
    x = tf.constant([[5, 7, 5, 7, 1]], tf.int32)
    with tf.Session() as sess:
        values, indices = sess.run(tf.nn.top_k(x, 4))
    np.testing.assert_array_equal(values, [[7, 7, 5, 5]])
    np.testing.assert_array_equal(indices, [[1, 3, 0, 2]])


def test_softmax_empty_last_axis():
    x = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        got = sess.run(tf.nn.softmax(x), {x: np.zeros((2, 0), F)})
    assert got.shape == (2, 0) and got.dtype == F


# -----------------------------------------------------------------------------------------
# Errors
# -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn", [tf.nn.softmax, tf.nn.log_softmax, tf.nn.elu, tf.nn.softplus, tf.nn.l2_loss]
)
def test_float_only_ops_reject_ints(fn):
    with pytest.raises(TypeError, match="int32"):
        fn(tf.constant([1, 2]))


def test_relu_rejects_bool():
    with pytest.raises(TypeError, match="bool"):
        tf.nn.relu(tf.constant([True]))


def test_softmax_build_errors():
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"`dim` must be in the range \[-2, 2\) where 2 is the number of "
        r"dimensions in the input. Received: dim=2",
    ):
        tf.nn.softmax(tf.constant([[1.0]]), axis=2)
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):
        tf.nn.softmax(tf.constant([1.0]), axis=0, dim=0)
    with pytest.raises(TypeError, match="int32"):
        tf.nn.softmax(tf.constant([[1, 2]]), axis=0)


def test_softmax_runtime_scalar():
    x = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(
            errors.InvalidArgumentError, match=r"logits must have >= 1 dimension, got \[\]"
        ):
            sess.run(tf.nn.softmax(x), {x: 1.0})


def test_bias_add_build_errors():
    with pytest.raises(ValueError, match="Shape must be at least rank 2 but is rank 1"):
        tf.nn.bias_add(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.nn.bias_add(tf.constant([[1.0, 2.0]]), tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.nn.bias_add(tf.constant([[1.0, 2.0]]), tf.constant([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="Shape must be at least rank 3 but is rank 2"):
        tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3]), data_format="NCHW")
    with pytest.raises(
        ValueError,
        match="`data_format` must be of the form `N...C` or `NC...`. Received: data_format=XX",
    ):
        tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3]), data_format="XX")
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype int32"):
        tf.nn.bias_add(tf.zeros([2, 3]), tf.constant([1, 2, 3]))


def test_bias_add_runtime_errors():
    x, b = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    y = tf.nn.bias_add(x, b)
    with tf.Session() as sess:
        with pytest.raises(
            errors.InvalidArgumentError,
            match=r"Must provide as many biases as the last dimension of the "
            r"input tensor: \[3\] vs. \[1,2\]",
        ):
            sess.run(y, {x: [[1, 2]], b: [1, 2, 3]})
        with pytest.raises(
            errors.InvalidArgumentError, match=r"Input tensor must be at least 2D: \[2\]"
        ):
            sess.run(y, {x: [1, 2], b: [1, 2]})
        with pytest.raises(errors.InvalidArgumentError, match=r"Biases must be 1D: \[1,2\]"):
            sess.run(y, {x: [[1, 2]], b: [[1, 2]]})


def test_top_k_build_errors():
    with pytest.raises(ValueError, match="input must have last dimension >= k = 3 but is 2"):
        tf.nn.top_k(tf.constant([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        tf.nn.top_k(tf.constant(1.0), 1)
    with pytest.raises(
        ValueError, match="Dimension size, given by scalar input 1, must be non-negative but is -1"
    ):
        tf.nn.top_k(tf.constant([1.0, 2.0]), -1)
    with pytest.raises(ValueError, match="Input must be scalar but has rank 1"):
        tf.nn.top_k(tf.constant([1, 2]), tf.constant([1]))
    with pytest.raises(TypeError, match="bool"):
        tf.nn.top_k(tf.constant([True]), 1)


def test_top_k_runtime_errors():
    x, k = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    values, indices = tf.nn.top_k(x, k)
    with tf.Session() as sess:
        with pytest.raises(
            errors.InvalidArgumentError, match="input must have at least k columns. Had 2, needed 3"
        ):
            sess.run([values, indices], {x: [1, 2], k: 3})
        with pytest.raises(errors.InvalidArgumentError, match="Need k >= 0, got -1"):
            sess.run(values, {x: [1, 2], k: -1})
        with pytest.raises(
            errors.InvalidArgumentError, match=r"input must be >= 1-D, got shape \[\]"
        ):
            sess.run(values, {x: 1.0, k: 1})


# -----------------------------------------------------------------------------------------
# dropout
# -----------------------------------------------------------------------------------------


def test_dropout_keep_prob_placeholder_scales_and_zeroes():
    x = tf.ones([200, 200])
    keep = tf.placeholder(tf.float32, [])
    y = tf.nn.dropout(x, keep_prob=keep, seed=1)
    assert y.shape.as_list() == [200, 200] and y.dtype == tf.float32
    with tf.Session() as sess:
        got = sess.run(y, {keep: 0.25})
        kept = got != 0
        np.testing.assert_allclose(got[kept], 4.0)
        assert abs(kept.mean() - 0.25) < 0.02
        assert abs(got.mean() - 1.0) < 0.08
        np.testing.assert_array_equal(sess.run(y, {keep: 1.0}), np.ones((200, 200), F))


def test_dropout_rate_number():
    x = tf.constant(np.full((100, 100), 3.0, F))
    y = tf.nn.dropout(x, rate=0.5)
    assert y.name.startswith("dropout/") and y.op.type == "SelectV2"
    with tf.Session() as sess:
        a1, a2 = sess.run(y), sess.run(y)
    for got in (a1, a2):
        assert set(np.unique(got)) <= {0.0, 6.0}
        assert abs((got == 0).mean() - 0.5) < 0.05
    assert not np.array_equal(a1, a2)  # every run draws a new mask


def test_dropout_noise_shape_broadcasts_mask():
    x = tf.ones([50, 8])
    y = tf.nn.dropout(x, rate=0.5, noise_shape=[1, 8], seed=3)
    with tf.Session() as sess:
        got = sess.run(y)
    # One decision per column, shared by every row.
    assert (got == got[0]).all()
    assert set(np.unique(got)) <= {0.0, 2.0}


def test_dropout_seeded_runs_repeat_across_sessions():
    def draw():
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(5)
            y = tf.nn.dropout(tf.ones([30]), keep_prob=0.5)
            with tf.Session(graph=g) as sess:
                return sess.run(y)

    np.testing.assert_array_equal(draw(), draw())


def test_dropout_fast_path_and_errors():
    x = tf.constant([1.0, 2.0])
    assert tf.nn.dropout(x, rate=0.0) is x
    assert tf.nn.dropout(x, keep_prob=1.0) is x
    with pytest.raises(
        ValueError,
        match=r"`rate` must be a scalar tensor or a float in the "
        r"range \[0, 1\). Received: rate=1",
    ):
        tf.nn.dropout(x, rate=1)
    with pytest.raises(ValueError, match="`rate` must be provided"):
        tf.nn.dropout(x)
    with pytest.raises(ValueError, match="`x.dtype` must be a floating point tensor"):
        tf.nn.dropout(tf.constant([1, 2]), rate=0.5)
    with pytest.raises(ValueError, match="`keep_prob` must be a floating point number"):
        tf.nn.dropout(x, keep_prob="half")


def test_nn_namespace_exports():
    from engine.ops import nn as nn_ops

    for name in nn_ops.__all__:
        assert getattr(tf.nn, name) is getattr(nn_ops, name)
    for op_type in (
        "Relu",
        "Relu6",
        "LeakyRelu",
        "Elu",
        "Softplus",
        "Softmax",
        "LogSoftmax",
        "L2Loss",
        "BiasAdd",
        "TopKV2",
    ):
        assert registry.get(op_type).kernel is not None
