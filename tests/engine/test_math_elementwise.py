"""Elementwise math ops from a table, against numpy references."""

import numpy as np
import pytest

import engine as tf
from tests.engine.optable import Case, check_case

F = np.float32
rng = np.random.default_rng(0)
a = rng.standard_normal((2, 3)).astype(F)
b = rng.standard_normal((2, 3)).astype(F)
row = rng.standard_normal((3,)).astype(F)
pos = (np.abs(a) + 0.5).astype(F)
ia = np.array([[7, -7, 3], [0, 5, -2]], np.int32)
ib = np.array([[2, 2, -2], [3, 1, 5]], np.int32)
ba = np.array([True, False, True, False])
bb = np.array([True, True, False, False])

CASES = [
    Case("add", tf.add, [a, b], np.add, [2, 3]),
    Case("add_broadcast", tf.add, [a, row], np.add, [2, 3]),
    Case("add_scalar", lambda x: x + 2.0, [a], lambda x: x + F(2)),
    Case("radd_scalar", lambda x: 2.0 + x, [a], lambda x: F(2) + x),
    Case("sub", tf.subtract, [a, b], np.subtract),
    Case("rsub", lambda x: 1.0 - x, [a], lambda x: F(1) - x),
    Case("mul", tf.multiply, [a, b], np.multiply),
    Case("div_float", lambda x, y: x / y, [a, pos], np.divide),
    Case("truediv_int32", lambda x, y: x / y, [ia, ib], lambda x, y: x / y),
    Case("floordiv_int", lambda x, y: x // y, [ia, ib], np.floor_divide),
    Case("floordiv_float", lambda x, y: x // y, [a, pos], np.floor_divide),
    Case("mod_int", lambda x, y: x % y, [ia, ib], np.mod),
    Case("mod_float", lambda x, y: x % y, [a, pos], np.mod),
    Case("pow_float", lambda x, y: x ** y, [pos, b], np.power, rtol=1e-5),
    Case("pow_int", lambda x: x ** 2, [ia], lambda x: x ** 2),
    Case("neg", lambda x: -x, [a], np.negative),
    Case("abs", abs, [a], np.abs),
    Case("abs_int", tf.abs, [ia], np.abs),
    Case("square", tf.square, [a], np.square),
    Case("sqrt", tf.sqrt, [pos], np.sqrt),
    Case("rsqrt", tf.rsqrt, [pos], lambda x: 1 / np.sqrt(x), rtol=1e-6),
    Case("exp", tf.exp, [a], np.exp, rtol=1e-6),
    Case("log", tf.log, [pos], np.log, rtol=1e-6),
    Case("log1p", tf.log1p, [pos], np.log1p, rtol=1e-6),
    Case("sin", tf.sin, [a], np.sin),
    Case("cos", tf.cos, [a], np.cos),
    Case("tanh", tf.tanh, [a], np.tanh),
    Case("sigmoid", tf.sigmoid, [a], lambda x: (1 / (1 + np.exp(-x))).astype(F)),
    Case("maximum", tf.maximum, [a, b], np.maximum),
    Case("minimum", tf.minimum, [a, row], np.minimum),
    Case("less", lambda x, y: x < y, [a, b], np.less),
    Case("less_equal", lambda x, y: x <= y, [a, b], np.less_equal),
    Case("greater", lambda x, y: x > y, [a, b], np.greater),
    Case("greater_equal", lambda x, y: x >= y, [ia, ib], np.greater_equal),
    Case("equal", tf.equal, [ia, ib], np.equal),
    Case("not_equal", tf.not_equal, [ia, ib], np.not_equal),
    Case("logical_and", lambda x, y: x & y, [ba, bb], np.logical_and),
    Case("logical_or", lambda x, y: x | y, [ba, bb], np.logical_or),
    Case("logical_xor", lambda x, y: x ^ y, [ba, bb], np.logical_xor),
    Case("logical_not", lambda x: ~x, [ba], np.logical_not),
    Case("bitwise_and", lambda x, y: x & y, [ia, ib], np.bitwise_and),
    Case("cast_f2i", lambda x: tf.cast(x, tf.int32), [a * 3], lambda x: x.astype(np.int32)),
    Case("cast_i2f", lambda x: tf.cast(x, tf.float64), [ia], lambda x: x.astype(np.float64)),
    Case("cast_f2b", lambda x: tf.cast(x, tf.bool), [ia], lambda x: x != 0),
    Case("where", tf.where, [ba, ba.astype(F), bb.astype(F)], np.where),
    Case("where_v2_broadcast", tf.where_v2, [a > 0, a, np.float32(0)],
         lambda c, x, y: np.where(c, x, y)),
    Case("add_n", lambda x, y: tf.add_n([x, y, x]), [a, b], lambda x, y: x + y + x),
    Case("clip", lambda x: tf.clip_by_value(x, -0.5, 0.5), [a], lambda x: np.clip(x, -0.5, 0.5)),
    Case("matmul", tf.matmul, [a, b.T.copy()], np.matmul, [2, 2], rtol=1e-5),
    Case("matmul_ta", lambda x, y: tf.matmul(x, y, transpose_a=True), [a, b],
         lambda x, y: x.T @ y, [3, 3], rtol=1e-5),
    Case("matmul_op", lambda x, y: x @ y, [a, b.T.copy()], np.matmul, rtol=1e-5),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_elementwise(case):
    check_case(case)
