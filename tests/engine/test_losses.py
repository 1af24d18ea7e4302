"""tf.losses: values, weights and reductions against numbers from TF 1.x (the oracle), the
LOSSES / REGULARIZATION_LOSSES collections, names, errors and gradients."""

import numpy as np
import pytest

import engine as tf
from tests.engine.optable import Case, check_gradient

F = np.float32
R = tf.losses.Reduction

labels = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], F)
preds = np.array([[1.5, 2.0, 2.0], [4.0, 7.0, 6.5]], F)
w_rows = np.array([[1.0], [0.0]], F)
w_full = np.array([[1.0, 0.0, 2.0], [0.0, 0.5, 0.0]], F)
WEIGHTS = {"one": 1.0, "rows": w_rows, "full": w_full, "zero": 0.0}

# Every value below was computed by TensorFlow 1.x (tf.compat.v1.losses) on these inputs.
MSE = {
    (R.NONE, "one"): [[0.25, 0.0, 1.0], [0.0, 4.0, 0.25]],
    (R.NONE, "rows"): [[0.25, 0.0, 1.0], [0.0, 0.0, 0.0]],
    (R.NONE, "full"): [[0.25, 0.0, 2.0], [0.0, 2.0, 0.0]],
    (R.NONE, "zero"): [[0.0] * 3] * 2,
    (R.SUM, "one"): 5.5,
    (R.SUM, "rows"): 1.25,
    (R.SUM, "full"): 4.25,
    (R.SUM, "zero"): 0.0,
    (R.MEAN, "one"): 0.9166666865348816,
    (R.MEAN, "rows"): 0.4166666567325592,
    (R.MEAN, "full"): 1.2142857313156128,
    (R.MEAN, "zero"): 0.0,
    (R.SUM_BY_NONZERO_WEIGHTS, "one"): 0.9166666865348816,
    (R.SUM_BY_NONZERO_WEIGHTS, "rows"): 0.4166666567325592,
    (R.SUM_BY_NONZERO_WEIGHTS, "full"): 1.4166666269302368,
    (R.SUM_BY_NONZERO_WEIGHTS, "zero"): 0.0,
    (R.SUM_OVER_BATCH_SIZE, "one"): 0.9166666865348816,
    (R.SUM_OVER_BATCH_SIZE, "rows"): 0.2083333283662796,
    (R.SUM_OVER_BATCH_SIZE, "full"): 0.7083333134651184,
    (R.SUM_OVER_BATCH_SIZE, "zero"): 0.0,
}
ABS = {
    (R.NONE, "one"): [[0.5, 0.0, 1.0], [0.0, 2.0, 0.5]],
    (R.NONE, "full"): [[0.5, 0.0, 2.0], [0.0, 1.0, 0.0]],
    (R.SUM, "rows"): 1.5,
    (R.SUM, "full"): 3.5,
    (R.MEAN, "full"): 1.0,
    (R.MEAN, "rows"): 0.5,
    (R.SUM_BY_NONZERO_WEIGHTS, "one"): 0.6666666865348816,
    (R.SUM_BY_NONZERO_WEIGHTS, "full"): 1.1666666269302368,
    (R.SUM_OVER_BATCH_SIZE, "rows"): 0.25,
    (R.SUM_OVER_BATCH_SIZE, "full"): 0.5833333134651184,
}


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


@pytest.mark.parametrize("key", list(MSE), ids=lambda k: f"{k[0]}-{k[1]}")
def test_mean_squared_error_matches_tf(key):
    reduction, w = key
    loss = tf.losses.mean_squared_error(labels, preds, weights=WEIGHTS[w], reduction=reduction)
    got = _run(loss)
    assert got.dtype == F
    np.testing.assert_allclose(got, MSE[key], rtol=1e-6)
    assert loss.shape.as_list() == ([2, 3] if reduction == R.NONE else [])


@pytest.mark.parametrize("key", list(ABS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_absolute_difference_matches_tf(key):
    reduction, w = key
    loss = tf.losses.absolute_difference(labels, preds, weights=WEIGHTS[w], reduction=reduction)
    np.testing.assert_allclose(_run(loss), ABS[key], rtol=1e-6)


logits = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0], [1000.0, -1000.0, 0.0]], F)
onehot = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], F)
sparse = np.array([0, 2, 1], np.int32)
w_batch = np.array([1.0, 0.0, 2.0], F)

XENT = {  # (softmax with label_smoothing=0.1, sparse with [batch, 1] labels and weights,
    #      sigmoid with label_smoothing=0.2 and [batch, 1] weights)
    R.NONE: (
        [0.3913113474845886, 0.0, 3800.0],
        [0.24131132662296295, 0.0, 4000.0],
        [
            [0.32692793011665344, 0.41326168179512024, 0.9240769743919373],
            [0.0, 0.0, 0.0],
            [1800.0, 1800.0001220703125, 1.3862943649291992],
        ],
    ),
    R.SUM: (3800.391357421875, 4000.2412109375, 3603.050537109375),
    R.MEAN: (1266.797119140625, 1333.4136962890625, 400.3389587402344),
    R.SUM_BY_NONZERO_WEIGHTS: (1900.1956787109375, 2000.12060546875, 600.5084228515625),
    R.SUM_OVER_BATCH_SIZE: (1266.797119140625, 1333.4136962890625, 400.3389587402344),
}


@pytest.mark.parametrize("reduction", list(XENT))
def test_cross_entropy_losses_match_tf(reduction):
    soft = tf.losses.softmax_cross_entropy(
        onehot, logits, weights=w_batch, label_smoothing=0.1, reduction=reduction
    )
    sp = tf.losses.sparse_softmax_cross_entropy(
        sparse[:, None], logits, weights=w_batch[:, None], reduction=reduction
    )
    sig = tf.losses.sigmoid_cross_entropy(
        onehot, logits, weights=w_batch[:, None], label_smoothing=0.2, reduction=reduction
    )
    got = _run([soft, sp, sig])
    for g, want in zip(got, XENT[reduction]):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, want, rtol=2e-6)


def test_cross_entropy_defaults_match_tf():
    got = _run(
        [
            tf.losses.softmax_cross_entropy(onehot, logits),
            tf.losses.sparse_softmax_cross_entropy(sparse, logits, weights=w_batch),
            tf.losses.sigmoid_cross_entropy(onehot, logits),
        ]
    )
    np.testing.assert_allclose(
        got, [668.4320678710938, 2000.12060546875, 223.10845947265625], rtol=1e-6
    )


def test_compute_weighted_loss_default_divides_by_nonzero_weights():
    loss = tf.losses.compute_weighted_loss([1.0, 3.0], weights=[1.0, 0.0])
    assert loss.name == "weighted_loss/value:0"
    assert _run(loss) == 1.0
    assert tf.losses.get_losses() == [loss]


def test_compute_weighted_loss_keeps_float64_dtype():
    loss = tf.losses.compute_weighted_loss(tf.constant([1.0, 2.0], tf.float64), reduction=R.SUM)
    assert loss.dtype == tf.float64
    assert _run(loss) == 3.0


# -- the collections -------------------------------------------------------------------------


def test_losses_are_collected_with_tf_names():
    a = tf.losses.mean_squared_error([1.0, 2.0], [2.0, 2.0])
    b = tf.losses.absolute_difference(
        [[1.0, 2.0]], [[2.0, 4.0]], weights=[[0.0, 1.0]], reduction=R.SUM
    )
    c = tf.losses.softmax_cross_entropy(onehot, logits)
    d = tf.losses.sparse_softmax_cross_entropy(sparse, logits)
    e = tf.losses.sigmoid_cross_entropy(onehot, logits)
    names = [
        "mean_squared_error/value:0",
        "absolute_difference/Sum:0",
        "softmax_cross_entropy_loss/value:0",
        "sparse_softmax_cross_entropy_loss/value:0",
        "sigmoid_cross_entropy_loss/value:0",
    ]
    assert [t.name for t in (a, b, c, d, e)] == names
    assert [t.name for t in tf.losses.get_losses()] == names
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [a, b, c, d, e]
    assert tf.losses.get_losses(scope="mean") == [a]
    np.testing.assert_allclose(_run([a, b]), [0.5, 2.0])


def test_loss_collection_none_and_custom():
    tf.losses.mean_squared_error([1.0], [2.0], loss_collection=None)
    assert tf.losses.get_losses() == []
    x = tf.losses.mean_squared_error([1.0], [2.0], loss_collection="mine")
    assert tf.losses.get_losses(loss_collection="mine") == [x]
    tf.losses.add_loss(tf.constant(2.0))
    assert len(tf.losses.get_losses()) == 1


def test_total_and_regularization_losses_match_tf():
    tf.losses.mean_squared_error(labels, preds, weights=w_full)
    tf.losses.softmax_cross_entropy(onehot, logits)
    with tf.variable_scope("foo", regularizer=lambda w: 0.5 * tf.reduce_sum(tf.square(w))):
        tf.get_variable("v", initializer=tf.constant([1.0, 2.0]))
    with tf.variable_scope("bar", regularizer=lambda w: tf.reduce_sum(tf.abs(w))):
        tf.get_variable("u", initializer=tf.constant([-3.0]))
    total = tf.losses.get_total_loss()
    reg = tf.losses.get_regularization_loss()
    reg_foo = tf.losses.get_regularization_loss("foo")
    no_reg = tf.losses.get_total_loss(add_regularization_losses=False)
    assert total.name == "total_loss:0" and reg.name == "total_regularization_loss:0"
    assert len(tf.losses.get_regularization_losses()) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([total, reg, reg_foo, no_reg])
    np.testing.assert_allclose(got, [675.34875, 5.5, 2.5, 669.84875], rtol=1e-6)


def test_regularization_loss_without_regularizers_is_zero():
    reg = tf.losses.get_regularization_loss()
    assert reg.dtype == tf.float32 and _run(reg) == 0.0
    with pytest.raises(ValueError):
        tf.losses.get_total_loss()


# -- shapes, dynamic weights, errors ---------------------------------------------------------


def test_weights_checked_while_building():
    with pytest.raises(
        ValueError,
        match=r"weights can not be broadcast to values\. "
        r"values\.rank=2\. weights\.rank=1\.",
    ):
        tf.losses.mean_squared_error(np.zeros((2, 3)), np.zeros((2, 3)), weights=np.ones(3))
    with pytest.raises(ValueError, match="Mismatch at dim 1"):
        tf.losses.mean_squared_error(np.zeros((2, 3)), np.zeros((2, 3)), weights=np.ones((2, 2)))
    with pytest.raises(ValueError, match="Invalid Reduction Key bogus"):
        tf.losses.compute_weighted_loss([1.0], reduction="bogus")
    with pytest.raises(ValueError, match="Argument `labels` must not be None"):
        tf.losses.mean_squared_error(None, [1.0])
    with pytest.raises(ValueError, match="Argument `onehot_labels` must not be None"):
        tf.losses.softmax_cross_entropy(None, logits)
    with pytest.raises(ValueError):
        tf.losses.mean_squared_error(np.zeros((2, 3)), np.zeros((2, 4)))


def test_weights_with_unknown_dims_checked_at_run_time():
    p = tf.placeholder(tf.float32, [None, None])
    w = tf.placeholder(tf.float32, [None, None])
    loss = tf.losses.mean_squared_error(p, p * 2, weights=w)
    with tf.Session() as sess:
        assert sess.run(loss, {p: [[1.0, 2.0, 3.0]], w: [[1.0, 0.0, 1.0]]}) == 5.0
        np.testing.assert_allclose(
            sess.run(loss, {p: [[1.0, 2.0, 3.0]], w: [[2.0]]}), 9.333333, rtol=1e-6
        )
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="weights can not be broadcast to values"
        ):
            sess.run(loss, {p: [[1.0, 2.0, 3.0]], w: [[1.0, 0.0]]})


def test_losses_with_unknown_shapes_match_static_values():
    lg = tf.placeholder(tf.float32, [None, None])
    oh = tf.placeholder(tf.float32, [None, None])
    sp = tf.placeholder(tf.int32, [None])
    wt = tf.placeholder(tf.float32, [None])
    soft = tf.losses.softmax_cross_entropy(oh, lg, weights=wt, label_smoothing=0.1)
    spl = tf.losses.sparse_softmax_cross_entropy(sp, lg, weights=wt)
    feed = {lg: logits, oh: onehot, sp: sparse, wt: w_batch}
    np.testing.assert_allclose(
        _run([soft, spl], feed), [1900.1956787109375, 2000.12060546875], rtol=1e-6
    )


def test_sparse_loss_squeezes_labels_and_weights_of_unknown_rank():
    sp = tf.placeholder(tf.int32, None)
    wt = tf.placeholder(tf.float32, None)
    loss = tf.losses.sparse_softmax_cross_entropy(sp, tf.constant(logits), weights=wt)
    feed = {sp: sparse[:, None], wt: w_batch[:, None]}
    np.testing.assert_allclose(_run(loss, feed), 2000.12060546875, rtol=1e-6)


def test_sparse_loss_label_out_of_range():
    loss = tf.losses.sparse_softmax_cross_entropy([0, 5, 1], logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value of 5"):
        _run(loss)


# -- gradients (the losses compute in float32, as TF's do: looser finite differences) --------

x23 = np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.7]])
y23 = np.array([[0.0, -1.0, 1.5], [1.0, 1.0, 0.0]])
oh23 = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
GRAD_CASES = [
    Case("mse", lambda p: tf.losses.mean_squared_error(y23, p, weights=w_full), [x23], None),
    Case("mse_sum", lambda p: tf.losses.mean_squared_error(y23, p, reduction=R.SUM), [x23], None),
    Case(
        "mse_weights",
        lambda w: tf.losses.mean_squared_error(y23, x23, weights=w),
        [w_full.astype(np.float64) + 0.5],
        None,
    ),
    Case(
        "abs_mean",
        lambda p: tf.losses.absolute_difference(y23, p, reduction=R.MEAN, weights=w_rows),
        [x23],
        None,
    ),
    Case(
        "softmax",
        lambda x: tf.losses.softmax_cross_entropy(oh23, x, label_smoothing=0.2, weights=[1.0, 2.0]),
        [x23],
        None,
    ),
    Case(
        "sparse",
        lambda x: tf.losses.sparse_softmax_cross_entropy([2, 0], x, weights=[0.5, 1.0]),
        [x23],
        None,
    ),
    Case(
        "sigmoid",
        lambda x: tf.losses.sigmoid_cross_entropy(
            oh23, x, label_smoothing=0.1, reduction=R.SUM_OVER_BATCH_SIZE
        ),
        [x23],
        None,
    ),
    Case(
        "compute_weighted_loss",
        lambda t: tf.losses.compute_weighted_loss(
            tf.square(t), weights=[[1.0], [3.0]], reduction=R.MEAN
        ),
        [x23],
        None,
    ),
]
for _c in GRAD_CASES:
    _c.grad_inputs = (0,)


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_loss_gradients(case):
    check_gradient(case, tol=2e-3, delta=1e-3)


@pytest.mark.parametrize(
    "build",
    [
        lambda x: tf.losses.softmax_cross_entropy(onehot, x),
        lambda x: tf.losses.sparse_softmax_cross_entropy(sparse, x),
        lambda x: tf.losses.sigmoid_cross_entropy(onehot, x),
    ],
    ids=["softmax", "sparse", "sigmoid"],
)
def test_loss_gradients_finite_at_large_logits(build):
    x = tf.constant(logits)
    grad = tf.gradients(build(x), x)[0]
    got = _run(grad)
    assert np.isfinite(got).all()
    assert np.abs(got).max() <= 1.0
