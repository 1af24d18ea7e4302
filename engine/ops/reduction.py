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
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import array_transform, slicing
from engine.ops import math as math_ops
from engine.ops._common import BOOL, INDEX, NUMERIC, check_dtype, create
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = [
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_any",
    "reduce_all",
    "reduce_logsumexp",
    "count_nonzero",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
]

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
                raise TypeError(
                    f"Input 'input' of '{o._type}' Op has type {d.name} that does "
                    "not match expected type of bool."
                )
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
            return [(d, unknown_shape(rank) if keep_dims and rank is not None else unknown_shape())]
        reduced = set()
        for a in np.reshape(value, -1).tolist():
            if not -rank <= a < rank:
                raise ShapeError(
                    f"Invalid reduction dimension {a} for input with {rank} dimensions."
                )
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
            raise _invalid(f"Invalid reduction dimension ({a} for input with {rank} dimension(s)")
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


# -- gradients (TF's formulas) --------------------------------------------------------------
#
# dy has the reduced shape; it goes back to the input's shape by a reshape that keeps the
# reduced dims as 1 (skipped with keep_dims) and a broadcast. Both are static lists when the
# input shape and the axes are known while building, else computed from ``shape(x)``.


def _static_axes(o) -> tuple[int, ...] | None:
    """The reduced axes, normalized and sorted, when the rank and the axes are static."""
    rank = o.inputs[0].shape.rank
    value = constant_value(o.inputs[1])
    if rank is None or value is None:
        return None
    return tuple(sorted({a + rank if a < 0 else a for a in np.reshape(value, -1).tolist()}))


def _reduced_mask(o) -> Tensor:
    """A bool vector over the input's dims, True where reduced."""
    x, axes = o.inputs
    static = _static_axes(o)
    if static is not None:
        return constant(np.array([i in static for i in range(x.shape.rank)], dtype=bool))
    rank = array_ops.rank(x)
    axes = math_ops.cast(array_ops.reshape(axes, [-1]), dtypes.int32)
    axes = math_ops.where_v2(math_ops.less(axes, 0), math_ops.add(axes, rank), axes)
    hits = math_ops.equal(
        array_ops.reshape(array_ops.range(0, rank), [-1, 1]), array_ops.reshape(axes, [1, -1])
    )
    return reduce_any(hits, axis=1)


def _kept_dims_shape(o):
    """The output shape with reduced dims kept as 1: ints when static, else an int32 tensor."""
    x = o.inputs[0]
    static = _static_axes(o)
    if static is not None and x.shape.is_fully_defined():
        return [1 if i in static else d for i, d in enumerate(x.shape.as_list())]
    return math_ops.where_v2(_reduced_mask(o), 1, array_ops.shape(x))


def _input_shape(x):
    return x.shape.as_list() if x.shape.is_fully_defined() else array_ops.shape(x)


def _with_kept_dims(o, t: Tensor, kept=None) -> Tensor:
    """``t`` (of the op's output shape) reshaped so that the reduced dims are 1."""
    if o.get_attr("keep_dims"):
        return t
    kept = _kept_dims_shape(o) if kept is None else kept
    if isinstance(kept, list) and t.shape.is_fully_defined() and t.shape.as_list() == kept:
        return t
    return array_ops.reshape(t, kept)


def _broadcast_back(o, dy: Tensor) -> Tensor:
    """``dy`` broadcast from the reduced shape back to the input's shape."""
    x = o.inputs[0]
    dy = _with_kept_dims(o, dy)
    target = _input_shape(x)
    if isinstance(target, list) and dy.shape.is_fully_defined() and dy.shape.as_list() == target:
        return dy
    return array_transform.broadcast_to(dy, target)


def _sum_grad(o, dy):
    return [_broadcast_back(o, dy), None]


def _mean_grad(o, dy):
    grad = _broadcast_back(o, dy)
    x, y = o.inputs[0], o.outputs[0]
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        count = x.shape.num_elements() // max(y.shape.num_elements(), 1)
        count = constant(count, dtype=grad.dtype.base_dtype)
    else:
        dims = math_ops.where_v2(_reduced_mask(o), array_ops.shape(x), 1)
        count = math_ops.cast(reduce_prod(dims), grad.dtype.base_dtype)
    return [math_ops.realdiv(grad, count), None]


def _min_or_max_grad(o, dy):
    """dy goes to the elements equal to the result, split evenly among ties (TF's rule)."""
    x, axes = o.inputs
    kept = None if o.get_attr("keep_dims") else _kept_dims_shape(o)
    y = _with_kept_dims(o, o.outputs[0], kept)
    dy = _with_kept_dims(o, dy, kept)
    indicators = math_ops.cast(math_ops.equal(y, x), dy.dtype.base_dtype)
    num_selected = reduce_sum(indicators, axes, keepdims=True)
    return [math_ops.multiply(math_ops.realdiv(indicators, num_selected), dy), None]


def _invert_permutation(perm: Tensor) -> Tensor:
    """``inv`` with ``inv[perm[i]] = i`` for a 1-D int32 permutation."""
    n = array_ops.size(perm)
    hits = math_ops.equal(
        array_ops.reshape(perm, [-1, 1]), array_ops.reshape(array_ops.range(0, n), [1, -1])
    )
    return argmax(hits, axis=0, output_type=dtypes.int32)


def _prod_grad(o, dy):
    """The product of all other elements of each reduced group, times dy.

    As in TF: the reduced dims are moved to the front and flattened into one, and the
    product of the others is ``exclusive cumprod * reverse exclusive cumprod``, which is
    exact with any number of zeros (no division by the input).
    """
    x = o.inputs[0]
    grad = _broadcast_back(o, dy)
    static = _static_axes(o)
    if static is not None:
        if not static:
            return [grad, None]
        rank = x.shape.rank
        perm = list(static) + [i for i in range(rank) if i not in static]
        inverse = [perm.index(i) for i in range(rank)]
    else:
        idx = array_ops.range(0, array_ops.rank(x))
        mask = _reduced_mask(o)
        perm = array_transform.concat(
            [
                slicing.boolean_mask(idx, mask),
                slicing.boolean_mask(idx, math_ops.logical_not(mask)),
            ],
            0,
        )
        inverse = _invert_permutation(perm)
    if static is not None and x.shape.is_fully_defined():
        dims = x.shape.as_list()
        reduced_num = int(np.prod([dims[i] for i in static], dtype=np.int64))
        flat_shape = [reduced_num, x.shape.num_elements() // max(reduced_num, 1)]
    else:
        mask, shape_x = _reduced_mask(o), array_ops.shape(x)
        flat_shape = array_transform.stack(
            [
                reduce_prod(math_ops.where_v2(mask, shape_x, 1)),
                reduce_prod(math_ops.where_v2(mask, 1, shape_x)),
            ]
        )
    identity = isinstance(perm, list) and perm == sorted(perm)
    permuted = x if identity else array_ops.transpose(x, perm)
    flat = array_ops.reshape(permuted, flat_shape)
    left = cumprod(flat, axis=0, exclusive=True)
    right = cumprod(flat, axis=0, exclusive=True, reverse=True)
    others = array_ops.reshape(math_ops.multiply(left, right), array_ops.shape(permuted))
    if not identity:
        others = array_ops.transpose(others, inverse)
    return [math_ops.multiply(grad, others), None]


_REDUCTIONS = [
    ("Sum", NUMERIC, _sum_kernel, _sum_grad),
    ("Mean", NUMERIC, _mean_kernel, _mean_grad),
    ("Max", NUMERIC, _extremum_kernel("max", _lowest), _min_or_max_grad),
    ("Min", NUMERIC, _extremum_kernel("min", _highest), _min_or_max_grad),
    ("Prod", NUMERIC, _prod_kernel, _prod_grad),
    ("Any", BOOL, _logical_kernel("any"), None),
    ("All", BOOL, _logical_kernel("all"), None),
]

for _name, _allowed, _kernel, _grad in _REDUCTIONS:
    op(
        _name,
        infer=_reduction_infer(_allowed),
        grad=_grad,
        differentiable=_grad is not None,
        inputs=("input", "reduction_indices"),
        attrs=(Attr("keep_dims", "bool"),),
        flags=OpFlags(host_inputs=(1,)),
    )(_kernel)


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


def reduce_sum(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
    """The sum of elements across ``axis`` (all axes when None), in the input's dtype.

    >>> reduce_sum([[1, 1, 1], [1, 1, 1]], axis=1)  # [3, 3]
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
    """The mean across ``axis``; integer means truncate toward zero (``[1, 2]`` gives 1)."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
    """The maximum across ``axis``; an empty reduction gives the dtype's lowest value."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
    """The minimum across ``axis``; an empty reduction gives the dtype's highest value."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
    """The product of elements across ``axis``, in the input's dtype."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
    """Logical or of a bool tensor across ``axis``."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
    """Logical and of a bool tensor across ``axis``."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


# -----------------------------------------------------------------------------------------
# Composed reductions
# -----------------------------------------------------------------------------------------


def reduce_logsumexp(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> Tensor:
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
            finite_max = create("SelectV2", [is_finite, raw_max, zero], {}, select_scope).outputs[0]
        my_max = array_ops.stop_gradient(finite_max)
        result = math_ops.log(
            reduce_sum(math_ops.exp(math_ops.subtract(x, my_max)), axis=axis, keepdims=keepdims)
        )
        if not keepdims:
            my_max = array_ops.reshape(my_max, array_ops.shape(result))
        result = math_ops.add(result, my_max, name=scope)
    if axis is None and not keepdims:
        result.set_shape([])
    return result


def count_nonzero(
    input_tensor=None,
    axis=None,
    keepdims=None,
    dtype=dtypes.int64,
    name=None,
    reduction_indices=None,
    keep_dims=None,
    input=None,
) -> Tensor:  # noqa: A002
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
        raise TypeError(
            f"Value for attr 'output_type' of {out_type.name} is not in the list of "
            "allowed values: int16, uint16, int32, int64"
        )
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
        raise ShapeError(
            f"Dimension ({a}) must be in the range [{-rank}, {rank}), where {rank} "
            "is the number of dimensions in the input."
        )
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


op(
    "ArgMax",
    infer=_arg_infer,
    differentiable=False,
    inputs=("input", "dimension"),
    attrs=(Attr("output_type", "type"),),
    flags=OpFlags(host_inputs=(1,)),
)(_arg_kernel("argmax", -np.inf))
op(
    "ArgMin",
    infer=_arg_infer,
    differentiable=False,
    inputs=("input", "dimension"),
    attrs=(Attr("output_type", "type"),),
    flags=OpFlags(host_inputs=(1,)),
)(_arg_kernel("argmin", np.inf))


def _arg(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    axis = _deprecated_arg("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    with name_scope(name, op_type, [input]) as scope:
        x = convert_to_tensor(input, name="input")
        dim = convert_to_tensor(axis, dtype_hint=dtypes.int32, name="dimension")
        attrs = {"output_type": dtypes.as_dtype(output_type).base_dtype}
        return create(op_type, [x, dim], attrs, scope).outputs[0]


def argmax(
    input,
    axis=None,
    name=None,
    dimension=None,  # noqa: A002 - TF's argument name
    output_type=dtypes.int64,
) -> Tensor:
    """The index of the largest value along ``axis`` (default 0); ties give the first index.

    >>> argmax([[1, 3, 3], [2, 2, 0]], axis=1)  # [1, 0]
    """
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(
    input,
    axis=None,
    name=None,
    dimension=None,  # noqa: A002 - TF's argument name
    output_type=dtypes.int64,
) -> Tensor:
    """The index of the smallest value along ``axis`` (default 0); ties give the first index."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


# -----------------------------------------------------------------------------------------
# Cumsum, Cumprod
# -----------------------------------------------------------------------------------------


def _scan_infer(o):
    d = check_dtype(o, 0, NUMERIC)
    check_dtype(o, 1, INDEX, attr="Tidx")
    # As in TF the axis is checked when the op runs, even when it is a constant.
    return [(d, o._inputs[0]._shape)]


def _scan_kernel(fn_name, identity):
    def kernel(xp, x, axis, *, exclusive, reverse):
        if axis.ndim != 0:
            raise _invalid(f"ScanOp: axis must be a scalar, not {_shape_str(axis.shape)}")
        rank = x.ndim
        a = int(axis)
        if not -rank <= a < rank:
            raise _invalid(
                f"ScanOp: Expected scan axis in the range [{-rank}, {rank}), but got {a}"
            )
        a = a + rank if a < 0 else a
        if reverse:
            x = xp.flip(x, a)
        out = getattr(xp, fn_name)(x, axis=a, dtype=_accumulator(x.dtype))
        out = out.astype(x.dtype, copy=False)
        if exclusive:
            shifted = xp.full_like(out, identity)
            dst = (slice(None),) * a + (slice(1, None),)
            src = (slice(None),) * a + (slice(None, -1),)
            shifted[dst] = out[src]
            out = shifted
        return xp.flip(out, a) if reverse else out

    return kernel


def _cumsum_grad(o, dy):
    return [
        cumsum(
            dy, o.inputs[1], exclusive=o.get_attr("exclusive"), reverse=not o.get_attr("reverse")
        ),
        None,
    ]


def _cumprod_grad(o, dy):
    # TF's formula. It divides by x, so where x is 0 it gives 0 rather than the derivative
    # (reduce_prod's gradient, built from exclusive cumprods, is exact there).
    x, axis = o.inputs
    exclusive, reverse = o.get_attr("exclusive"), o.get_attr("reverse")
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(math_ops.multiply(prod, dy), axis, exclusive=exclusive, reverse=not reverse)
    is_zero = math_ops.equal(x, array_ops.zeros([], dtype=x.dtype.base_dtype))
    safe_x = math_ops.where_v2(is_zero, array_ops.ones_like(x), x)
    return [
        math_ops.where_v2(is_zero, array_ops.zeros_like(out), math_ops.realdiv(out, safe_x)),
        None,
    ]


op(
    "Cumsum",
    infer=_scan_infer,
    grad=_cumsum_grad,
    inputs=("x", "axis"),
    attrs=(
        Attr("exclusive", "bool"),
        Attr("reverse", "bool"),
    ),
    flags=OpFlags(host_inputs=(1,)),
)(_scan_kernel("cumsum", 0))
op(
    "Cumprod",
    infer=_scan_infer,
    grad=_cumprod_grad,
    inputs=("x", "axis"),
    attrs=(
        Attr("exclusive", "bool"),
        Attr("reverse", "bool"),
    ),
    flags=OpFlags(host_inputs=(1,)),
)(_scan_kernel("cumprod", 1))


def _scan(op_type, x, axis, exclusive, reverse, name):
    with name_scope(name, op_type, [x]) as scope:
        x = convert_to_tensor(x, name="x")
        a = convert_to_tensor(axis, dtype_hint=dtypes.int32, name="axis")
        return create(
            op_type, [x, a], {"exclusive": bool(exclusive), "reverse": bool(reverse)}, scope
        ).outputs[0]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Cumulative sum along ``axis``; ``exclusive`` leaves each element out of its own sum
    and ``reverse`` sums from the end.

    >>> cumsum([1, 2, 3], exclusive=True)  # [0, 1, 3]
    """
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Cumulative product along ``axis``; ``exclusive`` and ``reverse`` as in ``cumsum``.

    >>> cumprod([2, 3, 4], exclusive=True)  # [1, 2, 6]
    """
    return _scan("Cumprod", x, axis, exclusive, reverse, name)
