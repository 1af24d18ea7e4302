"""Kernels of TF's sparse ops whose result is dense or shares the input's indices:
``SparseTensorDenseMatMul``, ``SparseToDense``, ``SparseTensorDenseAdd``,
``SparseDenseCwise{Mul,Div,Add}``, ``SparseReduceSum``, ``SparseReduceSumSparse`` and
``SparseSoftmax`` (the ops that rearrange indices are in ``sparse_struct``).

A sparse operand is its three tensors (indices int64 ``[N, rank]``, values ``[N]``, dense
shape int64 ``[rank]``), as in TF's op definitions, so GraphDefs written by TF load as they
are; ``engine.sparse`` wraps them back into ``SparseTensor``s. Kernels gather and scatter
along the N stored entries (``scatter_add`` on numpy and cupy alike) and never build the
dense operand. Gradients are TF's (``sparse_grad.py``): with respect to the values and the
dense operand, never the indices or shapes.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, ShapeError, op
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import reduction, slicing
from engine.ops._common import (
    INDEX,
    NUMERIC,
    check_dtype,
    check_same_dtype,
    create,
    scatter_add,
)
from engine.ops.array_transform import concat
from engine.ops.segment_ops import gather_nd
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = [
    "sparse_tensor_dense_mat_mul",
    "sparse_to_dense",
    "sparse_tensor_dense_add",
    "sparse_dense_cwise",
    "sparse_reduce_sum",
    "sparse_reduce_sum_sparse",
    "sparse_softmax",
]


# -- shared helpers (also used by sparse_struct) ----------------------------------------------


def invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def host_ints(a) -> list[int]:
    """A small int array (a shape, axes) as Python ints, wherever it lives."""
    a = a.get() if hasattr(a, "get") else a
    return [int(v) for v in np.asarray(a).reshape(-1)]


def dims_text(dims) -> str:
    return "[" + ",".join(str(int(d)) for d in dims) + "]"


def linear_index(xp, indices, dims) -> object:
    """Row-major positions of ``indices`` (``[N, len(dims)]``) in a tensor of ``dims``."""
    lin = xp.zeros(indices.shape[0], dtype=np.int64)
    for j, d in enumerate(dims):
        lin = lin * int(d) + indices[:, j].astype(np.int64, copy=False)
    return lin


def unravel(xp, lin, dims) -> object:
    """``[N, len(dims)]`` int64 indices of the row-major positions ``lin`` in ``dims``."""
    out = xp.zeros((lin.shape[0], len(dims)), dtype=np.int64)
    rest = lin.astype(np.int64, copy=True)
    for j in range(len(dims) - 1, -1, -1):
        d = max(int(dims[j]), 1)
        out[:, j] = rest % d
        rest //= d
    return out


def sparse_input_infer(o, first: int = 0) -> tuple[dtypes.DType, int | None]:
    """Checks the (indices, values, shape) inputs at ``first``: indices int64 matrix, values
    vector, shape int64 vector; returns (values dtype, static rank or None)."""
    ind, vals, shp = o._inputs[first : first + 3]
    for t, rank, what in ((ind, 2, "indices"), (vals, 1, "values"), (shp, 1, "shape")):
        if t._shape.rank is not None and t._shape.rank != rank:
            raise ShapeError(f"Shape must be rank {rank} but is rank {t._shape.rank} ({what})")
    rank = shp._shape.as_list()[0] if shp._shape.rank == 1 else None
    if rank is None and ind._shape.rank == 2:
        rank = ind._shape.as_list()[1]
    return vals._dtype.base_dtype, rank


def _shape_value(t: Tensor) -> list[int] | None:
    v = constant_value(t)
    return None if v is None else [int(d) for d in np.asarray(v).reshape(-1)]


# -- SparseTensorDenseMatMul --------------------------------------------------------------


def _matmul_infer(o):
    d = check_same_dtype(o, (1, 3))
    check_dtype(o, 0, INDEX, "Tindices")
    b = o._inputs[3]._shape
    if b.rank is not None and b.rank != 2:
        raise ShapeError(f"Shape must be rank 2 but is rank {b.rank}")
    a = _shape_value(o._inputs[2])
    adj_a, adj_b = o._attrs["adjoint_a"], o._attrs["adjoint_b"]
    m = k = None
    if a is not None and len(a) == 2:
        m, k = (a[1], a[0]) if adj_a else (a[0], a[1])
    bk, n = (None, None) if b.rank is None else b.as_list()[:: -1 if adj_b else 1]
    if k is not None and bk is not None and k != bk:
        raise ShapeError(f"Dimensions must be equal, but are {k} and {bk}")
    return [(d, TensorShape([m, n]))]


def _matmul_grad(o, g):
    """TF's: A^T g for the dense operand, rows of g times rows of B for each stored value."""
    a_indices, a_values, a_shape, b = o.inputs
    adj_a, adj_b = o.get_attr("adjoint_a"), o.get_attr("adjoint_b")
    b_grad = sparse_tensor_dense_mat_mul(a_indices, a_values, a_shape, g, adjoint_a=not adj_a)
    if adj_b:
        b_grad = array_ops.transpose(b_grad)
    rows = slicing.gather(a_indices, 0, axis=1)
    cols = slicing.gather(a_indices, 1, axis=1)
    parts_a = slicing.gather(g, cols if adj_a else rows)
    parts_b = slicing.gather(array_ops.transpose(b) if adj_b else b, rows if adj_a else cols)
    a_values_grad = reduction.reduce_sum(parts_a * parts_b, axis=1)
    return [None, a_values_grad, None, b_grad]


@op(
    "SparseTensorDenseMatMul",
    infer=_matmul_infer,
    inputs=("a_indices", "a_values", "a_shape", "b"),
    attrs=(Attr("adjoint_a", "bool", default=False), Attr("adjoint_b", "bool", default=False)),
    grad=_matmul_grad,
)
def _matmul_kernel(xp, a_indices, a_values, a_shape, b, *, adjoint_a=False, adjoint_b=False):
    shape = host_ints(a_shape)
    if len(shape) != 2 or b.ndim != 2:
        raise invalid(f"Tensor 'a_shape' must have 2 elements and 'b' rank 2, got {shape}")
    m, k = (shape[1], shape[0]) if adjoint_a else (shape[0], shape[1])
    bk, n = (b.shape[1], b.shape[0]) if adjoint_b else b.shape
    if k != bk:
        raise invalid(
            f"Cannot multiply A and B because inner dimension does not match: {k} vs. {bk}.  "
            f"Did you forget a transpose?  Dimensions of A: [{shape[0]}, {shape[1]}).  "
            f"Dimensions of B: [{b.shape[0]},{b.shape[1]}]"
        )
    ind = a_indices.astype(np.int64, copy=False)
    rows, cols = (ind[:, 1], ind[:, 0]) if adjoint_a else (ind[:, 0], ind[:, 1])
    bad_k = (cols < 0) | (cols >= k)
    bad_m = (rows < 0) | (rows >= m)
    bad = bad_k | bad_m
    if bool(bad.any()):
        i = int(xp.argmax(bad))
        j_k, j_m = (0, 1) if adjoint_a else (1, 0)
        if bool(bad_k[i]):
            raise invalid(f"k ({int(cols[i])}) from index[{i},{j_k}] out of bounds (>={k})")
        raise invalid(f"m ({int(rows[i])}) from index[{i},{j_m}] out of bounds (>={m})")
    dense = b.T if adjoint_b else b
    out = xp.zeros((m, n), dtype=b.dtype)
    scatter_add(xp, out, rows, a_values[:, None] * dense[cols])
    return out


def sparse_tensor_dense_mat_mul(
    a_indices, a_values, a_shape, b, adjoint_a=False, adjoint_b=False, name=None
) -> Tensor:
    """The op: the sparse ``[M, K]`` matrix (three tensors) times the dense ``b``."""
    attrs = {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}
    ins = [a_indices, a_values, a_shape, b]
    return create("SparseTensorDenseMatMul", ins, attrs, name).outputs[0]


# -- SparseToDense ----------------------------------------------------------------------------


def _to_dense_infer(o):
    check_dtype(o, 0, INDEX, "Tindices")
    d = check_same_dtype(o, (2, 3))
    shape_t = o._inputs[1]
    if shape_t._shape.rank == 0:
        return [(d, TensorShape([_shape_value(shape_t)[0] if _shape_value(shape_t) else None]))]
    return [(d, constant_value_as_shape(shape_t))]


def _to_dense_grad(o, g):
    sparse_indices = o.inputs[0]
    values_grad = gather_nd(g, sparse_indices)
    default_grad = reduction.reduce_sum(g) - reduction.reduce_sum(values_grad)
    return [None, None, values_grad, default_grad]


def check_indices(xp, ind, shape: list[int]) -> None:
    """TF's ``SparseTensor::IndicesValid``: in bounds, in row-major order, no repeats."""
    n = ind.shape[0]
    if n == 0:
        return
    bounds = xp.asarray(shape, dtype=np.int64)
    oob = ((ind < 0) | (ind >= bounds)).any(axis=1)
    diff = ind[1:] - ind[:-1] if n > 1 else xp.zeros((0, ind.shape[1]), np.int64)
    nonzero = diff != 0
    first = xp.argmax(nonzero, axis=1)
    sign = xp.take_along_axis(diff, first[:, None], axis=1)[:, 0] if n > 1 else diff[:, 0]
    repeated = xp.zeros(n, dtype=bool)
    disorder = xp.zeros(n, dtype=bool)
    if ind.shape[1] > 0:
        repeated[1:] = ~nonzero.any(axis=1)
        disorder[1:] = nonzero.any(axis=1) & (sign < 0)
    else:
        repeated[1:] = True
    bad = oob | repeated | disorder
    if not bool(bad.any()):
        return
    i = int(xp.argmax(bad))
    where = f"indices[{i}] = {dims_text(host_ints(ind[i]))}"
    if bool(oob[i]):
        raise invalid(f"{where} is out of bounds: need 0 <= index < {dims_text(shape)}")
    if bool(disorder[i]):
        raise invalid(
            f"{where} is out of order. Many sparse ops require sorted indices.\n"
            "    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n"
        )
    raise invalid(f"{where} is repeated")


@op(
    "SparseToDense",
    infer=_to_dense_infer,
    inputs=("sparse_indices", "output_shape", "sparse_values", "default_value"),
    attrs=(Attr("validate_indices", "bool", default=True),),
    grad=_to_dense_grad,
)
def _to_dense_kernel(xp, sparse_indices, output_shape, values, default, *, validate_indices=True):
    shape = host_ints(output_shape)
    n = sparse_indices.shape[0] if sparse_indices.ndim > 0 else 1
    rank = sparse_indices.shape[1] if sparse_indices.ndim > 1 else 1
    if rank != len(shape):
        raise invalid(
            f"sparse_indices[0] has rank {rank} but output_shape has {len(shape)} elements"
        )
    ind = sparse_indices.reshape(n, rank).astype(np.int64, copy=False)
    if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != n):
        raise invalid(
            f"sparse_values has incorrect shape {dims_text(values.shape)}, should be [] or [{n}]"
        )
    if default.ndim != 0:
        raise invalid("default_value should be a scalar.")
    if validate_indices:
        check_indices(xp, ind, shape)
    else:
        bounds = xp.asarray(shape, dtype=np.int64)
        if bool(((ind < 0) | (ind >= bounds)).any()):
            raise invalid("Indices are not valid (out of bounds).  Shape: " + dims_text(shape))
    out = xp.full(shape, default, dtype=values.dtype)
    out[tuple(ind[:, j] for j in range(rank))] = values
    return out


def sparse_to_dense(
    sparse_indices, output_shape, sparse_values, default_value=0, validate_indices=True, name=None
) -> Tensor:
    """The op: a dense tensor of ``output_shape`` holding ``sparse_values`` at
    ``sparse_indices`` and ``default_value`` elsewhere."""
    with name_scope(name, "SparseToDense", []) as scope:
        ind = convert_to_tensor(sparse_indices, name="sparse_indices")
        shape = convert_to_tensor(output_shape, dtype=ind.dtype, name="output_shape")
        vals = convert_to_tensor(sparse_values, name="sparse_values")
        default = convert_to_tensor(default_value, dtype=vals.dtype, name="default_value")
        attrs = {"validate_indices": bool(validate_indices)}
        return create("SparseToDense", [ind, shape, vals, default], attrs, scope).outputs[0]


# -- SparseTensorDenseAdd -----------------------------------------------------------------


def _dense_add_infer(o):
    check_dtype(o, 0, INDEX, "Tindices")
    d = check_same_dtype(o, (1, 3))
    return [(d, o._inputs[3]._shape)]


@op(
    "SparseTensorDenseAdd",
    infer=_dense_add_infer,
    inputs=("a_indices", "a_values", "a_shape", "b"),
    grad=lambda o, g: [None, gather_nd(g, o.inputs[0]), None, g],
)
def _dense_add_kernel(xp, a_indices, a_values, a_shape, b):
    shape = host_ints(a_shape)
    if len(shape) != b.ndim:
        raise invalid(f"Dimensions of a_shape and b.shape do not match: {len(shape)} vs. {b.ndim}")
    for i, (s, d) in enumerate(zip(shape, b.shape)):
        if s != d:
            raise invalid(
                f"Dimension {i} does not equal (no broadcasting is supported): sparse side "
                f"{s} vs dense side {d}"
            )
    out = b.copy()
    ind = a_indices.astype(np.int64, copy=False)
    scatter_add(xp, out, tuple(ind[:, j] for j in range(b.ndim)), a_values)
    return out


def sparse_tensor_dense_add(a_indices, a_values, a_shape, b, name=None) -> Tensor:
    """The op: the dense ``b`` plus the sparse operand (same shape)."""
    return create("SparseTensorDenseAdd", [a_indices, a_values, a_shape, b], {}, name).outputs[0]


# -- SparseDenseCwise{Mul,Div,Add} --------------------------------------------------------


def _cwise_infer(o):
    sparse_input_infer(o)
    d = check_same_dtype(o, (1, 3))
    check_dtype(o, 1, NUMERIC)
    return [(d, TensorShape([o._inputs[1]._shape.with_rank(1).as_list()[0]]))]


def _dense_at(xp, sp_indices, sp_shape, dense):
    """The dense operand, broadcast to the sparse shape, at each stored index."""
    shape = host_ints(sp_shape)
    lead = len(shape) - dense.ndim
    if lead < 0 or any(d not in (1, s) for d, s in zip(dense.shape, shape[lead:])):
        raise invalid(
            "SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible "
            f"shapes: {dims_text(shape)} vs. {dims_text(dense.shape)}"
        )
    ind = sp_indices.astype(np.int64, copy=False)
    at = tuple(
        ind[:, lead + j] if dense.shape[j] != 1 else xp.zeros(ind.shape[0], np.int64)
        for j in range(dense.ndim)
    )
    return dense[at]


def _cwise_mul_div_grad(is_mul: bool):
    """TF's: the dense operand gathered at the (scaled) indices, and its gradient summed
    back into the dense shape by SparseTensorDenseAdd."""

    def grad(o, g):
        x_indices, x_values, x_shape, y = o.inputs
        y_shape = math_ops.cast(array_ops.shape(y), dtypes.int64)
        added = array_ops.expand_dims(array_ops.size(x_shape) - array_ops.size(y_shape), 0)
        ones = array_ops.ones(added, dtypes.int64)
        augmented = concat([ones, y_shape], 0)
        scaled = math_ops.floordiv(x_indices, math_ops.floordiv(x_shape, augmented))
        scaled = slicing.slice(scaled, concat([[0], added], 0), [-1, -1])
        dense_vals = gather_nd(y, scaled)
        if is_mul:
            dx, dy_val = g * dense_vals, g * x_values
        else:
            dx = g / dense_vals
            dy_val = g * (-x_values / math_ops.square(dense_vals))
        dy = sparse_tensor_dense_add(scaled, dy_val, y_shape, array_ops.zeros_like(y))
        return [None, dx, None, dy]

    return grad


def _cwise_add_grad(o, g):
    raise NotImplementedError("Gradient for SparseDenseCwiseAdd is not implemented.")


def _register_cwise(op_type: str, fn, grad) -> None:
    def kernel(xp, sp_indices, sp_values, sp_shape, dense):
        return fn(xp, sp_values, _dense_at(xp, sp_indices, sp_shape, dense))

    op(
        op_type,
        infer=_cwise_infer,
        inputs=("sp_indices", "sp_values", "sp_shape", "dense"),
        grad=grad,
    )(kernel)


def _divide(xp, a, b):
    if a.dtype.kind in "iu":  # C++ integer division truncates toward zero
        q = xp.abs(a) // xp.abs(b)
        return (q * xp.sign(a) * xp.sign(b)).astype(a.dtype)
    return a / b


_register_cwise("SparseDenseCwiseMul", lambda xp, a, b: a * b, _cwise_mul_div_grad(True))
_register_cwise("SparseDenseCwiseDiv", _divide, _cwise_mul_div_grad(False))
_register_cwise("SparseDenseCwiseAdd", lambda xp, a, b: a + b, _cwise_add_grad)


def sparse_dense_cwise(op_type: str, sp_indices, sp_values, sp_shape, dense, name=None):
    """The op ``SparseDenseCwise{Mul,Div,Add}``: new values for the sparse operand's entries."""
    ins = [
        convert_to_tensor(sp_indices, dtype=dtypes.int64),
        convert_to_tensor(sp_values),
        convert_to_tensor(sp_shape, dtype=dtypes.int64),
    ]
    ins.append(convert_to_tensor(dense, dtype=ins[1].dtype))
    return create(op_type, ins, {}, name or op_type).outputs[0]


# -- SparseReduceSum, SparseReduceSumSparse -----------------------------------------------


def _reduction(shape_in, axes_in, keep_dims: bool):
    """(kept dims, kept-dims output shape, output shape) of a reduction; TF's errors."""
    shape = host_ints(shape_in)
    rank = len(shape)
    axes = set()
    for a in host_ints(axes_in):
        if not -rank <= a < rank:
            raise invalid(f"Invalid reduction dimension {a}, for input with {rank} dimensions.")
        axes.add(a % rank)
    kept = [d for d in range(rank) if d not in axes]
    with_ones = [1 if d in axes else shape[d] for d in range(rank)]
    return shape, kept, with_ones, (with_ones if keep_dims else [shape[d] for d in kept])


def _reduce_static(o) -> TensorShape:
    shape, axes = _shape_value(o._inputs[2]), _shape_value(o._inputs[3])
    keep = o._attrs["keep_dims"]
    if shape is None or axes is None:
        return unknown_shape()
    rank = len(shape)
    if any(not -rank <= a < rank for a in axes):
        raise ShapeError(f"Invalid reduction dimension {axes}, for input with {rank} dimensions.")
    red = {a % rank for a in axes}
    return TensorShape([1 if d in red else shape[d] for d in range(rank) if keep or d not in red])


def _reduce_infer(o):
    d, _ = sparse_input_infer(o)
    check_dtype(o, 1, NUMERIC)
    return [(d, _reduce_static(o))]


def _reduce_grad(o, g):
    """TF's: the output gradient (with the reduced dims kept) gathered at each index."""
    sp_indices, _, sp_shape, axes = o.inputs
    rank = array_ops.size(sp_shape)
    axes = math_ops.floormod(math_ops.cast(array_ops.reshape(axes, [-1]), dtypes.int32), rank)
    reduced = reduction.reduce_any(
        math_ops.equal(array_ops.expand_dims(array_ops.range(rank), 1), axes), axis=1
    )
    kept_dims = math_ops.where_v2(reduced, array_ops.ones_like(sp_shape), sp_shape)
    g_kept = array_ops.reshape(g, kept_dims)
    scale = math_ops.floordiv(sp_shape, kept_dims)
    return [None, gather_nd(g_kept, math_ops.floordiv(sp_indices, scale)), None, None]


@op(
    "SparseReduceSum",
    infer=_reduce_infer,
    inputs=("input_indices", "input_values", "input_shape", "reduction_axes"),
    attrs=(Attr("keep_dims", "bool", default=False),),
    grad=_reduce_grad,
)
def _reduce_kernel(xp, indices, values, shape, axes, *, keep_dims=False):
    _, kept, _, out_shape = _reduction(shape, axes, keep_dims)
    size = int(np.prod([out_shape[i] for i in range(len(out_shape))], dtype=np.int64))
    out = xp.zeros(size, dtype=values.dtype)
    lin = linear_index(xp, indices[:, kept], [host_ints(shape)[d] for d in kept])
    scatter_add(xp, out, lin, values)
    return out.reshape(out_shape)


def _reduce_sparse_infer(o):
    d, _ = sparse_input_infer(o)
    check_dtype(o, 1, NUMERIC)
    _reduce_static(o)  # axes checked when known; the outputs' shapes are unknown in TF too
    return [(dtypes.int64, unknown_shape()), (d, unknown_shape()), (dtypes.int64, unknown_shape())]


@op(
    "SparseReduceSumSparse",
    infer=_reduce_sparse_infer,
    inputs=("input_indices", "input_values", "input_shape", "reduction_axes"),
    attrs=(Attr("keep_dims", "bool", default=False),),
    differentiable=False,
)
def _reduce_sparse_kernel(xp, indices, values, shape, axes, *, keep_dims=False):
    dims, kept, with_ones, out_shape = _reduction(shape, axes, keep_dims)
    kept_dims = [dims[d] for d in kept]
    lin = linear_index(xp, indices[:, kept], kept_dims)
    keys, inverse = xp.unique(lin, return_inverse=True)
    sums = xp.zeros(keys.shape[0], dtype=values.dtype)
    scatter_add(xp, sums, inverse.reshape(-1), values)
    kept_idx = unravel(xp, keys, kept_dims)
    if keep_dims:
        out_idx = xp.zeros((keys.shape[0], len(dims)), dtype=np.int64)
        out_idx[:, kept] = kept_idx
    else:
        out_idx = kept_idx
    return out_idx, sums, xp.asarray(out_shape, dtype=np.int64)


def sparse_reduce_sum(indices, values, shape, axes, keep_dims=False, name=None):
    """The op ``SparseReduceSum``: a dense tensor."""
    ins = [indices, values, shape, axes]
    return create("SparseReduceSum", ins, {"keep_dims": bool(keep_dims)}, name).outputs[0]


def sparse_reduce_sum_sparse(indices, values, shape, axes, keep_dims=False, name=None):
    """The op ``SparseReduceSumSparse``: (indices, values, shape) of the sums."""
    ins = [indices, values, shape, axes]
    o = create("SparseReduceSumSparse", ins, {"keep_dims": bool(keep_dims)}, name)
    return tuple(o.outputs)


# -- SparseSoftmax ------------------------------------------------------------------------


def _softmax_infer(o):
    d, rank = sparse_input_infer(o)
    if d not in (dtypes.float16, dtypes.float32, dtypes.float64):
        check_dtype(o, 1, {dtypes.float16, dtypes.float32, dtypes.float64})
    return [(d, TensorShape([o._inputs[1]._shape.with_rank(1).as_list()[0]]))]


def _softmax_grad(o, g):
    """TF's: (g - sum over the last dim of g * softmax) * softmax."""
    indices, _, shape = o.inputs
    out = o.outputs[0]
    axes = array_ops.reshape(array_ops.size(shape) - 1, [1])
    sums = sparse_reduce_sum(indices, g * out, shape, axes, keep_dims=True)
    centred = sparse_dense_cwise("SparseDenseCwiseAdd", indices, g, shape, -sums)
    return [None, centred * out, None]


def _group_max(xp, values, groups):
    """The largest value of each group (groups numbered 0..n-1, all present; NaN wins)."""
    by_value = xp.argsort(values, kind="stable")  # NaN last
    order = by_value[xp.argsort(groups[by_value], kind="stable")]
    ordered = groups[order]
    last = xp.ones(ordered.shape[0], dtype=bool)
    last[:-1] = ordered[1:] != ordered[:-1]
    return values[order][last]


@op(
    "SparseSoftmax",
    infer=_softmax_infer,
    inputs=("sp_indices", "sp_values", "sp_shape"),
    grad=_softmax_grad,
)
def _softmax_kernel(xp, sp_indices, sp_values, sp_shape):
    shape = host_ints(sp_shape)
    if len(shape) < 2:
        raise invalid(
            f"Input should have rank >= 2, but received shape: {','.join(map(str, shape))}"
        )
    if sp_values.shape[0] == 0:
        return sp_values.copy()
    lin = linear_index(xp, sp_indices[:, :-1], shape[:-1])
    keys, groups = xp.unique(lin, return_inverse=True)
    groups = groups.reshape(-1)
    n = keys.shape[0]
    e = xp.exp(sp_values - _group_max(xp, sp_values, groups)[groups])
    sums = xp.zeros(n, dtype=sp_values.dtype)
    scatter_add(xp, sums, groups, e)
    return e / sums[groups]


def sparse_softmax(sp_indices, sp_values, sp_shape, name=None) -> Tensor:
    """The op ``SparseSoftmax``: softmax over the last dimension of the stored entries."""
    return create("SparseSoftmax", [sp_indices, sp_values, sp_shape], {}, name).outputs[0]
