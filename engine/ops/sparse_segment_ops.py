"""Sparse segment reductions: ``SparseSegmentSum``/``Mean``/``SqrtN`` (and their
``WithNumSegments`` forms), the rows ``data[indices]`` reduced per sorted ``segment_ids``, with
TF's gradient ops ``SparseSegment{Sum,Mean,SqrtN}Grad``.

These are what ``tf.nn.embedding_lookup_sparse`` and feature columns' ``embedding_column``
build. Checks and messages follow TF's CPU kernels: ids must never decrease, an index outside
``[0, data rows)`` or a segment id outside the output raises ``InvalidArgumentError``. Empty
segments are 0 (mean and sqrt-n divide by ``max(count, 1)``). Half floats accumulate in
float32. The gradient ops scatter each segment's gradient (scaled by ``1/count`` or
``1/sqrt(count)``) back onto the rows it was read from.

    >>> sparse_segment_sum([[1.0], [2.0], [4.0]], [0, 2, 1], [0, 0, 1])  # [[5], [2]]
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.registry import Attr, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops._common import FLOATS, INDEX, NUMERIC, base, check_dtype, create, scatter_add
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n"]

_KINDS = {"Sum": "sum", "Mean": "mean", "SqrtN": "sqrtn"}


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _acc_dtype(dtype):
    return np.float32 if dtype == np.float16 else dtype


def _scale(xp, kind: str, segment_ids, n: int, dtype):
    """Per output row, what its sum is multiplied by: 1, 1/count or 1/sqrt(count)."""
    counts = xp.bincount(segment_ids.astype(np.int64), minlength=n)[:n].astype(dtype)
    counts = xp.maximum(counts, 1)
    return 1 / counts if kind == "mean" else 1 / xp.sqrt(counts)


def _check_indices(xp, indices, rows: int) -> None:
    bad = (indices < 0) | (indices >= rows)
    if bool(bad.any()):
        i = int(xp.argmax(bad))
        raise _invalid(f"Bad: indices[{i}] == {int(indices[i])} out of range [0, {rows})")


def _check_ids(xp, indices, segment_ids, n: int | None) -> int:
    """TF's checks of the index vectors; the number of output rows."""
    if indices.ndim != 1:
        raise _invalid("indices should be a vector.")
    if segment_ids.ndim != 1:
        raise _invalid("segment_ids should be a vector.")
    m = indices.shape[0]
    if m != segment_ids.shape[0]:
        raise _invalid("segment_ids and indices should have same size.")
    last = int(segment_ids[-1]) + 1 if m else 0
    if n is None:
        n = last
    elif n < last:
        raise _invalid("segment ids must be < num_segments")
    if n < 0:
        raise _invalid("segment ids must be >= 0")
    if m > 1 and bool((segment_ids[1:] < segment_ids[:-1]).any()):
        raise _invalid("segment ids are not increasing")
    if m and int(segment_ids[0]) < 0:
        raise _invalid(
            f"Segment id {int(segment_ids[0])} out of range [0, {n}), possibly because "
            "'segment_ids' input is not sorted."
        )
    return n


def _reduce(xp, kind: str, data, indices, segment_ids, num_segments=None):
    if data.ndim == 0:
        raise _invalid("input must be at least rank 1")
    n = _check_ids(xp, indices, segment_ids, None if num_segments is None else int(num_segments))
    _check_indices(xp, indices, data.shape[0])
    acc = _acc_dtype(data.dtype)
    out = xp.zeros((n,) + data.shape[1:], dtype=acc)
    if indices.shape[0]:
        scatter_add(xp, out, segment_ids, data[indices].astype(acc, copy=False))
    if kind != "sum":
        out *= _scale(xp, kind, segment_ids, n, acc).reshape((n,) + (1,) * (data.ndim - 1))
    return out.astype(data.dtype, copy=False)


def _reduce_grad(xp, kind: str, grad, indices, segment_ids, output_dim0):
    n0 = int(output_dim0)
    if indices.ndim != 1 or segment_ids.ndim != 1 or indices.shape != segment_ids.shape:
        raise _invalid("indices and segment_ids should be vectors of the same size")
    if grad.ndim == 0:
        raise _invalid("grad must be at least rank 1")
    n = grad.shape[0]
    bad = (segment_ids < 0) | (segment_ids >= n)
    if bool(bad.any()):
        i = int(xp.argmax(bad))
        raise _invalid(f"Segment id {int(segment_ids[i])} out of range [0, {n}).")
    _check_indices(xp, indices, n0)
    acc = _acc_dtype(grad.dtype)
    rows = grad.astype(acc, copy=False)
    if kind != "sum":
        rows = rows * _scale(xp, kind, segment_ids, n, acc).reshape((n,) + (1,) * (grad.ndim - 1))
    out = xp.zeros((n0,) + grad.shape[1:], dtype=acc)
    if indices.shape[0]:
        scatter_add(xp, out, indices, rows[segment_ids])
    return out.astype(grad.dtype, copy=False)


# -- shapes ---------------------------------------------------------------------------------


def _rank1(o, i: int, what: str) -> int | None:
    shape = o._inputs[i]._shape
    if shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {shape.rank} (the {what})")
    return None if shape.rank is None else shape.dims[0]


def _infer(allowed):
    def infer(o):
        dtype = check_dtype(o, 0, allowed)
        check_dtype(o, 1, INDEX, "Tidx")
        check_dtype(o, 2, INDEX, "Tsegmentids")
        a, b = _rank1(o, 1, "indices"), _rank1(o, 2, "segment_ids")
        if a is not None and b is not None and a != b:
            raise ShapeError(
                f"Dimension 0 in both shapes must be equal, but are {a} and {b}. Shapes are "
                f"[{a}] and [{b}]."
            )
        data = o._inputs[0]._shape
        if data.rank is None:
            return [(dtype, unknown_shape())]
        if data.rank == 0:
            raise ShapeError("Shape must be at least rank 1 but is rank 0")
        rows = None
        if len(o._inputs) == 4:
            check_dtype(o, 3, INDEX, "Tnumsegments")
            if o._inputs[3]._shape.rank not in (None, 0):
                raise ShapeError(f"Shape must be rank 0 but is rank {o._inputs[3]._shape.rank}")
            v = constant_value(o._inputs[3])
            rows = None if v is None else int(v)
        return [(dtype, TensorShape([rows]).concatenate(data[1:]))]

    return infer


def _grad_infer(o):
    dtype = check_dtype(o, 0, FLOATS)
    check_dtype(o, 1, INDEX, "Tidx")
    check_dtype(o, 2, INDEX, "Tsegmentids")
    _rank1(o, 1, "indices")
    _rank1(o, 2, "segment_ids")
    grad = o._inputs[0]._shape
    v = constant_value(o._inputs[3])
    rows = None if v is None else int(v)
    if grad.rank is None:
        return [(dtype, unknown_shape())]
    return [(dtype, TensorShape([rows]).concatenate(grad[1:]))]


def _gradient(kind: str):
    """TF's: ``SparseSegment<Kind>Grad`` of the output gradient onto ``data``'s rows."""

    def grad(o, g):
        data, indices, segment_ids = o.inputs[:3]
        dim0 = array_ops.shape(data, out_type=base(indices))[0]
        dx = create(f"SparseSegment{kind}Grad", [g, indices, segment_ids, dim0]).outputs[0]
        return [dx] + [None] * (len(o.inputs) - 1)

    return grad


_ATTRS = (Attr("sparse_gradient", "bool", default=False),)


def _register(kind: str) -> None:
    allowed = NUMERIC if kind == "Sum" else FLOATS
    mode = _KINDS[kind]

    def kernel(xp, data, indices, segment_ids, *, sparse_gradient=False):
        return _reduce(xp, mode, data, indices, segment_ids)

    def kernel_n(xp, data, indices, segment_ids, num_segments, *, sparse_gradient=False):
        return _reduce(xp, mode, data, indices, segment_ids, num_segments)

    def grad_kernel(xp, grad, indices, segment_ids, output_dim0):
        return _reduce_grad(xp, mode, grad, indices, segment_ids, output_dim0)

    names = ("data", "indices", "segment_ids")
    fwd = dict(infer=_infer(allowed), grad=_gradient(kind), attrs=_ATTRS)
    op(f"SparseSegment{kind}", inputs=names, **fwd)(kernel)
    op(f"SparseSegment{kind}WithNumSegments", inputs=(*names, "num_segments"), **fwd)(kernel_n)
    op(
        f"SparseSegment{kind}Grad",
        infer=_grad_infer,
        differentiable=False,
        inputs=("grad", "indices", "segment_ids", "output_dim0"),
    )(grad_kernel)


for _kind in _KINDS:
    _register(_kind)


# -- the Python API -------------------------------------------------------------------------


def _build(kind: str, default_name: str):
    def fn(data, indices, segment_ids, name=None, num_segments=None, sparse_gradient=False):
        with name_scope(name, default_name, [data, indices, segment_ids]) as scope:
            data = convert_to_tensor(data, name="data")
            indices = convert_to_tensor(indices, name="indices")
            segment_ids = convert_to_tensor(segment_ids, name="segment_ids")
            if base(indices) not in INDEX:
                indices = math_ops.cast(indices, dtypes.int32)
            if base(segment_ids) not in INDEX:
                segment_ids = math_ops.cast(segment_ids, dtypes.int32)
            inputs = [data, indices, segment_ids]
            op_type = f"SparseSegment{kind}"
            if num_segments is not None:
                inputs.append(convert_to_tensor(num_segments, name="num_segments"))
                op_type += "WithNumSegments"
            attrs = {"sparse_gradient": bool(sparse_gradient)}
            return create(op_type, inputs, attrs, scope).outputs[0]

    fn.__name__ = default_name
    fn.__doc__ = (
        f"``tf.sparse.{default_name[len('sparse_') :]}``: the rows ``data[indices]`` reduced "
        "(sum, mean or sum / sqrt(count)) per sorted ``segment_ids``; ``num_segments`` fixes "
        "the number of output rows."
    )
    return fn


sparse_segment_sum = _build("Sum", "sparse_segment_sum")
sparse_segment_mean = _build("Mean", "sparse_segment_mean")
sparse_segment_sqrt_n = _build("SqrtN", "sparse_segment_sqrt_n")
