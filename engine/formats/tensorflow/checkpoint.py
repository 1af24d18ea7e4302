"""TensorFlow V2 checkpoints (tensor bundles): read and written without TensorFlow.

A checkpoint at prefix ``P`` is ``P.index``, a LevelDB-format sorted table mapping each
tensor name to a ``BundleEntryProto`` (dtype, shape, shard, offset, size, masked CRC32C) with
a ``BundleHeaderProto`` under the empty key (its blocks stored raw or Snappy-compressed, as
older TF versions wrote them), and ``P.data-SSSSS-of-NNNNN`` shards holding the
tensors' little-endian bytes. String tensors are stored as varint64 lengths, a masked CRC32C
of the lengths, then the bytes.

Everything read is untrusted: block handles, entry offsets and sizes are checked against the
file sizes and the limits below before anything is allocated, every block's and every
tensor's checksum is verified (tensors unless ``verify=False``), and a damaged file raises
``TFFormatError`` naming it.
"""

from __future__ import annotations

import os
import struct

import google_crc32c
import numpy as np
from google.protobuf import message as pb_message

from engine import dtypes
from engine.formats.tensorflow.proto import tensor_bundle_pb2, versions_pb2
from engine.formats.tensorflow.tensors import (
    TFFormatError,
    dtype_from_enum,
    shape_from_proto,
    shape_to_proto,
)

__all__ = [
    "BundleLimits",
    "BundleReader",
    "is_tf_bundle",
    "write_bundle",
    "masked_crc32c",
    "snappy_decompress",
    "OBJECT_GRAPH_KEY",
]

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


class BundleLimits:
    max_index_bytes = 256 << 20
    max_entries = 1 << 20
    max_shards = 1 << 16
    max_string_elements = 1 << 27


def masked_crc32c(data) -> int:
    crc = google_crc32c.value(bytes(data) if not isinstance(data, bytes) else data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _string_checksums(lengths: list[int], strings: list[bytes]) -> tuple[int, int]:
    """(lengths checksum, entry checksum) of a string tensor as TF computes them: CRC32C over
    each length as a little-endian uint32 (uint64 from 4 GiB on; not its varint), then the
    masked lengths checksum, then the bytes."""
    crc = google_crc32c.value(
        b"".join(struct.pack("<I" if n <= 0xFFFFFFFF else "<Q", n) for n in lengths)
    )
    length_sum = _mask(crc)
    crc = google_crc32c.extend(crc, struct.pack("<I", length_sum))
    for s in strings:
        crc = google_crc32c.extend(crc, s)
    return length_sum, _mask(crc)


def _varint(buf: bytes, pos: int, end: int, where: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise TFFormatError(f"{where}: truncated or overlong varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _put_varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


# -----------------------------------------------------------------------------------------
# The LevelDB table (.index)
# -----------------------------------------------------------------------------------------


def _block(data: bytes, handle: tuple[int, int], where: str) -> bytes:
    offset, size = handle
    if offset < 0 or size < 0 or offset + size + 5 > len(data):
        raise TFFormatError(f"{where}: block handle ({offset}, {size}) is outside the file")
    contents = data[offset : offset + size]
    kind = data[offset + size]
    (stored,) = struct.unpack_from("<I", data, offset + size + 1)
    if masked_crc32c(contents + bytes([kind])) != stored:
        raise TFFormatError(f"{where}: block checksum mismatch (the file is corrupted)")
    if kind == 1:
        return snappy_decompress(contents, where, BundleLimits.max_index_bytes)
    if kind != 0:
        raise TFFormatError(f"{where}: table blocks of compression type {kind} are not supported")
    return contents


def snappy_decompress(data: bytes, where: str, limit: int) -> bytes:
    """Raw Snappy (the block format LevelDB tables use): a varint length, then literals and
    back-references. Index blocks are small, so this stays in Python rather than adding a
    compiled dependency; every length and offset is checked before it is used."""
    n, pos = _varint(data, 0, len(data), where)
    if n > limit:
        raise TFFormatError(f"{where}: compressed block expands to {n} bytes, over the limit")
    out = bytearray()
    end = len(data)
    while pos < end:
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                if pos + extra > end:
                    raise TFFormatError(f"{where}: truncated Snappy literal")
                length = int.from_bytes(data[pos : pos + extra], "little")
                pos += extra
            length += 1
            if pos + length > end or len(out) + length > n:
                raise TFFormatError(f"{where}: Snappy literal runs past the block")
            out += data[pos : pos + length]
            pos += length
            continue
        width = (1, 2, 4)[kind - 1]
        if pos + width > end:
            raise TFFormatError(f"{where}: truncated Snappy copy")
        if kind == 1:
            length = 4 + ((tag >> 2) & 7)
            offset = ((tag >> 5) << 8) | data[pos]
        else:
            length = (tag >> 2) + 1
            offset = int.from_bytes(data[pos : pos + width], "little")
        pos += width
        if offset == 0 or offset > len(out) or len(out) + length > n:
            raise TFFormatError(f"{where}: Snappy copy outside the output")
        start = len(out) - offset
        while length > 0:  # a copy may overlap what it writes
            chunk = out[start : start + min(length, offset)]
            out += chunk
            start += len(chunk)
            length -= len(chunk)
    if len(out) != n:
        raise TFFormatError(f"{where}: Snappy block holds {len(out)} bytes, declares {n}")
    return bytes(out)


def _block_entries(block: bytes, where: str):
    """(key, value) pairs of one table block, keys rebuilt from their shared prefixes."""
    if len(block) < 4:
        raise TFFormatError(f"{where}: block too short")
    (num_restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * num_restarts
    if num_restarts == 0 or end < 0:
        raise TFFormatError(f"{where}: bad restart array in block")
    pos, key = 0, b""
    while pos < end:
        shared, pos = _varint(block, pos, end, where)
        unshared, pos = _varint(block, pos, end, where)
        vlen, pos = _varint(block, pos, end, where)
        if shared > len(key) or pos + unshared + vlen > end:
            raise TFFormatError(f"{where}: corrupted block entry")
        key = key[:shared] + block[pos : pos + unshared]
        pos += unshared
        yield key, block[pos : pos + vlen]
        pos += vlen


def _handle(value: bytes, where: str) -> tuple[int, int]:
    offset, pos = _varint(value, 0, len(value), where)
    size, _ = _varint(value, pos, len(value), where)
    return offset, size


def read_table(path: str) -> list[tuple[bytes, bytes]]:
    """All (key, value) pairs of the sorted table at ``path``, in key order."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise TFFormatError(f"{path}: cannot read checkpoint index ({e.strerror})") from None
    if size > BundleLimits.max_index_bytes:
        raise TFFormatError(f"{path}: index is {size} bytes, over the limit")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < FOOTER_SIZE:
        raise TFFormatError(f"{path}: too short to be a checkpoint index")
    footer = data[-FOOTER_SIZE:]
    (magic,) = struct.unpack_from("<Q", footer, 40)
    if magic != TABLE_MAGIC:
        raise TFFormatError(f"{path}: not a TensorFlow checkpoint index (bad magic number)")
    _, pos = _varint(footer, 0, 40, path)  # metaindex handle (unused: no filters)
    _, pos = _varint(footer, pos, 40, path)
    idx_off, pos = _varint(footer, pos, 40, path)
    idx_size, pos = _varint(footer, pos, 40, path)
    body = data[:-FOOTER_SIZE]
    out = []
    last = None
    for _, handle in _block_entries(_block(body, (idx_off, idx_size), path), path):
        for key, value in _block_entries(_block(body, _handle(handle, path), path), path):
            if last is not None and key <= last:
                raise TFFormatError(f"{path}: keys out of order")
            last = key
            out.append((key, value))
            if len(out) > BundleLimits.max_entries + 1:
                raise TFFormatError(f"{path}: more than {BundleLimits.max_entries} entries")
    return out


def write_table(path: str, items: list[tuple[bytes, bytes]], block_size: int = 4096) -> None:
    """Writes sorted (key, value) pairs as an uncompressed table (restart every 16 keys)."""
    out = bytearray()
    index: list[tuple[bytes, bytes]] = []

    def flush(entries):
        block = bytearray()
        restarts = []
        prev = b""
        for i, (k, v) in enumerate(entries):
            shared = 0
            if i % 16 == 0:
                restarts.append(len(block))
            else:
                while shared < min(len(prev), len(k)) and prev[shared] == k[shared]:
                    shared += 1
            _put_varint(block, shared)
            _put_varint(block, len(k) - shared)
            _put_varint(block, len(v))
            block += k[shared:] + v
            prev = k
        if not restarts:
            restarts.append(0)
        for r in restarts:
            block += struct.pack("<I", r)
        block += struct.pack("<I", len(restarts))
        handle = (len(out), len(block))
        out.extend(block)
        out.append(0)
        out.extend(struct.pack("<I", masked_crc32c(bytes(block) + b"\0")))
        return handle

    def enc(h):
        b = bytearray()
        _put_varint(b, h[0])
        _put_varint(b, h[1])
        return bytes(b)

    pending: list[tuple[bytes, bytes]] = []
    size = 0
    for k, v in items:
        pending.append((k, v))
        size += len(k) + len(v) + 8
        if size >= block_size:
            index.append((k, enc(flush(pending))))
            pending, size = [], 0
    if pending or not index:
        index.append((pending[-1][0] if pending else b"", enc(flush(pending))))
    meta_handle = flush([])
    index_handle = flush(index)
    footer = bytearray(enc(meta_handle) + enc(index_handle))
    footer += b"\0" * (40 - len(footer))
    footer += struct.pack("<Q", TABLE_MAGIC)
    out += footer
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)


def is_tf_bundle(prefix: str) -> bool:
    """True when ``prefix.index`` is a TensorFlow table (ends with the table magic number)."""
    path = prefix + ".index"
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < FOOTER_SIZE:
                return False
            f.seek(-8, os.SEEK_END)
            return struct.unpack("<Q", f.read(8))[0] == TABLE_MAGIC
    except OSError:
        return False


# -----------------------------------------------------------------------------------------
# Bundles
# -----------------------------------------------------------------------------------------


def _shard_path(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


class BundleReader:
    """The tensors of the checkpoint at ``prefix``: ``names()``, ``entry(name)``,
    ``dtype(name)``, ``shape(name)``, ``read(name)``."""

    def __init__(self, prefix: str, verify: bool = True):
        self.prefix = os.fspath(prefix)
        self.verify = verify
        index = self.prefix + ".index"
        items = read_table(index)
        if not items or items[0][0] != b"":
            raise TFFormatError(f"{index}: no bundle header")
        try:
            self.header = tensor_bundle_pb2.BundleHeaderProto.FromString(items[0][1])
        except pb_message.DecodeError as e:
            raise TFFormatError(f"{index}: bad bundle header ({e})") from None
        if self.header.endianness != tensor_bundle_pb2.BundleHeaderProto.LITTLE:
            raise TFFormatError(f"{index}: big-endian checkpoints are not supported")
        n = self.header.num_shards
        if not 1 <= n <= BundleLimits.max_shards:
            raise TFFormatError(f"{index}: invalid shard count {n}")
        self._entries: dict[str, tensor_bundle_pb2.BundleEntryProto] = {}
        self._shapes: dict[str, list] = {}
        self._dtypes: dict[str, dtypes.DType] = {}
        shard_sizes: dict[int, int] = {}
        for key, value in items[1:]:
            try:
                name = key.decode("utf-8")
                e = tensor_bundle_pb2.BundleEntryProto.FromString(value)
            except (UnicodeDecodeError, pb_message.DecodeError) as exc:
                raise TFFormatError(f"{index}: bad entry {key!r} ({exc})") from None
            where = f"{index}: tensor {name!r}"
            if e.slices:
                raise TFFormatError(f"{where} is partitioned; sliced variables are unsupported")
            dtype = dtype_from_enum(e.dtype, where)
            shape = shape_from_proto(e.shape, where)
            if shape is None or any(d < 0 for d in shape):
                raise TFFormatError(f"{where} has an unknown shape")
            if not 0 <= e.shard_id < n:
                raise TFFormatError(f"{where} is in shard {e.shard_id} of {n}")
            if e.shard_id not in shard_sizes:
                path = _shard_path(self.prefix, e.shard_id, n)
                try:
                    shard_sizes[e.shard_id] = os.path.getsize(path)
                except OSError:
                    raise TFFormatError(f"{where}: data file {path} is missing") from None
            if e.offset < 0 or e.size < 0 or e.offset + e.size > shard_sizes[e.shard_id]:
                raise TFFormatError(f"{where}: bytes [{e.offset}, +{e.size}) beyond its data file")
            count = int(np.prod(shape, dtype=np.float64)) if shape else 1
            if dtype is dtypes.string:
                if count > BundleLimits.max_string_elements or e.size < count + 4:
                    raise TFFormatError(f"{where}: {count} strings cannot fit in {e.size} bytes")
            elif count * dtype.size != e.size:
                raise TFFormatError(
                    f"{where}: {dtype.name} {shape} needs {count * dtype.size} bytes, "
                    f"the index says {e.size}"
                )
            self._entries[name] = e
            self._shapes[name] = shape
            self._dtypes[name] = dtype

    def names(self) -> list[str]:
        return list(self._entries)

    def nbytes(self, name: str) -> int:
        """Bytes the tensor takes in its data file."""
        return int(self._entries[name].size)

    def has_tensor(self, name: str) -> bool:
        return name in self._entries

    def dtype(self, name: str) -> dtypes.DType:
        return self._dtypes[name]

    def shape(self, name: str) -> list[int]:
        return list(self._shapes[name])

    def _bytes(self, name: str) -> bytes:
        e = self._entries[name]
        path = _shard_path(self.prefix, e.shard_id, self.header.num_shards)
        with open(path, "rb") as f:
            f.seek(e.offset)
            data = f.read(e.size)
        if len(data) != e.size:
            raise TFFormatError(f"{path}: truncated while reading {name!r}")
        if self.verify and e.dtype != 7 and masked_crc32c(data) != e.crc32c:
            raise TFFormatError(f"{path}: checksum mismatch for tensor {name!r} (data corrupted)")
        return data

    def read(self, name: str) -> np.ndarray:
        """The value of tensor ``name`` (KeyError when absent)."""
        if name not in self._entries:
            raise KeyError(name)
        dtype, shape = self._dtypes[name], self._shapes[name]
        data = self._bytes(name)
        where = f"{self.prefix}: tensor {name!r}"
        if dtype is dtypes.string:
            count = int(np.prod(shape)) if shape else 1
            lengths, pos = [], 0
            for _ in range(count):
                n, pos = _varint(data, pos, len(data), where)
                lengths.append(n)
            if pos + 4 + sum(lengths) != len(data):
                raise TFFormatError(f"{where}: string lengths do not add up to its size")
            (stored,) = struct.unpack_from("<I", data, pos)
            pos += 4
            out = np.empty(count, dtype=object)
            for i, n in enumerate(lengths):
                out[i] = data[pos : pos + n]
                pos += n
            if self.verify:
                length_sum, entry_sum = _string_checksums(lengths, list(out))
                if length_sum != stored or entry_sum != self._entries[name].crc32c:
                    raise TFFormatError(f"{where}: checksum mismatch (data corrupted)")
            return out.reshape(shape)
        arr = np.frombuffer(data, dtype=dtype.np.newbyteorder("<")).astype(dtype.np)
        return arr.reshape(shape)


def _string_bytes(arr: np.ndarray) -> tuple[bytes, int]:
    items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in arr.reshape(-1)]
    lengths = bytearray()
    for v in items:
        _put_varint(lengths, len(v))
    length_sum, entry_sum = _string_checksums([len(v) for v in items], items)
    return bytes(lengths) + struct.pack("<I", length_sum) + b"".join(items), entry_sum


def write_bundle(prefix: str, tensors) -> None:
    """Writes ``tensors`` (name -> array, or (name, array) pairs) as a one-shard TF bundle."""
    prefix = os.fspath(prefix)
    items = sorted(dict(tensors).items())
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    data_path = _shard_path(prefix, 0, 1)
    entries = []
    offset = 0
    with open(data_path + ".tmp", "wb") as f:
        for name, value in items:
            arr = np.asarray(value)
            if arr.dtype.kind in "OUS":
                dtype = dtypes.string
                payload, crc = _string_bytes(arr)
            else:
                dtype = dtypes.as_dtype(arr.dtype)
                payload = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
                crc = masked_crc32c(payload)
            f.write(payload)
            e = tensor_bundle_pb2.BundleEntryProto(
                dtype=dtype.as_datatype_enum,
                shard_id=0,
                offset=offset,
                size=len(payload),
                crc32c=crc,
            )
            e.shape.CopyFrom(shape_to_proto(arr.shape))
            entries.append((name.encode("utf-8"), e.SerializeToString()))
            offset += len(payload)
    header = tensor_bundle_pb2.BundleHeaderProto(
        num_shards=1,
        endianness=tensor_bundle_pb2.BundleHeaderProto.LITTLE,
        version=versions_pb2.VersionDef(producer=1),
    )
    os.replace(data_path + ".tmp", data_path)
    write_table(prefix + ".index", [(b"", header.SerializeToString())] + entries)
