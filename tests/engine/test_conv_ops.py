"""Convolution, pooling and fused batch-norm ops: a table against loop-by-loop numpy
references (four modes: constants, unknown dims, unknown rank, the TEST device), finite-
difference gradients (first and second order), static shapes and errors."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.ops._common import create
from tests.engine.optable import Case, check_case, check_gradient

F = np.float32
D = np.float64
rng = np.random.default_rng(7)


def _geom(size, k, stride, dil, padding):
    eff = (k - 1) * dil + 1
    if padding == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + eff - size, 0)
        return out, total // 2
    if isinstance(padding, tuple):
        return (size + sum(padding) - eff) // stride + 1, padding[0]
    return (size - eff) // stride + 1, 0


def _taps(x, kh, kw, strides, padding, dil=(1, 1)):
    """Yields (oh, ow, i, j, rows) with rows = x[:, input row, input col, :] or None when the
    tap falls in the padding: the plainest possible reading of a window op."""
    n, h, w, c = x.shape
    ph = padding[0] if isinstance(padding, list) else padding
    pw = padding[1] if isinstance(padding, list) else padding
    oh, pt = _geom(h, kh, strides[0], dil[0], ph)
    ow, pl = _geom(w, kw, strides[1], dil[1], pw)
    for a in range(oh):
        for b in range(ow):
            for i in range(kh):
                for j in range(kw):
                    r, q = a * strides[0] + i * dil[0] - pt, b * strides[1] + j * dil[1] - pl
                    inside = 0 <= r < h and 0 <= q < w
                    yield a, b, i, j, (x[:, r, q, :] if inside else None)


def _out_hw(x, kh, kw, strides, padding, dil=(1, 1)):
    ph = padding[0] if isinstance(padding, list) else padding
    pw = padding[1] if isinstance(padding, list) else padding
    return _geom(x.shape[1], kh, strides[0], dil[0], ph)[0], _geom(
        x.shape[2], kw, strides[1], dil[1], pw
    )[0]


def np_conv(x, w, strides, padding, dil=(1, 1)):
    oh, ow = _out_hw(x, w.shape[0], w.shape[1], strides, padding, dil)
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for a, b, i, j, rows in _taps(x.astype(D), w.shape[0], w.shape[1], strides, padding, dil):
        if rows is not None:
            out[:, a, b, :] += rows @ w[i, j].astype(D)
    return out.astype(x.dtype)


def np_depthwise(x, w, strides, padding, dil=(1, 1)):
    oh, ow = _out_hw(x, w.shape[0], w.shape[1], strides, padding, dil)
    c, m = w.shape[2], w.shape[3]
    out = np.zeros((x.shape[0], oh, ow, c, m))
    for a, b, i, j, rows in _taps(x.astype(D), w.shape[0], w.shape[1], strides, padding, dil):
        if rows is not None:
            out[:, a, b] += rows[:, :, None] * w[i, j].astype(D)
    return out.reshape(x.shape[0], oh, ow, c * m).astype(x.dtype)


def np_pool(x, k, strides, padding, kind):
    oh, ow = _out_hw(x, k[0], k[1], strides, padding)
    best = np.full((x.shape[0], oh, ow, x.shape[3]), -np.inf)
    total = np.zeros_like(best)
    count = np.zeros((oh, ow))
    for a, b, _, _, rows in _taps(x.astype(D), k[0], k[1], strides, padding):
        if rows is not None:
            best[:, a, b] = np.maximum(best[:, a, b], rows)
            total[:, a, b] += rows
            count[a, b] += 1
    out = best if kind == "max" else total / count[None, :, :, None]
    return out.astype(x.dtype)


def np_conv_transpose(dy, w, out_shape, strides, padding):
    """The adjoint of np_conv: every output of the forward conv spreads ``dy`` back."""
    dx = np.zeros(out_shape)
    probe = np.zeros(out_shape)
    n, h, wd, c = out_shape
    oh, ow = _out_hw(probe, w.shape[0], w.shape[1], strides, padding)
    ph = _geom(h, w.shape[0], strides[0], 1, padding)[1]
    pw = _geom(wd, w.shape[1], strides[1], 1, padding)[1]
    for a in range(oh):
        for b in range(ow):
            for i in range(w.shape[0]):
                for j in range(w.shape[1]):
                    r, q = a * strides[0] + i - ph, b * strides[1] + j - pw
                    if 0 <= r < h and 0 <= q < wd:
                        dx[:, r, q, :] += dy[:, a, b, :].astype(D) @ w[i, j].astype(D).T
    return dx.astype(dy.dtype)


def np_bn(x, scale, offset, mean=None, var=None, eps=1e-3, axis=3):
    x64 = x.astype(D)
    axes = tuple(i for i in range(4) if i != axis)
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    if mean is None:
        mean = x64.mean(axis=axes)
        var = x64.var(axis=axes)
    inv = 1 / np.sqrt(var.astype(D) + eps)
    y = (x64 - mean.reshape(shape)) * (inv * scale).reshape(shape) + offset.reshape(shape)
    return y.astype(x.dtype)


def _t(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


x4 = rng.standard_normal((2, 6, 5, 3)).astype(F)
x4c = _t(x4)
w3 = rng.standard_normal((3, 2, 3, 4)).astype(F)
wd = rng.standard_normal((3, 3, 3, 2)).astype(F)
pw = rng.standard_normal((1, 1, 6, 4)).astype(F)
xi = rng.integers(-50, 50, (1, 5, 5, 2)).astype(np.int32)
xh = rng.standard_normal((1, 5, 4, 2)).astype(np.float16)
wh = rng.standard_normal((2, 2, 2, 3)).astype(np.float16)
dy_t = rng.standard_normal((2, 3, 3, 4)).astype(F)
wt = rng.standard_normal((3, 3, 5, 4)).astype(F)
sc = rng.uniform(0.5, 1.5, 3).astype(F)
of = rng.standard_normal(3).astype(F)
mu = rng.standard_normal(3).astype(F)
va = rng.uniform(0.5, 2, 3).astype(F)
# Distinct values far apart, so max pooling has no near-ties for finite differences.
distinct = (rng.permutation(2 * 6 * 5 * 3).reshape(2, 6, 5, 3) / 9.0).astype(D)


def np_grouped_conv(x, w, strides, padding):
    """Grouped convolution read literally: each group of input channels meets its own slice
    of the filters."""
    groups = x.shape[3] // w.shape[2]
    cg, ocg = w.shape[2], w.shape[3] // groups
    parts = [
        np_conv(x[..., k * cg : (k + 1) * cg], w[..., k * ocg : (k + 1) * ocg], strides, padding)
        for k in range(groups)
    ]
    return np.concatenate(parts, axis=3)


_grouped_rng = np.random.default_rng(12)
x6 = _grouped_rng.standard_normal((2, 5, 4, 6)).astype(F)  # 3 groups of 2 input channels
w_grouped = _grouped_rng.standard_normal((2, 3, 2, 6)).astype(F)


def conv(strides, padding, fmt="NHWC", dil=(1, 1, 1, 1)):
    return lambda x, w: tf.nn.conv2d(x, w, strides, padding, data_format=fmt, dilations=dil)


CASES = [
    Case("conv_grouped", conv([1, 2, 1, 1], "SAME"), [x6, w_grouped],
         lambda x, w: np_grouped_conv(x, w, (2, 1), "SAME"), [2, 3, 4, 6],
         rtol=1e-5, atol=1e-5),
    Case("conv_same", conv([1, 1, 1, 1], "SAME"), [x4, w3],
         lambda x, w: np_conv(x, w, (1, 1), "SAME"), [2, 6, 5, 4], rtol=1e-5, atol=1e-5),
    Case("conv_valid_s2", conv(2, "VALID"), [x4, w3],
         lambda x, w: np_conv(x, w, (2, 2), "VALID"), [2, 2, 2, 4], rtol=1e-5, atol=1e-5),
    Case("conv_same_s2x3", conv([2, 3], "SAME"), [x4, w3],
         lambda x, w: np_conv(x, w, (2, 3), "SAME"), [2, 3, 2, 4], rtol=1e-5, atol=1e-5),
    Case("conv_dilated", conv(1, "SAME", dil=[1, 2, 1, 1]), [x4, w3],
         lambda x, w: np_conv(x, w, (1, 1), "SAME", (2, 1)), [2, 6, 5, 4], rtol=1e-5, atol=1e-5),
    Case("conv_explicit", conv(1, [[0, 0], [2, 1], [0, 1], [0, 0]]), [x4, w3],
         lambda x, w: np_conv(x, w, (1, 1), [(2, 1), (0, 1)]), [2, 7, 5, 4],
         rtol=1e-5, atol=1e-5),
    Case("conv_nchw", conv([1, 1, 2, 1], "SAME", "NCHW"), [x4c, w3],
         lambda x, w: _t(np_conv(x.transpose(0, 2, 3, 1), w, (2, 1), "SAME")), [2, 4, 3, 5],
         rtol=1e-5, atol=1e-5),
    Case("conv_half", conv(1, "VALID"), [xh, wh],
         lambda x, w: np_conv(x, w, (1, 1), "VALID"), [1, 4, 3, 3], rtol=1e-2, atol=1e-2),
    Case("conv_empty_batch", conv(1, "SAME"), [x4[:0], w3],
         lambda x, w: np.zeros((0, 6, 5, 4), F), [0, 6, 5, 4]),
    Case("conv1d", lambda x, w: tf.nn.conv1d(x, w, 2, "SAME"), [x4[:, 0], w3[0]],
         lambda x, w: np_conv(x[:, None], w[None], (1, 2), "SAME")[:, 0], [2, 3, 4],
         rtol=1e-5, atol=1e-5),
    Case("conv2d_transpose",
         lambda y, w, s: tf.nn.conv2d_transpose(y, w, s, [1, 2, 2, 1], "SAME"),
         [dy_t, wt, np.array([2, 6, 5, 5], np.int32)],
         lambda y, w, s: np_conv_transpose(y, w, tuple(s), (2, 2), "SAME"), [2, 6, 5, 5],
         rtol=1e-5, atol=1e-5, const_inputs=(2,)),
    Case("conv2d_transpose_fed_shape",
         lambda y, w, s: tf.nn.conv2d_transpose(y, w, s, [1, 2, 2, 1], "VALID"),
         [dy_t, wt, np.array([2, 7, 7, 5], np.int32)],
         lambda y, w, s: np_conv_transpose(y, w, tuple(s), (2, 2), "VALID"),
         rtol=1e-5, atol=1e-5),
    Case("conv_backprop_filter",
         lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 2, 3, 4], dy, [1, 2, 2, 1], "SAME"),
         [x4, rng.standard_normal((2, 3, 3, 4)).astype(F)],
         lambda x, dy: _backprop_filter_ref(x, dy, (3, 2, 3, 4)), [3, 2, 3, 4],
         rtol=1e-5, atol=1e-5),
    Case("depthwise_same", lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"),
         [x4, wd], lambda x, w: np_depthwise(x, w, (1, 1), "SAME"), [2, 6, 5, 6],
         rtol=1e-5, atol=1e-5),
    Case("depthwise_rate2",
         lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 1]),
         [x4, wd], lambda x, w: np_depthwise(x, w, (1, 1), "VALID", (2, 1)), [2, 2, 3, 6],
         rtol=1e-5, atol=1e-5),
    Case("depthwise_nchw_s2",
         lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 2, 2], "SAME", data_format="NCHW"),
         [x4c, wd], lambda x, w: _t(np_depthwise(x.transpose(0, 2, 3, 1), w, (2, 2), "SAME")),
         [2, 6, 3, 3], rtol=1e-5, atol=1e-5),
    Case("separable",
         lambda x, w, p: tf.nn.separable_conv2d(x, w, p, [1, 1, 1, 1], "SAME"),
         [x4, wd, pw],
         lambda x, w, p: np_conv(np_depthwise(x, w, (1, 1), "SAME"), p, (1, 1), "VALID"),
         [2, 6, 5, 4], rtol=1e-5, atol=1e-5),
    Case("max_pool_same", lambda x: tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
         [x4], lambda x: np_pool(x, (3, 3), (2, 2), "SAME", "max"), [2, 3, 3, 3]),
    Case("max_pool_valid", lambda x: tf.nn.max_pool(x, 2, 2, "VALID"),
         [x4], lambda x: np_pool(x, (2, 2), (2, 2), "VALID", "max"), [2, 3, 2, 3]),
    Case("max_pool_int32", lambda x: tf.nn.max_pool(x, 3, 2, "SAME"),
         [xi], lambda x: np_pool(x, (3, 3), (2, 2), "SAME", "max"), [1, 3, 3, 2]),
    Case("max_pool_nchw",
         lambda x: tf.nn.max_pool(x, [1, 1, 3, 2], [1, 1, 1, 2], "SAME", data_format="NCHW"),
         [x4c], lambda x: _t(np_pool(x.transpose(0, 2, 3, 1), (3, 2), (1, 2), "SAME", "max")),
         [2, 3, 6, 3]),
    Case("avg_pool_same", lambda x: tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
         [x4], lambda x: np_pool(x, (3, 3), (2, 2), "SAME", "avg"), [2, 3, 3, 3],
         rtol=1e-5, atol=1e-6),
    Case("avg_pool_valid_nchw",
         lambda x: tf.nn.avg_pool(x, [1, 1, 2, 2], [1, 1, 1, 1], "VALID", data_format="NCHW"),
         [x4c], lambda x: _t(np_pool(x.transpose(0, 2, 3, 1), (2, 2), (1, 1), "VALID", "avg")),
         [2, 3, 5, 4], rtol=1e-5, atol=1e-6),
    Case("avg_pool_half", lambda x: tf.nn.avg_pool(x, 2, 1, "SAME"),
         [xh], lambda x: np_pool(x, (2, 2), (1, 1), "SAME", "avg"), [1, 5, 4, 2],
         rtol=1e-3, atol=1e-3),
    Case("fused_bn_train",
         lambda x, s, o: list(tf.nn.fused_batch_norm(x, s, o, epsilon=1e-3)),
         [x4, sc, of],
         lambda x, s, o: [np_bn(x, s, o), x.astype(D).mean((0, 1, 2)).astype(F),
                          (x.astype(D).var((0, 1, 2)) * 60 / 59).astype(F)],
         [[2, 6, 5, 3], [3], [3]], rtol=1e-5, atol=1e-5),
    Case("fused_bn_infer_nchw",
         lambda x, s, o, m, v: list(tf.nn.fused_batch_norm(
             x, s, o, m, v, epsilon=0.01, is_training=False, data_format="NCHW")),
         [x4c, sc, of, mu, va],
         lambda x, s, o, m, v: [np_bn(x, s, o, m, v, 0.01, axis=1), m, v],
         [[2, 3, 6, 5], [3], [3]], rtol=1e-5, atol=1e-5),
    Case("fused_bn_running_average",
         lambda x, s, o, m, v: list(tf.nn.fused_batch_norm(
             x, s, o, m, v, exponential_avg_factor=0.25))[1:],
         [x4, sc, of, mu, va],
         lambda x, s, o, m, v: [
             (0.75 * m + 0.25 * x.astype(D).mean((0, 1, 2))).astype(F),
             (0.75 * v + 0.25 * x.astype(D).var((0, 1, 2)) * 60 / 59).astype(F)],
         rtol=1e-5, atol=1e-5),
    Case("fused_bn_v1",
         lambda x, s, o, m, v: create("FusedBatchNorm", [x, s, o, m, v], {
             "epsilon": 0.001, "data_format": "NHWC", "is_training": False}).outputs[0],
         [x4, sc, of, mu, va], lambda x, s, o, m, v: np_bn(x, s, o, m, v),
         [2, 6, 5, 3], rtol=1e-5, atol=1e-5),
]  # fmt: skip


def _backprop_filter_ref(x, dy, shape):
    df = np.zeros(shape)
    for a, b, i, j, rows in _taps(x.astype(D), shape[0], shape[1], (2, 2), "SAME"):
        if rows is not None:
            df[i, j] += rows.T @ dy[:, a, b, :].astype(D)
    return df.astype(x.dtype)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_table(case):
    check_case(case)


def _grad_of(forward, wrt: int):
    """``build(*ins, dy)``: the gradient of ``forward(*ins)`` w.r.t. input ``wrt`` for the
    upstream gradient ``dy`` (the last input), so the backprop ops sit in the forward graph."""

    def build(*ins):
        *xs, dy = ins
        return tf.gradients(forward(*xs), xs[wrt], grad_ys=dy)[0]

    return build


def _second_order(forward):
    """``build(x, dy, gx)``: the gradient of (d forward / dx . dy) w.r.t. dy for ``gx``."""

    def build(x, dy, gx):
        dx = tf.gradients(forward(x), x, grad_ys=dy)[0]
        return tf.gradients(dx, dy, grad_ys=gx)[0]

    return build


def _maxpool(x):
    return tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")


def _bn_train(x, s, o):
    return tf.nn.fused_batch_norm(x, s, o)[0]


def _bn_v1(x, s, o, m, v):
    attrs = {"epsilon": 0.01, "data_format": "NCHW", "is_training": False}
    return create("FusedBatchNorm", [x, s, o, m, v], attrs).outputs[0]


x_small = rng.standard_normal((2, 5, 4, 3))
w_small = rng.standard_normal((3, 2, 3, 2))
dy_small = rng.standard_normal((2, 3, 2, 2))
wd_small = rng.standard_normal((2, 2, 3, 2))
_bn_scale = rng.uniform(0.5, 1.5, 3)
_bn_offset = rng.standard_normal(3)
GRAD_CASES = [
    # second order: FusedBatchNormGrad's outputs differentiated (x, scale and dy)
    Case("fused_bn_grad_train_dx", _grad_of(_bn_train, 0),
         [x_small, _bn_scale, _bn_offset, rng.standard_normal(x_small.shape)], None,
         grad_inputs=(0, 1, 3), rtol=1e-4, atol=1e-4),
    Case("fused_bn_grad_train_dscale", _grad_of(_bn_train, 1),
         [x_small, _bn_scale, _bn_offset, rng.standard_normal(x_small.shape)], None,
         grad_inputs=(0, 3), rtol=1e-4, atol=1e-4),
    Case("fused_bn_grad_infer_nchw", _grad_of(_bn_v1, 0),
         [_t(x_small), _bn_scale, _bn_offset, rng.standard_normal(3),
          rng.uniform(0.5, 2, 3), rng.standard_normal(_t(x_small).shape)], None,
         grad_inputs=(0, 1, 5)),
    Case("conv_grouped", conv([1, 2, 1, 1], "SAME"), [x6[:, :3, :3], w_grouped[:, :2]], None,
         grad_inputs=(0, 1)),
    Case("conv_same_s2", conv([1, 2, 2, 1], "SAME"), [x_small, w_small], None,
         grad_inputs=(0, 1)),
    Case("conv_explicit_nchw_dilated",
         conv(1, [[0, 0], [0, 0], [1, 0], [0, 2]], "NCHW", [1, 1, 1, 2]),
         [_t(x_small), w_small], None, grad_inputs=(0, 1)),
    Case("conv2d_transpose",
         lambda y, w: tf.nn.conv2d_transpose(y, w, [2, 5, 4, 3], [1, 2, 2, 1], "SAME"),
         [dy_small, w_small], None, grad_inputs=(0, 1)),
    Case("conv_backprop_filter",
         lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 2, 3, 2], dy, [1, 2, 2, 1], "SAME"),
         [x_small, dy_small], None, grad_inputs=(0, 1)),
    Case("depthwise_s2", lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
         [x_small, wd_small], None, grad_inputs=(0, 1)),
    Case("depthwise_backprop_input",
         _grad_of(lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID"), 0),
         [x_small, wd_small, rng.standard_normal((2, 4, 3, 6))], None, grad_inputs=(1, 2)),
    Case("depthwise_backprop_filter",
         _grad_of(lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID"), 1),
         [x_small, wd_small, rng.standard_normal((2, 4, 3, 6))], None, grad_inputs=(0, 2)),
    Case("max_pool", _maxpool, [distinct], None, grad_inputs=(0,)),
    Case("max_pool_grad", _grad_of(_maxpool, 0), [distinct, rng.standard_normal((2, 3, 3, 3))],
         None, grad_inputs=(1,)),
    Case("max_pool_grad_grad", _second_order(_maxpool),
         [distinct, rng.standard_normal((2, 3, 3, 3)), rng.standard_normal(distinct.shape)],
         None, grad_inputs=(2,)),
    Case("avg_pool_nchw",
         lambda x: tf.nn.avg_pool(x, [1, 1, 3, 2], [1, 1, 2, 1], "SAME", data_format="NCHW"),
         [_t(x_small)], None, grad_inputs=(0,)),
    Case("avg_pool_grad",
         _grad_of(lambda x: tf.nn.avg_pool(x, 2, 1, "VALID"), 0),
         [x_small, rng.standard_normal((2, 4, 3, 3))], None, grad_inputs=(1,)),
    Case("fused_bn_train", _bn_train,
         [x_small, rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)], None,
         grad_inputs=(0, 1, 2)),
    Case("fused_bn_v1_infer", _bn_v1,
         [_t(x_small), rng.uniform(0.5, 1.5, 3), rng.standard_normal(3),
          rng.standard_normal(3), rng.uniform(0.5, 2, 3)], None, grad_inputs=(0, 1, 2)),
]  # fmt: skip


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients(case):
    check_gradient(case)


# -----------------------------------------------------------------------------------------
# Static shapes, names, errors
# -----------------------------------------------------------------------------------------


def test_static_shapes_with_unknown_batch_and_names():
    x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    w = tf.zeros([5, 5, 1, 32])
    y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    p = tf.nn.max_pool(y, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    a = tf.nn.avg_pool(p, 3, 3, "VALID")
    t = tf.nn.conv2d_transpose(p, tf.zeros([3, 3, 8, 32]), [4, 28, 28, 8], 2)
    assert y.shape.as_list() == [None, 28, 28, 32] and y.name == "Conv2D:0"
    assert p.shape.as_list() == [None, 14, 14, 32] and p.name == "MaxPool:0"
    assert a.shape.as_list() == [None, 4, 4, 32] and a.op.type == "AvgPool"
    assert t.shape.as_list() == [4, 28, 28, 8] and t.name == "conv2d_transpose:0"
    d = tf.nn.depthwise_conv2d(x, tf.zeros([3, 3, 1, 4]), [1, 1, 1, 1], "VALID")
    assert d.shape.as_list() == [None, 26, 26, 4] and d.op.name == "depthwise"


def test_build_time_errors():
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    with pytest.raises(ValueError, match="Depth of input"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 2, 4]), 1, "SAME")
    with pytest.raises(ValueError, match="negative"):
        tf.nn.conv2d(x, tf.zeros([5, 5, 3, 4]), 1, "VALID")
    with pytest.raises(ValueError, match="strides in the batch and depth"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 3, 4]), [2, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Padding must be"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 3, 4]), 1, "FULL")
    with pytest.raises(ValueError, match="batch nor depth"):
        tf.nn.max_pool(x, [1, 2, 2, 2], 1, "SAME")
    with pytest.raises(ValueError, match="rank 4"):
        tf.nn.max_pool(tf.zeros([2, 3]), 2, 1, "SAME")
    with pytest.raises(TypeError, match="attr 'T'"):
        tf.nn.conv2d(tf.zeros([1, 4, 4, 1], tf.int32), tf.zeros([1, 1, 1, 1], tf.int32), 1, "SAME")
    with pytest.raises(ValueError, match="mean"):
        tf.nn.fused_batch_norm(x, tf.ones([3]), is_training=False)


def test_run_time_shape_errors_are_invalid_argument():
    x = tf.placeholder(tf.float32, [None, None, None, None])
    y = tf.nn.conv2d(x, tf.zeros([3, 3, 2, 4]), 1, "VALID")
    t = tf.nn.conv2d_transpose(
        tf.placeholder(tf.float32), tf.zeros([3, 3, 2, 4]), [1, 4, 4, 2], 1, "SAME"
    )
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="input depth"):
            sess.run(y, {x: np.zeros((1, 5, 5, 3), F)})
        with pytest.raises(errors.InvalidArgumentError, match="negative"):
            sess.run(y, {x: np.zeros((1, 2, 5, 2), F)})
        with pytest.raises(errors.InvalidArgumentError, match="out_backprop"):
            sess.run(t, {"Placeholder_1:0": np.zeros((1, 3, 3, 4), F)})


def test_max_pool_gradient_goes_to_the_first_maximum_as_in_tensorflow():
    x = tf.constant(np.array([[1.0, 3.0], [3.0, 2.0]], F).reshape(1, 2, 2, 1))
    g = tf.gradients(tf.nn.max_pool(x, 2, 2, "VALID"), x)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(g).reshape(2, 2), [[0, 1], [0, 0]])


def test_conv_kernel_is_one_matmul_per_layer(monkeypatch):
    """Vectorised: the forward conv calls matmul once, whatever the image size."""
    from engine.ops import conv as conv_ops
    from engine.ops import conv_groups

    calls = []
    real = conv_groups.window_matmul

    def counting(xp, a, b, dtype):
        calls.append(a.shape)
        return real(xp, a, b, dtype)

    monkeypatch.setattr(conv_groups, "window_matmul", counting)
    x = rng.standard_normal((4, 16, 16, 3)).astype(F)
    out = conv_ops.conv2d_kernel(
        np, x, w3, strides=[1, 1, 1, 1], padding="SAME", data_format="NHWC",
        dilations=[1, 1, 1, 1], explicit_paddings=[],
    )  # fmt: skip
    assert len(calls) == 1 and calls[0] == (4 * 16 * 16, 3 * 2 * 3)
    np.testing.assert_allclose(out, np_conv(x, w3, (1, 1), "SAME"), rtol=1e-4, atol=1e-4)


def test_grouped_conv_depth_errors():
    # the input depth must be a multiple of the filter depth, the output depth of the groups
    with pytest.raises(ValueError, match="not a multiple of input depth of filter"):
        tf.nn.conv2d(tf.zeros([1, 4, 4, 5]), tf.zeros([3, 3, 2, 4]), 1, "SAME")
    with pytest.raises(ValueError, match="multiple of the number of groups"):
        tf.nn.conv2d(tf.zeros([1, 4, 4, 6]), tf.zeros([3, 3, 2, 4]), 1, "SAME")
    x = tf.placeholder(tf.float32, [1, 4, 4, None])
    y = tf.nn.conv2d(x, tf.zeros([3, 3, 2, 4]), 1, "SAME")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="evenly divisible by number"):
            sess.run(y, {x: np.zeros([1, 4, 4, 6], np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="evenly divisible by filter"):
            sess.run(y, {x: np.zeros([1, 4, 4, 3], np.float32)})


@pytest.mark.parametrize(
    "stride,dilation,padding,multiplier",
    [(1, 1, "SAME", 1), (2, 1, "SAME", 3), (1, 2, "VALID", 2), (2, 1, "VALID", 1)],
)
@pytest.mark.parametrize("width", [10, 70])  # short rows go channels-last, long ones not
def test_depthwise_and_one_channel_groups_agree_across_layouts(
    stride, dilation, padding, multiplier, width
):
    # The tap-by-tap depthwise path runs in the input's layout: NCHW must equal NHWC, and a
    # Conv2D with one input channel per group must equal the depthwise op.
    from engine.ops.conv import conv2d_kernel, depthwise_conv2d_kernel

    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 9, width, 4)).astype(np.float32)
    f = rng.normal(size=(3, 3, 4, multiplier)).astype(np.float32)
    nhwc = dict(strides=[1, stride, stride, 1], dilations=[1, dilation, dilation, 1])
    nchw = dict(strides=[1, 1, stride, stride], dilations=[1, 1, dilation, dilation])
    want = depthwise_conv2d_kernel(np, x, f, padding=padding, **nhwc)
    xc = x.transpose(0, 3, 1, 2)
    got = depthwise_conv2d_kernel(np, xc, f, padding=padding, data_format="NCHW", **nchw)
    np.testing.assert_array_equal(got.transpose(0, 2, 3, 1), want)
    grouped = f.reshape(3, 3, 1, 4 * multiplier)
    for fmt, data, kw in (("NHWC", x, nhwc), ("NCHW", xc, nchw)):
        out = conv2d_kernel(np, data, grouped, padding=padding, data_format=fmt, **kw)
        np.testing.assert_array_equal(out if fmt == "NHWC" else out.transpose(0, 2, 3, 1), want)
    # The per-tap sum itself, against numpy for the VALID cases.
    if padding == "VALID":
        oh, ow = want.shape[1:3]
        ref = sum(
            np.einsum(
                "nhwc,cm->nhwcm",
                x[:, i * dilation :, j * dilation :][
                    :, : (oh - 1) * stride + 1 : stride, : (ow - 1) * stride + 1 : stride
                ],
                f[i, j],
            )
            for i in range(3)
            for j in range(3)
        )
        np.testing.assert_allclose(want, ref.reshape(want.shape), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_pointwise_convolution_in_both_layouts(fmt):
    from engine.ops.conv import conv2d_kernel

    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 5, 6, 7)).astype(np.float32)
    f = rng.normal(size=(1, 1, 7, 3)).astype(np.float32)
    want = np.einsum("nhwc,co->nhwo", x, f[0, 0])
    data = x if fmt == "NHWC" else x.transpose(0, 3, 1, 2)
    out = conv2d_kernel(np, data, f, strides=[1, 1, 1, 1], padding="VALID", data_format=fmt)
    got = out if fmt == "NHWC" else out.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
