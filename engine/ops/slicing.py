"""Slicing and indexing: slice, strided_slice and ``Tensor.__getitem__``, gather,
where_indices and boolean_mask, each with its gradient. Re-exported by ``engine.ops.array``.
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
from engine.ops._common import (
    BOOL,
    INDEX,
    NUMERIC,
    base,
    check_dtype,
    check_same_dtype,
    create,
    scatter_add,
)
from engine.ops.array import (
    _const_ints,
    _const_scalar,
    _dims,
    _int_tensor,
    _invalid,
    _merge_part,
    _shape_of,
    _short,
    _vector_length,
    _with_rank,
    ones_like,
    reshape,
    shape,
    size,
    squeeze,
)
from engine.ops.array_transform import concat, pad, stack
from engine.tensor_shape import Dimension, TensorShape, unknown_shape

# -----------------------------------------------------------------------------------------
# Slice, StridedSlice and Tensor.__getitem__
# -----------------------------------------------------------------------------------------


def _slice_infer(o):
    x, begin, size = o._inputs
    check_dtype(o, 1, INDEX, "Index")
    check_same_dtype(o, (1, 2))
    nb, ns = _vector_length(begin), _vector_length(size)
    if nb is not None and ns is not None and nb != ns:
        raise ShapeError(
            f"Dimension 0 in both shapes must be equal, but are {nb} and {ns}. "
            f"Shapes are [{nb}] and [{ns}]."
        )
    n = nb if nb is not None else ns
    dims = _dims(x)
    if dims is not None and n is not None and len(dims) != n:
        raise ShapeError(f"Shape must be rank {n} but is rank {len(dims)}")
    rank = len(dims) if dims is not None else n
    if rank is None:
        return [(base(x), unknown_shape())]
    dims = dims or [None] * rank
    b = constant_value_as_shape(begin).as_tuple() or (None,) * rank
    sizes = _const_ints(size)
    if sizes is None:
        return [(base(x), TensorShape(constant_value_as_shape(size).as_tuple() or (None,) * rank))]
    out = []
    for i, s in enumerate(sizes):
        if s < -1:
            raise ShapeError(f"Invalid value in tensor used for shape: {s}")
        if s != -1:
            out.append(s)
        elif dims[i] is None or b[i] is None:
            out.append(None)
        elif b[i] > dims[i]:
            raise ShapeError(f"Negative dimension size caused by subtracting {b[i]} from {dims[i]}")
        else:
            out.append(dims[i] - b[i])
    return [(base(x), TensorShape(out))]


def _slice_grad(o, g):
    """``g`` padded with zeros back to the input's shape (one Pad op)."""
    x, begin = o.inputs[:2]
    dt = base(begin)
    x_shape, out_shape = _shape_of(x, dt), _shape_of(o.outputs[0], dt)
    b = constant_value(begin)
    if b is not None and x.shape.is_fully_defined() and o.outputs[0].shape.is_fully_defined():
        after = constant_value(x_shape) - constant_value(out_shape) - b
        paddings = np.stack([b, after], axis=1).astype(dt.np)
    else:
        paddings = stack([begin, x_shape - out_shape - begin], axis=1)
    return [pad(g, paddings), None, None]


@op(
    "Slice",
    infer=_slice_infer,
    grad=_slice_grad,
    inputs=("input", "begin", "size"),
    flags=OpFlags(aliases=True, host_inputs=(1, 2)),
)
def _slice_kernel(xp, x, begin, size):
    b, s = begin.tolist(), size.tolist()
    if len(b) != x.ndim or len(s) != x.ndim:
        raise _invalid(
            f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, "
            f"but got shapes [{len(b)}] and [{len(s)}] instead."
        )
    index = []
    for i, (bi, si, d) in enumerate(zip(b, s, x.shape)):
        if si == -1:
            si = d - bi
        if not 0 <= bi <= d:
            raise _invalid(f"Expected begin[{i}] in [0, {d}], but got {bi}")
        if not 0 <= si <= d - bi:
            raise _invalid(f"Expected size[{i}] in [0, {d - bi}], but got {si}")
        index.append(builtins.slice(bi, bi + si))
    return x[tuple(index)]


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """The ``size``-shaped block of ``input_`` starting at ``begin`` (size -1: to the end).

    >>> slice(zeros([4, 6]), [1, 2], [-1, 2]).shape
    TensorShape([Dimension(3), Dimension(2)])
    """
    with name_scope(name, "Slice", [input_, begin, size]) as scope:
        x = convert_to_tensor(input_, name="input")
        b = _int_tensor(begin, "begin")
        s = _int_tensor(size, "size", dtype_hint=b.dtype.base_dtype)
        return create("Slice", [x, b, s], {}, scope).outputs[0]


_NEW_AXIS, _SHRINK_AXIS = -1, -2


def _strided_slice_plan(
    dims,
    begin,
    end,
    strides,
    begin_mask,
    end_mask,
    ellipsis_mask,
    new_axis_mask,
    shrink_axis_mask,
    err,
):
    """TF's ``ValidateStridedSliceOp`` over a partially known input shape.

    ``dims`` are the input dims (None: unknown); ``begin``/``end`` are lists of ints or None
    when unknown; ``strides`` must be known. Returns ``(final_dims, index)`` where ``index``
    holds one Python slice per input dim (None where it cannot be known yet); ``err`` builds
    the exception to raise (ShapeError at build time, InvalidArgumentError at run time).
    """
    if ellipsis_mask & (ellipsis_mask - 1):
        raise err("Multiple ellipses in slice spec not allowed")
    n_sparse = len(strides)
    ellipsis_seen, new_after_ellipsis = False, 0
    for i in builtins.range(n_sparse):
        if ellipsis_seen and new_axis_mask >> i & 1:
            new_after_ellipsis += 1
        if ellipsis_mask >> i & 1:
            ellipsis_seen = True
    if not ellipsis_seen:  # an implicit trailing ellipsis keeps the remaining dims
        ellipsis_mask |= 1 << n_sparse
        n_sparse += 1

    # Step 1: the sparse spec (with ellipsis and new axes) to one entry per input dim.
    rank = len(dims)
    d_begin, d_end, d_stride = [0] * rank, [0] * rank, [1] * rank
    d_bmask, d_emask, d_shrink = [False] * rank, [False] * rank, [False] * rank
    gather = []  # per output dim: input dim index, or _NEW_AXIS; shrunk dims are skipped
    full = 0
    for i in builtins.range(n_sparse):
        if ellipsis_mask >> i & 1:
            stop = min(rank - (n_sparse - i) + 1 + new_after_ellipsis, rank)
            while full < stop:
                d_bmask[full] = d_emask[full] = True
                gather.append(full)
                full += 1
        elif new_axis_mask >> i & 1:
            gather.append(_NEW_AXIS)
        else:
            if full == rank:
                raise err(f"Index out of range using input dim {full}; input has only {rank} dims")
            if begin is not None:
                d_begin[full] = begin[i]
            if end is not None:
                d_end[full] = end[i]
            d_stride[full] = strides[i]
            d_bmask[full] = bool(begin_mask >> i & 1)
            d_emask[full] = bool(end_mask >> i & 1)
            d_shrink[full] = bool(shrink_axis_mask >> i & 1)
            gather.append(_SHRINK_AXIS if d_shrink[full] else full)
            full += 1

    # Step 2: canonical [begin, end) per input dim and the size it yields.
    known_range = begin is not None and end is not None
    sizes, index = [], []
    for i in builtins.range(rank):
        b, e, s, dim, shrink = d_begin[i], d_end[i], d_stride[i], dims[i], d_shrink[i]
        if s == 0:
            raise err(f"strides[{i}] must be non-zero")
        if dim is None:
            sizes.append(1 if shrink else None)
            index.append(None)
            continue
        if shrink and s <= 0:
            raise err("only stride 1 allowed on non-range indexing.")
        lo, hi = (0, dim) if s > 0 else (-1, dim - 1)
        size = None
        if known_range:
            if shrink:
                b = b + dim if b < 0 else b
                if not 0 <= b < dim:
                    raise err(f"slice index {b} of dimension {i} out of bounds.")
                e = b + 1
            else:
                b = (
                    (lo if s > 0 else hi)
                    if d_bmask[i]
                    else min(max(b + dim if b < 0 else b, lo), hi)
                )
                e = (
                    (hi if s > 0 else lo)
                    if d_emask[i]
                    else min(max(e + dim if e < 0 else e, lo), hi)
                )
            interval = e - b
        elif shrink:
            interval = 1
        elif d_bmask[i] and d_emask[i]:
            interval = dim if s > 0 else -dim
        else:
            interval = None
        if interval is not None:
            size = 0 if interval == 0 or (interval < 0) != (s < 0) else -(-abs(interval) // abs(s))
        sizes.append(size)
        if not known_range:
            index.append(None)
        elif size == 0:
            index.append(builtins.slice(0, 0))
        else:
            index.append(builtins.slice(b, None if e < 0 else e, s))
    final = [1 if g == _NEW_AXIS else sizes[g] for g in gather if g != _SHRINK_AXIS]
    return final, index


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _strided_slice_infer(o):
    x, begin, end, strides = o._inputs
    check_dtype(o, 1, INDEX, "Index")
    check_same_dtype(o, (1, 2, 3))
    n = None
    for t in (begin, end, strides):
        m = _vector_length(t)
        if m is not None and n is not None and m != n:
            raise ShapeError(
                f"Dimension 0 in both shapes must be equal, but are {n} and {m}. "
                f"Shapes are [{n}] and [{m}]."
            )
        n = m if n is None else n
    dims = _dims(x)
    s = _const_ints(strides)
    if dims is None or n is None or s is None:
        return [(base(x), unknown_shape())]
    masks = [o._attrs[k] for k in _MASKS]
    final, _ = _strided_slice_plan(
        dims, _const_ints(begin), _const_ints(end), s, *masks, err=ShapeError
    )
    return [(base(x), TensorShape(final))]


def _strided_slice_grad(o, g):
    x, begin, end, strides = o.inputs
    masks = {k: o.get_attr(k) for k in _MASKS}
    dx = strided_slice_grad(_shape_of(x, base(begin)), begin, end, strides, g, **masks)
    return [dx, None, None, None]


@op(
    "StridedSlice",
    infer=_strided_slice_infer,
    grad=_strided_slice_grad,
    inputs=("input", "begin", "end", "strides"),
    attrs=(
        Attr("begin_mask", "int"),
        Attr("end_mask", "int"),
        Attr("ellipsis_mask", "int"),
        Attr("new_axis_mask", "int"),
        Attr("shrink_axis_mask", "int"),
    ),
    flags=OpFlags(aliases=True, host_inputs=(1, 2, 3)),
)
def _strided_slice_kernel(
    xp,
    x,
    begin,
    end,
    strides,
    *,
    begin_mask,
    end_mask,
    ellipsis_mask,
    new_axis_mask,
    shrink_axis_mask,
):
    b, e, s = begin.tolist(), end.tolist(), strides.tolist()
    if begin.ndim != 1 or not len(b) == len(e) == len(s):
        raise _invalid(
            "Expected begin, end, and strides to be 1D equal size tensors, but got "
            f"shapes {_short(begin.shape)}, {_short(end.shape)}, and "
            f"{_short(strides.shape)} instead."
        )
    final, index = _strided_slice_plan(
        list(x.shape),
        b,
        e,
        s,
        begin_mask,
        end_mask,
        ellipsis_mask,
        new_axis_mask,
        shrink_axis_mask,
        err=_invalid,
    )
    return xp.reshape(x[tuple(index)], final)


def strided_slice(
    input_,
    begin,
    end,
    strides=None,
    begin_mask=0,
    end_mask=0,
    ellipsis_mask=0,
    new_axis_mask=0,
    shrink_axis_mask=0,
    var=None,
    name=None,
):
    """Extracts a strided slice of ``input_`` (the op behind ``tensor[...]``).

    Bit ``i`` of a mask refers to entry ``i`` of ``begin``/``end``/``strides``: begin/end
    masks ignore that bound, ``ellipsis_mask`` marks an ``...``, ``new_axis_mask`` a
    ``newaxis`` and ``shrink_axis_mask`` an integer index that removes its dimension.
    """
    del var  # sliced assignment through a variable is not supported
    with name_scope(name, "StridedSlice", [input_, begin, end, strides]) as scope:
        x = convert_to_tensor(input_, name="input")
        b = _int_tensor(begin, "begin")
        e = _int_tensor(end, "end", dtype_hint=b.dtype.base_dtype)
        if strides is None:
            if b.shape.is_fully_defined():
                strides = np.ones(b.shape.as_list(), dtype=b.dtype.base_dtype.np)
            else:
                strides = ones_like(b)
        s = _int_tensor(strides, "strides", dtype_hint=b.dtype.base_dtype)
        attrs = dict(
            zip(
                _MASKS,
                (
                    int(begin_mask),
                    int(end_mask),
                    int(ellipsis_mask),
                    int(new_axis_mask),
                    int(shrink_axis_mask),
                ),
            )
        )
        return create("StridedSlice", [x, b, e, s], attrs, scope).outputs[0]


def _strided_slice_grad_infer(o):
    shape_t = o._inputs[0]
    check_dtype(o, 0, INDEX, "Index")
    check_same_dtype(o, (0, 1, 2, 3))
    _with_rank(shape_t, 1)
    return [(base(o._inputs[4]), constant_value_as_shape(shape_t))]


@op(
    "StridedSliceGrad",
    infer=_strided_slice_grad_infer,
    grad=lambda o, g: (
        [None] * 4 + [strided_slice(g, *o.inputs[1:4], **{k: o.get_attr(k) for k in _MASKS})]
    ),
    inputs=("shape", "begin", "end", "strides", "dy"),
    attrs=(
        Attr("begin_mask", "int"),
        Attr("end_mask", "int"),
        Attr("ellipsis_mask", "int"),
        Attr("new_axis_mask", "int"),
        Attr("shrink_axis_mask", "int"),
    ),
    flags=OpFlags(host_inputs=(0, 1, 2, 3)),
)
def _strided_slice_grad_kernel(
    xp,
    shape,
    begin,
    end,
    strides,
    dy,
    *,
    begin_mask,
    end_mask,
    ellipsis_mask,
    new_axis_mask,
    shrink_axis_mask,
):
    dims = [int(d) for d in shape.tolist()]
    final, index = _strided_slice_plan(
        dims,
        begin.tolist(),
        end.tolist(),
        strides.tolist(),
        begin_mask,
        end_mask,
        ellipsis_mask,
        new_axis_mask,
        shrink_axis_mask,
        err=_invalid,
    )
    if list(dy.shape) != final:
        raise _invalid(f"shape of dy was {_short(dy.shape)} instead of {_short(final)}")
    out = xp.zeros(dims, dtype=dy.dtype)
    target = out[tuple(index)]  # basic indexing: a view that writes through to ``out``
    target[...] = dy.reshape(target.shape)
    return out


def strided_slice_grad(
    shape,
    begin,
    end,
    strides,
    dy,
    begin_mask=0,
    end_mask=0,
    ellipsis_mask=0,
    new_axis_mask=0,
    shrink_axis_mask=0,
    name=None,
):
    """``dy`` written into zeros of ``shape`` where ``strided_slice`` with the same
    arguments reads (StridedSlice's gradient)."""
    with name_scope(name, "StridedSliceGrad", [shape, begin, end, strides, dy]) as scope:
        ins = [_int_tensor(shape, "shape")]
        for v, n in ((begin, "begin"), (end, "end"), (strides, "strides")):
            ins.append(_int_tensor(v, n, dtype_hint=base(ins[0])))
        ins.append(convert_to_tensor(dy, name="dy"))
        attrs = dict(
            zip(
                _MASKS,
                (
                    int(begin_mask),
                    int(end_mask),
                    int(ellipsis_mask),
                    int(new_axis_mask),
                    int(shrink_axis_mask),
                ),
            )
        )
        return create("StridedSliceGrad", ins, attrs, scope).outputs[0]


_SLICE_TYPE_ERROR = (
    "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
    "scalar tf.int32/tf.int64 tensors are valid indices"
)


def _index_value(idx):
    """A Python int (or a scalar int tensor) for one index, TypeError for anything else."""
    if isinstance(idx, Dimension):
        return idx.value
    if isinstance(idx, numbers.Integral):
        return int(idx)
    dtype = getattr(idx, "dtype", None)
    try:
        dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
    except (TypeError, ValueError):
        dtype = None
    rank = getattr(getattr(idx, "shape", None), "rank", getattr(idx, "ndim", None))
    if dtype not in INDEX or rank not in (None, 0):
        raise TypeError(f"{_SLICE_TYPE_ERROR}, got {idx!r}")
    return idx if not isinstance(idx, np.ndarray | np.generic) else int(idx)


def _pack_indices(values, name):
    if all(isinstance(v, int) for v in values):
        big = any(not -(2**31) <= v < 2**31 for v in values)
        return constant(np.array(values, dtype=np.int64 if big else np.int32), name=name)
    if any(isinstance(v, Tensor) and v.dtype.base_dtype is dtypes.int64 for v in values):
        values = [math_ops.cast(v, dtypes.int64) if isinstance(v, Tensor) else v for v in values]
    return stack(values, name=name)


def _slice_helper(tensor, slice_spec):
    """``tensor[slice_spec]`` with TF1's semantics, built from one StridedSlice op.

    Supports ints (negative from the end), slices with steps, ``...``, ``None``/``newaxis``,
    scalar int tensors and tuples of these; a bool mask selects with ``boolean_mask``.
    """
    if (
        isinstance(slice_spec, bool)
        or (isinstance(slice_spec, Tensor) and slice_spec.dtype.base_dtype is dtypes.bool)
        or (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == bool)
    ):
        return boolean_mask(tensor, slice_spec)
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(slice_spec):
        if isinstance(s, builtins.slice):
            for bound, out, mask in (
                (s.start, begin, "begin_mask"),
                (s.stop, end, "end_mask"),
                (s.step, strides, None),
            ):
                v = None if bound is None else _index_value(bound)
                if v is None:
                    out.append(1 if mask is None else 0)
                    if mask:
                        masks[mask] |= 1 << i
                else:
                    out.append(v)
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= 1 << i
        else:
            v = _index_value(s)
            begin.append(v)
            end.append(v + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= 1 << i
    with name_scope(None, "strided_slice", [tensor] + begin + end + strides) as scope:
        if begin:
            packed = [_pack_indices(v, "stack") for v in (begin, end, strides)]
            if any(t.dtype.base_dtype is dtypes.int64 for t in packed):
                packed = [math_ops.cast(t, dtypes.int64) for t in packed]
        else:
            packed = [constant([], dtype=dtypes.int32)] * 3
        return strided_slice(tensor, *packed, **masks, name=scope)


Tensor._override_operator("__getitem__", _slice_helper)


# -----------------------------------------------------------------------------------------
# Gather
# -----------------------------------------------------------------------------------------


def _gather_infer(o):
    params, indices, axis_t = o._inputs
    check_dtype(o, 1, INDEX, "Tindices")
    check_dtype(o, 2, INDEX, "Taxis")
    _with_rank(axis_t, 0)
    dtype = base(params)
    p, ind = _dims(params), _dims(indices)
    axis = _const_scalar(axis_t)
    bd = o._attrs["batch_dims"]
    if p is None or ind is None:
        return [(dtype, unknown_shape())]
    if bd < 0:
        bd += len(ind)
    if axis is None:
        return [(dtype, unknown_shape(len(p) + len(ind) - 1 - bd))]
    if not -len(p) <= axis < len(p):
        raise ShapeError(
            f"Shape must be at least rank {axis + 1 if axis >= 0 else -axis} but is rank {len(p)}"
        )
    axis %= len(p)
    if not 0 <= bd <= len(ind):
        raise ShapeError(
            f"batch_dims ({o._attrs['batch_dims']}) must be in [{-len(ind)}, {len(ind)}]"
        )
    if bd > axis:
        raise ShapeError(f"batch_dims ({bd}) must be less than or equal to axis ({axis})")
    batch = _merge_part(p[:bd], ind[:bd])
    return [(dtype, TensorShape(batch + p[bd:axis] + ind[bd:] + p[axis + 1 :]))]


def _gather_grad(o, g):
    params, indices, axis = o.inputs
    dx = gather_grad(
        g, indices, _shape_of(params, base(indices)), axis, batch_dims=o.get_attr("batch_dims")
    )
    return [dx, None, None]


@op(
    "GatherV2",
    infer=_gather_infer,
    grad=_gather_grad,
    inputs=("params", "indices", "axis"),
    attrs=(Attr("batch_dims", "int"),),
    flags=OpFlags(host_inputs=(2,)),
)
def _gather_kernel(xp, params, indices, axis, *, batch_dims):
    a = int(axis)
    if not -params.ndim <= a < params.ndim:
        raise _invalid(
            f"Shape must be at least rank {a + 1 if a >= 0 else -a} but is rank {params.ndim}"
        )
    a %= params.ndim
    bd = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    n = params.shape[a]
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        pos = [int(v) for v in xp.argwhere(bad)[0].tolist()]
        where = f"[{','.join(map(str, pos))}]" if pos else ""
        raise _invalid(f"indices{where} = {int(indices[tuple(pos)])} is not in [0, {n})")
    if bd == 0:
        out = xp.take(params, indices, axis=a)  # a scalar index into strings: the element
        return out if isinstance(out, xp.ndarray) else xp.asarray(out, dtype=params.dtype)
    if params.shape[:bd] != indices.shape[:bd]:
        raise _invalid(
            f"params.shape[:{bd}] = {_short(params.shape[:bd])} must equal "
            f"indices.shape[:{bd}] = {_short(indices.shape[:bd])}"
        )
    # Batched: gather row by row over the flattened batch dimensions.
    out_shape = params.shape[:a] + indices.shape[bd:] + params.shape[a + 1 :]
    nb = int(np.prod(params.shape[:bd], dtype=np.int64))
    if nb == 0:
        return xp.empty(out_shape, dtype=params.dtype)
    p2 = params.reshape((nb,) + params.shape[bd:])
    i2 = indices.reshape((nb,) + indices.shape[bd:])
    rows = [xp.take(p2[k], i2[k], axis=a - bd) for k in builtins.range(nb)]
    return xp.stack(rows).reshape(out_shape)


def _gather_grad_infer(o):
    grad, indices, params_shape, axis_t = o._inputs
    for i, attr in ((1, "Tindices"), (2, "Tindices"), (3, "Taxis")):
        check_dtype(o, i, INDEX, attr)
    _with_rank(params_shape, 1)
    _with_rank(axis_t, 0)
    return [(base(grad), constant_value_as_shape(params_shape))]


def _gather_grad_grad(o, g):
    _, indices, _, axis = o.inputs
    return [gather(g, indices, axis=axis, batch_dims=o.get_attr("batch_dims")), None, None, None]


@op(
    "GatherGrad",
    infer=_gather_grad_infer,
    grad=_gather_grad_grad,
    inputs=("grad", "indices", "params_shape", "axis"),
    attrs=(Attr("batch_dims", "int"),),
)
def _gather_grad_kernel(xp, grad, indices, params_shape, axis, *, batch_dims):
    dims = [int(d) for d in params_shape.tolist()]
    a = int(axis)
    if not -len(dims) <= a < len(dims):
        raise _invalid(f"axis {a} out of range for params of rank {len(dims)}")
    a %= len(dims)
    bd = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    n = dims[a]
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        pos = [int(v) for v in xp.argwhere(bad)[0].tolist()]
        raise _invalid(
            f"indices[{','.join(map(str, pos))}] = {int(indices[tuple(pos)])} is not in [0, {n})"
        )
    want = dims[:a] + list(indices.shape[bd:]) + dims[a + 1 :]
    if list(indices.shape[:bd]) != dims[:bd] or list(grad.shape) != want:
        raise _invalid(
            f"GatherGrad: grad of shape {_short(grad.shape)} and indices of shape "
            f"{_short(indices.shape)} do not match params shape {_short(dims)}"
        )
    # Repeated indices add up (numpy's add.at, cupy's scatter_add); half floats accumulate in
    # float32.
    acc = np.float32 if grad.dtype == np.float16 else grad.dtype
    nb = int(np.prod(dims[:bd], dtype=np.int64))
    k = int(np.prod(indices.shape[bd:], dtype=np.int64))
    out = xp.zeros([nb] + dims[bd:], dtype=acc)
    rows = grad.reshape([nb] + dims[bd:a] + [k] + dims[a + 1 :]).astype(acc, copy=False)
    flat = indices.reshape(nb, k)
    lead = (builtins.slice(None),) * (a - bd)
    for b in builtins.range(nb):
        scatter_add(xp, out[b], lead + (flat[b],), rows[b])
    return out.reshape(dims).astype(grad.dtype, copy=False)


def gather_grad(grad, indices, params_shape, axis=0, batch_dims=0, name=None):
    """The dense gradient of ``gather``: ``grad``'s slices summed into zeros of
    ``params_shape`` at ``indices`` (repeated indices add up)."""
    with name_scope(name, "GatherGrad", [grad, indices, params_shape, axis]) as scope:
        g = convert_to_tensor(grad, name="grad")
        i = _int_tensor(indices, "indices")
        s = _int_tensor(params_shape, "params_shape", dtype_hint=base(i))
        a = _int_tensor(axis, "axis")
        return create("GatherGrad", [g, i, s, a], {"batch_dims": int(batch_dims)}, scope).outputs[0]


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Slices of ``params`` along ``axis`` at ``indices``; out-of-range indices fail at run time.

    >>> gather(zeros([4, 6]), [[1, 2]], axis=1).shape
    TensorShape([Dimension(4), Dimension(1), Dimension(2)])
    """
    del validate_indices  # deprecated in TF: indices are always validated
    if axis is None:
        axis = batch_dims
    with name_scope(name, "GatherV2", [params, indices, axis]) as scope:
        p = convert_to_tensor(params, name="params")
        i = _int_tensor(indices, "indices")
        a = _int_tensor(axis, "axis")
        return create("GatherV2", [p, i, a], {"batch_dims": int(batch_dims)}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Where (coordinates), boolean_mask
# -----------------------------------------------------------------------------------------


def _where_infer(o):
    check_dtype(o, 0, NUMERIC | BOOL)
    return [(dtypes.int64, TensorShape([None, o._inputs[0]._shape.rank]))]


@op("Where", infer=_where_infer, differentiable=False, inputs=("input",))
def _where_kernel(xp, x):
    if x.ndim == 0:
        raise _invalid("WhereOp : Unhandled input dimensions: 0")
    return xp.argwhere(x).astype(np.int64, copy=False)


def where_indices(condition, name=None):
    """The int64 coordinates ``[num_true, rank]`` of the true (non-zero) elements.

    This is TF1's one-argument ``tf.where(condition)``.
    """
    with name_scope(name, "Where", [condition]) as scope:
        c = convert_to_tensor(condition, dtype_hint=dtypes.bool, name="condition")
        return create("Where", [c], {}, scope).outputs[0]


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The elements (or slices from ``axis`` on) of ``tensor`` where ``mask`` is True.

    ``mask`` covers dimensions ``axis .. axis + rank(mask)`` of ``tensor``; they collapse
    into one dimension of unknown size.

    >>> boolean_mask(zeros([2, 3, 4]), [True, False, True], axis=1).shape
    TensorShape([Dimension(2), Dimension(None), Dimension(4)])
    """
    with name_scope(name, "boolean_mask", [tensor, mask]):
        t = convert_to_tensor(tensor, name="tensor")
        m = convert_to_tensor(mask, name="mask")
        mask_shape, tensor_shape = m.shape, t.shape
        n = mask_shape.rank
        if n == 0:
            raise ValueError("mask cannot be scalar.")
        if n is None:
            raise ValueError(
                "Number of mask dimensions must be specified, even if some "
                "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                "is not."
            )
        axis = 0 if axis is None else axis
        axis_value = constant_value(axis) if isinstance(axis, Tensor) else axis
        if axis_value is not None:
            axis = int(axis_value)
            tensor_shape[axis : axis + n].assert_is_compatible_with(mask_shape)
        # The masked dims collapse into one of size(mask) elements, then a 1-D gather.
        dyn = shape(t)
        flat = reshape(t, concat([dyn[:axis], stack([size(m)]), dyn[axis + n :]], 0))
        if axis_value is not None and tensor_shape.rank is not None:
            flat.set_shape(
                tensor_shape[:axis]
                .concatenate([tensor_shape[axis : axis + n].num_elements()])
                .concatenate(tensor_shape[axis + n :])
            )
        indices = squeeze(where_indices(reshape(m, [-1])), axis=[1])
        return gather(flat, indices, axis=axis)


__all__ = ["slice", "strided_slice", "gather", "where_indices", "boolean_mask"]
