"""Linear algebra composed from array and math ops: ``tensordot``."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing
from engine.ops import math as math_ops

__all__ = ["tensordot"]


def tensordot(a, b, axes, name=None) -> Tensor:
    """Sums the products of ``a`` and ``b`` over the given axes (numpy's ``tensordot``).

    ``axes`` is an int ``N`` (the last N axes of ``a`` against the first N of ``b``) or a pair
    ``[a_axes, b_axes]`` of equally long lists (or of two ints). The contraction is a
    transpose and reshape of each side to a matrix, one ``matmul`` and a reshape back, as TF
    composes it; dimensions unknown while building stay unknown in the static shape.

    >>> tensordot(ones([2, 3, 4]), ones([4, 3, 5]), [[1, 2], [1, 0]]).shape  # (2, 5)
    """
    with name_scope(name, "Tensordot", [a, b]) as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        a_axes, b_axes, a_free, b_free = _tensordot_axes(a, b, axes)
        a_mat, a_free_dims, a_free_static = _to_matrix(a, a_axes, a_free)
        b_mat, b_free_dims, b_free_static = _to_matrix(b, b_axes, b_free, flipped=True)
        product = math_ops.matmul(a_mat, b_mat)
        if isinstance(a_free_dims, list) and isinstance(b_free_dims, list):
            out_dims = a_free_dims + b_free_dims
            if product.shape.is_fully_defined() and product.shape.as_list() == out_dims:
                return product
            return array_ops.reshape(product, out_dims, name=scope)
        a_free_dims = convert_to_tensor(a_free_dims, dtype=dtypes.int32)
        b_free_dims = convert_to_tensor(b_free_dims, dtype=dtypes.int32)
        out = array_ops.reshape(
            product, array_transform.concat([a_free_dims, b_free_dims], 0), name=scope
        )
        if a_free_static is not None and b_free_static is not None:
            out.set_shape(a_free_static + b_free_static)
        return out


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _tensordot_axes(a, b, axes):
    """``(a_axes, b_axes, a_free, b_free)``; the free axes are tensors only when an int
    ``axes`` meets an unknown rank (they are then ranges), else None (derived later)."""
    if isinstance(axes, Tensor):
        value = constant_value(axes)
        if value is None:
            raise ValueError(f"tensordot needs `axes` known while building the graph; got {axes}.")
        axes = value
    if isinstance(axes, np.ndarray):
        axes = axes.item() if axes.ndim == 0 else axes.tolist()
    if _is_int(axes):
        n = int(axes)
        if n < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {n}.")
        a_rank, b_rank = a.shape.rank, b.shape.rank
        if a_rank is not None:
            if n > a_rank:
                raise ValueError(
                    f"`axes` must not be larger than the number of dimensions of "
                    f"tensor {a}.  Received {n}, vs tensor dimensions {a_rank}."
                )
            a_axes, a_free = list(range(a_rank - n, a_rank)), None
        else:
            rank_a = array_ops.rank(a)
            split = rank_a - n
            a_axes = array_ops.range(split, rank_a)
            a_free = array_ops.range(0, split)
        b_free = None if b_rank is not None else array_ops.range(n, array_ops.rank(b))
        return a_axes, list(range(n)), a_free, b_free
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
        a_axes, b_axes = axes
        if _is_int(a_axes) and _is_int(b_axes):
            a_axes, b_axes = [a_axes], [b_axes]
        a_axes, b_axes = [int(i) for i in a_axes], [int(i) for i in b_axes]
        if len(a_axes) != len(b_axes):
            raise ValueError(
                f"Different number of contraction axes `a` and `b`, {len(a_axes)} != {len(b_axes)}."
            )
        return a_axes, b_axes, None, None
    raise TypeError(f"`axes` must be an int or a pair of lists of ints, got {axes!r}.")


def _to_matrix(a, axes, free=None, flipped=False):
    """``a`` transposed and reshaped to ``[prod(free), prod(axes)]`` (flipped: the other way).

    Returns ``(matrix, free_dims, free_dims_static)``: ``free_dims`` is a list of ints when
    ``a``'s shape is fully known, else an int32 tensor; ``free_dims_static`` is the list of
    known-or-None free dims, or None when the rank is unknown.
    """
    shape = a.shape
    if free is None and isinstance(axes, list) and shape.rank is not None:
        rank = shape.rank
        axes = [i + rank if i < 0 else i for i in axes]
        free_list = [i for i in range(rank) if i not in axes]
        dims = shape.as_list()
        free_dims = [dims[i] for i in free_list]
        if shape.is_fully_defined():
            prod_free = int(np.prod(free_dims, dtype=np.int64))
            prod_axes = int(np.prod([dims[i] for i in axes], dtype=np.int64))
            perm = axes + free_list if flipped else free_list + axes
            new_shape = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
            if perm != list(range(rank)):
                a = array_ops.transpose(a, perm)
            if a.shape.as_list() != new_shape:
                a = array_ops.reshape(a, new_shape)
            return a, free_dims, free_dims
        free_dims_static = free_dims
        axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        free = convert_to_tensor(free_list, dtype=dtypes.int32, name="free")
        shape_a = array_ops.shape(a)
    else:
        free_dims_static = None
        shape_a = array_ops.shape(a)
        if free is None:
            rank_a = array_ops.rank(a)
            axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
            axes = math_ops.where(axes >= 0, axes, axes + rank_a)
            free = _complement(array_ops.range(0, rank_a), axes)
        elif not isinstance(axes, Tensor):
            axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
    free_dims = slicing.gather(shape_a, free)
    axes_dims = slicing.gather(shape_a, axes)
    prod_free = reduction.reduce_prod(free_dims)
    prod_axes = reduction.reduce_prod(axes_dims)
    if flipped:
        perm = array_transform.concat([axes, free], 0)
        new_shape = array_transform.stack([prod_axes, prod_free])
    else:
        perm = array_transform.concat([free, axes], 0)
        new_shape = array_transform.stack([prod_free, prod_axes])
    matrix = array_ops.reshape(array_ops.transpose(a, perm), new_shape)
    return matrix, free_dims, free_dims_static


def _complement(indices, axes):
    """The entries of the 1-D ``indices`` not in ``axes``, in order (TF's ``ListDiff``).

    Composed from reductions: with ``c`` the running count of kept entries, the j-th kept
    entry sits at position ``#{i : c[i] <= j}``; ``indices`` is ``range(rank)``, so the
    position is the value.
    """
    keep = reduction.reduce_all(
        math_ops.not_equal(array_ops.reshape(indices, [-1, 1]), axes), axis=1
    )
    keep = math_ops.cast(keep, dtypes.int32)
    running = reduction.cumsum(keep)
    j = array_ops.range(0, reduction.reduce_sum(keep))
    before = math_ops.less_equal(running, array_ops.reshape(j, [-1, 1]))
    return reduction.reduce_sum(math_ops.cast(before, dtypes.int32), axis=1)
