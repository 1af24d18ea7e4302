"""Gradients of tf.nn ops and the cross-entropy losses: finite differences (float64) for each
row of a table, the dynamic-shape paths, values finite differences cannot judge (ties,
kinks), stability at logits of +-1000, and the losses' forward values, names and errors."""

import numpy as np
import pytest

import engine as tf
from tests.engine.optable import Case, check_case, check_gradient

D = np.float64
F = np.float32
I32 = np.int32
rng = np.random.default_rng(3)


def _away_from(values, points, gap=0.1):
    """``values`` nudged so none lies within ``gap`` of a kink in ``points``."""
    out = values.copy()
    for p in points:
        near = np.abs(out - p) < gap
        out[near] = p + np.where(out[near] >= p, gap, -gap) * 2
    return out


x23 = rng.standard_normal((2, 3))
x234 = rng.standard_normal((2, 3, 4))
kinked = _away_from(rng.uniform(-2, 8, (3, 4)), [0.0, 6.0])
wide = np.array([[-30.0, -3.0, -0.5, 0.0], [0.5, 3.0, 30.0, 1.0]])
nhwc = rng.standard_normal((2, 2, 3, 4))
nchw = rng.standard_normal((2, 3, 2, 2))
b3 = rng.standard_normal(3)
b4 = rng.standard_normal(4)
distinct = rng.permutation(24).reshape(2, 3, 4) / 7.0 - 1.5
labels23 = rng.dirichlet(np.ones(3), size=2)
labels234 = rng.dirichlet(np.ones(4), size=(2, 3))
sparse2 = np.array([2, 0], I32)
sparse23 = np.array([[1, 3, 0], [2, 2, 1]], np.int64)
bin23 = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.3]])


def np_log_softmax(x, axis=-1):
    x = x.astype(D)
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def np_xent(labels, logits, axis=-1):
    return -(labels * np_log_softmax(logits, axis)).sum(axis)


def np_sparse_xent(labels, logits):
    lp = np_log_softmax(logits)
    return -np.take_along_axis(lp, labels[..., None].astype(np.int64), -1)[..., 0]


def np_sigmoid_xent(labels, logits):
    x = logits.astype(D)
    return np.maximum(x, 0) - x * labels + np.log1p(np.exp(-np.abs(x)))


def _second(fn):
    """d/dx sum(fn(x)) as a function of x: its gradient is a second-order gradient."""

    def build(t):
        return tf.gradients(fn(t), t)[0]

    return build


def _xent_v1(labels, logits, **kw):
    return tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits, **kw)


def _xent_v2(labels, logits, **kw):
    return tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, **kw)


def _sparse(labels, logits):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def _sigmoid(labels, logits):
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)


def _ctc(x):
    labels = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 1, 0], [2, 2])
    return tf.nn.ctc_loss(labels, x, [4, 3]) * [1.0, 0.5]


GRAD_CASES = [
    Case("ctc_loss", _ctc, [rng.standard_normal((4, 2, 3))], None),
    Case("erf", tf.erf, [wide / 3], None),
    Case("selu", tf.nn.selu, [kinked - 3], None),
    Case("relu", tf.nn.relu, [kinked], None),
    Case("relu6", tf.nn.relu6, [kinked], None),
    Case("leaky_relu", tf.nn.leaky_relu, [kinked - 3], None),
    Case("leaky_relu_alpha", lambda t: tf.nn.leaky_relu(t, alpha=0.01), [kinked - 3], None),
    Case("elu", tf.nn.elu, [kinked - 3], None),
    Case("softplus", tf.nn.softplus, [wide], None),
    Case("softmax", tf.nn.softmax, [x234], None),
    Case("softmax_axis0", lambda t: tf.nn.softmax(t, axis=0), [x234], None),
    Case("log_softmax", tf.nn.log_softmax, [x23], None),
    Case("log_softmax_axis1", lambda t: tf.nn.log_softmax(t, axis=1), [x234], None),
    Case("l2_loss", tf.nn.l2_loss, [x234], None),
    Case("bias_add", tf.nn.bias_add, [nhwc, b4], None, grad_inputs=(0, 1)),
    Case("bias_add_2d", tf.nn.bias_add, [x23, b3], None, grad_inputs=(0, 1)),
    Case(
        "bias_add_nchw",
        lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
        [nchw, b3],
        None,
        grad_inputs=(0, 1),
    ),
    Case("top_k", lambda t: tf.nn.top_k(t, 2).values, [distinct], None),
    Case("top_k_all", lambda t: tf.nn.top_k(t, 4, sorted=True).values, [distinct], None),
    Case("moments_mean", lambda t: tf.nn.moments(t, [0, 2])[0], [x234], None),
    Case("moments_variance", lambda t: tf.nn.moments(t, [0, 2])[1], [x234], None),
    Case(
        "moments_variance_keepdims",
        lambda t: tf.nn.moments(t, [1], keep_dims=True)[1],
        [x234],
        None,
    ),
    Case(
        "batch_normalization",
        lambda x, mu, var, off, sc: tf.nn.batch_normalization(x, mu, var, off, sc, 1e-3),
        [x234, b4, np.abs(b4) + 0.5, b4[::-1].copy(), b4 * 2],
        None,
        grad_inputs=(0, 1, 2, 3, 4),
    ),
    # Second order through the fused gradient kernels.
    Case("relu_grad_grad", _second(lambda t: tf.nn.relu(t) ** 2), [kinked - 3], None),
    Case("leaky_relu_grad_grad", _second(lambda t: tf.nn.leaky_relu(t) ** 2), [kinked - 3], None),
    Case("elu_grad_grad", _second(tf.nn.elu), [kinked - 3], None),
    Case("softplus_grad_grad", _second(tf.nn.softplus), [wide / 10], None),
    Case("softmax_grad_grad", _second(lambda t: tf.nn.softmax(t) * tf.constant(b3)), [x23], None),
    Case(
        "log_softmax_grad_grad",
        _second(lambda t: tf.nn.log_softmax(t) * tf.constant(b3)),
        [x23],
        None,
    ),
    Case(
        "bias_add_grad_grad",
        lambda x, b: tf.gradients(tf.nn.bias_add(x, b, data_format="NCHW") ** 2, b)[0],
        [nchw, b3],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "top_k_grad_grad",
        lambda t: tf.gradients(tf.nn.top_k(t, 2).values ** 2, t)[0],
        [distinct],
        None,
    ),
    # Losses
    Case(
        "xent_v2_logits", lambda lab, x: _xent_v2(lab, x), [labels23, x23], None, grad_inputs=(1,)
    ),
    Case(
        "xent_v2_labels", lambda lab, x: _xent_v2(lab, x), [labels23, x23], None, grad_inputs=(0,)
    ),
    Case(
        "xent_v2_axis0",
        lambda lab, x: _xent_v2(lab, x, axis=0),
        [np.swapaxes(labels234, 0, 2).copy(), x234.transpose(2, 1, 0).copy()],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "xent_v2_rank3",
        lambda lab, x: _xent_v2(lab, x),
        [labels234, x234],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "xent_v1_logits", lambda lab, x: _xent_v1(lab, x), [labels23, x23], None, grad_inputs=(1,)
    ),
    # Labels must be distributions along the class axis for backprop = softmax - labels.
    Case(
        "xent_v1_dim1",
        lambda lab, x: _xent_v1(lab, x, dim=1),
        [np.swapaxes(labels234, 1, 2).copy(), x234.transpose(0, 2, 1).copy()],
        None,
        grad_inputs=(1,),
    ),
    Case("sparse_xent", _sparse, [sparse2, x23], None, grad_inputs=(1,)),
    Case("sparse_xent_rank3", _sparse, [sparse23, x234], None, grad_inputs=(1,)),
    Case("sigmoid_xent_logits", _sigmoid, [bin23, x23 * 3], None, grad_inputs=(1,)),
    Case("sigmoid_xent_labels", _sigmoid, [bin23, x23 * 3], None, grad_inputs=(0,)),
    Case(
        "xent_grad_grad",
        lambda lab, x: tf.gradients(_xent_v2(lab, x), x)[0] * b3,
        [labels23, x23],
        None,
        grad_inputs=(1,),
    ),
]
for _c in GRAD_CASES:
    _c.grad_inputs = _c.grad_inputs or (0,)


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradient_finite_differences(case):
    check_gradient(case)


# -- dynamic shapes: every input fed through placeholders of unknown dims / rank -------------


def _fed_error(case, gi, shape_mode):
    g = tf.Graph()
    with g.as_default():
        ins, feeds = [], {}
        for i, v in enumerate(case.inputs):
            v = np.asarray(v)
            shape = [None] * v.ndim if shape_mode == "unknown_dims" else None
            p = tf.placeholder(tf.constant(v).dtype, shape=shape, name=f"in{i}")
            ins.append(p)
            feeds[p] = v
        out = case.build(*ins)
        x = ins[gi]
        extra = {p: v for p, v in feeds.items() if p is not x}
        with tf.Session() as sess:
            y_shape = list(np.shape(sess.run(out, feeds)))
            return tf.test.compute_gradient_error(
                x,
                list(case.inputs[gi].shape),
                out,
                y_shape,
                x_init_value=case.inputs[gi],
                delta=1e-6,
                extra_feed_dict=extra,
            )


FED = [c for c in GRAD_CASES if "grad_grad" not in c.id]


@pytest.mark.parametrize("shape_mode", ["unknown_dims", "unknown_rank"])
@pytest.mark.parametrize("case", FED, ids=str)
def test_gradient_with_unknown_shapes(case, shape_mode):
    for gi in case.grad_inputs:
        assert _fed_error(case, gi, shape_mode) < 1e-5, f"input {gi}"


# -- structure and exact values ----------------------------------------------------------------


def _grad_op_types(y, x):
    grad = tf.gradients(y, x)[0]
    types = [
        op.type for op in tf.get_default_graph().get_operations() if op.name.startswith("gradients")
    ]
    return grad, types


@pytest.mark.parametrize(
    "fn,fused",
    [
        (tf.nn.relu, "ReluGrad"),
        (tf.nn.relu6, "Relu6Grad"),
        (tf.nn.elu, "EluGrad"),
        (tf.nn.leaky_relu, "LeakyReluGrad"),
        (tf.nn.softplus, "SoftplusGrad"),
        (tf.nn.softmax, "SoftmaxGrad"),
        (tf.nn.log_softmax, "LogSoftmaxGrad"),
    ],
)
def test_activation_gradients_use_one_fused_kernel(fn, fused):
    x = tf.placeholder(tf.float32, [None, 3])
    grad, types = _grad_op_types(fn(x), x)
    assert types.count(fused) == 1
    assert grad.op.type == fused


def test_relu_gradient_at_kinks_and_ints():
    x = tf.constant([-1.0, 0.0, 2.0, 6.0, 7.0])
    g_relu, g_relu6 = tf.gradients(tf.nn.relu(x), x)[0], tf.gradients(tf.nn.relu6(x), x)[0]
    with tf.Session() as sess:
        r, r6 = sess.run([g_relu, g_relu6])
    # TF: zero gradient at the kinks themselves.
    np.testing.assert_array_equal(r, [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(r6, [0, 0, 1, 0, 0])


def test_relu_gradient_dtype_float16():
    x = tf.constant(np.array([-1.0, 2.0], np.float16))
    g = tf.gradients(tf.nn.relu(x), x)[0]
    with tf.Session() as sess:
        got = sess.run(g)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, [0, 1])


def test_bias_add_nchw_bias_gradient_sums_all_but_channel_axis():
    x = tf.placeholder(tf.float64, [None, 3, None, None])
    b = tf.constant(b3)
    dy = rng.standard_normal(nchw.shape)
    gb = tf.gradients(tf.nn.bias_add(x, b, data_format="NCHW"), b, grad_ys=dy)[0]
    assert gb.op.type == "BiasAddGrad"
    assert gb.shape.as_list() == [3]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(gb, {x: nchw}), dy.sum((0, 2, 3)))


def test_top_k_gradient_scatters_to_the_chosen_positions_with_ties():
    x = tf.constant([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0]])
    values, indices = tf.nn.top_k(x, 2)
    dy = tf.constant([[10.0, 20.0], [30.0, 40.0]])
    grad = tf.gradients(values, x, grad_ys=dy)[0]
    with tf.Session() as sess:
        got, idx = sess.run([grad, indices])
    np.testing.assert_array_equal(idx, [[1, 2], [0, 1]])
    np.testing.assert_array_equal(got, [[0, 10, 20, 0], [30, 40, 0, 0]])
    assert tf.gradients(tf.cast(indices, tf.float32), x) == [None]


def test_top_k_gradient_with_unknown_shape():
    x = tf.placeholder(tf.float64, None)
    grad = tf.gradients(tf.nn.top_k(x, 1).values, x)[0]
    with tf.Session() as sess:
        got = sess.run(grad, {x: distinct})
    np.testing.assert_array_equal(got, (distinct == distinct.max(-1, keepdims=True)).astype(D))


def test_dropout_gradient_is_the_scaled_mask():
    x = tf.constant(np.ones((50, 40)))
    y = tf.nn.dropout(x, keep_prob=0.8, seed=1)
    grad = tf.gradients(y, x)[0]
    with tf.Session() as sess:
        y_val, g_val = sess.run([y, grad])
    np.testing.assert_allclose(g_val, np.where(y_val != 0, 1 / 0.8, 0.0))
    assert 0 < (g_val == 0).mean() < 0.5


def test_l2_loss_gradient_value():
    x = tf.constant(x23)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(tf.gradients(tf.nn.l2_loss(x), x)[0]), x23)


# -- cross entropy: forward values against numpy in every feeding mode ------------------------


big = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, 1000.0], [1.0, 2.0, 3.0]], F)
big_labels = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], F)
big_sparse = np.array([1, 0, 2], I32)


LOSS_CASES = [
    Case("xent_v2", _xent_v2, [labels23, x23], np_xent, [2]),
    Case("xent_v2_rank3", _xent_v2, [labels234, x234], np_xent, [2, 3]),
    Case(
        "xent_v2_axis1",
        lambda lab, x: _xent_v2(lab, x, axis=1),
        [np.swapaxes(labels234, 1, 2).copy(), np.swapaxes(x234, 1, 2).copy()],
        lambda lab, x: np_xent(lab, x, 1),
        [2, 3],
    ),
    Case("xent_v2_rank1", _xent_v2, [labels23[0], x23[0]], np_xent, []),
    Case(
        "xent_v1_f32",
        _xent_v1,
        [big_labels, big],
        lambda lab, x: np_xent(lab, x).astype(F),
        [3],
        rtol=1e-6,
    ),
    Case(
        "xent_v2_f16",
        _xent_v2,
        [labels23.astype(np.float16), x23.astype(np.float16)],
        lambda lab, x: np_xent(lab, x).astype(np.float16),
        [2],
        rtol=1e-3,
        atol=1e-3,
    ),
    Case("sparse_int32", _sparse, [sparse2, x23], np_sparse_xent, [2]),
    Case("sparse_int64_rank3", _sparse, [sparse23, x234], np_sparse_xent, [2, 3]),
    Case(
        "sparse_f32_large",
        _sparse,
        [big_sparse, big],
        lambda lab, x: np_sparse_xent(lab, x).astype(F),
        [3],
    ),
    Case("sparse_rank1", _sparse, [np.array(1, I32), x23[0]], np_sparse_xent, []),
    Case("sigmoid", _sigmoid, [bin23, x23], np_sigmoid_xent, [2, 3]),
    Case(
        "sigmoid_f32_large",
        _sigmoid,
        [big_labels, big],
        lambda lab, x: np_sigmoid_xent(lab, x).astype(F),
        [3, 3],
    ),
]


@pytest.mark.parametrize("case", LOSS_CASES, ids=str)
def test_loss_values(case):
    check_case(case)


@pytest.mark.parametrize("dtype", [F, D])
def test_softmax_xent_stable_at_large_logits(dtype):
    logits = tf.constant(big.astype(dtype))
    labels = tf.constant(big_labels.astype(dtype))
    loss = _xent_v2(labels, logits)
    g_logits, g_labels = tf.gradients(loss, [logits, labels])
    with tf.Session() as sess:
        lv, gx, gl = sess.run([loss, g_logits, g_labels])
    lp = np_log_softmax(big)
    for v in (lv, gx, gl):
        assert np.isfinite(v).all() and v.dtype == dtype
    np.testing.assert_allclose(lv, np_xent(big_labels.astype(D), big), rtol=1e-6)
    np.testing.assert_allclose(gx, np.exp(lp) - big_labels, atol=1e-6)
    np.testing.assert_allclose(gl, -lp, rtol=1e-6)


def test_sparse_xent_stable_at_large_logits():
    logits = tf.constant(big)
    loss = _sparse(big_sparse, logits)
    grad = tf.gradients(loss, logits)[0]
    with tf.Session() as sess:
        lv, gv = sess.run([loss, grad])
    assert np.isfinite(lv).all() and np.isfinite(gv).all()
    np.testing.assert_allclose(lv, [2000.0, 2000.0, np_sparse_xent(big_sparse, big)[2]], rtol=1e-6)
    want = np.exp(np_log_softmax(big))
    want[np.arange(3), big_sparse] -= 1
    np.testing.assert_allclose(gv, want, atol=1e-6)


def test_sigmoid_xent_stable_at_large_logits():
    logits = tf.constant(big)
    loss = _sigmoid(big_labels, logits)
    grad = tf.gradients(loss, logits)[0]
    with tf.Session() as sess:
        lv, gv = sess.run([loss, grad])
    assert np.isfinite(lv).all() and np.isfinite(gv).all()
    np.testing.assert_allclose(lv, np_sigmoid_xent(big_labels, big), rtol=1e-6)
    sig = np.where(
        big >= 0,
        1 / (1 + np.exp(-np.abs(big.astype(D)))),
        np.exp(-np.abs(big.astype(D))) / (1 + np.exp(-np.abs(big.astype(D)))),
    )
    np.testing.assert_allclose(gv, sig - big_labels, atol=1e-6)


def test_xent_v1_stops_gradient_into_labels_and_v2_does_not():
    logits = tf.constant(x23)
    labels = tf.constant(labels23)
    assert tf.gradients(_xent_v1(labels, logits), labels) == [None]
    assert tf.gradients(_xent_v2(labels, logits), labels)[0] is not None


def test_xent_ops_and_names():
    logits = tf.constant(x23)
    v2 = _xent_v2(tf.constant(labels23), logits)
    v1 = _xent_v1(tf.constant(labels23), logits)
    sp = _sparse(tf.constant(sparse2), logits)
    sg = _sigmoid(tf.constant(bin23), logits)
    assert v2.op.type == "SoftmaxCrossEntropyWithLogits"
    assert v2.name == "softmax_cross_entropy_with_logits:0"
    assert v1.name == "softmax_cross_entropy_with_logits_sg:0"
    assert (
        tf.get_default_graph()
        .get_operation_by_name("softmax_cross_entropy_with_logits_sg/labels_stop_gradient")
        .type
        == "StopGradient"
    )
    assert sp.name == ("SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:0")
    assert sg.name == "logistic_loss:0"
    # The kernel's second output is the gradient with respect to the logits.
    with tf.Session() as sess:
        backprop = sess.run(v2.op.outputs[1])
    np.testing.assert_allclose(backprop, np.exp(np_log_softmax(x23)) - labels23)


# -- errors ----------------------------------------------------------------------------------


def test_sparse_label_out_of_range_fails_at_run_time():
    labels = tf.placeholder(tf.int32, [None])
    loss = _sparse(labels, tf.zeros([2, 10]))
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Received a label value of 10 which is outside the valid "
            r"range of \[0, 10\)\.  Label values: 1 10",
        ):
            sess.run(loss, {labels: [1, 10]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="label value of -1"):
            sess.run(loss, {labels: [-1, 3]})
        np.testing.assert_allclose(sess.run(loss, {labels: [0, 9]}), [np.log(10)] * 2, rtol=1e-6)


def test_sparse_label_rank_and_shape_checked_while_building():
    with pytest.raises(
        ValueError,
        match=r"Rank mismatch: Rank of labels \(received 2\) "
        r"should equal rank of logits minus 1 \(received 2\)",
    ):
        _sparse(tf.constant([[1]]), tf.zeros([2, 10]))
    with pytest.raises(ValueError, match="Shape mismatch"):
        _sparse(tf.constant([1, 2, 3]), tf.zeros([2, 10]))
    with pytest.raises(ValueError, match="Logits cannot be scalars"):
        _sparse(tf.constant(1), tf.constant(1.0))
    with pytest.raises(TypeError, match="Tlabels"):
        _sparse(tf.constant([1.0, 2.0]), tf.zeros([2, 10]))


def test_sparse_dynamic_shape_mismatch_fails_at_run_time():
    labels = tf.placeholder(tf.int32, None)
    logits = tf.placeholder(tf.float32, None)
    loss = _sparse(labels, logits)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(loss, {labels: [[1, 2]], logits: np.zeros((2, 1, 3), F)})


def test_xent_v1_requires_named_arguments():
    with pytest.raises(
        ValueError,
        match=r"Only call `softmax_cross_entropy_with_logits` with "
        r"named arguments \(labels=\.\.\., logits=\.\.\., "
        r"\.\.\.\)",
    ):
        tf.nn.softmax_cross_entropy_with_logits(labels23, x23)
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(sparse2, x23)
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.sigmoid_cross_entropy_with_logits(bin23, x23)
    with pytest.raises(ValueError, match="Both labels and logits must be provided"):
        tf.nn.softmax_cross_entropy_with_logits(labels=labels23)


def test_xent_v1_axis_and_dim_together_is_an_error_as_in_tf():
    # TF1's dim defaults to -1, so passing axis as well trips deprecated_argument_lookup.
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):
        _xent_v1(labels23, x23, axis=1)
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):
        _xent_v2(labels23, x23, axis=1, dim=1)


def test_xent_shape_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        _xent_v2(tf.zeros([2, 4]), tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="same shape"):
        _sigmoid(tf.zeros([2, 4]), tf.zeros([2, 3]))
    labels = tf.placeholder(tf.float32, [None, None])
    loss = _xent_v2(labels, tf.zeros([2, 3]))
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match="logits and labels must be same size"),
    ):
        sess.run(loss, {labels: np.zeros((2, 4), F)})
