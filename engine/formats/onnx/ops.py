"""Engine ops for ONNX operators whose meaning differs from every TF op.

ONNX operators map onto the engine's TF ops wherever the two agree (``mapping.py``). The ops
here exist because ONNX's semantics differ in ways a TF op cannot express: negative indices
(Gather), run-time ``0`` dims (Reshape), ONNX's slice clamping, numpy ``matmul`` ranks,
two-way broadcasting (Expand), edge/wrap and negative pads, ``erf``, top-k on any
axis, C-style integer division and ``fmod``, and LRN's window.

They are served, never trained: every one is declared not differentiable. Kernels follow the
engine's rule ``kernel(xp, *inputs, **attrs)`` with ``xp`` numpy or cupy.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import (
    ALL,
    FLOATS,
    INDEX,
    INTS,
    NUMERIC,
    broadcast_shape,
    check_dtype,
    check_same_dtype,
)
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["ONNX_OP_TYPES"]

ONNX_OP_TYPES: list[str] = []


def _onnx_op(
    op_type: str, *, infer, inputs=(), attrs=(), aliases=False, cpu_only=False, host_inputs=()
):
    """Registers an ONNX op, not differentiable, declaring ``attrs`` (``(name, type)``
    pairs, types as the registry's: ``int``, ``float``, ``string``, ``type``, ``list(int)``,
    ``int?``). ``cpu_only``: the kernel uses numpy features cupy lacks (ufunc.at,
    put_along_axis); sessions place those ops on the CPU with copies around them.
    ``host_inputs``: positions the kernel reads on the host (shapes, axes, sizes)."""
    flags = OpFlags(
        aliases=aliases,
        device_types=("CPU",) if cpu_only else ("CPU", "GPU"),
        host_inputs=host_inputs,
    )
    declared = tuple(Attr(name, kind) for name, kind in attrs)

    def deco(kernel):
        ONNX_OP_TYPES.append(op_type)
        return op(
            op_type,
            infer=infer,
            inputs=inputs,
            attrs=declared,
            differentiable=False,
            flags=flags,
        )(kernel)

    return deco


def _unknown_like(i: int = 0, allowed=ALL):
    def infer(op):
        return [(check_dtype(op, i, allowed), unknown_shape())]

    return infer


def _bad(msg: str):
    return errors.InvalidArgumentError(None, None, msg)


# -----------------------------------------------------------------------------------------
# Elementwise
# -----------------------------------------------------------------------------------------


def _same(op):
    return [(check_dtype(op, 0, FLOATS), op._inputs[0]._shape)]


@_onnx_op("OnnxErf", infer=_same, inputs=("x",))
def _erf(xp, x):
    # Numerical Recipes' erfc (Chebyshev fit): fractional error below 1.2e-7 everywhere,
    # within float32 rounding; computed in float64 so float64 inputs keep that accuracy.
    z = xp.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (
        1.00002368
        + t
        * (
            0.37409196
            + t
            * (
                0.09678418
                + t
                * (
                    -0.18628806
                    + t
                    * (
                        0.27886807
                        + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))
                    )
                )
            )
        )
    )
    erfc = t * xp.exp(-z * z + poly)
    return (xp.sign(x.astype(np.float64)) * (1.0 - erfc)).astype(x.dtype)


def _binary_same(allowed):
    def infer(op):
        d = check_same_dtype(op, (0, 1))
        check_dtype(op, 0, allowed)
        return [(d, broadcast_shape(op._inputs[0]._shape, op._inputs[1]._shape))]

    return infer


@_onnx_op("OnnxTruncDiv", infer=_binary_same(INTS), inputs=("x", "y"))
def _trunc_div(xp, x, y):
    if bool((y == 0).any()):
        raise _bad("Integer division by zero")
    q = xp.abs(x) // xp.abs(y)
    return xp.where((x < 0) != (y < 0), -q, q).astype(x.dtype)


@_onnx_op("OnnxFmod", infer=_binary_same(NUMERIC), inputs=("x", "y"))
def _fmod(xp, x, y):
    if x.dtype.kind in "iu" and bool((y == 0).any()):
        raise _bad("Integer division by zero")
    return xp.fmod(x, y).astype(x.dtype)


# -----------------------------------------------------------------------------------------
# Linear algebra
# -----------------------------------------------------------------------------------------


def _matmul_infer(op):
    d = check_same_dtype(op, (0, 1))
    check_dtype(op, 0, NUMERIC)
    a, b = op._inputs[0]._shape.as_tuple(), op._inputs[1]._shape.as_tuple()
    if a is None or b is None:
        return [(d, unknown_shape())]
    if not a or not b:
        raise ShapeError("MatMul inputs must have rank at least 1")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] is not None and b2[-2] is not None and a2[-1] != b2[-2]:
        raise ShapeError(f"Matrix size-incompatible: {a[-1]} vs {b2[-2]}")
    batch = broadcast_shape(TensorShape._from_tuple(a2[:-2]), TensorShape._from_tuple(b2[:-2]))
    out = batch.as_tuple() + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return [(d, TensorShape._from_tuple(out))]


@_onnx_op("OnnxMatMul", infer=_matmul_infer, inputs=("a", "b"))
def _matmul(xp, a, b):
    return xp.matmul(a, b)


# -----------------------------------------------------------------------------------------
# Shapes and indexing
# -----------------------------------------------------------------------------------------


def _host_ints(xp, t) -> list[int]:
    a = t.get() if hasattr(t, "get") else t
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _host_value(t):
    """A device or host array as a numpy array of the same dtype."""
    return np.asarray(t.get() if hasattr(t, "get") else t)


def _shape_operand(op, i: int, zero_from=None) -> TensorShape:
    """The static shape a 1-D shape operand describes: its length gives the rank, its
    constant entries (where known) the dims."""
    n = op._inputs[i]._shape.as_tuple()
    if n is None or len(n) != 1 or n[0] is None:
        return unknown_shape()
    value = constant_value(op._inputs[i])
    if value is None:
        return unknown_shape(n[0])
    dims = []
    src = zero_from.as_tuple() if zero_from is not None else None
    for k, d in enumerate(np.asarray(value).reshape(-1).tolist()):
        if d == 0 and zero_from is not None:
            dims.append(src[k] if src is not None and k < len(src) else None)
        else:
            dims.append(d if d > 0 else None)
    return TensorShape._from_tuple(tuple(dims))


def _reshape_infer(op):
    check_dtype(op, 1, INDEX)
    x = op._inputs[0]._shape
    return [(check_dtype(op, 0, ALL), _shape_operand(op, 1, None if op._attrs["allowzero"] else x))]


@_onnx_op(
    "OnnxReshape",
    infer=_reshape_infer,
    inputs=("data", "shape"),
    aliases=True,
    attrs=[("allowzero", "int")],
    host_inputs=(1,),
)
def _reshape(xp, x, shape, *, allowzero):
    dims = _host_ints(xp, shape)
    if not allowzero:
        for i, d in enumerate(dims):
            if d == 0:
                if i >= x.ndim:
                    raise _bad(f"Reshape: 0 at position {i} but the input has rank {x.ndim}")
                dims[i] = x.shape[i]
    try:
        return x.reshape(dims)
    except ValueError:
        raise _bad(f"Reshape: cannot reshape an input of shape {list(x.shape)} to {dims}") from None


def _slice_infer(op):
    for i in range(1, len(op._inputs)):
        check_dtype(op, i, INDEX)
    x = op._inputs[0]._shape
    return [(check_dtype(op, 0, ALL), unknown_shape(x.ndims) if x.ndims is not None else x)]


def _clamp_slice(start: int, end: int, step: int, dim: int) -> slice:
    """ONNX Slice's clamping, as a Python slice of a dimension of size ``dim``."""
    if step == 0:
        raise _bad("Slice: step cannot be 0")
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
        return slice(start, end, step)
    start = min(max(start, 0), dim - 1)
    end = min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)


@_onnx_op(
    "OnnxSlice",
    infer=_slice_infer,
    inputs=("data", "starts", "ends", "axes", "steps"),
    aliases=True,
    host_inputs=(1, 2, 3, 4),
)
def _slice(xp, x, starts, ends, axes, steps):
    starts, ends = _host_ints(xp, starts), _host_ints(xp, ends)
    axes, steps = _host_ints(xp, axes), _host_ints(xp, steps)
    if not axes:
        axes = list(range(len(starts)))
    if not steps:
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise _bad("Slice: starts, ends, axes and steps must have the same length")
    index = [slice(None)] * x.ndim
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        if not -x.ndim <= a < x.ndim:
            raise _bad(f"Slice: axis {a} is out of range for rank {x.ndim}")
        a %= x.ndim
        if a in seen:
            raise _bad(f"Slice: axis {a} repeated")
        seen.add(a)
        index[a] = _clamp_slice(s, e, st, x.shape[a])
    return x[tuple(index)]


def _gather_infer(op):
    check_dtype(op, 1, INDEX)
    d = check_dtype(op, 0, ALL)
    x, i = op._inputs[0]._shape.as_tuple(), op._inputs[1]._shape.as_tuple()
    axis = op._attrs["axis"]
    if x is None or i is None:
        return [(d, unknown_shape())]
    if not -len(x) <= axis < len(x):
        raise ShapeError(f"axis {axis} is out of range for rank {len(x)}")
    axis %= len(x)
    return [(d, TensorShape._from_tuple(x[:axis] + i + x[axis + 1 :]))]


def _normalized_indices(xp, idx, dim: int, what: str):
    if idx.size and (bool((idx < -dim).any()) or bool((idx >= dim).any())):
        bad = idx[(idx < -dim) | (idx >= dim)].reshape(-1)[:1]
        raise _bad(f"{what}: index {int(bad[0])} is out of bounds for a dimension of {dim}")
    return xp.where(idx < 0, idx + dim, idx)


@_onnx_op("OnnxGather", infer=_gather_infer, inputs=("data", "indices"), attrs=[("axis", "int")])
def _gather(xp, x, idx, *, axis):
    axis %= x.ndim
    return xp.take(x, _normalized_indices(xp, idx, x.shape[axis], "Gather"), axis=axis)


def _elements_infer(op):
    check_dtype(op, 1, INDEX)
    return [(check_dtype(op, 0, ALL), op._inputs[1]._shape)]


@_onnx_op(
    "OnnxGatherElements", infer=_elements_infer, inputs=("data", "indices"), attrs=[("axis", "int")]
)
def _gather_elements(xp, x, idx, *, axis):
    if x.ndim != idx.ndim:
        raise _bad("GatherElements: data and indices must have the same rank")
    axis %= x.ndim
    idx = _normalized_indices(xp, idx, x.shape[axis], "GatherElements")
    return xp.take_along_axis(x, idx, axis=axis)


def _expand_infer(op):
    check_dtype(op, 1, INDEX)
    x, n = op._inputs[0]._shape, op._inputs[1]._shape.as_tuple()
    if x.ndims is None or n is None or len(n) != 1 or n[0] is None:
        return [(check_dtype(op, 0, ALL), unknown_shape())]
    return [(check_dtype(op, 0, ALL), unknown_shape(max(x.ndims, n[0])))]


@_onnx_op("OnnxExpand", infer=_expand_infer, inputs=("input", "shape"), host_inputs=(1,))
def _expand(xp, x, shape):
    dims = _host_ints(xp, shape)
    try:
        out_shape = np.broadcast_shapes(x.shape, tuple(dims))
    except ValueError:
        raise _bad(f"Expand: shape {dims} does not broadcast with {list(x.shape)}") from None
    return xp.broadcast_to(x, out_shape).copy()


def _pad_infer(op):
    check_dtype(op, 1, INDEX)
    d = check_dtype(op, 0, ALL)
    x = op._inputs[0]._shape.as_tuple()
    if x is None:
        return [(d, unknown_shape())]
    pads, axes = constant_value(op._inputs[1]), constant_value(op._inputs[3])
    if pads is None or axes is None:
        return [(d, unknown_shape(len(x)))]
    axes = [int(a) % max(len(x), 1) for a in np.asarray(axes).ravel()] or list(range(len(x)))
    pads = [int(p) for p in np.asarray(pads).ravel()]
    if len(pads) != 2 * len(axes):
        raise ShapeError(f"{len(pads)} pads for {len(axes)} axes")
    out = list(x)
    for k, a in enumerate(axes):
        if out[a] is not None:
            out[a] = max(out[a] + pads[k] + pads[k + len(axes)], 0)
    return [(d, TensorShape._from_tuple(tuple(out)))]


@_onnx_op(
    "OnnxPad",
    infer=_pad_infer,
    inputs=("data", "pads", "constant_value", "axes"),
    attrs=[("mode", "string")],
    host_inputs=(1, 2, 3),
)
def _pad(xp, x, pads, value, axes, *, mode):
    pads = _host_ints(xp, pads)
    axes = _host_ints(xp, axes) or list(range(x.ndim))
    if len(pads) != 2 * len(axes):
        raise _bad(f"Pad: {len(pads)} pads for {len(axes)} axes (expected {2 * len(axes)})")
    widths = [[0, 0] for _ in range(x.ndim)]
    for k, a in enumerate(axes):
        if not -x.ndim <= a < x.ndim:
            raise _bad(f"Pad: axis {a} is out of range for rank {x.ndim}")
        widths[a % x.ndim] = [pads[k], pads[k + len(axes)]]
    # Negative pads crop first; the rest pads.
    crop = tuple(slice(max(-b, 0), x.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(widths))
    x = x[crop]
    pos = [(max(b, 0), max(e, 0)) for b, e in widths]
    if mode == "constant":
        # cupy's pad reads its fill value on the host.
        fill = _host_value(value.reshape(-1)[0]) if value.size else x.dtype.type(0)
        return xp.pad(x, pos, mode="constant", constant_values=fill)
    if mode == "reflect":
        for i, (b, e) in enumerate(pos):
            if (b or e) and x.shape[i] < 2:
                raise _bad("Pad: reflect needs at least 2 elements along padded axes")
        return xp.pad(x, pos, mode="reflect")
    if mode in ("edge", "wrap"):
        return xp.pad(x, pos, mode=mode)
    raise _bad(f"Pad: unknown mode {mode!r}")


# -----------------------------------------------------------------------------------------
# TopK and normalization
# -----------------------------------------------------------------------------------------


def _topk_infer(op):
    check_dtype(op, 1, INDEX)
    d = check_dtype(op, 0, NUMERIC)
    out = unknown_shape(op._inputs[0]._shape.ndims)
    return [(d, out), (dtypes.int64, out)]


@_onnx_op(
    "OnnxTopK",
    infer=_topk_infer,
    inputs=("x", "k"),
    attrs=[("axis", "int"), ("largest", "int"), ("sorted", "int")],
    host_inputs=(1,),
)
def _top_k(xp, x, k, *, axis, largest, sorted):  # noqa: A002 - ONNX's attribute name
    k = _host_ints(xp, k)[0]
    axis %= x.ndim
    if not 0 <= k <= x.shape[axis]:
        raise _bad(f"TopK: k={k} is out of range for a dimension of {x.shape[axis]}")
    # A stable sort keeps the lower index first among equal values, as ONNX asks.
    if largest:
        if x.dtype.kind == "u":
            key = -(x.astype(np.int64)) if x.dtype.itemsize < 8 else ~x
        elif x.dtype.kind == "b":
            key = ~x
        else:
            key = -x
    else:
        key = x
    idx = xp.argsort(key, axis=axis, kind="stable")
    idx = xp.take(idx, xp.arange(k), axis=axis)
    return xp.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


def _lrn_infer(op):
    return [(check_dtype(op, 0, FLOATS), op._inputs[0]._shape)]


@_onnx_op(
    "OnnxLRN",
    infer=_lrn_infer,
    inputs=("x",),
    attrs=[("size", "int"), ("alpha", "float"), ("beta", "float"), ("bias", "float")],
)
def _lrn(xp, x, *, size, alpha, beta, bias):
    sq = (x * x).astype(np.float64)
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    width = [(0, 0)] * x.ndim
    width[1] = (lo, hi)
    padded = xp.pad(sq, width)
    total = xp.zeros_like(sq)
    for j in range(size):
        total += padded[:, j : j + c]
    return (x / (bias + alpha / size * total) ** beta).astype(x.dtype)


# -----------------------------------------------------------------------------------------
# Reductions over run-time axes, triangles, shifts
# -----------------------------------------------------------------------------------------


def _reduce_infer(op):
    check_dtype(op, 1, INDEX)
    return [(check_dtype(op, 0, NUMERIC), unknown_shape())]


_EMPTY_IDENTITY = {"max": -np.inf, "min": np.inf}


@_onnx_op(
    "OnnxReduce",
    infer=_reduce_infer,
    inputs=("data", "axes"),
    attrs=[("kind", "string"), ("keepdims", "int"), ("noop_with_empty_axes", "int")],
    host_inputs=(1,),
)
def _reduce(xp, x, axes, *, kind, keepdims, noop_with_empty_axes):
    axes = _host_ints(xp, axes)
    if not axes:
        if noop_with_empty_axes:
            return x.copy()
        axes = list(range(x.ndim))
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise _bad(f"Reduce: axis {a} is out of range for rank {x.ndim}")
    ax = tuple(sorted({a % x.ndim for a in axes}))
    keep = bool(keepdims)
    if x.size == 0 and kind in _EMPTY_IDENTITY:
        shape = [1 if i in ax else d for i, d in enumerate(x.shape) if keep or i not in ax]
        fill = _EMPTY_IDENTITY[kind]
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            fill = info.min if kind == "max" else info.max
        return xp.full(shape, fill, dtype=x.dtype)
    if kind == "sum":
        out = xp.sum(x, axis=ax, keepdims=keep)
    elif kind == "mean":
        out = xp.mean(x, axis=ax, keepdims=keep)
    elif kind == "max":
        out = xp.max(x, axis=ax, keepdims=keep)
    elif kind == "min":
        out = xp.min(x, axis=ax, keepdims=keep)
    elif kind == "prod":
        out = xp.prod(x, axis=ax, keepdims=keep)
    elif kind == "l1":
        out = xp.sum(xp.abs(x), axis=ax, keepdims=keep)
    elif kind == "l2":
        out = xp.sqrt(xp.sum(x.astype(np.float64) ** 2, axis=ax, keepdims=keep))
    elif kind == "sum_square":
        out = xp.sum(x * x, axis=ax, keepdims=keep)
    elif kind == "log_sum":
        out = xp.log(xp.sum(x, axis=ax, keepdims=keep))
    elif kind == "log_sum_exp":
        m = xp.max(x, axis=ax, keepdims=True) if x.size else xp.zeros([1] * x.ndim, x.dtype)
        m = xp.where(xp.isfinite(m), m, 0)
        out = xp.log(xp.sum(xp.exp(x - m), axis=ax, keepdims=True)) + m
        if not keep:
            out = out.reshape([d for i, d in enumerate(out.shape) if i not in ax])
    else:
        raise _bad(f"Reduce: unknown kind {kind!r}")
    return xp.asarray(out).astype(x.dtype)


def _trilu_infer(op):
    check_dtype(op, 1, INDEX)
    return [(check_dtype(op, 0, ALL), op._inputs[0]._shape)]


@_onnx_op(
    "OnnxTrilu",
    infer=_trilu_infer,
    inputs=("input", "k"),
    attrs=[("upper", "int")],
    host_inputs=(1,),
)
def _trilu(xp, x, k, *, upper):
    if x.ndim < 2:
        raise _bad("Trilu: input must have rank at least 2")
    k = _host_ints(xp, k)[0]
    return xp.triu(x, k) if upper else xp.tril(x, k)


@_onnx_op(
    "OnnxBitShift", infer=_binary_same(INTS), inputs=("x", "y"), attrs=[("direction", "string")]
)
def _bit_shift(xp, x, y, *, direction):
    if direction == "LEFT":
        return xp.left_shift(x, y).astype(x.dtype)
    if direction == "RIGHT":
        return xp.right_shift(x, y).astype(x.dtype)
    raise _bad(f"BitShift: direction must be LEFT or RIGHT, got {direction!r}")


# -----------------------------------------------------------------------------------------
# Resize: separable nearest / n-linear / cubic interpolation, one axis at a time
# -----------------------------------------------------------------------------------------


_RESIZE_ATTRS = [
    ("mode", "string"),
    ("coordinate_transformation_mode", "string"),
    ("nearest_mode", "string"),
    ("cubic_coeff_a", "float"),
    ("exclude_outside", "int"),
    ("extrapolation_value", "float"),
    ("axes", "list(int)"),
    ("keep_aspect_ratio_policy", "string"),
]


def _resize_infer(op):
    for i in (1, 2):
        check_dtype(op, i, FLOATS)
    check_dtype(op, 3, INDEX)
    x = op._inputs[0]._shape
    return [(check_dtype(op, 0, ALL), unknown_shape(x.ndims))]


def _original_coords(xp, out: int, size: int, scale: float, mode: str, roi):
    x = xp.arange(out, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = out / (scale * size)
        return size / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out > 1 else xp.zeros(out)
    if mode == "align_corners":
        # The reference divides by the unrounded output length (size * scale).
        length = size * scale
        return x * (size - 1) / (length - 1) if out > 1 else xp.zeros(out)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if out > 1:
            return start * (size - 1) + x * (end - start) * (size - 1) / (out - 1)
        return xp.full(out, 0.5 * (start + end) * (size - 1))
    raise _bad(f"Resize: unknown coordinate_transformation_mode {mode!r}")


def _nearest(xp, c, rule: str):
    if rule == "round_prefer_floor":
        return xp.ceil(c - 0.5)
    if rule == "round_prefer_ceil":
        return xp.floor(c + 0.5)
    if rule == "floor":
        return xp.floor(c)
    if rule == "ceil":
        return xp.ceil(c)
    raise _bad(f"Resize: unknown nearest_mode {rule!r}")


def _cubic_weights(xp, t, a: float):
    t1, t2, t3 = t + 1, 1 - t, 2 - t
    return [
        ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1,
        ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a,
    ]


def _resize_axis(xp, x, axis: int, out: int, scale: float, roi, attrs):
    size = x.shape[axis]
    c = _original_coords(xp, out, size, scale, attrs["coordinate_transformation_mode"], roi)
    mode = attrs["mode"]
    if mode == "nearest":
        idx = xp.clip(_nearest(xp, c, attrs["nearest_mode"]), 0, size - 1).astype(np.int64)
        y = xp.take(x, idx, axis=axis)
    else:
        base = xp.floor(c)
        t = c - base
        base = base.astype(np.int64)
        if mode == "linear":
            offsets, weights = (0, 1), [1 - t, t]
        elif mode == "cubic":
            offsets, weights = (-1, 0, 1, 2), _cubic_weights(xp, t, attrs["cubic_coeff_a"])
        else:
            raise _bad(f"Resize: unknown mode {mode!r}")
        if attrs["exclude_outside"]:
            inside = [((base + o) >= 0) & ((base + o) < size) for o in offsets]
            weights = [w * m for w, m in zip(weights, inside)]
            total = sum(weights)
            weights = [w / xp.where(total == 0, 1, total) for w in weights]
        shape = [1] * x.ndim
        shape[axis] = out
        xf = x.astype(np.float64)
        y = 0
        for o, w in zip(offsets, weights):
            taps = xp.take(xf, xp.clip(base + o, 0, size - 1), axis=axis)
            y = y + taps * w.reshape(shape)
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        shape = [1] * x.ndim
        shape[axis] = out
        outside = ((c < 0) | (c > size - 1)).reshape(shape)
        y = xp.where(outside, attrs["extrapolation_value"], y)
    return y


@_onnx_op(
    "OnnxResize",
    infer=_resize_infer,
    inputs=("X", "roi", "scales", "sizes"),
    attrs=_RESIZE_ATTRS,
    host_inputs=(1, 2, 3),
)
def _resize(
    xp,
    x,
    roi,
    scales,
    sizes,
    *,
    mode,
    coordinate_transformation_mode,
    nearest_mode,
    cubic_coeff_a,
    exclude_outside,
    extrapolation_value,
    axes,
    keep_aspect_ratio_policy,
):
    attrs = {
        "mode": mode,
        "coordinate_transformation_mode": coordinate_transformation_mode,
        "nearest_mode": nearest_mode,
        "cubic_coeff_a": cubic_coeff_a,
        "exclude_outside": exclude_outside,
        "extrapolation_value": extrapolation_value,
        "axes": axes,
        "keep_aspect_ratio_policy": keep_aspect_ratio_policy,
    }
    n = x.ndim
    axes = [a % n for a in attrs["axes"]] if attrs["axes"] else list(range(n))
    roi_h = [float(v) for v in np.asarray(roi.get() if hasattr(roi, "get") else roi).ravel()]
    scales_h = [
        float(v) for v in np.asarray(scales.get() if hasattr(scales, "get") else scales).ravel()
    ]
    sizes_h = _host_ints(xp, sizes)
    if sizes_h:
        if len(sizes_h) != len(axes):
            raise _bad(f"Resize: {len(sizes_h)} sizes for {len(axes)} axes")
        ratios = [s / x.shape[a] for s, a in zip(sizes_h, axes)]
        policy = attrs["keep_aspect_ratio_policy"]
        if policy != "stretch":
            r = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [r] * len(axes)
            sizes_h = [int(np.floor(x.shape[a] * r + 0.5)) for a in axes]
        outs = sizes_h
    elif scales_h:
        if len(scales_h) != len(axes):
            raise _bad(f"Resize: {len(scales_h)} scales for {len(axes)} axes")
        ratios = scales_h
        outs = []
        for k, a in enumerate(axes):
            span = 1.0
            if roi_h and attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
                span = roi_h[k + len(axes)] - roi_h[k]
            outs.append(int(np.floor(x.shape[a] * span * scales_h[k])))
    else:
        raise _bad("Resize: one of scales and sizes is required")
    if any(r <= 0 for r in ratios) or any(o < 0 for o in outs):
        raise _bad(f"Resize: scales must be positive, got {ratios}")
    y = x
    for k, a in enumerate(axes):
        if outs[k] == x.shape[a] and ratios[k] == 1.0 and not roi_h:
            continue
        roi_a = (roi_h[k], roi_h[k + len(axes)]) if roi_h else (0.0, 1.0)
        y = _resize_axis(xp, y, a, outs[k], ratios[k], roi_a, attrs)
    return xp.asarray(y).astype(x.dtype) if y is not x else x.copy()
