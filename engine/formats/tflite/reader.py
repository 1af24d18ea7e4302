"""A ``.tflite`` flatbuffer -> plain, checked Python objects (``TFLiteModel``).

The generated schema classes of the ``tflite`` package read fields lazily at whatever offset
the file names, so a damaged file reads garbage or raises from deep inside ``flatbuffers``.
This module reads everything the importer needs once, up front, and checks it: counts are
capped before iterating, tensor and opcode indices lie within their tables, buffers lie
within the file, a constant's bytes match its shape and type, the total of constant bytes is
capped. Anything else raises ``TFLiteFormatError`` naming the field. Nothing in a model is
ever executed; custom-op payloads are not read at all.
"""

from __future__ import annotations

import inspect
import os
import struct
from dataclasses import dataclass, field

import numpy as np

from engine.formats.tflite import metadata_signatures
from engine.formats.tflite.errors import TFLiteFormatError, UnsupportedModelError

try:  # optional dependency: pip install flowserve[tflite]
    import tflite
    from tflite.utils import BUILTIN_OPCODE2NAME
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    tflite = None
    BUILTIN_OPCODE2NAME = {}

__all__ = [
    "MAX_MODEL_BYTES",
    "Operator",
    "Quantization",
    "Signature",
    "Subgraph",
    "TFLiteModel",
    "TensorDef",
    "read_model",
]

MAX_MODEL_BYTES = 4 << 30  # flatbuffers address 2 GiB; larger models keep buffers after it
MAX_TENSORS = 1_000_000  # per subgraph
MAX_OPERATORS = 1_000_000
MAX_SUBGRAPHS = 10_000
MAX_RANK = 16
FILE_IDENTIFIER = b"TFL3"

# TensorType -> numpy dtype; the rest (strings, resources, variants, int4, bfloat16, complex)
# are reported as unsupported by the importer.
DTYPES = {
    0: np.dtype("<f4"),
    1: np.dtype("<f2"),
    2: np.dtype("<i4"),
    3: np.dtype("u1"),
    4: np.dtype("<i8"),
    6: np.dtype("bool"),
    7: np.dtype("<i2"),
    9: np.dtype("i1"),
    10: np.dtype("<f8"),
    12: np.dtype("<u8"),
    15: np.dtype("<u4"),
    16: np.dtype("<u2"),
}
TYPE_NAMES = {0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64", 5: "STRING"}
TYPE_NAMES.update({6: "BOOL", 7: "INT16", 8: "COMPLEX64", 9: "INT8", 10: "FLOAT64"})
TYPE_NAMES.update({11: "COMPLEX128", 12: "UINT64", 13: "RESOURCE", 14: "VARIANT"})
TYPE_NAMES.update({15: "UINT32", 16: "UINT16", 17: "INT4", 18: "BFLOAT16"})
CUSTOM = 32


@dataclass
class Quantization:
    """Affine quantization: ``real = scale * (q - zero_point)``, per channel along ``axis``
    when ``scale`` has more than one value."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int = 0


@dataclass
class TensorDef:
    index: int
    name: str
    type: int  # TensorType
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None  # shape_signature: -1 for dims unknown at conversion
    quant: Quantization | None = None
    data: np.ndarray | None = None  # constant value (raw, before dequantization)

    @property
    def dtype(self) -> np.dtype | None:
        return DTYPES.get(self.type)

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, f"type {self.type}")


@dataclass
class Operator:
    index: int
    op: str  # builtin name ("CONV_2D"), or "CUSTOM" with ``custom_code`` set
    inputs: list[int]  # -1: an omitted optional input
    outputs: list[int]
    options: dict = field(default_factory=dict)
    custom_code: str = ""


@dataclass
class Subgraph:
    index: int
    name: str
    tensors: list[TensorDef]
    inputs: list[int]
    outputs: list[int]
    operators: list[Operator]


@dataclass
class Signature:
    key: str
    subgraph: int
    inputs: dict[str, int]  # signature name -> tensor index in its subgraph
    outputs: dict[str, int]


@dataclass
class TFLiteModel:
    version: int
    description: str
    subgraphs: list[Subgraph]
    signatures: list[Signature]


def read_model(path_or_bytes) -> TFLiteModel:
    """Reads and checks a model (a path, a directory holding ``model.tflite``, or bytes)."""
    if tflite is None:
        raise TFLiteFormatError(
            "reading TensorFlow Lite models needs the tflite and flatbuffers packages "
            "(pip install flowserve[tflite])"
        )
    data = _read_bytes(path_or_bytes)
    if len(data) < 8 or data[4:8] != FILE_IDENTIFIER:
        raise TFLiteFormatError("not a TensorFlow Lite model (no TFL3 file identifier)")
    try:
        (root,) = struct.unpack_from("<I", data, 0)
        if root + 4 > len(data):
            raise TFLiteFormatError(f"root table offset {root} is past the end of the file")
        model = tflite.Model.GetRootAs(data, 0)
        return _Reader(data, model).read()
    except TFLiteFormatError:
        raise
    except (IndexError, struct.error, ValueError, TypeError, OverflowError, AttributeError) as e:
        raise TFLiteFormatError(f"damaged TFLite model (truncated or bad offsets): {e}") from None


def _read_bytes(path_or_bytes) -> bytes:
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    path = os.fspath(path_or_bytes)
    if os.path.isdir(path):
        path = os.path.join(path, "model.tflite")
    try:
        size = os.path.getsize(path)
        if size > MAX_MODEL_BYTES:
            raise TFLiteFormatError(f"{path}: {size} bytes is more than the 4 GiB limit")
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TFLiteFormatError(f"cannot read TFLite model {path}: {e.strerror}") from None


def _count(n: int, limit: int, what: str) -> int:
    if not 0 <= n <= limit:
        raise TFLiteFormatError(f"{what}: {n} entries (at most {limit})")
    return n


def _text(raw) -> str:
    if raw is None:
        return ""
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise TFLiteFormatError("a name is not valid UTF-8") from None


class _Reader:
    def __init__(self, data: bytes, model):
        self.data = data
        self.model = model
        self.buffers = _count(model.BuffersLength(), MAX_TENSORS * 4, "buffers")
        self.constant_bytes = 0

    def read(self) -> TFLiteModel:
        m = self.model
        codes = [
            self._opcode(i)
            for i in range(_count(m.OperatorCodesLength(), 10_000, "operator_codes"))
        ]
        n = _count(m.SubgraphsLength(), MAX_SUBGRAPHS, "subgraphs")
        if n == 0:
            raise TFLiteFormatError("the model has no subgraphs")
        subgraphs = [self._subgraph(i, codes) for i in range(n)]
        signatures = [
            self._signature(m.SignatureDefs(i), subgraphs)
            for i in range(_count(m.SignatureDefsLength(), MAX_SUBGRAPHS, "signature_defs"))
        ]
        if not signatures:
            signatures = metadata_signatures.read_signatures(m, self, subgraphs, Signature)
        return TFLiteModel(int(m.Version()), _text(m.Description()), subgraphs, signatures)

    def _opcode(self, i: int) -> tuple[str, str]:
        code = self.model.OperatorCodes(i)
        # Schema v3a: builtin_code replaced the int8 deprecated_builtin_code; writers fill
        # both and the real one is the larger.
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        if builtin == CUSTOM:
            return "CUSTOM", _text(code.CustomCode())
        return BUILTIN_OPCODE2NAME.get(builtin, f"BUILTIN_{builtin}"), ""

    def _subgraph(self, index: int, codes) -> Subgraph:
        g = self.model.Subgraphs(index)
        ntensors = _count(g.TensorsLength(), MAX_TENSORS, f"subgraph {index} tensors")
        tensors = [self._tensor(g.Tensors(i), i) for i in range(ntensors)]
        where = f"subgraph {index}"
        inputs = self._indices(g.InputsAsNumpy(), g.InputsLength(), ntensors, f"{where} inputs")
        outputs = self._indices(g.OutputsAsNumpy(), g.OutputsLength(), ntensors, f"{where} outputs")
        nops = _count(g.OperatorsLength(), MAX_OPERATORS, f"{where} operators")
        ops = [self._operator(g.Operators(i), i, codes, ntensors, where) for i in range(nops)]
        return Subgraph(index, _text(g.Name()), tensors, inputs, outputs, ops)

    def _indices(self, array, length: int, ntensors: int, what: str, optional=False) -> list:
        if length == 0:
            return []
        _count(length, MAX_TENSORS, what)
        out = [int(v) for v in np.asarray(array).reshape(-1)]
        low = -1 if optional else 0
        bad = [v for v in out if not low <= v < ntensors]
        if bad:
            raise TFLiteFormatError(f"{what}: tensor index {bad[0]} is not in [0, {ntensors})")
        return out

    def _tensor(self, t, index: int) -> TensorDef:
        name = _text(t.Name())
        shape = self._dims(t.ShapeAsNumpy(), t.ShapeLength(), name, "shape")
        sig = None
        if t.ShapeSignatureLength():
            sig = self._dims(t.ShapeSignatureAsNumpy(), t.ShapeSignatureLength(), name, "sig")
            if len(sig) != len(shape):
                raise TFLiteFormatError(f"tensor {name!r}: shape_signature rank != shape rank")
        if t.Sparsity() is not None:
            raise UnsupportedModelError(f"tensor {name!r}: sparse tensors are not supported")
        tensor = TensorDef(index, name, int(t.Type()), shape, sig, self._quant(t, name))
        tensor.data = self._buffer(int(t.Buffer()), tensor)
        return tensor

    def _dims(self, array, length: int, name: str, what: str) -> tuple[int, ...]:
        if length > MAX_RANK:
            raise TFLiteFormatError(f"tensor {name!r}: {what} of rank {length} (at most 16)")
        dims = tuple(int(d) for d in np.asarray(array).reshape(-1)) if length else ()
        if any(d < -1 or d >= 1 << 31 for d in dims):
            raise TFLiteFormatError(f"tensor {name!r}: bad {what} {list(dims)}")
        return dims

    def _quant(self, t, name: str) -> Quantization | None:
        q = t.Quantization()
        if q is None or q.ScaleLength() == 0:
            return None
        n = _count(q.ScaleLength(), 1 << 20, f"tensor {name!r} scales")
        scale = np.array(q.ScaleAsNumpy(), np.float32).reshape(-1)
        zp = np.zeros(n, np.int64)
        if q.ZeroPointLength():
            zp = np.array(q.ZeroPointAsNumpy(), np.int64).reshape(-1)
        if zp.size not in (1, n) or not np.all(np.isfinite(scale)):
            raise TFLiteFormatError(f"tensor {name!r}: bad quantization parameters")
        return Quantization(scale, np.broadcast_to(zp, (n,)).copy(), int(q.QuantizedDimension()))

    def _buffer(self, index: int, tensor: TensorDef) -> np.ndarray | None:
        if index == 0:  # buffer 0 is the empty sentinel: a computed tensor
            return None
        if not 0 <= index < self.buffers:
            raise TFLiteFormatError(
                f"tensor {tensor.name!r}: buffer index {index} is not in [0, {self.buffers})"
            )
        buf = self.model.Buffers(index)
        raw = self._buffer_bytes(buf, tensor.name)
        if raw is None:
            return None
        dtype = tensor.dtype
        if dtype is None:
            raise UnsupportedModelError(
                f"tensor {tensor.name!r}: constants of type {tensor.type_name}"
            )
        if any(d < 0 for d in tensor.shape):
            raise TFLiteFormatError(f"tensor {tensor.name!r}: constant with unknown dims")
        expected = int(np.prod(tensor.shape, dtype=np.int64)) * dtype.itemsize
        if expected != len(raw):
            raise TFLiteFormatError(
                f"tensor {tensor.name!r}: shape {list(tensor.shape)} of {tensor.type_name} "
                f"needs {expected} bytes, its buffer {index} holds {len(raw)}"
            )
        self.constant_bytes += expected
        if self.constant_bytes > MAX_MODEL_BYTES:
            raise TFLiteFormatError("constants total more than the 4 GiB limit")
        return raw.view(dtype).reshape(tensor.shape)

    def _buffer_bytes(self, buf, name: str) -> np.ndarray | None:
        """The buffer's bytes as a uint8 array (a view of the file), or None when empty."""
        offset, size = int(buf.Offset()), int(buf.Size())
        if offset > 1:  # data kept after the flatbuffer (models over 2 GiB)
            if offset + size > len(self.data):
                raise TFLiteFormatError(
                    f"tensor {name!r}: buffer at offset {offset} with {size} bytes is past "
                    f"the end of the file ({len(self.data)} bytes)"
                )
            return np.frombuffer(self.data, np.uint8, count=size, offset=offset)
        if buf.DataLength() == 0:
            return None
        try:  # numpy refuses a vector that runs past the end of the file
            return buf.DataAsNumpy()
        except ValueError:
            raise TFLiteFormatError(
                f"tensor {name!r}: buffer data is past the end of the file"
            ) from None

    def _operator(self, op, index: int, codes, ntensors: int, where: str) -> Operator:
        code_index = int(op.OpcodeIndex())
        if not 0 <= code_index < len(codes):
            raise TFLiteFormatError(f"{where} operator {index}: opcode index {code_index}")
        name, custom = codes[code_index]
        what = f"{where} operator {index} ({name})"
        inputs = self._indices(op.InputsAsNumpy(), op.InputsLength(), ntensors, what, True)
        outputs = self._indices(op.OutputsAsNumpy(), op.OutputsLength(), ntensors, what)
        options = {} if custom or name == "CUSTOM" else read_options(op)
        return Operator(index, name, inputs, outputs, options, custom)

    def _signature(self, s, subgraphs) -> Signature:
        key = _text(s.SignatureKey())
        index = int(s.SubgraphIndex())
        if not 0 <= index < len(subgraphs):
            raise TFLiteFormatError(f"signature {key!r}: subgraph index {index}")
        ntensors = len(subgraphs[index].tensors)

        def names(n, get):
            out = {}
            for i in range(_count(n, MAX_TENSORS, f"signature {key!r} tensors")):
                m = get(i)
                t = int(m.TensorIndex())
                if not 0 <= t < ntensors:
                    raise TFLiteFormatError(f"signature {key!r}: tensor index {t}")
                out[_text(m.Name())] = t
            return out

        return Signature(
            key, index, names(s.InputsLength(), s.Inputs), names(s.OutputsLength(), s.Outputs)
        )


# -- builtin options ------------------------------------------------------------------------
# Each options table is read whole into a dict keyed by the schema's field names
# ("StrideW", "FusedActivationFunction", "NewShape"), from the generated accessors: a field
# with an ``...AsNumpy`` accessor is a vector, one taking no argument a scalar.
_OPTION_FIELDS: dict[type, list[tuple[str, bool]]] = {}
_OPTION_CLASSES: dict[int, type] = {}


def _option_fields(cls) -> list[tuple[str, bool]]:
    fields = _OPTION_FIELDS.get(cls)
    if fields is None:
        fields = []
        for name, fn in vars(cls).items():
            if not name[:1].isupper() or name == "Init" or name.startswith("GetRootAs"):
                continue
            if name.endswith(("AsNumpy", "Length", "IsNone", "BufferHasIdentifier")):
                continue
            params = list(inspect.signature(fn).parameters)
            if params == ["self"]:
                fields.append((name, False))
            elif params == ["self", "j"] and hasattr(cls, name + "AsNumpy"):
                fields.append((name, True))
        _OPTION_FIELDS[cls] = fields
    return fields


def _options_class(kind: int):
    if not _OPTION_CLASSES:
        for name, value in vars(tflite.BuiltinOptions).items():
            if isinstance(value, int) and not name.startswith("_"):
                _OPTION_CLASSES[value] = getattr(tflite, name, None)
    return _OPTION_CLASSES.get(kind)


def read_options(op) -> dict:
    """An operator's builtin options as a dict (empty when it has none)."""
    kind = int(op.BuiltinOptionsType())
    table = op.BuiltinOptions()
    if kind == 0 or table is None:
        return {}
    cls = _options_class(kind)
    if cls is None:
        return {}
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    out = {}
    for name, vector in _option_fields(cls):
        if vector:
            if getattr(obj, name + "Length")() > MAX_TENSORS:
                raise TFLiteFormatError(f"option {name} is too long")
            value = getattr(obj, name + "AsNumpy")()
            out[name] = [] if isinstance(value, int) else [v.item() for v in value]
        else:
            value = getattr(obj, name)()
            if isinstance(value, (bool, int, float, np.number)):
                out[name] = value.item() if isinstance(value, np.number) else value
    return out
