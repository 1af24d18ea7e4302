"""TensorFlow's ``TensorProto``/``TensorShapeProto``/``DataType`` to numpy and back.

Every count and size comes from untrusted bytes: element counts are bounded before anything
is allocated, and a value list longer than its shape, or raw content of the wrong length, is
an error rather than a silent reshape.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.tensorflow.proto import tensor_pb2, tensor_shape_pb2, types_pb2

__all__ = [
    "TFFormatError",
    "Limits",
    "dtype_from_enum",
    "shape_from_proto",
    "shape_to_proto",
    "array_from_proto",
    "array_to_proto",
]


class TFFormatError(ValueError):
    """A TensorFlow file or message that is malformed or beyond what we support."""


class Limits:
    """Bounds for values read from TensorFlow files."""

    max_rank = 32
    max_dim = 1 << 40
    max_elements = 1 << 31
    max_string_elements = 1 << 24


# Value lists of TensorProto by dtype, in the field TF writes for it.
_VAL_FIELD = {
    "float32": "float_val",
    "float64": "double_val",
    "int32": "int_val",
    "int16": "int_val",
    "int8": "int_val",
    "uint8": "int_val",
    "uint16": "int_val",
    "int64": "int64_val",
    "bool": "bool_val",
    "uint32": "uint32_val",
    "uint64": "uint64_val",
    "float16": "half_val",
    "string": "string_val",
}


def dtype_from_enum(enum: int, where: str) -> dtypes.DType:
    """The engine dtype of TF's ``DataType`` number (reference types map to their base)."""
    base = enum - 100 if enum > 100 else enum
    try:
        d = dtypes.as_dtype(base)
    except (TypeError, ValueError, KeyError):
        d = None
    if d is None:
        name = types_pb2.DataType.Name(enum) if enum in types_pb2.DataType.values() else enum
        raise TFFormatError(f"{where}: dtype {name} is not supported")
    return d


def shape_from_proto(shape: tensor_shape_pb2.TensorShapeProto, where: str) -> list | None:
    """Dims (``-1`` unknown) or None for an unknown rank."""
    if shape.unknown_rank:
        return None
    if len(shape.dim) > Limits.max_rank:
        raise TFFormatError(f"{where}: shape has rank {len(shape.dim)}, over {Limits.max_rank}")
    dims = []
    for d in shape.dim:
        if d.size < -1 or d.size > Limits.max_dim:
            raise TFFormatError(f"{where}: invalid dimension {d.size}")
        dims.append(int(d.size))
    return dims


def shape_to_proto(dims) -> tensor_shape_pb2.TensorShapeProto:
    p = tensor_shape_pb2.TensorShapeProto()
    if dims is None:
        p.unknown_rank = True
        return p
    for d in dims:
        p.dim.add(size=-1 if d is None else int(d))
    return p


def _count(dims, where) -> int:
    n = 1
    for d in dims:
        if d < 0:
            raise TFFormatError(f"{where}: a constant tensor has an unknown dimension")
        n *= d
        if n > Limits.max_elements:
            raise TFFormatError(f"{where}: tensor has more than {Limits.max_elements} elements")
    return n


def array_from_proto(t: tensor_pb2.TensorProto, where: str) -> np.ndarray:
    """The numpy value of ``t`` (strings as an object array of bytes)."""
    dtype = dtype_from_enum(t.dtype, where)
    if dtype in (dtypes.resource, dtypes.variant):
        raise TFFormatError(f"{where}: constant tensors of dtype {dtype.name} are not supported")
    dims = shape_from_proto(t.tensor_shape, where)
    if dims is None:
        raise TFFormatError(f"{where}: a constant tensor has an unknown rank")
    n = _count(dims, where)
    if dtype is dtypes.string:
        vals = t.string_val
        if n > Limits.max_string_elements:
            raise TFFormatError(f"{where}: string tensor has too many elements")
        if len(vals) > n or (n and not vals):
            if n == 0 and not vals:
                pass
            else:
                raise TFFormatError(
                    f"{where}: string tensor of {n} elements holds {len(vals)} values"
                )
        out = np.empty(n, dtype=object)
        if n:
            items = list(vals)
            out[: len(items)] = items
            out[len(items) :] = items[-1]
        return out.reshape(dims)
    np_dtype = dtype.np
    if t.tensor_content:
        if len(t.tensor_content) != n * np_dtype.itemsize:
            raise TFFormatError(
                f"{where}: tensor_content holds {len(t.tensor_content)} bytes, "
                f"{dtype.name} {dims} needs {n * np_dtype.itemsize}"
            )
        arr = np.frombuffer(t.tensor_content, dtype=np_dtype.newbyteorder("<"))
        return arr.astype(np_dtype).reshape(dims)
    vals = getattr(t, _VAL_FIELD[dtype.name])
    if len(vals) > n:
        raise TFFormatError(f"{where}: {len(vals)} values for a tensor of {n} elements")
    if dtype is dtypes.float16:
        src = np.array(list(vals), dtype=np.uint16).view(np.float16)
    else:
        src = np.array(list(vals), dtype=np_dtype)
    if n and not len(src):
        src = np.zeros(1, np_dtype)  # no values: TF's zero tensor
    out = np.empty(n, dtype=np_dtype)
    if n:
        out[: len(src)] = src
        out[len(src) :] = src[-1]
    return out.reshape(dims)


def array_to_proto(arr: np.ndarray) -> tensor_pb2.TensorProto:
    """``arr`` as TF writes constants: raw ``tensor_content`` (``string_val`` for strings)."""
    arr = np.asarray(arr)
    t = tensor_pb2.TensorProto()
    if arr.dtype.kind in "OUS":
        t.dtype = types_pb2.DT_STRING
        for v in arr.reshape(-1):
            t.string_val.append(v.encode("utf-8") if isinstance(v, str) else bytes(v))
    else:
        d = dtypes.as_dtype(arr.dtype)
        t.dtype = d.as_datatype_enum
        t.tensor_content = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    t.tensor_shape.CopyFrom(shape_to_proto(arr.shape))
    return t
