"""Fused batch normalization: ``FusedBatchNorm``/``FusedBatchNormV3`` (training and
inference) and their gradients, NHWC and NCHW."""

from __future__ import annotations

from engine import dtypes, gradients
from engine.framework.registry import ShapeError, op
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import reduction
from engine.ops._common import FLOATS, check_dtype, check_same_dtype, create
from engine.ops.conv import (
    BN_ATTRS,
    BN_GRAD_ATTRS,
    FORMATS,
    _acc_dtype,
    _check_input,
    _dims,
    _from_nhwc,
    _invalid,
    _rank4,
    _to_nhwc,
    channel_axis,
)
from engine.tensor_shape import TensorShape, unknown_shape

# -----------------------------------------------------------------------------------------
# Fused batch normalization
# -----------------------------------------------------------------------------------------

_BN_INPUTS = ("x", "scale", "offset", "mean", "variance")


def _bn_infer(o):
    x = o._inputs[0]
    d = check_dtype(o, 0, FLOATS)
    for i in range(1, 5):
        check_dtype(o, i, frozenset([dtypes.float32, dtypes.float64]) | {d}, "U")
    check_same_dtype(o, (1, 2, 3, 4))
    u = o._inputs[1]._dtype.base_dtype
    fmt = o._attrs["data_format"]
    if fmt not in FORMATS:
        raise ShapeError(f"Invalid data format: {fmt} (expected NHWC or NCHW)")
    dims = _rank4(x, "x")
    c = dims[channel_axis(fmt)]
    training = o._attrs["is_training"]
    for i, name in enumerate(_BN_INPUTS[1:], 1):
        s = o._inputs[i]._shape
        if s.rank is not None and s.rank != 1:
            raise ShapeError(f"Shape must be rank 1 but is rank {s.rank} for {name}")
        n = s.as_tuple()[0] if s.rank else None
        if training and i >= 3 and n == 0:
            continue
        if n is not None and c is not None and n != c:
            raise ShapeError(f"Dimensions must be equal, but are {c} and {n} for {name}")
        if c is None:
            c = n
    vec = TensorShape([c])
    outs = [(d, x._shape if x._shape.rank is not None else unknown_shape(4))]
    outs += [(u, vec)] * 4
    if o._type == "FusedBatchNormV3":
        outs.append((u, unknown_shape(1)))
    return outs


def _bn_grad(o, g, *_):
    x, scale = o.inputs[0], o.inputs[1]
    attrs = {k: o._attrs[k] for k in ("epsilon", "data_format", "is_training")}
    v3 = o.type == "FusedBatchNormV3"
    ins = [g, x, scale, o.outputs[3], o.outputs[4]] + ([o.outputs[5]] if v3 else [])
    grad_type = "FusedBatchNormGradV3" if v3 else "FusedBatchNormGrad"
    dx, dscale, doffset = create(grad_type, ins, attrs, None).outputs[:3]
    return [dx, dscale, doffset, None, None]


def _bn_layout(xp, x, fmt):
    """``x`` as ``[rows, channels]`` in the accumulation dtype."""
    xn = _to_nhwc(x, fmt)
    return xn.reshape(-1, xn.shape[3]).astype(_acc_dtype(x.dtype)), xn.shape


def _bn_check(x, vectors, training):
    _check_input(x, "FusedBatchNorm")
    c = x.shape[3]
    for name, v in vectors:
        if training and name in ("mean", "variance") and v.size == 0:
            continue
        if v.ndim != 1 or v.shape[0] != c:
            raise _invalid(
                f"{name} must have the same number of elements as the channels of x, got "
                f"{v.size} and {c}"
            )


def _fused_batch_norm(xp, x, scale, offset, mean, variance, attrs, v3):
    fmt, eps = attrs["data_format"], float(attrs["epsilon"])
    training = bool(attrs["is_training"])
    factor = float(attrs.get("exponential_avg_factor", 1.0))
    _bn_check(
        _to_nhwc(x, fmt),
        zip(_BN_INPUTS[1:], (scale, offset, mean, variance)),
        training,
    )
    rows, nhwc = _bn_layout(xp, x, fmt)
    u = scale.dtype
    if training:
        n = rows.shape[0]
        batch_mean = rows.mean(axis=0)
        batch_var = ((rows - batch_mean) ** 2).mean(axis=0)
        unbiased = batch_var * (n / max(n - 1, 1))
        if factor != 1.0 and mean.size:
            out_mean = (1 - factor) * mean + factor * batch_mean
            out_var = (1 - factor) * variance + factor * unbiased
        else:
            out_mean, out_var = batch_mean, unbiased
        use_mean, use_var = batch_mean, batch_var
    else:
        use_mean, use_var = mean, variance
        out_mean, out_var = mean.copy(), variance.copy()
    inv = 1.0 / xp.sqrt(use_var.astype(rows.dtype) + eps)
    y = (rows - use_mean.astype(rows.dtype)) * (inv * scale) + offset.astype(rows.dtype)
    y = _from_nhwc(xp, y.reshape(nhwc).astype(x.dtype), fmt)
    outs = [
        y,
        out_mean.astype(u),
        out_var.astype(u),
        xp.array(use_mean, dtype=u),
        xp.array(use_var, dtype=u),
    ]
    if v3:
        outs.append(xp.zeros((0,), dtype=u))
    return tuple(outs)


_BN_OUTPUTS = ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2")


@op("FusedBatchNorm", infer=_bn_infer, inputs=_BN_INPUTS, grad=_bn_grad, attrs=BN_ATTRS)
def fused_batch_norm_kernel(
    xp,
    x,
    scale,
    offset,
    mean,
    variance,
    *,
    epsilon=0.0001,
    data_format="NHWC",
    is_training=True,
    exponential_avg_factor=1.0,
):
    attrs = dict(
        epsilon=epsilon,
        data_format=data_format,
        is_training=is_training,
        exponential_avg_factor=exponential_avg_factor,
    )
    return _fused_batch_norm(xp, x, scale, offset, mean, variance, attrs, v3=False)


@op("FusedBatchNormV3", infer=_bn_infer, inputs=_BN_INPUTS, grad=_bn_grad, attrs=BN_ATTRS)
def fused_batch_norm_v3_kernel(
    xp,
    x,
    scale,
    offset,
    mean,
    variance,
    *,
    epsilon=0.0001,
    data_format="NHWC",
    is_training=True,
    exponential_avg_factor=1.0,
):
    attrs = dict(
        epsilon=epsilon,
        data_format=data_format,
        is_training=is_training,
        exponential_avg_factor=exponential_avg_factor,
    )
    return _fused_batch_norm(xp, x, scale, offset, mean, variance, attrs, v3=True)


def _bn_grad_infer(o):
    d = check_same_dtype(o, (0, 1))
    check_dtype(o, 0, FLOATS)
    u = o._inputs[2]._dtype.base_dtype
    _rank4(o._inputs[1], "x")
    fmt = o._attrs["data_format"]
    c = o._inputs[1]._shape.as_list()[channel_axis(fmt)] if o._inputs[1]._shape.rank else None
    outs = [(d, o._inputs[1]._shape), (u, TensorShape([c])), (u, TensorShape([c]))]
    outs += [(u, TensorShape([0]))] * 2
    return outs


def _composite_bn_grad(dy, x, scale, mean, variance, epsilon, data_format, is_training):
    """The first-order batch-norm gradient written with primitive ops (NHWC inside), so it
    can be differentiated again; in training the batch statistics are recomputed from ``x``
    (they depend on it), as TF's second-order gradient does."""
    u = scale.dtype.base_dtype
    perm = data_format == "NCHW"
    xn = math_ops.cast(array_ops.transpose(x, [0, 2, 3, 1]) if perm else x, u)
    dyn = math_ops.cast(array_ops.transpose(dy, [0, 2, 3, 1]) if perm else dy, u)
    axes = [0, 1, 2]
    if is_training:
        mean = reduction.reduce_mean(xn, axes)
        variance = reduction.reduce_mean(math_ops.square(xn - mean), axes)
    inv = math_ops.rsqrt(variance + epsilon)
    x_hat = (xn - mean) * inv
    doffset = reduction.reduce_sum(dyn, axes)
    dscale = reduction.reduce_sum(dyn * x_hat, axes)
    if is_training:
        n = math_ops.cast(array_ops.size(xn), u) / math_ops.cast(array_ops.size(scale), u)
        dx = (scale * inv / n) * (n * dyn - doffset - x_hat * dscale)
    else:
        dx = dyn * (scale * inv)
    dx = math_ops.cast(array_ops.transpose(dx, [0, 3, 1, 2]) if perm else dx, x.dtype.base_dtype)
    return dx, dscale, doffset


def _bn_grad_grad(o, gdx, gdscale, gdoffset, *_):
    """Second order: the composite first-order gradient differentiated by ``gradients``."""
    dy, x, scale, mean, variance = o.inputs[:5]
    attrs = {k: o._attrs[k] for k in ("epsilon", "data_format", "is_training")}
    outs = _composite_bn_grad(dy, x, scale, mean, variance, **attrs)
    pairs = [(t, g) for t, g in zip(outs, (gdx, gdscale, gdoffset)) if g is not None]
    wrt = [dy, x, scale]
    grads = gradients.gradients([t for t, _ in pairs], wrt, grad_ys=[g for _, g in pairs])
    return grads + [None] * (len(o.inputs) - 3)


def _fused_batch_norm_grad(xp, dy, x, scale, saved_mean, saved_var, attrs):
    fmt, eps = attrs["data_format"], float(attrs["epsilon"])
    _check_input(x, "FusedBatchNormGrad")
    if dy.shape != x.shape:
        raise _invalid(
            f"x and y_backprop must have same shape, but x has shape {_dims(x.shape)} and "
            f"y_backprop has shape {_dims(dy.shape)}"
        )
    rows, nhwc = _bn_layout(xp, x, fmt)
    drows, _ = _bn_layout(xp, dy, fmt)
    u = scale.dtype
    inv = 1.0 / xp.sqrt(saved_var.astype(rows.dtype) + eps)
    x_hat = (rows - saved_mean.astype(rows.dtype)) * inv
    doffset = drows.sum(axis=0)
    dscale = (drows * x_hat).sum(axis=0)
    if attrs["is_training"]:
        n = rows.shape[0]
        dx = (scale * inv / n) * (n * drows - doffset - x_hat * dscale)
    else:
        dx = drows * (scale * inv)
    dx = _from_nhwc(xp, dx.reshape(nhwc).astype(x.dtype), fmt)
    empty = xp.zeros((0,), dtype=u)
    return dx, dscale.astype(u), doffset.astype(u), empty, empty.copy()


@op(
    "FusedBatchNormGrad",
    infer=_bn_grad_infer,
    inputs=("y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2"),
    grad=_bn_grad_grad,
    attrs=BN_GRAD_ATTRS,
)
def fused_batch_norm_grad_kernel(
    xp, dy, x, scale, m, v, *, epsilon=0.0001, data_format="NHWC", is_training=True
):
    attrs = dict(epsilon=epsilon, data_format=data_format, is_training=is_training)
    return _fused_batch_norm_grad(xp, dy, x, scale, m, v, attrs)


@op(
    "FusedBatchNormGradV3",
    infer=_bn_grad_infer,
    inputs=("y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2", "reserve_space_3"),
    grad=_bn_grad_grad,
    attrs=BN_GRAD_ATTRS,
)
def fused_batch_norm_grad_v3_kernel(
    xp, dy, x, scale, m, v, _reserve, *, epsilon=0.0001, data_format="NHWC", is_training=True
):
    attrs = dict(epsilon=epsilon, data_format=data_format, is_training=is_training)
    return _fused_batch_norm_grad(xp, dy, x, scale, m, v, attrs)
