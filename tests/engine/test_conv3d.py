"""3-D convolutions and pools: values, gradients, names, static shapes and errors against
TensorFlow's recording (``fixtures/make_conv3d_fixtures.py``); an op table against
tap-by-tap numpy references (constants, unknown dims, unknown rank, the TEST device);
finite-difference gradients (first and second order); the layers."""

import itertools

import numpy as np
import pytest

import engine as tf
from engine.ops import conv3d as conv3d_ops
from engine.ops import conv_groups
from tests.engine.fixtures import make_conv3d_fixtures as fx
from tests.engine.fixtures.oracle import (
    assert_recorded_error,
    assert_recorded_names,
    assert_recorded_scaled,
    load,
    recorded_keys,
    run_graph,
    values_shapes_errors,
)
from tests.engine.optable import Case, check_case, check_gradient
from tests.engine.test_conv_ops import _geom, _grad_of, _second_order

TF = load("conv3d_tf.npz")
D = np.float64
rng = np.random.default_rng(11)

# -----------------------------------------------------------------------------------------
# Against TensorFlow's recording
# -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine_values():
    return run_graph(tf, fx.build)


VALUE_KEYS = [
    k
    for k in recorded_keys(TF, skip=("graph_def",))
    if not k.startswith(("shape_", "error_", "gd_name_"))
]


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_and_gradients_match_tensorflow(engine_values, key):
    # Filter gradients sum hundreds of products: float32 error follows the largest entry.
    tol = {np.dtype(np.float32): 1e-5}
    assert_recorded_scaled(engine_values[key], TF[key], key, rtol=tol, atol=tol)


def test_op_names_match_tensorflow(engine_values):
    assert_recorded_names(engine_values, TF)


def test_tensorflow_graph_def_imports_and_runs():
    """TF's own GraphDef of the cases (its Conv3D, Conv3DBackpropInputV2,
    Conv3DBackpropFilterV2, MaxPool3D(Grad) and AvgPool3D(Grad) nodes) runs to its values."""
    keys = [k[len("gd_name_") :] for k in TF.files if k.startswith("gd_name_")]
    with tf.Graph().as_default() as g:
        tf.import_graph_def(TF["graph_def"].tobytes(), name="")
        types = {op.type for op in g.get_operations()}
        with tf.Session() as sess:
            got = sess.run([str(TF[f"gd_name_{k}"]) for k in keys])
    assert {"MaxPool3DGrad", "AvgPool3DGrad", "Conv3DBackpropFilterV2"} <= types
    assert len(keys) > 20
    tol = {np.dtype(np.float32): 1e-5}
    for key, value in zip(keys, got):
        assert_recorded_scaled(value, TF[key], key, rtol=tol, atol=tol)


def test_static_shapes_with_unknown_dims_match_tensorflow():
    got = values_shapes_errors(tf, fx.static_shapes, {})
    keys = [k for k in TF.files if k.startswith("shape_")]
    assert keys
    for key in keys:
        np.testing.assert_array_equal(got[key], TF[key], err_msg=key)


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, fx.ERRORS[key])


# -----------------------------------------------------------------------------------------
# Op table: tap-by-tap numpy references (NDHWC)
# -----------------------------------------------------------------------------------------


def _windows(size3, k3, strides, padding, dil=(1, 1, 1)):
    """Yields (output index, tap index, input index or None in the padding)."""
    geoms = [_geom(size3[i], k3[i], strides[i], dil[i], padding) for i in range(3)]
    for o in itertools.product(*(range(g[0]) for g in geoms)):
        for t in itertools.product(*(range(k) for k in k3)):
            src = tuple(o[i] * strides[i] + t[i] * dil[i] - geoms[i][1] for i in range(3))
            inside = all(0 <= src[i] < size3[i] for i in range(3))
            yield o, t, (src if inside else None)


def _out3(size3, k3, strides, padding, dil=(1, 1, 1)):
    return tuple(_geom(size3[i], k3[i], strides[i], dil[i], padding)[0] for i in range(3))


def np_conv3d(x, w, strides, padding, dil=(1, 1, 1)):
    n, *size, c = x.shape
    groups = c // w.shape[3]
    cg, ocg = w.shape[3], w.shape[4] // groups
    out = np.zeros((n, *_out3(size, w.shape[:3], strides, padding, dil), w.shape[4]))
    for o, t, src in _windows(size, w.shape[:3], strides, padding, dil):
        if src is None:
            continue
        for gi in range(groups):
            rows = x[(slice(None), *src, slice(gi * cg, (gi + 1) * cg))].astype(D)
            out[(slice(None), *o, slice(gi * ocg, (gi + 1) * ocg))] += rows @ w[t][
                :, gi * ocg : (gi + 1) * ocg
            ].astype(D)
    return out.astype(x.dtype)


def np_conv3d_transpose(dy, w, out_shape, strides, padding):
    """The adjoint of ``np_conv3d`` in its input: each output gradient spread on its taps."""
    dx = np.zeros(out_shape)
    for o, t, src in _windows(out_shape[1:4], w.shape[:3], strides, padding):
        if src is not None:
            dx[(slice(None), *src, slice(None))] += dy[(slice(None), *o)].astype(D) @ w[t].T
    return dx.astype(dy.dtype)


def np_conv3d_filter_grad(x, dy, fshape, strides, padding):
    df = np.zeros(fshape)
    for o, t, src in _windows(x.shape[1:4], fshape[:3], strides, padding):
        if src is not None:
            df[t] += x[(slice(None), *src)].astype(D).T @ dy[(slice(None), *o)]
    return df.astype(x.dtype)


def np_pool3d(x, k3, strides, padding, kind):
    n, *size, c = x.shape
    out3 = _out3(size, k3, strides, padding)
    best = np.full((n, *out3, c), -np.inf)
    total, count = np.zeros((n, *out3, c)), np.zeros(out3)
    for o, _, src in _windows(size, k3, strides, padding):
        if src is not None:
            v = x[(slice(None), *src)].astype(D)
            best[(slice(None), *o)] = np.maximum(best[(slice(None), *o)], v)
            total[(slice(None), *o)] += v
            count[o] += 1
    return (best if kind == "max" else total / count[None, ..., None]).astype(x.dtype)


def _ncdhw(a):
    return np.ascontiguousarray(a.transpose(0, 4, 1, 2, 3))


def _ndhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 4, 1))


F = np.float32
x5 = rng.standard_normal((2, 4, 5, 3, 3)).astype(F)
w5 = rng.standard_normal((2, 3, 2, 3, 4)).astype(F)
w_grouped = rng.standard_normal((2, 2, 2, 1, 6)).astype(F)  # 3 groups of one channel
dy_t = rng.standard_normal((2, 2, 3, 2, 4)).astype(F)
distinct5 = rng.permutation(2 * 4 * 5 * 3 * 3).reshape(2, 4, 5, 3, 3).astype(F)


def conv3d(strides, padding, fmt="NDHWC", dil=(1, 1, 1, 1, 1)):
    return lambda x, w: tf.nn.conv3d(x, w, strides, padding, data_format=fmt, dilations=dil)


CASES = [
    Case("conv3d_same", conv3d(1, "SAME"), [x5, w5],
         lambda x, w: np_conv3d(x, w, (1, 1, 1), "SAME"), rtol=1e-5, atol=1e-5),
    Case("conv3d_valid_s2_dilated", conv3d([1, 1, 2, 1, 1], "VALID", dil=[1, 2, 1, 1, 1]),
         [x5, w5], lambda x, w: np_conv3d(x, w, (1, 2, 1), "VALID", (2, 1, 1)),
         rtol=1e-5, atol=1e-5),
    Case("conv3d_ncdhw", conv3d([1, 1, 2, 2, 1], "SAME", "NCDHW"), [_ncdhw(x5), w5],
         lambda x, w: _ncdhw(np_conv3d(_ndhwc(x), w, (2, 2, 1), "SAME")),
         rtol=1e-5, atol=1e-5),
    Case("conv3d_grouped", conv3d(1, "VALID"), [x5, w_grouped],
         lambda x, w: np_conv3d(x, w, (1, 1, 1), "VALID"), rtol=1e-5, atol=1e-5),
    Case("conv3d_transpose",
         lambda y, w: tf.nn.conv3d_transpose(y, w, [2, 4, 5, 3, 3], [1, 2, 2, 2, 1], "SAME"),
         [dy_t, w5], lambda y, w: np_conv3d_transpose(y, w, (2, 4, 5, 3, 3), (2, 2, 2), "SAME"),
         rtol=1e-5, atol=1e-5),
    Case("conv3d_backprop_filter",
         lambda x, dy: tf.nn.conv3d_backprop_filter_v2(x, [2, 3, 2, 3, 4], dy,
                                                       [1, 2, 2, 2, 1], "SAME"),
         [x5, dy_t], lambda x, dy: np_conv3d_filter_grad(x, dy, (2, 3, 2, 3, 4), (2, 2, 2),
                                                         "SAME"),
         rtol=1e-5, atol=1e-5),
    Case("max_pool3d_same", lambda x: tf.nn.max_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 2, 1, 1],
                                                       "SAME"),
         [x5], lambda x: np_pool3d(x, (2, 3, 2), (2, 2, 1), "SAME", "max")),
    Case("avg_pool3d_same", lambda x: tf.nn.avg_pool3d(x, 3, 2, "SAME"),
         [x5], lambda x: np_pool3d(x, (3, 3, 3), (2, 2, 2), "SAME", "avg")),
    Case("avg_pool3d_ncdhw_valid",
         lambda x: tf.nn.avg_pool3d(x, [1, 1, 2, 2, 2], [1, 1, 1, 2, 1], "VALID",
                                    data_format="NCDHW"),
         [_ncdhw(x5)], lambda x: _ncdhw(np_pool3d(_ndhwc(x), (2, 2, 2), (1, 2, 1), "VALID",
                                                  "avg"))),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_table(case):
    check_case(case)


# -----------------------------------------------------------------------------------------
# Finite-difference gradients
# -----------------------------------------------------------------------------------------

xs = rng.standard_normal((1, 4, 3, 3, 2))
ws = rng.standard_normal((2, 2, 2, 2, 3))
dys = rng.standard_normal((1, 2, 2, 2, 3))
distinct_small = rng.permutation(72).reshape(1, 4, 3, 3, 2).astype(D)


def _maxpool3d(x):
    return tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 1, 2, 1], "SAME")


def _avgpool3d(x):
    return tf.nn.avg_pool3d(x, [1, 3, 2, 2, 1], [1, 2, 2, 1, 1], "SAME")


GRAD_CASES = [
    Case("conv3d_same_s2", conv3d([1, 2, 2, 2, 1], "SAME"), [xs, ws], None,
         grad_inputs=(0, 1)),
    Case("conv3d_ncdhw_dilated", conv3d(1, "VALID", "NCDHW", [1, 1, 2, 1, 1]),
         [_ncdhw(xs), ws], None, grad_inputs=(0, 1)),
    Case("conv3d_grouped", conv3d(1, "SAME"), [xs, ws[:, :, :, :1, :2]], None,
         grad_inputs=(0, 1)),
    Case("conv3d_transpose",
         lambda y, w: tf.nn.conv3d_transpose(y, w, [1, 4, 3, 3, 2], [1, 2, 2, 2, 1], "SAME"),
         [dys, ws], None, grad_inputs=(0, 1)),
    Case("conv3d_backprop_filter",
         lambda x, dy: tf.nn.conv3d_backprop_filter_v2(x, [2, 2, 2, 2, 3], dy,
                                                       [1, 2, 2, 2, 1], "SAME"),
         [xs, dys], None, grad_inputs=(0, 1)),
    Case("max_pool3d", _maxpool3d, [distinct_small], None, grad_inputs=(0,)),
    Case("max_pool3d_grad", _grad_of(_maxpool3d, 0),
         [distinct_small, rng.standard_normal((1, 2, 3, 2, 2))], None, grad_inputs=(1,)),
    Case("max_pool3d_grad_grad", _second_order(_maxpool3d),
         [distinct_small, rng.standard_normal((1, 2, 3, 2, 2)),
          rng.standard_normal(distinct_small.shape)], None, grad_inputs=(2,)),
    Case("avg_pool3d", _avgpool3d, [xs], None, grad_inputs=(0,)),
    Case("avg_pool3d_grad", _grad_of(_avgpool3d, 0),
         [xs, rng.standard_normal((1, 2, 2, 3, 2))], None, grad_inputs=(1,)),
]  # fmt: skip


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients(case):
    check_gradient(case)


# -----------------------------------------------------------------------------------------
# Kernel shape and errors of our own
# -----------------------------------------------------------------------------------------


def test_conv3d_kernel_is_one_matmul(monkeypatch):
    calls = []
    real = conv_groups.window_matmul

    def counting(xp, a, b, dtype):
        calls.append(a.shape)
        return real(xp, a, b, dtype)

    monkeypatch.setattr(conv_groups, "window_matmul", counting)
    out = conv3d_ops.conv3d_kernel(np, x5, w5, strides=[1] * 5, padding="SAME")
    assert calls == [(2 * 4 * 5 * 3, 2 * 3 * 2 * 3)]
    np.testing.assert_allclose(out, np_conv3d(x5, w5, (1, 1, 1), "SAME"), rtol=1e-5, atol=1e-5)


def test_build_time_attr_errors():
    x = tf.placeholder(tf.float32, [None, 4, 4, 4, 3])
    with pytest.raises(ValueError, match="strides in the batch and depth"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 3, 4]), [2, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="batch nor depth"):
        tf.nn.max_pool3d(x, [1, 2, 2, 2, 2], 1, "SAME")
    with pytest.raises(ValueError, match="Padding must be"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 3, 4]), 1, "EXPLICIT")
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.avg_pool3d(x, 2, 2, "SAME", data_format="NHWC")
    with pytest.raises(ValueError, match="length 1, 3 or 5"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 3, 4]), [1, 1], "SAME")
    with pytest.raises(ValueError, match="filter's output channels"):
        tf.nn.conv3d_transpose(
            tf.zeros([1, 2, 2, 2, 4]), tf.zeros([2, 2, 2, 5, 4]), [1, 4, 4, 4, 3], 2, "SAME"
        )


def test_run_time_size_errors_are_invalid_argument():
    sizes = tf.placeholder(tf.int32, [None])
    y = tf.nn.conv3d_transpose(tf.zeros([1, 2, 2, 2, 4]), tf.zeros([2, 2, 2, 3, 4]), sizes, 2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="5 non-negative sizes"):
            sess.run(y, {sizes: [1, 4, 4, 3]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="out_backprop doesn't match"):
            sess.run(y, {sizes: [1, 6, 4, 4, 3]})


# -----------------------------------------------------------------------------------------
# Layers (tf.layers): variables, static shapes and values against the numpy references
# -----------------------------------------------------------------------------------------


def test_conv3d_layers_functional_and_classes():
    x = tf.placeholder(tf.float32, [None, 4, 5, 3, 3])
    y = tf.layers.conv3d(
        x,
        4,
        (2, 3, 2),
        strides=(1, 2, 1),
        padding="same",
        activation=tf.nn.relu,
        bias_initializer=tf.constant_initializer(0.5),
    )
    t = tf.layers.conv3d_transpose(x, 2, 2, strides=2)
    first = tf.layers.conv3d(x, 2, 2, data_format="channels_first")
    p = tf.layers.max_pooling3d(x, 2, 2, padding="same")
    layer = tf.layers.AveragePooling3D(2, 1)
    a = layer(x)
    conv = tf.layers.Conv3D(3, 2, name="shared")
    c1, c2 = conv(x), conv(x * 2.0)
    assert y.shape.as_list() == [None, 4, 3, 3, 4] and y.op.type == "Relu"
    assert t.shape.as_list() == [None, 8, 10, 6, 2]
    assert p.shape.as_list() == [None, 2, 3, 2, 3] and p.op.name == "max_pooling3d/MaxPool3D"
    assert a.shape.as_list() == [None, 3, 4, 2, 3] and a.op.type == "AvgPool3D"
    assert conv.kernel.name == "shared/kernel:0" and conv.kernel.shape.as_list() == [2, 2, 2, 3, 3]
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == sorted(
        f"{s}/{v}"
        for s in ("conv3d", "conv3d_transpose", "conv3d_1", "shared")
        for v in ("kernel", "bias")
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k, kt, kf, kc = sess.run([v for v in tf.global_variables() if v.op.name.endswith("kernel")])
        got = sess.run([y, t, first, p, a, c1, c2], {x: x5})
    np.testing.assert_allclose(
        got[0], np.maximum(np_conv3d(x5, k, (1, 2, 1), "SAME") + 0.5, 0), rtol=1e-5, atol=1e-5
    )
    want_t = np_conv3d_transpose(x5, kt, (2, 8, 10, 6, 2), (2, 2, 2), "VALID")
    np.testing.assert_allclose(got[1], want_t, rtol=1e-5, atol=1e-5)
    want_first = _ncdhw(np_conv3d(_ndhwc(x5), kf, (1, 1, 1), "VALID"))
    np.testing.assert_allclose(got[2], want_first, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[3], np_pool3d(x5, (2, 2, 2), (2, 2, 2), "SAME", "max"))
    np.testing.assert_allclose(
        got[4], np_pool3d(x5, (2, 2, 2), (1, 1, 1), "VALID", "avg"), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(got[6], 2 * got[5], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[5], np_conv3d(x5, kc, (1, 1, 1), "VALID"), rtol=1e-5, atol=1e-5)
