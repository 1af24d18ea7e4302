"""Clipping against TensorFlow: values, tensor names and gradients recorded by
``fixtures/make_clip_fixtures.py`` from the same graphs (``build``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_clip_fixtures import A, B, build
from tests.engine.fixtures.oracle import (
    assert_recorded,
    assert_recorded_names,
    load,
    recorded_keys,
    run_graph,
)

TF = load("clip_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build)


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_clipping_matches_tensorflow(ours, key):
    assert_recorded(ours[key], TF[key], key, rtol=2e-6, atol=1e-7)


def test_tensor_names_match_tensorflow(ours):
    assert_recorded_names(ours, TF)


def test_the_clipping_actually_clips():
    """Sanity of the recorded cases themselves: tight clips change values, loose ones do not,
    and an infinite global norm poisons every clipped value (TF's choice)."""
    assert not np.allclose(TF["norm_clipped"], A)
    np.testing.assert_allclose(TF["norm_unclipped"], A, rtol=1e-6)  # t * 100 / 100
    assert np.isclose(np.linalg.norm(TF["norm_clipped"]), 1.0)
    np.testing.assert_allclose(TF["global_loose_2"], B, rtol=1e-6)
    assert np.all(np.isnan(TF["global_inf_0"]))
    assert np.all(np.isfinite(TF["grad_norm_zeros"]))


def test_bad_arguments_are_clear_errors():
    with tf.Graph().as_default():
        a = tf.constant(A)
        with pytest.raises(TypeError, match="t_list should be a sequence"):
            tf.clip_by_global_norm(a, 1.0)
        with pytest.raises(TypeError, match="t_list should be a sequence"):
            tf.global_norm("abc")
        with pytest.raises(ValueError, match="at least one tensor"):
            tf.global_norm([None, None])
        with pytest.raises(ValueError, match="clip_norm must not broadcast t"):
            tf.clip_by_norm(a, tf.constant(np.ones((2, 3, 4), np.float32)))


def test_float16_gradients_are_scaled_in_their_own_dtype():
    with tf.Graph().as_default():
        half = tf.constant(np.array([3.0, 4.0], np.float16))
        full = tf.constant(np.array([12.0], np.float32))
        (h, f), norm = tf.clip_by_global_norm([half, full], 6.5, use_norm=tf.constant(13.0))
        assert h.dtype == tf.float16 and f.dtype == tf.float32
        with tf.Session() as sess:
            hv, fv = sess.run([h, f])
        np.testing.assert_allclose(hv, [1.5, 2.0])
        np.testing.assert_allclose(fv, [6.0])


def test_clip_by_value_applies_the_max_bound_first():
    """As TF: max(min(x, hi), lo), so with lo > hi the lower bound wins."""
    with tf.Graph().as_default():
        with tf.Session() as sess:
            got = sess.run(tf.clip_by_value([5.0, 0.0, 2.0], 3.0, 1.0))
    assert got.tolist() == [3.0, 3.0, 3.0]
