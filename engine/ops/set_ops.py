"""Set-like and rearranging array ops of TF1: ``unique``, ``unique_with_counts``,
``setdiff1d`` (op ``ListDiff``), ``roll``, ``ensure_shape`` and the composed ``repeat``.

``Unique``, ``UniqueWithCounts`` and ``ListDiff`` return data-dependent sizes, so their
leading output dimension is unknown statically; like TensorFlow they have no gradient. Their
kernels share one sort-based grouping that runs on numpy and cupy alike: a stable sort puts
equal values side by side in order of first occurrence, so NaNs (never equal to anything)
stay distinct and ``-0.0`` joins ``0.0`` under whichever came first, as in TF.

``Roll`` differentiates by rolling back, ``EnsureShape`` passes its gradient through, and
``repeat`` is built from tile, boolean_mask and reshape (TF's own composition), so it
differentiates, saves and runs wherever those ops do.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing
from engine.ops import math as math_ops
from engine.ops._common import ALL, INDEX, check_dtype, check_same_dtype, create, dims_text
from engine.tensor_shape import TensorShape, as_shape

__all__ = ["unique", "unique_with_counts", "setdiff1d", "roll", "ensure_shape", "repeat"]


def _index_dtype(value, param: str) -> dtypes.DType:
    """``value`` as an index dtype (int32 or int64); TypeError naming ``param`` otherwise."""
    d = dtypes.as_dtype(value).base_dtype
    if d not in INDEX:
        raise TypeError(
            f"Value passed to parameter '{param}' has DataType {d.name} not in list of "
            f"allowed values: int32, int64"
        )
    return d


def _vector_input(o, i: int) -> None:
    """Input ``i`` must be 1-D (TF's shape function message)."""
    rank = o._inputs[i]._shape.rank
    if rank is not None and rank != 1:
        raise ShapeError(f"Shape must be rank 1 but is rank {rank}")


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# -----------------------------------------------------------------------------------------
# Unique, UniqueWithCounts
# -----------------------------------------------------------------------------------------


def _unique_infer(with_counts: bool):
    def infer(o):
        d = check_dtype(o, 0, ALL)
        out_idx = _index_dtype(o._attrs["out_idx"], "out_idx")
        _vector_input(o, 0)
        n = o._inputs[0]._shape.as_list()[0] if o._inputs[0]._shape.rank == 1 else None
        outs = [(d, TensorShape([None])), (out_idx, TensorShape([n]))]
        return outs + [(out_idx, TensorShape([None]))] if with_counts else outs

    return infer


def _unique_groups(xp, x):
    """(positions of each distinct value's first occurrence, in that order; the group of
    every element), for a 1-D array of any dtype."""
    n = x.shape[0]
    order = xp.argsort(x, kind="stable")
    ordered = x[order]
    starts = xp.ones(n, dtype=bool)
    if n > 1:
        # ``!=`` makes every NaN a group of its own and puts -0.0 with 0.0 (TF's equality).
        starts[1:] = ordered[1:] != ordered[:-1]
    group_in_sorted = xp.cumsum(starts) - 1
    firsts = order[starts]
    # Renumber the groups, ordered by value so far, by first occurrence instead.
    by_first = xp.argsort(firsts)
    renumber = xp.empty_like(by_first)
    renumber[by_first] = xp.arange(by_first.shape[0])
    groups = xp.empty(n, dtype=np.int64)
    groups[order] = renumber[group_in_sorted]
    return firsts[by_first], groups


def _unique_values(xp, x, out_idx):
    if x.ndim != 1:
        raise _invalid("unique expects a 1D vector.")
    firsts, groups = _unique_groups(xp, x)
    return x[firsts], groups.astype(out_idx.np), firsts.shape[0]


@op(
    "Unique",
    infer=_unique_infer(with_counts=False),
    inputs=("x",),
    attrs=(Attr("out_idx", "type", default=dtypes.int32),),
    differentiable=False,
)
def _unique_kernel(xp, x, *, out_idx=dtypes.int32):
    y, idx, _ = _unique_values(xp, x, out_idx)
    return y, idx


@op(
    "UniqueWithCounts",
    infer=_unique_infer(with_counts=True),
    inputs=("x",),
    attrs=(Attr("out_idx", "type", default=dtypes.int32),),
    differentiable=False,
)
def _unique_with_counts_kernel(xp, x, *, out_idx=dtypes.int32):
    y, idx, n = _unique_values(xp, x, out_idx)
    counts = xp.bincount(idx.astype(np.int64), minlength=n).astype(out_idx.np)
    return y, idx, counts


Unique = namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def unique(x, out_idx=dtypes.int32, name=None) -> Unique:
    """The distinct values of the 1-D ``x`` in order of first occurrence, and for each
    element of ``x`` the index of its value in ``y`` (dtype ``out_idx``).

    >>> y, idx = unique([1, 1, 2, 4, 4, 4, 7, 8, 8])  # [1, 2, 4, 7, 8], [0, 0, 1, 2, 2, 2, 3, 4, 4]
    """
    with name_scope(name, "Unique", [x]) as scope:
        xt = convert_to_tensor(x, name="x")
        o = create("Unique", [xt], {"out_idx": _index_dtype(out_idx, "out_idx")}, scope)
        return Unique(*o.outputs)


def unique_with_counts(x, out_idx=dtypes.int32, name=None) -> UniqueWithCounts:
    """``unique`` plus how many times each distinct value occurs (dtype ``out_idx``)."""
    with name_scope(name, "UniqueWithCounts", [x]) as scope:
        xt = convert_to_tensor(x, name="x")
        attrs = {"out_idx": _index_dtype(out_idx, "out_idx")}
        return UniqueWithCounts(*create("UniqueWithCounts", [xt], attrs, scope).outputs)


# -----------------------------------------------------------------------------------------
# ListDiff (setdiff1d)
# -----------------------------------------------------------------------------------------


def _list_diff_infer(o):
    d = check_same_dtype(o, (0, 1))
    check_dtype(o, 0, ALL)
    out_idx = _index_dtype(o._attrs["out_idx"], "out_idx")
    _vector_input(o, 0)
    _vector_input(o, 1)
    return [(d, TensorShape([None])), (out_idx, TensorShape([None]))]


@op(
    "ListDiff",
    infer=_list_diff_infer,
    inputs=("x", "y"),
    attrs=(Attr("out_idx", "type", default=dtypes.int32),),
    differentiable=False,
)
def _list_diff_kernel(xp, x, y, *, out_idx=dtypes.int32):
    if x.ndim != 1:
        raise _invalid(f"x should be a 1D vector. Got shape {dims_text(x.shape)}")
    if y.ndim != 1:
        raise _invalid(f"y should be a 1D vector. Got shape {dims_text(y.shape)}")
    keep = xp.flatnonzero(~xp.isin(x, y))
    return x[keep], keep.astype(out_idx.np)


Diff = namedtuple("Diff", ["out", "idx"])


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None) -> Diff:
    """The values of the 1-D ``x`` that are not in ``y``, in ``x``'s order and with their
    duplicates, and their positions in ``x`` (dtype ``index_dtype``).

    >>> out, idx = setdiff1d([1, 2, 3, 4, 5, 6], [1, 3, 5])  # [2, 4, 6], [1, 3, 5]
    """
    with name_scope(name, "ListDiff", [x, y]) as scope:
        xt = convert_to_tensor(x, name="x")
        yt = convert_to_tensor(y, dtype=xt.dtype.base_dtype, name="y")
        attrs = {"out_idx": _index_dtype(index_dtype, "index_dtype")}
        return Diff(*create("ListDiff", [xt, yt], attrs, scope).outputs)


# -----------------------------------------------------------------------------------------
# Roll
# -----------------------------------------------------------------------------------------


def _roll_infer(o):
    x, shift, axis = o._inputs
    d = check_dtype(o, 0, ALL)
    check_dtype(o, 1, INDEX, "Tshift")
    check_dtype(o, 2, INDEX, "Taxis")
    if x._shape.rank == 0:
        raise ShapeError("Shape must be at least rank 1 but is rank 0")
    for t in (shift, axis):
        if t._shape.rank is not None and t._shape.rank > 1:
            raise ShapeError(f"Shape must be at most rank 1 but is rank {t._shape.rank}")
    s, a = shift._shape, axis._shape
    if s.rank is not None and a.rank is not None:
        if s.rank != a.rank:
            raise ShapeError(f"Shapes must be equal rank, but are {s.rank} and {a.rank}")
        if not s.is_compatible_with(a):
            n, m = s.as_list()[0], a.as_list()[0]
            raise ShapeError(
                f"Dimension 0 in both shapes must be equal, but are {n} and {m}. "
                f"Shapes are [{n}] and [{m}]."
            )
    return [(d, x._shape)]


def _roll_grad(o, g):
    """Rolling back by the negated shifts."""
    shift, axis = o.inputs[1], o.inputs[2]
    return [roll(g, math_ops.negative(shift), axis), None, None]


@op(
    "Roll",
    infer=_roll_infer,
    inputs=("input", "shift", "axis"),
    grad=_roll_grad,
    flags=OpFlags(host_inputs=(1, 2)),
)
def _roll_kernel(xp, x, shift, axis):
    if x.ndim < 1:
        raise _invalid("input must be 1-D or higher")
    for what, t in (("shift", shift), ("axis", axis)):
        if t.ndim > 1:
            raise _invalid(f"{what} must be a scalar or a 1-D vector. Found: {dims_text(t.shape)}")
    if shift.shape != axis.shape:
        raise _invalid("shift and axis must have the same size")
    totals = [0] * x.ndim
    # Repeated axes add their shifts up (TF's rule).
    for s, a in zip(np.reshape(shift, -1).tolist(), np.reshape(axis, -1).tolist()):
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"axis {a} is out of range")
        totals[a % x.ndim] += s
    moved = [(s, a) for a, s in enumerate(totals) if x.shape[a] and s % x.shape[a]]
    if not moved:
        return x.copy()
    return xp.roll(x, tuple(s for s, _ in moved), axis=tuple(a for _, a in moved))


def roll(input, shift, axis, name=None) -> Tensor:  # noqa: A002 - TF's argument name
    """``input`` with its elements shifted by ``shift`` along ``axis``, wrapping around;
    ``shift`` and ``axis`` are scalars or matching 1-D lists, and shifts of a repeated axis
    add up.

    >>> roll([0, 1, 2, 3, 4], shift=2, axis=0)  # [3, 4, 0, 1, 2]
    """
    with name_scope(name, "Roll", [input, shift, axis]) as scope:
        x = convert_to_tensor(input, name="input")
        s = convert_to_tensor(shift, dtype_hint=dtypes.int32, name="shift")
        a = convert_to_tensor(axis, dtype_hint=dtypes.int32, name="axis")
        return create("Roll", [x, s, a], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# EnsureShape
# -----------------------------------------------------------------------------------------


def _shape_text(shape: TensorShape) -> str:
    """A partially known shape as TF prints it: ``[2,?]``, ``<unknown>``."""
    dims = shape.as_list() if shape.rank is not None else None
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _ensure_shape_infer(o):
    d = check_dtype(o, 0, ALL)
    have, want = o._inputs[0]._shape, o._attrs["shape"]
    if have.rank is not None and want.rank is not None:
        if have.rank != want.rank:
            raise ShapeError(f"Shape must be rank {want.rank} but is rank {have.rank}")
        for i, (a, b) in enumerate(zip(have.as_list(), want.as_list())):
            if a is not None and b is not None and a != b:
                raise ShapeError(
                    f"Dimension {i} in both shapes must be equal, but are {b} and {a}. "
                    f"Shapes are {_shape_text(want)} and {_shape_text(have)}."
                )
    return [(d, have.merge_with(want))]


@op(
    "EnsureShape",
    infer=_ensure_shape_infer,
    inputs=("input",),
    attrs=(Attr("shape", "shape"),),
    grad=lambda o, g: [g],
    flags=OpFlags(aliases=True),
)
def _ensure_shape_kernel(xp, x, *, shape):
    if not shape.is_compatible_with(TensorShape(list(x.shape))):
        raise _invalid(
            f"Shape of tensor input {dims_text(x.shape)} is not compatible with expected "
            f"shape {_shape_text(shape)}."
        )
    return x


def ensure_shape(x, shape, name=None) -> Tensor:
    """``x``, checked at run time to have a shape compatible with ``shape`` (a list with None
    for any size, a TensorShape, or None); its static shape becomes the merge of both.

    >>> ensure_shape(placeholder(float32, [None, 3]), [2, None]).shape  # (2, 3)
    """
    with name_scope(name, "EnsureShape", [x]) as scope:
        t = convert_to_tensor(x, name="input")
        return create("EnsureShape", [t], {"shape": as_shape(shape)}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# repeat (composed)
# -----------------------------------------------------------------------------------------


def _int_tensor(value, name: str) -> Tensor:
    """``value`` as an int32 tensor; TypeError for a non-integer one (TF's check)."""
    t = convert_to_tensor(value, dtype_hint=dtypes.int32, name=name)
    if not t.dtype.base_dtype.is_integer:
        raise TypeError(
            f"Argument `tensor` (name: {name}) must be of type integer. Received `tensor` = "
            f"{t} of dtype: {t.dtype.name}"
        )
    return math_ops.cast(t, dtypes.int32) if t.dtype.base_dtype != dtypes.int32 else t


def _with_nonzero_rank(data: Tensor) -> Tensor:
    """A scalar becomes a 1-element vector; anything else stays as it is."""
    if data.shape.rank is not None:
        return array_transform.stack([data]) if data.shape.rank == 0 else data
    dims = array_transform.concat([[1], array_ops.shape(data)], 0)
    return array_ops.reshape(data, dims[-array_ops.rank(data) :])


def _tile_one_dimension(data: Tensor, axis: int, multiple) -> Tensor:
    """``data`` tiled ``multiple`` times along ``axis`` only."""
    if data.shape.rank is not None:
        multiples = [1] * data.shape.rank
        multiples[axis] = multiple
        multiples = array_transform.stack(multiples)
    else:
        ones = array_ops.ones(array_ops.rank(data), dtypes.int32)
        multiples = array_transform.concat(
            [ones[:axis], array_transform.stack([multiple]), ones[axis + 1 :]], 0
        )
    return array_transform.tile(data, multiples)


def _positive_axis(axis: int, rank: int | None) -> int:
    if rank is not None and not -rank <= axis < rank:
        raise ValueError(f"axis={axis} out of bounds: expected {-rank}<=axis<{rank}")
    if axis < 0:
        if rank is None:
            raise ValueError("axis may only be negative if rank(data) is statically known.")
        axis += rank
    return axis


def _repeat_each(data: Tensor, repeats: Tensor, axis: int, data_shape: Tensor) -> Tensor:
    """Each slice along ``axis`` repeated its own number of times: every slice tiled to the
    largest count, then a sequence mask drops the extra copies (TF's composition)."""
    if repeats.shape.rank == 1 and data.shape.rank is not None:
        data.shape[axis].assert_is_compatible_with(repeats.shape[0])
    repeats = array_transform.broadcast_to(repeats, array_transform.stack([data_shape[axis]]))
    repeats_original = repeats
    if axis != 0:
        repeats = array_transform.broadcast_to(
            repeats, array_transform.concat([data_shape[:axis], array_ops.shape(repeats)], 0)
        )
        repeats.set_shape([None] * (axis + 1))
    max_repeat = math_ops.maximum(0, reduction.reduce_max(repeats))
    mask = math_ops.less(array_ops.range(max_repeat), array_ops.expand_dims(repeats, -1))
    tiled = _tile_one_dimension(array_ops.expand_dims(data, axis + 1), axis + 1, max_repeat)
    result = slicing.boolean_mask(tiled, mask)
    if axis != 0:
        size = reduction.reduce_sum(repeats_original)
        result = array_ops.reshape(
            result,
            array_transform.concat(
                [data_shape[:axis], array_transform.stack([size]), data_shape[axis + 1 :]], 0
            ),
        )
    if data.shape.rank is not None:
        new_size = 0 if repeats.shape[0] == 0 else None
        result.set_shape(
            data.shape[:axis].concatenate([new_size]).concatenate(data.shape[axis + 1 :])
        )
    return result


def repeat(input, repeats, axis=None, name=None) -> Tensor:  # noqa: A002 - TF's argument name
    """The elements of ``input`` repeated ``repeats`` times along ``axis`` (a scalar count, or
    one per slice); with ``axis`` None, the flattened input's elements.

    >>> repeat([[1, 2], [3, 4]], repeats=[2, 3], axis=1)  # [[1, 1, 2, 2, 2], [3, 3, 4, 4, 4]]
    """
    if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool)):
        raise TypeError(
            f"Argument `axis` must be an int. Received `axis` = {axis} of type "
            f"{type(axis).__name__}"
        )
    with name_scope(name, "Repeat", [input, repeats]):
        data = convert_to_tensor(input, name="input")
        if axis is None:
            data, axis = array_ops.reshape(data, [-1]), 0
        repeats = _int_tensor(repeats, "repeats")
        repeats.shape.with_rank_at_most(1)
        data = _with_nonzero_rank(data)
        data_shape = array_ops.shape(data)
        axis = _positive_axis(axis, data.shape.rank)
        if repeats.shape.num_elements() == 1:
            count = array_ops.reshape(repeats, [])
            tiled = _tile_one_dimension(array_ops.expand_dims(data, axis + 1), axis + 1, count)
            dims = [data_shape[:axis], array_transform.stack([count * data_shape[axis]])]
            dims.append(data_shape[axis + 1 :])
            return array_ops.reshape(tiled, array_transform.concat(dims, 0))
        return _repeat_each(data, repeats, axis, data_shape)
