"""Convolution, pooling and fused batch norm against values TensorFlow recorded
(``fixtures/make_conv_fixtures.py``): forward outputs and the gradients of every
differentiable input for a fixed upstream gradient, in NHWC and (transposed) NCHW."""

import os

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_conv_fixtures import CASES, transpose_output_shape

FIXTURES = np.load(
    os.path.join(os.path.dirname(__file__), "fixtures", "conv_tf.npz"), allow_pickle=False
)


def _fixture(case_id):
    prefix = f"{case_id}/"
    return {k[len(prefix) :]: FIXTURES[k] for k in FIXTURES.files if k.startswith(prefix)}


def _nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _nhwc(a):
    return a.transpose(0, 2, 3, 1)


def _attrs_for(attrs, fmt):
    out = dict(attrs)
    if fmt == "NCHW":
        for k in ("strides", "ksize", "dilations"):
            if k in out:
                v = out[k]
                out[k] = [v[0], v[3], v[1], v[2]]
        if isinstance(out.get("padding"), list):
            p = out["padding"]
            out["padding"] = [p[0], p[3], p[1], p[2]]
    return out


def _build(case_id, op, attrs, fx, fmt):
    def t(name):
        v = fx[name]
        return tf.constant(_nchw(v) if fmt == "NCHW" and v.ndim == 4 and name == "x" else v)

    a = _attrs_for(attrs, fmt)
    ins = {k: t(k) for k in ("x", "w", "scale", "offset", "mean", "variance") if k in fx}
    extra = {}
    if op in ("conv2d", "grouped_conv2d"):
        y = tf.nn.conv2d(ins["x"], ins["w"], data_format=fmt, **a)
    elif op == "depthwise":
        y = tf.nn.depthwise_conv2d(ins["x"], ins["w"], data_format=fmt, **a)
    elif op == "transpose":
        shape = transpose_output_shape(case_id, fx["x"].shape)
        if fmt == "NCHW":
            shape = [shape[0], shape[3], shape[1], shape[2]]
        y = tf.nn.conv2d_transpose(ins["x"], ins["w"], shape, data_format=fmt, **a)
    elif op == "max_pool":
        y = tf.nn.max_pool(ins["x"], data_format=fmt, **a)
    elif op == "avg_pool":
        y = tf.nn.avg_pool(ins["x"], data_format=fmt, **a)
    elif op == "bn_train":
        y, m, v = tf.nn.fused_batch_norm(
            ins["x"], ins["scale"], ins["offset"], data_format=fmt, **a
        )
        extra = {"batch_mean": m, "batch_variance": v}
    else:
        y, m, v = tf.nn.fused_batch_norm(
            ins["x"],
            ins["scale"],
            ins["offset"],
            ins["mean"],
            ins["variance"],
            is_training=False,
            data_format=fmt,
            **a,
        )
        extra = {"batch_mean": m, "batch_variance": v}
    dy = fx["dy"]
    dy_t = tf.constant(_nchw(dy) if fmt == "NCHW" else dy)
    diff = [k for k in ("x", "w", "scale", "offset") if k in ins]
    if op == "grouped_conv2d":
        diff = []  # TF's CPU has no grouped gradients: test_conv_ops checks them numerically
    grads = tf.gradients(y, [ins[k] for k in diff], grad_ys=dy_t)
    return {"y": y, **{f"grad_{k}": g for k, g in zip(diff, grads)}, **extra}


def test_fixtures_record_their_tensorflow_version():
    assert str(FIXTURES["tf_version"]).startswith("2.")


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("case_id,op,attrs", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow(case_id, op, attrs, fmt):
    fx = _fixture(case_id)
    fetches = _build(case_id, op, attrs, fx, fmt)
    with tf.Session() as sess:
        got = sess.run(fetches)
    for k, v in got.items():
        want = fx[k]
        if fmt == "NCHW" and v.ndim == 4 and k in ("y", "grad_x"):
            v = _nhwc(v)
        assert v.shape == want.shape, f"{case_id} {k}: {v.shape} != {want.shape}"
        assert v.dtype == want.dtype
        np.testing.assert_allclose(v, want, rtol=2e-5, atol=2e-5, err_msg=f"{case_id} {k}")
