"""Elementwise math ops from a table, against numpy references."""

import numpy as np
import pytest

import engine as tf
from tests.engine.optable import Case, check_case, check_gradient

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
    Case("pow_float", lambda x, y: x**y, [pos, b], np.power, rtol=1e-5),
    Case("pow_int", lambda x: x**2, [ia], lambda x: x**2),
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
    Case(
        "where_v2_broadcast",
        tf.where_v2,
        [a > 0, a, np.float32(0)],
        lambda c, x, y: np.where(c, x, y),
    ),
    Case("add_n", lambda x, y: tf.add_n([x, y, x]), [a, b], lambda x, y: x + y + x),
    Case("clip", lambda x: tf.clip_by_value(x, -0.5, 0.5), [a], lambda x: np.clip(x, -0.5, 0.5)),
    Case("matmul", tf.matmul, [a, b.T.copy()], np.matmul, [2, 2], rtol=1e-5),
    Case(
        "matmul_ta",
        lambda x, y: tf.matmul(x, y, transpose_a=True),
        [a, b],
        lambda x, y: x.T @ y,
        [3, 3],
        rtol=1e-5,
    ),
    Case("matmul_op", lambda x, y: x @ y, [a, b.T.copy()], np.matmul, rtol=1e-5),
    Case(
        "batch_matmul",
        tf.matmul,
        [np.stack([a, b]), np.stack([b.T, a.T]).copy()],
        np.matmul,
        [2, 2, 2],
        rtol=1e-5,
    ),
    Case(
        "batch_matmul_broadcast_adj",
        lambda x, y: tf.matmul(x, y, adjoint_b=True),
        [np.stack([a, b]), b],
        lambda x, y: x @ y.T,
        [2, 2, 2],
        rtol=1e-5,
    ),
    Case("bitwise_or", lambda x, y: x | y, [ia, ib], np.bitwise_or),
    Case("bitwise_xor", lambda x, y: x ^ y, [ia, ib], np.bitwise_xor),
    Case("invert", lambda x: ~x, [ia], np.invert),
    Case("ceil", tf.ceil, [a * 3], np.ceil),
    Case("floor", tf.floor, [a * 3], np.floor),
    Case("round_half_even", tf.round, [np.array([0.5, 1.5, 2.5, -0.5, 1.2], F)], np.round),
    Case("expm1", tf.expm1, [a], np.expm1, rtol=1e-6),
    Case("tan", tf.tan, [a], np.tan, rtol=1e-5),
    Case("is_nan", tf.is_nan, [np.array([1.0, np.nan, np.inf], F)], np.isnan),
    Case("is_inf", tf.is_inf, [np.array([1.0, np.nan, -np.inf], F)], np.isinf),
    Case("is_finite", tf.is_finite, [np.array([1.0, np.nan, np.inf], F)], np.isfinite),
    Case("sign", tf.sign, [a], np.sign),
    Case("reciprocal", tf.reciprocal, [pos], np.reciprocal),
    Case("squared_difference", tf.squared_difference, [a, row], lambda x, y: np.square(x - y)),
    Case(
        "einsum_matmul",
        lambda x, y: tf.einsum("ij,jk->ik", x, y),
        [a, b.T.copy()],
        lambda x, y: x @ y,
        [2, 2],
        rtol=1e-5,
    ),
    Case(
        "einsum_ellipsis_broadcast",
        lambda x, y: tf.einsum("...ij,...jk->...ik", x, y),
        [np.stack([a, b]), b.T.copy()],
        lambda x, y: np.matmul(x, y),
        [2, 2, 2],
        rtol=1e-5,
    ),
    Case("einsum_transpose", lambda x: tf.einsum("ij->ji", x), [a], np.transpose, [3, 2]),
    Case("einsum_identity", lambda x: tf.einsum("ij->ij", x), [a], np.copy, [2, 3]),
    Case("einsum_trace", lambda x: tf.einsum("ii", x), [a @ b.T], np.trace, [], rtol=1e-5),
    Case(
        "einsum_implicit_output",
        lambda x, y: tf.einsum("ij,kj", x, y),
        [a, b],
        lambda x, y: x @ y.T,
        [2, 2],
        rtol=1e-5,
    ),
    Case("einsum_outer", lambda x, y: tf.einsum("i,j->ij", x, y), [row, row], np.outer, [3, 3]),
    Case(
        "einsum_three_operands",
        lambda x, y, z: tf.einsum("ij,jk,kl->il", x, y, z),
        [a, b.T.copy(), a],
        lambda x, y, z: x @ y @ z,
        [2, 3],
        rtol=1e-5,
    ),
    Case(
        "einsum_int32_reduce",
        lambda x: tf.einsum("ij->j", x),
        [ia],
        lambda x: x.sum(0).astype(np.int32),
        [3],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_elementwise(case):
    check_case(case)


# Finite differences vs symbolic gradients for every differentiable math op. Inputs stay
# away from kinks (abs at 0, clip bounds, max ties) where the derivative is undefined.
away = np.array([[0.7, -1.2, 0.4], [-0.3, 1.6, -0.9]], F)
other = np.array([[0.2, 0.5, -0.8], [1.1, -0.6, 0.3]], F)
GRAD_CASES = [
    Case("add", tf.add, [away, row], None, grad_inputs=(0, 1)),
    Case("sub", tf.subtract, [away, other], None, grad_inputs=(0, 1)),
    Case("mul_broadcast", tf.multiply, [away, row], None, grad_inputs=(0, 1)),
    Case("div", tf.realdiv, [away, pos], None, grad_inputs=(0, 1)),
    Case("truediv_scalar", lambda x: x / 3.0, [away], None, grad_inputs=(0,)),
    Case("floormod", tf.floormod, [away, pos + 1], None, grad_inputs=(0, 1)),
    Case("pow", tf.pow, [pos, other], None, grad_inputs=(0, 1)),
    Case("maximum", tf.maximum, [away, other], None, grad_inputs=(0, 1)),
    Case("minimum", tf.minimum, [away, other], None, grad_inputs=(0, 1)),
    Case("squared_difference", tf.squared_difference, [away, other], None, grad_inputs=(0, 1)),
    Case("neg", tf.negative, [away], None, grad_inputs=(0,)),
    Case("abs", tf.abs, [away], None, grad_inputs=(0,)),
    Case("sign_times_x", lambda x: tf.sign(x) * x, [away], None, grad_inputs=(0,)),
    Case("square", tf.square, [away], None, grad_inputs=(0,)),
    Case("sqrt", tf.sqrt, [pos], None, grad_inputs=(0,)),
    Case("rsqrt", tf.rsqrt, [pos], None, grad_inputs=(0,)),
    Case("reciprocal", tf.reciprocal, [pos], None, grad_inputs=(0,)),
    Case("exp", tf.exp, [away], None, grad_inputs=(0,)),
    Case("expm1", tf.expm1, [away], None, grad_inputs=(0,)),
    Case("log", tf.log, [pos], None, grad_inputs=(0,)),
    Case("log1p", tf.log1p, [pos], None, grad_inputs=(0,)),
    Case("sin", tf.sin, [away], None, grad_inputs=(0,)),
    Case("cos", tf.cos, [away], None, grad_inputs=(0,)),
    Case("tan", tf.tan, [away], None, grad_inputs=(0,)),
    Case("tanh", tf.tanh, [away], None, grad_inputs=(0,)),
    Case("sigmoid", tf.sigmoid, [away], None, grad_inputs=(0,)),
    Case(
        "select",
        lambda x, y: tf.where(tf.constant([[True, False, True], [False, True, False]]), x, y),
        [away, other],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "where_v2_broadcast",
        lambda x, y: tf.where_v2(tf.constant([True, False, True]), x, y),
        [away, row],
        None,
        grad_inputs=(0, 1),
    ),
    Case("add_n", lambda x, y: tf.add_n([x, y, x]), [away, other], None, grad_inputs=(0, 1)),
    Case(
        "clip",
        lambda x, lo: tf.clip_by_value(x, lo, 0.5),
        [away, np.float32(-0.5)],
        None,
        grad_inputs=(0, 1),
    ),
    Case("matmul", tf.matmul, [away, other.T.copy()], None, grad_inputs=(0, 1)),
    Case(
        "matmul_ta_tb",
        lambda x, y: tf.matmul(x, y, transpose_a=True, transpose_b=True),
        [away, other.T.copy()],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "batch_matmul_broadcast",
        lambda x, y: tf.matmul(x, y, adjoint_a=True),
        [np.stack([away, other]), away],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "einsum_attention_scores",
        lambda q, k: tf.einsum("bqd,bkd->bqk", q, k),
        [np.stack([away, other]), np.stack([other, away])],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "einsum_ellipsis_broadcast",
        lambda x, y: tf.einsum("...ij,...jk->...ik", x, y),
        [np.stack([away, other]), other.T.copy()],
        None,
        grad_inputs=(0, 1),
    ),
    Case("einsum_summed_label", lambda x: tf.einsum("ij->i", x), [away], None, grad_inputs=(0,)),
    Case(
        "einsum_three_operands",
        lambda x, y, z: tf.einsum("ij,jk,kl", x, y, z),
        [away, other.T.copy(), away],
        None,
        grad_inputs=(0, 1, 2),
    ),
    # second order, through the fused gradient kernels
    Case(
        "tanh_grad_grad", lambda x: tf.gradients(tf.tanh(x), x)[0], [away], None, grad_inputs=(0,)
    ),
    Case(
        "sigmoid_grad_grad",
        lambda x: tf.gradients(tf.sigmoid(x), x)[0],
        [away],
        None,
        grad_inputs=(0,),
    ),
    Case("sqrt_grad_grad", lambda x: tf.gradients(tf.sqrt(x), x)[0], [pos], None, grad_inputs=(0,)),
    Case(
        "rsqrt_grad_grad", lambda x: tf.gradients(tf.rsqrt(x), x)[0], [pos], None, grad_inputs=(0,)
    ),
    Case(
        "reciprocal_grad_grad",
        lambda x: tf.gradients(tf.reciprocal(x), x)[0],
        [pos],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "relu6_grad_grad",
        lambda x: tf.gradients(tf.nn.relu6(x) * x, x)[0],
        [away * 4],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "print_passes_gradient",
        lambda x: tf.Print(x, [x], message="grad check ") * x,
        [away],
        None,
        grad_inputs=(0,),
    ),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradient(case):
    check_gradient(case, tol=1e-5)


def test_cast_gradient_between_float_types():
    x = tf.constant([0.5, 1.5], tf.float32)
    y = tf.cast(x, tf.float64) * tf.constant([2.0, 3.0], tf.float64)
    g = tf.gradients(y, x)[0]
    assert g.dtype == tf.float32
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(g), [2.0, 3.0])


def test_non_differentiable_math_ops_give_none():
    x = tf.constant([0.5, 1.5])
    i = tf.constant([3, 4])
    assert tf.gradients(tf.floor(x) + tf.ceil(x) + tf.round(x), x) == [None]
    assert tf.gradients(tf.cast(x > 1.0, tf.float32), x) == [None]
    assert tf.gradients(tf.cast(tf.cast(x, tf.int32), tf.float32), x) == [None]
    assert tf.gradients(tf.cast(i // 2, tf.float32), i) == [None]
    with pytest.raises(LookupError, match="No gradient defined"):
        tf.gradients(_no_grad_op(x), x)


def _no_grad_op(x):
    from engine.framework import registry
    from engine.ops._common import create, same_as_input

    if registry.lookup("TestOpWithoutGradient") is None:
        registry.op("TestOpWithoutGradient", infer=same_as_input)(lambda xp, v: v + 0)
    return create("TestOpWithoutGradient", [x], {}, "no_grad").outputs[0]


def test_einsum_errors_are_typed_and_name_the_problem():
    x = tf.constant(a)
    with pytest.raises(ValueError, match="names 2 operands but 1 were given"):
        tf.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match="output label 'z' is unused"):
        tf.einsum("ij->iz", x)
    with pytest.raises(ValueError, match="invalid label"):
        tf.einsum("i1->i", x)
    with pytest.raises(ValueError, match="label 'j' has sizes 3 and 2"):
        tf.einsum("ij,jk->ik", x, x)
    with pytest.raises(ValueError, match="has rank 2"):
        tf.einsum("ijk->k", x)
    p = tf.placeholder(tf.float32, [None, None])
    y = tf.einsum("ij,jk->ik", p, p)
    assert y.shape.as_list() == [None, None]
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Einsum"):
        sess.run(y, {p: a})


def test_einsum_gradient_of_repeated_label_is_refused_clearly():
    x = tf.constant(a @ b.T)
    with pytest.raises(LookupError, match="repeat a label"):
        tf.gradients(tf.einsum("ii->", x), x)
