"""Kernels of TF's sparse ops that rearrange the stored entries: ``SparseReorder``,
``SparseReshape``, ``SparseConcat``, ``SparseAdd`` (with ``SparseAddGrad``),
``SparseFillEmptyRows`` (with ``SparseFillEmptyRowsGrad``), ``SparseSlice`` (with
``SparseSliceGrad``) and ``SparseSplit``.

Their outputs have data-dependent entry counts, so the leading dimension of output indices
and values is unknown statically. Orderings are TF's: results are in row-major order when
the inputs are (``SparseAdd`` merges, ``SparseConcat`` sorts, ``SparseFillEmptyRows`` groups
by row keeping the input order within a row). Gradients flow to the values only (TF's
``sparse_grad.py``); ``SparseReshape``, ``SparseConcat`` and ``SparseSplit`` have none,
as in TF.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.graph import Tensor
from engine.framework.registry import Attr, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import slicing
from engine.ops._common import check_same_dtype, create, scatter_add
from engine.ops.sparse_ops import (
    dims_text,
    host_ints,
    invalid,
    linear_index,
    sparse_input_infer,
    unravel,
)
from engine.tensor_shape import TensorShape

__all__ = [
    "sparse_reorder",
    "sparse_reshape",
    "sparse_concat",
    "sparse_add",
    "sparse_add_grad",
    "sparse_fill_empty_rows",
    "sparse_slice",
    "sparse_split",
]


def _row_major_order(xp, indices):
    """The stable permutation putting ``indices`` rows in row-major (lexicographic) order."""
    if indices.shape[0] == 0 or indices.shape[1] == 0:
        return xp.arange(indices.shape[0])
    keys = [indices[:, j] for j in range(indices.shape[1] - 1, -1, -1)]
    return xp.lexsort(xp.stack(keys))


def _entries(o, first: int = 0) -> TensorShape:
    return TensorShape([o._inputs[first + 1]._shape.with_rank(1).as_list()[0]])


# -- SparseReorder ------------------------------------------------------------------------


def _reorder_infer(o):
    d, rank = sparse_input_infer(o)
    n = _entries(o).as_list()[0]
    return [(dtypes.int64, TensorShape([n, rank])), (d, TensorShape([n]))]


def _reorder_grad(o, _g_indices, g_values):
    """TF's: the values' gradient put back in the input order."""
    indices, _, shape = o.inputs
    n = array_ops.shape(indices, out_type=dtypes.int64)[0]
    _, order = sparse_reorder(indices, array_ops.range(n), shape)
    return [None, slicing.gather(g_values, array_ops.invert_permutation(order)), None]


@op(
    "SparseReorder",
    infer=_reorder_infer,
    inputs=("input_indices", "input_values", "input_shape"),
    grad=_reorder_grad,
)
def _reorder_kernel(xp, indices, values, shape):
    order = _row_major_order(xp, indices)
    return indices[order], values[order]


def sparse_reorder(indices, values, shape, name=None) -> tuple[Tensor, Tensor]:
    """The op: (indices, values) in row-major order."""
    o = create("SparseReorder", [indices, values, shape], {}, name)
    return tuple(o.outputs)


# -- SparseReshape ------------------------------------------------------------------------


def _reshape_infer(o):
    n = o._inputs[0]._shape.with_rank(2).as_list()[0]
    r = o._inputs[2]._shape.with_rank(1).as_list()[0]
    return [(dtypes.int64, TensorShape([n, r])), (dtypes.int64, TensorShape([r]))]


def _reshaped(in_shape: list[int], requested: list[int]) -> list[int]:
    """``requested`` with its -1 resolved; TF's errors for impossible shapes."""
    unknown = -1
    product = 1
    for i, d in enumerate(requested):
        if d == -1:
            if unknown != -1:
                raise invalid(f"only one output dimension may be -1, not both {unknown} and {i}")
            unknown = i
        elif d < 0:
            raise invalid(f"size {i} must be non-negative, not {d}")
        else:
            product *= d
    dense = int(np.prod(in_shape, dtype=np.int64))
    out = list(requested)
    if unknown != -1:
        if product == 0 or dense % product:
            raise invalid(
                f"Input to reshape is a SparseTensor with {dense} dense values, but the "
                f"requested shape requires a multiple of {product}. input_shape="
                f"{dims_text(in_shape)} output_shape={dims_text(requested)}"
            )
        out[unknown] = dense // product
    if int(np.prod(out, dtype=np.int64)) != dense:
        raise invalid(
            f"Input to reshape is a tensor with {dense} dense values, but the requested "
            f"shape has {int(np.prod(out, dtype=np.int64))}. input_shape="
            f"{dims_text(in_shape)} output_shape={dims_text(out)}"
        )
    return out


@op(
    "SparseReshape",
    infer=_reshape_infer,
    inputs=("input_indices", "input_shape", "new_shape"),
    differentiable=False,
)
def _reshape_kernel(xp, indices, shape, new_shape):
    in_shape = host_ints(shape)
    out_shape = _reshaped(in_shape, host_ints(new_shape))
    out = unravel(xp, linear_index(xp, indices, in_shape), out_shape)
    return out, xp.asarray(out_shape, dtype=np.int64)


def sparse_reshape(indices, shape, new_shape, name=None) -> tuple[Tensor, Tensor]:
    """The op: (indices, shape) of the same entries in a tensor of ``new_shape``."""
    return tuple(create("SparseReshape", [indices, shape, new_shape], {}, name).outputs)


# -- SparseConcat ------------------------------------------------------------------------


def _concat_infer(o):
    n = len(o._inputs) // 3
    d = check_same_dtype(o, range(n, 2 * n))
    rank = None
    for t in o._inputs[2 * n :]:
        r = t._shape.with_rank(1).as_list()[0]
        rank = r if rank is None else rank
    counts = [t._shape.with_rank(1).as_list()[0] for t in o._inputs[n : 2 * n]]
    total = None if None in counts else sum(counts)
    return [
        (dtypes.int64, TensorShape([total, rank])),
        (d, TensorShape([total])),
        (dtypes.int64, TensorShape([rank])),
    ]


def _concat_check(shapes: list[list[int]], dim: int) -> int:
    rank = len(shapes[0])
    if not -rank <= dim < rank:
        raise invalid(f"Concat dimension must be in range [{-rank}, {rank}), got {dim}")
    dim %= rank
    for pos, s in enumerate(shapes[1:], 1):
        if len(s) != rank:
            raise invalid(
                f"Ranks of all input tensors must match: expected {rank} but got {len(s)} at "
                f"position {pos}"
            )
        for j in range(rank):
            if j != dim and s[j] != shapes[0][j]:
                raise invalid(
                    f"Input shapes must match: expected {shapes[0][j]} for dimension {j} but "
                    f"got {s[j]} at position {pos}"
                )
    return dim


@op(
    "SparseConcat",
    infer=_concat_infer,
    inputs=("indices*",),
    attrs=(Attr("concat_dim", "int"),),
    differentiable=False,
)
def _concat_kernel(xp, *parts, concat_dim):
    n = len(parts) // 3
    shapes = [host_ints(s) for s in parts[2 * n :]]
    dim = _concat_check(shapes, concat_dim)
    offset = 0
    indices = []
    for ind, s in zip(parts[:n], shapes):
        shifted = ind.astype(np.int64, copy=True)
        shifted[:, dim] += offset
        indices.append(shifted)
        offset += s[dim]
    ind = xp.concatenate(indices, axis=0)
    vals = xp.concatenate(parts[n : 2 * n], axis=0)
    out_shape = list(shapes[0])
    out_shape[dim] = offset
    order = _row_major_order(xp, ind)
    return ind[order], vals[order], xp.asarray(out_shape, dtype=np.int64)


def sparse_concat(concat_dim: int, indices, values, shapes, name=None):
    """The op: (indices, values, shape) of the inputs joined along ``concat_dim``."""
    ins = [*indices, *values, *shapes]
    o = create("SparseConcat", ins, {"concat_dim": int(concat_dim)}, name)
    return tuple(o.outputs)


# -- SparseAdd, SparseAddGrad -----------------------------------------------------------


def _add_infer(o):
    d, rank = sparse_input_infer(o, 0)
    _, rank_b = sparse_input_infer(o, 3)
    check_same_dtype(o, (1, 4))
    r = rank if rank is not None else rank_b
    return [
        (dtypes.int64, TensorShape([None, r])),
        (d, TensorShape([None])),
        (dtypes.int64, TensorShape([r])),
    ]


def _add_grad(o, _g_indices, g_values, _g_shape):
    a_grad, b_grad = sparse_add_grad(g_values, o.inputs[0], o.inputs[3], o.outputs[0])
    return [None, a_grad, None, None, b_grad, None, None]


def _check_add_shapes(xp, a_indices, a_shape, b_indices, b_shape) -> list[int]:
    if a_indices.shape[1] != b_indices.shape[1]:
        raise invalid(
            f"Input indices must have the same dimension, got {a_indices.shape[1]} and "
            f"{b_indices.shape[1]}"
        )
    sa, sb = host_ints(a_shape), host_ints(b_shape)
    if len(sa) != len(sb):
        raise invalid(
            f"Operands do not have the same ranks; got shapes: {dims_text(sa)} and {dims_text(sb)}"
        )
    for j, (x, y) in enumerate(zip(sa, sb)):
        if x != y:
            raise invalid(f"Operands' shapes do not match: got {x} and {y} for dimension {j}")
    return sa


def _groups(xp, indices):
    """(row-major order, start-of-group flags in that order, group of each sorted entry) of
    ``indices``, equal rows forming one group."""
    order = _row_major_order(xp, indices)
    ordered = indices[order]
    n = ordered.shape[0]
    starts = xp.ones(n, dtype=bool)
    if n > 1:
        starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    return order, starts, xp.cumsum(starts) - 1


@op(
    "SparseAdd",
    infer=_add_infer,
    inputs=("a_indices", "a_values", "a_shape", "b_indices", "b_values", "b_shape", "thresh"),
    grad=_add_grad,
)
def _add_kernel(xp, a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    _check_add_shapes(xp, a_indices, a_shape, b_indices, b_shape)
    ind = xp.concatenate([a_indices, b_indices], axis=0)
    vals = xp.concatenate([a_values, b_values], axis=0)
    order, starts, group = _groups(xp, ind)
    n = int(starts.sum()) if starts.shape[0] else 0
    sums = xp.zeros(n, dtype=vals.dtype)
    scatter_add(xp, sums, group, vals[order])
    out_ind = ind[order][starts]
    # TF's threshold drops small sums only; an entry of one operand alone is always kept.
    alone = xp.bincount(group, minlength=n) == 1 if n else xp.zeros(0, dtype=bool)
    keep = alone | (xp.abs(sums) >= thresh)
    return out_ind[keep], sums[keep], a_shape.copy()


def sparse_add(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh, name=None):
    """The op: (indices, values, shape) of the sum of two sparse operands, entries whose
    magnitude is below ``thresh`` dropped."""
    ins = [a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh]
    return tuple(create("SparseAdd", ins, {}, name).outputs)


def _add_grad_infer(o):
    d = o._inputs[0]._dtype.base_dtype
    na = o._inputs[1]._shape.with_rank(2).as_list()[0]
    nb = o._inputs[2]._shape.with_rank(2).as_list()[0]
    return [(d, TensorShape([na])), (d, TensorShape([nb]))]


def _positions_in(xp, sum_indices, indices):
    """For each row of ``indices``, its row in ``sum_indices`` (-1 where absent)."""
    if indices.shape[0] == 0 or sum_indices.shape[0] == 0:
        return xp.full(indices.shape[0], -1, dtype=np.int64)
    both = xp.concatenate([sum_indices, indices], axis=0)
    dims = (both.max(axis=0) + 1).tolist() if both.shape[1] else []
    keys = linear_index(xp, sum_indices, dims)
    queries = linear_index(xp, indices, dims)
    order = xp.argsort(keys)
    at = xp.searchsorted(keys[order], queries)
    at = xp.minimum(at, keys.shape[0] - 1)
    found = keys[order][at] == queries
    return xp.where(found, order[at], -1)


@op(
    "SparseAddGrad",
    infer=_add_grad_infer,
    inputs=("backprop_val_grad", "a_indices", "b_indices", "sum_indices"),
    differentiable=False,
)
def _add_grad_kernel(xp, grad, a_indices, b_indices, sum_indices):
    out = []
    for ind in (a_indices, b_indices):
        at = _positions_in(xp, sum_indices, ind)
        picked = grad[xp.maximum(at, 0)] if grad.shape[0] else xp.zeros(at.shape, grad.dtype)
        out.append(xp.where(at >= 0, picked, xp.zeros_like(picked)).astype(grad.dtype))
    return tuple(out)


def sparse_add_grad(grad, a_indices, b_indices, sum_indices, name=None):
    """The op: the values' gradients of the two operands of a SparseAdd."""
    ins = [grad, a_indices, b_indices, sum_indices]
    return tuple(create("SparseAddGrad", ins, {}, name).outputs)


# -- SparseFillEmptyRows, SparseFillEmptyRowsGrad -----------------------------------------


def _fill_infer(o):
    d, rank = sparse_input_infer(o)
    check_same_dtype(o, (1, 3))
    if o._inputs[3]._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {o._inputs[3]._shape.rank}")
    n = _entries(o).as_list()[0]
    shape = constant_value(o._inputs[2])
    rows = int(shape.reshape(-1)[0]) if shape is not None and shape.size else None
    return [
        (dtypes.int64, TensorShape([None, rank])),
        (d, TensorShape([None])),
        (dtypes.bool, TensorShape([rows])),
        (dtypes.int64, TensorShape([n])),
    ]


@op(
    "SparseFillEmptyRows",
    infer=_fill_infer,
    inputs=("indices", "values", "dense_shape", "default_value"),
    grad=lambda o, _gi, g_values, _ge, _gr: _fill_values_grad(o, g_values),
)
def _fill_kernel(xp, indices, values, dense_shape, default_value):
    shape = host_ints(dense_shape)
    if not shape:
        raise invalid("Dense shape cannot be empty.")
    rows_n, n = shape[0], indices.shape[0]
    rows = indices[:, 0].astype(np.int64, copy=False)
    bad = (rows < 0) | (rows >= rows_n)
    if bool(bad.any()):
        i = int(xp.argmax(bad))
        r = int(rows[i])
        why = f"{r} < 0" if r < 0 else f"{r} >= {rows_n}"
        raise invalid(f"indices({i}, 0) is invalid: {why}")
    counts = xp.bincount(rows, minlength=rows_n) if n else xp.zeros(rows_n, np.int64)
    empty = counts == 0
    per_row = xp.where(empty, 1, counts)
    starts = xp.cumsum(per_row) - per_row
    order = xp.argsort(rows, kind="stable")
    firsts = xp.cumsum(counts) - counts
    rank_in_row = xp.empty(n, dtype=np.int64)
    rank_in_row[order] = xp.arange(n) - firsts[rows[order]]
    reverse = (starts[rows] + rank_in_row).astype(np.int64)
    total = int(per_row.sum())
    out_ind = xp.zeros((total, len(shape)), dtype=np.int64)
    out_ind[reverse] = indices
    empty_rows = xp.nonzero(empty)[0]
    out_ind[starts[empty_rows], 0] = empty_rows
    out_vals = xp.full(total, default_value, dtype=values.dtype)
    out_vals[reverse] = values
    return out_ind, out_vals, empty, reverse


def _fill_values_grad(o, g_values):
    d_values, d_default = sparse_fill_empty_rows_grad(o.outputs[3], g_values)
    return [None, d_values, None, d_default]


@op(
    "SparseFillEmptyRowsGrad",
    infer=lambda o: [
        (o._inputs[1]._dtype.base_dtype, o._inputs[0]._shape),
        (o._inputs[1]._dtype.base_dtype, TensorShape([])),
    ],
    inputs=("reverse_index_map", "grad_values"),
    differentiable=False,
)
def _fill_grad_kernel(xp, reverse_index_map, grad_values):
    unused = xp.ones(grad_values.shape[0], dtype=bool)
    unused[reverse_index_map] = False
    return grad_values[reverse_index_map], grad_values[unused].sum().astype(grad_values.dtype)


def sparse_fill_empty_rows(indices, values, dense_shape, default_value, name=None):
    """The op: (indices, values, empty_row_indicator, reverse_index_map)."""
    ins = [indices, values, dense_shape, default_value]
    return tuple(create("SparseFillEmptyRows", ins, {}, name).outputs)


def sparse_fill_empty_rows_grad(reverse_index_map, grad_values, name=None):
    """The op: (d_values, d_default_value) of a SparseFillEmptyRows."""
    ins = [reverse_index_map, grad_values]
    return tuple(create("SparseFillEmptyRowsGrad", ins, {}, name).outputs)


# -- SparseSlice, SparseSliceGrad, SparseSplit --------------------------------------------


def _slice_infer(o):
    d, rank = sparse_input_infer(o)
    return [
        (dtypes.int64, TensorShape([None, rank])),
        (d, TensorShape([None])),
        (dtypes.int64, TensorShape([rank])),
    ]


def _slice_grad(o, _g_indices, g_values, _g_shape):
    indices, _, _, start, _ = o.inputs
    grad = sparse_slice_grad(g_values, indices, start, o.outputs[0])
    return [None, grad, None, None, None]


@op(
    "SparseSlice",
    infer=_slice_infer,
    inputs=("indices", "values", "shape", "start", "size"),
    grad=_slice_grad,
)
def _slice_kernel(xp, indices, values, shape, start, size):
    dims, begin, extent = host_ints(shape), host_ints(start), host_ints(size)
    if not len(dims) == len(begin) == len(extent):
        raise invalid(
            f"Expected start and size to have the rank of the input ({len(dims)}), got "
            f"{len(begin)} and {len(extent)}"
        )
    out_shape = [max(0, min(b + e, d) - b) for d, b, e in zip(dims, begin, extent)]
    lo = xp.asarray(begin, dtype=np.int64)
    hi = lo + xp.asarray(out_shape, dtype=np.int64)
    keep = ((indices >= lo) & (indices < hi)).all(axis=1)
    return indices[keep] - lo, values[keep], xp.asarray(out_shape, dtype=np.int64)


def sparse_slice(indices, values, shape, start, size, name=None):
    """The op: (indices, values, shape) of the entries in the box ``[start, start + size)``,
    indices relative to ``start``."""
    ins = [indices, values, shape, start, size]
    return tuple(create("SparseSlice", ins, {}, name).outputs)


@op(
    "SparseSliceGrad",
    infer=lambda o: [
        (o._inputs[0]._dtype.base_dtype, TensorShape([o._inputs[1]._shape.with_rank(2)[0]]))
    ],
    inputs=("backprop_val_grad", "input_indices", "input_start", "output_indices"),
    differentiable=False,
)
def _slice_grad_kernel(xp, grad, input_indices, input_start, output_indices):
    shifted = input_indices - input_start.astype(np.int64)[None, :]
    at = _positions_in(xp, output_indices, xp.maximum(shifted, -1))
    inside = (at >= 0) & (shifted >= 0).all(axis=1)
    picked = grad[xp.maximum(at, 0)] if grad.shape[0] else xp.zeros(at.shape, grad.dtype)
    return xp.where(inside, picked, xp.zeros_like(picked)).astype(grad.dtype)


def sparse_slice_grad(grad, input_indices, input_start, output_indices, name=None):
    """The op: the values' gradient of a SparseSlice's input."""
    ins = [grad, input_indices, input_start, output_indices]
    return create("SparseSliceGrad", ins, {}, name).outputs[0]


def _split_infer(o):
    d, rank = sparse_input_infer(o, 1)
    n = o._attrs["num_split"]
    return (
        [(dtypes.int64, TensorShape([None, rank]))] * n
        + [(d, TensorShape([None]))] * n
        + [(dtypes.int64, TensorShape([rank]))] * n
    )


@op(
    "SparseSplit",
    infer=_split_infer,
    inputs=("split_dim", "indices", "values", "shape"),
    attrs=(Attr("num_split", "int"),),
    differentiable=False,
)
def _split_kernel(xp, split_dim, indices, values, shape, *, num_split):
    dims = host_ints(shape)
    axis = host_ints(split_dim)[0]
    if not -len(dims) <= axis < len(dims):
        raise invalid(f"Input split_dim should be between {-len(dims)} and {len(dims)}, got {axis}")
    axis %= len(dims)
    if num_split > dims[axis] or num_split < 1:
        raise invalid(
            f"Input num_split should be between 1 and the splitting dimension size "
            f"({dims[axis]}), got {num_split}"
        )
    size, residual = divmod(dims[axis], num_split)
    at = indices[:, axis]
    big = residual * (size + 1)
    piece = xp.where(at < big, at // (size + 1), residual + (at - big) // max(size, 1))
    begins = [i * size + min(i, residual) for i in range(num_split)]
    outs_i, outs_v, outs_s = [], [], []
    for i in range(num_split):
        mine = piece == i
        ind = indices[mine].copy()
        ind[:, axis] -= begins[i]
        shape_i = list(dims)
        shape_i[axis] = size + (1 if i < residual else 0)
        outs_i.append(ind)
        outs_v.append(values[mine])
        outs_s.append(xp.asarray(shape_i, dtype=np.int64))
    return (*outs_i, *outs_v, *outs_s)


def sparse_split(split_dim, indices, values, shape, num_split: int, name=None):
    """The op: (list of indices, list of values, list of shapes) of ``num_split`` pieces
    along ``split_dim``, the first ``size % num_split`` one longer."""
    o = create("SparseSplit", [split_dim, indices, values, shape], {"num_split": num_split}, name)
    n = num_split
    return list(o.outputs[:n]), list(o.outputs[n : 2 * n]), list(o.outputs[2 * n :])
