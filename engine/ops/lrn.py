"""Local response normalization (TF1's ``tf.nn.lrn``), the layer of the classic CIFAR-10 and
AlexNet models: each value of a 4-D NHWC input is divided by a power of the sum of squares of
its neighbours along the depth (channel) axis::

    sqr_sum[a, b, c, d] = sum(input[a, b, c, d - depth_radius : d + depth_radius + 1] ** 2)
    output = input / (bias + alpha * sqr_sum) ** beta

``LRNGrad`` is TF's fused gradient kernel, fed the forward op's input and output. TF defines
no gradient for ``LRNGrad`` itself; the engine gives it one (composed from primitive ops) so
second-order gradients work. float16 is computed in float32; float64 is accepted as well
(TF's kernels take half, bfloat16 and float only).
"""

from __future__ import annotations

import numpy as np

from engine import errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, ShapeError, op
from engine.ops import array as array_ops
from engine.ops import array_transform
from engine.ops import math as math_ops
from engine.ops import matmul as matmul_ops
from engine.ops._common import FLOATS, check_dtype, check_same_dtype, create, dims_text

__all__ = ["lrn", "local_response_normalization"]

LRN_ATTRS = (
    Attr("depth_radius", "int", default=5),
    Attr("bias", "float", default=1.0),
    Attr("alpha", "float", default=1.0),
    Attr("beta", "float", default=0.5),
)


def _rank4(o, i: int):
    shape = o._inputs[i]._shape
    if shape.rank not in (None, 4):
        raise ShapeError(f"Shape must be rank 4 but is rank {shape.rank}")
    return shape


def _lrn_infer(o):
    d = check_dtype(o, 0, FLOATS)
    return [(d, _rank4(o, 0))]


def _lrn_grad_infer(o):
    d = check_same_dtype(o)
    check_dtype(o, 0, FLOATS)
    shape = _rank4(o, 0)
    for i in (1, 2):
        try:
            shape = shape.merge_with(_rank4(o, i))
        except ValueError as e:
            raise ShapeError(f"input_grads, input_image and output_image differ: {e}") from None
    return [(d, shape)]


def _check_radius(depth_radius: int) -> None:
    if not 0 <= depth_radius < 2**31:
        # TF's wording: its bounds check covers both ends.
        raise errors.InvalidArgumentError(
            None, None, f"depth_radius = {depth_radius} larger than int max"
        )


def _compute_dtype(x):
    return np.float32 if x.dtype == np.float16 else x.dtype


def _window_sum(xp, v, depth_radius: int):
    """``v`` summed over each depth window ``[d - depth_radius, d + depth_radius]`` (last
    axis), as a sum of shifted slices of the zero-padded array: exact sums, no cancellation."""
    depth = v.shape[-1]
    r = min(depth_radius, max(depth - 1, 0))
    if r == 0:
        return v.copy()
    zeros = xp.zeros(v.shape[:-1] + (r,), dtype=v.dtype)
    padded = xp.concatenate([zeros, v, zeros], axis=-1)
    out = padded[..., :depth].copy()
    for k in range(1, 2 * r + 1):
        out += padded[..., k : k + depth]
    return out


def _norm(xp, x, depth_radius: int, bias: float, alpha: float):
    """``bias + alpha * sqr_sum`` of ``x`` (already in the compute dtype)."""
    return bias + alpha * _window_sum(xp, x * x, depth_radius)


def _lrn_grad(o, g):
    attrs = {a.name: o.get_attr(a.name) for a in LRN_ATTRS}
    return [create("LRNGrad", [g, o.inputs[0], o.outputs[0]], attrs, None).outputs[0]]


@op("LRN", infer=_lrn_infer, inputs=("input",), attrs=LRN_ATTRS, grad=_lrn_grad)
def _lrn_kernel(xp, x, *, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    if x.ndim != 4:
        raise errors.InvalidArgumentError(None, None, "in must be 4-dimensional")
    _check_radius(depth_radius)
    xc = x.astype(_compute_dtype(x), copy=False)
    norm = _norm(xp, xc, depth_radius, bias, alpha)
    return (xc * norm**-beta).astype(x.dtype, copy=False)


def _graph_window(x: Tensor, depth_radius: int):
    """A function summing a tensor shaped like ``x`` over the depth windows, in graph ops
    (a product with a band matrix), for the gradient of ``LRNGrad``."""
    shape = array_ops.shape(x)
    depth = shape[3]
    idx = array_ops.range(depth)
    dist = math_ops.abs(array_ops.expand_dims(idx, 1) - array_ops.expand_dims(idx, 0))
    band = math_ops.cast(math_ops.less_equal(dist, depth_radius), x.dtype.base_dtype)
    rows = array_transform.stack([-1, depth])

    def window(v: Tensor) -> Tensor:
        return array_ops.reshape(matmul_ops.matmul(array_ops.reshape(v, rows), band), shape)

    return window


def _lrn_grad_grad(o, g):
    """Gradients of ``dx = dy * n**-beta + x * window(c * y * dy / n)`` (``c = -2 alpha
    beta``, ``n = bias + alpha * window(x**2)``) for ``dy``, ``x`` and ``y``."""
    dy, x, y = o.inputs
    r, bias = o.get_attr("depth_radius"), o.get_attr("bias")
    alpha, beta = o.get_attr("alpha"), o.get_attr("beta")
    c = -2.0 * alpha * beta
    window = _graph_window(x, r)
    n = bias + alpha * window(x * x)
    p = math_ops.pow(n, -beta)
    w = c * y * dy / n
    gx_window = window(g * x)
    d_dy = g * p + c * y / n * gx_window
    d_y = c * dy / n * gx_window
    d_n = -beta * g * dy * p / n - w / n * gx_window
    d_x = g * window(w) + 2.0 * x * window(alpha * d_n)
    return [d_dy, d_x, d_y]


@op(
    "LRNGrad",
    infer=_lrn_grad_infer,
    inputs=("input_grads", "input_image", "output_image"),
    attrs=LRN_ATTRS,
    grad=_lrn_grad_grad,
)
def _lrn_grad_kernel(xp, dy, x, y, *, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    if not dy.ndim == x.ndim == y.ndim == 4:
        raise errors.InvalidArgumentError(None, None, "inputs must be 4-dimensional")
    if not dy.shape == x.shape == y.shape:
        raise errors.InvalidArgumentError(
            None,
            None,
            "input_grads, input_image, and out_image should have the same shape, got "
            f"{dims_text(dy.shape)}, {dims_text(x.shape)} and {dims_text(y.shape)}",
        )
    _check_radius(depth_radius)
    ct = _compute_dtype(x)
    dyc, xc, yc = (v.astype(ct, copy=False) for v in (dy, x, y))
    norm = _norm(xp, xc, depth_radius, bias, alpha)
    # TF's formula: dx[k] = sum_j dy[j] * ([k == j] n[j]**-beta - 2 alpha beta x[k] y[j] / n[j])
    # over the windows j containing k, reading the forward output y as given.
    scaled = (-2.0 * alpha * beta) * yc * dyc / norm
    dx = dyc * norm**-beta + xc * _window_sum(xp, scaled, depth_radius)
    return dx.astype(x.dtype, copy=False)


def lrn(
    input,  # noqa: A002 - TF's argument name
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    name=None,
) -> Tensor:
    """Local response normalization of a 4-D NHWC float tensor along its depth axis:
    ``input / (bias + alpha * sqr_sum) ** beta`` where ``sqr_sum`` sums the squares of the
    ``2 * depth_radius + 1`` channels around each one.

    >>> norm1 = lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)  # CIFAR-10's layer
    """
    with name_scope(name, "LRN", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        attrs = {
            "depth_radius": int(depth_radius),
            "bias": float(bias),
            "alpha": float(alpha),
            "beta": float(beta),
        }
        return create("LRN", [x], attrs, scope).outputs[0]


local_response_normalization = lrn
