"""The bytes of TensorBoard's event files: the protobuf wire format of the few messages an
event file holds (``Event``, ``Summary``, ``HistogramProto``, ``TensorProto``, a ``GraphDef``
of node names, types, inputs, devices, dtypes and shapes), TFRecord framing with masked
CRC-32C, and a PNG encoder for image summaries. Field numbers are TensorFlow's
(``tensorflow/core/util/event.proto``, ``core/framework/summary.proto``).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

# -----------------------------------------------------------------------------------------
# Protobuf wire format
# -----------------------------------------------------------------------------------------


def varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(int(value))


def field_bytes(num: int, value: bytes) -> bytes:
    if isinstance(value, str):
        value = value.encode("utf-8")
    return varint((num << 3) | 2) + varint(len(value)) + value


def field_double(num: int, value: float) -> bytes:
    return varint((num << 3) | 1) + struct.pack("<d", value)


def field_float(num: int, value: float) -> bytes:
    return varint((num << 3) | 5) + struct.pack("<f", value)


def packed_doubles(num: int, values) -> bytes:
    return field_bytes(num, np.asarray(values, dtype="<f8").tobytes())


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def iter_fields(data: bytes):
    """Yields ``(field number, wire type, value)``; value is an int or bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        elif wire == 2:
            n, pos = _read_varint(data, pos)
            if pos + n > len(data):
                raise ValueError("truncated length-delimited field")
            value, pos = data[pos : pos + n], pos + n
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield num, wire, value


# -----------------------------------------------------------------------------------------
# Messages
# -----------------------------------------------------------------------------------------


def summary_value(tag: str, *, simple_value=None, histo=None, image=None, tensor=None,
                  metadata=None) -> bytes:  # fmt: skip
    """One ``Summary.Value`` (tag 1, simple_value 2, image 4, histo 5, tensor 8, metadata 9)."""
    out = field_bytes(1, tag)
    if simple_value is not None:
        out += field_float(2, float(simple_value))
    if image is not None:
        out += field_bytes(4, image)
    if histo is not None:
        out += field_bytes(5, histo)
    if tensor is not None:
        out += field_bytes(8, tensor)
    if metadata is not None:
        out += field_bytes(9, metadata)
    return out


def summary(values) -> bytes:
    """A ``Summary``: its values as repeated field 1."""
    return b"".join(field_bytes(1, v) for v in values)


def summary_tags(data: bytes) -> list[str]:
    """The tags of a serialized ``Summary``, in order (ValueError when it is not one)."""
    tags = []
    for num, wire, value in iter_fields(data):
        if num != 1 or wire != 2:
            raise ValueError(f"unexpected field {num} in a Summary")
        tag = ""
        for n, w, v in iter_fields(value):
            if n == 1 and w == 2:
                tag = v.decode("utf-8")
        tags.append(tag)
    return tags


def plugin_metadata(plugin_name: str, content: bytes = b"") -> bytes:
    """``SummaryMetadata`` with ``plugin_data`` (plugin_name 1, content 2)."""
    data = field_bytes(1, plugin_name) + (field_bytes(2, content) if content else b"")
    return field_bytes(1, data)


def string_tensor(values: np.ndarray) -> bytes:
    """A ``TensorProto`` of DT_STRING (dtype 1, tensor_shape 2, string_val 8)."""
    shape = b"".join(field_bytes(2, field_varint(1, d)) for d in values.shape)
    out = field_varint(1, 7) + field_bytes(2, shape)
    for v in values.reshape(-1):
        out += field_bytes(8, v if isinstance(v, bytes) else str(v).encode("utf-8"))
    return out


def image(height: int, width: int, channels: int, png: bytes) -> bytes:
    """``Summary.Image`` (height 1, width 2, colorspace 3, encoded_image_string 4)."""
    return (
        field_varint(1, height)
        + field_varint(2, width)
        + field_varint(3, channels)
        + field_bytes(4, png)
    )


def _default_bucket_limits() -> np.ndarray:
    v, pos = 1.0e-12, []
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    dbl_max = np.finfo(np.float64).max
    pos.append(dbl_max)
    return np.array([-p for p in reversed(pos)] + [0.0] + pos)


BUCKET_LIMITS = _default_bucket_limits()


def histogram(values: np.ndarray) -> bytes:
    """A ``HistogramProto`` with TensorFlow's default exponential buckets, runs of empty
    buckets collapsed into one as TF's ``Histogram::EncodeToProto`` does."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    dbl_max = np.finfo(np.float64).max
    counts = np.bincount(np.searchsorted(BUCKET_LIMITS, v, side="right"), minlength=0)
    counts = np.pad(counts, (0, max(len(BUCKET_LIMITS) - len(counts), 0)))[: len(BUCKET_LIMITS)]
    limits, buckets = [], []
    i = 0
    n = len(BUCKET_LIMITS)
    while i < n:
        end, count = BUCKET_LIMITS[i], counts[i]
        i += 1
        if count <= 0:
            while i < n and counts[i] <= 0:
                end, count = BUCKET_LIMITS[i], counts[i]
                i += 1
        limits.append(end)
        buckets.append(float(count))
    lo = float(v.min()) if v.size else dbl_max
    hi = float(v.max()) if v.size else -dbl_max
    return (
        field_double(1, lo)
        + field_double(2, hi)
        + field_double(3, float(v.size))
        + field_double(4, float(v.sum()))
        + field_double(5, float((v * v).sum()))
        + packed_doubles(6, limits)
        + packed_doubles(7, buckets)
    )


def event(wall_time: float, step: int = 0, *, file_version=None, graph_def=None,
          summary_bytes=None, session_log=None, tagged_run_metadata=None) -> bytes:  # fmt: skip
    """An ``Event`` (wall_time 1, step 2, file_version 3, graph_def 4, summary 5,
    session_log 7, tagged_run_metadata 8)."""
    out = field_double(1, wall_time)
    if step:
        out += field_varint(2, int(step))
    if file_version is not None:
        out += field_bytes(3, file_version)
    if graph_def is not None:
        out += field_bytes(4, graph_def)
    if summary_bytes is not None:
        out += field_bytes(5, summary_bytes)
    if session_log is not None:
        out += field_bytes(7, session_log)
    if tagged_run_metadata is not None:
        out += field_bytes(8, tagged_run_metadata)
    return out


def session_log(status: int, checkpoint_path: str = "", msg: str = "") -> bytes:
    """A ``SessionLog`` (status 1, checkpoint_path 2, msg 3)."""
    out = field_varint(1, status) if status else b""
    if checkpoint_path:
        out += field_bytes(2, checkpoint_path)
    if msg:
        out += field_bytes(3, msg)
    return out


def tagged_run_metadata(tag: str, run_metadata: bytes) -> bytes:
    """A ``TaggedRunMetadata`` (tag 1, run_metadata 2: a serialized ``RunMetadata``)."""
    return field_bytes(1, tag) + field_bytes(2, run_metadata)


_NODE_EXEC_FIELDS = (  # NodeExecStats field numbers (tensorflow/core/framework/step_stats.proto)
    ("all_start_micros", 2),
    ("op_start_rel_micros", 3),
    ("op_end_rel_micros", 4),
    ("all_end_rel_micros", 5),
    ("all_start_nanos", 13),
    ("all_end_rel_nanos", 16),
)


def run_metadata(md) -> bytes:
    """An engine ``RunMetadata`` as TF's ``RunMetadata`` protobuf: its step stats (step_stats
    1 > dev_stats 1 > device 1, node_stats 2 > node_name 1, times, timeline_label 8)."""
    devices = b""
    stats = getattr(md, "step_stats", None)
    for dev in getattr(stats, "dev_stats", None) or []:
        nodes = b""
        for ns in dev.node_stats or []:
            node = field_bytes(1, ns.node_name) if ns.node_name else b""
            for name, num in _NODE_EXEC_FIELDS:
                value = int(getattr(ns, name) or 0)
                if value:
                    node += field_varint(num, value)
            if ns.timeline_label:
                node += field_bytes(8, ns.timeline_label)
            nodes += field_bytes(2, node)
        devices += field_bytes(1, (field_bytes(1, dev.device) if dev.device else b"") + nodes)
    return field_bytes(1, devices) if devices else b""


def _shape_proto(dims) -> bytes:
    if dims is None:
        return field_varint(3, 1)  # unknown_rank
    return b"".join(field_bytes(2, field_varint(1, -1 if d is None else d)) for d in dims)


def graph_def(graph) -> bytes:
    """The graph as a ``GraphDef`` TensorBoard draws: per node its name, op, inputs
    (``name:index``, ``^control``), device, ``dtype`` and ``_output_shapes``."""
    nodes = []
    for op in graph.get_operations():
        node = field_bytes(1, op.name) + field_bytes(2, op.type)
        for t in op.inputs:
            idx = t.value_index if hasattr(t, "value_index") else int(t.name.rsplit(":", 1)[1])
            node += field_bytes(3, t.op.name if idx == 0 else f"{t.op.name}:{idx}")
        for c in op.control_inputs:
            node += field_bytes(3, f"^{c.name}")
        if op.device:
            node += field_bytes(4, op.device)
        if op.outputs:
            dtype = op.outputs[0].dtype.base_dtype.as_datatype_enum
            if dtype:
                node += field_bytes(
                    5, field_bytes(1, "dtype") + field_bytes(2, field_varint(6, dtype))
                )
            shapes = b"".join(field_bytes(7, _shape_proto(t.shape.as_tuple())) for t in op.outputs)
            attr = field_bytes(1, shapes)  # AttrValue.list
            node += field_bytes(5, field_bytes(1, "_output_shapes") + field_bytes(2, attr))
        nodes.append(field_bytes(1, node))
    versions = field_bytes(4, field_varint(1, 27))
    return b"".join(nodes) + versions


# -----------------------------------------------------------------------------------------
# TFRecord framing
# -----------------------------------------------------------------------------------------


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data: bytes) -> bytes:
    """One record: length, masked CRC of the length, data, masked CRC of the data."""
    header = struct.pack("<Q", len(data))
    return (
        header + struct.pack("<I", masked_crc(header)) + data + struct.pack("<I", masked_crc(data))
    )


# -----------------------------------------------------------------------------------------
# PNG
# -----------------------------------------------------------------------------------------


def png(pixels: np.ndarray) -> bytes:
    """A PNG of an ``[h, w, c]`` uint8 array (c = 1 grey, 3 RGB, 4 RGBA)."""
    h, w, c = pixels.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + pixels[r].tobytes() for r in range(h))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )
