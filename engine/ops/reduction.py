"""Reductions (sum, mean, max, min, prod, any, all and the ops composed from them), arg max/min
and cumulative sums.

Reduction ops take the axes as an int32/int64 input tensor (``reduction_indices``) and a
``keep_dims`` attr, as in TF; the axes need not be known while building the graph.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops._common import BOOL, INDEX, NUMERIC, check_dtype, create
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
           "reduce_all", "reduce_logsumexp", "count_nonzero", "argmax", "argmin", "cumsum"]

# -----------------------------------------------------------------------------------------
# Shared helpers
# -----------------------------------------------------------------------------------------


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _accumulator(dtype):
    # float16 sums lose too much precision when accumulated in float16.
    return np.float32 if dtype == np.float16 else dtype


def _deprecated_arg(new_name, new, old_name, old):
    """TF's ``deprecated_argument_lookup``: the new name wins; both at once is an error."""
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
    return new if new is not None else old


# -----------------------------------------------------------------------------------------
# Reduction ops: Sum, Mean, Max, Min, Prod, Any, All
# -----------------------------------------------------------------------------------------


def _reduction_infer(allowed):
    def infer(o):
        x, axis = o._inputs
        if allowed is BOOL:
            d = x._dtype.base_dtype
            if d is not dtypes.bool:
                raise TypeError(f"Input 'input' of '{o._type}' Op has type {d.name} that does "
                                "not match expected type of bool.")
        else:
            d = check_dtype(o, 0, allowed)
        check_dtype(o, 1, INDEX, attr="Tidx")
        if axis._shape.rank is not None and axis._shape.rank > 1:
            raise ShapeError(f"Shape must be at most rank 1 but is rank {axis._shape.rank}")
        keep_dims = o._attrs["keep_dims"]
        rank = x._shape.rank
        value = constant_value(axis)
        if value is None or rank is None:
            # Without the axes only keep_dims tells the output rank.
            return [(d, unknown_shape(rank) if keep_dims and rank is not None
                     else unknown_shape())]
        reduced = set()
        for a in np.reshape(value, -1).tolist():
            if not -rank <= a < rank:
                raise ShapeError(f"Invalid reduction dimension {a} for input with {rank} "
                                 "dimensions.")
            reduced.add(a + rank if a < 0 else a)
        dims = []
        for i, n in enumerate(x._shape.as_tuple()):
            if i not in reduced:
                dims.append(n)
            elif keep_dims:
                dims.append(1)
        return [(d, TensorShape._from_tuple(tuple(dims)))]

    return infer


def _reduction_axes(x, axis) -> tuple[int, ...]:
    """The axes to reduce, normalized; InvalidArgumentError as TF's runtime reports it."""
    rank = x.ndim
    out = []
    for a in axis.reshape(-1).tolist():
        if not -rank <= a < rank:
            raise _invalid(f"Invalid reduction dimension ({a} for input with {rank} "
                           "dimension(s)")
        a = a + rank if a < 0 else a
        if a in out:
            raise _invalid(f"Invalid reduction arguments: Axes contains duplicate dimension: {a}")
        out.append(a)
    return tuple(out)


def _reduced_shape(shape, axes, keep_dims) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _sum_kernel(xp, x, axis, *, keep_dims):
    axes = _reduction_axes(x, axis)
    r = xp.sum(x, axis=axes, keepdims=keep_dims, dtype=_accumulator(x.dtype))
    return xp.asarray(r).astype(x.dtype, copy=False)


def _prod_kernel(xp, x, axis, *, keep_dims):
    axes = _reduction_axes(x, axis)
    r = xp.prod(x, axis=axes, keepdims=keep_dims, dtype=_accumulator(x.dtype))
    return xp.asarray(r).astype(x.dtype, copy=False)


def _mean_kernel(xp, x, axis, *, keep_dims):
    axes = _reduction_axes(x, axis)
    count = 1
    for a in axes:
        count *= x.shape[a]
    if x.dtype.kind in "iu":
        # Integer means accumulate in 64 bits and truncate toward zero, as TF's do.
        wide = np.uint64 if x.dtype.kind == "u" else np.int64
        s = xp.asarray(xp.sum(x, axis=axes, keepdims=keep_dims, dtype=wide))
        if count == 0:
            return xp.zeros(s.shape, dtype=x.dtype)
        q = s // count
        if x.dtype.kind == "i":
            q = q + ((s % count != 0) & (s < 0)).astype(q.dtype)
        return q.astype(x.dtype)
    s = xp.asarray(xp.sum(x, axis=axes, keepdims=keep_dims, dtype=_accumulator(x.dtype)))
    if count == 0:
        return xp.full(s.shape, np.nan, dtype=x.dtype)
    return (s / count).astype(x.dtype, copy=False)


def _extremum_kernel(fn_name, identity):
    def kernel(xp, x, axis, *, keep_dims):
        axes = _reduction_axes(x, axis)
        if x.size == 0:
            # TF reduces empty sets to the reduction's identity instead of failing.
            shape = _reduced_shape(x.shape, axes, keep_dims)
            return xp.full(shape, identity(x.dtype), dtype=x.dtype)
        return xp.asarray(getattr(xp, fn_name)(x, axis=axes, keepdims=keep_dims))

    return kernel


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def _logical_kernel(fn_name):
    def kernel(xp, x, axis, *, keep_dims):
        axes = _reduction_axes(x, axis)
        return xp.asarray(getattr(xp, fn_name)(x, axis=axes, keepdims=keep_dims))

    return kernel


_REDUCTIONS = [
    ("Sum", NUMERIC, _sum_kernel),
    ("Mean", NUMERIC, _mean_kernel),
    ("Max", NUMERIC, _extremum_kernel("max", _lowest)),
    ("Min", NUMERIC, _extremum_kernel("min", _highest)),
    ("Prod", NUMERIC, _prod_kernel),
    ("Any", BOOL, _logical_kernel("any")),
    ("All", BOOL, _logical_kernel("all")),
]

for _name, _allowed, _kernel in _REDUCTIONS:
    op(_name, infer=_reduction_infer(_allowed), inputs=("input", "reduction_indices"))(_kernel)


def _all_axes(input_tensor):
    """``[0, rank)`` for ``axis=None``, built outside the op's scope as TF builds it."""
    shape = getattr(input_tensor, "shape", None)
    rank = shape.rank if isinstance(shape, TensorShape) else np.ndim(input_tensor)
    if rank is not None:
        return constant(np.arange(rank, dtype=np.int32))
    return array_ops.range(0, array_ops.rank(input_tensor))


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    axis = _deprecated_arg("axis", axis, "reduction_indices", reduction_indices)
    keepdims = _deprecated_arg("keepdims", keepdims, "keep_dims", keep_dims)
    keepdims = False if keepdims is None else bool(keepdims)
    all_axes = _all_axes(input_tensor) if axis is None else None
    with name_scope(name, op_type, [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor, name="input")
        if all_axes is None:
            axes = convert_to_tensor(axis, dtype_hint=dtypes.int32, name="reduction_indices")
        else:
            axes = all_axes
        out = create(op_type, [x, axes], {"keep_dims": keepdims}, scope).outputs[0]
    if axis is None and not keepdims:
        out.set_shape([])  # TF's _may_reduce_to_scalar: known even for an unknown rank
    return out


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """The sum of elements across ``axis`` (all axes when None), in the input's dtype.

    >>> reduce_sum([[1, 1, 1], [1, 1, 1]], axis=1)  # [3, 3]
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None) -> Tensor:
    """The mean across ``axis``; integer means truncate toward zero (``[1, 2]`` gives 1)."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """The maximum across ``axis``; an empty reduction gives the dtype's lowest value."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """The minimum across ``axis``; an empty reduction gives the dtype's highest value."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None) -> Tensor:
    """The product of elements across ``axis``, in the input's dtype."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Logical or of a bool tensor across ``axis``."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Logical and of a bool tensor across ``axis``."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


# -----------------------------------------------------------------------------------------
# Composed reductions
# -----------------------------------------------------------------------------------------


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None) -> Tensor:
    """``log(sum(exp(x)))`` across ``axis``, computed without overflow for large inputs.

    >>> reduce_logsumexp([1000.0, 1000.0])  # 1000.6931
    """
    axis = _deprecated_arg("axis", axis, "reduction_indices", reduction_indices)
    keepdims = _deprecated_arg("keepdims", keepdims, "keep_dims", keep_dims)
    keepdims = False if keepdims is None else bool(keepdims)
    x = convert_to_tensor(input_tensor)
    with name_scope(name, "ReduceLogSumExp", [x]) as scope:
        raw_max = reduce_max(x, axis=axis, keepdims=True)
        # An infinite max (all -inf, or an inf) would turn x - max into nan: shift by 0 then.
        is_finite = math_ops.is_finite(raw_max)
        with name_scope(None, "SelectV2") as select_scope:
            zero = constant(0, dtype=raw_max.dtype.base_dtype, name="e")
            finite_max = create("SelectV2", [is_finite, raw_max, zero], {},
                                select_scope).outputs[0]
        my_max = array_ops.stop_gradient(finite_max)
        result = math_ops.log(reduce_sum(math_ops.exp(math_ops.subtract(x, my_max)), axis=axis,
                                         keepdims=keepdims))
        if not keepdims:
            my_max = array_ops.reshape(my_max, array_ops.shape(result))
        result = math_ops.add(result, my_max, name=scope)
    if axis is None and not keepdims:
        result.set_shape([])
    return result


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None) -> Tensor:  # noqa: A002
    """The number of non-zero (non-empty for strings, True for bools) elements across ``axis``.

    >>> count_nonzero([[0, 1], [2, 0]], axis=0)  # [1, 1]
    """
    input_tensor = _deprecated_arg("input", input, "input_tensor", input_tensor)
    axis = _deprecated_arg("axis", axis, "reduction_indices", reduction_indices)
    keepdims = _deprecated_arg("keepdims", keepdims, "keep_dims", keep_dims)
    keepdims = False if keepdims is None else bool(keepdims)
    with name_scope(name, "count_nonzero", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        zero = array_ops.zeros([], dtype=x.dtype.base_dtype)
        nonzero = math_ops.cast(math_ops.not_equal(x, zero), dtypes.int64)
        return math_ops.cast(reduce_sum(nonzero, axis=axis, keepdims=keepdims), dtype=dtype)


# -----------------------------------------------------------------------------------------
# ArgMax, ArgMin
# -----------------------------------------------------------------------------------------

_ARG_OUTPUT_TYPES = frozenset([dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.int64])


def _arg_infer(o):
    x, dim = o._inputs
    check_dtype(o, 0, NUMERIC | BOOL)
    check_dtype(o, 1, INDEX, attr="Tidx")
    out_type = o._attrs["output_type"]
    if out_type not in _ARG_OUTPUT_TYPES:
        raise TypeError(f"Value for attr 'output_type' of {out_type.name} is not in the list of "
                        "allowed values: int16, uint16, int32, int64")
    if dim._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {dim._shape.rank}")
    rank = x._shape.rank
    if rank is None:
        return [(out_type, unknown_shape())]
    if rank <= 1:
        return [(out_type, TensorShape([]))]
    value = constant_value(dim)
    if value is None:
        return [(out_type, unknown_shape(rank - 1))]
    a = int(value)
    if not -rank <= a < rank:
        raise ShapeError(f"Dimension ({a}) must be in the range [{-rank}, {rank}), where {rank} "
                         "is the number of dimensions in the input.")
    dims = list(x._shape.as_tuple())
    del dims[a + rank if a < 0 else a]
    return [(out_type, TensorShape(dims))]


def _arg_kernel(fn_name, nan_fill):
    def kernel(xp, x, dimension, *, output_type):
        rank = x.ndim
        a = int(dimension)
        if not -rank <= a < rank:
            raise _invalid(f"Expected dimension in the range [{-rank}, {rank}), but got {a}")
        a = a + rank if a < 0 else a
        if x.shape[a] == 0:
            raise _invalid(f"Reduction axis {a} is empty in shape {_shape_str(x.shape)}")
        if x.dtype.kind == "f":
            # TF's comparisons skip NaNs (an all-NaN slice gives 0); numpy's would pick them.
            x = xp.where(xp.isnan(x), x.dtype.type(nan_fill), x)
        return xp.asarray(getattr(xp, fn_name)(x, axis=a)).astype(output_type.np)

    return kernel


op("ArgMax", infer=_arg_infer, inputs=("input", "dimension"))(_arg_kernel("argmax", -np.inf))
op("ArgMin", infer=_arg_infer, inputs=("input", "dimension"))(_arg_kernel("argmin", np.inf))


def _arg(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    axis = _deprecated_arg("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    with name_scope(name, op_type, [input]) as scope:
        x = convert_to_tensor(input, name="input")
        dim = convert_to_tensor(axis, dtype_hint=dtypes.int32, name="dimension")
        attrs = {"output_type": dtypes.as_dtype(output_type).base_dtype}
        return create(op_type, [x, dim], attrs, scope).outputs[0]


def argmax(input, axis=None, name=None, dimension=None,  # noqa: A002 - TF's argument name
           output_type=dtypes.int64) -> Tensor:
    """The index of the largest value along ``axis`` (default 0); ties give the first index.

    >>> argmax([[1, 3, 3], [2, 2, 0]], axis=1)  # [1, 0]
    """
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None,  # noqa: A002 - TF's argument name
           output_type=dtypes.int64) -> Tensor:
    """The index of the smallest value along ``axis`` (default 0); ties give the first index."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


# -----------------------------------------------------------------------------------------
# Cumsum
# -----------------------------------------------------------------------------------------


def _cumsum_infer(o):
    d = check_dtype(o, 0, NUMERIC)
    check_dtype(o, 1, INDEX, attr="Tidx")
    # As in TF the axis is checked when the op runs, even when it is a constant.
    return [(d, o._inputs[0]._shape)]


@op("Cumsum", infer=_cumsum_infer, inputs=("x", "axis"))
def _cumsum_kernel(xp, x, axis, *, exclusive, reverse):
    if axis.ndim != 0:
        raise _invalid(f"ScanOp: axis must be a scalar, not {_shape_str(axis.shape)}")
    rank = x.ndim
    a = int(axis)
    if not -rank <= a < rank:
        raise _invalid(f"ScanOp: Expected scan axis in the range [{-rank}, {rank}), but got {a}")
    a = a + rank if a < 0 else a
    if reverse:
        x = xp.flip(x, a)
    out = xp.cumsum(x, axis=a, dtype=_accumulator(x.dtype)).astype(x.dtype, copy=False)
    if exclusive:
        shifted = xp.zeros_like(out)
        dst = (slice(None),) * a + (slice(1, None),)
        src = (slice(None),) * a + (slice(None, -1),)
        shifted[dst] = out[src]
        out = shifted
    return xp.flip(out, a) if reverse else out


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Cumulative sum along ``axis``; ``exclusive`` leaves each element out of its own sum
    and ``reverse`` sums from the end.

    >>> cumsum([1, 2, 3], exclusive=True)  # [0, 1, 3]
    """
    with name_scope(name, "Cumsum", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        a = convert_to_tensor(axis, dtype_hint=dtypes.int32, name="axis")
        return create("Cumsum", [x, a], {"exclusive": bool(exclusive), "reverse": bool(reverse)},
                      scope).outputs[0]
