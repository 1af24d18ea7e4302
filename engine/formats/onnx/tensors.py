"""ONNX tensors and element types <-> numpy arrays, including external data files.

External data is read only from regular files inside the model's directory (no absolute paths,
no ``..``, no symlink leaving it), with offsets and lengths checked against the file and the
tensor's declared size.
"""

from __future__ import annotations

import os

import numpy as np

from engine import dtypes
from engine.formats.onnx.proto import ProtoError

__all__ = [
    "ONNX_TO_NUMPY",
    "NUMPY_TO_ONNX",
    "ONNX_TYPE_NAMES",
    "OnnxFormatError",
    "UnsupportedModelError",
    "engine_dtype",
    "tensor_to_array",
    "array_to_tensor",
    "MAX_TENSOR_BYTES",
]

MAX_TENSOR_BYTES = 1 << 34  # 16 GiB: beyond any model we load in memory
MAX_RANK = 64


class OnnxFormatError(ValueError):
    """A model file that is damaged, hostile or uses a feature we do not read."""


class UnsupportedModelError(OnnxFormatError):
    """The model uses operators (or forms of them, or element types) the engine does not
    import."""


# TensorProto.DataType -> numpy
ONNX_TO_NUMPY = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    8: np.dtype(object),  # STRING
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
}
NUMPY_TO_ONNX = {v: k for k, v in ONNX_TO_NUMPY.items()}
ONNX_TYPE_NAMES = {
    14: "COMPLEX64",
    15: "COMPLEX128",
    16: "BFLOAT16",
    17: "FLOAT8E4M3FN",
    18: "FLOAT8E4M3FNUZ",
    19: "FLOAT8E5M2",
    20: "FLOAT8E5M2FNUZ",
    21: "UINT4",
    22: "INT4",
    23: "FLOAT4E2M1",
    24: "FLOAT8E8M0",
    25: "UINT2",
    26: "INT2",
}


def numpy_dtype(elem_type: int, what: str) -> np.dtype:
    try:
        return ONNX_TO_NUMPY[elem_type]
    except KeyError:
        name = ONNX_TYPE_NAMES.get(elem_type)
        if name is None:
            raise OnnxFormatError(f"{what}: unknown element type {elem_type}") from None
        raise UnsupportedModelError(f"{what}: element type {name} is not supported") from None


def engine_dtype(elem_type: int, what: str) -> dtypes.DType:
    np_dt = numpy_dtype(elem_type, what)
    return dtypes.string if np_dt.kind == "O" else dtypes.as_dtype(np_dt)


def _external(t: dict, model_dir: str | None, what: str, nbytes: int) -> memoryview:
    info = {e.get("key"): e.get("value", "") for e in t.get("external_data", [])}
    location = info.get("location")
    if not location:
        raise OnnxFormatError(f"{what}: external data without a location")
    if model_dir is None:
        raise OnnxFormatError(
            f"{what}: tensor data lives in external file {location!r}; load the model from a "
            "path so its directory is known"
        )
    if os.path.isabs(location) or ".." in location.replace("\\", "/").split("/"):
        raise OnnxFormatError(f"{what}: external data path {location!r} leaves the model dir")
    root = os.path.realpath(model_dir)
    path = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([root, path]) != root:
        raise OnnxFormatError(f"{what}: external data path {location!r} leaves the model dir")
    if not os.path.isfile(path):
        raise OnnxFormatError(f"{what}: external data file {location!r} not found")
    try:
        offset = int(info.get("offset", 0) or 0)
        length = int(info["length"]) if info.get("length") else nbytes
    except ValueError:
        raise OnnxFormatError(f"{what}: bad external data offset/length") from None
    size = os.path.getsize(path)
    if offset < 0 or length != nbytes or offset + length > size:
        raise OnnxFormatError(
            f"{what}: external data ({location!r}, offset {offset}, length {length}) does not "
            f"hold the {nbytes} bytes the tensor needs (file has {size} bytes)"
        )
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    return memoryview(data)


def tensor_to_array(t: dict, model_dir: str | None = None) -> np.ndarray:
    """A decoded TensorProto as a numpy array (strings as an object array of bytes)."""
    what = f"tensor {t.get('name', '')!r}"
    dims = [int(d) for d in t.get("dims", [])]
    if len(dims) > MAX_RANK or any(d < 0 for d in dims):
        raise OnnxFormatError(f"{what}: bad dims {dims}")
    dt = numpy_dtype(int(t.get("data_type", 0)), what)
    count = int(np.prod(dims, dtype=np.float64)) if dims else 1
    if dt.kind == "O":
        strings = t.get("string_data", [])
        if len(strings) != count:
            raise OnnxFormatError(f"{what}: {len(strings)} strings for shape {dims}")
        out = np.empty(count, dtype=object)
        out[:] = [bytes(s) for s in strings]
        return out.reshape(dims)
    nbytes = count * dt.itemsize
    if nbytes > MAX_TENSOR_BYTES:
        raise OnnxFormatError(f"{what}: {nbytes} bytes is more than the limit")
    if t.get("data_location", 0) == 1:
        raw = _external(t, model_dir, what, nbytes)
    else:
        raw = t.get("raw_data")
    if raw is not None:
        if len(raw) != nbytes:
            raise OnnxFormatError(
                f"{what}: raw_data has {len(raw)} bytes; shape {dims} of {dt} needs {nbytes}"
            )
        return np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt).reshape(dims)
    if dt == np.float32:
        vals = t.get("float_data", [])
    elif dt == np.float64:
        vals = t.get("double_data", [])
    elif dt == np.int64:
        vals = t.get("int64_data", [])
    elif dt in (np.dtype(np.uint32), np.dtype(np.uint64)):
        vals = t.get("uint64_data", [])
    else:
        vals = t.get("int32_data", [])
    if len(vals) != count:
        raise OnnxFormatError(f"{what}: {len(vals)} values for shape {dims}")
    if dt == np.float16:
        return np.asarray(vals, np.uint16).view(np.float16).reshape(dims)
    return np.asarray(vals).astype(dt).reshape(dims)


def array_to_tensor(a, name: str = "") -> dict:
    """A numpy array as a TensorProto dict (raw little-endian data)."""
    a = np.asarray(a)
    if a.dtype.kind in "SUO":
        flat = [s if isinstance(s, bytes) else str(s).encode() for s in a.reshape(-1).tolist()]
        return {"dims": list(a.shape), "data_type": 8, "name": name, "string_data": flat}
    try:
        code = NUMPY_TO_ONNX[a.dtype]
    except KeyError:
        raise OnnxFormatError(f"tensor {name!r}: dtype {a.dtype} has no ONNX type") from None
    le = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return {"dims": list(a.shape), "data_type": code, "name": name, "raw_data": le.tobytes()}


def check_proto(fn):
    """Turns ProtoError into OnnxFormatError (one error type for callers)."""

    def wrapped(*a, **k):
        try:
            return fn(*a, **k)
        except ProtoError as e:
            raise OnnxFormatError(f"damaged ONNX model: {e}") from None

    return wrapped
