"""tf.check_numerics / verify_tensor_all_finite, tf.bitwise shifts and the tf.debugging,
tf.bitwise and tf.manip namespaces. Expected values and messages are what TensorFlow 2.21
(tf.compat.v1, graph mode) gave for the same calls."""

import numpy as np
import pytest

import engine as tf
from tests.engine.optable import Case, check_case, check_gradient

GRAD_CASES = [
    Case(
        "check_numerics",
        lambda x: tf.check_numerics(x * x, "checked"),
        [np.array([0.5, -1.5, 2.0])],
        lambda x: x * x,
        grad_inputs=(0,),
    ),
]
CASES = GRAD_CASES + [
    Case(
        "left_shift_clamped",
        tf.bitwise.left_shift,
        [np.array([1, 3, -8], np.int32), np.array([40, -1, 1], np.int32)],
        lambda x, y: np.array([-2147483648, 3, -16], np.int32),
    ),
    Case(
        "right_shift_clamped",
        tf.bitwise.right_shift,
        [np.array([-8, 64, 5], np.int8), np.array([1, 9, -1], np.int8)],
        lambda x, y: np.array([-4, 0, 5], np.int8),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_values(case):
    check_case(case)


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients(case):
    check_gradient(case)


def test_check_numerics_names_what_it_found():
    x = tf.placeholder(tf.float32, [None])
    c = tf.check_numerics(x, "bad x")
    v = tf.verify_tensor_all_finite(x, "msg")
    assert (c.op.type, c.name, v.name) == (
        "CheckNumerics",
        "CheckNumerics:0",
        "VerifyFinite/control_dependency:0",
    )
    assert tf.gradients(c * 2.0, x)[0].op.type == "CheckNumerics"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c, {x: [1.0, 2.0]}), [1.0, 2.0])
        for value, what in (
            ([1.0, np.nan], "NaN"),
            ([np.inf, 1.0], "Inf"),
            ([np.nan, np.inf], "Inf and NaN"),
        ):
            with pytest.raises(
                tf.errors.InvalidArgumentError, match=f"bad x : Tensor had {what} values"
            ):
                sess.run(c, {x: value})
            with pytest.raises(
                tf.errors.InvalidArgumentError, match=f"msg : Tensor had {what} values"
            ):
                sess.run(v, {x: value})


def test_namespaces():
    with tf.Session() as sess:
        got = sess.run(
            [
                tf.debugging.is_non_decreasing([1, 1, 2]),
                tf.debugging.is_strictly_increasing([1, 1, 2]),
                tf.debugging.is_strictly_increasing([[1, 2], [3, 4]]),
                tf.manip.roll([1, 2, 3], 1, 0),
                tf.bitwise.bitwise_xor(6, 3),
            ]
        )
    assert [bool(got[0]), bool(got[1]), bool(got[2])] == [True, False, True]
    np.testing.assert_array_equal(got[3], [3, 1, 2])
    assert got[4] == 5
    assert (
        tf.debugging.assert_equal is tf.assert_equal
        and tf.debugging.check_numerics is tf.check_numerics
    )
    with pytest.raises(AttributeError, match="tf.manip"):
        tf.manip.nothing  # noqa: B018


def round_trip_builder():
    """(fetches, feed, setup) for tests/engine/test_graph_def.py's round trip."""
    x = tf.constant(np.array([1.0, 2.0], np.float32))
    i = tf.constant(np.array([1, -8], np.int32))
    s = tf.constant(np.array([2, 1], np.int32))
    fetches = [tf.check_numerics(x, "m"), tf.bitwise.left_shift(i, s), tf.bitwise.right_shift(i, s)]
    return fetches, {}, []
