"""SignatureDefs kept in a TFLite model's metadata: the older way of naming a model's inputs
and outputs (TF's ``signature_def_utils.set_signature_defs``, as TF Serving's own
``saved_model_half_plus_two_tflite_with_sigdef`` test model has them). The metadata entry
``signature_defs_metadata`` is a FlexBuffer map from signature key to a serialized
``tensorflow.SignatureDef``, whose tensor names (``tflite_input:0``) are the model's tensors.
Used only when the flatbuffer has no SignatureDef table of its own."""

from __future__ import annotations

from google.protobuf.message import DecodeError

from engine.formats.tensorflow.proto import meta_graph_pb2
from engine.formats.tflite.errors import TFLiteFormatError

try:  # optional dependency: pip install flowserve[tflite]
    from flatbuffers import flexbuffers
except ImportError:  # pragma: no cover - the reader refuses models without the extra first
    flexbuffers = None

__all__ = ["METADATA_NAME", "read_signatures"]

METADATA_NAME = "signature_defs_metadata"
MAX_METADATA_BYTES = 1 << 20
MAX_SIGNATURES = 1000
MAX_METADATA_ENTRIES = 10_000


def read_signatures(model, reader, subgraphs, signature_class) -> list:
    """The metadata's signatures as ``signature_class(key, 0, inputs, outputs)`` (tensor
    indices of subgraph 0), or [] when the model has none."""
    n = model.MetadataLength()
    if n > MAX_METADATA_ENTRIES:
        raise TFLiteFormatError(
            f"the model lists {n} metadata entries (at most {MAX_METADATA_ENTRIES})"
        )
    for i in range(n):
        entry = model.Metadata(i)
        if (entry.Name() or b"") != METADATA_NAME.encode():
            continue
        index = int(entry.Buffer())
        if not 0 <= index < reader.buffers:
            raise TFLiteFormatError(f"{METADATA_NAME}: buffer index {index} is out of range")
        raw = reader._buffer_bytes(model.Buffers(index), METADATA_NAME)
        if raw is None:
            return []
        if raw.size > MAX_METADATA_BYTES:
            raise TFLiteFormatError(
                f"{METADATA_NAME} holds {raw.size} bytes (at most {MAX_METADATA_BYTES})"
            )
        return _decode(bytes(raw), subgraphs[0], signature_class)
    return []


def _decode(data: bytes, sub, signature_class) -> list:
    try:
        table = flexbuffers.GetRoot(data).AsMap
        items = list(zip(table.Keys, table.Values))
    except Exception as e:  # noqa: BLE001 - any malformed FlexBuffer is the same error
        raise TFLiteFormatError(f"{METADATA_NAME} is not a FlexBuffer map: {e}") from None
    if len(items) > MAX_SIGNATURES:
        raise TFLiteFormatError(f"{METADATA_NAME} lists {len(items)} signatures")
    by_name = {t.name: i for i, t in enumerate(sub.tensors)}
    out = []
    for key_ref, value in items:
        key = key_ref.AsKey
        blob = value.AsStringBytes if value.IsString else value.AsBlob
        sig = meta_graph_pb2.SignatureDef()
        try:
            sig.ParseFromString(bytes(blob))
        except DecodeError:
            raise TFLiteFormatError(
                f"{METADATA_NAME}: signature {key!r} is not a SignatureDef"
            ) from None
        inputs = {a: _tensor(by_name, info.name, key) for a, info in sig.inputs.items()}
        outputs = {a: _tensor(by_name, info.name, key) for a, info in sig.outputs.items()}
        out.append(signature_class(key, 0, inputs, outputs))
    return out


def _tensor(by_name: dict, name: str, key: str) -> int:
    base = name[:-2] if name.endswith(":0") else name
    if base not in by_name:
        raise TFLiteFormatError(
            f"{METADATA_NAME}: signature {key!r} names tensor {name!r}, "
            "which the model does not have"
        )
    return by_name[base]
