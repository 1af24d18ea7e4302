"""ONNX's protobuf schema, read and written by a small pure-Python wire codec.

We parse ``model.onnx`` ourselves rather than depend on the ``onnx`` package: the server then
serves ONNX models with no extra dependency (``onnx`` pulls in ``protobuf`` and a 15 MB wheel),
nothing is registered in protobuf's global descriptor pool (so no clash with an ``onnx`` the
user has installed), and every length, count and nesting depth is checked here as the bytes are
read. Only the messages and fields the importer uses are declared; unknown fields are skipped
as protobuf requires.

Messages decode to plain dicts ``{field_name: value}``; repeated fields are lists, absent
fields are missing (use ``.get``). Field numbers follow ``onnx/onnx.proto3``.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["ProtoError", "decode", "encode", "MAX_DEPTH"]


class ProtoError(ValueError):
    """The bytes are not a valid message of the expected type."""


# Field kinds. "varint" fields are int64 (two's complement), "packed_*" are repeated scalars
# accepted both packed and unpacked, "msg:<Name>" are nested messages.
_SCHEMA: dict[str, dict[int, tuple[str, str, bool]]] = {
    # number: (name, kind, repeated)
    "ModelProto": {
        1: ("ir_version", "varint", False),
        2: ("producer_name", "string", False),
        3: ("producer_version", "string", False),
        4: ("domain", "string", False),
        5: ("model_version", "varint", False),
        6: ("doc_string", "string", False),
        7: ("graph", "msg:GraphProto", False),
        8: ("opset_import", "msg:OperatorSetIdProto", True),
        14: ("metadata_props", "msg:StringStringEntryProto", True),
        25: ("functions", "msg:FunctionProto", True),
    },
    "OperatorSetIdProto": {1: ("domain", "string", False), 2: ("version", "varint", False)},
    "StringStringEntryProto": {1: ("key", "string", False), 2: ("value", "string", False)},
    "FunctionProto": {
        1: ("name", "string", False),
        4: ("input", "string", True),
        5: ("output", "string", True),
        6: ("attribute", "string", True),
        11: ("attribute_proto", "msg:AttributeProto", True),
        7: ("node", "msg:NodeProto", True),
        8: ("doc_string", "string", False),
        9: ("opset_import", "msg:OperatorSetIdProto", True),
        10: ("domain", "string", False),
        13: ("overload", "string", False),
    },
    "GraphProto": {
        1: ("node", "msg:NodeProto", True),
        2: ("name", "string", False),
        5: ("initializer", "msg:TensorProto", True),
        15: ("sparse_initializer", "bytes", True),
        10: ("doc_string", "string", False),
        11: ("input", "msg:ValueInfoProto", True),
        12: ("output", "msg:ValueInfoProto", True),
        13: ("value_info", "msg:ValueInfoProto", True),
    },
    "NodeProto": {
        1: ("input", "string", True),
        2: ("output", "string", True),
        3: ("name", "string", False),
        4: ("op_type", "string", False),
        7: ("domain", "string", False),
        5: ("attribute", "msg:AttributeProto", True),
        6: ("doc_string", "string", False),
        8: ("overload", "string", False),
    },
    "AttributeProto": {
        1: ("name", "string", False),
        21: ("ref_attr_name", "string", False),
        13: ("doc_string", "string", False),
        20: ("type", "varint", False),
        2: ("f", "float", False),
        3: ("i", "varint", False),
        4: ("s", "bytes", False),
        5: ("t", "msg:TensorProto", False),
        6: ("g", "msg:GraphProto", False),
        22: ("sparse_tensor", "bytes", False),
        7: ("floats", "packed_float", True),
        8: ("ints", "packed_varint", True),
        9: ("strings", "bytes", True),
        10: ("tensors", "msg:TensorProto", True),
        11: ("graphs", "msg:GraphProto", True),
    },
    "ValueInfoProto": {
        1: ("name", "string", False),
        2: ("type", "msg:TypeProto", False),
        3: ("doc_string", "string", False),
    },
    "TypeProto": {
        1: ("tensor_type", "msg:TypeProto.Tensor", False),
        4: ("sequence_type", "bytes", False),
        5: ("map_type", "bytes", False),
        9: ("optional_type", "bytes", False),
        8: ("sparse_tensor_type", "bytes", False),
        6: ("denotation", "string", False),
    },
    "TypeProto.Tensor": {
        1: ("elem_type", "varint", False),
        2: ("shape", "msg:TensorShapeProto", False),
    },
    "TensorShapeProto": {1: ("dim", "msg:TensorShapeProto.Dimension", True)},
    "TensorShapeProto.Dimension": {
        1: ("dim_value", "varint", False),
        2: ("dim_param", "string", False),
        3: ("denotation", "string", False),
    },
    "TensorProto": {
        1: ("dims", "packed_varint", True),
        2: ("data_type", "varint", False),
        4: ("float_data", "packed_float", True),
        5: ("int32_data", "packed_varint", True),
        6: ("string_data", "bytes", True),
        7: ("int64_data", "packed_varint", True),
        8: ("name", "string", False),
        12: ("doc_string", "string", False),
        9: ("raw_data", "bytes", False),
        13: ("external_data", "msg:StringStringEntryProto", True),
        14: ("data_location", "varint", False),
        10: ("double_data", "packed_double", True),
        11: ("uint64_data", "packed_uvarint", True),
        3: ("segment", "bytes", False),
    },
}

# AttributeProto.AttributeType
ATTR_FLOAT, ATTR_INT, ATTR_STRING, ATTR_TENSOR, ATTR_GRAPH = 1, 2, 3, 4, 5
ATTR_FLOATS, ATTR_INTS, ATTR_STRINGS, ATTR_TENSORS, ATTR_GRAPHS = 6, 7, 8, 9, 10

MAX_DEPTH = 32  # nested messages (subgraphs in attributes nest graphs in graphs)


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise ProtoError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtoError("varint longer than 10 bytes")


def _signed(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >= 1 << 63 else v


def _packed_varints(buf, start: int, end: int, signed: bool) -> list[int]:
    out = []
    pos = start
    while pos < end:
        v, pos = _varint(buf, pos, end)
        out.append(_signed(v) if signed else v)
    return out


def decode(data, message: str = "ModelProto", _depth: int = 0) -> dict:
    """Decodes ``data`` (bytes or memoryview) as ``message``; ProtoError when malformed."""
    if _depth > MAX_DEPTH:
        raise ProtoError(f"messages nested deeper than {MAX_DEPTH}")
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    schema = _SCHEMA[message]
    out: dict = {}
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtoError(f"field number 0 in {message}")
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            raw = None
        elif wire == 1:
            if pos + 8 > end:
                raise ProtoError(f"truncated 64-bit field {number} in {message}")
            raw, pos = buf[pos : pos + 8], pos + 8
        elif wire == 5:
            if pos + 4 > end:
                raise ProtoError(f"truncated 32-bit field {number} in {message}")
            raw, pos = buf[pos : pos + 4], pos + 4
        elif wire == 2:
            n, pos = _varint(buf, pos, end)
            if n > end - pos:
                raise ProtoError(
                    f"field {number} of {message} claims {n} bytes but {end - pos} remain"
                )
            raw, pos = buf[pos : pos + n], pos + n
        else:
            raise ProtoError(f"unsupported wire type {wire} (field {number} of {message})")
        spec = schema.get(number)
        if spec is None:
            continue
        name, kind, repeated = spec
        value = _convert(kind, wire, value if raw is None else raw, message, name, _depth)
        if repeated:
            lst = out.setdefault(name, [])
            if isinstance(value, (list, np.ndarray)):
                lst.extend(value.tolist() if isinstance(value, np.ndarray) else value)
            else:
                lst.append(value)
        else:
            out[name] = value
    return out


def _convert(kind: str, wire: int, raw, message: str, name: str, depth: int):
    where = f"{message}.{name}"
    if kind == "varint":
        _expect(wire, 0, where)
        return _signed(raw)
    if kind == "string":
        _expect(wire, 2, where)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtoError(f"{where} is not valid UTF-8") from None
    if kind == "bytes":
        _expect(wire, 2, where)
        return raw
    if kind == "float":
        _expect(wire, 5, where)
        return struct.unpack("<f", raw)[0]
    if kind.startswith("msg:"):
        _expect(wire, 2, where)
        return decode(raw, kind[4:], depth + 1)
    if kind == "packed_varint" or kind == "packed_uvarint":
        signed = kind == "packed_varint"
        if wire == 0:
            return _signed(raw) if signed else raw
        _expect(wire, 2, where)
        return _packed_varints(raw, 0, len(raw), signed)
    if kind in ("packed_float", "packed_double"):
        size, code = (4, "<f4") if kind == "packed_float" else (8, "<f8")
        if wire == (5 if size == 4 else 1):
            return [float(np.frombuffer(raw, code)[0])]
        _expect(wire, 2, where)
        if len(raw) % size:
            raise ProtoError(f"{where}: packed length {len(raw)} is not a multiple of {size}")
        return np.frombuffer(raw, code)
    raise AssertionError(kind)


def _expect(wire: int, want: int, where: str) -> None:
    if wire != want:
        raise ProtoError(f"{where} has wire type {wire}, expected {want}")


# -----------------------------------------------------------------------------------------
# Encoding (export)
# -----------------------------------------------------------------------------------------


def _enc_varint(v: int) -> bytes:
    v &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode(msg: dict, message: str = "ModelProto") -> bytes:
    """Encodes a dict shaped like ``decode``'s output as ``message``."""
    by_name = {spec[0]: (num, spec[1], spec[2]) for num, spec in _SCHEMA[message].items()}
    out = bytearray()
    for name, value in msg.items():
        if value is None:
            continue
        num, kind, repeated = by_name[name]
        values = value if repeated else [value]
        if kind.startswith("packed_"):
            if not repeated or len(values) == 0:
                continue
            if kind in ("packed_float", "packed_double"):
                payload = np.asarray(values, "<f4" if kind == "packed_float" else "<f8").tobytes()
            else:
                payload = b"".join(_enc_varint(int(v)) for v in values)
            out += _enc_varint(num << 3 | 2) + _enc_varint(len(payload)) + payload
            continue
        for v in values:
            if kind == "varint":
                out += _enc_varint(num << 3) + _enc_varint(int(v))
            elif kind == "float":
                out += _enc_varint(num << 3 | 5) + struct.pack("<f", v)
            else:
                if kind == "string":
                    payload = v.encode("utf-8")
                elif kind == "bytes":
                    payload = bytes(v)
                else:
                    payload = encode(v, kind[4:])
                out += _enc_varint(num << 3 | 2) + _enc_varint(len(payload)) + payload
    return bytes(out)
