"""Decoding ops for input pipelines: ``DecodeRaw`` (bytes to numbers), ``DecodeCSV``,
``EncodeBase64``, and ``SerializeTensor``/``ParseTensor`` (a tensor as TensorFlow's
``TensorProto`` bytes). Strings are object arrays of bytes on the host (CPU kernels); none of
these ops is differentiable. Errors are ``InvalidArgumentError``s worded as TensorFlow's.
"""

from __future__ import annotations

import base64
import re

import numpy as np
from google.protobuf import message as pb_message

from engine import dtypes, errors
from engine.formats.tensorflow.proto import tensor_pb2
from engine.formats.tensorflow.tensors import TFFormatError, array_from_proto, array_to_proto
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import create
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["decode_csv", "decode_raw", "encode_base64", "parse_tensor", "serialize_tensor"]

_CPU = OpFlags(device_types=("CPU",))
_RAW_TYPES = (
    dtypes.float16,
    dtypes.float32,
    dtypes.float64,
    dtypes.int8,
    dtypes.uint8,
    dtypes.int16,
    dtypes.uint16,
    dtypes.int32,
    dtypes.int64,
    dtypes.bool,
)
_CSV_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _bytes_list(a) -> list[bytes]:
    return [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in np.asarray(a).ravel()]


def _object_array(items, shape) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def _check_string(o, i: int) -> None:
    if o._inputs[i]._dtype.base_dtype is not dtypes.string:
        raise TypeError(f"{o.type} takes a string tensor, got {o._inputs[i]._dtype.name}")


# -- DecodeRaw ----------------------------------------------------------------------------


def _decode_raw_infer(o):
    _check_string(o, 0)
    out_type = o._attrs["out_type"]
    if out_type not in _RAW_TYPES:
        raise TypeError(f"DecodeRaw cannot produce {out_type.name}")
    return [(out_type, o._inputs[0]._shape.concatenate([None]))]


@op(
    "DecodeRaw",
    infer=_decode_raw_infer,
    differentiable=False,
    inputs=("bytes",),
    attrs=(Attr("out_type", "type"), Attr("little_endian", "bool", default=True)),
    flags=_CPU,
)
def _decode_raw(xp, data, *, out_type, little_endian=True):
    a = np.asarray(data)
    items = _bytes_list(a)
    dtype = np.dtype(out_type.np).newbyteorder("<" if little_endian else ">")
    if items and len(items[0]) % dtype.itemsize:
        raise _invalid(
            f"Input to DecodeRaw has length {len(items[0])} that is not a multiple of "
            f"{dtype.itemsize}, the size of {out_type.name}"
        )
    for i, v in enumerate(items):
        if len(v) != len(items[0]):
            raise _invalid(
                f"DecodeRaw requires input strings to all be the same size, but element {i} "
                f"has size {len(v)} != {len(items[0])}"
            )
    width = len(items[0]) // dtype.itemsize if items else 0
    flat = np.frombuffer(b"".join(items), dtype=dtype).astype(out_type.np)
    return flat.reshape((*a.shape, width))


# -- DecodeCSV ----------------------------------------------------------------------------


def _csv_fields(record: bytes, delim: bytes, use_quote: bool, index: int) -> list[bytes]:
    """The fields of one record, quotes resolved as TensorFlow's DecodeCSV does."""
    if not use_quote:
        return record.split(delim)
    fields, pos, n = [], 0, len(record)
    while True:
        if pos < n and record[pos : pos + 1] == b'"':
            field, pos = _quoted(record, pos + 1, delim, index)
        else:
            end = record.find(delim, pos)
            end = n if end < 0 else end
            field = record[pos:end]
            if b'"' in field:
                raise _invalid(
                    f"Unquoted fields cannot have quotes/CRLFs inside, record {index}: "
                    f"{record.decode('utf-8', 'replace')}"
                )
            pos = end
        fields.append(field)
        if pos >= n:
            return fields
        pos += 1  # the delimiter
        if pos == n:
            fields.append(b"")
            return fields


def _quoted(record: bytes, pos: int, delim: bytes, index: int) -> tuple[bytes, int]:
    out = bytearray()
    n = len(record)
    while pos < n:
        c = record[pos : pos + 1]
        if c != b'"':
            out += c
            pos += 1
            continue
        if record[pos + 1 : pos + 2] == b'"':
            out += b'"'
            pos += 2
            continue
        pos += 1
        if pos < n and record[pos : pos + 1] != delim:
            raise _invalid(
                f"Quote inside a string has to be escaped by another quote, record {index}"
            )
        return bytes(out), pos
    raise _invalid(f"Quoted field has to end with quote followed by delim or end, record {index}")


_INT_RE = re.compile(rb"^\s*[+-]?\d+\s*$")
_FLOAT_RE = re.compile(
    rb"^\s*[+-]?((\d+\.?\d*|\.\d+)(e[+-]?\d+)?|inf|infinity|nan)\s*$", re.IGNORECASE
)


def _csv_value(field: bytes, dtype, column: int, index: int):
    if dtype is dtypes.string:
        return field
    pattern = _FLOAT_RE if dtype.is_floating else _INT_RE
    bad = _invalid(
        f"Field {column} in record {index} is not a valid {dtype.name}: "
        f"{field.decode('utf-8', 'replace')}"
    )
    if not pattern.match(field):
        raise bad
    if dtype.is_floating:
        return float(field)
    value = int(field)
    info = np.iinfo(dtype.np)
    if not info.min <= value <= info.max:
        raise bad
    return value


def _decode_csv_infer(o):
    _check_string(o, 0)
    types = o._attrs["OUT_TYPE"]
    if len(types) != len(o._inputs) - 1:
        raise ShapeError("DecodeCSV needs one record default per output type")
    for i, (t, d) in enumerate(zip(types, o._inputs[1:])):
        if t not in _CSV_TYPES or d._dtype.base_dtype is not t:
            raise TypeError(f"DecodeCSV record_defaults[{i}] must be {t.name}, got {d.dtype.name}")
        if d._shape.rank is not None and d._shape.rank > 1:
            raise ShapeError(f"DecodeCSV record_defaults[{i}] must have rank 0 or 1")
    if len(o._attrs["field_delim"]) != 1:
        raise ValueError("field_delim should be only 1 char")
    return [(t, o._inputs[0]._shape) for t in types]


@op(
    "DecodeCSV",
    infer=_decode_csv_infer,
    differentiable=False,
    inputs=("records", "record_defaults*"),
    attrs=(
        Attr("OUT_TYPE", "list(type)"),
        Attr("field_delim", "string", default=","),
        Attr("use_quote_delim", "bool", default=True),
        Attr("na_value", "string", default=""),
        Attr("select_cols", "list(int)", default=()),
    ),
    flags=_CPU,
)
def _decode_csv(
    xp,
    records,
    *defaults,
    OUT_TYPE,  # noqa: N803 - TF's attr name
    field_delim=",",
    use_quote_delim=True,
    na_value="",
    select_cols=(),
):
    a = np.asarray(records)
    defaults = [np.asarray(d).reshape(-1) for d in defaults]
    for i, d in enumerate(defaults):
        if d.size > 1:
            raise _invalid(f"record_defaults[{i}] must have at most one element")
    cols = list(select_cols) or list(range(len(OUT_TYPE)))
    delim, na = field_delim.encode("utf-8"), na_value.encode("utf-8")
    columns: list[list] = [[] for _ in OUT_TYPE]
    for index, record in enumerate(_bytes_list(a)):
        fields = _csv_fields(record, delim, use_quote_delim, index)
        if select_cols and len(fields) <= cols[-1]:
            raise _invalid(f"Expect {cols[-1] + 1} fields but have {len(fields)} in record {index}")
        if not select_cols and len(fields) != len(OUT_TYPE):
            raise _invalid(
                f"Expect {len(OUT_TYPE)} fields but have {len(fields)} in record {index}"
            )
        for out, (column, dtype) in enumerate(zip(cols, OUT_TYPE)):
            field = fields[column]
            if field and field != na:
                columns[out].append(_csv_value(field, dtype, out, index))
            elif defaults[out].size:
                columns[out].append(defaults[out][0])
            else:
                raise _invalid(f"Field {out} is required but missing in record {index}!")
    return tuple(
        _object_array(c, a.shape) if t is dtypes.string else np.array(c, t.np).reshape(a.shape)
        for c, t in zip(columns, OUT_TYPE)
    )


# -- EncodeBase64, SerializeTensor, ParseTensor -------------------------------------------


def _same_string_shape(o):
    _check_string(o, 0)
    return [(dtypes.string, o._inputs[0]._shape)]


@op(
    "EncodeBase64",
    infer=_same_string_shape,
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("pad", "bool", default=False),),
    flags=_CPU,
)
def _encode_base64(xp, s, *, pad=False):
    a = np.asarray(s)
    out = [base64.urlsafe_b64encode(v) for v in _bytes_list(a)]
    return _object_array(out if pad else [v.rstrip(b"=") for v in out], a.shape)


@op(
    "SerializeTensor",
    infer=lambda o: [(dtypes.string, TensorShape([]))],
    differentiable=False,
    inputs=("tensor",),
    flags=_CPU,
)
def _serialize_tensor(xp, t):
    a = np.asarray(t.get() if hasattr(t, "get") else t)
    data = array_to_proto(a.astype(object) if a.dtype.kind in "SU" else a).SerializeToString()
    return _object_array([data], ())


def _parse_tensor_infer(o):
    _check_string(o, 0)
    if o._inputs[0]._shape.rank not in (None, 0):
        raise ShapeError(f"ParseTensor takes a scalar string, got shape {o._inputs[0]._shape}")
    return [(o._attrs["out_type"], unknown_shape())]


@op(
    "ParseTensor",
    infer=_parse_tensor_infer,
    differentiable=False,
    inputs=("serialized",),
    attrs=(Attr("out_type", "type"),),
    flags=_CPU,
)
def _parse_tensor(xp, s, *, out_type):
    data = _bytes_list(s)[0]
    proto = tensor_pb2.TensorProto()
    try:
        proto.ParseFromString(data)
        arr = array_from_proto(proto, "ParseTensor")
    except (pb_message.DecodeError, TFFormatError) as e:
        raise _invalid(f"Could not parse `serialized` as TensorProto: {e}") from None
    got = dtypes.string if arr.dtype == object else dtypes.as_dtype(arr.dtype)
    if got is not out_type:
        raise _invalid(
            f"Type mismatch between parsed tensor ({got.name}) and dtype ({out_type.name})"
        )
    return arr


# -- Python API ---------------------------------------------------------------------------


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """Reinterprets the bytes of each string as a vector of ``out_type`` numbers (all
    strings the same length); the result has the input's shape plus one dimension."""
    if input_bytes is None:
        input_bytes = bytes
    if input_bytes is None or out_type is None:
        raise ValueError("decode_raw needs input_bytes and out_type")
    with name_scope(name, "DecodeRaw", [input_bytes]) as scope:
        s = convert_to_tensor(input_bytes, dtype_hint=dtypes.string)
        attrs = {"out_type": dtypes.as_dtype(out_type), "little_endian": bool(little_endian)}
        return create("DecodeRaw", [s], attrs, scope).outputs[0]


def decode_csv(
    records,
    record_defaults,
    field_delim=",",
    use_quote_delim=True,
    name=None,
    na_value="",
    select_cols=None,
) -> list[Tensor]:
    """Parses CSV records into one tensor per column; ``record_defaults[i]`` (a one-element
    list/tensor, or an empty one for a required column) gives column i's dtype and the value
    of an empty or ``na_value`` field. ``select_cols`` (increasing) picks the columns."""
    if select_cols is not None:
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    with name_scope(name, "DecodeCSV", [records]) as scope:
        r = convert_to_tensor(records, dtype_hint=dtypes.string)
        defaults = [
            d if isinstance(d, Tensor) else convert_to_tensor(d, name=f"record_defaults_{i}")
            for i, d in enumerate(record_defaults)
        ]
        attrs = {
            "OUT_TYPE": [d.dtype.base_dtype for d in defaults],
            "field_delim": field_delim,
            "use_quote_delim": bool(use_quote_delim),
            "na_value": na_value,
            "select_cols": list(select_cols or []),
        }
        return list(create("DecodeCSV", [r, *defaults], attrs, scope).outputs)


def encode_base64(input, pad=False, name=None) -> Tensor:  # noqa: A002
    """Encodes each string as web-safe base64 (``-`` and ``_``), ``=``-padded with ``pad``."""
    with name_scope(name, "EncodeBase64", [input]) as scope:
        s = convert_to_tensor(input, dtype_hint=dtypes.string)
        return create("EncodeBase64", [s], {"pad": bool(pad)}, scope).outputs[0]


def serialize_tensor(tensor, name=None) -> Tensor:
    """``tensor`` as a serialized ``TensorProto`` (a scalar string)."""
    with name_scope(name, "SerializeTensor", [tensor]) as scope:
        return create("SerializeTensor", [convert_to_tensor(tensor)], {}, scope).outputs[0]


def parse_tensor(serialized, out_type, name=None) -> Tensor:
    """The tensor of a serialized ``TensorProto``; ``out_type`` must be its dtype."""
    with name_scope(name, "ParseTensor", [serialized]) as scope:
        s = convert_to_tensor(serialized, dtype_hint=dtypes.string)
        attrs = {"out_type": dtypes.as_dtype(out_type)}
        return create("ParseTensor", [s], attrs, scope).outputs[0]
