"""Request tensors: conversion from JSON values and validation against a signature input.

Casts are *safe*: integers may become any integer or float type they fit in, floats may
narrow to float32/float16 (JSON has only one number type) but become integers only when every
value is integral and in range, bools stay bools, strings stay strings. Anything else is an
``InvalidInput`` naming the input and the expectation.
"""

from __future__ import annotations

import numbers
import struct
from collections.abc import Sequence

import numpy as np

from engine import dtypes
from engine.tensor_shape import TensorShape
from service.errors import InvalidInput, TooLarge

__all__ = [
    "TensorSpec",
    "from_json_value",
    "float_array",
    "coerce",
    "shape_str",
    "check_shape",
    "MAX_ELEMENTS",
]

# The default cap on the elements of one request tensor (and on each of its dimensions), so
# that a declared shape is refused before anything is allocated for it.
MAX_ELEMENTS = 1 << 28
_EXACT_FLOAT = 2.0**53  # floats at or above this magnitude may have lost integer digits
_MAX_DEPTH = 32  # nested lists


class TensorSpec:
    """A signature input or output: public alias, graph tensor name, dtype and shape."""

    __slots__ = ("alias", "tensor_name", "dtype", "_shape", "_dims", "_exact", "trust_graph")

    def __init__(self, alias: str, tensor_name: str, dtype: dtypes.DType, shape: TensorShape):
        self.alias = alias
        self.tensor_name = tensor_name
        self.dtype = dtype
        self.shape = shape  # engine TensorShape
        # A TF SavedModel's input: a value of another shape is fed as it is, the graph
        # deciding, as TF Serving does (the dtype is still converted and checked)
        self.trust_graph = False

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @shape.setter
    def shape(self, shape: TensorShape) -> None:
        self._shape = shape
        self._dims = shape.as_tuple()  # read for every request: made once
        self._exact = _exact_check(self.dtype, self._dims)

    def shape_matches(self, arr: np.ndarray) -> bool:
        """Whether ``arr``'s shape is one the signature declares."""
        dims = self._dims
        if dims is None:
            return True
        shape = arr.shape
        return len(shape) == len(dims) and all(d is None or d == s for d, s in zip(dims, shape))

    def accepts(self, arr: np.ndarray) -> bool:
        """Whether ``arr`` is already what ``coerce`` makes of it (an array of this
        numeric dtype and shape), so that it is returned as it is: a few comparisons
        instead of ``coerce``'s checks. False only means "ask ``coerce``"."""
        exact = self._exact
        if exact is None or exact[0] is not self.dtype:
            if exact is not None:  # the dtype was replaced since the check was made
                self._exact = _exact_check(self.dtype, self._dims)
            return False
        if arr.dtype is not exact[1]:
            return False
        shape = arr.shape
        if len(shape) != exact[2]:
            return False
        for i, d in exact[3]:
            if shape[i] != d:
                return False
        return True

    @property
    def dims(self) -> tuple[int | None, ...] | None:
        return self._dims

    def __repr__(self) -> str:
        return f"TensorSpec({self.alias!r}, {self.dtype.name}, {shape_str(self.dims)})"


def _exact_check(dtype, dims) -> tuple | None:
    """(the dtype, its numpy dtype, the rank, [(dimension, size)] of the known sizes) of a
    numeric spec of known rank, for ``TensorSpec.accepts``; None otherwise."""
    if dims is None:
        return None
    target = dtype.base_dtype.np
    if target is None or target.kind not in "biuf":
        return None
    return dtype, target, len(dims), [(i, d) for i, d in enumerate(dims) if d is not None]


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
    if arr.dtype.kind == "O":
        _refuse_wide_integers(arr, what)
    if (
        arr.dtype.kind == "f"
        and arr.size
        and not -_EXACT_FLOAT < arr.min() <= arr.max() < _EXACT_FLOAT
    ):
        # A magnitude of 2**53 or more (or a NaN, which fails the comparison; the exact path
        # then keeps the floats, as a NaN is no integer): the values may be integers that
        # float64 rounded.
        arr = _exact_integers(value, arr)
    if arr.dtype.kind not in "biuf":
        raise InvalidInput(f"{what}: values must all be numbers, all bools or all strings")
    return arr


# Magnitudes below which a float64 from JSON converts to each float type with no further
# check: 2**53 (from_json_value re-reads larger ones as exact integers), or the type's range.
_FAST_FLOAT_LIMITS = {
    np.dtype(np.float64): 2.0**53,
    np.dtype(np.float32): 2.0**53,
    np.dtype(np.float16): 65504.0,
}


def float_array(value: list, dtype: dtypes.DType) -> np.ndarray | None:
    """``value``, a nested list of numbers from a JSON body, as an array of the float
    ``dtype`` in one numpy conversion: the array ``coerce(from_json_value(value))`` gives,
    without its per-call checks. None when anything needs them (strings, nulls, bools
    alone, ragged rows, deep nesting, empty, NaN, or magnitudes at 2**53 or the type's
    range): the caller then takes that path, for its exact result or error message.

    A bool among numbers becomes a number, as ``from_json_value`` makes it."""
    target = dtype.base_dtype.np
    limit = _FAST_FLOAT_LIMITS.get(target)
    if limit is None:
        return None
    if target.itemsize >= 4:
        arr = _doubles(value)
        if arr is not None and -limit < _min(arr, None) and _max(arr, None) < limit:
            return arr.astype(target)  # a copy: the packed bytes are read-only
    try:
        arr = np.array(value)
    except (ValueError, OverflowError):
        return None
    kind = arr.dtype.kind
    if not arr.size or arr.ndim > _MAX_DEPTH:
        return None
    if kind == "f":
        # NaN fails both comparisons: the full path decides about it.
        if not (-limit < _min(arr, None) and _max(arr, None) < limit):
            return None
    elif kind not in "iu" or limit < _EXACT_FLOAT:  # integers may overflow float16 only
        return None
    return arr.astype(dtype.base_dtype.np, copy=False)


_min, _max = np.minimum.reduce, np.maximum.reduce


def _doubles(value: list) -> np.ndarray | None:
    """A list of numbers, or of equal-length lists of numbers, as float64 packed by
    ``struct`` (a quarter of the work of numpy's discovery of each element's type); None
    for anything else (bools first, strings, nulls, deeper or ragged nesting, empty, over
    ``_PACKED_MAX`` elements).

    The values are those of ``np.array(value)`` (then cast): a float is copied, an integer
    rounds the same way (to nearest), and a bool among numbers becomes one; ``struct``
    refuses a string or null where numpy would read or keep it. A list whose first number
    is a bool may hold only bools, which ``np.array`` keeps as bools: it is left to it."""
    if not value:
        return None
    first = value[0]
    try:
        if type(first) is list:
            width = len(first)
            if not width or type(first[0]) is bool or len(value) * width > _PACKED_MAX:
                return None
            for row in value:
                if type(row) is not list or len(row) != width:
                    return None
            pack = _packer(width).pack
            packed = pack(*first) if len(value) == 1 else b"".join([pack(*r) for r in value])
            shape: tuple[int, ...] = (len(value), width)
        else:
            if type(first) is bool or len(value) > _PACKED_MAX:
                return None
            packed = _packer(len(value)).pack(*value)
            shape = (len(value),)
    except (struct.error, TypeError, OverflowError):  # a string, null, object or list
        return None
    return np.frombuffer(packed, np.float64).reshape(shape)


_PACKED_MAX = 1 << 16  # larger tensors: numpy's conversion (no argument tuple that size)
_PACKERS: dict[int, struct.Struct] = {}


def _packer(count: int) -> struct.Struct:
    packer = _PACKERS.get(count)
    if packer is None:
        packer = struct.Struct(f"={count}d")
        if len(_PACKERS) < 256:
            _PACKERS[count] = packer
    return packer


def _refuse_wide_integers(arr: np.ndarray, what: str) -> None:
    for v in arr.reshape(-1):
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
            text = str(v) if len(str(v)) <= 40 else str(v)[:20] + "..."
            raise InvalidInput(f"{what}: integer {text} does not fit in 64 bits")


def _exact_integers(value, approx: np.ndarray) -> np.ndarray:
    """``value`` as an exact int64/uint64 array when every leaf is an integer that one of
    them holds (numpy turns a mix of int64 and uint64 values into rounded float64), else the
    float array ``approx`` (the client sent floats, or no 64-bit type holds every value)."""
    flat = np.array(value, dtype=object).reshape(-1)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
        return approx
    lo, hi = min(flat), max(flat)
    for np_type in (np.int64, np.uint64):
        info = np.iinfo(np_type)
        if info.min <= lo and hi <= info.max:
            return np.array(flat.tolist(), dtype=np_type).reshape(approx.shape)
    return approx


def check_shape(shape: list[int], what: str, max_elements: int = MAX_ELEMENTS) -> int:
    """The element count of a request's declared ``shape`` (a list of ints checked by the
    caller); InvalidInput (TooLarge) if a dimension or the count is over ``max_elements``.
    Checked before anything is allocated, so ``[0, 2**63]`` is refused, not a crash."""
    count = 1
    for i, d in enumerate(shape):
        if d > max_elements:
            raise TooLarge(
                f"{what}: dimension {i} of shape {shape} is {d}; a dimension may be at most "
                f"{max_elements} (max_tensor_elements)"
            )
        count *= d
    if count > max_elements:
        raise TooLarge(
            f"{what}: shape {shape} holds {count} elements; a tensor may hold at most "
            f"{max_elements} (max_tensor_elements)"
        )
    return count


def _first_leaf(value, what):
    v = value
    depth = 0
    while isinstance(v, list):
        if not v:
            return 0.0
        v = v[0]
        depth += 1
        if depth > _MAX_DEPTH:
            raise InvalidInput(f"{what}: nested more than {_MAX_DEPTH} levels deep")
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


def _in_range(arr: np.ndarray, info: np.iinfo) -> bool:
    """Whether every value of ``arr`` lies in ``info``'s range, compared exactly: a float
    bound would round 2**63 - 1 up to 2**63 and let 2**63 through (then wrap)."""
    lo, hi = arr.min(), arr.max()
    if arr.dtype.kind == "f":
        # info.max + 1 is a power of two, exact as a float; NaN fails both comparisons.
        return bool(lo >= float(info.min)) and bool(hi < float(info.max + 1))
    return info.min <= int(lo) and int(hi) <= info.max


_FLOAT_LIMITS = {np.dtype(np.float16): 65504.0, np.dtype(np.float32): 3.4028234663852886e38}


def coerce(spec: TensorSpec, arr: np.ndarray, what: str | None = None) -> np.ndarray:
    """``arr`` cast safely to ``spec.dtype`` and checked against ``spec.shape``."""
    target = spec.dtype.base_dtype
    kind = arr.dtype.kind
    if kind in "biuf" and arr.dtype == target.np:
        return _check_dims(spec, arr, what)  # already converted (float_array): no cast
    what = what or f"input '{spec.alias}'"
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
        if kind == "f" and target.np == np.int64 and arr.size and (arr == -(2.0**63)).any():
            # orjson reads an integer below -2**63 as the float -2**63 (as it reads one above
            # 2**64 - 1 as a float, refused by the range check below): the exact int64
            # minimum written as an integer arrives as an integer, so this one is refused.
            raise InvalidInput(
                f"{what}: values out of range for {target.name} [{info.min}, {info.max}] "
                "(a value rounds to -2**63; write the int64 minimum as an integer)"
            )
        if arr.size and not _in_range(arr, info):
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
    return _check_dims(spec, out, what)


def _check_dims(spec: TensorSpec, out: np.ndarray, what: str | None) -> np.ndarray:
    dims = spec.dims
    if dims is not None and not spec.trust_graph:
        what = what or f"input '{spec.alias}'"
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
