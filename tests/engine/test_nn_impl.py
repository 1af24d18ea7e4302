"""Composed ``tf.nn`` helpers and ``in_top_k`` against TensorFlow: values, gradients and
tensor names recorded by ``fixtures/make_nn_impl_fixtures.py`` from the same graphs."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.fixtures.make_nn_impl_fixtures import PREDICTIONS, X, build
from tests.engine.fixtures.oracle import (
    assert_recorded,
    assert_recorded_names,
    load,
    recorded_keys,
    run_graph,
)

TF = load("nn_impl_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build)


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_helpers_match_tensorflow(ours, key):
    expected = TF[key]
    # Absolute error relative to the largest value: a convolution's gradient sums
    # products of ~100 into values near 0, where float32's order of sums shows.
    scale = float(np.abs(expected).max()) if expected.size and expected.dtype.kind == "f" else 1
    assert_recorded(ours[key], expected, key, rtol=3e-6, atol=max(1e-6, 2e-7 * scale))


def test_tensor_names_match_tensorflow(ours):
    assert_recorded_names(ours, TF)


def test_in_top_k_cases_are_the_interesting_ones():
    """Ties at the k-th value count as in; a NaN anywhere in the row, never."""
    assert TF["in_top_1"].tolist() == [True, False, False, True]
    assert TF["in_top_4"].tolist() == [True, True, False, True]


def test_in_top_k_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="float32"):
            tf.nn.in_top_k(tf.constant([[1, 2]]), [0], 1)
        with pytest.raises(ValueError, match="rank 2"):
            tf.nn.in_top_k(tf.constant(X[0]), [0], 1)
        p = tf.placeholder(tf.float32, [None, 4])
        t = tf.placeholder(tf.int32, [None])
        top = tf.nn.in_top_k(p, t, 1)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="must match length of targets"):
                sess.run(top, {p: PREDICTIONS, t: [0, 1]})
            out_of_range = sess.run(top, {p: PREDICTIONS[:1], t: [7]})
        assert out_of_range.tolist() == [False]
        assert tf.gradients(tf.cast(top, tf.float32), p) == [None]  # not differentiable


def test_argument_errors():
    with tf.Graph().as_default():
        x = tf.constant(X)
        with pytest.raises(ValueError, match="both 'axis' and 'dim'"):
            tf.nn.l2_normalize(x, axis=0, dim=1)
        with pytest.raises(ValueError, match="same shape"):
            tf.nn.weighted_cross_entropy_with_logits(labels=x[:2], logits=x, pos_weight=2.0)
        with pytest.raises(ValueError, match="required"):
            tf.nn.weighted_cross_entropy_with_logits(labels=x, logits=x)
        with pytest.raises(ValueError, match="same shape"):
            tf.nn.log_poisson_loss(x[:2], x)
        with pytest.raises(ValueError, match="both 'keepdims' and 'keep_dims'"):
            tf.nn.sufficient_statistics(x, [0], keep_dims=True, keepdims=True)
        # TF1's names still work: targets=, dim=, keep_dims=, silu
        a = tf.nn.weighted_cross_entropy_with_logits(targets=x, logits=x, pos_weight=2.0)
        b = tf.nn.weighted_cross_entropy_with_logits(labels=x, logits=x, pos_weight=2.0)
        with tf.Session() as sess:
            av, bv = sess.run([a, b])
            np.testing.assert_array_equal(av, bv)
            np.testing.assert_array_equal(
                sess.run(tf.nn.l2_normalize(x, dim=1)), sess.run(tf.nn.l2_normalize(x, axis=1))
            )
            np.testing.assert_array_equal(sess.run(tf.nn.silu(x)), sess.run(tf.nn.swish(x)))
