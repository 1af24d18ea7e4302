"""``tf.nn.lrn`` against TensorFlow (values and gradients recorded by
``fixtures/make_lrn_fixtures.py``), and the seeded random ops ``tf.random_shuffle`` and
``tf.multinomial`` / ``tf.random.categorical``, whose samples cannot match TF's bits: they are
checked for seeded determinism, their distributions and TF's errors."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.fixtures.make_lrn_fixtures import INPUTS, SETTINGS, build
from tests.engine.fixtures.oracle import (
    assert_recorded,
    assert_recorded_names,
    load,
    recorded_keys,
    run_graph,
)
from tests.engine.optable import Case, check_gradient

TF = load("lrn_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build)


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_lrn_matches_tensorflow(ours, key):
    # float32: TF sums the window with a band matrix product and we with shifted slices, so
    # gradients of near-cancelling terms differ by a few ulps (seen: 6e-6 relative).
    # float16 is computed in float32 here, in half by TF's CPU kernel: about 2 half ulps.
    tol = (2e-3, 2e-3) if TF[key].dtype == np.float16 else (1e-5, 1e-7)
    assert_recorded(ours[key], TF[key], key, rtol=tol[0], atol=tol[1])


def test_lrn_tensor_names_match_tensorflow(ours):
    assert_recorded_names(ours, TF)


def _numpy_lrn(x, radius, bias, alpha, beta):
    x = x.astype(np.float64)
    depth = x.shape[-1]
    sqr = np.stack(
        [(x[..., max(0, d - radius) : d + radius + 1] ** 2).sum(-1) for d in range(depth)], -1
    )
    return x / (bias + alpha * sqr) ** beta


@pytest.mark.parametrize("key", sorted(SETTINGS))
def test_the_recorded_cases_follow_the_formula(key):
    """Sanity of the recording itself against the formula written out in numpy."""
    _, radius, bias, alpha, beta, _ = SETTINGS[key]
    want = _numpy_lrn(INPUTS[key], radius, bias, alpha, beta)
    np.testing.assert_allclose(TF[key], want, rtol=2e-6, atol=1e-7)


def test_a_window_wider_than_the_depth_sums_every_channel():
    x = INPUTS["radius_over_depth"]
    full = 2.0 + 0.3 * (x.astype(np.float64) ** 2).sum(-1, keepdims=True)
    np.testing.assert_allclose(TF["radius_over_depth"], x / full**0.6, rtol=2e-6)


_W = np.random.default_rng(5).standard_normal((2, 2, 3, 5))
_X = np.random.default_rng(6).standard_normal((2, 2, 3, 5))


def _second_order(x):
    y = tf.nn.lrn(x, depth_radius=1, bias=1.5, alpha=0.4, beta=0.75)
    return tf.gradients(tf.reduce_sum(y * tf.constant(_W)), x)[0]


GRAD_CASES = [
    Case("lrn_defaults", lambda x: tf.nn.lrn(x), [_X], None, grad_inputs=(0,)),
    Case(
        "lrn_radius_1",
        lambda x: tf.nn.lrn(x, depth_radius=1, bias=0.5, alpha=2.0, beta=0.75),
        [_X],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "lrn_radius_over_depth",
        lambda x: tf.nn.lrn(x, depth_radius=9, bias=2.0, alpha=0.3, beta=1.0),
        [_X],
        None,
        grad_inputs=(0,),
    ),
    # LRNGrad's own gradient (TF has none): second order through every input of LRNGrad.
    Case("lrn_grad_second_order", _second_order, [_X], None, grad_inputs=(0,)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_lrn_gradients_match_finite_differences(case):
    check_gradient(case)


def test_lrn_errors_are_tensorflows():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 2"):
            tf.nn.lrn(tf.constant(np.zeros((2, 3), np.float32)))
        with pytest.raises(TypeError, match="int32"):
            tf.nn.lrn(tf.constant(np.zeros((1, 1, 1, 2), np.int32)))
        p = tf.placeholder(tf.float32)
        flat, negative = tf.nn.lrn(p), tf.nn.lrn(p, depth_radius=-1)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="in must be 4-dimensional"):
                sess.run(flat, {p: np.zeros((2, 3), np.float32)})
            with pytest.raises(errors.InvalidArgumentError, match="depth_radius = -1"):
                sess.run(negative, {p: np.zeros((1, 1, 2, 3), np.float32)})


def test_lrn_grad_checks_its_input_shapes():
    with tf.Graph().as_default():
        a, b = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
        dx = tf.gradients(tf.nn.lrn(a), a, grad_ys=b)[0]
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="should have the same shape"):
                sess.run(dx, {a: np.ones((1, 1, 2, 3), np.float32), b: np.ones((1, 1, 2, 4))})


# -- RandomShuffle -----------------------------------------------------------------------------


def _run_twice(make, runs=1):
    """``make()``'s values in two fresh sessions of one graph, ``runs`` runs each."""
    out = []
    with tf.Graph().as_default():
        t = make()
        for _ in range(2):
            with tf.Session() as sess:
                out.append([sess.run(t) for _ in range(runs)])
    return out


def test_shuffle_permutes_rows_and_keeps_them_whole():
    rows = np.arange(60).reshape(20, 3)
    with tf.Graph().as_default():
        s = tf.random_shuffle(tf.constant(rows), seed=3)
        assert s.shape.as_list() == [20, 3] and s.dtype == tf.int64
        with tf.Session() as sess:
            got = sess.run(s)
    assert not np.array_equal(got, rows)  # 1 in 20! to be equal by chance
    np.testing.assert_array_equal(np.sort(got[:, 0]), rows[:, 0])
    np.testing.assert_array_equal(got, rows[got[:, 0] // 3])  # rows moved, never split


def test_shuffle_is_seeded_like_the_other_random_ops():
    first, second = _run_twice(lambda: tf.random_shuffle(tf.range(50), seed=11), runs=3)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])  # each run draws anew

    def graph_seeded():
        tf.set_random_seed(5)
        return tf.random.shuffle(tf.range(50))

    a, b = _run_twice(graph_seeded)
    np.testing.assert_array_equal(a[0], b[0])
    ((x, y),), _ = _run_twice(lambda: [tf.random_shuffle(tf.range(50), seed=s) for s in (1, 2)])
    assert not np.array_equal(x[0], y[0])


def test_shuffle_draws_every_order_equally():
    counts = np.zeros((4, 4))
    with tf.Graph().as_default():
        s = tf.random_shuffle(tf.range(4), seed=21)
        with tf.Session() as sess:
            for _ in range(4000):
                counts[np.arange(4), sess.run(s)] += 1
    # Each element lands at each position with probability 1/4: 1000 expected, sd about 27.
    assert np.all(np.abs(counts - 1000) < 150), counts


def test_shuffle_passes_scalars_and_short_inputs_through():
    with tf.Graph().as_default():
        cases = [np.float32(5.0), np.zeros((0, 2), np.float32), np.array([[7, 8]], np.int32)]
        shuffled = [tf.random_shuffle(tf.constant(v), seed=1) for v in cases]
        words = tf.random_shuffle(tf.constant(np.array([b"a", b"b", b"c"], dtype=object)), seed=2)
        with tf.Session() as sess:
            got = sess.run(shuffled + [words])
    for v, g in zip(cases, got):
        assert g.dtype == v.dtype and g.shape == v.shape
        np.testing.assert_array_equal(g, v)
    assert sorted(got[-1].tolist()) == [b"a", b"b", b"c"]


# -- Multinomial / categorical ---------------------------------------------------------------

_PROBS = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])


def _draw(logits, n=20000, seed=17, **kw):
    with tf.Graph().as_default():
        m = tf.multinomial(tf.constant(logits), n, seed=seed, **kw)
        with tf.Session() as sess:
            return m, sess.run(m)


def test_multinomial_draws_from_the_softmax_of_each_row():
    m, got = _draw(np.log(_PROBS).astype(np.float32) + 3.0)  # softmax ignores the shift
    assert got.dtype == np.int64 and m.shape.as_list() == [2, 20000]
    for row, p in zip(got, _PROBS):
        observed = np.bincount(row, minlength=4)
        expected = 20000 * p
        chi2 = ((observed - expected) ** 2 / expected).sum()
        assert chi2 < 30, (observed, expected)  # df 3: P(chi2 > 30) < 1e-5


def test_infinite_and_nan_logits_are_never_drawn():
    logits = np.array([[-np.inf, 0.0, -np.inf, 1.0], [np.nan, 2.0, np.inf, 2.0]], np.float32)
    _, got = _draw(logits, output_dtype=tf.int32)
    assert got.dtype == np.int32
    assert set(np.unique(got[0])) == {1, 3} and set(np.unique(got[1])) == {1, 3}
    share = (got[0] == 3).mean()  # e / (1 + e)
    assert abs(share - np.e / (1 + np.e)) < 0.02
    # A row without a finite logit gives num_classes, as TF's CPU kernel does.
    _, none = _draw(np.full((1, 3), -np.inf, np.float32), n=4)
    np.testing.assert_array_equal(none, [[3, 3, 3, 3]])


def test_multinomial_is_seeded_like_the_other_random_ops():
    logits = np.zeros((3, 10), np.float32)
    first, second = _run_twice(lambda: tf.multinomial(logits, 50, seed=9), runs=2)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])
    ((x, y),), _ = _run_twice(lambda: [tf.multinomial(logits, 50, seed=s) for s in (1, 2)])
    assert not np.array_equal(x, y)
    ((c, m),), _ = _run_twice(
        lambda: [
            tf.random.categorical(logits, 50, seed=9),
            tf.random.multinomial(logits, 50, seed=9),
        ]
    )
    np.testing.assert_array_equal(c, m)  # the same op and seeds under TF 2's name
    np.testing.assert_array_equal(c, first[0])


def test_multinomial_shapes_names_and_empty_draws():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 5])
        n = tf.placeholder(tf.int32, [])
        m = tf.multinomial(p, n)
        c = tf.random.categorical([[1.0, 2.0]], 3, dtype=tf.int32, name="cat")
        assert m.shape.as_list() == [None, None] and m.name == "multinomial/Multinomial:0"
        assert c.shape.as_list() == [1, 3] and c.dtype == tf.int32 and c.name == "cat/Multinomial:0"
        with tf.Session() as sess:
            assert sess.run(m, {p: np.zeros((0, 5)), n: 4}).shape == (0, 4)
            assert sess.run(m, {p: np.zeros((2, 5)), n: 0}).shape == (2, 0)


def test_multinomial_errors_are_tensorflows():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
            tf.multinomial([1.0, 2.0], 3)
        with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
            tf.multinomial([[1.0]], [3])
        with pytest.raises(ValueError, match=r"Accepted dtypes are \(tf.int32, tf.int64\)"):
            tf.random.categorical([[1.0]], 3, dtype=tf.float32)
        with pytest.raises(TypeError, match="has type int64 .* expected type of int32"):
            tf.multinomial([[1.0]], tf.constant(3, tf.int64))
        p, n = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
        m = tf.multinomial(p, n)
        bad = [
            (np.zeros((2, 3)), -1, "num_samples should be non-negative, got -1"),
            (np.zeros((2, 0)), 2, "num_classes should be positive, got 0"),
            (np.zeros(3), 1, r"logits should be a matrix, got shape \[3\]"),
            (np.zeros((1, 3)), [1, 2], r"num_samples should be a scalar, got shape \[2\]"),
        ]
        with tf.Session() as sess:
            for logits, count, message in bad:
                with pytest.raises(errors.InvalidArgumentError, match=message):
                    sess.run(m, {p: logits, n: count})


def test_tf_names():
    assert tf.nn.local_response_normalization is tf.nn.lrn
    assert tf.random.shuffle is tf.random_shuffle and tf.random.multinomial is tf.multinomial
    assert tf.random.categorical is not tf.multinomial  # its own argument order (dtype, seed)
