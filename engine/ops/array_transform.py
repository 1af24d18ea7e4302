"""Array ops that join, split, repeat, pad, reverse or broadcast tensors.

stack/unstack, concat/split, tile, pad (constant and mirror), reverse and broadcast_to, each
with its gradient. Re-exported by ``engine.ops.array``.
"""

from __future__ import annotations

import builtins
import numbers

import numpy as np

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops import math as math_ops
from engine.ops._common import INDEX, base, check_dtype, check_same_dtype, create
from engine.ops.array import (
    _const_ints,
    _const_scalar,
    _dims,
    _int_tensor,
    _invalid,
    _merge_part,
    _outputs,
    _shape_of,
    _short,
    _vector_length,
    _with_rank,
    identity,
    reshape,
    shape,
    size,
    transpose,
)
from engine.ops.array import range as range_op
from engine.ops.grad_util import unbroadcast
from engine.tensor_shape import Dimension, TensorShape, unknown_shape

# Shape, axis and size inputs read on the host (OpFlags.host_inputs).
_SECOND, _LAST = OpFlags(host_inputs=(1,)), OpFlags(host_inputs=(-1,))

# -----------------------------------------------------------------------------------------
# Packing
# -----------------------------------------------------------------------------------------


def _pack_infer(o):
    axis = o._attrs["axis"]
    first = o._inputs[0]._dtype.base_dtype
    merged = unknown_shape()
    for i, t in enumerate(o._inputs):
        if t._dtype.base_dtype is not first:
            raise TypeError(
                f"Tensors in list passed to 'values' of 'Pack' Op have types "
                f"[{', '.join(x._dtype.base_dtype.name for x in o._inputs)}] that "
                "don't all match."
            )
        try:
            merged = merged.merge_with(t._shape)
        except ValueError:
            raise ShapeError(
                f"Shapes of all inputs must match: values[0].shape = "
                f"{o._inputs[0]._shape._short()} != values[{i}].shape = "
                f"{t._shape._short()}"
            ) from None
    if merged.rank is None:
        return [(first, unknown_shape())]
    rank = merged.rank + 1
    if not -rank <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range [{-rank}, {rank})")
    axis = axis + rank if axis < 0 else axis
    dims = merged.as_list()
    dims.insert(axis, len(o._inputs))
    return [(first, TensorShape(dims))]


@op(
    "Pack",
    infer=_pack_infer,
    inputs=("values*",),
    attrs=(Attr("axis", "int"),),
    grad=lambda o, g: unstack(g, num=len(o.inputs), axis=o.get_attr("axis")),
)
def _pack_kernel(xp, *values, axis):
    return xp.stack(values, axis=axis)


def stack(values, axis=0, name="stack"):
    """Stacks a list of rank-R tensors into one rank-(R+1) tensor along ``axis``."""
    with name_scope(name, "stack", list(values)) as scope:
        first = next((v for v in values if hasattr(v, "dtype")), None)
        hint = first.dtype.base_dtype if first is not None else None
        ts = [convert_to_tensor(v, dtype_hint=hint) for v in values]
        if not ts:
            raise ValueError("stack() needs at least one tensor")
        return create("Pack", ts, {"axis": int(axis)}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Concatenation and splitting
# -----------------------------------------------------------------------------------------


def _check_list_dtypes(o, values) -> dtypes.DType:
    first = base(values[0])
    if any(base(t) is not first for t in values):
        raise TypeError(
            f"Tensors in list passed to 'values' of '{o._type}' Op have types "
            f"[{', '.join(base(t).name for t in values)}] that don't all match."
        )
    return first


def _concat_infer(o):
    *values, axis_t = o._inputs
    dtype = _check_list_dtypes(o, values)
    check_dtype(o, len(values), INDEX, "Tidx")
    _with_rank(axis_t, 0)
    rank = None
    for t in values:
        r = t._shape.rank
        if r is not None:
            if rank is None:
                rank = r
            elif r != rank:
                raise ShapeError(f"Shape must be rank {rank} but is rank {r}")
    if rank == 0:
        raise ShapeError("Can't concatenate scalars (use tf.stack instead)")
    axis = _const_scalar(axis_t)
    if rank is None:
        return [(dtype, unknown_shape())]
    if axis is None:
        return [(dtype, unknown_shape(rank))]
    if not -rank <= axis < rank:
        raise ShapeError(
            f"Shape must be at least rank {axis + 1 if axis >= 0 else -axis} but is rank {rank}"
        )
    axis %= rank
    before, after, total = None, None, 0
    for t in values:
        dims = _dims(t)
        if dims is None:
            total = None
            continue
        before = dims[:axis] if before is None else _merge_part(before, dims[:axis])
        after = dims[axis + 1 :] if after is None else _merge_part(after, dims[axis + 1 :])
        total = None if total is None or dims[axis] is None else total + dims[axis]
    if before is None:
        before, after = [None] * axis, [None] * (rank - axis - 1)
    return [(dtype, TensorShape(before + [total] + after))]


def _concat_grad(o, g):
    """``g`` split back into one piece per input along the concat axis (one SplitV op)."""
    *values, axis_t = o.inputs
    axis = _const_scalar(axis_t)
    rank = next((t.shape.rank for t in values if t.shape.rank is not None), None)
    if axis is not None and rank is not None:
        axis %= rank
        sizes = [t.shape[axis].value for t in values]
        sizes = [shape(t)[axis] if s is None else s for s, t in zip(sizes, values)]
        split_dim = axis
    else:
        sizes = [shape(t)[axis_t] for t in values]
        split_dim = axis_t
        if base(axis_t) is not dtypes.int32:
            split_dim = math_ops.cast(axis_t, dtypes.int32)
    if all(isinstance(s, int) for s in sizes):
        sizes = np.array(sizes, dtype=np.int32)
    else:
        sizes = stack(sizes)
    return split(g, sizes, axis=split_dim, num=len(values)) + [None]


@op("ConcatV2", infer=_concat_infer, grad=_concat_grad, inputs=("values*", "axis"), flags=_LAST)
def _concat_kernel(xp, *args):
    *values, axis = args
    rank = values[0].ndim
    a = int(axis)
    if not -rank <= a < rank:
        raise _invalid(
            f"ConcatOp : Expected concatenating dimensions in the range [{-rank}, "
            f"{rank}), but got {a}"
        )
    a %= rank
    first = values[0].shape
    for i, v in enumerate(values[1:], 1):
        if v.ndim != rank:
            raise _invalid(
                f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                f"{_short(first)} vs. shape[{i}] = {_short(v.shape)}"
            )
        for j in builtins.range(rank):
            if j != a and v.shape[j] != first[j]:
                raise _invalid(
                    f"ConcatOp : Dimension {j} in both shapes must be equal: "
                    f"shape[0] = {_short(first)} vs. shape[{i}] = "
                    f"{_short(v.shape)}"
                )
    return xp.concatenate(values, axis=a)


def concat(values, axis, name="concat"):
    """Concatenates tensors of one rank along ``axis``.

    >>> concat([zeros([2, 3]), ones([2, 3])], 1).shape
    TensorShape([Dimension(2), Dimension(6)])
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        # TF checks the axis and returns an identity of the single input.
        with name_scope(name, "concat", values):
            convert_to_tensor(axis, dtype=dtypes.int32, name="concat_dim").shape.assert_has_rank(0)
            return identity(values[0], name=name)
    with name_scope(name, "concat", list(values)) as scope:
        first = next((v for v in values if isinstance(v, Tensor)), None)
        hint = first.dtype.base_dtype if first is not None else None
        ts = [convert_to_tensor(v, dtype_hint=hint, name="values") for v in values]
        a = _int_tensor(axis, "axis")
        return create("ConcatV2", ts + [a], {}, scope).outputs[0]


def _unpack_infer(o):
    x = o._inputs[0]
    num, axis = o._attrs["num"], o._attrs["axis"]
    dims = _dims(x)
    if dims is None:
        return [(base(x), unknown_shape())] * num
    rank = len(dims)
    if not -rank <= axis < rank:
        raise ShapeError(f"Invalid axis: {axis}; must be in [{-rank},{rank})")
    axis %= rank
    if dims[axis] is not None and dims[axis] != num:
        raise ShapeError(f"Dimension must be {num} but is {dims[axis]}")
    return [(base(x), TensorShape(dims[:axis] + dims[axis + 1 :]))] * num


def _unpack_grad(o, *grads):
    if any(g is None for g in grads):  # only for non-float outputs, which get no gradient
        return [None]
    return [stack(list(grads), axis=o.get_attr("axis"))]


@op(
    "Unpack",
    infer=_unpack_infer,
    grad=_unpack_grad,
    inputs=("value",),
    attrs=(
        Attr("num", "int"),
        Attr("axis", "int"),
    ),
    flags=OpFlags(aliases=True),
)
def _unpack_kernel(xp, x, *, num, axis):
    if not -x.ndim <= axis < x.ndim:
        raise _invalid(f"axis = {axis} not in [{-x.ndim}, {x.ndim})")
    a = axis % x.ndim
    if x.shape[a] != num:
        raise _invalid(f"Input shape axis {a} must equal {num}, got shape {_short(x.shape)}")
    lead = (builtins.slice(None),) * a
    return _outputs([x[lead + (i,)] for i in builtins.range(num)])


def unstack(value, num=None, axis=0, name="unstack"):
    """Splits ``value`` along ``axis`` into a list of ``num`` tensors of rank R-1.

    >>> [t.shape for t in unstack(zeros([2, 3]), axis=1)]
    [TensorShape([Dimension(2)]), TensorShape([Dimension(2)]), TensorShape([Dimension(2)])]
    """
    if num is None:
        value = convert_to_tensor(value)
        dims = _dims(value)
        if dims is not None:
            if not -len(dims) <= axis < len(dims):
                raise ValueError(
                    f"Argument `axis` = {axis} not in range [{-len(dims)}, {len(dims)})"
                )
            num = dims[axis]
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {value.shape}")
    with name_scope(name, "unstack", [value]) as scope:
        x = convert_to_tensor(value, name="value")
        op_ = create("Unpack", [x], {"num": int(num), "axis": int(axis)}, scope)
        return list(op_.outputs)


def _split_axis(axis_t, dims, what="Dimension size, given by scalar input"):
    """The normalized split axis, or None when it is not known at build time."""
    axis = _const_scalar(axis_t)
    if axis is None or dims is None:
        return None
    rank = len(dims)
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} must be in range [{-rank}, {rank})")
    return axis % rank


def _split_infer(o):
    axis_t, x = o._inputs
    check_dtype(o, 0, frozenset([dtypes.int32]))
    _with_rank(axis_t, 0)
    num = o._attrs["num_split"]
    dims = _dims(x)
    if dims is None:
        return [(base(x), unknown_shape())] * num
    axis = _split_axis(axis_t, dims)
    if axis is None:
        return [(base(x), unknown_shape(len(dims)))] * num
    d = dims[axis]
    if d is not None:
        if d % num:
            raise ShapeError(
                f"Dimension size must be evenly divisible by {num} but is {d}\n\t"
                "Number of ways to split should evenly divide the split dimension"
            )
        dims[axis] = d // num
    return [(base(x), TensorShape(dims))] * num


def _split_grad(o, *grads):
    # Outputs nobody used arrive as zeros (gradients() fills them in).
    if any(g is None for g in grads):
        return [None, None]
    return [None, concat(list(grads), o.inputs[0])]


@op(
    "Split",
    infer=_split_infer,
    grad=_split_grad,
    inputs=("split_dim", "value"),
    attrs=(Attr("num_split", "int"),),
    flags=OpFlags(aliases=True, host_inputs=(0,)),
)
def _split_kernel(xp, axis, x, *, num_split):
    a = int(axis)
    if not -x.ndim <= a < x.ndim:
        raise _invalid(f"-input rank(-{x.ndim}) <= split_dim < input rank ({x.ndim}), but got {a}")
    a %= x.ndim
    if x.shape[a] % num_split:
        raise _invalid(
            f"Number of ways to split should evenly divide the split dimension, but "
            f"got split_dim {a} (size = {x.shape[a]}) and num_split {num_split}"
        )
    return _outputs(xp.split(x, num_split, axis=a))


def _resolve_sizes(sizes: list, total, err) -> list:
    """SplitV's sizes with the single -1 resolved (None where ``total`` is unknown)."""
    if sum(1 for s in sizes if s == -1) > 1:
        raise err("size_splits can only have one -1")
    known = sum(s for s in sizes if s != -1)
    out = list(sizes)
    if -1 in sizes:
        out[sizes.index(-1)] = None if total is None else total - known
    elif total is not None and known != total:
        raise err(f"can't split axis of size {total} into pieces of size {_short(sizes)}")
    for i, s in enumerate(out):
        if s is not None and s < 0:
            raise err(f"Split size at index {i} must be >= 0. Got: {s}")
    return out


def _split_v_infer(o):
    x, sizes_t, axis_t = o._inputs
    check_dtype(o, 1, INDEX, "Tlen")
    check_dtype(o, 2, frozenset([dtypes.int32]), "Tidx")
    _with_rank(axis_t, 0)
    n = _vector_length(sizes_t)
    num = o._attrs["num_split"]
    if n is not None and n != num:
        raise ShapeError(f"Length of size_splits should be equal to num_split: {n} vs {num}")
    dims = _dims(x)
    if dims is None:
        return [(base(x), unknown_shape())] * num
    axis = _split_axis(axis_t, dims)
    if axis is None:
        return [(base(x), unknown_shape(len(dims)))] * num
    sizes = _const_ints(sizes_t)
    sizes = [None] * num if sizes is None else _resolve_sizes(sizes, dims[axis], ShapeError)
    return [(base(x), TensorShape(dims[:axis] + [s] + dims[axis + 1 :])) for s in sizes]


def _split_v_grad(o, *grads):
    if any(g is None for g in grads):
        return [None, None, None]
    return [concat(list(grads), o.inputs[2]), None, None]


@op(
    "SplitV",
    infer=_split_v_infer,
    grad=_split_v_grad,
    inputs=("value", "size_splits", "split_dim"),
    attrs=(Attr("num_split", "int"),),
    flags=OpFlags(aliases=True, host_inputs=(1, 2)),
)
def _split_v_kernel(xp, x, size_splits, axis, *, num_split):
    a = int(axis)
    if not -x.ndim <= a < x.ndim:
        raise _invalid(f"-input rank(-{x.ndim}) <= split_dim < input rank ({x.ndim}), but got {a}")
    a %= x.ndim
    sizes = [int(s) for s in size_splits.tolist()]
    if len(sizes) != num_split:
        raise _invalid(
            f"Length of size_splits should be equal to num_split: {len(sizes)} vs {num_split}"
        )
    total = x.shape[a]
    known = sum(s for s in sizes if s != -1)
    if sizes.count(-1) > 1:
        raise _invalid("There can only be one -1 in the input.")
    if (-1 in sizes and known > total) or (-1 not in sizes and known != total):
        raise _invalid(
            "Determined shape must either match input shape along split_dim exactly "
            "if fully specified, or be less than the size of the input along "
            f"split_dim if not fully specified.  Got: {known}"
        )
    sizes = _resolve_sizes(sizes, total, _invalid)
    cuts = np.cumsum(sizes[:-1]).tolist()
    return _outputs(xp.split(x, cuts, axis=a))


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits ``value`` along ``axis`` into equal parts or parts of the given sizes.

    An int ``num_or_size_splits`` makes that many equal parts; a list of sizes may hold one
    -1, which takes the remainder.

    >>> [t.shape[1] for t in split(zeros([4, 6]), [1, -1, 2], 1)]
    [Dimension(1), Dimension(3), Dimension(2)]
    """
    if isinstance(num_or_size_splits, (numbers.Integral, Dimension)) and not isinstance(
        num_or_size_splits, bool
    ):
        n = int(num_or_size_splits)
        if n < 1:
            raise ValueError(f"Attr 'num_split' of 'Split' Op passed {n} less than minimum 1.")
        with name_scope(name, "split", [value]) as scope:
            a = convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim")
            x = convert_to_tensor(value, name="value")
            return list(create("Split", [a, x], {"num_split": n}, scope).outputs)
    sizes = _int_tensor(num_or_size_splits, None)
    if sizes.shape.rank == 0:
        raise ValueError(
            "Rank-0 tensors are not supported as the num_or_size_splits argument "
            f"to split. Argument provided: {num_or_size_splits}"
        )
    if num is None:
        dims = _dims(sizes)
        num = dims[0] if dims else None
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {num_or_size_splits}")
    if num < 1:
        raise ValueError(f"Attr 'num_split' of 'SplitV' Op passed {num} less than minimum 1.")
    with name_scope(name, "split", [value, sizes]) as scope:
        x = convert_to_tensor(value, name="value")
        a = convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim")
        return list(create("SplitV", [x, sizes, a], {"num_split": int(num)}, scope).outputs)


# -----------------------------------------------------------------------------------------
# Tile
# -----------------------------------------------------------------------------------------


def _tile_infer(o):
    x, m = o._inputs
    check_dtype(o, 1, INDEX, "Tmultiples")
    n = _vector_length(m)
    dims = _dims(x)
    if dims is not None and n is not None and len(dims) != n:
        raise ShapeError(f"Shape must be rank {n} but is rank {len(dims)}")
    rank = len(dims) if dims is not None else n
    if rank is None:
        return [(base(x), unknown_shape())]
    mult = constant_value_as_shape(m).as_tuple() or (None,) * rank
    dims = dims or [None] * rank
    return [
        (
            base(x),
            TensorShape([None if d is None or k is None else d * k for d, k in zip(dims, mult)]),
        )
    ]


def _tile_grad(o, g):
    """Sums the tiled copies: ``g`` reshaped to ``[m0, d0, m1, d1, ...]``, summed over the
    multiples' axes (TF's formula)."""
    from engine.ops import reduction  # reduction builds on the array modules

    x, multiples = o.inputs
    m = _const_ints(multiples)
    if m is not None and x.shape.is_fully_defined():
        split_shape = [v for pair in zip(m, x.shape.as_list()) for v in pair]
        axes = list(builtins.range(0, len(split_shape), 2))
    else:
        pairs = stack([multiples, shape(x, out_type=base(multiples))])
        split_shape = reshape(transpose(pairs), [-1])
        axes = range_op(0, size(split_shape), 2)
    return [reduction.reduce_sum(reshape(g, split_shape), axes), None]


@op("Tile", infer=_tile_infer, grad=_tile_grad, inputs=("input", "multiples"), flags=_SECOND)
def _tile_kernel(xp, x, multiples):
    reps = multiples.tolist()
    if len(reps) != x.ndim:
        raise _invalid(
            f"Expected multiples argument to be a vector of length {x.ndim} but got "
            f"length {len(reps)}"
        )
    for i, k in enumerate(reps):
        if k < 0:
            raise _invalid(f"Expected multiples[{i}] >= 0, but got {k}")
    return xp.tile(x, reps)


def tile(input, multiples, name=None):  # noqa: A002
    """Repeats ``input`` ``multiples[i]`` times along each dimension ``i``."""
    with name_scope(name, "Tile", [input, multiples]) as scope:
        x = convert_to_tensor(input, name="input")
        m = _int_tensor(multiples, "multiples")
        return create("Tile", [x, m], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Padding
# -----------------------------------------------------------------------------------------


def _pad_infer(o, sign=1):
    """Pad's shape function; ``sign=-1`` gives MirrorPadGrad's (the padding taken off)."""
    x, paddings = o._inputs[:2]
    check_dtype(o, 1, INDEX, "Tpaddings")
    if o._type == "PadV2":
        check_same_dtype(o, (0, 2))
        _with_rank(o._inputs[2], 0)
    _with_rank(paddings, 2)
    pdims = _dims(paddings)
    if pdims is not None and pdims[1] is not None and pdims[1] != 2:
        raise ShapeError(f"Dimension must be 2 but is {pdims[1]}")
    n = None if pdims is None else pdims[0]
    dims = _dims(x)
    if dims is not None and n is not None and len(dims) != n:
        raise ShapeError(f"Shape must be rank {n} but is rank {len(dims)}")
    rank = len(dims) if dims is not None else n
    if rank is None:
        return [(base(x), unknown_shape())]
    pads = constant_value(paddings)
    if pads is None:
        return [(base(x), unknown_shape(rank))]
    if (pads < 0).any():
        raise ShapeError("Paddings must be non-negative")
    dims = [
        None if d is None else d + sign * (int(a) + int(b))
        for d, (a, b) in zip(dims or [None] * rank, pads.tolist())
    ]
    if any(d is not None and d < 0 for d in dims):
        raise ShapeError(f"Paddings {pads.tolist()} exceed the input shape {x._shape}")
    return [(base(x), TensorShape(dims))]


def _check_paddings(x, paddings) -> list:
    pads = paddings.tolist()
    if paddings.shape != (x.ndim, 2):
        raise _invalid(
            f"The first dimension of paddings must be the rank of inputs"
            f"{_short(paddings.shape)} {_short(x.shape)}"
        )
    for a, b in pads:
        if a < 0 or b < 0:
            raise _invalid(f"Paddings must be non-negative: {a} {b}")
    return pads


def _constant_pad(xp, x, paddings, value):
    return xp.pad(x, _check_paddings(x, paddings), mode="constant", constant_values=value)


def _pad_grad(o, g):
    """The unpadded block of ``g`` (one Slice op); the constant value gets no gradient."""
    from engine.ops import slicing  # slicing builds on this module

    x, paddings = o.inputs[:2]
    dt = base(paddings)
    pads = constant_value(paddings)
    begin = (
        unstack(paddings, num=2, axis=1)[0] if pads is None else constant(pads[:, 0].astype(dt.np))
    )
    x_grad = slicing.slice(g, begin, _shape_of(x, dt))
    return [x_grad] + [None] * (len(o.inputs) - 1)


@op("Pad", infer=_pad_infer, grad=_pad_grad, inputs=("input", "paddings"), flags=_SECOND)
def _pad_kernel(xp, x, paddings):
    return _constant_pad(xp, x, paddings, b"" if x.dtype.kind == "O" else 0)


@op(
    "PadV2",
    infer=_pad_infer,
    grad=_pad_grad,
    inputs=("input", "paddings", "constant_values"),
    flags=OpFlags(host_inputs=(1, 2)),
)
def _pad_v2_kernel(xp, x, paddings, constant_values):
    return _constant_pad(xp, x, paddings, constant_values.item())


def _mirror_pad_grad(o, g):
    return [_mirror_pad_grad_op(g, o.inputs[1], o.get_attr("mode")), None]


@op(
    "MirrorPad",
    infer=_pad_infer,
    grad=_mirror_pad_grad,
    inputs=("input", "paddings"),
    attrs=(Attr("mode", "string"),),
    flags=_SECOND,
)
def _mirror_pad_kernel(xp, x, paddings, *, mode):
    pads = _check_paddings(x, paddings)
    for (a, b), d in zip(pads, x.shape):
        if mode == "REFLECT" and (a >= d or b >= d):
            raise _invalid(
                f"paddings must be less than the dimension size: {a}, {b} not less than {d}"
            )
        if mode == "SYMMETRIC" and (a > d or b > d):
            raise _invalid(
                f"paddings must be no greater than the dimension size: {a}, {b} greater than {d}"
            )
    return xp.pad(x, pads, mode=mode.lower())


@op(
    "MirrorPadGrad",
    infer=lambda o: _pad_infer(o, sign=-1),
    grad=lambda o, g: [pad(g, o.inputs[1], mode=o.get_attr("mode")), None],
    inputs=("input", "paddings"),
    attrs=(Attr("mode", "string"),),
)
def _mirror_pad_grad_kernel(xp, g, paddings, *, mode):
    # Each padded strip mirrors a strip of the input (REFLECT skips the edge element, so its
    # strips start one further in); fold each back onto its source, one axis at a time.
    pads = _check_paddings(g, paddings)
    edge = 1 if mode == "REFLECT" else 0
    out = g
    for axis, (a, b) in enumerate(pads):
        n = out.shape[axis] - a - b
        if n < 0 or a > n - edge or b > n - edge:
            raise _invalid(f"paddings {a}, {b} too large for a {mode} pad of dimension size {n}")
        moved = xp.moveaxis(out, axis, 0)
        core = moved[a : a + n].copy()
        if a:
            core[edge : edge + a] += moved[:a][::-1]
        if b:
            core[n - edge - b : n - edge] += moved[a + n :][::-1]
        out = xp.moveaxis(core, 0, axis)
    return out if out is not g else g.copy()


def _mirror_pad_grad_op(g, paddings, mode, name=None):
    with name_scope(name, "MirrorPadGrad", [g, paddings]) as scope:
        return create("MirrorPadGrad", [g, paddings], {"mode": mode}, scope).outputs[0]


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):  # noqa: A002
    """Pads ``tensor`` by ``paddings[i] = [before, after]`` along each dimension ``i``.

    ``mode`` is "CONSTANT" (with ``constant_values``), "REFLECT" (mirror without the edge)
    or "SYMMETRIC" (mirror with the edge), in any case.
    """
    mode = mode.upper()
    if mode == "CONSTANT":
        zero = (
            not isinstance(constant_values, Tensor)
            and np.ndim(constant_values) == 0
            and constant_values == 0
        )
        op_type = "Pad" if zero else "PadV2"
    elif mode in ("REFLECT", "SYMMETRIC"):
        op_type = "MirrorPad"
    else:
        raise ValueError(
            'Value of argument `mode` expected to be one of "CONSTANT", '
            f'"REFLECT", or "SYMMETRIC". Received `mode` = {mode}'
        )
    with name_scope(name, op_type, [tensor, paddings]) as scope:
        x = convert_to_tensor(tensor, name="input")
        ins = [x, _int_tensor(paddings, "paddings")]
        if op_type == "PadV2":
            ins.append(
                convert_to_tensor(
                    constant_values, dtype_hint=x.dtype.base_dtype, name="constant_values"
                )
            )
        attrs = {"mode": mode} if op_type == "MirrorPad" else {}
        return create(op_type, ins, attrs, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Reverse, BroadcastTo
# -----------------------------------------------------------------------------------------


def _reverse_infer(o):
    x, axis_t = o._inputs
    check_dtype(o, 1, INDEX, "Tidx")
    _with_rank(axis_t, 1)
    axes, dims = _const_ints(axis_t), _dims(x)
    if axes is not None and dims is not None:
        _check_reverse_axes(axes, len(dims), ShapeError)
    return [(base(x), x._shape)]


def _check_reverse_axes(axes, rank, err) -> list:
    seen = []
    for i, a in enumerate(axes):
        if not -rank <= a < rank:
            raise err(f"'axis'[{i}] = {a} is out of valid range [0, {rank - 1}")
        a %= rank
        if a in seen:
            raise err(f"axis {a} specified more than once.")
        seen.append(a)
    return seen


@op(
    "ReverseV2",
    infer=_reverse_infer,
    grad=lambda o, g: [reverse(g, o.inputs[1]), None],
    inputs=("tensor", "axis"),
    flags=OpFlags(aliases=True, host_inputs=(1,)),
)
def _reverse_kernel(xp, x, axis):
    axes = _check_reverse_axes(axis.tolist(), x.ndim, _invalid)
    return xp.flip(x, axis=tuple(axes)) if axes else x


def reverse(tensor, axis, name=None):
    """``tensor`` with the dimensions listed in ``axis`` reversed."""
    with name_scope(name, "ReverseV2", [tensor, axis]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        a = _int_tensor(axis, "axis")
        return create("ReverseV2", [x, a], {}, scope).outputs[0]


def _broadcast_to_infer(o):
    x, shape_t = o._inputs
    check_dtype(o, 1, INDEX, "Tidx")
    _with_rank(shape_t, 1)
    target = constant_value_as_shape(shape_t)
    dims = _dims(x)
    if target.rank is None or dims is None:
        return [(base(x), target)]
    out = list(target.as_tuple())
    if len(dims) > len(out):
        raise ShapeError(f"Shape must be at most rank {len(out)} but is rank {len(dims)}")
    for i, d in enumerate(reversed(dims), 1):
        # A known input dim > 1 fixes the output dim; 1 and unknown dims broadcast.
        if d is not None and d > 1:
            if out[-i] is not None and out[-i] != d:
                raise ShapeError(f"Dimensions must be equal, but are {d} and {out[-i]}")
            out[-i] = d
    return [(base(x), TensorShape(out))]


@op(
    "BroadcastTo",
    infer=_broadcast_to_infer,
    grad=lambda o, g: [unbroadcast(g, o.inputs[0]), None],
    inputs=("input", "shape"),
    flags=_SECOND,
)
def _broadcast_to_kernel(xp, x, shape):
    target = [int(d) for d in shape.tolist()]
    ok = x.ndim <= len(target) and all(
        d in (1, t) for d, t in zip(reversed(x.shape), reversed(target))
    )
    if not ok or any(t < 0 for t in target):
        raise _invalid(f"Incompatible shapes: {_short(x.shape)} vs. {_short(target)}")
    # Materialized, as TF does: a broadcast view would be read-only for the caller.
    return xp.broadcast_to(x, target).copy()


def broadcast_to(input, shape, name=None):  # noqa: A002
    """``input`` broadcast (numpy rules) to ``shape``."""
    with name_scope(name, "BroadcastTo", [input, shape]) as scope:
        x = convert_to_tensor(input, name="input")
        s = _int_tensor(shape, "shape")
        return create("BroadcastTo", [x, s], {}, scope).outputs[0]


__all__ = ["stack", "unstack", "concat", "split", "tile", "pad", "reverse", "broadcast_to"]
