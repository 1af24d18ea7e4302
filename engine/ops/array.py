"""Array ops: placeholders, identity, shapes, reshaping, packing, filling, slicing."""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.registry import ShapeError, op
from engine.framework.tensor_util import constant_value, constant_value_as_shape
from engine.ops._common import INDEX, NUMERIC, create, same_as_input
from engine.tensor_shape import TensorShape, as_shape, unknown_shape

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


__all__ = ["placeholder", "placeholder_with_default", "identity", "stop_gradient", "shape",
           "size", "rank", "reshape", "stack", "fill", "zeros", "ones", "zeros_like",
           "ones_like", "range"]
