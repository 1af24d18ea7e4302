"""tf.math, tf.random and tf.linalg: TF's names over the engine's functions, and the
helpers composed for them, against TensorFlow's recordings (``make_math_impl_fixtures.py``)."""

import numpy as np
import pytest

import engine as tf
from engine.tf_namespaces import LINALG, MATH, MATH_FROM_NN
from tests.engine.fixtures.make_math_impl_fixtures import build
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys, run_graph

TF = load("math_impl_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build)


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_composed_math_matches_tensorflow(ours, key):
    assert_recorded(ours[key], TF[key], key, rtol=3e-6, atol=1e-6)


def test_log_sigmoid_does_not_overflow():
    got = TF["log_sigmoid_wide"]
    assert np.all(np.isfinite(got)) and got[0] == np.float32(-200.0)


def test_namespaces_hold_the_engines_own_functions():
    for name in MATH:
        assert getattr(tf.math, name) is getattr(tf, name), name
    for name in MATH_FROM_NN:
        assert getattr(tf.math, name) is getattr(tf.nn, name), name
    for name in LINALG:
        assert getattr(tf.linalg, name) is getattr(tf, name), name
    assert tf.linalg.l2_normalize is tf.nn.l2_normalize
    assert tf.random.normal is tf.random_normal and tf.random.uniform is tf.random_uniform
    assert tf.random.truncated_normal is tf.truncated_normal
    assert tf.random.set_random_seed is tf.set_random_seed
    assert tf.math.log_sigmoid is tf.log_sigmoid


def test_seeded_random_ops_agree_across_names():
    with tf.Graph().as_default():
        a = tf.random.normal([3], seed=4)
        b = tf.random_normal([3], seed=4)
        with tf.Session() as sess:
            av, bv = sess.run([a, b])
    np.testing.assert_array_equal(av, bv)


def test_missing_names_say_what_the_namespace_covers():
    with pytest.raises(AttributeError, match=r"tf.math.bessel_i0 is not available.*reduce_std"):
        tf.math.bessel_i0  # noqa: B018
    with pytest.raises(AttributeError, match=r"tf.random.split is not available.*normal"):
        tf.random.split  # noqa: B018 - TF's stateless split, not tf.split
    with pytest.raises(AttributeError, match=r"tf.linalg.transpose is not available"):
        tf.linalg.transpose  # noqa: B018 - TF's matrix transpose, not tf.transpose


def test_variance_of_integers_is_a_clear_error():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="Input must be either real or complex"):
            tf.math.reduce_variance(tf.constant([1, 2, 3]))
