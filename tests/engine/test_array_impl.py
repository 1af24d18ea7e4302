"""``eye``, ``linspace``, ``meshgrid``, ``sort``, ``argsort``, ``norm`` and ``is_tensor``
against TensorFlow's recordings (``fixtures/make_array_impl_fixtures.py``, same graphs)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_array_impl_fixtures import TIES, X, build
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys, run_graph

TF = load("array_impl_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build)


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_helpers_match_tensorflow(ours, key):
    assert_recorded(ours[key], TF[key], key, rtol=2e-6, atol=1e-7)


def test_linspace_gives_tensorflows_bits_and_ends_exactly_at_stop(ours):
    for key in ("linspace_5", "linspace_7_neg", "linspace_f64"):
        np.testing.assert_array_equal(ours[key], TF[key])
    assert TF["linspace_7_neg"][-1] == np.float32(-2.25)


def test_ties_keep_index_order():
    assert TF["argsort_ties"].tolist() == [[3, 1, 4, 0, 2]]
    assert TF["argsort_ties_desc"].tolist() == [[0, 2, 1, 4, 3]]
    assert sorted(TIES[0]) == TIES[0][TF["argsort_ties"][0]].tolist()


def test_bad_arguments_are_clear_errors():
    with tf.Graph().as_default():
        x = tf.constant(X)
        with pytest.raises(ValueError, match="Unknown direction"):
            tf.sort(x, direction="UP")
        with pytest.raises(ValueError, match="out of bounds"):
            tf.sort(x, axis=2)
        with pytest.raises(ValueError, match="known rank"):
            tf.sort(tf.placeholder(tf.float32))
        with pytest.raises(ValueError, match="matrix 2-norm"):
            tf.norm(x, ord=2, axis=[0, 1])
        with pytest.raises(ValueError, match="supported vector norm"):
            tf.norm(x, ord=-1)
        with pytest.raises(ValueError, match="tuple of 2 unique integers"):
            tf.norm(x, axis=[1, 1])
        with pytest.raises(ValueError, match="Requires num > 0"):
            tf.linspace(0.0, 1.0, 0)
        with pytest.raises(TypeError, match="floating"):
            tf.linspace(0, 4, 3)
        with pytest.raises(ValueError, match="indexing parameter"):
            tf.meshgrid([1], [2], indexing="yx")


def test_is_tensor():
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        assert tf.is_tensor(tf.constant(1.0)) and tf.is_tensor(v)
        assert not tf.is_tensor(1.0) and not tf.is_tensor(np.ones(2))


def test_a_feed_sized_linspace_and_eye():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        line, ident = tf.linspace(-1.0, 1.0, n), tf.eye(n)
        with tf.Session() as sess:
            lv, iv = sess.run([line, ident], {n: 3})
            one = sess.run(line, {n: 1})
    assert lv.tolist() == [-1.0, 0.0, 1.0] and one.tolist() == [-1.0]
    np.testing.assert_array_equal(iv, np.eye(3, dtype=np.float32))


def test_integer_sorts_do_not_overflow_and_unsigned_ones_sort():
    """Ascending integer sorts reverse the order with ~x (signed) or max - x (unsigned), not
    -x, which overflows at the lowest value (TF 2.x's choice)."""
    lowest = np.iinfo(np.int32).min
    with tf.Graph().as_default():
        signed = tf.constant([lowest, 0, 5, -7], tf.int32)
        unsigned = tf.constant([3, 250, 0, 250], tf.uint8)
        with tf.Session() as sess:
            s, a, u, ua = sess.run(
                [tf.sort(signed), tf.argsort(signed), tf.sort(unsigned), tf.argsort(unsigned)]
            )
    assert s.tolist() == [lowest, -7, 0, 5] and a.tolist() == [0, 3, 1, 2]
    assert u.tolist() == [0, 3, 250, 250] and ua.tolist() == [2, 0, 1, 3]
    with pytest.raises(ValueError, match="Invalid value in tensor used for shape: -2"):
        tf.eye(-2)
