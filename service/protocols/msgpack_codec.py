"""Tensors in ``application/msgpack`` bodies: dtype, shape and raw little-endian bytes.

A tensor is the map ``{"dtype": "float32", "shape": [2, 3], "data": <bin>}``; for
``dtype: "string"`` the data is an array of bin values instead. Both protocols use this
encoding in their msgpack bodies (see the README); decoding validates sizes against limits.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from engine import dtypes
from service.errors import InvalidInput
from service.tensors import MAX_ELEMENTS, check_shape

__all__ = ["encode_tensor", "decode_tensor", "unpackb", "packb", "is_tensor_map"]

_MAX_RANK = 32


def packb(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def unpackb(data: bytes) -> Any:
    try:
        return msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=True,
            max_str_len=1 << 20,
            max_bin_len=len(data),
            max_array_len=len(data),
            max_map_len=1 << 16,
            max_ext_len=0,
        )
    except (
        ValueError,
        msgpack.ExtraData,
        msgpack.FormatError,
        msgpack.StackError,
        TypeError,
        UnicodeDecodeError,
    ) as e:
        raise InvalidInput(f"The request body is not valid msgpack: {e}") from None


def is_tensor_map(value: object) -> bool:
    return isinstance(value, dict) and "dtype" in value and "data" in value


def encode_tensor(arr: np.ndarray) -> dict:
    arr = np.asarray(arr)
    if arr.dtype.kind == "O":
        return {
            "dtype": "string",
            "shape": list(arr.shape),
            "data": [
                bytes(v) if isinstance(v, (bytes, bytearray)) else str(v).encode("utf-8")
                for v in arr.reshape(-1)
            ],
        }
    le = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    return {
        "dtype": dtypes.as_dtype(arr.dtype).name,
        "shape": list(arr.shape),
        "data": le.tobytes(),
    }


def decode_tensor(value: object, what: str, max_elements: int = MAX_ELEMENTS) -> np.ndarray:
    if not is_tensor_map(value):
        raise InvalidInput(f"{what}: expected a tensor map {{dtype, shape, data}}")
    name = value.get("dtype")
    try:
        dtype = dtypes.as_dtype(name) if isinstance(name, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype not in dtypes.ALL_VALUE_TYPES:
        raise InvalidInput(f"{what}: unsupported dtype {name!r}")
    shape = value.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_RANK
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise InvalidInput(f"{what}: shape must be a list of non-negative integers")
    count = check_shape(shape, what, max_elements)
    data = value.get("data")
    if dtype is dtypes.string:
        if (
            not isinstance(data, list)
            or len(data) != count
            or not all(isinstance(v, bytes) for v in data)
        ):
            raise InvalidInput(f"{what}: string data must be a list of {count} byte strings")
        arr = np.empty(count, dtype=object)
        arr[:] = data
        return arr.reshape(shape)
    if not isinstance(data, bytes):
        raise InvalidInput(f"{what}: data must be raw bytes")
    if len(data) != count * dtype.size:
        raise InvalidInput(
            f"{what}: {len(data)} data bytes for shape {shape} of "
            f"{dtype.name} (expected {count * dtype.size})"
        )
    return (
        np.frombuffer(data, dtype=dtype.np.newbyteorder("<"))
        .reshape(shape)
        .astype(dtype.np, copy=True)
    )
