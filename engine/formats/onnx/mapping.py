"""The op-mapping table: ONNX operator (per opset version) -> engine ops.

``TABLE[op_type]`` is a list of ``(since_version, converter)`` rows, one per ONNX version of
the operator whose meaning differs from the previous one for what we read (an attribute moving
to an input, a changed default); a node takes the row with the largest ``since_version`` not
above its model's opset. ``VERSIONS[op_type]`` lists every ``since_version`` the rows were
checked against (``tests/engine/test_onnx_import.py`` compares it with the installed ``onnx``'s
schemas, so an operator changed by a newer opset is noticed rather than misread).

A converter ``fn(ctx, node) -> list[Tensor | None]`` builds engine ops with the TF API where
the meanings agree, and the ONNX ops of ``ops.py`` where they do not. It reads inputs with
``ctx.input(node, i)`` and constant inputs with ``ctx.ints(node, i)``.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx.tensors import OnnxFormatError, UnsupportedModelError, engine_dtype
from engine.framework.graph import Tensor
from engine.ops._common import create

__all__ = ["ML_DOMAIN", "TABLE", "TABLES", "VERSIONS", "UnsupportedModelError", "converter_for"]


TABLE: dict[str, list[tuple[int, object]]] = {}
VERSIONS: dict[str, tuple[int, ...]] = {}
ML_DOMAIN = "ai.onnx.ml"
# One (TABLE, VERSIONS) pair per operator domain ("" is the default one); each domain has its
# own opset version in a model's opset_import. A row's converter None: removed at that version.
TABLES: dict[str, tuple[dict, dict]] = {"": (TABLE, VERSIONS), ML_DOMAIN: ({}, {})}


def register(op_type: str, versions: tuple[int, ...], rows: dict | object, domain: str = ""):
    """Adds ``op_type`` of ``domain``: ``versions`` are every since_version checked, ``rows``
    maps a since_version to its converter (a single converter serves them all)."""
    table, known = TABLES[domain]
    if op_type in table:
        raise KeyError(f"ONNX operator {domain}{'.' if domain else ''}{op_type} mapped twice")
    if not isinstance(rows, dict):
        rows = {versions[0]: rows}
    table[op_type] = sorted(rows.items())
    known[op_type] = tuple(versions)


def converter_for(op_type: str, opset: int, domain: str = ""):
    rows = TABLES[domain][0].get(op_type) if domain in TABLES else None
    if not rows:
        return None
    chosen = None
    for since, fn in rows:
        if since <= opset:
            chosen = fn
    return chosen


def _out(op):
    return [op]


def _const(value, dtype) -> Tensor:
    return tf.constant(np.asarray(value, dtype=dtype.as_numpy_dtype))


# -----------------------------------------------------------------------------------------
# Elementwise
# -----------------------------------------------------------------------------------------


def _unary(fn):
    return lambda ctx, node: [fn(ctx.input(node, 0))]


def _binary(fn):
    return lambda ctx, node: [fn(ctx.input(node, 0), ctx.input(node, 1))]


def _legacy_binary(fn):
    """Opsets 1-6: broadcasting only with ``broadcast=1``, ``axis`` aligning B inside A."""

    def convert(ctx, node):
        a, b = ctx.input(node, 0), ctx.input(node, 1)
        axis = ctx.attr(node, "axis", None)
        if ctx.attr(node, "broadcast", 0) and axis is not None:
            ra, rb = ctx.rank(a, node), ctx.rank(b, node)
            axis %= max(ra, 1)
            trailing = ra - axis - rb
            if trailing > 0:
                b = tf.reshape(b, tf.concat([tf.shape(b), _const([1] * trailing, tf.int32)], 0))
        return [fn(a, b)]

    return convert


def _variadic(fn):
    def convert(ctx, node):
        xs = [ctx.input(node, i) for i in range(len(node["input"]))]
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return [out if len(xs) > 1 else tf.identity(out)]

    return convert


def _mean(ctx, node):
    xs = [ctx.input(node, i) for i in range(len(node["input"]))]
    out = xs[0]
    for x in xs[1:]:
        out = tf.add(out, x)
    return [tf.realdiv(out, _const(len(xs), out.dtype.base_dtype))]


def _div_fn(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype.base_dtype.is_integer:
        return create("OnnxTruncDiv", [a, b]).outputs[0]
    return tf.realdiv(a, b)


def _div(ctx, node):
    return [_div_fn(ctx.input(node, 0), ctx.input(node, 1))]


def _mod(ctx, node):
    a, b = ctx.input(node, 0), ctx.input(node, 1)
    if ctx.attr(node, "fmod", 0):
        return [create("OnnxFmod", [a, b]).outputs[0]]
    # fmod=0 is Python's % (the sign of the divisor); opset 28 defines it for floats too.
    return [tf.floormod(a, b)]


def _pow(ctx, node):
    a, b = ctx.input(node, 0), ctx.input(node, 1)
    if b.dtype.base_dtype != a.dtype.base_dtype:
        b = tf.cast(b, a.dtype.base_dtype)
    return [tf.pow(a, b)]


def _xor(ctx, node):
    return [tf.not_equal(ctx.input(node, 0), ctx.input(node, 1))]


def _is_inf(ctx, node):
    x = ctx.input(node, 0)
    neg, pos = ctx.attr(node, "detect_negative", 1), ctx.attr(node, "detect_positive", 1)
    inf = tf.is_inf(x)
    if neg and pos:
        return [inf]
    if not neg and not pos:
        return [tf.logical_and(inf, tf.logical_not(inf))]
    zero = _const(0, x.dtype.base_dtype)
    return [tf.logical_and(inf, tf.greater(x, zero) if pos else tf.less(x, zero))]


def _scalar(ctx, x: Tensor, v) -> Tensor:
    return _const(v, x.dtype.base_dtype)


def _leaky_relu(ctx, node):
    return [tf.nn.leaky_relu(ctx.input(node, 0), alpha=ctx.attr(node, "alpha", 0.01))]


def _elu(ctx, node):
    x = ctx.input(node, 0)
    alpha = ctx.attr(node, "alpha", 1.0)
    neg = tf.multiply(_scalar(ctx, x, alpha), tf.expm1(x))
    return [tf.where_v2(tf.greater(x, _scalar(ctx, x, 0)), x, neg)]


def _celu(ctx, node):
    x = ctx.input(node, 0)
    alpha = ctx.attr(node, "alpha", 1.0)
    neg = tf.multiply(_scalar(ctx, x, alpha), tf.expm1(tf.realdiv(x, _scalar(ctx, x, alpha))))
    return [tf.add(tf.maximum(x, _scalar(ctx, x, 0)), tf.minimum(_scalar(ctx, x, 0), neg))]


def _selu(ctx, node):
    x = ctx.input(node, 0)
    alpha = ctx.attr(node, "alpha", 1.67326319217681884765625)
    gamma = ctx.attr(node, "gamma", 1.05070102214813232421875)
    neg = tf.multiply(_scalar(ctx, x, alpha), tf.expm1(x))
    y = tf.where_v2(tf.greater(x, _scalar(ctx, x, 0)), x, neg)
    return [tf.multiply(_scalar(ctx, x, gamma), y)]


def _hard_sigmoid(ctx, node):
    x = ctx.input(node, 0)
    alpha, beta = ctx.attr(node, "alpha", 0.2), ctx.attr(node, "beta", 0.5)
    y = tf.add(tf.multiply(x, _scalar(ctx, x, alpha)), _scalar(ctx, x, beta))
    return [tf.clip_by_value(y, _scalar(ctx, x, 0), _scalar(ctx, x, 1))]


def _hard_swish(ctx, node):
    x = ctx.input(node, 0)
    y = tf.add(tf.multiply(x, _scalar(ctx, x, 1 / 6)), _scalar(ctx, x, 0.5))
    return [tf.multiply(x, tf.clip_by_value(y, _scalar(ctx, x, 0), _scalar(ctx, x, 1)))]


def _softsign(ctx, node):
    x = ctx.input(node, 0)
    return [tf.realdiv(x, tf.add(_scalar(ctx, x, 1), tf.abs(x)))]


def _mish(ctx, node):
    x = ctx.input(node, 0)
    return [tf.multiply(x, tf.tanh(tf.nn.softplus(x)))]


def _thresholded_relu(ctx, node):
    x = ctx.input(node, 0)
    a = _scalar(ctx, x, ctx.attr(node, "alpha", 1.0))
    return [tf.where_v2(tf.greater(x, a), x, _scalar(ctx, x, 0))]


def _prelu(ctx, node):
    x, slope = ctx.input(node, 0), ctx.input(node, 1)
    return [tf.where_v2(tf.less(x, _scalar(ctx, x, 0)), tf.multiply(x, slope), x)]


def _prelu_v6(ctx, node):
    # Before opset 7 a 1-D slope is per channel (axis 1), not numpy-broadcast.
    x, slope = ctx.input(node, 0), ctx.input(node, 1)
    rank = ctx.rank(x, node)
    if slope.shape.ndims == 1 and rank > 2:
        slope = tf.reshape(slope, [-1] + [1] * (rank - 2))
    return [tf.where_v2(tf.less(x, _scalar(ctx, x, 0)), tf.multiply(x, slope), x)]


def _erf(x: Tensor) -> Tensor:
    return create("OnnxErf", [x]).outputs[0]


def _gelu(ctx, node):
    x = ctx.input(node, 0)
    half = _scalar(ctx, x, 0.5)
    if ctx.attr(node, "approximate", "none") == "tanh":
        inner = tf.multiply(
            _scalar(ctx, x, np.sqrt(2 / np.pi)),
            tf.add(x, tf.multiply(_scalar(ctx, x, 0.044715), tf.pow(x, _scalar(ctx, x, 3)))),
        )
        return [tf.multiply(tf.multiply(half, x), tf.add(_scalar(ctx, x, 1), tf.tanh(inner)))]
    e = _erf(tf.multiply(x, _scalar(ctx, x, 1 / np.sqrt(2))))
    return [tf.multiply(tf.multiply(half, x), tf.add(_scalar(ctx, x, 1), e))]


def _clip(ctx, node):
    x = ctx.input(node, 0)
    if ctx.opset_of(node) < 11:
        lo = ctx.attr(node, "min", None)
        hi = ctx.attr(node, "max", None)
        lo = None if lo is None else _scalar(ctx, x, lo)
        hi = None if hi is None else _scalar(ctx, x, hi)
    else:
        lo, hi = ctx.optional(node, 1), ctx.optional(node, 2)
    if lo is not None:
        x = tf.maximum(x, lo)
    if hi is not None:
        x = tf.minimum(x, hi)
    return [tf.identity(x) if lo is None and hi is None else x]


def _cast(ctx, node):
    x = ctx.input(node, 0)
    to = engine_dtype(ctx.attr(node, "to"), f"Cast node {node.get('name', '')!r}")
    if (to == dtypes.string) != (x.dtype.base_dtype == dtypes.string):
        raise UnsupportedModelError("Cast between strings and numbers is not supported")
    return [tf.cast(x, to)]


def _cast_like(ctx, node):
    return [tf.cast(ctx.input(node, 0), ctx.input(node, 1).dtype.base_dtype)]


def _identity(ctx, node):
    return [tf.identity(ctx.input(node, 0))]


def _dropout(ctx, node):
    x = ctx.input(node, 0)
    if ctx.opset_of(node) >= 12 and len(node["input"]) > 2 and node["input"][2]:
        training = ctx.const(node, 2)
        if training is None or bool(np.asarray(training).reshape(-1)[0]):
            raise UnsupportedModelError("Dropout in training mode is not supported")
    y = tf.identity(x)
    if len(node["output"]) > 1 and node["output"][1]:
        return [y, tf.fill(tf.shape(x), tf.constant(True))]
    return [y]


def _where(ctx, node):
    return [tf.where_v2(ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2))]


# -----------------------------------------------------------------------------------------
# Linear algebra, softmax, normalization
# -----------------------------------------------------------------------------------------


def _matmul(ctx, node):
    a, b = ctx.input(node, 0), ctx.input(node, 1)
    if a.shape.ndims == 2 and b.shape.ndims == 2:
        return [tf.matmul(a, b)]
    return [create("OnnxMatMul", [a, b]).outputs[0]]


def _gemm(ctx, node):
    a, b = ctx.input(node, 0), ctx.input(node, 1)
    ta, tb = bool(ctx.attr(node, "transA", 0)), bool(ctx.attr(node, "transB", 0))
    alpha, beta = ctx.attr(node, "alpha", 1.0), ctx.attr(node, "beta", 1.0)
    y = tf.matmul(a, b, transpose_a=ta, transpose_b=tb)
    if alpha != 1.0:
        y = tf.multiply(y, _scalar(ctx, y, alpha))
    c = ctx.optional(node, 2)
    if c is not None:
        if beta != 1.0:
            c = tf.multiply(c, _scalar(ctx, c, beta))
        y = tf.add(y, c)
    return [y]


def _softmax_v1(kind):
    def convert(ctx, node):
        # Before opset 13 the input is coerced to 2-D at ``axis`` and normalized per row.
        x = ctx.input(node, 0)
        rank = ctx.rank(x, node)
        axis = ctx.attr(node, "axis", 1) % max(rank, 1)
        fn = tf.nn.softmax if kind == "softmax" else tf.nn.log_softmax
        if axis == rank - 1:
            return [fn(x, axis=-1)]
        shape = tf.shape(x, out_type=tf.int64)
        flat = create("OnnxReshape", [x, _flatten_shape(ctx, x, axis)], {"allowzero": 0})
        y = fn(flat.outputs[0], axis=-1)
        return [create("OnnxReshape", [y, shape], {"allowzero": 0}).outputs[0]]

    return convert


def _softmax_v13(kind):
    def convert(ctx, node):
        fn = tf.nn.softmax if kind == "softmax" else tf.nn.log_softmax
        return [fn(ctx.input(node, 0), axis=ctx.attr(node, "axis", -1))]

    return convert


def _batch_norm(ctx, node):
    x = ctx.input(node, 0)
    scale, bias, mean, var = (ctx.input(node, i) for i in range(1, 5))
    if ctx.attr(node, "training_mode", 0) or (
        ctx.opset_of(node) < 7 and ctx.attr(node, "is_test", 0) == 0
    ):
        raise UnsupportedModelError("BatchNormalization in training mode is not supported")
    if ctx.opset_of(node) < 9 and ctx.attr(node, "spatial", 1) == 0:
        raise UnsupportedModelError("BatchNormalization with spatial=0")
    eps = _scalar(ctx, x, ctx.attr(node, "epsilon", 1e-5))
    rank = ctx.rank(x, node)
    shape = [-1] + [1] * (rank - 2)
    mul = tf.multiply(scale, tf.rsqrt(tf.add(var, eps)))
    add = tf.subtract(bias, tf.multiply(mean, mul))
    return [tf.add(tf.multiply(x, tf.reshape(mul, shape)), tf.reshape(add, shape))]


def _instance_norm(ctx, node):
    x, scale, bias = (ctx.input(node, i) for i in range(3))
    rank = ctx.rank(x, node)
    axes = list(range(2, rank))
    eps = _scalar(ctx, x, ctx.attr(node, "epsilon", 1e-5))
    mean = tf.reduce_mean(x, axis=axes, keepdims=True)
    centered = tf.subtract(x, mean)
    var = tf.reduce_mean(tf.square(centered), axis=axes, keepdims=True)
    shape = [-1] + [1] * (rank - 2)
    y = tf.multiply(centered, tf.rsqrt(tf.add(var, eps)))
    return [tf.add(tf.multiply(y, tf.reshape(scale, shape)), tf.reshape(bias, shape))]


def _trailing_axes(ctx, node, x: Tensor, axis: int) -> list[int]:
    """The axes from ``axis`` to the last; negative axes need no rank (the usual -1)."""
    rank = x.shape.ndims
    limit = rank if rank is not None else 64  # no engine tensor has more dims
    if not -limit <= axis < max(limit, 1):
        raise OnnxFormatError(f"{node.get('op_type')}: axis {axis} is out of range")
    return list(range(axis, 0)) if axis < 0 else list(range(axis, ctx.rank(x, node)))


def _layer_norm(ctx, node):
    x = ctx.input(node, 0)
    axis = ctx.attr(node, "axis", -1)
    axes = _trailing_axes(ctx, node, x, axis)
    eps = ctx.attr(node, "epsilon", 1e-5)
    stash = engine_dtype(ctx.attr(node, "stash_type", 1), "LayerNormalization stash_type")
    xs = tf.cast(x, stash) if stash != x.dtype.base_dtype else x
    mean = tf.reduce_mean(xs, axis=axes, keepdims=True)
    centered = tf.subtract(xs, mean)
    var = tf.reduce_mean(tf.square(centered), axis=axes, keepdims=True)
    inv = tf.rsqrt(tf.add(var, _const(eps, stash)))
    y = tf.multiply(centered, inv)
    if stash != x.dtype.base_dtype:
        y = tf.cast(y, x.dtype.base_dtype)
    y = tf.multiply(y, ctx.input(node, 1))
    b = ctx.optional(node, 2)
    if b is not None:
        y = tf.add(y, b)
    return [y, mean, inv]


def _lrn(ctx, node):
    attrs = {
        "size": int(ctx.attr(node, "size")),
        "alpha": float(ctx.attr(node, "alpha", 1e-4)),
        "beta": float(ctx.attr(node, "beta", 0.75)),
        "bias": float(ctx.attr(node, "bias", 1.0)),
    }
    return [create("OnnxLRN", [ctx.input(node, 0)], attrs).outputs[0]]


def _einsum(ctx, node):
    xs = [ctx.input(node, i) for i in range(len(node["input"]))]
    eq = ctx.attr(node, "equation").replace(" ", "")
    return [create("Einsum", xs, {"equation": eq}).outputs[0]]  # the engine's (TF's) op


# -----------------------------------------------------------------------------------------
# Shapes
# -----------------------------------------------------------------------------------------


def _flatten_shape(ctx, x: Tensor, axis: int) -> Tensor:
    dims = x.shape.as_tuple()
    if dims is not None and all(d is not None for d in dims[axis:]):
        return _const([-1 if axis else 1, int(np.prod(dims[axis:], dtype=np.int64))], tf.int64)
    if dims is not None and all(d is not None for d in dims[:axis]):
        return _const([int(np.prod(dims[:axis], dtype=np.int64)), -1], tf.int64)
    s = tf.shape(x, out_type=tf.int64)
    return tf.stack(
        [tf.reduce_prod(s[:axis], keepdims=False), tf.reduce_prod(s[axis:], keepdims=False)]
    )


def _flatten(ctx, node):
    x = ctx.input(node, 0)
    rank = ctx.rank(x, node)
    axis = ctx.attr(node, "axis", 1)
    axis = axis + rank if axis < 0 else axis
    return [create("OnnxReshape", [x, _flatten_shape(ctx, x, axis)], {"allowzero": 0}).outputs[0]]


def _reshape(ctx, node):
    x = ctx.input(node, 0)
    if ctx.opset_of(node) < 5:
        shape_value = ctx.attr(node, "shape")
        shape = _const(shape_value, tf.int64)
    else:
        shape_value = ctx.const(node, 1)
        shape = ctx.input(node, 1)
    allowzero = ctx.attr(node, "allowzero", 0)
    if shape_value is not None and (allowzero or 0 not in list(np.asarray(shape_value))):
        return [tf.reshape(x, _const(np.asarray(shape_value), tf.int64))]
    return [create("OnnxReshape", [x, shape], {"allowzero": int(allowzero)}).outputs[0]]


def _axes(ctx, node, attr_until: int, index: int = 1):
    """Axes from the ``axes`` attribute (opset < attr_until) or a constant input."""
    if ctx.opset_of(node) < attr_until:
        v = ctx.attr(node, "axes", None)
        return None if v is None else [int(a) for a in v]
    if len(node["input"]) <= index or not node["input"][index]:
        return None
    return ctx.ints(node, index, "axes")


def _computed_axes(ctx, node) -> Tensor | None:
    """The axes input (opset 13+) when it is computed at run time, else None."""
    if ctx.opset_of(node) < 13 or len(node["input"]) < 2 or not node["input"][1]:
        return None
    return None if ctx.const(node, 1) is not None else tf.cast(ctx.input(node, 1), tf.int64)


def _squeeze(ctx, node):
    computed = _computed_axes(ctx, node)
    if computed is not None:
        return [create("OnnxSqueeze", [ctx.input(node, 0), computed]).outputs[0]]
    axes = _axes(ctx, node, 13)
    return [tf.squeeze(ctx.input(node, 0), axis=axes or None)]


def _unsqueeze(ctx, node):
    x = ctx.input(node, 0)
    computed = _computed_axes(ctx, node)
    if computed is not None:
        return [create("OnnxUnsqueeze", [x, computed]).outputs[0]]
    axes = _axes(ctx, node, 13)
    if axes is None:
        raise UnsupportedModelError("Unsqueeze without axes")
    if x.shape.ndims is None and all(a >= 0 for a in axes):
        # Non-negative axes need no rank: inserted in ascending order, each lands in place.
        for a in sorted(axes):
            x = tf.expand_dims(x, a)
        return [x]
    out_rank = ctx.rank(x, node) + len(axes)
    for a in sorted(a % out_rank for a in axes):
        x = tf.expand_dims(x, a)
    return [x]


def _transpose(ctx, node):
    perm = ctx.attr(node, "perm", None)
    return [tf.transpose(ctx.input(node, 0), perm=None if perm is None else list(perm))]


def _concat(ctx, node):
    xs = [ctx.input(node, i) for i in range(len(node["input"])) if node["input"][i]]
    return [tf.concat(xs, axis=ctx.attr(node, "axis", 1 if ctx.opset_of(node) < 4 else None))]


def _split(ctx, node):
    x = ctx.input(node, 0)
    axis = ctx.attr(node, "axis", 0)
    n = len(node["output"])
    if ctx.opset_of(node) < 13:
        sizes = ctx.attr(node, "split", None)
        sizes = None if sizes is None else [int(s) for s in sizes]
    elif len(node["input"]) > 1 and node["input"][1]:
        if ctx.const(node, 1) is None:  # sizes computed at run time: one part per output
            sizes_t = tf.cast(ctx.input(node, 1), tf.int64)
            return list(tf.split(x, sizes_t, axis=axis, num=n))
        sizes = ctx.ints(node, 1, "split")
    else:
        sizes = None
    if sizes is None:
        num = ctx.attr(node, "num_outputs", None) if ctx.opset_of(node) >= 18 else None
        dim = x.shape.as_tuple()[axis] if x.shape.ndims is not None else None
        if num is not None and dim is not None and dim % num:
            chunk = -(-dim // num)
            sizes = [chunk] * (num - 1) + [dim - chunk * (num - 1)]
        else:
            return list(tf.split(x, n, axis=axis))
    return list(tf.split(x, sizes, axis=axis))


def _slice(ctx, node):
    x = ctx.input(node, 0)
    if ctx.opset_of(node) < 10:
        starts = _const(ctx.attr(node, "starts"), tf.int64)
        ends = _const(ctx.attr(node, "ends"), tf.int64)
        axes_v = ctx.attr(node, "axes", None)
        axes = _const([] if axes_v is None else axes_v, tf.int64)
        steps = _const([], tf.int64)
    else:
        starts, ends = ctx.input(node, 1), ctx.input(node, 2)
        axes = ctx.optional(node, 3)
        steps = ctx.optional(node, 4)
        empty = _const(np.zeros([0]), starts.dtype.base_dtype)
        axes = empty if axes is None else axes
        steps = empty if steps is None else steps
    return [create("OnnxSlice", [x, starts, ends, axes, steps]).outputs[0]]


def _gather(ctx, node):
    x, idx = ctx.input(node, 0), ctx.input(node, 1)
    axis = ctx.attr(node, "axis", 0)
    known = ctx.const(node, 1)
    if known is not None and known.size and (known >= 0).all() and x.shape.ndims is not None:
        return [tf.gather(x, idx, axis=axis % x.shape.ndims)]
    return [create("OnnxGather", [x, idx], {"axis": int(axis)}).outputs[0]]


def _gather_elements(ctx, node):
    x, idx = ctx.input(node, 0), ctx.input(node, 1)
    attrs = {"axis": int(ctx.attr(node, "axis", 0))}
    return [create("OnnxGatherElements", [x, idx], attrs).outputs[0]]


def _expand(ctx, node):
    return [create("OnnxExpand", [ctx.input(node, 0), ctx.input(node, 1)]).outputs[0]]


def _tile(ctx, node):
    return [tf.tile(ctx.input(node, 0), ctx.input(node, 1))]


def _pad(ctx, node):
    x = ctx.input(node, 0)
    mode = ctx.attr(node, "mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    dt = x.dtype.base_dtype
    if ctx.opset_of(node) < 11:
        pads = _const(ctx.attr(node, "pads" if ctx.opset_of(node) >= 2 else "paddings"), tf.int64)
        value = _const([ctx.attr(node, "value", 0.0)], dt)
        axes = _const([], tf.int64)
    else:
        pads = ctx.input(node, 1)
        value = ctx.optional(node, 2)
        value = _const(np.zeros([0]), dt) if value is None else value
        axes = ctx.optional(node, 3)
        axes = _const([], tf.int64) if axes is None else axes
    return [create("OnnxPad", [x, pads, value, axes], {"mode": mode}).outputs[0]]


def _shape(ctx, node):
    s = tf.shape(ctx.input(node, 0), out_type=tf.int64)
    start, end = ctx.attr(node, "start", 0), ctx.attr(node, "end", None)
    if start == 0 and end is None:
        return [s]
    return [s[start:end]]


def _size(ctx, node):
    return [tf.size(ctx.input(node, 0), out_type=tf.int64)]


def _constant_of_shape(ctx, node):
    t = ctx.attr(node, "value", None)
    value = np.zeros([1], np.float32) if t is None else t
    dt = dtypes.as_dtype(value.dtype)
    return [tf.fill(ctx.input(node, 0), tf.constant(value.reshape(-1)[0], dtype=dt))]


def _range(ctx, node):
    start, limit, delta = (ctx.input(node, i) for i in range(3))
    return [tf.range(start, limit, delta)]


def _constant(ctx, node):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        v = ctx.attr(node, key, None)
        if v is not None:
            dtype = {"value_float": np.float32, "value_floats": np.float32}.get(key, np.int64)
            arr = v if key == "value" else np.asarray(v, dtype=dtype)
            return [ctx.constant(arr, node["output"][0])]
    for key in ("value_string", "value_strings"):
        v = ctx.attr(node, key, None)
        if v is not None:
            return [tf.constant(np.asarray(v, dtype=object))]
    raise UnsupportedModelError("Constant node without a supported value attribute")


def _cumsum(ctx, node):
    v = ctx.const(node, 1)
    axis = ctx.input(node, 1) if v is None else int(np.asarray(v).reshape(-1)[0])
    return [
        tf.cumsum(
            ctx.input(node, 0),
            axis=axis,
            exclusive=bool(ctx.attr(node, "exclusive", 0)),
            reverse=bool(ctx.attr(node, "reverse", 0)),
        )
    ]


def _cumprod(ctx, node):
    v = ctx.const(node, 1)
    axis = ctx.input(node, 1) if v is None else int(np.asarray(v).reshape(-1)[0])
    return [
        tf.cumprod(
            ctx.input(node, 0),
            axis=axis,
            exclusive=bool(ctx.attr(node, "exclusive", 0)),
            reverse=bool(ctx.attr(node, "reverse", 0)),
        )
    ]


def _trilu(ctx, node):
    k = ctx.optional(node, 1)
    k = _const(0, tf.int64) if k is None else k
    attrs = {"upper": int(ctx.attr(node, "upper", 1))}
    return [create("OnnxTrilu", [ctx.input(node, 0), k], attrs).outputs[0]]


def _rms_norm(ctx, node):
    x = ctx.input(node, 0)
    axis = ctx.attr(node, "axis", -1)
    axes = _trailing_axes(ctx, node, x, axis)
    stash = engine_dtype(ctx.attr(node, "stash_type", 1), "RMSNormalization stash_type")
    xs = tf.cast(x, stash) if stash != x.dtype.base_dtype else x
    ms = tf.reduce_mean(tf.square(xs), axis=axes, keepdims=True)
    y = tf.multiply(xs, tf.rsqrt(tf.add(ms, _const(ctx.attr(node, "epsilon", 1e-5), stash))))
    if stash != x.dtype.base_dtype:
        y = tf.cast(y, x.dtype.base_dtype)
    return [tf.multiply(y, ctx.input(node, 1))]


def _bit_shift(ctx, node):
    direction = ctx.attr(node, "direction")
    attrs = {"direction": direction if isinstance(direction, str) else direction.decode()}
    return [create("OnnxBitShift", [ctx.input(node, 0), ctx.input(node, 1)], attrs).outputs[0]]


# -----------------------------------------------------------------------------------------
# The table
# -----------------------------------------------------------------------------------------

for _name, _fn, _versions in (
    ("Abs", tf.abs, (6, 13)),
    ("Neg", tf.negative, (6, 13)),
    ("Exp", tf.exp, (6, 13)),
    ("Log", tf.log, (6, 13)),
    ("Sqrt", tf.sqrt, (6, 13)),
    ("Reciprocal", tf.reciprocal, (6, 13)),
    ("Floor", tf.floor, (6, 13)),
    ("Ceil", tf.ceil, (6, 13)),
    ("Sigmoid", tf.sigmoid, (6, 13)),
    ("Tanh", tf.tanh, (6, 13)),
    ("Relu", tf.nn.relu, (6, 13, 14)),
    ("Sin", tf.sin, (7, 22)),
    ("Cos", tf.cos, (7, 22)),
    ("Tan", tf.tan, (7, 22)),
    ("Sign", tf.sign, (9, 13)),
    ("IsNaN", tf.is_nan, (9, 13, 20)),
    ("Round", tf.round, (11, 22)),
    ("Not", tf.logical_not, (1,)),
    ("Softplus", tf.nn.softplus, (1, 22)),
    ("Erf", _erf, (9, 13)),
):
    register(_name, _versions, _unary(_fn))

for _name, _fn in (("Add", tf.add), ("Sub", tf.subtract), ("Mul", tf.multiply)):
    register(_name, (1, 6, 7, 13, 14), {1: _legacy_binary(_fn), 7: _binary(_fn)})

for _name, _fn, _versions in (
    ("Equal", tf.equal, (7, 11, 13, 19)),
    ("Greater", tf.greater, (7, 9, 13)),
    ("Less", tf.less, (7, 9, 13)),
    ("GreaterOrEqual", tf.greater_equal, (12, 16)),
    ("LessOrEqual", tf.less_equal, (12, 16)),
    ("And", tf.logical_and, (7,)),
    ("Or", tf.logical_or, (7,)),
):
    register(_name, _versions, _binary(_fn))

register("Max", (6, 8, 12, 13), _variadic(tf.maximum))
register("Min", (6, 8, 12, 13), _variadic(tf.minimum))
register("Sum", (6, 8, 13), _variadic(tf.add))
register("Mean", (6, 8, 13), _mean)
register("Div", (1, 6, 7, 13, 14), {1: _legacy_binary(_div_fn), 7: _div})
register("Mod", (10, 13, 28), _mod)
register("Pow", (1, 7, 12, 13, 15), {1: _legacy_binary(tf.pow), 7: _pow})
register("Xor", (7,), _xor)
register("IsInf", (10, 20), _is_inf)
register("LeakyRelu", (6, 16), _leaky_relu)
register("Elu", (6, 22), _elu)
register("Celu", (12, 28), _celu)
register("Selu", (6, 22), _selu)
register("HardSigmoid", (6, 22), _hard_sigmoid)
register("HardSwish", (14, 22), _hard_swish)
register("Softsign", (1, 22), _softsign)
register("Mish", (18, 22), _mish)
register("ThresholdedRelu", (10, 22), _thresholded_relu)
register("PRelu", (6, 7, 9, 16), {6: _prelu_v6, 7: _prelu})
register("Gelu", (20,), _gelu)
register("Clip", (6, 11, 12, 13), {6: _clip})
register("Cast", (6, 9, 13, 19, 21, 23, 24, 25, 28), _cast)
register("CastLike", (15, 19, 21, 23, 24, 25), _cast_like)
register("Identity", (1, 13, 14, 16, 19, 21, 23, 24, 25), _identity)
register("Dropout", (7, 10, 12, 13, 22), _dropout)
register("Where", (9, 16), _where)
register("MatMul", (1, 9, 13), _matmul)
register("Gemm", (1, 6, 7, 9, 11, 13), _gemm)
register("Softmax", (1, 11, 13), {1: _softmax_v1("softmax"), 13: _softmax_v13("softmax")})
register(
    "LogSoftmax",
    (1, 11, 13),
    {1: _softmax_v1("log_softmax"), 13: _softmax_v13("log_softmax")},
)
register("BatchNormalization", (6, 7, 9, 14, 15), _batch_norm)
register("InstanceNormalization", (6, 22), _instance_norm)
register("LayerNormalization", (17,), _layer_norm)
register("LRN", (1, 13), _lrn)
register("Einsum", (12, 28), _einsum)
register("Flatten", (1, 9, 11, 13, 21, 23, 24, 25), _flatten)
register("Reshape", (5, 13, 14, 19, 21, 23, 24, 25), _reshape)
register("Squeeze", (1, 11, 13, 21, 23, 24, 25), _squeeze)
register("Unsqueeze", (1, 11, 13, 21, 23, 24, 25), _unsqueeze)
register("Transpose", (1, 13, 21, 23, 24, 25), _transpose)
register("Concat", (4, 11, 13), _concat)
register("Split", (2, 11, 13, 18), _split)
register("Slice", (1, 10, 11, 13), _slice)
register("Gather", (1, 11, 13), _gather)
register("GatherElements", (11, 13), _gather_elements)
register("Expand", (8, 13), _expand)
register("Tile", (6, 13), _tile)
register("Pad", (2, 11, 13, 18, 19, 21, 23, 24, 25), _pad)
register("Shape", (1, 13, 15, 19, 21, 23, 24, 25), _shape)
register("Size", (1, 13, 19, 21, 23, 24, 25), _size)
register("ConstantOfShape", (9, 20, 21, 23, 24, 25), _constant_of_shape)
register("Range", (11, 27), _range)
register("Constant", (1, 9, 11, 12, 13, 19, 21, 23, 24, 25), _constant)
register("CumSum", (11, 14), _cumsum)
register("CumProd", (26,), _cumprod)
register("Trilu", (14,), _trilu)
register("RMSNormalization", (23,), _rms_norm)
register("BitShift", (11, 28), _bit_shift)


del _name, _fn, _versions
