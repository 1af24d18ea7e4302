"""Pooling ops: ``MaxPool``, ``AvgPool`` and their gradients (``MaxPoolGrad``,
``MaxPoolGradGrad``, ``AvgPoolGrad``), on the window geometry and strided views of
``engine.ops.conv``."""

from __future__ import annotations

import numpy as np

from engine.framework.registry import op
from engine.ops import array as array_ops
from engine.ops._common import FLOATS, NUMERIC, create
from engine.ops.conv import (
    POOL_ATTRS,
    _acc_dtype,
    _avg_pool_grad_infer,
    _check_input,
    _check_out_backprop,
    _dims,
    _from_nhwc,
    _hw,
    _invalid,
    _max_pool_grad_infer,
    _nhwc_shape,
    _pad,
    _patches,
    _pool_infer,
    _scatter_taps,
    _shape_of,
    _sizes,
    _to_nhwc,
    _Window,
    _window,
)

# -----------------------------------------------------------------------------------------
# Pooling
# -----------------------------------------------------------------------------------------


def _pool_attrs(o) -> dict:
    return {k: o._attrs[k] for k in ("ksize", "strides", "padding", "data_format")}


def _pool_window(nhwc_shape, attrs):
    kh, kw = _hw(attrs["ksize"], attrs["data_format"])
    return _window(
        nhwc_shape,
        kh,
        kw,
        strides=attrs["strides"],
        dilations=(1, 1, 1, 1),
        padding=attrs["padding"],
        explicit_paddings=(),
        data_format=attrs["data_format"],
    )


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool_grad(o, g):
    return [create("MaxPoolGrad", [o.inputs[0], o.outputs[0], g], _pool_attrs(o), None).outputs[0]]


@op("MaxPool", infer=_pool_infer(NUMERIC), inputs=("input",), grad=_max_pool_grad, attrs=POOL_ATTRS)
def max_pool_kernel(xp, x, *, ksize, strides, padding, data_format="NHWC"):
    attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format)
    fmt = attrs["data_format"]
    _check_input(x, "MaxPool")
    xn = _to_nhwc(x, fmt)
    g = _pool_window(xn.shape, attrs)
    if g.n * g.oh * g.ow * g.c == 0:
        return _from_nhwc(xp, xp.zeros((g.n, g.oh, g.ow, g.c), dtype=x.dtype), fmt)
    # The maximum over the windows, tap by tap over strided views of the padded input (one
    # pass a tap; a reduction over the 6-D window view walks memory in a poor order).
    xpad = _pad(xp, xn, g, _lowest(x.dtype))
    out = xpad[g.view(0, 0)].copy()
    for i in range(g.kh):
        for j in range(g.kw):
            if i or j:
                xp.maximum(out, xpad[g.view(i, j)], out=out)
    return _from_nhwc(xp, out, fmt)


def _argmax_taps(xp, xn, g: _Window):
    """For each output, the tap (row-major in the window) holding the first maximum, as TF's
    CPU kernels pick it."""
    patches = _patches(xp, _pad(xp, xn, g, _lowest(xn.dtype)), g)
    return patches.argmax(axis=3)


@op(
    "MaxPoolGrad",
    infer=_max_pool_grad_infer,
    inputs=("orig_input", "orig_output", "grad"),
    grad=lambda o, g: [
        array_ops.zeros_like(o.inputs[0]),
        array_ops.zeros_like(o.inputs[1]),
        create("MaxPoolGradGrad", list(o.inputs[:2]) + [g], _pool_attrs(o), None).outputs[0],
    ],
    attrs=POOL_ATTRS,
)
def max_pool_grad_kernel(xp, x, y, dy, *, ksize, strides, padding, data_format="NHWC"):
    attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format)
    fmt = attrs["data_format"]
    _check_input(x, "MaxPoolGrad")
    xn, dyn = _to_nhwc(x, fmt), _to_nhwc(dy, fmt)
    g = _pool_window(xn.shape, attrs)
    _check_out_backprop(dyn, g, g.c, "MaxPoolGrad")
    if dyn.size == 0:
        return xp.zeros(x.shape, dtype=dy.dtype)
    arg = _argmax_taps(xp, xn, g)
    zero = dy.dtype.type(0)
    taps = xp.stack([xp.where(arg == k, dyn, zero) for k in range(g.kh * g.kw)], axis=3)
    dx = _scatter_taps(xp, taps, g, _acc_dtype(dy.dtype)).astype(dy.dtype, copy=False)
    return _from_nhwc(xp, xp.ascontiguousarray(dx), fmt)


@op(
    "MaxPoolGradGrad",
    infer=_max_pool_grad_infer,
    inputs=("orig_input", "orig_output", "grad"),
    grad=lambda o, g: [
        array_ops.zeros_like(o.inputs[0]),
        array_ops.zeros_like(o.inputs[1]),
        create("MaxPoolGrad", list(o.inputs[:2]) + [g], _pool_attrs(o), None).outputs[0],
    ],
    attrs=POOL_ATTRS,
)
def max_pool_grad_grad_kernel(xp, x, y, gx, *, ksize, strides, padding, data_format="NHWC"):
    """The gradient ``gx`` (shaped like the input) read at each window's maximum."""
    attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format)
    fmt = attrs["data_format"]
    _check_input(x, "MaxPoolGradGrad")
    xn, gn = _to_nhwc(x, fmt), _to_nhwc(gx, fmt)
    if gn.shape != xn.shape:
        raise _invalid(
            f"MaxPoolGradGrad: grad must have the shape of orig_input: {_dims(gx.shape)} vs "
            f"{_dims(x.shape)}"
        )
    g = _pool_window(xn.shape, attrs)
    if g.n * g.oh * g.ow * g.c == 0:
        return _from_nhwc(xp, xp.zeros((g.n, g.oh, g.ow, g.c), dtype=gx.dtype), fmt)
    arg = _argmax_taps(xp, xn, g)
    values = _patches(xp, _pad(xp, gn, g), g)
    out = xp.take_along_axis(values, arg[:, :, :, None, :], axis=3)[:, :, :, 0, :]
    return _from_nhwc(xp, out, fmt)


def _window_counts(xp, g: _Window):
    """``[1, oh, ow, 1]``: how many input (not padding) positions each window covers."""

    def per_dim(size, k, stride, before, out):
        start = np.arange(out) * stride - before
        return np.clip(start + k, 0, size) - np.clip(start, 0, size)

    rows = per_dim(g.h, g.kh, g.sh, g.pt, g.oh)
    cols = per_dim(g.w, g.kw, g.sw, g.pl, g.ow)
    return xp.asarray((rows[:, None] * cols[None, :])[None, :, :, None])


@op(
    "AvgPool",
    infer=_pool_infer(FLOATS),
    inputs=("value",),
    grad=lambda o, g: [
        create("AvgPoolGrad", [_shape_of(o.inputs[0]), g], _pool_attrs(o), None).outputs[0]
    ],
    attrs=POOL_ATTRS,
)
def avg_pool_kernel(xp, x, *, ksize, strides, padding, data_format="NHWC"):
    attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format)
    fmt = attrs["data_format"]
    _check_input(x, "AvgPool")
    xn = _to_nhwc(x, fmt)
    g = _pool_window(xn.shape, attrs)
    if g.n * g.oh * g.ow * g.c == 0:
        return _from_nhwc(xp, xp.zeros((g.n, g.oh, g.ow, g.c), dtype=x.dtype), fmt)
    acc = _acc_dtype(x.dtype)
    # Summed tap by tap in row-major order over strided views (no copy of the windows).
    xpad = _pad(xp, xn, g)
    sums = xpad[g.view(0, 0)].astype(acc, copy=True)
    for i in range(g.kh):
        for j in range(g.kw):
            if i or j:
                sums += xpad[g.view(i, j)]
    return _from_nhwc(xp, (sums / _window_counts(xp, g).astype(acc)).astype(x.dtype), fmt)


@op(
    "AvgPoolGrad",
    infer=_avg_pool_grad_infer,
    inputs=("orig_input_shape", "grad"),
    grad=lambda o, g: [
        None,
        create("AvgPool", [g], _pool_attrs(o), None).outputs[0],
    ],
    attrs=POOL_ATTRS,
)
def avg_pool_grad_kernel(xp, sizes, dy, *, ksize, strides, padding, data_format="NHWC"):
    attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format)
    fmt = attrs["data_format"]
    shape = _nhwc_shape(_sizes(sizes, "AvgPoolGrad", "orig_input_shape"), fmt)
    _check_input(dy, "AvgPoolGrad")
    dyn = _to_nhwc(dy, fmt)
    g = _pool_window(shape, attrs)
    _check_out_backprop(dyn, g, g.c, "AvgPoolGrad")
    if dyn.size == 0:
        return _from_nhwc(xp, xp.zeros(shape, dtype=dy.dtype), fmt)
    acc = _acc_dtype(dy.dtype)
    share = dyn.astype(acc) / _window_counts(xp, g).astype(acc)
    taps = xp.broadcast_to(share[:, :, :, None, :], (g.n, g.oh, g.ow, g.kh * g.kw, g.c))
    dx = _scatter_taps(xp, taps, g, acc).astype(dy.dtype, copy=False)
    return _from_nhwc(xp, xp.ascontiguousarray(dx), fmt)
