"""Array helpers composed from other ops with TensorFlow's formulas: ``eye``, ``linspace``
(``lin_space``), ``meshgrid``, ``sort``, ``argsort`` and ``norm``. They
differentiate, save and run on any device like the ops they are built from.
"""

from __future__ import annotations

import numbers

import numpy as np

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction
from engine.ops import math as math_ops
from engine.ops.nn import top_k

__all__ = ["argsort", "eye", "lin_space", "linspace", "meshgrid", "norm", "sort"]


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """A ``[*batch_shape, num_rows, num_columns]`` identity matrix (ones on the diagonal)."""
    for size in (num_rows, num_columns):
        if isinstance(size, numbers.Integral) and size < 0:
            raise ValueError(f"Invalid value in tensor used for shape: {size}")
    with name_scope(name, "eye", [num_rows, num_columns, batch_shape]):
        n = convert_to_tensor(num_rows, dtype=dtypes.int32, name="num_rows")
        m = n if num_columns is None else convert_to_tensor(num_columns, dtype=dtypes.int32)
        rows = array_ops.expand_dims(array_ops.range(n), 1)
        cols = array_ops.expand_dims(array_ops.range(m), 0)
        matrix = math_ops.cast(math_ops.equal(rows, cols), dtype)
        if batch_shape is None:
            return matrix
        batch = convert_to_tensor(batch_shape, dtype=dtypes.int32, name="batch_shape")
        ones = array_ops.ones(batch, dtype=dtype)
        return array_ops.reshape(ones, array_transform.concat([batch, [1, 1]], 0)) * matrix


def linspace(start, stop, num, name=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive: ``start + i *
    (stop - start) / (num - 1)``, the last exactly ``stop`` (TF's LinSpace kernel)."""
    if axis != 0:
        raise ValueError(f"linspace supports axis=0 only, got {axis}")
    with name_scope(name, "LinSpace", [start, stop, num]) as scope:
        start = convert_to_tensor(start, name="start")
        d = start.dtype.base_dtype
        if not d.is_floating:
            raise TypeError(f"linspace needs floating start and stop, got {d.name}")
        stop = convert_to_tensor(stop, dtype=d, name="stop")
        if start.shape.rank not in (None, 0) or stop.shape.rank not in (None, 0):
            raise ValueError("start and stop must be scalars")
        if isinstance(num, numbers.Integral) and num <= 0:
            raise ValueError(f"Requires num > 0: {num}")
        num = convert_to_tensor(num, name="num")
        if num.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"num must be int32 or int64, got {num.dtype.name}")
        steps = math_ops.maximum(num - 1, 1)
        step = (stop - start) / math_ops.cast(steps, d)
        body = start + step * math_ops.cast(array_ops.range(steps), d)
        last = array_ops.reshape(stop, [1])
        # num == 1: [start]; otherwise the body and stop itself.
        whole = array_transform.concat([body, last], 0)
        return array_ops.identity(whole[: math_ops.maximum(num, 0)], name=scope)


lin_space = linspace


def meshgrid(*args, **kwargs):
    """Coordinate grids from 1-D ``args``: with ``indexing="xy"`` (default) the first two
    dimensions of every output are swapped, as numpy's ``meshgrid``."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"invalid keyword arguments to meshgrid: {', '.join(sorted(kwargs))}")
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with name_scope(name, "meshgrid", args):
        ndim = len(args)
        s0 = (1,) * ndim
        output = [
            array_ops.reshape(convert_to_tensor(x), s0[:i] + (-1,) + s0[i + 1 :])
            for i, x in enumerate(args)
        ]
        shapes = [array_ops.size(x) for x in args]
        dtype = convert_to_tensor(args[0]).dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            output[0] = array_ops.reshape(output[0], (1, -1) + (1,) * (ndim - 2))
            output[1] = array_ops.reshape(output[1], (-1, 1) + (1,) * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        mult = array_ops.ones(array_transform.stack(shapes), dtype)
        return [x * mult for x in output]


def _descending(values: Tensor, axis: int, indices: bool) -> Tensor:
    """TF's sort: ``top_k`` over the whole axis, the axis swapped to the end and back."""
    rank = values.shape.rank
    if rank is None:
        raise ValueError("sort needs a tensor of known rank")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of bounds for a tensor of rank {rank}")
    axis %= rank
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        values = array_ops.transpose(values, perm)
    k = array_ops.shape(values)[-1]
    out = top_k(values, k)[1 if indices else 0]
    return out if perm is None else array_ops.transpose(out, perm)


def _sort(values, axis, direction, indices: bool, name: str):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f'Unknown direction: {direction!r} (expected "ASCENDING" or "DESCENDING")')
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise ValueError(f"axis must be a constant scalar, got {axis!r}")
    with name_scope(name, "sort" if not indices else "argsort", [values]):
        values = convert_to_tensor(values, name="values")
        if direction == "DESCENDING":
            return _descending(values, int(axis), indices)
        # Ascending: the descending sort of an order-reversing map, mapped back. Negation for
        # floats; for integers one that cannot overflow (TF 2.x's): ~x for signed ones
        # (-x overflows at the lowest value), max - x for unsigned ones.
        d = values.dtype.base_dtype
        if d.is_unsigned:
            top = constant(np.iinfo(d.np).max, dtype=d)
            flip = lambda t: top - t  # noqa: E731
        elif d.is_integer:
            flip = math_ops.invert
        else:
            flip = math_ops.negative
        out = _descending(flip(values), int(axis), indices)
        return out if indices else flip(out)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (TF's: the descending sort of ``-values``, negated)."""
    return _sort(values, axis, direction, False, name)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort ``values`` along ``axis``; equal values keep their index
    order (whatever ``stable`` says, as TF's top_k does)."""
    del stable
    return _sort(values, axis, direction, True, name)


_AXIS_ERROR = "'axis' must be None, an integer, or a tuple of 2 unique integers, got {}"


def _norm_axis(axis, ord):  # noqa: A002 - TF's name
    """(axis as a tuple or None, whether a matrix norm) after TF's checks."""
    if isinstance(axis, (tuple, list)) and len(axis) == 2:
        if not all(isinstance(a, int) for a in axis) or axis[0] == axis[1]:
            raise ValueError(_AXIS_ERROR.format(axis))
        if ord not in ("euclidean", "fro", 1, np.inf):
            raise ValueError(
                f"'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, inf] "
                f"(the matrix 2-norm needs an SVD the engine lacks), got {ord}"
            )
        return tuple(axis), True
    if not (axis is None or isinstance(axis, int)):
        raise ValueError(_AXIS_ERROR.format(axis))
    if ord not in ("euclidean", 1, 2, np.inf) and (
        isinstance(ord, str) or not np.isreal(ord) or ord <= 0
    ):
        raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    return (None if axis is None else (axis,)), False


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):  # noqa: A002
    """The vector or matrix norm of ``tensor`` (TF's formulas: Euclidean/Frobenius as
    ``sqrt(sum(x * x))``, 1 and inf norms, positive p-norms; not the matrix 2-norm)."""
    if keep_dims is not None:
        if keepdims is not None:
            raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
        keepdims = keep_dims
    axis, matrix = _norm_axis(axis, ord)
    with name_scope(name, "norm", [tensor]):
        x = convert_to_tensor(tensor)
        if ord in ("fro", "euclidean", 2, 2.0):
            result = math_ops.sqrt(reduction.reduce_sum(x * x, axis, keepdims=True))
        else:
            result = math_ops.abs(x)
            if ord == 1:
                first = None if axis is None else axis[0]
                result = reduction.reduce_sum(result, first, keepdims=True)
                if matrix:
                    result = reduction.reduce_max(result, axis[-1], keepdims=True)
            elif ord == np.inf:
                if matrix:
                    result = reduction.reduce_sum(result, axis[1], keepdims=True)
                first = None if axis is None else axis[0]
                result = reduction.reduce_max(result, first, keepdims=True)
            else:
                powered = reduction.reduce_sum(math_ops.pow(result, ord), axis, keepdims=True)
                result = math_ops.pow(powered, 1.0 / ord)
        if not keepdims:
            result = array_ops.squeeze(result, axis)
        return result
