"""TF1's sparse API over ``SparseTensor``: ``tf.sparse_*`` and the ``tf.sparse`` namespace.

Each function takes and returns ``SparseTensor``s (or ``SparseTensorValue``s, converted) and
builds the ops of ``engine.ops.sparse_ops`` / ``sparse_struct`` on their component tensors,
with TF's names, defaults and static shapes (``tensorflow/python/ops/sparse_ops.py``).

>>> sp = SparseTensor([[0, 1], [2, 0]], [3.0, 4.0], [3, 2])
>>> dense = sparse_tensor_to_dense(sp)            # [[0, 3], [0, 0], [4, 0]]
>>> y = sparse_tensor_dense_matmul(sp, ones([2, 5]))
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.sparse_tensor import (
    SparseTensor,
    SparseTensorValue,
    convert_to_sparse_tensor,
)
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing, sparse_segment_ops
from engine.ops import math as math_ops
from engine.ops import sparse_ops as gen
from engine.ops import sparse_struct as gen_struct
from engine.ops.segment_ops import gather_nd
from engine.tensor_shape import TensorShape, as_shape, unknown_shape
from engine.util.namespaces import Namespace, namespace

__all__ = [
    "SparseTensor",
    "SparseTensorValue",
    "sparse_placeholder",
    "sparse_tensor_dense_matmul",
    "sparse_to_dense",
    "sparse_tensor_to_dense",
    "from_dense",
    "sparse_reduce_sum",
    "sparse_reduce_sum_sparse",
    "sparse_reorder",
    "sparse_reshape",
    "sparse_retain",
    "sparse_concat",
    "sparse_add",
    "sparse_fill_empty_rows",
    "sparse_softmax",
    "sparse_slice",
    "sparse_split",
    "build_namespace",
]


def sparse_placeholder(dtype, shape=None, name=None) -> SparseTensor:
    """A SparseTensor whose three parts are fed (as a SparseTensorValue or a triple).

    ``shape`` (optional, dims may be None or -1) fixes the rank and the known dimensions:
    its ``dense_shape`` then defaults to the given shape (-1 for unknown dims) and may still
    be fed. Without a shape, the rank is unknown and ``dense_shape`` must be fed.

    >>> sp = sparse_placeholder(float32, shape=[None, 5], name="x")
    >>> sp.shape
    TensorShape([None, 5])
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    shape_name = f"{name}/shape" if name is not None else None
    default_shape_name = f"{name}/shape_default" if name is not None else None
    if shape is None:
        rank = None
        dense_shape = array_ops.placeholder(dtypes.int64, shape=[rank], name=shape_name)
        dense_shape_default = constant_value_as_shape(dense_shape)
    else:
        if isinstance(shape, Tensor):
            rank = shape.shape.with_rank(1).as_list()[0]
            dense_shape_default = constant_value_as_shape(shape)
        else:
            dense_shape_default = as_shape(
                [None if d in (-1, None) else d for d in _dims_of(shape)]
            )
            rank = dense_shape_default.rank
            dims = [-1 if d is None else d for d in dense_shape_default.as_list()]
            shape = convert_to_tensor(dims, dtype=dtypes.int64, name=default_shape_name)
        dense_shape = array_ops.placeholder_with_default(shape, shape=shape.shape, name=shape_name)
    result = SparseTensor(
        values=array_ops.placeholder(
            dtype, shape=[None], name=f"{name}/values" if name is not None else None
        ),
        indices=array_ops.placeholder(
            dtypes.int64, shape=[None, rank], name=f"{name}/indices" if name is not None else None
        ),
        dense_shape=dense_shape,
    )
    # The dense shape is a placeholder, so its static value is unknown: keep the given one.
    result._dense_shape_default = dense_shape_default
    return result


def _dims_of(shape) -> list:
    if isinstance(shape, TensorShape):
        return shape.as_list() if shape.rank is not None else []
    return [getattr(d, "value", d) for d in shape]


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The sparse matrix ``sp_a`` (``[M, K]``) times the dense ``b`` (``[K, N]``), either
    transposed by ``adjoint_a``/``adjoint_b``; a dense ``[M, N]`` tensor. A sparse ``b``
    (with a dense ``sp_a``) is computed as the transposed product, as TF does."""
    if isinstance(b, (SparseTensor, SparseTensorValue)):
        if adjoint_a != adjoint_b:
            return array_ops.transpose(sparse_tensor_dense_matmul(b, sp_a, adjoint_a, adjoint_b))
        return array_ops.transpose(
            sparse_tensor_dense_matmul(b, sp_a, adjoint_a=not adjoint_a, adjoint_b=not adjoint_b)
        )
    sp_a = convert_to_sparse_tensor(sp_a)
    with name_scope(name, "SparseTensorDenseMatMul", [sp_a.indices, sp_a.values]) as scope:
        b = convert_to_tensor(b, name="b")
        return gen.sparse_tensor_dense_mat_mul(
            sp_a.indices, sp_a.values, sp_a.dense_shape, b, adjoint_a, adjoint_b, name=scope
        )


def sparse_to_dense(
    sparse_indices, output_shape, sparse_values, default_value=0, validate_indices=True, name=None
):
    """A dense tensor of ``output_shape``: ``sparse_values`` at ``sparse_indices`` (0-D, 1-D
    or ``[N, rank]``), ``default_value`` elsewhere. ``validate_indices`` checks they are
    sorted, unique and in bounds."""
    return gen.sparse_to_dense(
        sparse_indices, output_shape, sparse_values, default_value, validate_indices, name
    )


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor ``sp_input`` stands for, ``default_value`` (default zero) where it
    holds nothing."""
    sp_input = convert_to_sparse_tensor(sp_input)
    if default_value is None:
        default_value = array_ops.zeros([], dtype=sp_input.dtype)
    return gen.sparse_to_dense(
        sp_input.indices,
        sp_input.dense_shape,
        sp_input.values,
        default_value,
        validate_indices,
        name or "SparseToDense",
    )


def from_dense(tensor, name=None) -> SparseTensor:
    """The non-zero entries of ``tensor`` as a SparseTensor (row-major order)."""
    with name_scope(name, "dense_to_sparse"):
        tensor = convert_to_tensor(tensor)
        indices = math_ops.where_v2(math_ops.not_equal(tensor, array_ops.zeros_like(tensor)))
        values = gather_nd(tensor, indices)
        shape = array_ops.shape(tensor, out_type=dtypes.int64)
        return SparseTensor(indices, values, shape)


def _lookup(new, new_name, old, old_name):
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new if new is not None else old


def _reduction_axes(sp_input: SparseTensor, axis):
    if axis is not None:
        return convert_to_tensor(axis, dtype=dtypes.int32)
    rank = sp_input.dense_shape.shape.as_list()[0] if sp_input.dense_shape.shape.rank else None
    if rank is not None:
        return constant(np.arange(rank, dtype=np.int32))
    return array_ops.range(0, array_ops.size(sp_input.dense_shape))


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """The sum of ``sp_input``'s entries over ``axis`` (all when None): a dense tensor."""
    keepdims = _lookup(keepdims, "keepdims", keep_dims, "keep_dims") or False
    axis = _lookup(axis, "axis", reduction_axes, "reduction_axes")
    sp_input = convert_to_sparse_tensor(sp_input)
    return gen.sparse_reduce_sum(
        sp_input.indices,
        sp_input.values,
        sp_input.dense_shape,
        _reduction_axes(sp_input, axis),
        keepdims,
    )


def sparse_reduce_sum_sparse(
    sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None
) -> SparseTensor:
    """``sparse_reduce_sum`` with a SparseTensor result (one entry per non-empty sum)."""
    keepdims = _lookup(keepdims, "keepdims", keep_dims, "keep_dims") or False
    axis = _lookup(axis, "axis", reduction_axes, "reduction_axes")
    sp_input = convert_to_sparse_tensor(sp_input)
    ind, vals, shape = gen.sparse_reduce_sum_sparse(
        sp_input.indices,
        sp_input.values,
        sp_input.dense_shape,
        _reduction_axes(sp_input, axis),
        keepdims,
    )
    return SparseTensor(ind, vals, shape)


def sparse_reorder(sp_input, name=None) -> SparseTensor:
    """``sp_input`` with its entries in row-major (canonical) order."""
    sp_input = convert_to_sparse_tensor(sp_input)
    ind, vals = gen_struct.sparse_reorder(
        sp_input.indices, sp_input.values, sp_input.dense_shape, name=name or "SparseReorder"
    )
    if sp_input.shape.is_fully_defined():
        return SparseTensor(ind, vals, sp_input.shape.as_list())
    out = SparseTensor(ind, vals, array_ops.identity(sp_input.dense_shape))
    out.set_shape(sp_input.shape)
    return out


def sparse_reshape(sp_input, shape, name=None) -> SparseTensor:
    """``sp_input``'s entries in a tensor of ``shape`` (one dimension may be -1)."""
    sp_input = convert_to_sparse_tensor(sp_input)
    shape = math_ops.cast(shape, dtypes.int64)
    with name_scope(name, "SparseReshape", [sp_input.indices]) as scope:
        ind, new_shape = gen_struct.sparse_reshape(
            sp_input.indices, sp_input.dense_shape, shape, name=scope
        )
        static = _static_reshape(sp_input, shape)
        if static is not None:
            new_shape = constant(np.array(static, np.int64))
        return SparseTensor(ind, array_ops.identity(sp_input.values), new_shape)


def _static_reshape(sp_input: SparseTensor, shape) -> list | None:
    """TF's build-time check and resolution of a reshape of a fully known sparse shape."""
    target = constant_value_as_shape(shape)
    if target.rank is None or not sp_input.shape.is_fully_defined():
        return None
    dims = target.as_list()
    given = constant_value(shape)
    if given is not None and sum(int(d) == -1 for d in np.asarray(given).reshape(-1)) > 1:
        raise ValueError(f"At most one dimension can be inferred (-1). Found: {given}")
    original = list(dims)
    size = int(np.prod(sp_input.shape.as_list()))
    implied = sum(d is None for d in dims)
    if implied == 1 and 0 not in dims:
        i = original.index(None)
        dims[i] = int(size // np.prod(original[:i] + original[i + 1 :]))
    if implied == 0 or (implied == 1 and 0 not in dims):
        new_size = int(np.prod(dims))
        if new_size != size:
            raise ValueError(
                f"Cannot reshape a tensor with {size} elements to shape {original} "
                f"({new_size} elements)."
            )
        return dims
    return None


def sparse_retain(sp_input, to_retain) -> SparseTensor:
    """The entries of ``sp_input`` where the boolean vector ``to_retain`` is true."""
    sp_input = convert_to_sparse_tensor(sp_input)
    to_retain = convert_to_tensor(to_retain)
    retain_shape = to_retain.shape
    retain_shape.assert_has_rank(1)
    n = sp_input.values.shape
    if n.rank is not None:
        n.dims[0].assert_is_compatible_with(retain_shape.dims[0])
    where_true = array_ops.reshape(math_ops.where_v2(to_retain), [-1])
    new_indices = slicing.gather(sp_input.indices, where_true)
    new_values = slicing.gather(sp_input.values, where_true)
    return SparseTensor(new_indices, new_values, array_ops.identity(sp_input.dense_shape))


def sparse_concat(
    axis,
    sp_inputs,
    name=None,
    expand_nonconcat_dim=False,
    concat_dim=None,
    expand_nonconcat_dims=None,
) -> SparseTensor:
    """The SparseTensors ``sp_inputs`` joined along ``axis``; with ``expand_nonconcat_dim``
    the other dimensions grow to the largest input's."""
    if expand_nonconcat_dims is not None:
        expand_nonconcat_dim = expand_nonconcat_dims
    axis = _lookup(axis, "axis", concat_dim, "concat_dim")
    if not isinstance(sp_inputs, (list, tuple)):
        raise TypeError("Inputs must be a list or tuple.")
    sp_inputs = [convert_to_sparse_tensor(s) for s in sp_inputs]
    if len(sp_inputs) == 1:
        return sp_inputs[0]
    shapes = [s.dense_shape for s in sp_inputs]
    if expand_nonconcat_dim:
        shapes = _expanded_shapes(shapes, axis)
    ind, vals, shape = gen_struct.sparse_concat(
        axis, [s.indices for s in sp_inputs], [s.values for s in sp_inputs], shapes, name=name
    )
    static = _concat_static_shape([s.shape for s in sp_inputs], axis, expand_nonconcat_dim)
    if all(s.shape.is_fully_defined() for s in sp_inputs):
        return SparseTensor(ind, vals, constant(np.array(static.as_list(), np.int64)))
    out = SparseTensor(ind, vals, shape)
    out.set_shape(static)
    return out


def _expanded_shapes(shapes, axis: int) -> list:
    rows = [array_ops.reshape(s, [1, -1]) for s in shapes]
    largest = reduction.reduce_max(array_transform.concat(rows, 0), 0)
    out = []
    for s in shapes:
        mid = s[-1:] if axis == -1 else s[axis : axis + 1]
        tail = [] if axis == -1 else [largest[axis + 1 :]]
        out.append(array_transform.concat([largest[:axis], mid, *tail], 0))
    return out


def _concat_static_shape(shapes: list[TensorShape], axis: int, expand: bool) -> TensorShape:
    if any(s.rank is None for s in shapes):
        return unknown_shape()
    dims = shapes[0].dims if not expand else None
    if expand:
        dims = [
            max((s.dims[d] for s in shapes), key=lambda x: -1 if x.value is None else x.value)
            if all(s.dims[d].value is not None for s in shapes)
            else None
            for d in range(shapes[0].rank)
        ]
    out = [getattr(d, "value", d) for d in dims]
    total = [s.as_list()[axis] for s in shapes]
    out[axis] = None if None in total else sum(total)
    return TensorShape(out)


def sparse_add(a, b, threshold=None, thresh=None):
    """``a + b`` where at least one is sparse: a SparseTensor when both are (entries whose
    magnitude is below ``threshold`` dropped), else a dense tensor."""
    threshold = _lookup(threshold, "threshold", thresh, "thresh")
    if threshold is None:
        threshold = 0
    sparse = (SparseTensor, SparseTensorValue)
    if not any(isinstance(x, sparse) for x in (a, b)):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if all(isinstance(x, sparse) for x in (a, b)):
        a, b = convert_to_sparse_tensor(a), convert_to_sparse_tensor(b)
        threshold = convert_to_tensor(threshold, dtype=a.values.dtype.base_dtype, name="threshold")
        ind, vals, shape = gen_struct.sparse_add(
            a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape, threshold
        )
        a.shape.assert_is_compatible_with(b.shape)
        static = a.shape.merge_with(b.shape)  # TF: unknown when either rank is
        if a.shape.rank is not None and b.shape.rank is not None and static.is_fully_defined():
            shape = static.as_list()
        return SparseTensor(ind, vals, shape)
    if isinstance(b, sparse):
        a, b = b, a
    a = convert_to_sparse_tensor(a)
    b = convert_to_tensor(b, dtype=a.dtype)
    return gen.sparse_tensor_dense_add(a.indices, a.values, a.dense_shape, b)


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """(``sp_input`` with an entry ``[row, 0, ...] = default_value`` in each empty row, the
    boolean vector of which rows were empty)."""
    sp_input = convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseFillEmptyRows", [sp_input.indices, sp_input.values]):
        default_value = convert_to_tensor(default_value, dtype=sp_input.values.dtype)
        ind, vals, empty, _ = gen_struct.sparse_fill_empty_rows(
            sp_input.indices, sp_input.values, sp_input.dense_shape, default_value
        )
        return SparseTensor(ind, vals, sp_input.dense_shape), empty


def sparse_softmax(sp_input, name=None) -> SparseTensor:
    """Softmax over the last dimension of ``sp_input``'s entries (absent entries take no
    part, as if -inf); rank at least 2, entries in canonical order."""
    with name_scope(name, "SparseSoftmax", [sp_input.indices, sp_input.values]) as scope:
        out = gen.sparse_softmax(sp_input.indices, sp_input.values, sp_input.dense_shape, scope)
        return SparseTensor(sp_input.indices, out, sp_input.dense_shape)


def sparse_slice(sp_input, start, size, name=None) -> SparseTensor:
    """The entries of ``sp_input`` inside the box ``[start, start + size)`` (clipped to its
    shape), indices relative to ``start``."""
    sp_input = convert_to_sparse_tensor(sp_input)
    start = convert_to_tensor(start, dtypes.int64)
    size = convert_to_tensor(size, dtypes.int64)
    with name_scope(name, "SparseSlice", [sp_input.indices]) as scope:
        ind, vals, shape = gen_struct.sparse_slice(
            sp_input.indices, sp_input.values, sp_input.dense_shape, start, size, name=scope
        )
        return SparseTensor(ind, vals, shape)


class _KeywordRequired:
    def __repr__(self) -> str:
        return "KeywordRequired()"


def sparse_split(
    keyword_required=_KeywordRequired(),  # noqa: B008 - TF's marker: keywords only
    sp_input=None,
    num_split=None,
    axis=None,
    name=None,
    split_dim=None,
) -> list:
    """``sp_input`` cut along ``axis`` into ``num_split`` SparseTensors (the first
    ``size % num_split`` one longer); every argument by keyword."""
    if not isinstance(keyword_required, _KeywordRequired):
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    if axis is None:  # TF's order: ``split_dim`` alone is refused too
        raise ValueError("axis is required")
    axis = _lookup(axis, "axis", split_dim, "split_dim")
    sp_input = convert_to_sparse_tensor(sp_input)
    inds, vals, shapes = gen_struct.sparse_split(
        convert_to_tensor(axis, dtypes.int64),
        sp_input.indices,
        sp_input.values,
        sp_input.dense_shape,
        int(num_split),
        name=name or "SparseSplit",
    )
    return [SparseTensor(i, v, s) for i, v, s in zip(inds, vals, shapes)]


def _cwise(op_type: str, op_name: str):
    def apply(sp_x, y):
        with name_scope(None, op_name, [sp_x.indices, sp_x.values]) as scope:
            y = convert_to_tensor(y, dtype=sp_x.dtype, name="y")
            out = gen.sparse_dense_cwise(
                op_type, sp_x.indices, sp_x.values, sp_x.dense_shape, y, name=scope
            )
            return SparseTensor(sp_x.indices, out, sp_x.dense_shape)

    return apply


# ``sparse * dense`` and ``sparse / dense`` (dense broadcast to the sparse shape), as TF1.
SparseTensor.__mul__ = _cwise("SparseDenseCwiseMul", "mul")
SparseTensor.__truediv__ = _cwise("SparseDenseCwiseDiv", "truediv")
SparseTensor.__div__ = SparseTensor.__truediv__


def build_namespace() -> Namespace:
    """``tf.sparse``: TF 1.15's names for what the engine has."""
    return namespace(
        "tf.sparse",
        SparseTensor=SparseTensor,
        placeholder=sparse_placeholder,
        sparse_dense_matmul=sparse_tensor_dense_matmul,
        matmul=sparse_tensor_dense_matmul,
        to_dense=sparse_tensor_to_dense,
        from_dense=from_dense,
        reduce_sum=sparse_reduce_sum,
        reduce_sum_sparse=sparse_reduce_sum_sparse,
        reorder=sparse_reorder,
        reshape=sparse_reshape,
        retain=sparse_retain,
        concat=sparse_concat,
        add=sparse_add,
        fill_empty_rows=sparse_fill_empty_rows,
        softmax=sparse_softmax,
        slice=sparse_slice,
        split=sparse_split,
        segment_sum=sparse_segment_ops.sparse_segment_sum,
        segment_mean=sparse_segment_ops.sparse_segment_mean,
        segment_sqrt_n=sparse_segment_ops.sparse_segment_sqrt_n,
    )
