"""Neural-network ops: activations, softmax, bias_add, top_k, and the composed helpers
``moments``, ``batch_normalization`` and ``dropout`` (TF1's ``tf.nn``; its losses are in
``engine.ops.nn_losses``).
"""

from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing
from engine.ops import math as math_ops
from engine.ops import random as random_ops
from engine.ops._common import (
    FLOATS,
    INDEX,
    NUMERIC,
    binary,
    check_dtype,
    check_same_dtype,
    create,
    dims_text,
    unary,
)
from engine.tensor_shape import TensorShape, as_shape, unknown_shape

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "softplus",
    "softmax",
    "log_softmax",
    "bias_add",
    "top_k",
    "moments",
    "batch_normalization",
    "dropout",
]


# -----------------------------------------------------------------------------------------
# Activations
# -----------------------------------------------------------------------------------------


# Gradients go through fused ``<Op>Grad(dy, y_or_x)`` kernels: one pass over the data instead
# of a chain of elementwise ops. Each fused kernel has its own gradient (second order).


def _float_only(fn):
    def grad(o, *gs):
        if not o.inputs[0].dtype.base_dtype.is_floating:
            return [None] * len(o.inputs)
        return fn(o, *gs)

    return grad


def _grad_op(op_type: str, dy: Tensor, t: Tensor, attrs=None) -> Tensor:
    return create(op_type, [dy, t], attrs or {}, None).outputs[0]


def _zeros(t: Tensor) -> Tensor:
    return array_ops.zeros_like(t)


def _zero(x):
    return x.dtype.type(0)


@op(
    "Relu",
    infer=unary(NUMERIC),
    inputs=("features",),
    grad=_float_only(lambda o, g: [_grad_op("ReluGrad", g, o.outputs[0])]),
)
def _relu(xp, x):
    return xp.maximum(x, 0)


@op(
    "ReluGrad",
    infer=binary(FLOATS),
    inputs=("gradients", "outputs"),
    grad=lambda o, g: [_grad_op("ReluGrad", g, o.inputs[1]), _zeros(o.inputs[1])],
)
def _relu_grad(xp, dy, y):
    # y > 0 exactly where the input was > 0.
    return xp.where(y > 0, dy, _zero(dy))


@op(
    "Relu6",
    infer=unary(NUMERIC),
    inputs=("features",),
    grad=_float_only(lambda o, g: [_grad_op("Relu6Grad", g, o.outputs[0])]),
)
def _relu6(xp, x):
    return xp.minimum(xp.maximum(x, 0), 6)


@op(
    "Relu6Grad",
    infer=binary(FLOATS),
    inputs=("gradients", "outputs"),
    grad=lambda o, g: [_grad_op("Relu6Grad", g, o.inputs[1]), _zeros(o.inputs[1])],
)
def _relu6_grad(xp, dy, y):
    return xp.where((y > 0) & (y < 6), dy, _zero(dy))


def _leaky_relu_grad(o, g):
    return [_grad_op("LeakyReluGrad", g, o.inputs[0], {"alpha": o.get_attr("alpha")})]


@op(
    "LeakyRelu",
    infer=unary(FLOATS),
    inputs=("features",),
    attrs=(Attr("alpha", "float"),),
    grad=_leaky_relu_grad,
)
def _leaky_relu(xp, x, *, alpha):
    return xp.where(x > 0, x, x * x.dtype.type(alpha))


@op(
    "LeakyReluGrad",
    infer=binary(FLOATS),
    inputs=("gradients", "features"),
    attrs=(Attr("alpha", "float"),),
    grad=lambda o, g: [
        _grad_op("LeakyReluGrad", g, o.inputs[1], {"alpha": o.get_attr("alpha")}),
        _zeros(o.inputs[1]),
    ],
)
def _leaky_relu_grad_kernel(xp, dy, x, *, alpha):
    return xp.where(x > 0, dy, dy * dy.dtype.type(alpha))


@op(
    "Elu",
    infer=unary(FLOATS),
    inputs=("features",),
    grad=lambda o, g: [_grad_op("EluGrad", g, o.outputs[0])],
)
def _elu(xp, x):
    # expm1 of min(x, 0) never overflows on the branch that is thrown away.
    return xp.where(x < 0, xp.expm1(xp.minimum(x, 0)), x)


def _elu_grad_grad(o, g):
    dy, y = o.inputs
    negative = math_ops.less(y, array_ops.zeros([], dtype=y.dtype.base_dtype))
    return [
        _grad_op("EluGrad", g, y),
        math_ops.where_v2(negative, math_ops.multiply(g, dy), _zeros(y)),
    ]


@op("EluGrad", infer=binary(FLOATS), inputs=("gradients", "outputs"), grad=_elu_grad_grad)
def _elu_grad(xp, dy, y):
    # d elu / dx = exp(x) = y + 1 where x < 0.
    return xp.where(y < 0, dy * (y + 1), dy)


@op(
    "Softplus",
    infer=unary(FLOATS),
    inputs=("features",),
    grad=lambda o, g: [_grad_op("SoftplusGrad", g, o.inputs[0])],
)
def _softplus(xp, x):
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): finite for every finite x.
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


def _softplus_grad_grad(o, g):
    dy, x = o.inputs
    # d sigmoid(x) / dx = 1 / (e^-x + 2 + e^x), written with sigmoids to stay finite.
    s = math_ops.sigmoid(x)
    return [
        _grad_op("SoftplusGrad", g, x),
        math_ops.multiply(
            math_ops.multiply(g, dy), math_ops.multiply(s, math_ops.subtract(1.0, s))
        ),
    ]


@op(
    "SoftplusGrad", infer=binary(FLOATS), inputs=("gradients", "features"), grad=_softplus_grad_grad
)
def _softplus_grad(xp, dy, x):
    e = xp.exp(-xp.abs(x))  # sigmoid(x) without overflow
    return dy * xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(dy.dtype, copy=False)


def _activation(op_type: str, default_name: str, doc: str):
    def fn(features, name=None):
        with name_scope(name, default_name, [features]) as scope:
            x = convert_to_tensor(features, name="features")
            return create(op_type, [x], {}, scope).outputs[0]

    fn.__name__ = fn.__qualname__ = default_name.lower()
    fn.__doc__ = doc
    return fn


relu = _activation("Relu", "Relu", "Rectified linear: ``max(features, 0)``.")
relu6 = _activation("Relu6", "Relu6", "Rectified linear 6: ``min(max(features, 0), 6)``.")
elu = _activation(
    "Elu", "Elu", "Exponential linear: ``exp(features) - 1`` where negative, else ``features``."
)
softplus = _activation(
    "Softplus", "Softplus", "``log(exp(features) + 1)``, computed stably for large magnitudes."
)


def leaky_relu(features, alpha=0.2, name=None) -> Tensor:
    """``features`` where positive, else ``alpha * features`` (ints are cast to float32)."""
    with name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        x = convert_to_tensor(features, name="features")
        if x.dtype.base_dtype.is_integer:
            x = math_ops.cast(x, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return create("LeakyRelu", [x], {"alpha": float(alpha)}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Softmax
# -----------------------------------------------------------------------------------------


def _softmax_infer(o):
    d = check_dtype(o, 0, FLOATS)
    s = o._inputs[0]._shape
    if s.rank == 0:
        raise ShapeError("Shape must be at least rank 1 but is rank 0")
    return [(d, s)]


def _check_logits(x):
    if x.ndim < 1:
        raise errors.InvalidArgumentError(
            None, None, f"logits must have >= 1 dimension, got {dims_text(x.shape)}"
        )


def _shifted(xp, x):
    """``x - max(x)`` along the last axis, in float32 at least (half is too coarse)."""
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    # Array methods rather than xp.max/xp.sum: same on numpy and cupy, less dispatch.
    return x - x.max(axis=-1, keepdims=True)


@op(
    "Softmax",
    infer=_softmax_infer,
    inputs=("logits",),
    grad=lambda o, g: [_grad_op("SoftmaxGrad", g, o.outputs[0])],
)
def _softmax_kernel(xp, x):
    _check_logits(x)
    if x.size == 0:
        return xp.empty_like(x)
    e = xp.exp(_shifted(xp, x))
    e /= e.sum(axis=-1, keepdims=True)  # e is fresh: divide in place
    return e if e.dtype == x.dtype else e.astype(x.dtype)


@op(
    "LogSoftmax",
    infer=_softmax_infer,
    inputs=("logits",),
    grad=lambda o, g: [_grad_op("LogSoftmaxGrad", g, o.outputs[0])],
)
def _log_softmax_kernel(xp, x):
    _check_logits(x)
    if x.size == 0:
        return xp.empty_like(x)
    s = _shifted(xp, x)
    s -= xp.log(xp.exp(s).sum(axis=-1, keepdims=True))  # s is fresh: subtract in place
    return s if s.dtype == x.dtype else s.astype(x.dtype)


def _row_sum(t: Tensor) -> Tensor:
    return reduction.reduce_sum(t, -1, keepdims=True)


def _softmax_grad_grad(o, g):
    # out = (dy - s) * y with s = sum(dy * y): d/d dy = (g - sum(g * y)) * y and
    # d/dy = g * (dy - s) - dy * sum(g * y).
    dy, y = o.inputs
    s = _row_sum(math_ops.multiply(dy, y))
    gy = _row_sum(math_ops.multiply(g, y))
    return [
        _grad_op("SoftmaxGrad", g, y),
        math_ops.subtract(
            math_ops.multiply(g, math_ops.subtract(dy, s)), math_ops.multiply(dy, gy)
        ),
    ]


@op("SoftmaxGrad", infer=binary(FLOATS), inputs=("gradients", "softmax"), grad=_softmax_grad_grad)
def _softmax_grad(xp, dy, y):
    acc = np.float32 if dy.dtype == np.float16 else dy.dtype
    s = xp.sum(dy * y, axis=-1, keepdims=True, dtype=acc)
    return ((dy - s) * y).astype(dy.dtype, copy=False)


def _log_softmax_grad_grad(o, g):
    # out = dy - sum(dy) * exp(y): d/d dy = g - sum(g * exp(y)); d/dy = -sum(dy) * exp(y) * g.
    dy, y = o.inputs
    p = math_ops.exp(y)
    return [
        math_ops.subtract(g, _row_sum(math_ops.multiply(g, p))),
        math_ops.negative(math_ops.multiply(math_ops.multiply(_row_sum(dy), p), g)),
    ]


@op(
    "LogSoftmaxGrad",
    infer=binary(FLOATS),
    inputs=("gradients", "log_softmax"),
    grad=_log_softmax_grad_grad,
)
def _log_softmax_grad(xp, dy, y):
    acc = np.float32 if dy.dtype == np.float16 else dy.dtype
    s = xp.sum(dy, axis=-1, keepdims=True, dtype=acc)
    return (dy - s * xp.exp(y)).astype(dy.dtype, copy=False)


def _axis_lookup(axis, dim):
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'dim' and 'axis'.")
        axis = dim
    return -1 if axis is None else axis


def _softmax_along(op_type, logits, axis, name, compose):
    """The op on the last axis, or a composition of reductions along another axis."""
    with name_scope(name, op_type, [logits]) as scope:
        x = convert_to_tensor(logits, name="logits")
        ndims = x.shape.rank
        axis_val = axis
        if isinstance(axis, Tensor):
            axis_val = constant_value(axis)
            axis_val = None if axis_val is None else int(axis_val)
        if axis_val == -1 or (ndims is not None and axis_val == ndims - 1):
            return create(op_type, [x], {}, scope).outputs[0]
        if ndims is not None and axis_val is not None and not -ndims <= axis_val < ndims:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"`dim` must be in the range [{-ndims}, {ndims}) where {ndims} is "
                f"the number of dimensions in the input. Received: dim={axis_val}",
            )
        if x.dtype.base_dtype not in FLOATS:
            allowed = ", ".join(sorted(d.name for d in FLOATS))
            raise TypeError(
                f"Value for attr 'T' of {x.dtype.base_dtype.name} is not in the "
                f"list of allowed values: {allowed}\n\t; Op<name={op_type}> "
                f"(input 'logits' of op '{scope[:-1]}')"
            )
        return compose(x, axis if axis_val is None else axis_val, scope)


def _compose_softmax(x, axis, scope):
    shifted = x - reduction.reduce_max(x, axis, keepdims=True)
    e = math_ops.exp(shifted)
    return math_ops.truediv(e, reduction.reduce_sum(e, axis, keepdims=True), name=scope)


def _compose_log_softmax(x, axis, scope):
    shifted = x - reduction.reduce_max(x, axis, keepdims=True)
    total = reduction.reduce_sum(math_ops.exp(shifted), axis, keepdims=True)
    return math_ops.subtract(shifted, math_ops.log(total), name=scope)


def softmax(logits, axis=None, name=None, dim=None) -> Tensor:
    """``exp(logits) / reduce_sum(exp(logits), axis)``, stable for large logits.

    >>> softmax(constant([1000.0, 0.0]))  # [1., 0.], no overflow
    """
    return _softmax_along("Softmax", logits, _axis_lookup(axis, dim), name, _compose_softmax)


def log_softmax(logits, axis=None, name=None, dim=None) -> Tensor:
    """``logits - log(reduce_sum(exp(logits), axis))``, stable for large logits."""
    return _softmax_along("LogSoftmax", logits, _axis_lookup(axis, dim), name, _compose_log_softmax)


# -----------------------------------------------------------------------------------------
# BiasAdd
# -----------------------------------------------------------------------------------------


def _bias_add_infer(o):
    value, bias = o._inputs
    d = check_same_dtype(o)
    check_dtype(o, 0, NUMERIC)
    nchw = o._attrs["data_format"] == "NCHW"
    vs, bs = value._shape, bias._shape
    if bs.rank is not None and bs.rank != 1:
        raise ShapeError(f"Shape must be rank 1 but is rank {bs.rank}")
    if vs.rank is None:
        return [(d, vs)]
    min_rank = 3 if nchw else 2
    if vs.rank < min_rank:
        raise ShapeError(f"Shape must be at least rank {min_rank} but is rank {vs.rank}")
    dims = vs.as_list()
    c = 1 if nchw else -1
    b = bs.as_tuple()[0] if bs.rank is not None else None
    if dims[c] is not None and b is not None and dims[c] != b:
        raise ShapeError(f"Dimensions must be equal, but are {dims[c]} and {b}")
    if dims[c] is None:
        dims[c] = b
    return [(d, TensorShape(dims))]


def _channel_axis(data_format: str, ndim: int) -> int:
    return 1 if data_format == "NCHW" and ndim >= 3 else ndim - 1


def _bias_add_grad(o, g):
    fmt = o.get_attr("data_format")
    return [g, create("BiasAddGrad", [g], {"data_format": fmt}, None).outputs[0]]


@op(
    "BiasAdd",
    infer=_bias_add_infer,
    inputs=("value", "bias"),
    attrs=(Attr("data_format", "string"),),
    grad=_float_only(_bias_add_grad),
)
def _bias_add_kernel(xp, x, b, *, data_format):
    if x.ndim < 2:
        raise errors.InvalidArgumentError(
            None, None, f"Input tensor must be at least 2D: {dims_text(x.shape)}"
        )
    if b.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"Biases must be 1D: {dims_text(b.shape)}")
    channel = _channel_axis(data_format, x.ndim)
    if x.shape[channel] != b.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Must provide as many biases as the last dimension of the input "
            f"tensor: {dims_text(b.shape)} vs. {dims_text(x.shape)}",
        )
    if channel != x.ndim - 1:
        b = b.reshape(b.shape + (1,) * (x.ndim - 2))
    return xp.add(x, b)


def _bias_add_grad_infer(o):
    d = check_dtype(o, 0, NUMERIC)
    s = o._inputs[0]._shape
    if s.rank is None:
        return [(d, unknown_shape(1))]
    nchw = o._attrs["data_format"] == "NCHW"
    if s.rank < (3 if nchw else 2):
        raise ShapeError(f"Shape must be at least rank {3 if nchw else 2} but is rank {s.rank}")
    return [(d, TensorShape([s.as_tuple()[1 if nchw else -1]]))]


def _bias_add_grad_grad(o, g):
    # Broadcasting g back along the channel axis is a BiasAdd onto zeros.
    dy = o.inputs[0]
    return [
        create(
            "BiasAdd", [_zeros(dy), g], {"data_format": o.get_attr("data_format")}, None
        ).outputs[0]
    ]


@op(
    "BiasAddGrad",
    infer=_bias_add_grad_infer,
    inputs=("out_backprop",),
    attrs=(Attr("data_format", "string"),),
    grad=_bias_add_grad_grad,
)
def _bias_add_grad_kernel(xp, dy, *, data_format):
    """The sum of ``dy`` over every axis but the channel axis."""
    channel = _channel_axis(data_format, dy.ndim)
    axes = tuple(i for i in range(dy.ndim) if i != channel)
    acc = np.float32 if dy.dtype == np.float16 else dy.dtype
    return xp.asarray(xp.sum(dy, axis=axes, dtype=acc)).astype(dy.dtype, copy=False)


def bias_add(value, bias, data_format=None, name=None) -> Tensor:
    """Adds the 1-D ``bias`` along the channel axis of ``value`` (last for N...C, 1 for NC...)."""
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        if data_format is not None:
            if data_format.startswith("NC"):
                data_format = "NCHW"
            elif data_format.startswith("N") and data_format.endswith("C"):
                data_format = "NHWC"
            else:
                raise ValueError(
                    "`data_format` must be of the form `N...C` or `NC...`. "
                    f"Received: data_format={data_format}"
                )
        x = convert_to_tensor(value, name="input")
        b = convert_to_tensor(bias, dtype=x.dtype.base_dtype, name="bias")
        return create("BiasAdd", [x, b], {"data_format": data_format or "NHWC"}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# TopK
# -----------------------------------------------------------------------------------------


def _top_k_infer(o):
    x, k = o._inputs
    d = check_dtype(o, 0, NUMERIC)
    check_dtype(o, 1, frozenset([dtypes.int32]), "Tk")
    if k._shape.rank not in (None, 0):
        raise ShapeError(f"Input must be scalar but has rank {k._shape.rank}")
    kv = constant_value(k)
    kv = None if kv is None else int(kv)
    if kv is not None and kv < 0:
        raise ShapeError(
            f"Dimension size, given by scalar input 1, must be non-negative but is {kv}"
        )
    s = x._shape
    if s.rank is None:
        out = unknown_shape()
    else:
        if s.rank == 0:
            raise ShapeError("Shape must be at least rank 1 but is rank 0")
        last = s.as_tuple()[-1]
        if kv is not None and last is not None and last < kv:
            raise ShapeError(f"input must have last dimension >= k = {kv} but is {last}")
        out = TensorShape(s.as_list()[:-1] + [kv])
    return [(d, out), (dtypes.int32, out)]


def _top_k_grad(o, g, _):
    """The values' gradient scattered back to the input positions the indices name."""
    x = o.inputs[0]
    shape = x.shape.as_list() if x.shape.is_fully_defined() else array_ops.shape(x)
    shape = convert_to_tensor(shape, dtype=dtypes.int32)
    return [create("TopKV2Grad", [g, o.outputs[1], shape], {}, None).outputs[0], None]


@op(
    "TopKV2",
    infer=_top_k_infer,
    inputs=("input", "k"),
    attrs=(Attr("sorted", "bool"),),
    grad=_float_only(_top_k_grad),
    flags=OpFlags(host_inputs=(1,)),
)
def _top_k_kernel(xp, x, k, *, sorted):  # noqa: A002 - TF's attr name
    k = int(k)
    if x.ndim < 1:
        raise errors.InvalidArgumentError(
            None, None, f"input must be >= 1-D, got shape {dims_text(x.shape)}"
        )
    if k < 0:
        raise errors.InvalidArgumentError(None, None, f"Need k >= 0, got {k}")
    n = x.shape[-1]
    if n < k:
        raise errors.InvalidArgumentError(
            None, None, f"input must have at least k columns. Had {n}, needed {k}"
        )
    # A stable ascending sort of the reversed row, read backwards, is a descending sort that
    # puts equal values in increasing index order (TF's tie-breaking).
    order = xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = (n - 1 - order).astype(np.int32)
    return xp.take_along_axis(x, indices, axis=-1), indices


def _top_k_grad_infer(o):
    dy, indices, shape = o._inputs
    d = check_dtype(o, 0, NUMERIC)
    check_dtype(o, 1, frozenset([dtypes.int32]), "Tindices")
    check_dtype(o, 2, INDEX, "Tshape")
    return [(d, constant_value_as_shape(shape))]


def _gather_last_axis(params: Tensor, indices: Tensor) -> Tensor:
    """``params[..., indices]`` row by row (``take_along_axis`` on the last axis), composed
    from a flat gather as TF's TopK gradient composes its scatter."""
    shape_p = array_ops.shape(params)
    n = shape_p[-1]
    flat_ind = array_ops.reshape(indices, array_transform.stack([-1, array_ops.shape(indices)[-1]]))
    rows = array_ops.shape(flat_ind)[0]
    offsets = array_ops.reshape(array_ops.range(0, rows * n, n), [-1, 1])
    taken = slicing.gather(
        array_ops.reshape(params, [-1]), array_ops.reshape(flat_ind + offsets, [-1])
    )
    return array_ops.reshape(taken, array_ops.shape(indices))


@op(
    "TopKV2Grad",
    infer=_top_k_grad_infer,
    inputs=("values_grad", "indices", "input_shape"),
    grad=lambda o, g: [_gather_last_axis(g, o.inputs[1]), None, None],
    flags=OpFlags(host_inputs=(2,)),
)
def _top_k_grad_kernel(xp, dy, indices, shape):
    out = xp.zeros(tuple(int(d) for d in shape.tolist()), dtype=dy.dtype)
    n, k = out.shape[-1], indices.shape[-1]
    if out.size and k:
        # Indices within a row are distinct, so a plain assignment scatters exactly.
        rows = xp.arange(out.size // n).reshape(-1, 1)
        out.reshape(-1, n)[rows, indices.reshape(-1, k)] = dy.reshape(-1, k)
    return out


TopKV2 = namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, name=None) -> TopKV2:  # noqa: A002 - TF's argument names
    """The ``k`` largest entries of the last axis and their int32 indices, largest first.

    Equal values are ordered by index, as in TF.

    >>> values, indices = top_k(constant([1, 3, 3, 2]), k=2)  # [3, 3], [1, 2]
    """
    with name_scope(name, "TopKV2", [input, k]) as scope:
        x = convert_to_tensor(input, name="input")
        kt = convert_to_tensor(k, dtype_hint=dtypes.int32, name="k")
        o = create("TopKV2", [x, kt], {"sorted": bool(sorted)}, scope)
        return TopKV2(*o.outputs)


# -----------------------------------------------------------------------------------------
# Composed: moments, batch_normalization, dropout
# -----------------------------------------------------------------------------------------


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None) -> tuple[Tensor, Tensor]:
    """The mean and (population) variance of ``x`` over ``axes``.

    ``keepdims`` keeps the reduced axes with size 1, ready to broadcast against ``x``.
    """
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    keep = bool(keep_dims if keep_dims is not None else keepdims)
    with name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x, name="x")
        half = x.dtype.base_dtype is dtypes.float16
        # float16 has too little range for the sums: compute in float32.
        y = math_ops.cast(x, dtypes.float32) if half else x
        axes = list(axes) if isinstance(axes, (list, tuple)) else axes
        mean = reduction.reduce_mean(y, axes, keepdims=True, name="mean")
        sq = math_ops.squared_difference(y, array_ops.stop_gradient(mean))
        variance = reduction.reduce_mean(sq, axes, keepdims=True, name="variance")
        if not keep:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if half:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None) -> Tensor:
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``, composed as in TF.

    ``offset`` and ``scale`` may be None.
    """
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x, name="x")
        variance = convert_to_tensor(variance, dtype_hint=x.dtype.base_dtype)
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        shift = offset - mean * inv if offset is not None else -mean * inv
        return x * math_ops.cast(inv, x.dtype) + math_ops.cast(shift, x.dtype)


def _noise_shape(x, noise_shape):
    if noise_shape is None:
        return array_ops.shape(x)
    try:
        given = as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    dims = x.shape.as_tuple()
    if dims is not None and given.rank == len(dims):
        merged = [d if n is None and d is not None else n for d, n in zip(dims, given.as_tuple())]
        return merged if None not in merged else noise_shape
    return noise_shape


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None) -> Tensor:
    """Zeroes each element with probability ``rate`` (= 1 - keep_prob) and scales the rest by
    ``1 / keep_prob``; ``keep_prob``/``rate`` may be tensors (e.g. a placeholder).

    >>> y = dropout(x, keep_prob=0.8)  # kept values are x / 0.8
    """
    if keep_prob is not None:
        try:
            from_keep = 1.0 - keep_prob
        except TypeError:
            raise ValueError(
                "`keep_prob` must be a floating point number or Tensor. "
                f"Received: keep_prob={keep_prob}"
            ) from None
        if rate is not None:
            raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
        rate = from_keep
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    return _dropout(x, rate, noise_shape, seed, name)


def _dropout(x, rate, noise_shape, seed, name):
    with name_scope(name, "dropout", [x]):
        is_number = isinstance(rate, numbers.Real) and not isinstance(rate, Tensor)
        if is_number and (rate < 0 or rate >= 1):
            raise ValueError(
                "`rate` must be a scalar tensor or a float in the range [0, 1). "
                f"Received: rate={rate}"
            )
        x = convert_to_tensor(x, name="x")
        x_dtype = x.dtype.base_dtype
        if not x_dtype.is_floating:
            raise ValueError(
                "`x.dtype` must be a floating point tensor as `x` will be scaled. "
                f"Received: x_dtype={x_dtype}"
            )
        if is_number and rate == 0:
            return x
        if is_number:
            scaled = math_ops.multiply(
                x, constant(1 / (1 - rate), dtype=x_dtype, name="Const"), name="Mul"
            )
        else:
            rate = convert_to_tensor(rate, name="rate")
            if rate.shape.rank not in (None, 0):
                raise ValueError(f"Shape {rate.shape} must have rank 0")
            if rate.dtype.base_dtype is not x_dtype:
                if not rate.dtype.base_dtype.is_floating:
                    raise ValueError(
                        "`x.dtype` must be compatible with `rate.dtype`. Received: "
                        f"x.dtype={x_dtype} and rate.dtype={rate.dtype}"
                    )
                rate = math_ops.cast(rate, x_dtype, name="rate")
            one = constant(1, dtype=x_dtype, name="Const")
            scaled = math_ops.realdiv(x, math_ops.subtract(one, rate))
        shape = _noise_shape(x, noise_shape)
        uniform = random_ops.random_uniform(shape, dtype=x_dtype, seed=seed)
        keep_mask = math_ops.greater_equal(uniform, rate)
        zero = constant(0, dtype=x_dtype, name="Const")
        ret = math_ops.where_v2(keep_mask, scaled, zero)
        ret.set_shape(x.shape)
        return ret
