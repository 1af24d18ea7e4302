"""Request tensors: conversion from JSON values and validation against a signature input.

Casts are *safe*: integers may become any integer or float type they fit in, floats may
narrow to float32/float16 (JSON has only one number type) but become integers only when every
value is integral and in range, bools stay bools, strings stay strings. Anything else is an
``InvalidInput`` naming the input and the expectation.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from engine import dtypes
from engine.tensor_shape import TensorShape
from service.errors import InvalidInput

__all__ = ["TensorSpec", "from_json_value", "coerce", "shape_str"]


class TensorSpec:
    """A signature input or output: public alias, graph tensor name, dtype and shape."""

    __slots__ = ("alias", "tensor_name", "dtype", "shape")

    def __init__(self, alias: str, tensor_name: str, dtype: dtypes.DType, shape: TensorShape):
        self.alias = alias
        self.tensor_name = tensor_name
        self.dtype = dtype
        self.shape = shape  # engine TensorShape

    @property
    def dims(self) -> tuple[int | None, ...] | None:
        return self.shape.as_tuple()

    def __repr__(self) -> str:
        return f"TensorSpec({self.alias!r}, {self.dtype.name}, {shape_str(self.dims)})"


def shape_str(dims: Sequence[int | None] | None) -> str:
    if dims is None:
        return "<any shape>"
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _is_bytes_like(v) -> bool:
    return isinstance(v, (str, bytes))


def from_json_value(value: object, what: str) -> np.ndarray:
    """A nested list / scalar from a JSON body as an array (strings become bytes objects)."""
    if value is None:
        raise InvalidInput(f"{what}: null is not a valid tensor value")
    if isinstance(value, dict):
        raise InvalidInput(
            f"{what}: expected a number, string, bool or (nested) list, got an object"
        )
    if _is_bytes_like(value) or isinstance(value, (bool, numbers.Number)):
        flat_first = value
    else:
        flat_first = _first_leaf(value, what)
    if _is_bytes_like(flat_first):
        try:
            arr = np.array(value, dtype=object)
        except ValueError:
            raise InvalidInput(
                f"{what}: ragged nested list (all rows must have the same length)"
            ) from None
        return _encode_strings(arr, what)
    try:
        arr = np.array(value)
    except (ValueError, OverflowError) as e:
        raise InvalidInput(
            f"{what}: ragged nested list (all rows must have the same length): {e}"
        ) from None
    if arr.dtype.kind in "US":
        raise InvalidInput(f"{what}: mixes strings with numbers or bools")
    if arr.dtype.kind not in "biuf":
        raise InvalidInput(f"{what}: values must all be numbers, all bools or all strings")
    return arr


def _first_leaf(value, what):
    v = value
    depth = 0
    while isinstance(v, list):
        if not v:
            return 0.0
        v = v[0]
        depth += 1
        if depth > 32:
            raise InvalidInput(f"{what}: nested more than 32 levels deep")
    if isinstance(v, dict) and set(v) == {"b64"}:
        return b""
    return v


def _encode_strings(arr: np.ndarray, what: str) -> np.ndarray:
    flat = arr.reshape(-1)
    out = np.empty(flat.shape, dtype=object)
    for i, v in enumerate(flat):
        if isinstance(v, str):
            out[i] = v.encode("utf-8")
        elif isinstance(v, bytes):
            out[i] = v
        else:
            raise InvalidInput(f"{what}: mixes strings with {type(v).__name__} values")
    return out.reshape(arr.shape)


_FLOAT_LIMITS = {np.dtype(np.float16): 65504.0, np.dtype(np.float32): 3.4028234663852886e38}


def coerce(spec: TensorSpec, arr: np.ndarray, what: str | None = None) -> np.ndarray:
    """``arr`` cast safely to ``spec.dtype`` and checked against ``spec.shape``."""
    what = what or f"input '{spec.alias}'"
    target = spec.dtype.base_dtype
    kind = arr.dtype.kind
    if target is dtypes.string:
        if kind != "O":
            raise InvalidInput(
                f"{what} expects strings (dtype string), got {arr.dtype.name} values"
            )
        out = arr
    elif target is dtypes.bool:
        if kind != "b":
            raise InvalidInput(f"{what} expects bools (dtype bool), got {arr.dtype.name} values")
        out = arr
    elif kind == "O":
        raise InvalidInput(f"{what} expects {target.name} numbers, got strings")
    elif kind == "b":
        raise InvalidInput(f"{what} expects {target.name} numbers, got bools")
    elif target.is_integer:
        info = np.iinfo(target.np)
        if kind == "f":
            if arr.size and not np.all(np.isfinite(arr) & (np.floor(arr) == arr)):
                raise InvalidInput(
                    f"{what} expects integers ({target.name}), got non-integral numbers"
                )
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise InvalidInput(
                f"{what}: values out of range for {target.name} [{info.min}, {info.max}]"
            )
        out = arr.astype(target.np, copy=False)
    elif kind == "f" and arr.dtype.itemsize > target.np.itemsize:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below
            out = arr.astype(target.np)
        if arr.size and not np.isfinite(out).all():
            # Narrowing overflowed somewhere, or the input held inf/nan already.
            limit = _FLOAT_LIMITS[target.np]
            finite = arr[np.isfinite(arr)]
            if finite.size and float(np.abs(finite).max()) > limit:
                raise InvalidInput(f"{what}: values out of range for {target.name}")
    else:
        out = arr.astype(target.np, copy=False)
    dims = spec.dims
    if dims is not None:
        if out.ndim != len(dims):
            raise InvalidInput(
                f"{what} has shape {list(out.shape)} (rank {out.ndim}); the "
                f"model expects shape {shape_str(dims)} (rank {len(dims)})"
            )
        for i, (d, s) in enumerate(zip(dims, out.shape)):
            if d is not None and d != s:
                raise InvalidInput(
                    f"{what} has shape {list(out.shape)}; the model expects "
                    f"{shape_str(dims)} (dimension {i} must be {d})"
                )
    return out
