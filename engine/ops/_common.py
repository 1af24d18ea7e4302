"""Helpers shared by the op families: dtype sets, inference functions, op creation, and
kernel helpers that work with both array modules (numpy, cupy)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Operation, Tensor, get_default_graph
from engine.framework.registry import ShapeError
from engine.tensor_shape import TensorShape, unknown_shape

FLOATS = frozenset([dtypes.float16, dtypes.float32, dtypes.float64])
SIGNED_INTS = frozenset([dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64])
UNSIGNED_INTS = frozenset([dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64])
INTS = SIGNED_INTS | UNSIGNED_INTS
NUMERIC = FLOATS | INTS
SIGNED_NUMERIC = FLOATS | SIGNED_INTS
INDEX = frozenset([dtypes.int32, dtypes.int64])
BOOL = frozenset([dtypes.bool])
ALL = NUMERIC | BOOL | frozenset([dtypes.string])
ORDERED = NUMERIC
EQUALITY = ALL

_TYPE_NAMES = {dtypes.float16: "half", dtypes.float32: "float", dtypes.float64: "double"}


def create(op_type: str, inputs, attrs=None, name=None) -> Operation:
    """Creates an op in the default graph; ``name`` ending in '/' is used as is."""
    return get_default_graph()._create_op(op_type, list(inputs), attrs or {}, name or op_type)


def base(t: Tensor) -> dtypes.DType:
    return t._dtype.base_dtype


def check_dtype(op: Operation, i: int, allowed, attr: str = "T") -> dtypes.DType:
    """The base dtype of input ``i``; TypeError when it is not in ``allowed``."""
    d = op._inputs[i]._dtype.base_dtype
    if d not in allowed:
        names = ", ".join(sorted(x.name for x in allowed))
        raise TypeError(
            f"Value for attr '{attr}' of {d.name} is not in the list of allowed "
            f"values: {names}\n\t; NodeDef: {{{{node {op._name}}}}}; Op<name="
            f"{op._type}> (input '{op._opdef.input_name(i)}' of op "
            f"'{op._name}')"
        )
    return d


def check_same_dtype(op: Operation, indices=None) -> dtypes.DType:
    """All listed inputs share one base dtype (TypeError naming the mismatch otherwise)."""
    indices = range(len(op._inputs)) if indices is None else indices
    first = None
    for i in indices:
        d = op._inputs[i]._dtype.base_dtype
        if first is None:
            first, first_i = d, i
        elif d is not first:
            raise TypeError(
                f"Input '{op._opdef.input_name(i)}' of '{op._type}' Op has type "
                f"{d.name} that does not match type {first.name} of argument "
                f"'{op._opdef.input_name(first_i)}'."
            )
    return first


def broadcast_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """Numpy broadcasting of two partially known shapes; ShapeError when incompatible."""
    da, db = a.as_tuple(), b.as_tuple()
    if da is None or db is None:
        return unknown_shape()
    n = max(len(da), len(db))
    da = (1,) * (n - len(da)) + da
    db = (1,) * (n - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None:
            out.append(y)
        elif y is None:
            out.append(x)
        elif x == y:
            out.append(x)
        else:
            raise ShapeError(f"Dimensions must be equal, but are {x} and {y}")
    return TensorShape._from_tuple(tuple(out))


def unary(allowed, out_dtype=None):
    """Inference for an elementwise op of one input."""

    def infer(op):
        d = check_dtype(op, 0, allowed)
        return [(out_dtype or d, op._inputs[0]._shape)]

    return infer


def binary(allowed, out_dtype=None):
    """Inference for an elementwise, broadcasting op of two inputs of one dtype."""

    def infer(op):
        d = check_same_dtype(op, (0, 1))
        check_dtype(op, 0, allowed)
        return [(out_dtype or d, broadcast_shape(op._inputs[0]._shape, op._inputs[1]._shape))]

    return infer


def same_as_input(op):
    return [(op._inputs[0]._dtype.base_dtype, op._inputs[0]._shape)]


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ShapeError(
            f"{what} {axis} is out of range for a tensor of rank {rank} "
            f"(expected [{-rank}, {rank}))"
        )
    return axis + rank if axis < 0 else axis


# -----------------------------------------------------------------------------------------
# Kernel helpers for both array modules
# -----------------------------------------------------------------------------------------


def is_cupy(xp) -> bool:
    """Is ``xp`` the cupy module (the array module of a kernel placed on a GPU)?"""
    return getattr(xp, "__name__", "") == "cupy"


# cupy's scatter-add (CUDA atomicAdd) takes int32, uint32, uint64 and floats only. The other
# integer dtypes accumulate exactly all the same: 8- and 16-bit ones in 32 bits of the same
# signedness (the sum wraps the same way once cast back), int64 as the bits of a uint64
# (two's complement addition is unsigned addition).
_SCATTER_WIDE = {
    np.dtype(np.int8): np.int32,
    np.dtype(np.int16): np.int32,
    np.dtype(np.uint8): np.uint32,
    np.dtype(np.uint16): np.uint32,
}
_SCATTER_BITS = {np.dtype(np.int64): np.uint64}


def scatter_add(xp, out, index, values) -> None:
    """``out[index] += values`` in place, repeated indices all adding up: numpy's
    ``np.add.at``; on cupy ``cupyx.scatter_add``, with the integer dtypes it lacks handled.

    ``values`` is an array of ``out``'s dtype shaped like ``out[index]``.
    """
    if not is_cupy(xp):
        xp.add.at(out, index, values)
        return
    import cupyx  # noqa: PLC0415 - only present where cupy is

    dt = out.dtype
    bits = _SCATTER_BITS.get(dt)
    if bits is not None:
        cupyx.scatter_add(out.view(bits), index, values.astype(dt, copy=False).view(bits))
        return
    wide = _SCATTER_WIDE.get(dt)
    if wide is not None:
        acc = xp.zeros(out.shape, dtype=wide)
        cupyx.scatter_add(acc, index, values.astype(wide))
        out += acc.astype(dt)
        return
    cupyx.scatter_add(out, index, values)


def convert_pair(x, y):
    """Converts two operands, giving Python values the dtype of the tensor operand."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype_hint=x.dtype.base_dtype, name="y")
    else:
        y = convert_to_tensor(y, name="y")
        x = convert_to_tensor(x, dtype_hint=y.dtype.base_dtype, name="x")
    return x, y


def dims_text(shape) -> str:
    """A runtime shape as TF's kernels print it: ``[2,3]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"
