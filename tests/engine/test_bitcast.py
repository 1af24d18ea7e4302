"""tf.bitcast (op Bitcast) against values and messages TensorFlow 2.21 gave for the same
calls (tf.compat.v1, graph mode)."""

import numpy as np
import pytest

import engine as tf


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_values_and_shapes_as_tensorflow():
    x = tf.constant(np.array([[1.0, -2.5]], np.float32))
    a, b = tf.bitcast(x, tf.int32), tf.bitcast(x, tf.uint8)
    c = tf.bitcast(tf.constant(np.arange(8, dtype=np.uint8).reshape(2, 4)), tf.float32)
    d = tf.bitcast(tf.constant(np.array([1.5], np.float64)), tf.int16)
    assert [t.shape.as_list() for t in (a, b, c, d)] == [[1, 2], [1, 2, 4], [2], [1, 4]]
    va, vb, vc, vd = _run([a, b, c, d])
    np.testing.assert_array_equal(va, [[1065353216, -1071644672]])
    np.testing.assert_array_equal(vb, [[[0, 0, 128, 63], [0, 0, 32, 192]]])
    np.testing.assert_array_equal(vc, np.array([3.8204714e-37, 1.0082514e-34], np.float32))
    np.testing.assert_array_equal(vd, [[0, 0, 0, 16376]])
    assert va.dtype == np.int32 and vb.dtype == np.uint8 and vd.dtype == np.int16


def test_errors_as_tensorflow():
    with pytest.raises(ValueError, match="from 1 to 2 due to shape. 3 does not match 2"):
        tf.bitcast(tf.constant(np.zeros([3], np.float32)), tf.float64)
    with pytest.raises(ValueError, match="from 4 to 1 due to shape. 3 does not match 4"):
        tf.bitcast(tf.constant(np.zeros([2, 3], np.uint8)), tf.float32)
    with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
        tf.bitcast(tf.constant([True]), tf.int8)
    p = tf.placeholder(tf.uint8, [None, None])
    q = tf.bitcast(p, tf.int32)
    assert q.shape.as_list() == [None]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot bitcast from 4 to 3"):
        _run(q, {p: np.zeros((2, 3), np.uint8)})
    np.testing.assert_array_equal(_run(q, {p: np.ones((2, 4), np.uint8)}), [16843009] * 2)


def round_trip_builder():
    """(fetches, feed, setup) for tests/engine/test_graph_def.py's round trip."""
    x = tf.constant(np.array([1.0, 2.0], np.float32))
    return [tf.bitcast(x, tf.uint8), tf.bitcast(tf.bitcast(x, tf.int32), tf.float32)], {}, []
