"""``ParseExample`` and ``ParseExampleV2``: serialized ``tf.Example`` protos to dense and
sparse tensors.

TF Serving's classify and regress signatures, and every Estimator export, take a batch of
serialized ``tf.Example``s and parse them in the graph; these ops make such graphs run. Dense
features of ``float``, ``int64`` and ``string`` (``bytes_list``) with fixed shapes and optional
defaults, and sparse (``VarLenFeature``) features, come out as TF's outputs: per sparse key its
indices ``[nnz, rank + 1]``, values and dense shape, then the dense values. Ragged and
variable-length dense features are refused when the op is created (so a model using them fails
at load, naming the feature kind), never parsed wrongly. Every output is sized by the values
present in the input bytes, so no example can ask for more memory than it occupies.

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
from engine.framework.registry import Attr, OpFlags, op
from engine.tensor_shape import TensorShape

__all__ = ["decode_example"]

_CPU = OpFlags(device_types=("CPU",))
_FEATURE_TYPES = (dtypes.float32, dtypes.int64, dtypes.string)
_KIND = {1: dtypes.string, 2: dtypes.float32, 3: dtypes.int64}  # Feature's oneof field numbers
_KIND_NAME = {dtypes.string: "bytes", dtypes.float32: "float", dtypes.int64: "int64"}
_TYPE_NAME = {dtypes.string: "string", dtypes.float32: "float", dtypes.int64: "int64"}


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


def _sparse_outputs(o, n_sparse: int, rank: int | None) -> list:
    """The sparse outputs' (dtype, shape)s: all indices, then all values, then all shapes."""
    types = list(o._attrs["sparse_types"])
    if len(types) != n_sparse:
        raise ValueError(f"{o.type} has {n_sparse} sparse keys but {len(types)} sparse_types")
    for i, t in enumerate(types):
        if t not in _FEATURE_TYPES:
            raise TypeError(
                f"{o.type} sparse feature {i} has type {t.name}: expected float, int64 or string"
            )
    width = None if rank is None else rank + 1
    return (
        [(dtypes.int64, TensorShape([None, width]))] * n_sparse
        + [(t, TensorShape([None])) for t in types]
        + [(dtypes.int64, TensorShape([width]))] * n_sparse
    )


def _parse_example_infer(o):
    n_sparse, n_dense = o._attrs["Nsparse"], o._attrs["Ndense"]
    defaults = o._inputs[2 + n_sparse + n_dense :]
    _check_dense(o, o._attrs["Tdense"], o._attrs["dense_shapes"], n_dense, defaults)
    batch = TensorShape(o._inputs[0]._shape).with_rank_at_most(1)
    batch = batch if batch.rank is not None else TensorShape([None])
    return _sparse_outputs(o, n_sparse, 1) + [
        (t, batch.concatenate(TensorShape(s)))
        for t, s in zip(o._attrs["Tdense"], o._attrs["dense_shapes"])
    ]


def _parse_example_v2_infer(o):
    if o._attrs["ragged_value_types"]:
        raise errors.UnimplementedError(
            None,
            o,
            f"{o.type}: {len(o._attrs['ragged_value_types'])} ragged feature(s) requested; "
            "flowserve parses dense (FixedLenFeature) and sparse (VarLenFeature) features",
        )
    n_dense = len(o._attrs["Tdense"])
    _check_dense(o, o._attrs["Tdense"], o._attrs["dense_shapes"], n_dense, o._inputs[5:])
    outer = TensorShape(o._inputs[0]._shape).with_rank_at_most(1)
    sparse = _sparse_outputs(o, o._attrs["num_sparse"], outer.rank)
    return sparse + [
        (t, outer.concatenate(TensorShape(s)))
        for t, s in zip(o._attrs["Tdense"], o._attrs["dense_shapes"])
    ]


def _text(v) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("utf-8")


def _keys(keys, what: str) -> list[bytes]:
    keys = [_text(k) for k in keys]
    if len(set(keys)) != len(keys):
        raise errors.InvalidArgumentError(None, None, f"Duplicate {what} keys: {keys}")
    return keys


class _Spec(NamedTuple):
    sparse_keys: list
    sparse_types: list
    dense_keys: list
    dense_types: list
    dense_shapes: list
    defaults: tuple


def _parse(serialized, spec: _Spec) -> tuple:
    """Every output of the parse: sparse indices, values and shapes, then the dense values.

    Sparse features become ``[nnz, rank + 1]`` indices (the example's position, then the
    value's), values in example order, and a dense shape ``[*serialized.shape, max count]``.
    Every list and array is sized by values actually present in the input bytes."""
    if np.ndim(serialized) > 1:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Expected serialized to be a scalar or vector, got shape: "
            f"{list(np.shape(serialized))}",
        )
    flat = np.asarray(serialized, dtype=object).reshape(-1)
    sparse_keys = _keys(spec.sparse_keys, "sparse")
    dense_keys = _keys(spec.dense_keys, "dense")
    shapes = [tuple(TensorShape(s).as_list()) for s in spec.dense_shapes]
    dense = [
        np.empty((flat.size, *shape), dtype=object if t is dtypes.string else t.np)
        for t, shape in zip(spec.dense_types, shapes)
    ]
    sparse = [([], [], 0) for _ in sparse_keys]  # (rows, values, max count) per key
    for row, blob in enumerate(flat):
        try:
            features = decode_example(_text(blob))
        except ValueError as e:
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse example input, value: {_text(blob)[:64]!r} ({e})"
            ) from None
        for i, key in enumerate(dense_keys):
            dense[i][row, ...] = _dense_value(  # [row, ...]: a scalar string is copied in
                features.get(key), key, row, spec.dense_types[i], shapes[i], spec.defaults[i]
            )
        for i, key in enumerate(sparse_keys):
            values = _sparse_value(features.get(key), key, row, spec.sparse_types[i])
            rows, all_values, width = sparse[i]
            rows.append(len(values))
            all_values.extend(values)
            sparse[i] = (rows, all_values, max(width, len(values)))
    outer = np.shape(serialized)
    built = [_sparse_tensor(outer, *parts, t) for parts, t in zip(sparse, spec.sparse_types)]
    return (
        *(b[0] for b in built),
        *(b[1] for b in built),
        *(b[2] for b in built),
        *(d.reshape(outer + d.shape[1:]) for d in dense),
    )


def _outputs(parsed: tuple):
    """A kernel's outputs: one array alone (a parse of a single dense feature), else all."""
    return parsed[0] if len(parsed) == 1 else parsed


def _sparse_value(found, key: bytes, row: int, dtype) -> list:
    if found is None:
        return []
    kind, values = found
    if kind is not dtype:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Name: <unknown>, Key: {key.decode('utf-8', 'replace')}, Index: {row}.  Data "
            f"types don't match. Expected type: {_TYPE_NAME[dtype]}, Actual type: "
            f"{_TYPE_NAME[kind]}",
        )
    return values


def _sparse_tensor(outer: tuple, counts: list, values: list, width: int, dtype) -> tuple:
    counts = np.asarray(counts, dtype=np.int64)
    rows = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    positions = np.arange(rows.size, dtype=np.int64) - starts
    if outer:
        indices = np.stack([rows, positions], axis=1)
    else:
        indices = positions.reshape(-1, 1)
    if dtype is dtypes.string:
        vals = np.empty(len(values), dtype=object)
        vals[:] = values
    else:
        vals = np.asarray(values, dtype=dtype.np).reshape(-1)
    return indices, vals, np.array([*outer, width], dtype=np.int64)


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
    keys = [np.asarray(k).item() for k in rest[: Nsparse + Ndense]]
    spec = _Spec(
        keys[:Nsparse], sparse_types, keys[Nsparse:], Tdense, dense_shapes, rest[Nsparse + Ndense :]
    )
    return _outputs(_parse(serialized, spec))


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
    skeys = list(np.asarray(sparse_keys, dtype=object).reshape(-1))
    if len(skeys) != num_sparse:
        raise errors.InvalidArgumentError(
            None, None, f"Expected len(sparse_keys) == num_sparse: {len(skeys)} vs {num_sparse}"
        )
    spec = _Spec(skeys, sparse_types, keys, Tdense, dense_shapes, dense_defaults)
    return _outputs(_parse(serialized, spec))


# -- the Python API -------------------------------------------------------------------------
