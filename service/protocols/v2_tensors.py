"""Tensors of the KServe V2 protocol: datatypes, shapes, and the raw (binary extension / gRPC
raw contents) and JSON encodings, shared by the REST and gRPC adapters.

Raw data is little-endian and row-major; BOOL is one byte per element; each BYTES element is a
4-byte little-endian length followed by its bytes. Every size is checked against the shape
before anything is reshaped.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from engine import dtypes
from engine.tensor_shape import TensorShape
from service.errors import Internal, InvalidInput
from service.protocols.json_numbers import JsonNumbers
from service.tensors import TensorSpec, coerce, float_array, from_json_value

__all__ = [
    "DATATYPES",
    "DATATYPE_OF",
    "parse_datatype",
    "parse_shape",
    "tensor_from_raw",
    "tensor_from_data",
    "tensor_to_raw",
    "output_datatype",
    "flat_bytes",
    "json_data",
]

DATATYPES: dict[str, dtypes.DType] = {
    "BOOL": dtypes.bool,
    "UINT8": dtypes.uint8,
    "UINT16": dtypes.uint16,
    "UINT32": dtypes.uint32,
    "UINT64": dtypes.uint64,
    "INT8": dtypes.int8,
    "INT16": dtypes.int16,
    "INT32": dtypes.int32,
    "INT64": dtypes.int64,
    "FP16": dtypes.float16,
    "FP32": dtypes.float32,
    "FP64": dtypes.float64,
    "BYTES": dtypes.string,
}


_DATATYPE_OF = {d: name for name, d in DATATYPES.items()}


def _datatype(value, what: str) -> dtypes.DType:
    dtype = DATATYPES.get(value) if isinstance(value, str) else None
    if dtype is None:
        detail = " (BF16 is not supported)" if value == "BF16" else ""
        raise InvalidInput(
            f"{what}: unsupported datatype {value!r}{detail}; expected one of "
            f"{', '.join(DATATYPES)}"
        )
    return dtype


def _shape(value, what: str) -> list[int]:
    if (
        not isinstance(value, list)
        or len(value) > 32
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)
    ):
        raise InvalidInput(
            f"{what}: 'shape' must be a list of non-negative integers, got {value!r}"
        )
    return value


def _from_raw(
    raw: bytes, dtype: dtypes.DType, shape: list[int], datatype: str, what: str
) -> np.ndarray:
    """A tensor from the binary extension's encoding."""
    count = math.prod(shape)
    if dtype is dtypes.string:
        return _unpack_bytes(raw, count, what).reshape(shape)
    expected = count * dtype.size
    if len(raw) != expected:
        raise InvalidInput(
            f"{what}: {len(raw)} bytes of binary data, but shape {shape} of "
            f"{datatype} takes {expected} ({count} x {dtype.size} bytes)"
        )
    if dtype is dtypes.bool:
        octets = np.frombuffer(raw, dtype=np.uint8)
        if octets.size and octets.max() > 1:
            raise InvalidInput(f"{what}: BOOL binary data must be bytes 0 or 1")
        return octets.astype(np.bool_).reshape(shape)
    return np.frombuffer(raw, dtype=dtype.np.newbyteorder("<")).astype(dtype.np).reshape(shape)


def _unpack_bytes(raw: bytes, count: int, what: str) -> np.ndarray:
    values, offset = [], 0
    while offset < len(raw) and len(values) < count:
        if offset + 4 > len(raw):
            raise InvalidInput(f"{what}: BYTES binary data ends inside an element's 4-byte length")
        (length,) = struct.unpack_from("<I", raw, offset)
        offset += 4
        if offset + length > len(raw):
            raise InvalidInput(
                f"{what}: BYTES element {len(values)} declares {length} bytes "
                f"but only {len(raw) - offset} remain"
            )
        values.append(raw[offset : offset + length])
        offset += length
    if len(values) != count or offset != len(raw):
        raise InvalidInput(
            f"{what}: BYTES binary data must hold exactly {count} "
            f"length-prefixed element(s) (4-byte little-endian length, then "
            f"the bytes) in {len(raw)} bytes"
        )
    out = np.empty(count, dtype=object)
    out[:] = values
    return out


def _from_data(data, dtype: dtypes.DType, shape: list[int], datatype: str, what: str) -> np.ndarray:
    """A tensor from ``data``: a (nested) list of values, or raw bytes in msgpack bodies."""
    if isinstance(data, bytes):
        return _from_raw(data, dtype, shape, datatype, what)
    count = math.prod(shape)
    arr = None
    if type(data) is JsonNumbers:  # numbers, read as such (service.protocols.json_numbers)
        arr = data.floats(dtype.np)
        if arr is not None and arr.size == count:
            data.release()
            return arr.reshape(shape)
        arr = data.integers() if dtype.is_integer else None  # from_json_value's array
        if arr is None:
            data = data.tolist()
        else:
            data.release()
    elif isinstance(data, list):
        arr = float_array(data, dtype)  # numbers for a float datatype: one conversion
        if arr is not None and arr.size == count:
            return arr.reshape(shape)
        arr = None
    if arr is None:
        arr = from_json_value(data if isinstance(data, list) else [data], what)
    if arr.size != count:
        raise InvalidInput(
            f"{what}: shape {shape} holds {count} element(s) but 'data' has {arr.size}"
        )
    if count == 0:
        return np.empty(shape, dtype=dtype.np)
    declared = TensorSpec(what, "", dtype, TensorShape(None))
    return coerce(declared, arr.reshape(shape), what=f"{what} (datatype {datatype})")


def _output_datatype(name: str, arr: np.ndarray) -> str:
    datatype = _DATATYPE_BY_NUMPY.get(arr.dtype)
    if datatype is not None:
        return datatype
    try:
        datatype = _DATATYPE_OF[dtypes.as_dtype(arr.dtype)]
    except (TypeError, KeyError):
        raise Internal(
            f"output '{name}' has dtype {arr.dtype}, which V2 cannot represent"
        ) from None
    if len(_DATATYPE_BY_NUMPY) < 64:
        _DATATYPE_BY_NUMPY[arr.dtype] = datatype
    return datatype


_DATATYPE_BY_NUMPY: dict[np.dtype, str] = {}  # _output_datatype's answers, by numpy dtype


def _flat_bytes(arr: np.ndarray) -> list[bytes]:
    return [
        v
        if isinstance(v, bytes)
        else bytes(v)
        if isinstance(v, bytearray)
        else str(v).encode("utf-8")
        for v in arr.reshape(-1)
    ]


def _to_raw(arr: np.ndarray) -> bytes:
    if arr.dtype.kind == "O":
        return b"".join(struct.pack("<I", len(v)) + v for v in _flat_bytes(arr))
    return np.ascontiguousarray(arr, arr.dtype.newbyteorder("<")).tobytes()


def _json_data(arr: np.ndarray) -> np.ndarray | list | None:
    """Flat JSON values (numbers and bools as a flat array, written by ``common.dumps``), or
    None for BYTES that are not all UTF-8 (sent as binary then)."""
    if arr.dtype.kind != "O":
        return arr.reshape(-1)
    try:
        return [v.decode("utf-8") for v in _flat_bytes(arr)]
    except UnicodeDecodeError:
        return None


DATATYPE_OF = _DATATYPE_OF
parse_datatype = _datatype
parse_shape = _shape
tensor_from_raw = _from_raw
tensor_from_data = _from_data
tensor_to_raw = _to_raw
output_datatype = _output_datatype
flat_bytes = _flat_bytes
json_data = _json_data
