"""Array ops: placeholders, identity, shapes, reshaping, packing, filling, slicing."""

from __future__ import annotations

import builtins
import numbers

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import ShapeError, op
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops._common import (
    BOOL,
    INDEX,
    NUMERIC,
    base,
    check_dtype,
    check_same_dtype,
    create,
    same_as_input,
)
from engine.tensor_shape import Dimension, TensorShape, as_shape, unknown_shape

# -----------------------------------------------------------------------------------------
# Placeholders and identity
# -----------------------------------------------------------------------------------------


def _placeholder_infer(o):
    shape = o._attrs["shape"]
    return [(o._attrs["dtype"], shape if shape is not None else unknown_shape())]


@op("Placeholder", infer=_placeholder_infer, differentiable=False, stateful=True)
def _placeholder(xp, *, dtype, shape):
    # Plans check feeds before running; reaching this kernel means the value was not fed.
    raise errors.InvalidArgumentError(None, None, "You must feed a value for placeholder tensor "
                                      f"with dtype {dtype.name}")


def placeholder(dtype, shape=None, name=None):
    """A tensor whose value must be fed when it is on a run's computation path.

    >>> x = placeholder(float32, shape=[None, 3], name="x")
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    shape = None if shape is None else as_shape(shape)
    return create("Placeholder", [], {"dtype": dtype, "shape": shape},
                  name or "Placeholder").outputs[0]


def _pwd_infer(o):
    given = o._attrs["shape"]
    inp = o._inputs[0]._shape
    if not inp.is_compatible_with(given):
        raise ShapeError(f"Shape {given} is not compatible with the default value shape {inp}")
    return [(o._inputs[0]._dtype.base_dtype, given)]


@op("PlaceholderWithDefault", infer=_pwd_infer, aliases=True,
    grad=lambda o, g: [None], inputs=("input",))
def _placeholder_with_default(xp, x, *, shape):
    return x


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's argument name
    """A placeholder that yields ``input`` when not fed."""
    with name_scope(name, "PlaceholderWithDefault", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return create("PlaceholderWithDefault", [x], {"shape": as_shape(shape)},
                      scope).outputs[0]


@op("Identity", infer=same_as_input, aliases=True, grad=lambda o, g: [g], inputs=("input",))
def _identity(xp, x):
    return x


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value as ``input`` (reads a variable's current value)."""
    value = input._graph_element_value() if hasattr(input, "_graph_element_value") else input
    with name_scope(name, "Identity", [value]) as scope:
        x = convert_to_tensor(value)
        return create("Identity", [x], {}, scope).outputs[0]


@op("StopGradient", infer=same_as_input, aliases=True, differentiable=False,
    inputs=("input",))
def _stop_gradient(xp, x):
    return x


def stop_gradient(input, name=None):  # noqa: A002
    """Identity in the forward pass; blocks gradients from flowing through it."""
    with name_scope(name, "StopGradient", [input]) as scope:
        x = convert_to_tensor(input)
        return create("StopGradient", [x], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Shapes
# -----------------------------------------------------------------------------------------


def _shape_infer(o):
    r = o._inputs[0]._shape.rank
    return [(o._attrs["out_type"], TensorShape([r]))]


@op("Shape", infer=_shape_infer, differentiable=False, inputs=("input",))
def _shape_kernel(xp, x, *, out_type):
    return xp.asarray(x.shape, dtype=out_type.np)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The dynamic shape of ``input`` as a 1-D int tensor."""
    with name_scope(name, "Shape", [input]) as scope:
        x = convert_to_tensor(input)
        return create("Shape", [x], {"out_type": dtypes.as_dtype(out_type)}, scope).outputs[0]


@op("Size", infer=lambda o: [(o._attrs["out_type"], TensorShape([]))], differentiable=False,
    inputs=("input",))
def _size_kernel(xp, x, *, out_type):
    return xp.asarray(x.size, dtype=out_type.np)


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The number of elements of ``input``."""
    with name_scope(name, "Size", [input]) as scope:
        x = convert_to_tensor(input)
        return create("Size", [x], {"out_type": dtypes.as_dtype(out_type)}, scope).outputs[0]


@op("Rank", infer=lambda o: [(dtypes.int32, TensorShape([]))], differentiable=False,
    inputs=("input",))
def _rank_kernel(xp, x):
    return xp.asarray(x.ndim, dtype=np.int32)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of ``input``."""
    with name_scope(name, "Rank", [input]) as scope:
        x = convert_to_tensor(input)
        return create("Rank", [x], {}, scope).outputs[0]


def _reshape_infer(o):
    x, s = o._inputs
    if s._dtype.base_dtype not in INDEX:
        raise TypeError(f"Reshape's shape must be int32 or int64, got {s._dtype.name}")
    if s._shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {s._shape.rank}")
    target = constant_value_as_shape(s)
    dtype = x._dtype.base_dtype
    if target.rank is None:
        return [(dtype, target)]
    value = constant_value(s)
    dims = target.as_list()
    if value is not None:
        dims = [int(d) for d in np.reshape(value, -1)]
        if sum(1 for d in dims if d == -1) > 1:
            return [(dtype, TensorShape([None if d == -1 else d for d in dims]))]
        if any(d < -1 for d in dims):
            raise ShapeError(f"Size {dims.index(min(dims))} must be non-negative, not "
                             f"{min(dims)}")
    n_in = x._shape.num_elements()
    known = [d for d in dims if d is not None and d != -1]
    prod = int(np.prod(known, dtype=np.int64)) if known else 1
    if -1 in dims:
        if n_in is not None:
            if prod == 0 or n_in % prod:
                if prod == 0 and n_in == 0:
                    return [(dtype, TensorShape([None if d == -1 else d for d in dims]))]
                raise ShapeError(f"Dimension size must be evenly divisible by {prod} but is "
                                 f"{n_in}")
            dims = [n_in // prod if d == -1 else d for d in dims]
        else:
            dims = [None if d == -1 else d for d in dims]
        return [(dtype, TensorShape(dims))]
    if n_in is not None and None not in dims and n_in != prod:
        raise ShapeError(f"Cannot reshape a tensor with {n_in} elements to shape "
                         f"{TensorShape(dims)._short()} ({prod} elements)")
    return [(dtype, TensorShape(dims))]


@op("Reshape", infer=_reshape_infer, aliases=True, inputs=("tensor", "shape"))
def _reshape_kernel(xp, x, shape):
    return xp.reshape(x, [int(d) for d in shape])


def reshape(tensor, shape, name=None):
    """``tensor`` with its elements rearranged to ``shape`` (one entry may be -1)."""
    with name_scope(name, "Reshape", [tensor, shape]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        s = convert_to_tensor(shape, dtype_hint=dtypes.int32, name="shape")
        return create("Reshape", [x, s], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Packing
# -----------------------------------------------------------------------------------------


def _pack_infer(o):
    axis = o._attrs["axis"]
    first = o._inputs[0]._dtype.base_dtype
    merged = unknown_shape()
    for i, t in enumerate(o._inputs):
        if t._dtype.base_dtype is not first:
            raise TypeError(f"Tensors in list passed to 'values' of 'Pack' Op have types "
                            f"[{', '.join(x._dtype.base_dtype.name for x in o._inputs)}] that "
                            "don't all match.")
        try:
            merged = merged.merge_with(t._shape)
        except ValueError:
            raise ShapeError(f"Shapes of all inputs must match: values[0].shape = "
                             f"{o._inputs[0]._shape._short()} != values[{i}].shape = "
                             f"{t._shape._short()}") from None
    if merged.rank is None:
        return [(first, unknown_shape())]
    rank = merged.rank + 1
    if not -rank <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range [{-rank}, {rank})")
    axis = axis + rank if axis < 0 else axis
    dims = merged.as_list()
    dims.insert(axis, len(o._inputs))
    return [(first, TensorShape(dims))]


@op("Pack", infer=_pack_infer, inputs=("values*",))
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
# Filling
# -----------------------------------------------------------------------------------------


def _fill_infer(o):
    dims, value = o._inputs
    if dims._dtype.base_dtype not in INDEX:
        raise TypeError(f"fill's dims must be int32 or int64, got {dims._dtype.name}")
    if value._shape.rank not in (None, 0):
        raise ShapeError(f"value must be a scalar, got shape {value._shape._short()}")
    return [(value._dtype.base_dtype, constant_value_as_shape(dims))]


@op("Fill", infer=_fill_infer, inputs=("dims", "value"))
def _fill_kernel(xp, dims, value):
    return xp.full([int(d) for d in dims], value, dtype=value.dtype)


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` filled with the scalar ``value``."""
    with name_scope(name, "Fill", [dims, value]) as scope:
        d = convert_to_tensor(dims, dtype_hint=dtypes.int32, name="dims")
        v = convert_to_tensor(value, name="value")
        return create("Fill", [d, v], {}, scope).outputs[0]


def _filled(shape, dtype, fill_value, name, default_name):
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, default_name, [shape]) as scope:
        if not hasattr(shape, "dtype"):
            try:
                dims = [int(d) for d in TensorShape(shape).as_list()]
            except (TypeError, ValueError):
                dims = None
            if dims is not None:
                value = np.full(dims, fill_value, dtype=dtype.np) if dtype != dtypes.string \
                    else np.full(dims, b"", dtype=object)
                return constant(value, dtype=dtype, name=scope)
        s = convert_to_tensor(shape, dtype_hint=dtypes.int32, name="shape")
        v = constant(fill_value if dtype != dtypes.string else b"", dtype=dtype)
        return create("Fill", [s, v], {}, scope).outputs[0]


def zeros(shape, dtype=dtypes.float32, name=None):
    """A tensor of ``shape`` with all elements zero."""
    return _filled(shape, dtype, 0, name, "zeros")


def ones(shape, dtype=dtypes.float32, name=None):
    """A tensor of ``shape`` with all elements one."""
    return _filled(shape, dtype, 1, name, "ones")


@op("ZerosLike", infer=same_as_input, differentiable=False, inputs=("x",))
def _zeros_like_kernel(xp, x):
    return xp.zeros_like(x)


@op("OnesLike", infer=same_as_input, differentiable=False, inputs=("x",))
def _ones_like_kernel(xp, x):
    return xp.ones_like(x)


def _like(kind, tensor, dtype, name, optimize=True):
    with name_scope(name, kind.lower().replace("like", "_like"), [tensor]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        target = x.dtype.base_dtype if dtype is None else dtypes.as_dtype(dtype).base_dtype
        if target is not x.dtype.base_dtype:
            fill_value = 0 if kind == "ZerosLike" else 1
            if optimize and x.shape.is_fully_defined():
                return _filled(x.shape.as_list(), target, fill_value, scope, None)
            return _filled(shape(x), target, fill_value, scope, None)
        return create(kind, [x], {}, scope).outputs[0]


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """A tensor of zeros with the shape (and by default the dtype) of ``tensor``."""
    return _like("ZerosLike", tensor, dtype, name, optimize)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """A tensor of ones with the shape (and by default the dtype) of ``tensor``."""
    return _like("OnesLike", tensor, dtype, name, optimize)


def _range_infer(o):
    start, limit, delta = o._inputs
    dtype = start._dtype.base_dtype
    for t in (limit, delta):
        if t._dtype.base_dtype is not dtype:
            raise TypeError(f"range's start, limit and delta must have one dtype; got "
                            f"{start.dtype.name}, {limit.dtype.name}, {delta.dtype.name}")
    if dtype not in NUMERIC:
        raise TypeError(f"range does not support dtype {dtype.name}")
    vals = [constant_value(t) for t in o._inputs]
    if all(v is not None for v in vals):
        s, lim, d = (v.item() for v in vals)
        if d == 0:
            raise ShapeError("Requires delta != 0")
        n = max(0, int(np.ceil((lim - s) / d))) if dtype.is_floating else \
            max(0, -(-(lim - s) // d))
        return [(dtype, TensorShape([n]))]
    return [(dtype, TensorShape([None]))]


@op("Range", infer=_range_infer, differentiable=False, inputs=("start", "limit", "delta"))
def _range_kernel(xp, start, limit, delta):
    if delta == 0:
        raise errors.InvalidArgumentError(None, None, "Requires delta != 0: 0")
    return xp.arange(start, limit, delta, dtype=start.dtype)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """A 1-D tensor ``[start, start + delta, ...]`` stopping before ``limit``."""
    if limit is None:
        start, limit = 0, start
    with name_scope(name, "Range", [start, limit, delta]) as scope:
        args = [start, limit, delta]
        if dtype is not None:
            target = dtypes.as_dtype(dtype).base_dtype
        else:
            order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]
            found = []
            for a in args:
                d = a.dtype.base_dtype if hasattr(a, "dtype") else \
                    (dtypes.float32 if isinstance(a, float) else dtypes.int32)
                if isinstance(a, np.ndarray | np.generic):
                    d = dtypes.as_dtype(np.asarray(a).dtype)
                found.append(d)
            target = max(found, key=lambda d: order.index(d) if d in order else 0)
        ts = []
        for a, n in zip(args, ("start", "limit", "delta")):
            t = convert_to_tensor(a, dtype_hint=target, name=n)
            if t.dtype.base_dtype is not target:
                from engine.ops import math as math_ops
                t = math_ops.cast(t, target)
            ts.append(t)
        return create("Range", ts, {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Shared helpers for the ops below
# -----------------------------------------------------------------------------------------


def _invalid(msg: str) -> errors.InvalidArgumentError:
    """A run-time data error; the session attaches the failing op."""
    return errors.InvalidArgumentError(None, None, msg)


def _const_ints(t) -> list[int] | None:
    """The build-time value of an int tensor as a flat list, or None when unknown."""
    v = constant_value(t)
    return None if v is None else [int(x) for x in np.reshape(v, -1)]


def _const_scalar(t) -> int | None:
    v = constant_value(t)
    return None if v is None or np.size(v) != 1 else int(np.reshape(v, -1)[0])


def _with_rank(t, rank: int) -> None:
    r = t._shape.rank
    if r is not None and r != rank:
        raise ShapeError(f"Shape must be rank {rank} but is rank {r}")


def _vector_length(t) -> int | None:
    """The static length of a tensor that must be a vector (ShapeError otherwise)."""
    _with_rank(t, 1)
    dims = t._shape.as_tuple()
    return None if dims is None else dims[0]


def _dims(t) -> list | None:
    dims = t._shape.as_tuple()
    return None if dims is None else list(dims)


def _outputs(parts: list):
    """A multi-output kernel's result: a tuple, or the array itself when there is one."""
    return parts[0] if len(parts) == 1 else tuple(parts)


def _int_tensor(value, name, dtype_hint=dtypes.int32):
    return convert_to_tensor(value, dtype_hint=dtype_hint, name=name)


def _deprecated_alias(new_name, new, old_name, old):
    if old is not None:
        if new is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
        return old
    return new


# -----------------------------------------------------------------------------------------
# Squeeze, ExpandDims, Transpose
# -----------------------------------------------------------------------------------------


def _squeeze_infer(o):
    x = o._inputs[0]
    dtype = base(x)
    dims = _dims(x)
    if dims is None:
        return [(dtype, unknown_shape())]
    rank = len(dims)
    wanted = set()
    for i, a in enumerate(o._attrs["squeeze_dims"]):
        if not -rank <= a < rank:
            raise ShapeError(f"squeeze_dims[{i}] not in [{-rank},{rank}).")
        wanted.add(a % rank)
    out = []
    for i, d in enumerate(dims):
        if wanted:
            if i not in wanted:
                out.append(d)
            elif d is not None and d != 1:
                raise ShapeError(f"Can not squeeze dim[{i}], expected a dimension of 1, got {d}")
        elif d is None:
            return [(dtype, unknown_shape())]  # it may or may not be squeezed
        elif d != 1:
            out.append(d)
    return [(dtype, TensorShape(out))]


@op("Squeeze", infer=_squeeze_infer, aliases=True, inputs=("input",))
def _squeeze_kernel(xp, x, *, squeeze_dims):
    if not squeeze_dims:
        return xp.reshape(x, [d for d in x.shape if d != 1])
    wanted = set()
    for a in squeeze_dims:
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"Tried to squeeze dim index {a} for tensor with {x.ndim} dimensions.")
        a %= x.ndim
        if x.shape[a] != 1:
            raise _invalid(f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                           f"{x.shape[a]}")
        wanted.add(a)
    return xp.reshape(x, [d for i, d in enumerate(x.shape) if i not in wanted])


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002 - TF's name
    """Removes dimensions of size 1 (all of them, or those listed in ``axis``).

    >>> squeeze(zeros([1, 2, 1])).shape
    TensorShape([Dimension(2)])
    """
    axis = _deprecated_alias("axis", axis, "squeeze_dims", squeeze_dims)
    dims = [] if axis is None else [int(a) for a in np.reshape(axis, -1)]
    with name_scope(name, "Squeeze", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return create("Squeeze", [x], {"squeeze_dims": dims}, scope).outputs[0]


def _expand_dims_infer(o):
    x, dim = o._inputs
    check_dtype(o, 1, INDEX, "Tdim")
    if dim._shape.rank is not None and dim._shape.rank > 1:
        raise ShapeError(f"Shape must be at most rank 1 but is rank {dim._shape.rank}")
    value = constant_value(dim)
    if value is not None and value.size != 1:
        raise ShapeError("'dim' input must be a tensor with a single value")
    dims = _dims(x)
    if value is None or dims is None:
        return [(base(x), unknown_shape())]
    d, rank = int(value.reshape(-1)[0]), len(dims)
    if not -rank - 1 <= d <= rank:
        raise ShapeError(f"dim {d} not in the interval [{-rank - 1}, {rank}].")
    dims.insert(d + rank + 1 if d < 0 else d, 1)
    return [(base(x), TensorShape(dims))]


@op("ExpandDims", infer=_expand_dims_infer, aliases=True, inputs=("input", "dim"))
def _expand_dims_kernel(xp, x, dim):
    if dim.size != 1:
        raise _invalid("'dim' must be a tensor with a single value")
    d = int(dim.reshape(-1)[0])
    if not -x.ndim - 1 <= d <= x.ndim:
        raise _invalid(f"Tried to expand dim index {d} for tensor with {x.ndim} dimensions.")
    return xp.expand_dims(x, d)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """Inserts a dimension of size 1 at ``axis`` (negative counts from the end).

    >>> expand_dims(zeros([2, 3]), -1).shape
    TensorShape([Dimension(2), Dimension(3), Dimension(1)])
    """
    axis = _deprecated_alias("axis", axis, "dim", dim)
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    with name_scope(name, "ExpandDims", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        d = _int_tensor(axis, "dim")
        return create("ExpandDims", [x, d], {}, scope).outputs[0]


def _transpose_infer(o):
    x, perm = o._inputs
    check_dtype(o, 1, INDEX, "Tperm")
    n = _vector_length(perm)
    dims = _dims(x)
    if dims is not None and n is not None and len(dims) != n:
        raise ShapeError(f"Dimension must be {len(dims)} but is {n}")
    rank = len(dims) if dims is not None else n
    if rank is None:
        return [(base(x), unknown_shape())]
    p = _const_ints(perm)
    if p is None:
        return [(base(x), unknown_shape(rank))]
    for d in p:
        # TF's shape function accepts one negative wrap (-1); the kernel rejects it later.
        if d >= rank or d <= -rank:
            raise ShapeError(f"perm dim {d} is out of range of input rank {rank}")
    return [(base(x), TensorShape([None if dims is None else dims[d] for d in p]))]


@op("Transpose", infer=_transpose_infer, aliases=True, inputs=("x", "perm"))
def _transpose_kernel(xp, x, perm):
    p = perm.tolist()
    n = x.ndim
    if len(p) != n:
        raise _invalid(f"transpose expects a vector of size {n}. But input(1) is a vector of "
                       f"size {len(p)}")
    for d in p:
        if not 0 <= d < n:
            raise _invalid(f"{d} is out of range [0 .. {n})")
    missing = sorted(set(builtins.range(n)) - set(p))
    if missing:
        raise _invalid(f"{missing[0]} is missing from {{{','.join(map(str, p))}}}.")
    return xp.transpose(x, p)


def transpose(a, perm=None, name="transpose", conjugate=False):
    """Permutes the dimensions of ``a``; the default ``perm`` reverses them.

    >>> transpose(zeros([2, 3, 4])).shape
    TensorShape([Dimension(4), Dimension(3), Dimension(2)])
    """
    with name_scope(name, "transpose", [a]) as scope:
        x = convert_to_tensor(a, name="a")
        if perm is None:
            r = x.shape.rank
            if r is None:
                from engine.ops import math as math_ops

                dyn = rank(x)
                perm = math_ops.subtract(dyn - 1, range(0, dyn, 1))
            else:
                perm = np.arange(r - 1, -1, -1, dtype=np.int32)
        p = _int_tensor(perm, "perm")
        return create("Transpose", [x, p], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Concatenation and splitting
# -----------------------------------------------------------------------------------------


def _check_list_dtypes(o, values) -> dtypes.DType:
    first = base(values[0])
    if any(base(t) is not first for t in values):
        raise TypeError(f"Tensors in list passed to 'values' of '{o._type}' Op have types "
                        f"[{', '.join(base(t).name for t in values)}] that don't all match.")
    return first


def _merge_part(acc: list, part: list) -> list:
    """Merges two equal-length dim lists, TF's message naming the first mismatch."""
    out = []
    for j, (a, b) in enumerate(zip(acc, part)):
        if a is not None and b is not None and a != b:
            raise ShapeError(f"Dimension {j} in both shapes must be equal, but are {a} and {b}. "
                             f"Shapes are {TensorShape(acc)._short()} and "
                             f"{TensorShape(part)._short()}.")
        out.append(a if a is not None else b)
    return out


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
        raise ShapeError(f"Shape must be at least rank {axis + 1 if axis >= 0 else -axis} but "
                         f"is rank {rank}")
    axis %= rank
    before, after, total = None, None, 0
    for t in values:
        dims = _dims(t)
        if dims is None:
            total = None
            continue
        before = dims[:axis] if before is None else _merge_part(before, dims[:axis])
        after = dims[axis + 1:] if after is None else _merge_part(after, dims[axis + 1:])
        total = None if total is None or dims[axis] is None else total + dims[axis]
    if before is None:
        before, after = [None] * axis, [None] * (rank - axis - 1)
    return [(dtype, TensorShape(before + [total] + after))]


@op("ConcatV2", infer=_concat_infer, inputs=("values*", "axis"))
def _concat_kernel(xp, *args):
    *values, axis = args
    rank = values[0].ndim
    a = int(axis)
    if not -rank <= a < rank:
        raise _invalid(f"ConcatOp : Expected concatenating dimensions in the range [{-rank}, "
                       f"{rank}), but got {a}")
    a %= rank
    first = values[0].shape
    for i, v in enumerate(values[1:], 1):
        if v.ndim != rank:
            raise _invalid(f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                           f"{_short(first)} vs. shape[{i}] = {_short(v.shape)}")
        for j in builtins.range(rank):
            if j != a and v.shape[j] != first[j]:
                raise _invalid(f"ConcatOp : Dimension {j} in both shapes must be equal: "
                               f"shape[0] = {_short(first)} vs. shape[{i}] = "
                               f"{_short(v.shape)}")
    return xp.concatenate(values, axis=a)


def _short(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


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
            convert_to_tensor(axis, dtype=dtypes.int32, name="concat_dim").shape \
                .assert_has_rank(0)
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
    return [(base(x), TensorShape(dims[:axis] + dims[axis + 1:]))] * num


@op("Unpack", infer=_unpack_infer, aliases=True, inputs=("value",))
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
                raise ValueError(f"Argument `axis` = {axis} not in range [{-len(dims)}, "
                                 f"{len(dims)})")
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
            raise ShapeError(f"Dimension size must be evenly divisible by {num} but is {d}\n\t"
                             "Number of ways to split should evenly divide the split dimension")
        dims[axis] = d // num
    return [(base(x), TensorShape(dims))] * num


@op("Split", infer=_split_infer, aliases=True, inputs=("split_dim", "value"))
def _split_kernel(xp, axis, x, *, num_split):
    a = int(axis)
    if not -x.ndim <= a < x.ndim:
        raise _invalid(f"-input rank(-{x.ndim}) <= split_dim < input rank ({x.ndim}), but got "
                       f"{a}")
    a %= x.ndim
    if x.shape[a] % num_split:
        raise _invalid(f"Number of ways to split should evenly divide the split dimension, but "
                       f"got split_dim {a} (size = {x.shape[a]}) and num_split {num_split}")
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
        raise err(f"can't split axis of size {total} into pieces of size "
                  f"{_short(sizes)}")
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
    return [(base(x), TensorShape(dims[:axis] + [s] + dims[axis + 1:])) for s in sizes]


@op("SplitV", infer=_split_v_infer, aliases=True, inputs=("value", "size_splits", "split_dim"))
def _split_v_kernel(xp, x, size_splits, axis, *, num_split):
    a = int(axis)
    if not -x.ndim <= a < x.ndim:
        raise _invalid(f"-input rank(-{x.ndim}) <= split_dim < input rank ({x.ndim}), but got "
                       f"{a}")
    a %= x.ndim
    sizes = [int(s) for s in size_splits.tolist()]
    if len(sizes) != num_split:
        raise _invalid(f"Length of size_splits should be equal to num_split: {len(sizes)} vs "
                       f"{num_split}")
    total = x.shape[a]
    known = sum(s for s in sizes if s != -1)
    if sizes.count(-1) > 1:
        raise _invalid("There can only be one -1 in the input.")
    if (-1 in sizes and known > total) or (-1 not in sizes and known != total):
        raise _invalid("Determined shape must either match input shape along split_dim exactly "
                       "if fully specified, or be less than the size of the input along "
                       f"split_dim if not fully specified.  Got: {known}")
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
    if isinstance(num_or_size_splits, (numbers.Integral, Dimension)) and \
            not isinstance(num_or_size_splits, bool):
        n = int(num_or_size_splits)
        if n < 1:
            raise ValueError(f"Attr 'num_split' of 'Split' Op passed {n} less than minimum 1.")
        with name_scope(name, "split", [value]) as scope:
            a = convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim")
            x = convert_to_tensor(value, name="value")
            return list(create("Split", [a, x], {"num_split": n}, scope).outputs)
    sizes = _int_tensor(num_or_size_splits, None)
    if sizes.shape.rank == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument "
                         f"to split. Argument provided: {num_or_size_splits}")
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
# Tile, Slice, StridedSlice and Tensor.__getitem__
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
    return [(base(x), TensorShape([None if d is None or k is None else d * k
                                   for d, k in zip(dims, mult)]))]


@op("Tile", infer=_tile_infer, inputs=("input", "multiples"))
def _tile_kernel(xp, x, multiples):
    reps = multiples.tolist()
    if len(reps) != x.ndim:
        raise _invalid(f"Expected multiples argument to be a vector of length {x.ndim} but got "
                       f"length {len(reps)}")
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


def _slice_infer(o):
    x, begin, size = o._inputs
    check_dtype(o, 1, INDEX, "Index")
    check_same_dtype(o, (1, 2))
    nb, ns = _vector_length(begin), _vector_length(size)
    if nb is not None and ns is not None and nb != ns:
        raise ShapeError(f"Dimension 0 in both shapes must be equal, but are {nb} and {ns}. "
                         f"Shapes are [{nb}] and [{ns}].")
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
        return [(base(x), TensorShape(constant_value_as_shape(size).as_tuple() or
                                      (None,) * rank))]
    out = []
    for i, s in enumerate(sizes):
        if s < -1:
            raise ShapeError(f"Invalid value in tensor used for shape: {s}")
        if s != -1:
            out.append(s)
        elif dims[i] is None or b[i] is None:
            out.append(None)
        elif b[i] > dims[i]:
            raise ShapeError(f"Negative dimension size caused by subtracting {b[i]} from "
                             f"{dims[i]}")
        else:
            out.append(dims[i] - b[i])
    return [(base(x), TensorShape(out))]


@op("Slice", infer=_slice_infer, aliases=True, inputs=("input", "begin", "size"))
def _slice_kernel(xp, x, begin, size):
    b, s = begin.tolist(), size.tolist()
    if len(b) != x.ndim or len(s) != x.ndim:
        raise _invalid(f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, "
                       f"but got shapes [{len(b)}] and [{len(s)}] instead.")
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


def _strided_slice_plan(dims, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                        new_axis_mask, shrink_axis_mask, err):
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
                raise err(f"Index out of range using input dim {full}; input has only {rank} "
                          "dims")
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
                b = (lo if s > 0 else hi) if d_bmask[i] else min(max(b + dim if b < 0 else b,
                                                                     lo), hi)
                e = (hi if s > 0 else lo) if d_emask[i] else min(max(e + dim if e < 0 else e,
                                                                     lo), hi)
            interval = e - b
        elif shrink:
            interval = 1
        elif d_bmask[i] and d_emask[i]:
            interval = dim if s > 0 else -dim
        else:
            interval = None
        if interval is not None:
            size = 0 if interval == 0 or (interval < 0) != (s < 0) else \
                -(-abs(interval) // abs(s))
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
            raise ShapeError(f"Dimension 0 in both shapes must be equal, but are {n} and {m}. "
                             f"Shapes are [{n}] and [{m}].")
        n = m if n is None else n
    dims = _dims(x)
    s = _const_ints(strides)
    if dims is None or n is None or s is None:
        return [(base(x), unknown_shape())]
    masks = [o._attrs[k] for k in _MASKS]
    final, _ = _strided_slice_plan(dims, _const_ints(begin), _const_ints(end), s, *masks,
                                   err=ShapeError)
    return [(base(x), TensorShape(final))]


@op("StridedSlice", infer=_strided_slice_infer, aliases=True,
    inputs=("input", "begin", "end", "strides"))
def _strided_slice_kernel(xp, x, begin, end, strides, *, begin_mask, end_mask, ellipsis_mask,
                          new_axis_mask, shrink_axis_mask):
    b, e, s = begin.tolist(), end.tolist(), strides.tolist()
    if begin.ndim != 1 or not len(b) == len(e) == len(s):
        raise _invalid("Expected begin, end, and strides to be 1D equal size tensors, but got "
                       f"shapes {_short(begin.shape)}, {_short(end.shape)}, and "
                       f"{_short(strides.shape)} instead.")
    final, index = _strided_slice_plan(list(x.shape), b, e, s, begin_mask, end_mask,
                                       ellipsis_mask, new_axis_mask, shrink_axis_mask,
                                       err=_invalid)
    return xp.reshape(x[tuple(index)], final)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
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
        attrs = dict(zip(_MASKS, (int(begin_mask), int(end_mask), int(ellipsis_mask),
                                  int(new_axis_mask), int(shrink_axis_mask))))
        return create("StridedSlice", [x, b, e, s], attrs, scope).outputs[0]


_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                     "scalar tf.int32/tf.int64 tensors are valid indices")


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
        big = any(not -2 ** 31 <= v < 2 ** 31 for v in values)
        return constant(np.array(values, dtype=np.int64 if big else np.int32), name=name)
    if any(isinstance(v, Tensor) and v.dtype.base_dtype is dtypes.int64 for v in values):
        from engine.ops import math as math_ops

        values = [math_ops.cast(v, dtypes.int64) if isinstance(v, Tensor) else v
                  for v in values]
    return stack(values, name=name)


def _slice_helper(tensor, slice_spec):
    """``tensor[slice_spec]`` with TF1's semantics, built from one StridedSlice op.

    Supports ints (negative from the end), slices with steps, ``...``, ``None``/``newaxis``,
    scalar int tensors and tuples of these; a bool mask selects with ``boolean_mask``.
    """
    if isinstance(slice_spec, bool) or (
            isinstance(slice_spec, Tensor) and slice_spec.dtype.base_dtype is dtypes.bool) or (
            isinstance(slice_spec, np.ndarray) and slice_spec.dtype == bool):
        return boolean_mask(tensor, slice_spec)
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(slice_spec):
        if isinstance(s, builtins.slice):
            for bound, out, mask in ((s.start, begin, "begin_mask"), (s.stop, end, "end_mask"),
                                     (s.step, strides, None)):
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
                from engine.ops import math as math_ops

                packed = [math_ops.cast(t, dtypes.int64) for t in packed]
        else:
            packed = [constant([], dtype=dtypes.int32)] * 3
        return strided_slice(tensor, *packed, **masks, name=scope)


Tensor._override_operator("__getitem__", _slice_helper)


# -----------------------------------------------------------------------------------------
# Gather, OneHot
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
        raise ShapeError(f"Shape must be at least rank {axis + 1 if axis >= 0 else -axis} but "
                         f"is rank {len(p)}")
    axis %= len(p)
    if not 0 <= bd <= len(ind):
        raise ShapeError(f"batch_dims ({o._attrs['batch_dims']}) must be in [{-len(ind)}, "
                         f"{len(ind)}]")
    if bd > axis:
        raise ShapeError(f"batch_dims ({bd}) must be less than or equal to axis ({axis})")
    batch = _merge_part(p[:bd], ind[:bd])
    return [(dtype, TensorShape(batch + p[bd:axis] + ind[bd:] + p[axis + 1:]))]


@op("GatherV2", infer=_gather_infer, inputs=("params", "indices", "axis"))
def _gather_kernel(xp, params, indices, axis, *, batch_dims):
    a = int(axis)
    if not -params.ndim <= a < params.ndim:
        raise _invalid(f"Shape must be at least rank {a + 1 if a >= 0 else -a} but is rank "
                       f"{params.ndim}")
    a %= params.ndim
    bd = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    n = params.shape[a]
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        pos = [int(v) for v in xp.argwhere(bad)[0].tolist()]
        where = f"[{','.join(map(str, pos))}]" if pos else ""
        raise _invalid(f"indices{where} = {int(indices[tuple(pos)])} is not in [0, {n})")
    if bd == 0:
        return xp.take(params, indices, axis=a)
    if params.shape[:bd] != indices.shape[:bd]:
        raise _invalid(f"params.shape[:{bd}] = {_short(params.shape[:bd])} must equal "
                       f"indices.shape[:{bd}] = {_short(indices.shape[:bd])}")
    # Batched: gather row by row over the flattened batch dimensions.
    out_shape = params.shape[:a] + indices.shape[bd:] + params.shape[a + 1:]
    nb = int(np.prod(params.shape[:bd], dtype=np.int64))
    if nb == 0:
        return xp.empty(out_shape, dtype=params.dtype)
    p2 = params.reshape((nb,) + params.shape[bd:])
    i2 = indices.reshape((nb,) + indices.shape[bd:])
    rows = [xp.take(p2[k], i2[k], axis=a - bd) for k in builtins.range(nb)]
    return xp.stack(rows).reshape(out_shape)


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


_ONE_HOT_INDICES = frozenset([dtypes.uint8, dtypes.int8, dtypes.int32, dtypes.int64])


def _one_hot_infer(o):
    indices, depth, on, off = o._inputs
    check_dtype(o, 0, _ONE_HOT_INDICES, "TI")
    check_dtype(o, 1, frozenset([dtypes.int32]))
    dtype = check_same_dtype(o, (2, 3))
    for t in (depth, on, off):
        _with_rank(t, 0)
    axis = o._attrs["axis"]
    if axis < -1:
        raise ShapeError("axis must be >= -1")
    d = _const_scalar(depth)
    if d is not None and d < 0:
        raise ShapeError(f"Dimension size, given by scalar input 1, must be non-negative but is "
                         f"{d}")
    dims = _dims(indices)
    if dims is None:
        return [(dtype, unknown_shape())]
    if axis > len(dims):
        raise ShapeError(f"Expected axis to be -1 or between [0, {len(dims) + 1}).  But "
                         f"received: {axis}")
    dims.insert(len(dims) if axis == -1 else axis, d)
    return [(dtype, TensorShape(dims))]


@op("OneHot", infer=_one_hot_infer, inputs=("indices", "depth", "on_value", "off_value"))
def _one_hot_kernel(xp, indices, depth, on_value, off_value, *, axis):
    d = int(depth)
    if d < 0:
        raise _invalid(f"depth must be non-negative, got: {d}")
    if not -1 <= axis <= indices.ndim:
        raise _invalid(f"Expected axis to be -1 or between [0, {indices.ndim + 1}).  But "
                       f"received: {axis}")
    a = indices.ndim if axis == -1 else axis
    classes = xp.arange(d).reshape([d if i == a else 1 for i in builtins.range(indices.ndim + 1)])
    hot = xp.expand_dims(indices, a) == classes
    return xp.where(hot, on_value, off_value).astype(on_value.dtype, copy=False)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length ``depth`` inserted at ``axis`` (default: last).

    Indices outside ``[0, depth)`` give rows of ``off_value``.

    >>> one_hot([1, 2], 3).shape
    TensorShape([Dimension(2), Dimension(3)])
    """
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
        on = None if on_value is None else convert_to_tensor(on_value, dtype_hint=dtype,
                                                             name="on_value")
        off = None if off_value is None else convert_to_tensor(off_value, dtype_hint=dtype,
                                                               name="off_value")
        for t, what in ((on, "on_value"), (off, "off_value")):
            if t is not None and dtype is not None and t.dtype.base_dtype is not dtype:
                raise TypeError(f"dtype {t.dtype.base_dtype} of {what} does not match dtype "
                                f"parameter {dtype}")
        if dtype is None:
            dtype = on.dtype.base_dtype if on is not None else \
                off.dtype.base_dtype if off is not None else dtypes.float32
        on = on if on is not None else convert_to_tensor(1, dtype=dtype, name="on_value")
        off = off if off is not None else convert_to_tensor(0, dtype=dtype, name="off_value")
        if on.dtype.base_dtype is not off.dtype.base_dtype:
            raise TypeError(f"dtype {on.dtype.base_dtype} of on_value does not match dtype "
                            f"{off.dtype.base_dtype} of off_value")
        i = convert_to_tensor(indices, name="indices")
        d = convert_to_tensor(depth, dtype=dtypes.int32, name="depth")
        axis = -1 if axis is None else int(axis)
        return create("OneHot", [i, d, on, off], {"axis": axis}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Padding
# -----------------------------------------------------------------------------------------


def _pad_infer(o):
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
    dims = dims or [None] * rank
    return [(base(x), TensorShape([None if d is None else d + int(a) + int(b)
                                   for d, (a, b) in zip(dims, pads.tolist())]))]


def _check_paddings(x, paddings) -> list:
    pads = paddings.tolist()
    if paddings.shape != (x.ndim, 2):
        raise _invalid(f"The first dimension of paddings must be the rank of inputs"
                       f"{_short(paddings.shape)} {_short(x.shape)}")
    for a, b in pads:
        if a < 0 or b < 0:
            raise _invalid(f"Paddings must be non-negative: {a} {b}")
    return pads


def _constant_pad(xp, x, paddings, value):
    return xp.pad(x, _check_paddings(x, paddings), mode="constant", constant_values=value)


@op("Pad", infer=_pad_infer, inputs=("input", "paddings"))
def _pad_kernel(xp, x, paddings):
    return _constant_pad(xp, x, paddings, b"" if x.dtype.kind == "O" else 0)


@op("PadV2", infer=_pad_infer, inputs=("input", "paddings", "constant_values"))
def _pad_v2_kernel(xp, x, paddings, constant_values):
    return _constant_pad(xp, x, paddings, constant_values.item())


@op("MirrorPad", infer=_pad_infer, inputs=("input", "paddings"))
def _mirror_pad_kernel(xp, x, paddings, *, mode):
    pads = _check_paddings(x, paddings)
    for (a, b), d in zip(pads, x.shape):
        if mode == "REFLECT" and (a >= d or b >= d):
            raise _invalid(f"paddings must be less than the dimension size: {a}, {b} not less "
                           f"than {d}")
        if mode == "SYMMETRIC" and (a > d or b > d):
            raise _invalid(f"paddings must be no greater than the dimension size: {a}, {b} "
                           f"greater than {d}")
    return xp.pad(x, pads, mode=mode.lower())


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):  # noqa: A002
    """Pads ``tensor`` by ``paddings[i] = [before, after]`` along each dimension ``i``.

    ``mode`` is "CONSTANT" (with ``constant_values``), "REFLECT" (mirror without the edge)
    or "SYMMETRIC" (mirror with the edge), in any case.
    """
    mode = mode.upper()
    if mode == "CONSTANT":
        zero = not isinstance(constant_values, Tensor) and np.ndim(constant_values) == 0 \
            and constant_values == 0
        op_type = "Pad" if zero else "PadV2"
    elif mode in ("REFLECT", "SYMMETRIC"):
        op_type = "MirrorPad"
    else:
        raise ValueError('Value of argument `mode` expected to be one of "CONSTANT", '
                         f'"REFLECT", or "SYMMETRIC". Received `mode` = {mode}')
    with name_scope(name, op_type, [tensor, paddings]) as scope:
        x = convert_to_tensor(tensor, name="input")
        ins = [x, _int_tensor(paddings, "paddings")]
        if op_type == "PadV2":
            ins.append(convert_to_tensor(constant_values, dtype_hint=x.dtype.base_dtype,
                                         name="constant_values"))
        attrs = {"mode": mode} if op_type == "MirrorPad" else {}
        return create(op_type, ins, attrs, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Where (coordinates), boolean_mask, reverse, broadcast_to
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
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        axis = 0 if axis is None else axis
        axis_value = constant_value(axis) if isinstance(axis, Tensor) else axis
        if axis_value is not None:
            axis = int(axis_value)
            tensor_shape[axis:axis + n].assert_is_compatible_with(mask_shape)
        # The masked dims collapse into one of size(mask) elements, then a 1-D gather.
        dyn = shape(t)
        flat = reshape(t, concat([dyn[:axis], stack([size(m)]), dyn[axis + n:]], 0))
        if axis_value is not None and tensor_shape.rank is not None:
            flat.set_shape(tensor_shape[:axis].concatenate(
                [tensor_shape[axis:axis + n].num_elements()]).concatenate(
                tensor_shape[axis + n:]))
        indices = squeeze(where_indices(reshape(m, [-1])), axis=[1])
        return gather(flat, indices, axis=axis)


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


@op("ReverseV2", infer=_reverse_infer, aliases=True, inputs=("tensor", "axis"))
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


@op("BroadcastTo", infer=_broadcast_to_infer, inputs=("input", "shape"))
def _broadcast_to_kernel(xp, x, shape):
    target = [int(d) for d in shape.tolist()]
    ok = x.ndim <= len(target) and all(
        d in (1, t) for d, t in zip(reversed(x.shape), reversed(target)))
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


newaxis = None


__all__ = ["placeholder", "placeholder_with_default", "identity", "stop_gradient", "shape",
           "size", "rank", "reshape", "stack", "fill", "zeros", "ones", "zeros_like",
           "ones_like", "range", "squeeze", "expand_dims", "transpose", "concat", "unstack",
           "split", "tile", "slice", "strided_slice", "gather", "one_hot", "pad",
           "where_indices", "boolean_mask", "reverse", "broadcast_to", "newaxis"]
