"""N-dimensional gathers and scatters and the segment reductions (TF1's ``gather_nd``,
``scatter_nd``, ``unsorted_segment_*`` and ``segment_*``), each with TensorFlow's gradient.

Indices are validated as TF's CPU kernels do: a bad ``gather_nd``/``scatter_nd`` index or a
segment id ``>= num_segments`` raises ``InvalidArgumentError`` naming it; the unsorted
reductions drop negative ids; the sorted ones require ids that never decrease.

Empty segments take TF's values: 0 for sums and means, 1 for products, and for the unsorted
max (min) the lowest (highest) value of the dtype; the sorted ``segment_max``/``segment_min``
leave gaps at 0. Max, min and product are one segmented scan over the rows sorted by id (a
log-step doubling scan built from elementwise ops, so the same code runs on numpy and cupy);
sums scatter-add in row order, as TF's CPU kernel accumulates.

    >>> unsorted_segment_sum([1.0, 2.0, 4.0], [1, 0, 1], num_segments=3)  # [2, 5, 0]
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops import array as array_ops
from engine.ops import array_transform, slicing
from engine.ops import math as math_ops
from engine.ops._common import (
    ALL,
    BOOL,
    INDEX,
    NUMERIC,
    base,
    check_dtype,
    check_same_dtype,
    create,
    dims_text,
    scatter_add,
)
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = [
    "gather_nd",
    "scatter_nd",
    "unsorted_segment_sum",
    "unsorted_segment_max",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_mean",
    "unsorted_segment_sqrt_n",
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "segment_prod",
]


# -----------------------------------------------------------------------------------------
# Shared helpers
# -----------------------------------------------------------------------------------------


def _invalid(msg: str) -> errors.InvalidArgumentError:
    """A run-time data error; the session attaches the failing op."""
    return errors.InvalidArgumentError(None, None, msg)


def _text(dims) -> str:
    """A static shape as TF's shape functions print it: ``[2,?]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _dims(t: Tensor) -> list | None:
    dims = t._shape.as_tuple()
    return None if dims is None else list(dims)


def _merge(a: list, b: list) -> list:
    return [x if x is not None else y for x, y in zip(a, b)]


def _position(flat_index: int, shape) -> str:
    """TF's ``[i,j]`` for the element at ``flat_index`` of an array of ``shape``."""
    if not shape:
        return ""
    return dims_text(int(p) for p in np.unravel_index(flat_index, tuple(shape)))


def _float_only(fn):
    """A gradient for floating data only (integer data gets None, as the engine's nn ops)."""

    def grad(o, g):
        if not o.inputs[0].dtype.base_dtype.is_floating:
            return [None] * len(o.inputs)
        return fn(o, g)

    return grad


def _ids_shape_for(ids: Tensor, like: Tensor):
    """``ids``' shape padded with 1s to the rank of ``like`` (so a per-id mask broadcasts
    against it): a constant list when static, as TF computes it otherwise."""
    ri, rl = ids.shape.rank, like.shape.rank
    if ids.shape.is_fully_defined() and rl is not None:
        return ids.shape.as_list() + [1] * (rl - ri)
    ids_shape = array_ops.shape(ids)
    extra = array_transform.stack([array_ops.rank(like) - array_ops.rank(ids)])
    return array_transform.concat([ids_shape, array_ops.ones(extra, dtype=dtypes.int32)], 0)


# -----------------------------------------------------------------------------------------
# GatherNd, ScatterNd
# -----------------------------------------------------------------------------------------


def _check_nd_indices(xp, flat, outer, dims, what: str) -> None:
    """InvalidArgumentError naming the first row of ``flat`` outside ``dims``."""
    if flat.shape[0] == 0 or flat.shape[1] == 0:
        return
    limit = xp.asarray(np.asarray(dims, dtype=np.int64))
    bad = ((flat < 0) | (flat >= limit)).any(axis=1)
    if bool(bad.any()):
        i = int(xp.argmax(bad))
        coords = ", ".join(str(int(v)) for v in flat[i].tolist())
        raise _invalid(f"indices{_position(i, outer)} = [{coords}] does not index into {what}")


def _gather_nd_infer(o):
    params, indices = o._inputs
    check_dtype(o, 1, INDEX, "Tindices")
    dtype = check_dtype(o, 0, ALL, "Tparams")
    p, ind = _dims(params), _dims(indices)
    if ind is not None and not ind:
        raise ShapeError("Shape must be at least rank 1 but is rank 0")
    if p is None or ind is None or ind[-1] is None:
        return [(dtype, unknown_shape())]
    if ind[-1] > len(p):
        raise ShapeError(
            f"indices.shape[-1] must be <= params.rank, but saw indices shape: {_text(ind)} "
            f"and params shape: {_text(p)}"
        )
    return [(dtype, TensorShape(ind[:-1] + p[ind[-1] :]))]


def _gather_nd_grad(o, g):
    """TF's: the output gradient scattered (summed) back to the gathered positions."""
    params, indices = o.inputs
    shape = array_ops._shape_of(params, base(indices))
    return [scatter_nd(indices, g, shape), None]


@op("GatherNd", infer=_gather_nd_infer, inputs=("params", "indices"), grad=_gather_nd_grad)
def _gather_nd_kernel(xp, params, indices):
    if params.ndim == 0:
        raise _invalid("params must be at least a vector")
    if indices.ndim == 0:
        raise _invalid("indices must be at least a vector")
    k = indices.shape[-1]
    if k > params.ndim:
        raise _invalid(
            f"index innermost dimension length must be <= params rank; saw: {k} vs. {params.ndim}"
        )
    outer = indices.shape[:-1]
    flat = indices.reshape((int(np.prod(indices.shape[:-1], dtype=np.int64)), k))
    n = flat.shape[0]
    if n and params.size == 0:
        raise _invalid(
            "Requested more than 0 entries, but params is empty.  Params shape: "
            + dims_text(params.shape)
        )
    if k == 0:
        return xp.repeat(params[None], n, axis=0).reshape(outer + params.shape)
    _check_nd_indices(xp, flat, outer, params.shape[:k], f"param shape {dims_text(params.shape)}")
    picked = params[tuple(flat[:, j] for j in range(k))]
    return picked.reshape(outer + params.shape[k:])


def _check_part(what: str, dims: list, other: list, other_what: str) -> None:
    """ShapeError in TF's words when two parts of static shapes cannot be merged."""
    if len(dims) != len(other):
        raise ShapeError(
            f"{what} = {_text(dims)} must match {other_what} = {_text(other)}: Shapes must be "
            f"equal rank, but are {len(dims)} and {len(other)}"
        )
    try:
        array_ops._merge_part(dims, other)
    except ShapeError as e:
        raise ShapeError(
            f"{what} = {_text(dims)} must match {other_what} = {_text(other)}: {e}"
        ) from None


def _scatter_nd_infer(o):
    indices, updates, shape = o._inputs
    check_dtype(o, 0, INDEX, "Tindices")
    check_same_dtype(o, (0, 2))
    dtype = check_dtype(o, 1, NUMERIC | BOOL)
    if shape._shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {shape._shape.rank}")
    value = constant_value(shape)
    if value is not None:
        for d in np.reshape(value, -1):
            if d < 0:
                raise ShapeError(f"Invalid value in tensor used for shape: {int(d)}")
    out = constant_value_as_shape(shape)
    ind, upd, dims = _dims(indices), _dims(updates), out.as_tuple()
    if ind is not None and not ind:
        raise ShapeError("Shape must be at least rank 1 but is rank 0")
    if ind is None or upd is None:
        return [(dtype, out)]
    outer = len(ind) - 1
    _check_part(
        f"Dimensions [0,{outer}) of indices[shape={_text(ind)}]",
        ind[:-1],
        upd[:outer],
        f"dimensions [0,{outer}) of updates[shape={_text(upd)}]",
    )
    k = ind[-1]
    if k is not None and dims is not None:
        _check_part(
            f"Dimensions [{k},{len(dims)}) of input[shape={_text(dims)}]",
            list(dims[k:]),
            upd[outer:],
            f"dimensions [{outer},{len(upd)}) of updates[shape={_text(upd)}]",
        )
    if k is not None and dims is not None and k <= len(dims):
        out = TensorShape(list(dims[:k]) + _merge(list(dims[k:]), upd[outer:]))
    return [(dtype, out)]


@op(
    "ScatterNd",
    infer=_scatter_nd_infer,
    inputs=("indices", "updates", "shape"),
    grad=lambda o, g: [None, gather_nd(g, o.inputs[0]), None],
    flags=OpFlags(host_inputs=(2,)),
)
def _scatter_nd_kernel(xp, indices, updates, shape):
    dims = tuple(int(d) for d in shape.tolist())
    if any(d < 0 for d in dims):
        raise _invalid(f"Invalid value in tensor used for shape: {min(dims)}")
    if indices.ndim == 0:
        raise _invalid(f"Indices shape must have rank at least one. Found:{dims_text(())}")
    k, outer = indices.shape[-1], indices.shape[:-1]
    if updates.shape[: len(outer)] != outer:
        raise _invalid(
            f"Dimensions [0,{len(outer)}) of indices[shape={dims_text(indices.shape)}] must "
            f"match dimensions [0,{len(outer)}) of updates[shape={dims_text(updates.shape)}]"
        )
    if k > len(dims) or updates.shape[len(outer) :] != dims[k:]:
        raise _invalid(
            f"Dimensions [{k},{len(dims)}) of input[shape={dims_text(dims)}] must match "
            f"dimensions [{len(outer)},{updates.ndim}) of updates[shape="
            f"{dims_text(updates.shape)}]"
        )
    flat = indices.reshape((int(np.prod(indices.shape[:-1], dtype=np.int64)), k))
    _check_nd_indices(xp, flat, outer, dims[:k], f"shape {dims_text(dims)}")
    # Repeated indices add up; half floats accumulate in float32, booleans as counts.
    acc = {np.dtype(np.float16): np.float32, np.dtype(np.bool_): np.int32}.get(
        updates.dtype, updates.dtype
    )
    rows = updates.reshape((flat.shape[0],) + dims[k:]).astype(acc)
    if k == 0:
        out = rows.sum(axis=0, dtype=acc) if rows.shape[0] else xp.zeros(dims, dtype=acc)
    else:
        out = xp.zeros(dims, dtype=acc)
        scatter_add(xp, out, tuple(flat[:, j] for j in range(k)), rows)
    return out != 0 if updates.dtype == np.bool_ else out.astype(updates.dtype, copy=False)


def gather_nd(params, indices, name=None, batch_dims=0) -> Tensor:
    """Slices of ``params`` at the index tuples in the last axis of ``indices``: the result
    has shape ``indices.shape[:-1] + params.shape[indices.shape[-1]:]``.

    >>> gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])  # [3, 2]
    >>> gather_nd([[1, 2], [3, 4]], [[1]])  # [[3, 4]]
    """
    if batch_dims != 0:
        raise NotImplementedError(
            f"gather_nd with batch_dims={batch_dims} is not supported; only batch_dims=0"
        )
    with name_scope(name, "GatherNd", [params, indices]) as scope:
        p = convert_to_tensor(params, name="params")
        i = convert_to_tensor(indices, dtype_hint=dtypes.int32, name="indices")
        return create("GatherNd", [p, i], {}, scope).outputs[0]


def scatter_nd(indices, updates, shape, name=None) -> Tensor:
    """Zeros of ``shape`` with the slices of ``updates`` added at ``indices`` (repeated
    indices add up).

    >>> scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5])  # [0, 4, 0, 2, 0]
    """
    with name_scope(name, "ScatterNd", [indices, updates, shape]) as scope:
        i = convert_to_tensor(indices, dtype_hint=dtypes.int32, name="indices")
        u = convert_to_tensor(updates, name="updates")
        s = convert_to_tensor(shape, dtype_hint=base(i), name="shape")
        if base(s) is not base(i) and base(s) in INDEX:
            s = math_ops.cast(s, base(i))
        return create("ScatterNd", [i, u, s], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Segmented reductions (kernels)
# -----------------------------------------------------------------------------------------

_COMBINE = {"max": "maximum", "min": "minimum", "prod": "multiply"}


def _lowest_or_highest(kind: str, dtype) -> object:
    """The value of an empty unsorted segment: TF's reducer's initial value."""
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def _segment_sums(xp, ids, rows, n: int):
    """Row sums per id into ``[n, *inner]``, in row order; half floats in float32."""
    acc = np.float32 if rows.dtype == np.float16 else rows.dtype
    out = xp.zeros((n,) + rows.shape[1:], dtype=acc)
    if ids.shape[0]:
        scatter_add(xp, out, ids, rows.astype(acc, copy=False))
    return out


def _reduce_sorted(xp, kind: str, ids, rows, n: int, empty):
    """Reduces the rows of each run of equal, ascending, non-negative ``ids`` into
    ``[n, *inner]``; ids absent from ``ids`` get ``empty``."""
    if kind == "sum":
        return _segment_sums(xp, ids, rows, n).astype(rows.dtype, copy=False)
    out = xp.full((n,) + rows.shape[1:], empty, dtype=rows.dtype)
    m = ids.shape[0]
    if m == 0:
        return out
    combine = getattr(xp, _COMBINE[kind])
    vals = rows.copy()
    lead = (-1,) + (1,) * (rows.ndim - 1)
    step = 1
    # Inclusive segmented scan: after the pass of width ``step`` each row holds the
    # reduction of up to 2 * step rows of its run ending at it.
    while step < m:
        same = (ids[step:] == ids[:-step]).reshape(lead)
        vals[step:] = xp.where(same, combine(vals[step:], vals[:-step]), vals[step:])
        step *= 2
    last = xp.concatenate([ids[1:] != ids[:-1], xp.ones(1, dtype=bool)])
    out[ids[last]] = vals[last]
    return out


def _unsorted_reduce(xp, kind: str, data, segment_ids, num_segments):
    """The UnsortedSegment<kind> kernel: ids index rows of ``data``'s leading dims."""
    n = int(num_segments)
    if n < 0:
        raise _invalid(f"Input num_segments == {n} must not be negative.")
    ids_shape = segment_ids.shape
    if data.shape[: segment_ids.ndim] != ids_shape:
        raise _invalid(
            f"data.shape = {dims_text(data.shape)} does not start with segment_ids.shape = "
            f"{dims_text(ids_shape)}"
        )
    ids = segment_ids.reshape(-1)
    rows = data.reshape(ids.shape + data.shape[segment_ids.ndim :])
    too_big = ids >= n
    if bool(too_big.any()):
        i = int(xp.argmax(too_big))
        raise _invalid(
            f"segment_ids{_position(i, ids_shape)} = {int(ids[i])} is out of range [0, {n})"
        )
    keep = ids >= 0  # TF drops the rows of negative ids
    if not bool(keep.all()):
        ids, rows = ids[keep], rows[keep]
    if kind != "sum":
        order = xp.argsort(ids, kind="stable")
        ids, rows = ids[order], rows[order]
    return _reduce_sorted(xp, kind, ids, rows, n, _lowest_or_highest(kind, data.dtype))


def _check_sorted_ids(xp, data, segment_ids) -> int:
    """The number of output rows of a sorted segment reduction (last id + 1), after TF's
    checks of the ids."""
    if segment_ids.ndim != 1:
        raise _invalid(f"segment_ids should be a vector, got shape {dims_text(segment_ids.shape)}")
    if data.ndim == 0:
        raise _invalid("input must be at least rank 1")
    m = segment_ids.shape[0]
    if data.shape[0] != m:
        raise _invalid("segment_ids should be the same size as dimension 0 of input.")
    if m == 0:
        return 0
    n = int(segment_ids[-1]) + 1
    if m > 1 and bool((segment_ids[1:] < segment_ids[:-1]).any()):
        raise _invalid("segment ids are not increasing")
    first = int(segment_ids[0])
    if first < 0:
        raise _invalid(
            f"Segment id {first} out of range [0, {n}), possibly because 'segment_ids' input "
            "is not sorted."
        )
    return n


def _segment_mean(xp, data, ids, n: int):
    """Means of the runs of ``ids`` (0 for absent ids); integers divide truncating, as TF."""
    sums = _segment_sums(xp, ids, data, n)
    counts = xp.maximum(xp.bincount(ids, minlength=n)[:n], 1)
    counts = counts.reshape((n,) + (1,) * (data.ndim - 1)).astype(sums.dtype)
    if data.dtype.kind == "f":
        return (sums / counts).astype(data.dtype, copy=False)
    return (xp.sign(sums) * (xp.abs(sums) // counts)).astype(data.dtype, copy=False)


def _sorted_reduce(xp, kind: str, data, segment_ids):
    """The Segment<kind> kernel: sorted ids, one output row per id up to the last one."""
    n = _check_sorted_ids(xp, data, segment_ids)
    if kind == "mean":
        return _segment_mean(xp, data, segment_ids, n)
    return _reduce_sorted(xp, kind, segment_ids, data, n, 1 if kind == "prod" else 0)


# -----------------------------------------------------------------------------------------
# Segmented reductions (shapes and gradients)
# -----------------------------------------------------------------------------------------


def _unsorted_infer(o):
    data, ids, num_segments = o._inputs
    dtype = check_dtype(o, 0, NUMERIC)
    check_dtype(o, 1, INDEX, "Tindices")
    check_dtype(o, 2, INDEX, "Tnumsegments")
    if num_segments._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {num_segments._shape.rank}")
    v = constant_value(num_segments)
    n = None if v is None else int(v)
    if n is not None and n < 0:
        raise ShapeError(
            f"Dimension size, given by scalar input 2, must be non-negative but is {n}"
        )
    d, i = _dims(data), _dims(ids)
    if d is None or i is None:
        return [(dtype, unknown_shape())]
    if len(i) > len(d):
        raise ShapeError(f"Shape must be at least rank {len(i)} but is rank {len(d)}")
    for a, b in zip(d, i):
        if a is not None and b is not None and a != b:
            raise ShapeError(f"Dimensions must be equal, but are {a} and {b}")
    return [(dtype, TensorShape([n] + d[len(i) :]))]


def _sorted_infer(o):
    data, ids = o._inputs
    dtype = check_dtype(o, 0, NUMERIC)
    check_dtype(o, 1, INDEX, "Tindices")
    if ids._shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {ids._shape.rank}")
    d = _dims(data)
    if d is None:
        return [(dtype, unknown_shape())]
    if not d:
        raise ShapeError("Shape must be at least rank 1 but is rank 0")
    # As TF: the number of segments is the last id + 1, known only at run time.
    return [(dtype, TensorShape([None] + d[1:]))]


def _gather_drop_negatives(params, ids, zero_clipped=None, is_positive=None):
    """TF's helper: ``params`` gathered at ``ids``, zero where an id is negative; also the
    clipped ids and the mask of non-negative ids (broadcastable to the result), for reuse."""
    if zero_clipped is None:
        zero_clipped = math_ops.maximum(ids, array_ops.zeros_like(ids))
    gathered = slicing.gather(params, zero_clipped)
    if is_positive is None:
        is_positive = math_ops.greater_equal(ids, array_ops.zeros_like(ids))
        # Shaped to broadcast against ``gathered`` (TF also tiles it to that shape; every
        # use here broadcasts).
        is_positive = array_ops.reshape(is_positive, _ids_shape_for(ids, gathered))
    zeros = array_ops.zeros_like(gathered)
    return math_ops.where_v2(is_positive, gathered, zeros), zero_clipped, is_positive


def _unsorted_sum_grad(o, g):
    return [_gather_drop_negatives(g, o.inputs[1])[0], None, None]


def _unsorted_min_max_grad(o, g):
    """TF's: the gradient of each segment split evenly among the entries equal to its
    max (min); entries of negative ids get 0."""
    data, ids, num_segments = o.inputs
    gathered, clipped, positive = _gather_drop_negatives(o.outputs[0], ids)
    selected = math_ops.logical_and(math_ops.equal(data, gathered), positive)
    count = unsorted_segment_sum(math_ops.cast(selected, g.dtype), ids, num_segments)
    shares, _, _ = _gather_drop_negatives(math_ops.divide(g, count), None, clipped, positive)
    return [math_ops.where_v2(selected, shares, array_ops.zeros_like(shares)), None, None]


def _prod_grad(o, g, sorted_ids: bool):
    """TF's product gradient, exact with zeros: the product of the others for the one zero
    of a segment, 0 everywhere in a segment with two zeros or more."""
    data, ids = o.inputs[0], o.inputs[1]
    extra = o.inputs[2:]

    def reduce(kind, x):
        name = ("Segment" if sorted_ids else "UnsortedSegment") + kind
        return create(name, [x, ids, *extra], {}, None).outputs[0]

    is_zero = math_ops.equal(data, array_ops.zeros_like(data))
    num_zeros = reduce("Sum", math_ops.cast(is_zero, dtypes.int32))
    g = math_ops.where_v2(math_ops.greater(num_zeros, 1), array_ops.zeros_like(g), g)
    non_zero_data = math_ops.where_v2(is_zero, array_ops.ones_like(data), data)
    non_zero_prod = reduce("Prod", non_zero_data)
    clipped = ids if sorted_ids else math_ops.maximum(ids, array_ops.zeros_like(ids))
    gathered_prod = slicing.gather(o.outputs[0], clipped)
    gathered_non_zero = slicing.gather(non_zero_prod, clipped)
    # TF divides by the data of the unsorted op (inf/nan where it is 0, then not selected)
    # and by the zero-free data of the sorted one.
    by_element = math_ops.divide(gathered_prod, non_zero_data if sorted_ids else data)
    partial = math_ops.where_v2(is_zero, gathered_non_zero, by_element)
    if sorted_ids:
        return [slicing.gather(g, ids) * partial, None]
    return [_gather_drop_negatives(g, ids, clipped)[0] * partial, None, None]


def _segment_sum_grad(o, g):
    return [slicing.gather(g, o.inputs[1]), None]


def _segment_mean_grad(o, g):
    """TF's: the gradient divided by the segment sizes, gathered back to the rows."""
    data, ids = o.inputs
    ones = array_ops.ones(_ids_shape_for(ids, data), dtype=g.dtype)
    return [slicing.gather(math_ops.divide(g, segment_sum(ones, ids)), ids), None]


def _segment_min_max_grad(o, g):
    """TF's: each segment's gradient split evenly among the entries equal to its max (min)."""
    data, ids = o.inputs
    selected = math_ops.equal(data, slicing.gather(o.outputs[0], ids))
    count = segment_sum(math_ops.cast(selected, g.dtype), ids)
    shares = slicing.gather(math_ops.divide(g, count), ids)
    return [math_ops.where_v2(selected, shares, array_ops.zeros_like(data)), None]


def _register_unsorted(kind: str, grad) -> None:
    def kernel(xp, data, segment_ids, num_segments):
        return _unsorted_reduce(xp, kind, data, segment_ids, num_segments)

    op(
        "UnsortedSegment" + kind.capitalize(),
        infer=_unsorted_infer,
        inputs=("data", "segment_ids", "num_segments"),
        grad=_float_only(grad),
        flags=OpFlags(host_inputs=(2,)),
    )(kernel)


def _register_sorted(kind: str, grad) -> None:
    def kernel(xp, data, segment_ids):
        return _sorted_reduce(xp, kind, data, segment_ids)

    op(
        "Segment" + kind.capitalize(),
        infer=_sorted_infer,
        inputs=("data", "segment_ids"),
        grad=_float_only(grad),
    )(kernel)


_register_unsorted("sum", _unsorted_sum_grad)
_register_unsorted("max", _unsorted_min_max_grad)
_register_unsorted("min", _unsorted_min_max_grad)
_register_unsorted("prod", lambda o, g: _prod_grad(o, g, sorted_ids=False))
_register_sorted("sum", _segment_sum_grad)
_register_sorted("mean", _segment_mean_grad)
_register_sorted("max", _segment_min_max_grad)
_register_sorted("min", _segment_min_max_grad)
_register_sorted("prod", lambda o, g: _prod_grad(o, g, sorted_ids=True))


# -----------------------------------------------------------------------------------------
# Segmented reductions (public functions)
# -----------------------------------------------------------------------------------------


def _unsorted(op_type: str, data, segment_ids, num_segments, name) -> Tensor:
    with name_scope(name, op_type, [data, segment_ids, num_segments]) as scope:
        d = convert_to_tensor(data, name="data")
        i = convert_to_tensor(segment_ids, dtype_hint=dtypes.int32, name="segment_ids")
        n = convert_to_tensor(num_segments, dtype_hint=dtypes.int32, name="num_segments")
        return create(op_type, [d, i, n], {}, scope).outputs[0]


def _sorted(op_type: str, data, segment_ids, name) -> Tensor:
    with name_scope(name, op_type, [data, segment_ids]) as scope:
        d = convert_to_tensor(data, name="data")
        i = convert_to_tensor(segment_ids, dtype_hint=dtypes.int32, name="segment_ids")
        return create(op_type, [d, i], {}, scope).outputs[0]


def unsorted_segment_sum(data, segment_ids, num_segments, name=None) -> Tensor:
    """Sums of the rows of ``data`` per id: ``out[j] = sum(data[i] for segment_ids[i] == j)``
    for ``j < num_segments``; rows of negative ids are dropped, empty segments are 0.

    ``segment_ids`` may have several dims: they index ``data``'s leading ones.
    """
    return _unsorted("UnsortedSegmentSum", data, segment_ids, num_segments, name)


def unsorted_segment_max(data, segment_ids, num_segments, name=None) -> Tensor:
    """Maxima per id (see ``unsorted_segment_sum``); an empty segment holds the lowest value
    of the dtype."""
    return _unsorted("UnsortedSegmentMax", data, segment_ids, num_segments, name)


def unsorted_segment_min(data, segment_ids, num_segments, name=None) -> Tensor:
    """Minima per id (see ``unsorted_segment_sum``); an empty segment holds the highest value
    of the dtype."""
    return _unsorted("UnsortedSegmentMin", data, segment_ids, num_segments, name)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None) -> Tensor:
    """Products per id (see ``unsorted_segment_sum``); an empty segment is 1."""
    return _unsorted("UnsortedSegmentProd", data, segment_ids, num_segments, name)


def _unsorted_segment_n(data: Tensor, segment_ids: Tensor, num_segments) -> Tensor:
    """The size of each segment (at least 1), shaped to broadcast against the sums."""
    num_segments = convert_to_tensor(num_segments, dtype_hint=dtypes.int32)
    ones = array_ops.ones(array_ops._shape_of(segment_ids), dtype=data.dtype)
    n = unsorted_segment_sum(ones, segment_ids, num_segments)
    rd, ri = data.shape.rank, segment_ids.shape.rank
    if rd is not None and ri is not None:
        shape = [-1] + [1] * (rd - ri)
    else:
        extra = array_transform.stack([array_ops.rank(data) - array_ops.rank(segment_ids)])
        tail = array_ops.ones(extra, dtype=base(num_segments))
        shape = array_transform.concat([array_ops.reshape(num_segments, [1]), tail], 0)
    return math_ops.maximum(array_ops.reshape(n, shape), 1)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None) -> Tensor:
    """Means per id (see ``unsorted_segment_sum``): the sums divided by the segment sizes;
    empty segments are 0. Integer data gives floats (Python 3 division), as in TF."""
    with name_scope(name, "UnsortedSegmentMean"):
        data = convert_to_tensor(data, name="data")
        segment_ids = convert_to_tensor(segment_ids, dtype_hint=dtypes.int32)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        return unsorted_segment_sum(data, segment_ids, num_segments) / n


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None) -> Tensor:
    """Sums per id (see ``unsorted_segment_sum``) divided by the square root of the segment
    sizes; empty segments are 0. Floating data only."""
    with name_scope(name, "UnsortedSegmentSqrtN"):
        data = convert_to_tensor(data, name="data")
        segment_ids = convert_to_tensor(segment_ids, dtype_hint=dtypes.int32)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        summed = unsorted_segment_sum(data, segment_ids, num_segments)
        return summed / math_ops.sqrt(n)


def segment_sum(data, segment_ids, name=None) -> Tensor:
    """Sums of the rows of ``data`` per id, for sorted ``segment_ids`` (a vector as long as
    ``data``'s first dim): one output row per id up to the last one, gaps 0.

    >>> segment_sum([1.0, 2.0, 4.0], [0, 0, 2])  # [3, 0, 4]
    """
    return _sorted("SegmentSum", data, segment_ids, name)


def segment_mean(data, segment_ids, name=None) -> Tensor:
    """Means per sorted id (see ``segment_sum``); integers divide truncating, gaps are 0."""
    return _sorted("SegmentMean", data, segment_ids, name)


def segment_max(data, segment_ids, name=None) -> Tensor:
    """Maxima per sorted id (see ``segment_sum``); gaps are 0, as in TF."""
    return _sorted("SegmentMax", data, segment_ids, name)


def segment_min(data, segment_ids, name=None) -> Tensor:
    """Minima per sorted id (see ``segment_sum``); gaps are 0, as in TF."""
    return _sorted("SegmentMin", data, segment_ids, name)


def segment_prod(data, segment_ids, name=None) -> Tensor:
    """Products per sorted id (see ``segment_sum``); gaps are 1."""
    return _sorted("SegmentProd", data, segment_ids, name)
