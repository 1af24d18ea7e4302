"""Core array ops: placeholders, identity, shapes, reshaping, transposing, filling, one_hot.

The other array families live next door and build on this one (they are re-exported by the
``engine`` namespace, not here): ``array_transform.py`` (stack/unstack, concat/split, tile,
pad, reverse, broadcast_to) and ``slicing.py`` (slice, strided_slice and
``Tensor.__getitem__``, gather, where_indices, boolean_mask). Each op's registration, kernel
and gradient sit side by side.
"""

from __future__ import annotations

import builtins

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops._common import (
    INDEX,
    NUMERIC,
    base,
    check_dtype,
    check_same_dtype,
    create,
    same_as_input,
)
from engine.tensor_shape import TensorShape, as_shape, unknown_shape

# -----------------------------------------------------------------------------------------
# Shared helpers (array_transform.py and slicing.py use them too)
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


def _short(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _shape_of(x: Tensor, dtype=dtypes.int32) -> Tensor:
    """``x``'s shape as a 1-D int tensor: a constant when its static shape is fully known
    (gradient graphs then keep static shapes), a Shape op otherwise."""
    if x.shape.is_fully_defined():
        return constant(np.array(x.shape.as_list(), dtype=dtype.np))
    return shape(x, out_type=dtype)


def _merge_part(acc: list, part: list) -> list:
    """Merges two equal-length dim lists, TF's message naming the first mismatch."""
    out = []
    for j, (a, b) in enumerate(zip(acc, part)):
        if a is not None and b is not None and a != b:
            raise ShapeError(
                f"Dimension {j} in both shapes must be equal, but are {a} and {b}. "
                f"Shapes are {TensorShape(acc)._short()} and "
                f"{TensorShape(part)._short()}."
            )
        out.append(a if a is not None else b)
    return out


# -----------------------------------------------------------------------------------------
# Placeholders and identity
# -----------------------------------------------------------------------------------------


def _placeholder_infer(o):
    shape = o._attrs["shape"]
    return [(o._attrs["dtype"], shape if shape is not None else unknown_shape())]


@op(
    "Placeholder",
    infer=_placeholder_infer,
    attrs=(
        Attr("dtype", "type"),
        Attr("shape", "shape?"),
    ),
    differentiable=False,
    flags=OpFlags(stateful=True),
)
def _placeholder(xp, *, dtype, shape):
    # Plans check feeds before running; reaching this kernel means the value was not fed.
    raise errors.InvalidArgumentError(
        None, None, f"You must feed a value for placeholder tensor with dtype {dtype.name}"
    )


def placeholder(dtype, shape=None, name=None):
    """A tensor whose value must be fed when it is on a run's computation path.

    >>> x = placeholder(float32, shape=[None, 3], name="x")
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    shape = None if shape is None else as_shape(shape)
    return create(
        "Placeholder", [], {"dtype": dtype, "shape": shape}, name or "Placeholder"
    ).outputs[0]


def _pwd_infer(o):
    given = o._attrs["shape"]
    inp = o._inputs[0]._shape
    if not inp.is_compatible_with(given):
        raise ShapeError(f"Shape {given} is not compatible with the default value shape {inp}")
    return [(o._inputs[0]._dtype.base_dtype, given)]


@op(
    "PlaceholderWithDefault",
    infer=_pwd_infer,
    grad=lambda o, g: [g],
    inputs=("input",),
    attrs=(Attr("shape", "shape?"),),
    flags=OpFlags(aliases=True),
)
def _placeholder_with_default(xp, x, *, shape):
    return x


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's argument name
    """A placeholder that yields ``input`` when not fed."""
    with name_scope(name, "PlaceholderWithDefault", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return create("PlaceholderWithDefault", [x], {"shape": as_shape(shape)}, scope).outputs[0]


@op(
    "Identity",
    infer=same_as_input,
    grad=lambda o, g: [g],
    inputs=("input",),
    flags=OpFlags(aliases=True),
)
def _identity(xp, x):
    return x


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value as ``input`` (reads a variable's current value)."""
    value = input._graph_element_value() if hasattr(input, "_graph_element_value") else input
    with name_scope(name, "Identity", [value]) as scope:
        x = convert_to_tensor(value)
        return create("Identity", [x], {}, scope).outputs[0]


def _identity_n_infer(o):
    if not o._inputs:
        raise ShapeError("IdentityN needs at least one input")
    return [(t._dtype.base_dtype, t._shape) for t in o._inputs]


@op(
    "IdentityN",
    infer=_identity_n_infer,
    grad=lambda o, *g: list(g),
    inputs=("input*",),
    flags=OpFlags(aliases=True),
)
def _identity_n(xp, *xs):
    return xs[0] if len(xs) == 1 else tuple(xs)


def identity_n(input, name=None):  # noqa: A002
    """Returns each of ``input`` (a list of tensors) unchanged, as one op with many outputs.

    Imported TF2 function calls become an ``IdentityN`` of the function's results."""
    with name_scope(name, "IdentityN", list(input)) as scope:
        xs = [convert_to_tensor(x) for x in input]
        return list(create("IdentityN", xs, {}, scope).outputs)


@op(
    "StopGradient",
    infer=same_as_input,
    differentiable=False,
    inputs=("input",),
    flags=OpFlags(aliases=True),
)
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


@op(
    "Shape",
    infer=_shape_infer,
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("out_type", "type"),),
)
def _shape_kernel(xp, x, *, out_type):
    return xp.asarray(x.shape, dtype=out_type.np)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The dynamic shape of ``input`` as a 1-D int tensor."""
    with name_scope(name, "Shape", [input]) as scope:
        x = convert_to_tensor(input)
        return create("Shape", [x], {"out_type": dtypes.as_dtype(out_type)}, scope).outputs[0]


@op(
    "Size",
    infer=lambda o: [(o._attrs["out_type"], TensorShape([]))],
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("out_type", "type"),),
)
def _size_kernel(xp, x, *, out_type):
    return xp.asarray(x.size, dtype=out_type.np)


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The number of elements of ``input``."""
    with name_scope(name, "Size", [input]) as scope:
        x = convert_to_tensor(input)
        return create("Size", [x], {"out_type": dtypes.as_dtype(out_type)}, scope).outputs[0]


@op(
    "Rank",
    infer=lambda o: [(dtypes.int32, TensorShape([]))],
    differentiable=False,
    inputs=("input",),
)
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
            raise ShapeError(f"Size {dims.index(min(dims))} must be non-negative, not {min(dims)}")
    n_in = x._shape.num_elements()
    known = [d for d in dims if d is not None and d != -1]
    prod = int(np.prod(known, dtype=np.int64)) if known else 1
    if -1 in dims:
        if n_in is not None:
            if prod == 0 or n_in % prod:
                if prod == 0 and n_in == 0:
                    return [(dtype, TensorShape([None if d == -1 else d for d in dims]))]
                raise ShapeError(f"Dimension size must be evenly divisible by {prod} but is {n_in}")
            dims = [n_in // prod if d == -1 else d for d in dims]
        else:
            dims = [None if d == -1 else d for d in dims]
        return [(dtype, TensorShape(dims))]
    if n_in is not None and None not in dims and n_in != prod:
        raise ShapeError(
            f"Cannot reshape a tensor with {n_in} elements to shape "
            f"{TensorShape(dims)._short()} ({prod} elements)"
        )
    return [(dtype, TensorShape(dims))]


def _reshape_grad(o, g):
    return [reshape(g, _shape_of(o.inputs[0])), None]


@op(
    "Reshape",
    infer=_reshape_infer,
    grad=_reshape_grad,
    inputs=("tensor", "shape"),
    flags=OpFlags(aliases=True, host_inputs=(1,)),
)
def _reshape_kernel(xp, x, shape):
    # One copy to the host (iterating a device array copies each element on its own).
    return xp.reshape(x, list(shape.tolist()))


def reshape(tensor, shape, name=None):
    """``tensor`` with its elements rearranged to ``shape`` (one entry may be -1)."""
    with name_scope(name, "Reshape", [tensor, shape]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        s = convert_to_tensor(shape, dtype_hint=dtypes.int32, name="shape")
        return create("Reshape", [x, s], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Squeeze, ExpandDims, Transpose, InvertPermutation
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


@op(
    "Squeeze",
    infer=_squeeze_infer,
    grad=lambda o, g: [reshape(g, _shape_of(o.inputs[0]))],
    inputs=("input",),
    attrs=(Attr("squeeze_dims", "list(int)"),),
    flags=OpFlags(aliases=True),
)
def _squeeze_kernel(xp, x, *, squeeze_dims):
    if not squeeze_dims:
        return xp.reshape(x, [d for d in x.shape if d != 1])
    wanted = set()
    for a in squeeze_dims:
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"Tried to squeeze dim index {a} for tensor with {x.ndim} dimensions.")
        a %= x.ndim
        if x.shape[a] != 1:
            raise _invalid(f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]}")
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


@op(
    "ExpandDims",
    infer=_expand_dims_infer,
    grad=lambda o, g: [reshape(g, _shape_of(o.inputs[0])), None],
    inputs=("input", "dim"),
    flags=OpFlags(aliases=True, host_inputs=(1,)),
)
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


def _transpose_grad(o, g):
    perm = o.inputs[1]
    p = _const_ints(perm)
    # argsort of a permutation is its inverse.
    inverse = (
        invert_permutation(perm)
        if p is None
        else np.argsort(np.array(p, dtype=np.int64)).astype(perm.dtype.base_dtype.np)
    )
    return [transpose(g, inverse), None]


@op(
    "Transpose",
    infer=_transpose_infer,
    grad=_transpose_grad,
    inputs=("x", "perm"),
    flags=OpFlags(aliases=True, host_inputs=(1,)),
)
def _transpose_kernel(xp, x, perm):
    p = perm.tolist()
    n = x.ndim
    if len(p) != n:
        raise _invalid(
            f"transpose expects a vector of size {n}. But input(1) is a vector of size {len(p)}"
        )
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


def _invert_permutation_infer(o):
    d = check_dtype(o, 0, INDEX)
    _with_rank(o._inputs[0], 1)
    return [(d, o._inputs[0]._shape)]


@op("InvertPermutation", infer=_invert_permutation_infer, differentiable=False, inputs=("x",))
def _invert_permutation_kernel(xp, x):
    if x.ndim != 1:
        raise _invalid(f"invert_permutation expects a 1D vector, got shape {_short(x.shape)}")
    n = x.shape[0]
    if n and not bool((xp.sort(x) == xp.arange(n, dtype=x.dtype)).all()):
        raise _invalid(f"{_short(x.tolist())} is not a permutation of [0 .. {n})")
    out = xp.empty_like(x)
    out[x] = xp.arange(n, dtype=x.dtype)
    return out


def invert_permutation(x, name=None):
    """The inverse permutation: ``y[x[i]] = i``.

    >>> invert_permutation([3, 4, 0, 2, 1])  # [2, 4, 3, 0, 1]
    """
    with name_scope(name, "InvertPermutation", [x]) as scope:
        p = _int_tensor(x, "x")
        return create("InvertPermutation", [p], {}, scope).outputs[0]


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


def _fill_grad(o, g):
    from engine.ops import reduction  # reduction builds on this module

    return [None, reduction.reduce_sum(g)]


@op(
    "Fill",
    infer=_fill_infer,
    grad=_fill_grad,
    inputs=("dims", "value"),
    flags=OpFlags(host_inputs=(0,)),
)
def _fill_kernel(xp, dims, value):
    return xp.full(list(dims.tolist()), value, dtype=value.dtype)


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
                value = (
                    np.full(dims, fill_value, dtype=dtype.np)
                    if dtype != dtypes.string
                    else np.full(dims, b"", dtype=object)
                )
                return constant(value, dtype=dtype, name=scope)
        s = convert_to_tensor(shape, dtype_hint=dtypes.int32, name="shape")
        # (a numpy scalar of the dtype: constant(1, tf.bool) refuses the Python int)
        v = constant(np.array(fill_value, dtype=dtype.np) if dtype != dtypes.string else b"")
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
            raise TypeError(
                f"range's start, limit and delta must have one dtype; got "
                f"{start.dtype.name}, {limit.dtype.name}, {delta.dtype.name}"
            )
    if dtype not in NUMERIC:
        raise TypeError(f"range does not support dtype {dtype.name}")
    vals = [constant_value(t) for t in o._inputs]
    if all(v is not None for v in vals):
        s, lim, d = (v.item() for v in vals)
        if d == 0:
            raise ShapeError("Requires delta != 0")
        n = max(0, int(np.ceil((lim - s) / d))) if dtype.is_floating else max(0, -(-(lim - s) // d))
        return [(dtype, TensorShape([n]))]
    return [(dtype, TensorShape([None]))]


@op(
    "Range",
    infer=_range_infer,
    differentiable=False,
    inputs=("start", "limit", "delta"),
    flags=OpFlags(host_inputs=(0, 1, 2)),
)
def _range_kernel(xp, start, limit, delta):
    if delta == 0:
        raise errors.InvalidArgumentError(None, None, "Requires delta != 0: 0")
    if xp is not np:
        # cupy.arange converts its bounds with numpy scalar types, which refuse device arrays.
        return xp.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)
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
                d = (
                    a.dtype.base_dtype
                    if hasattr(a, "dtype")
                    else (dtypes.float32 if isinstance(a, float) else dtypes.int32)
                )
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
# OneHot
# -----------------------------------------------------------------------------------------


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
        raise ShapeError(
            f"Dimension size, given by scalar input 1, must be non-negative but is {d}"
        )
    dims = _dims(indices)
    if dims is None:
        return [(dtype, unknown_shape())]
    if axis > len(dims):
        raise ShapeError(
            f"Expected axis to be -1 or between [0, {len(dims) + 1}).  But received: {axis}"
        )
    dims.insert(len(dims) if axis == -1 else axis, d)
    return [(dtype, TensorShape(dims))]


@op(
    "OneHot",
    infer=_one_hot_infer,
    differentiable=False,
    inputs=("indices", "depth", "on_value", "off_value"),
    attrs=(Attr("axis", "int"),),
    flags=OpFlags(host_inputs=(1,)),
)
def _one_hot_kernel(xp, indices, depth, on_value, off_value, *, axis):
    d = int(depth)
    if d < 0:
        raise _invalid(f"depth must be non-negative, got: {d}")
    if not -1 <= axis <= indices.ndim:
        raise _invalid(
            f"Expected axis to be -1 or between [0, {indices.ndim + 1}).  But received: {axis}"
        )
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
        on = (
            None
            if on_value is None
            else convert_to_tensor(on_value, dtype_hint=dtype, name="on_value")
        )
        off = (
            None
            if off_value is None
            else convert_to_tensor(off_value, dtype_hint=dtype, name="off_value")
        )
        for t, what in ((on, "on_value"), (off, "off_value")):
            if t is not None and dtype is not None and t.dtype.base_dtype is not dtype:
                raise TypeError(
                    f"dtype {t.dtype.base_dtype} of {what} does not match dtype parameter {dtype}"
                )
        if dtype is None:
            dtype = (
                on.dtype.base_dtype
                if on is not None
                else off.dtype.base_dtype
                if off is not None
                else dtypes.float32
            )
        on = on if on is not None else convert_to_tensor(1, dtype=dtype, name="on_value")
        off = off if off is not None else convert_to_tensor(0, dtype=dtype, name="off_value")
        if on.dtype.base_dtype is not off.dtype.base_dtype:
            raise TypeError(
                f"dtype {on.dtype.base_dtype} of on_value does not match dtype "
                f"{off.dtype.base_dtype} of off_value"
            )
        i = convert_to_tensor(indices, name="indices")
        d = convert_to_tensor(depth, dtype=dtypes.int32, name="depth")
        axis = -1 if axis is None else int(axis)
        return create("OneHot", [i, d, on, off], {"axis": axis}, scope).outputs[0]


newaxis = None

__all__ = [
    "placeholder",
    "placeholder_with_default",
    "identity",
    "identity_n",
    "stop_gradient",
    "shape",
    "size",
    "rank",
    "reshape",
    "fill",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "range",
    "squeeze",
    "expand_dims",
    "transpose",
    "one_hot",
    "newaxis",
    "invert_permutation",
]
