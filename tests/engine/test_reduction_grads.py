"""Gradients of reductions, scans and tensordot: finite differences (float64) for each row of
a table, the same rows through placeholders of unknown dims / rank / axes (the dynamic
gradient paths), and exact values where finite differences cannot judge (ties, zeros)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.optable import Case, check_case, check_gradient

D = np.float64
F = np.float32
rng = np.random.default_rng(7)
x3 = rng.standard_normal((2, 3, 4))
m = rng.standard_normal((3, 4))
v = rng.standard_normal(5)
scalar = np.array(1.5)
# Away from zero and from each other, so max/min are unique and prod is well conditioned.
pos3 = rng.uniform(0.5, 1.5, (2, 3, 4))
one_zero = np.array([[2.0, 0.0, 3.0], [1.5, -2.0, 0.5]])
two_zeros = np.array([[0.0, 0.0, 3.0], [1.5, 0.0, 0.5]])


def _reduce(fn, **kw):
    return lambda t: fn(t, **kw)


GRAD_CASES = [
    # Sum
    Case("sum_axis1", _reduce(tf.reduce_sum, axis=1), [x3], lambda t: t.sum(1)),
    Case("sum_all", tf.reduce_sum, [x3], lambda t: t.sum()),
    Case("sum_neg_axis", _reduce(tf.reduce_sum, axis=-1), [x3], lambda t: t.sum(-1)),
    Case("sum_multi_axes", _reduce(tf.reduce_sum, axis=[0, 2]), [x3], lambda t: t.sum((0, 2))),
    Case(
        "sum_keepdims",
        _reduce(tf.reduce_sum, axis=[0, -1], keepdims=True),
        [x3],
        lambda t: t.sum((0, 2), keepdims=True),
    ),
    Case("sum_no_axes", _reduce(tf.reduce_sum, axis=[]), [m], lambda t: t),
    Case("sum_scalar", tf.reduce_sum, [scalar], lambda t: t),
    Case("sum_vector", tf.reduce_sum, [v], lambda t: t.sum()),
    # Mean
    Case("mean_axis0", _reduce(tf.reduce_mean, axis=0), [x3], lambda t: t.mean(0)),
    Case("mean_all", tf.reduce_mean, [x3], lambda t: t.mean()),
    Case(
        "mean_multi_keepdims",
        _reduce(tf.reduce_mean, axis=[1, 2], keepdims=True),
        [x3],
        lambda t: t.mean((1, 2), keepdims=True),
    ),
    Case("mean_neg_axes", _reduce(tf.reduce_mean, axis=[-2, -3]), [x3], lambda t: t.mean((0, 1))),
    # Max / Min (unique extremes)
    Case("max_axis1", _reduce(tf.reduce_max, axis=1), [x3], lambda t: t.max(1)),
    Case("max_all", tf.reduce_max, [x3], lambda t: t.max()),
    Case(
        "max_multi_keepdims",
        _reduce(tf.reduce_max, axis=[0, 2], keepdims=True),
        [x3],
        lambda t: t.max((0, 2), keepdims=True),
    ),
    Case("min_neg_axis", _reduce(tf.reduce_min, axis=-1), [x3], lambda t: t.min(-1)),
    Case("min_all", tf.reduce_min, [m], lambda t: t.min()),
    # Prod
    Case("prod_axis1", _reduce(tf.reduce_prod, axis=1), [pos3], lambda t: t.prod(1)),
    Case("prod_axis0", _reduce(tf.reduce_prod, axis=0), [pos3], lambda t: t.prod(0)),
    Case("prod_all", tf.reduce_prod, [pos3], lambda t: t.prod()),
    Case("prod_multi_axes", _reduce(tf.reduce_prod, axis=[0, 2]), [pos3], lambda t: t.prod((0, 2))),
    Case(
        "prod_keepdims_neg",
        _reduce(tf.reduce_prod, axis=[-1, 1], keepdims=True),
        [pos3],
        lambda t: t.prod((1, 2), keepdims=True),
    ),
    Case("prod_one_zero", _reduce(tf.reduce_prod, axis=1), [one_zero], lambda t: t.prod(1)),
    Case("prod_two_zeros", _reduce(tf.reduce_prod, axis=1), [two_zeros], lambda t: t.prod(1)),
    Case("prod_zeros_all", tf.reduce_prod, [one_zero], lambda t: t.prod()),
    # Cumsum / Cumprod
    Case("cumsum_axis0", lambda t: tf.cumsum(t, 0), [m], lambda t: np.cumsum(t, 0)),
    Case(
        "cumsum_exclusive",
        lambda t: tf.cumsum(t, 1, exclusive=True),
        [x3],
        lambda t: np.cumsum(t, 1) - t,
    ),
    Case(
        "cumsum_reverse",
        lambda t: tf.cumsum(t, -1, reverse=True),
        [x3],
        lambda t: np.flip(np.cumsum(np.flip(t, -1), -1), -1),
    ),
    Case(
        "cumsum_exclusive_reverse",
        lambda t: tf.cumsum(t, 1, exclusive=True, reverse=True),
        [m],
        lambda t: np.flip(np.cumsum(np.flip(t, 1), 1), 1) - t,
    ),
    Case("cumprod_axis1", lambda t: tf.cumprod(t, 1), [pos3], lambda t: np.cumprod(t, 1)),
    Case(
        "cumprod_exclusive_reverse",
        lambda t: tf.cumprod(t, -1, exclusive=True, reverse=True),
        [pos3],
        lambda t: np.flip(np.cumprod(np.flip(t, -1), -1), -1) / t,
    ),
    # Composed
    Case(
        "logsumexp_keepdims",
        _reduce(tf.reduce_logsumexp, axis=1, keepdims=True),
        [x3],
        lambda t: np.log(np.exp(t).sum(1, keepdims=True)),
    ),
    Case(
        "logsumexp_axis",
        _reduce(tf.reduce_logsumexp, axis=-1),
        [x3],
        lambda t: np.log(np.exp(t).sum(-1)),
    ),
    Case("logsumexp_all", tf.reduce_logsumexp, [m], lambda t: np.log(np.exp(t).sum())),
]
for _c in GRAD_CASES:
    _c.grad_inputs = (0,)
    _c.rtol = _c.atol = 1e-9

TENSORDOT_CASES = [
    Case(
        "tensordot_int_axes",
        lambda a, b: tf.tensordot(a, b, 1),
        [m, rng.standard_normal((4, 2))],
        lambda a, b: np.tensordot(a, b, 1),
        grad_inputs=(0, 1),
    ),
    Case(
        "tensordot_pairs",
        lambda a, b: tf.tensordot(a, b, [[1, 2], [1, 0]]),
        [x3, rng.standard_normal((4, 3, 5))],
        lambda a, b: np.tensordot(a, b, [[1, 2], [1, 0]]),
        grad_inputs=(0, 1),
    ),
]


@pytest.mark.parametrize("case", GRAD_CASES + TENSORDOT_CASES, ids=str)
def test_gradient_finite_differences(case):
    check_gradient(case)


# -- the same gradients through placeholders whose shapes are not known while building ------


def _fed_gradient_error(case, shape_mode):
    x = case.inputs[0]
    g = tf.Graph()
    with g.as_default():
        shape = [None] * x.ndim if shape_mode == "unknown_dims" else None
        p = tf.placeholder(tf.float64, shape=shape, name="x")
        y = case.build(p)
        with tf.Session() as sess:
            y_shape = list(np.shape(sess.run(y, {p: x})))
            return tf.test.compute_gradient_error(
                p, list(x.shape), y, y_shape, x_init_value=x, delta=1e-6
            )


@pytest.mark.parametrize("shape_mode", ["unknown_dims", "unknown_rank"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradient_with_unknown_shapes(case, shape_mode):
    assert _fed_gradient_error(case, shape_mode) < 1e-5


@pytest.mark.parametrize(
    "op_fn,ref",
    [
        (tf.reduce_sum, lambda t, a: np.ones_like(t)),
        (tf.reduce_mean, lambda t, a: np.ones_like(t) / np.prod([t.shape[i] for i in a])),
        (tf.reduce_max, lambda t, a: (t == t.max(tuple(a), keepdims=True)).astype(D)),
        (tf.reduce_prod, lambda t, a: t.prod(tuple(a), keepdims=True) / t),
    ],
    ids=["sum", "mean", "max", "prod"],
)
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], [2, 0]], ids=str)
def test_gradient_with_axes_fed_at_run_time(op_fn, ref, axes):
    # Neither the axes nor the shape is known: the kept-dims shape is computed at run time.
    x = tf.placeholder(tf.float64, shape=None)
    a = tf.placeholder(tf.int32, shape=[None])
    y = op_fn(x, axis=a)
    assert y.shape.rank is None
    grad = tf.gradients(y, x)[0]
    with tf.Session() as sess:
        got = sess.run(grad, {x: pos3, a: axes})
    norm = [i % 3 for i in axes]
    np.testing.assert_allclose(got, ref(pos3, norm), rtol=1e-12)


def test_gradient_static_shapes():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    for y in [
        tf.reduce_sum(x, 1),
        tf.reduce_mean(x, [0, 2], keepdims=True),
        tf.reduce_max(x, -1),
        tf.reduce_prod(x, 0),
        tf.cumsum(x, 2),
    ]:
        grad = tf.gradients(y, x)[0]
        assert grad.shape.as_list() == [None, 3, 4]
        assert grad.dtype == tf.float32
    known = tf.constant(m, tf.float32)
    assert tf.gradients(tf.reduce_sum(known, 0), known)[0].shape.as_list() == [3, 4]


def test_sum_gradient_of_fully_known_shape_needs_no_shape_op():
    x = tf.constant(m)
    grad = tf.gradients(tf.reduce_sum(x, 1), x)[0]
    types = {
        op.type
        for op in tf.get_default_graph().get_operations()
        if op.name.startswith("gradients/")
    }
    assert "Shape" not in types
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad), np.ones_like(m))


# -- values finite differences cannot check ---------------------------------------------------


def test_max_gradient_is_split_evenly_among_ties():
    x = tf.constant([[2.0, 7.0, 7.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 5.0, 5.0, 4.0]], D)
    grad = tf.gradients(tf.reduce_max(x, 1), x)[0]
    grad_all = tf.gradients(tf.reduce_max(x), x)[0]
    grad_min = tf.gradients(tf.reduce_min(x, 0, keepdims=True), x)[0]
    with tf.Session() as sess:
        g, g_all, g_min = sess.run([grad, grad_all, grad_min])
    np.testing.assert_allclose(g, [[0, 0.5, 0.5, 0], [0.25] * 4, [0, 0.5, 0.5, 0]])
    np.testing.assert_allclose(g_all, [[0, 0.5, 0.5, 0], [0] * 4, [0] * 4])
    np.testing.assert_allclose(g_min, [[0, 0, 0, 0.5], [0, 1, 1, 0.5], [1, 0, 0, 0]])


def test_prod_gradient_with_zeros_is_exact():
    x = tf.constant([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], D)
    grad = tf.gradients(tf.reduce_prod(x, 1), x)[0]
    with tf.Session() as sess:
        got = sess.run(grad)
    # One zero: only the zero gets the product of the others; two zeros: all zero.
    np.testing.assert_array_equal(got, [[0, 6, 0], [0, 0, 0], [6, 3, 2]])


def test_prod_gradient_with_dynamic_axes_and_zeros():
    x = tf.placeholder(tf.float64, None)
    a = tf.placeholder(tf.int32, [None])
    grad = tf.gradients(tf.reduce_prod(x, a), x)[0]
    with tf.Session() as sess:
        got = sess.run(grad, {x: one_zero, a: [1]})
        got_all = sess.run(grad, {x: one_zero, a: [1, 0]})
    np.testing.assert_allclose(got, [[0, 6, 0], [-1, 0.75, -3]])
    np.testing.assert_allclose(got_all, [[0, 2 * 3 * 1.5 * -2 * 0.5, 0], [0, 0, 0]])


def test_mean_gradient_divides_by_reduced_count():
    x = tf.placeholder(tf.float64, [None, None, None])
    grad = tf.gradients(tf.reduce_mean(x, [0, 2]), x)[0]
    with tf.Session() as sess:
        got = sess.run(grad, {x: x3})
    np.testing.assert_allclose(got, np.full(x3.shape, 1 / 8))


def test_gradient_with_upstream_grad_ys():
    x = tf.constant(x3)
    dy = rng.standard_normal((2, 4))
    grad = tf.gradients(tf.reduce_sum(x, 1), x, grad_ys=tf.constant(dy))[0]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad), np.broadcast_to(dy[:, None, :], x3.shape))


def test_logsumexp_gradient_is_softmax_and_stable():
    big = np.array([[1000.0, 1000.0, -1000.0], [-1000.0, 0.0, 1000.0]], F)
    x = tf.constant(big)
    grad = tf.gradients(tf.reduce_logsumexp(x, 1), x)[0]
    with tf.Session() as sess:
        got = sess.run(grad)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], atol=1e-7)


# -- no gradient: arg max/min, any/all, count_nonzero, the axis input -----------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda x: tf.cast(tf.argmax(x, 1), tf.float64),
        lambda x: tf.cast(tf.argmin(x, 0), tf.float64),
        lambda x: tf.cast(tf.reduce_any(x > 0, 1), tf.float64),
        lambda x: tf.cast(tf.reduce_all(x > 0), tf.float64),
        lambda x: tf.cast(tf.count_nonzero(x, 1), tf.float64),
    ],
    ids=["argmax", "argmin", "any", "all", "count_nonzero"],
)
def test_not_differentiable(build):
    x = tf.constant(m)
    assert tf.gradients(build(x), x) == [None]


def test_axis_inputs_get_no_gradient():
    x = tf.constant(x3)
    a = tf.constant(1)
    for y in [tf.reduce_sum(x, a), tf.reduce_max(x, a), tf.cumsum(x, a), tf.reduce_prod(x, a)]:
        assert tf.gradients(y, a) == [None]


def test_registry_declares_non_differentiable_ops():
    from engine.gradients import get_gradient_function

    x = tf.constant(m)
    for t in [tf.argmax(x, 1), tf.argmin(x, 1), tf.reduce_any(x > 0), tf.reduce_all(x > 0)]:
        assert get_gradient_function(t.op) is None


# -- Cumprod forward (new op) ------------------------------------------------------------------

ints = np.array([[1, 2, 3], [4, -5, 6]], np.int32)
CUMPROD_CASES = [
    Case(
        "cumprod_f32",
        lambda t: tf.cumprod(t, 1),
        [m.astype(F)],
        lambda t: np.cumprod(t, 1, dtype=F),
        [3, 4],
        rtol=1e-5,
    ),
    Case(
        "cumprod_int32_exclusive",
        lambda t: tf.cumprod(t, 0, exclusive=True),
        [ints],
        lambda t: np.concatenate([np.ones((1, 3), np.int32), t[:1]], 0),
        [2, 3],
    ),
    Case(
        "cumprod_reverse",
        lambda t: tf.cumprod(t, -1, reverse=True),
        [ints],
        lambda t: np.flip(np.cumprod(np.flip(t, -1), -1), -1).astype(np.int32),
    ),
    Case(
        "cumprod_exclusive_reverse_f64",
        lambda t: tf.cumprod(t, 0, exclusive=True, reverse=True),
        [v],
        lambda t: np.append(np.flip(np.cumprod(np.flip(t[1:]))), 1.0),
    ),
]


@pytest.mark.parametrize("case", CUMPROD_CASES, ids=str)
def test_cumprod_values(case):
    check_case(case)


def test_cumprod_bad_axis_fails_at_run_time():
    y = tf.cumprod(tf.constant(m), 2)
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match="Expected scan axis in the range"),
    ):
        sess.run(y)


@pytest.mark.parametrize("shape_mode", ["unknown_dims", "unknown_rank"])
@pytest.mark.parametrize("case", TENSORDOT_CASES, ids=str)
def test_tensordot_gradient_with_unknown_shapes(case, shape_mode):
    a_val, b_val = case.inputs
    for gi in (0, 1):
        g = tf.Graph()
        with g.as_default():
            ps = [
                tf.placeholder(
                    tf.float64, [None] * v.ndim if shape_mode == "unknown_dims" else None
                )
                for v in (a_val, b_val)
            ]
            y = case.build(*ps)
            feeds = dict(zip(ps, (a_val, b_val)))
            with tf.Session() as sess:
                y_shape = list(np.shape(sess.run(y, feeds)))
                err = tf.test.compute_gradient_error(
                    ps[gi],
                    list(case.inputs[gi].shape),
                    y,
                    y_shape,
                    x_init_value=case.inputs[gi],
                    delta=1e-6,
                    extra_feed_dict={ps[1 - gi]: case.inputs[1 - gi]},
                )
        assert err < 1e-5, f"input {gi}"
