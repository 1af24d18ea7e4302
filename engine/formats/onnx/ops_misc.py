"""ONNX-only engine ops for ``mapping_misc.py``: Unique (sorted or in order of first
occurrence, flat or along an axis). Declared like those of ``ops.py``."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx.ops import _onnx_op
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
