"""The gradient of ``RGBToHSV``, TF's ``_RGBToHSVGrad`` term for term: masks for the largest
and smallest channel, then the partial derivatives of value, saturation and hue (in degrees,
over 360) for each channel, with TF's reciprocal that is 0 where it would divide by 0."""

from __future__ import annotations

from engine.ops import array_transform, math_more
from engine.ops import math as math_ops


def _recip(x):
    return math_more.div_no_nan(math_ops.cast(1.0, x.dtype), x)


def _masks(r, g, b, dtype):
    def f(cond_a, cond_b):
        return math_ops.cast(math_ops.logical_and(cond_a, cond_b), dtype)

    ge, gt, lt, le = (
        math_ops.greater_equal,
        math_ops.greater,
        math_ops.less,
        math_ops.less_equal,
    )
    biggest = (f(ge(r, b), ge(r, g)), f(gt(g, r), ge(g, b)), f(gt(b, r), gt(b, g)))
    smallest = (f(lt(r, b), lt(r, g)), f(le(g, r), lt(g, b)), f(le(b, r), le(b, g)))
    return biggest, smallest


def _ds(x, big_x, small_x, y, big_y, small_y, z, big_z, small_z, dtype):
    """TF's ds/dx for channel x with the other two channels y and z."""
    pos = math_ops.cast(math_ops.greater(x, 0), dtype)
    first = big_x * (small_y * y + small_z * z) * _recip(math_ops.square(x))
    second = small_x * -1 * _recip(big_y * y + big_z * z)
    return pos * (first + second)


def _pos(x, dtype):
    return math_ops.cast(math_ops.greater(x, 0), dtype)


def _hue_terms(r, g, b, big, small, s, v, dtype):
    br, bg, bb = big
    sr, sg, sb = small
    inv_sv = _recip(math_ops.square(s)) * _recip(math_ops.square(v))
    dh_dr = (
        _pos(r, dtype) * br * -1 * (g - b) * inv_sv
        + _pos(g, dtype) * bg * sr * (b - g) * _recip(math_ops.square(r - g))
        + _pos(g, dtype) * bg * sb * -1 * _recip(g - b)
        + _pos(b, dtype) * bb * sr * (b - g) * _recip(math_ops.square(b - r))
        + _pos(b, dtype) * bb * sg * _recip(b - g)
    )
    dh_dg = (
        _pos(g, dtype) * bg * -1 * (b - r) * inv_sv
        + _pos(r, dtype) * br * sg * (r - b) * _recip(math_ops.square(r - g))
        + _pos(r, dtype) * br * sb * _recip(r - b)
        + _pos(b, dtype) * bb * sg * (r - b) * _recip(math_ops.square(b - g))
        + _pos(b, dtype) * bb * sr * -1 * _recip(b - r)
    )
    dh_db = (
        _pos(b, dtype) * bb * -1 * (r - g) * inv_sv
        + _pos(r, dtype) * br * sb * (g - r) * _recip(math_ops.square(r - b))
        + _pos(r, dtype) * br * sg * -1 * _recip(r - g)
        + _pos(g, dtype) * bg * sb * (g - r) * _recip(math_ops.square(g - b))
        + _pos(g, dtype) * bg * sr * _recip(g - r)
    )
    return [60 * d / 360 for d in (dh_dr, dh_dg, dh_db)]


def rgb_to_hsv_grad(op, grad):
    """d(rgb_to_hsv)/d(images) applied to ``grad``, as TF computes it."""
    x, hsv = op.inputs[0], op.outputs[0]
    dtype = x.dtype.base_dtype
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    s, v = hsv[..., 1], hsv[..., 2]
    big, small = _masks(r, g, b, dtype)
    ds = (
        _ds(r, big[0], small[0], g, big[1], small[1], b, big[2], small[2], dtype),
        _ds(g, big[1], small[1], r, big[0], small[0], b, big[2], small[2], dtype),
        _ds(b, big[2], small[2], g, big[1], small[1], r, big[0], small[0], dtype),
    )
    dh = _hue_terms(r, g, b, big, small, s, v, dtype)
    gh, gs, gv = grad[..., 0], grad[..., 1], grad[..., 2]
    channels = [gv * big[i] + gs * ds[i] + gh * dh[i] for i in range(3)]
    return array_transform.stack(channels, axis=-1)
