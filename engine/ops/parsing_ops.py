"""``ParseExample`` and ``ParseExampleV2``: serialized ``tf.Example`` protos to dense tensors.

TF Serving's classify and regress signatures take a batch of serialized ``tf.Example``s and
parse them in the graph; these ops make such graphs run. Dense features of ``float``,
``int64`` and ``string`` (``bytes_list``) with fixed shapes and optional defaults are
supported; sparse, ragged and variable-length dense features are refused when the op is
created (so a model using them fails at load, naming the feature kind), never parsed wrongly.

The protobuf wire format of ``Example`` (TensorFlow's ``example.proto`` and
``feature.proto``; ``engine/formats/tensorflow/proto`` has the message definitions) is decoded
here directly: the engine's op layer does not depend on a protobuf runtime, and every length
is checked against the bytes actually present. Protobuf's merge rules hold: repeated
``features`` messages merge, the last map entry of a key wins, a list field seen twice
concatenates, and both packed and unpacked numeric lists are read.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.registry import Attr, OpFlags, op
from engine.ops._common import create
from engine.tensor_shape import TensorShape

__all__ = ["FixedLenFeature", "VarLenFeature", "parse_example", "decode_example"]

_CPU = OpFlags(device_types=("CPU",))
_FEATURE_TYPES = (dtypes.float32, dtypes.int64, dtypes.string)
_KIND = {1: dtypes.string, 2: dtypes.float32, 3: dtypes.int64}  # Feature's oneof field numbers
_KIND_NAME = {dtypes.string: "bytes", dtypes.float32: "float", dtypes.int64: "int64"}


# -- the wire format ------------------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes):
    """Yields ``(field number, wire type, value)``: an int for varints, bytes otherwise."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(buf):
                raise ValueError("truncated fixed-width field")
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError("length-delimited field runs past the end")
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if number == 0:
            raise ValueError("field number 0")
        yield number, wire, value


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _list_values(kind: dtypes.DType, buf: bytes, out: list) -> None:
    """Appends the values of a BytesList/FloatList/Int64List message to ``out``."""
    for number, wire, value in _fields(buf):
        if number != 1:
            continue
        if kind is dtypes.string:
            if wire != 2:
                raise ValueError("bytes_list value is not length-delimited")
            out.append(bytes(value))
        elif kind is dtypes.float32:
            if wire == 5:
                out.append(struct.unpack("<f", value)[0])
            elif wire == 2 and len(value) % 4 == 0:
                out.extend(np.frombuffer(value, "<f4").tolist())
            else:
                raise ValueError("malformed float_list")
        elif wire == 0:
            out.append(_signed64(value))
        elif wire == 2:
            pos = 0
            while pos < len(value):
                v, pos = _varint(value, pos)
                out.append(_signed64(v))
        else:
            raise ValueError("malformed int64_list")


def _feature(buf: bytes) -> tuple[dtypes.DType, list] | None:
    """A Feature message: ``(kind, values)``, or None when no kind is set."""
    kind, values = None, []
    for number, wire, value in _fields(buf):
        if number not in _KIND:
            continue
        if wire != 2:
            raise ValueError("feature list is not length-delimited")
        if _KIND[number] is not kind:  # oneof: a different member replaces the previous one
            kind, values = _KIND[number], []
        _list_values(kind, value, values)
    return None if kind is None else (kind, values)


def decode_example(serialized: bytes) -> dict[bytes, tuple[dtypes.DType, list]]:
    """The features of one serialized ``tf.Example``: ``{key: (dtype, values)}``.

    Raises ``ValueError`` for bytes that are not a well-formed Example."""
    features: dict[bytes, bytes | None] = {}
    for number, wire, value in _fields(serialized):
        if number != 1:
            continue
        if wire != 2:
            raise ValueError("Example.features is not length-delimited")
        for fnum, fwire, entry in _fields(value):
            if fnum != 1:
                continue
            if fwire != 2:
                raise ValueError("Features.feature entry is not length-delimited")
            key, feature = b"", None
            for enum, ewire, evalue in _fields(entry):
                if ewire != 2:
                    raise ValueError("map entry field is not length-delimited")
                if enum == 1:
                    key = bytes(evalue)
                elif enum == 2:
                    feature = bytes(evalue) if feature is None else feature + bytes(evalue)
            features[key] = feature  # the last entry of a key wins
    out = {}
    for key, feature in features.items():
        parsed = _feature(feature) if feature is not None else None
        if parsed is not None:
            out[key] = parsed
    return out


# -- the ops --------------------------------------------------------------------------------


def _check_dense(o, tdense, dense_shapes, n_dense: int, defaults) -> None:
    if len(tdense) != n_dense or len(dense_shapes) != n_dense or len(defaults) != n_dense:
        raise ValueError(
            f"{o.type} has {n_dense} dense keys but {len(tdense)} Tdense, "
            f"{len(dense_shapes)} dense_shapes and {len(defaults)} dense_defaults"
        )
    for i, (t, shape, default) in enumerate(zip(tdense, dense_shapes, defaults)):
        if t not in _FEATURE_TYPES:
            raise TypeError(
                f"{o.type} dense feature {i} has type {t.name}: expected float, int64 or string"
            )
        if default._dtype.base_dtype is not t:
            raise TypeError(
                f"{o.type} dense_defaults[{i}] is {default._dtype.name}, expected {t.name}"
            )
        shape = TensorShape(shape)
        if not shape.is_fully_defined():
            raise errors.UnimplementedError(
                None,
                o,
                f"{o.type}: dense feature {i} has shape {shape} with unknown dimensions "
                "(variable-length dense features, FixedLenSequenceFeature) is not supported",
            )


def _refuse_sparse(o, count: int, kind: str) -> None:
    if count:
        raise errors.UnimplementedError(
            None,
            o,
            f"{o.type}: {count} {kind} feature(s) requested; flowserve parses dense "
            "(FixedLenFeature) features only",
        )


def _parse_example_infer(o):
    n_sparse, n_dense = o._attrs["Nsparse"], o._attrs["Ndense"]
    _refuse_sparse(o, n_sparse + len(o._attrs["sparse_types"]), "sparse")
    defaults = o._inputs[2 + n_sparse + n_dense :]
    _check_dense(o, o._attrs["Tdense"], o._attrs["dense_shapes"], n_dense, defaults)
    batch = TensorShape(o._inputs[0]._shape).with_rank_at_most(1)
    batch = batch if batch.rank is not None else TensorShape([None])
    return [
        (t, batch.concatenate(TensorShape(s)))
        for t, s in zip(o._attrs["Tdense"], o._attrs["dense_shapes"])
    ]


def _parse_example_v2_infer(o):
    _refuse_sparse(o, o._attrs["num_sparse"] + len(o._attrs["sparse_types"]), "sparse")
    _refuse_sparse(o, len(o._attrs["ragged_value_types"]), "ragged")
    n_dense = len(o._attrs["Tdense"])
    _check_dense(o, o._attrs["Tdense"], o._attrs["dense_shapes"], n_dense, o._inputs[5:])
    outer = TensorShape(o._inputs[0]._shape)
    return [
        (t, outer.concatenate(TensorShape(s)))
        for t, s in zip(o._attrs["Tdense"], o._attrs["dense_shapes"])
    ]


def _text(v) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("utf-8")


def _parse_dense(serialized, keys, defaults, tdense, dense_shapes) -> tuple:
    """The dense outputs: ``serialized.shape + dense_shape`` per key."""
    flat = np.asarray(serialized, dtype=object).reshape(-1)
    keys = [_text(k) for k in keys]
    if len(set(keys)) != len(keys):
        raise errors.InvalidArgumentError(None, None, f"Duplicate dense keys: {keys}")
    shapes = [tuple(TensorShape(s).as_list()) for s in dense_shapes]
    outs = [
        np.empty((flat.size, *shape), dtype=object if t is dtypes.string else t.np)
        for t, shape in zip(tdense, shapes)
    ]
    for row, blob in enumerate(flat):
        try:
            features = decode_example(_text(blob))
        except ValueError as e:
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse example input, value: {_text(blob)[:64]!r} ({e})"
            ) from None
        for i, key in enumerate(keys):
            outs[i][row] = _dense_value(
                features.get(key), key, row, tdense[i], shapes[i], defaults[i]
            )
    return tuple(o.reshape(np.shape(serialized) + o.shape[1:]) for o in outs)


def _dense_value(found, key: bytes, row: int, dtype, shape: tuple, default):
    name = key.decode("utf-8", "replace")
    size = int(np.prod(shape, dtype=np.int64))
    if found is None:
        default = np.asarray(default)
        if default.size == 0:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Name: <unknown>, Feature: {name} (data type: {_KIND_NAME[dtype]}) is "
                "required but could not be found.",
            )
        return np.broadcast_to(default, shape)
    kind, values = found
    if kind is not dtype:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Name: <unknown>, Key: {name}, Index: {row}.  Data types don't match. Data type: "
            f"{_KIND_NAME[kind]} but expected type: {_KIND_NAME[dtype]}",
        )
    if len(values) != size:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Name: <unknown>, Key: {name}, Index: {row}.  Number of {_KIND_NAME[dtype]} "
            f"values != expected.  Values size: {len(values)} but output shape: {list(shape)}",
        )
    if dtype is dtypes.string:
        out = np.empty(size, dtype=object)
        out[:] = values
        return out.reshape(shape)
    return np.asarray(values, dtype=dtype.np).reshape(shape)


_DENSE_ATTRS = (
    Attr("Tdense", "list(type)"),
    Attr("dense_shapes", "list(shape)"),
    Attr("sparse_types", "list(type)"),
)


@op(
    "ParseExample",
    infer=_parse_example_infer,
    differentiable=False,
    inputs=("serialized", "names", "keys_and_defaults*"),
    attrs=(Attr("Nsparse", "int"), Attr("Ndense", "int"), *_DENSE_ATTRS),
    flags=_CPU,
)
def _parse_example(
    xp, serialized, names, *rest, Nsparse, Ndense, Tdense, dense_shapes, sparse_types
):
    if np.ndim(serialized) != 1:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Expected serialized to be a vector, got shape: {list(np.shape(serialized))}",
        )
    keys = [np.asarray(k).item() for k in rest[Nsparse : Nsparse + Ndense]]
    return _parse_dense(serialized, keys, rest[Nsparse + Ndense :], Tdense, dense_shapes)


@op(
    "ParseExampleV2",
    infer=_parse_example_v2_infer,
    differentiable=False,
    inputs=("serialized", "names", "sparse_keys", "dense_keys", "ragged_keys", "dense_defaults*"),
    attrs=(
        Attr("num_sparse", "int"),
        Attr("ragged_value_types", "list(type)"),
        Attr("ragged_split_types", "list(type)"),
        *_DENSE_ATTRS,
    ),
    flags=_CPU,
)
def _parse_example_v2(
    xp,
    serialized,
    names,
    sparse_keys,
    dense_keys,
    ragged_keys,
    *dense_defaults,
    num_sparse,
    ragged_value_types,
    ragged_split_types,
    Tdense,
    dense_shapes,
    sparse_types,
):
    keys = list(np.asarray(dense_keys, dtype=object).reshape(-1))
    if len(keys) != len(Tdense):
        raise errors.InvalidArgumentError(
            None, None, f"Expected len(dense_keys) == len(Tdense): {len(keys)} vs {len(Tdense)}"
        )
    return _parse_dense(serialized, keys, dense_defaults, Tdense, dense_shapes)


# -- the Python API -------------------------------------------------------------------------


class FixedLenFeature(NamedTuple):
    """A dense feature of a fixed ``shape`` (TF's ``tf.io.FixedLenFeature``); without a
    ``default_value`` every example must have it."""

    shape: list
    dtype: dtypes.DType
    default_value: object = None


class VarLenFeature(NamedTuple):
    """A sparse feature (TF's ``tf.io.VarLenFeature``): declared for compatibility;
    ``parse_example`` refuses it (sparse tensors are not supported)."""

    dtype: dtypes.DType


def parse_example(serialized, features: dict, name=None, example_names=None) -> dict:  # noqa: ARG001 - TF API compatibility
    """Parses a batch of serialized ``tf.Example``s into ``{key: dense tensor}`` of shape
    ``serialized.shape + feature.shape`` (a ``ParseExampleV2`` op, as TF 2.x builds it)::

        parsed = tf.parse_example(s, {"x": tf.FixedLenFeature([2], tf.float32)})
    """
    if not isinstance(features, dict) or not features:
        raise ValueError("parse_example needs a non-empty dict of features")
    keys = sorted(features)
    for key in keys:
        if not isinstance(features[key], FixedLenFeature):
            raise errors.UnimplementedError(
                None,
                None,
                f"parse_example: feature '{key}' is a {type(features[key]).__name__}; only "
                "FixedLenFeature (dense) features are supported",
            )
    with name_scope(name, "ParseExample", [serialized]) as scope:
        s = convert_to_tensor(serialized, dtype=dtypes.string)
        none = constant(np.empty(0, dtype=object), dtype=dtypes.string)
        defaults, tdense, shapes = [], [], []
        for key in keys:
            f = features[key]
            dtype, shape = dtypes.as_dtype(f.dtype), TensorShape(f.shape)
            if f.default_value is None:
                empty = np.empty(0, dtype=object if dtype is dtypes.string else dtype.np)
                defaults.append(constant(empty, dtype=dtype))
            else:
                defaults.append(constant(f.default_value, dtype=dtype, shape=shape.as_list()))
            tdense.append(dtype)
            shapes.append(shape)
        dense_keys = constant(
            np.array([k.encode() for k in keys], dtype=object), dtype=dtypes.string
        )
        attrs = {
            "Tdense": tdense,
            "dense_shapes": shapes,
            "num_sparse": 0,
            "sparse_types": [],
            "ragged_value_types": [],
            "ragged_split_types": [],
        }
        o = create("ParseExampleV2", [s, none, none, dense_keys, none, *defaults], attrs, scope)
        return dict(zip(keys, o.outputs))
