"""String ops serving graphs use on request data: ``StringToNumber``, ``AsString``,
``DecodeBase64``, ``Substr``. Strings are object arrays of bytes on the host (CPU kernels)."""

from __future__ import annotations

import base64
import binascii

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import broadcast_shape, create

__all__ = ["string_to_number", "as_string", "decode_base64", "substr"]

_CPU = OpFlags(device_types=("CPU",))
_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def _check_string(o, i, what):
    if o._inputs[i]._dtype.base_dtype is not dtypes.string:
        raise TypeError(f"{what} takes a string tensor, got {o._inputs[i]._dtype.name}")


def _strings(a) -> list:
    return [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in np.asarray(a).ravel()]


def _object_array(items, shape) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def _to_number_infer(o):
    _check_string(o, 0, "StringToNumber")
    if o._attrs["out_type"] not in _NUMBER_TYPES:
        raise TypeError(f"StringToNumber cannot produce {o._attrs['out_type'].name}")
    return [(o._attrs["out_type"], o._inputs[0]._shape)]


@op(
    "StringToNumber",
    infer=_to_number_infer,
    differentiable=False,
    inputs=("string_tensor",),
    attrs=(Attr("out_type", "type", default=dtypes.float32),),
    flags=_CPU,
)
def _string_to_number(xp, s, *, out_type=dtypes.float32):
    a = np.asarray(s)
    out = np.empty(a.size, dtype=out_type.np)
    for i, v in enumerate(_strings(a)):
        text = v.decode("utf-8", "replace").strip()
        try:
            out[i] = float(text) if out_type.is_floating else int(text, 10)
        except (ValueError, OverflowError):
            raise errors.InvalidArgumentError(
                None, None, f"StringToNumberOp could not correctly convert string: {text}"
            ) from None
    return out.reshape(a.shape)


def _as_string_infer(o):
    d = o._inputs[0]._dtype.base_dtype
    if not (d.is_numeric or d.is_bool or d is dtypes.string):
        raise TypeError(f"AsString does not take {d.name}")
    return [(dtypes.string, o._inputs[0]._shape)]


@op(
    "AsString",
    infer=_as_string_infer,
    differentiable=False,
    inputs=("input",),
    attrs=(
        Attr("precision", "int", default=-1),
        Attr("scientific", "bool", default=False),
        Attr("shortest", "bool", default=False),
        Attr("width", "int", default=-1),
        Attr("fill", "string", default=""),
    ),
    flags=_CPU,
)
def _as_string(xp, x, *, precision=-1, scientific=False, shortest=False, width=-1, fill=""):
    a = np.asarray(x)
    if len(fill) > 1:
        raise errors.InvalidArgumentError(
            None, None, f"Fill string must be one or fewer characters: {fill!r}"
        )
    spec = "%" + (fill if fill in ("0", "-", "+", " ") else "") + (str(width) if width > -1 else "")
    if a.dtype.kind == "f":
        spec += (f".{precision}" if precision > -1 else "") + (
            "e" if scientific else "g" if shortest else "f"
        )
    elif a.dtype.kind == "b":
        return _object_array([b"true" if v else b"false" for v in a.ravel()], a.shape)
    elif a.dtype == object:
        return a.copy()
    else:
        spec += "d"
    return _object_array([(spec % v).encode() for v in a.ravel().tolist()], a.shape)


def _decode_infer(o):
    _check_string(o, 0, "DecodeBase64")
    return [(dtypes.string, o._inputs[0]._shape)]


@op("DecodeBase64", infer=_decode_infer, differentiable=False, inputs=("input",), flags=_CPU)
def _decode_base64(xp, s):
    a = np.asarray(s)
    out = []
    for v in _strings(a):
        try:
            out.append(base64.urlsafe_b64decode(v + b"=" * (-len(v) % 4)))
        except (binascii.Error, ValueError):
            raise errors.InvalidArgumentError(
                None, None, f"Invalid character found in base64: {v[:32]!r}"
            ) from None
    return _object_array(out, a.shape)


def _substr_infer(o):
    _check_string(o, 0, "Substr")
    for i in (1, 2):
        if not o._inputs[i]._dtype.base_dtype.is_integer:
            raise TypeError("Substr pos and len must be integers")
    if o._attrs["unit"] not in ("BYTE", "UTF8_CHAR"):
        raise ShapeError(f"Substr unit must be BYTE or UTF8_CHAR, got {o._attrs['unit']!r}")
    shape = broadcast_shape(o._inputs[0]._shape, o._inputs[1]._shape)
    return [(dtypes.string, broadcast_shape(shape, o._inputs[2]._shape))]


@op(
    "Substr",
    infer=_substr_infer,
    differentiable=False,
    inputs=("input", "pos", "len"),
    attrs=(Attr("unit", "string", default="BYTE"),),
    flags=_CPU,
)
def _substr(xp, s, pos, length, *, unit="BYTE"):
    a, p, n = np.broadcast_arrays(np.asarray(s), np.asarray(pos), np.asarray(length))
    out = []
    for v, i, k in zip(_strings(a), p.ravel().tolist(), n.ravel().tolist()):
        text = v.decode("utf-8") if unit == "UTF8_CHAR" else v
        size = len(text)
        start = i + size if i < 0 else i
        if not 0 <= start <= size:
            raise errors.InvalidArgumentError(
                None, None, f"pos {i} out of range for string of length {size}"
            )
        piece = text[start : start + max(k, 0)]
        out.append(piece.encode("utf-8") if unit == "UTF8_CHAR" else piece)
    return _object_array(out, a.shape)


def string_to_number(string_tensor, out_type=dtypes.float32, name=None) -> Tensor:
    """Parses each string as a number of ``out_type``."""
    with name_scope(name, "StringToNumber", [string_tensor]) as scope:
        s = convert_to_tensor(string_tensor, dtype=dtypes.string)
        attrs = {"out_type": dtypes.as_dtype(out_type)}
        return create("StringToNumber", [s], attrs, scope).outputs[0]


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """Formats each element as a string (printf-style, as TF's AsString)."""
    with name_scope(name, "AsString", [input]) as scope:
        attrs = {
            "precision": precision,
            "scientific": scientific,
            "shortest": shortest,
            "width": width,
            "fill": fill,
        }
        return create("AsString", [convert_to_tensor(input)], attrs, scope).outputs[0]


def decode_base64(input, name=None) -> Tensor:  # noqa: A002
    """Decodes web-safe base64 (``-`` and ``_``; padding optional)."""
    with name_scope(name, "DecodeBase64", [input]) as scope:
        s = convert_to_tensor(input, dtype=dtypes.string)
        return create("DecodeBase64", [s], {}, scope).outputs[0]


def substr(input, pos, len, unit="BYTE", name=None) -> Tensor:  # noqa: A002
    """``len`` bytes (or UTF-8 characters) of each string from ``pos`` (negative: from the
    end)."""
    with name_scope(name, "Substr", [input, pos, len]) as scope:
        s = convert_to_tensor(input, dtype=dtypes.string)
        p = convert_to_tensor(pos)
        n = convert_to_tensor(len, dtype=p.dtype.base_dtype)
        return create("Substr", [s, p, n], {"unit": unit}, scope).outputs[0]
