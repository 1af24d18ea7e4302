"""More elementwise math: table cases against numpy/``math`` references and finite
differences, and TensorFlow's recorded values at the domain edges
(``fixtures/make_math_more_fixtures.py``)."""

import math

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_math_more_fixtures import build
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys, run_graph
from tests.engine.optable import Case, check_case, check_gradient

F = np.float32
unit = np.array([[-0.9, -0.2, 0.0], [0.3, 0.6, 0.95]], F)
wide = np.array([[-2.5, -0.4, 0.0], [0.7, 1.5, 3.2]], F)
pos = np.array([[1.2, 0.3, 2.5], [6.0, 1.0, 11.5]], F)
num = np.array([[0.0, 0.0, 1.0], [-2.0, 3.0, 5.0]], F)
den = np.array([[0.0, 2.0, 0.0], [0.0, -4.0, 0.5]], F)
ix = np.array([7, -7, 7, -7, 9], np.int32)
iy = np.array([2, 2, -2, -2, -4], np.int32)


def _vec(fn, dtype=F):
    return lambda x: np.vectorize(fn)(x.astype(np.float64)).astype(dtype)


CASES = [
    Case("acos", tf.acos, [unit], np.arccos),
    Case("asin", tf.asin, [unit], np.arcsin),
    Case("atan", tf.atan, [wide], np.arctan),
    Case("atan2", tf.atan2, [wide, pos], np.arctan2),
    Case("sinh", tf.sinh, [wide], np.sinh),
    Case("cosh", tf.cosh, [wide], np.cosh),
    Case("asinh", tf.asinh, [wide], np.arcsinh),
    Case("acosh", tf.acosh, [pos + 1], np.arccosh),
    Case("atanh", tf.atanh, [unit], np.arctanh),
    Case("erfc", tf.erfc, [wide], _vec(math.erfc)),
    Case("lgamma", tf.lgamma, [pos], _vec(math.lgamma)),
    Case("digamma", tf.digamma, [pos], lambda x: _digamma_ref(x)),
    Case("polygamma", tf.math.polygamma, [np.ones_like(pos), pos], lambda a, x: _trigamma_ref(x)),
    Case("rint", tf.rint, [np.array([-2.5, -0.5, 0.5, 1.5, 2.4], F)], np.rint),
    Case("div_no_nan", tf.div_no_nan, [num, den], lambda x, y: np.where(y == 0, 0, x / y)),
    Case(
        "multiply_no_nan",
        tf.math.multiply_no_nan,
        [num, den],
        lambda x, y: np.where(y == 0, 0, x * y),
    ),
    Case("xlogy", tf.math.xlogy, [num, pos], lambda x, y: np.where(x == 0, 0, x * np.log(y))),
    Case("xdivy", tf.math.xdivy, [num, pos], lambda x, y: np.where(x == 0, 0, x / y)),
    Case("truncatediv", tf.truncatediv, [ix, iy], lambda x, y: np.trunc(x / y).astype(np.int32)),
    Case("truncatemod", tf.truncatemod, [ix, iy], np.fmod),
]


def _digamma_ref(x):
    # d/dx lgamma by a central difference of math.lgamma, in float64
    h = 1e-5
    x64 = x.astype(np.float64)
    lg = np.vectorize(math.lgamma)
    return ((lg(x64 + h) - lg(x64 - h)) / (2 * h)).astype(x.dtype)


def _trigamma_ref(x):
    x64 = x.astype(np.float64)
    return sum(1.0 / (x64 + k) ** 2 for k in range(200000)).astype(x.dtype) + (
        1.0 / (x64 + 200000)
    ).astype(x.dtype)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_elementwise(case):
    check_case(case)


pair = np.array([[0.2, 0.5, -2.0], [1.5, 0.7, -0.3]], F)
GRAD_CASES = [
    Case("acos", tf.acos, [unit], None, grad_inputs=(0,)),
    Case("asin", tf.asin, [unit], None, grad_inputs=(0,)),
    Case("atan", tf.atan, [wide], None, grad_inputs=(0,)),
    Case("atan2", tf.atan2, [wide, pos], None, grad_inputs=(0, 1)),
    Case("sinh", tf.sinh, [wide], None, grad_inputs=(0,)),
    Case("cosh", tf.cosh, [wide], None, grad_inputs=(0,)),
    Case("asinh", tf.asinh, [wide], None, grad_inputs=(0,)),
    Case("acosh", tf.acosh, [pos + 1], None, grad_inputs=(0,)),
    Case("atanh", tf.atanh, [unit * 0.9], None, grad_inputs=(0,)),
    Case("erfc", tf.erfc, [wide], None, grad_inputs=(0,)),
    Case("lgamma", tf.lgamma, [pos], None, grad_inputs=(0,)),
    Case("digamma", tf.digamma, [pos], None, grad_inputs=(0,)),
    Case("polygamma", lambda x: tf.math.polygamma(2.0, x), [pos], None, grad_inputs=(0,)),
    Case("div_no_nan", tf.div_no_nan, [wide, pos], None, grad_inputs=(0, 1)),
    Case("multiply_no_nan", tf.math.multiply_no_nan, [wide, pos], None, grad_inputs=(0, 1)),
    Case("xlogy", tf.math.xlogy, [pair, pos], None, grad_inputs=(0, 1)),
    Case("xdivy", tf.math.xdivy, [pair, pos], None, grad_inputs=(0, 1)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradient(case):
    check_gradient(case, tol=1e-4)


TF = load("math_more_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build)


def _tolerance(key):
    rtol = 1e-12 if key.endswith("f64") else 1e-6
    atol = 0.0
    if "gamma" in key:
        # lgamma/digamma vanish at 1 and 2 / near 1.46, where a relative bound is meaningless.
        atol = 1e-14 if key.endswith("f64") else 1e-6
    return rtol, atol


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_matches_tensorflow(ours, key):
    rtol, atol = _tolerance(key)
    assert_recorded(ours[key], TF[key], key, rtol=rtol, atol=atol)


def test_the_recording_covers_the_edges():
    """Sanity of the recorded cases: NaN/inf positions exist where TF puts them."""
    assert np.isinf(TF["lgamma_f64"]).sum() >= 4  # poles and infinities
    assert TF["divide_no_nan_f32"].tolist()[:3] == [0.0, 0.0, 0.0]
    assert TF["divide_no_nan_f64"][2] == 0.0
    assert TF["rint_f32"].tolist()[:4] == [-2.0, -2.0, -0.0, -0.0]
    assert TF["truncatemod_i32"].tolist()[:4] == [1, -1, 1, -1]


def test_integer_truncating_division_by_zero_is_an_error():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(tf.truncatemod(tf.constant([1]), tf.constant([0])))
