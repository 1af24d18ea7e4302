"""ONNX-only engine ops for ``mapping_misc.py``: Unique (sorted or in order of first
occurrence, flat or along an axis), and Squeeze/Unsqueeze whose axes are computed at run
time. Declared like those of ``ops.py``."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx.ops import _bad, _host_ints, _onnx_op
from engine.ops._common import ALL, check_dtype
from engine.tensor_shape import TensorShape, unknown_shape

__all__: list[str] = []


def _unique_infer(op):
    dt = check_dtype(op, 0, ALL)
    vector = TensorShape([None])
    axis = op.get_attr("axis")
    shape = op._inputs[0]._shape
    y = vector if axis < 0 else unknown_shape()
    if axis >= 0 and shape.ndims is not None:
        dims = list(shape.as_list())
        dims[axis] = None
        y = TensorShape(dims)
    return [(dt, y), (dtypes.int64, vector), (dtypes.int64, vector), (dtypes.int64, vector)]


@_onnx_op(
    "OnnxUnique",
    infer=_unique_infer,
    inputs=("x",),
    cpu_only=True,
    attrs=[("axis", "int"), ("sorted", "int")],
)
def _unique(xp, x, *, axis, sorted):  # noqa: A002 - ONNX's attribute name
    x = np.asarray(x)
    flat = axis < 0
    data = x.reshape(-1) if flat else x
    y, first, inverse, counts = np.unique(
        data,
        return_index=True,
        return_inverse=True,
        return_counts=True,
        axis=None if flat else axis,
        equal_nan=False,
    )
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")
        y = y[order] if flat else np.take(y, order, axis=axis)
        first, counts = first[order], counts[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        inverse = rank[inverse]
    i64 = np.int64
    return y.astype(x.dtype), first.astype(i64), inverse.astype(i64), counts.astype(i64)


# -----------------------------------------------------------------------------------------
# Squeeze / Unsqueeze with axes computed at run time
# -----------------------------------------------------------------------------------------


def _axes_count(op) -> int | None:
    dims = op._inputs[1]._shape.as_tuple()
    return None if dims is None or len(dims) != 1 else dims[0]


def _unsqueeze_infer(op):
    x, k = op._inputs[0]._shape, _axes_count(op)
    check_dtype(op, 1, (dtypes.int64,))
    rank = None if x.ndims is None or k is None else x.ndims + k
    return [(check_dtype(op, 0, ALL), unknown_shape(rank))]


def _squeeze_infer(op):
    check_dtype(op, 1, (dtypes.int64,))
    return [(check_dtype(op, 0, ALL), unknown_shape())]


def _normalized_axes(axes, rank: int, what: str) -> list[int]:
    out = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise _bad(f"{what}: axis {a} is out of range for rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise _bad(f"{what}: repeated axes {np.asarray(axes).tolist()}")
    return out


@_onnx_op(
    "OnnxUnsqueeze", infer=_unsqueeze_infer, inputs=("x", "axes"), host_inputs=(1,), aliases=True
)
def _unsqueeze(xp, x, axes):
    axes_h = _host_ints(xp, axes)
    out_rank = x.ndim + len(axes_h)
    for a in sorted(_normalized_axes(axes_h, out_rank, "Unsqueeze")):
        x = xp.expand_dims(x, a)
    return x


@_onnx_op("OnnxSqueeze", infer=_squeeze_infer, inputs=("x", "axes"), host_inputs=(1,), aliases=True)
def _squeeze(xp, x, axes):
    found = _normalized_axes(_host_ints(xp, axes), x.ndim, "Squeeze")
    for a in found:
        if x.shape[a] != 1:
            raise _bad(f"Squeeze: dimension {a} of shape {list(x.shape)} is not 1")
    return xp.squeeze(x, axis=tuple(found)) if found else xp.squeeze(x)


# -----------------------------------------------------------------------------------------
# Dilated pooling windows (MaxPool/AveragePool/LpPool with dilations), on padded N, C, ... data
# -----------------------------------------------------------------------------------------


def _window_pool_infer(op):
    x = op._inputs[0]._shape
    k, s, d = (op.get_attr(a) for a in ("kernel", "strides", "dilations"))
    if x.ndims is None:
        return [(check_dtype(op, 0, ALL), unknown_shape())]
    dims = x.as_list()
    out = dims[:2]
    for size, ki, si, di in zip(dims[2:], k, s, d):
        out.append(None if size is None else max((size - ((ki - 1) * di + 1)) // si + 1, 0))
    return [(check_dtype(op, 0, ALL), TensorShape(out))]


@_onnx_op(
    "OnnxWindowPool",
    infer=_window_pool_infer,
    inputs=("x",),
    attrs=[
        ("mode", "string"),
        ("kernel", "list(int)"),
        ("strides", "list(int)"),
        ("dilations", "list(int)"),
    ],
)
def _window_pool(xp, x, *, mode, kernel, strides, dilations):
    """The max or the sum over each (dilated) window of the already padded ``x``, tap by tap
    over strided views (no window copied)."""
    n = len(kernel)
    if x.ndim != n + 2 or len(strides) != n or len(dilations) != n:
        raise _bad(f"window pool: {n} window dims for input of rank {x.ndim}")
    if mode not in ("max", "sum"):
        raise _bad(f"window pool: unknown mode {mode!r}")
    out_sizes = [
        (size - ((k - 1) * d + 1)) // s + 1
        for size, k, s, d in zip(x.shape[2:], kernel, strides, dilations)
    ]
    if min(out_sizes, default=1) <= 0:
        return xp.zeros(x.shape[:2] + tuple(max(o, 0) for o in out_sizes), x.dtype)
    out = None
    for tap in np.ndindex(*kernel):
        index = (slice(None), slice(None)) + tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s)
            for t, d, o, s in zip(tap, dilations, out_sizes, strides)
        )
        window = x[index]
        if out is None:
            out = window.copy()
        elif mode == "max":
            xp.maximum(out, window, out=out)
        else:
            out += window
    return out
