"""unique, unique_with_counts, setdiff1d, roll, ensure_shape and repeat against TensorFlow:
values, static shapes, gradients and errors recorded by ``fixtures/make_set_ops_fixtures.py``
from the same graphs (``build``)."""

import re

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_set_ops_fixtures import (
    CUBE,
    FLOATS,
    WRONG_SHAPE,
    build,
    build_failure,
    shape_code,
    storable,
)
from tests.engine.fixtures.oracle import load
from tests.engine.optable import Case, check_gradient

TF = load("set_ops_tf.npz")
VALUE_KEYS = sorted(k for k in TF.files if not k.startswith(("shape_", "error_", "tf_version")))
SHAPE_KEYS = sorted(k[len("shape_") :] for k in TF.files if k.startswith("shape_"))


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, shapes = build(tf)
        with tf.Session(graph=g) as sess:
            return sess.run(fetch), shapes


def test_the_fixture_records_its_tensorflow_version():
    assert str(TF["tf_version"]).count(".") == 2


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_match_tensorflow(ours, key):
    values, _ = ours
    expected = TF[key]
    got = storable(values[key])
    assert got.dtype == expected.dtype and got.shape == expected.shape, key
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0, equal_nan=True)
        # -0.0 and 0.0 compare equal: the sign of the value kept must match TF's too.
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("key", SHAPE_KEYS)
def test_static_shapes_match_tensorflow(ours, key):
    _, shapes = ours
    np.testing.assert_array_equal(shape_code(shapes[key]), TF[f"shape_{key}"])


def test_the_recorded_cases_exercise_what_they_claim():
    """Sanity of the fixture itself: NaNs stay distinct, -0.0 joins the first 0.0, repeated
    roll axes add up and repeat drops zero counts."""
    assert np.isnan(TF["unique_float32_y"]).sum() == 2 and not np.signbit(TF["unique_float32_y"][1])
    assert TF["unique_float32_idx"][1] == TF["unique_float32_idx"][2]
    np.testing.assert_array_equal(TF["roll_repeated_axis"], np.roll(CUBE, (5, -1), (2, 1)))
    assert TF["repeat_each_axis0"].shape == (2, 2)
    assert TF["unique_empty_y"].size == 0 and TF["setdiff_nothing_left_out"].size == 0


def test_ensure_shape_fails_at_run_time_as_tensorflow_does():
    pattern = r"Shape of tensor \S+ (\[[^\]]*\]) is not compatible with expected shape (\S+)\."
    expected = re.search(pattern, str(TF["error_ensure_shape"]))
    assert expected is not None
    with tf.Graph().as_default():
        checked, p = build_failure(tf)
        assert checked.shape.as_list() == [2, 3]
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(checked, {p: WRONG_SHAPE})
            ok = np.ones((2, 3), np.float32)
            np.testing.assert_array_equal(sess.run(checked, {p: ok}), ok)
    got = re.search(pattern, str(info.value))
    assert got is not None and got.groups() == expected.groups()


def test_static_shape_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            tf.unique(tf.constant([[1, 2]]))
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            tf.setdiff1d(tf.constant([[1]]), tf.constant([1]))
        p = tf.placeholder(tf.float32, [None, 3])
        with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but "):
            tf.ensure_shape(p, [2, 4])
        with pytest.raises(ValueError, match="Shape must be rank 3 but is rank 2"):
            tf.ensure_shape(p, [2, 4, 5])
        with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
            tf.roll(tf.constant([1, 2]), [1, 2], [0])
        with pytest.raises(ValueError, match="at least rank 1"):
            tf.roll(tf.constant(3), 1, 0)


def test_dtype_errors_are_clear():
    with tf.Graph().as_default():
        x = tf.constant([1, 2])
        with pytest.raises(TypeError, match="'out_idx' has DataType float32 not in list"):
            tf.unique(x, out_idx=tf.float32)
        with pytest.raises(TypeError, match="'index_dtype' has DataType int16"):
            tf.setdiff1d(x, x, index_dtype=tf.int16)
        with pytest.raises(TypeError, match="attr 'Tshift' of float32"):
            tf.roll(x, tf.constant(1.0), 0)
        with pytest.raises(TypeError, match="must be of type integer"):
            tf.repeat(x, tf.constant(2.0))
        with pytest.raises(TypeError, match="`axis` must be an int"):
            tf.repeat(x, 2, axis=0.5)


def test_run_time_errors():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.int32)
        shift = tf.placeholder(tf.int32)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="unique expects a 1D"):
                sess.run(tf.unique(p).y, {p: [[1, 2]]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="axis 3 is out of range"):
                sess.run(tf.roll(tf.constant([1, 2]), 1, 3))
            with pytest.raises(tf.errors.InvalidArgumentError, match="same size"):
                sess.run(tf.roll(tf.constant([1, 2]), shift, [0]), {shift: [1, 1]})


def test_unique_setdiff_have_no_gradient_and_values_flow_elsewhere():
    """TF registers no gradient for Unique, UniqueWithCounts and ListDiff: nothing flows back
    through them (the engine says None where TF raises LookupError)."""
    with tf.Graph().as_default():
        x = tf.constant(FLOATS)
        y = tf.unique(x).y
        count = tf.unique_with_counts(x).count
        out = tf.setdiff1d(x, tf.constant([1.5])).out
        for t in (y, tf.cast(count, tf.float32), out):
            assert tf.gradients(tf.reduce_sum(t), x) == [None]


def test_roll_gradient_of_gradient_rolls_back_twice():
    with tf.Graph().as_default():
        x = tf.constant(np.arange(6.0).reshape(2, 3))
        w = tf.constant(np.arange(6.0).reshape(2, 3) + 1)
        (g,) = tf.gradients(tf.reduce_sum(tf.roll(x, [1, 2], [0, 1]) * w), x)
        with tf.Session() as sess:
            got = sess.run(g)
    np.testing.assert_array_equal(got, np.roll(np.arange(6.0).reshape(2, 3) + 1, (-1, -2), (0, 1)))


_GRID = np.arange(12.0).reshape(3, 4) * 0.37 - 1.1

GRAD_CASES = [
    Case("roll", lambda x: tf.roll(x, [1, -2], [0, 1]), [_GRID], None, grad_inputs=(0,)),
    Case(
        "roll_repeated_axis", lambda x: tf.roll(x, [1, 2], [1, 1]), [_GRID], None, grad_inputs=(0,)
    ),
    Case("ensure_shape", lambda x: tf.ensure_shape(x, [3, None]), [_GRID], None, grad_inputs=(0,)),
    Case("repeat", lambda x: tf.repeat(x, [1, 0, 2], axis=0), [_GRID], None, grad_inputs=(0,)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradients_match_finite_differences(case):
    check_gradient(case)
