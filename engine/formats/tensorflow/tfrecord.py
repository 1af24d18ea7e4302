"""TFRecord files: TensorFlow's framing of a sequence of byte records.

Each record is ``uint64 length`` (little-endian), ``uint32 masked_crc32c(length bytes)``,
``length`` bytes of data and ``uint32 masked_crc32c(data)``. ``read_records`` checks both
checksums and bounds the record count, each record's size and the file's size before reading
anything large, so a damaged or hostile file is an error naming the record, never a huge
allocation. GZIP/ZLIB-compressed files (TFRecordWriter's options) are read and written with
``compression=``: the stream is inflated with the same byte bound before records are parsed.
"""

from __future__ import annotations

import os
import struct
import zlib

from engine.formats.tensorflow.checkpoint import masked_crc32c
from engine.formats.tensorflow.tensors import TFFormatError

__all__ = [
    "COMPRESSIONS",
    "TFRecordLimits",
    "compressor",
    "decode_records",
    "encode_record",
    "iter_records",
    "read_records",
    "read_file_bytes",
    "write_records",
]

# compression name -> zlib window bits (GZIP: a gzip header; ZLIB: a zlib header)
COMPRESSIONS = {"GZIP": 16 + zlib.MAX_WBITS, "ZLIB": zlib.MAX_WBITS}

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


class TFRecordLimits:
    """Bounds on what ``read_records`` accepts."""

    max_records = 1 << 16
    max_record_bytes = 64 << 20
    max_file_bytes = 256 << 20


def encode_record(data: bytes) -> bytes:
    """One framed record."""
    length = struct.pack("<Q", len(data))
    return length + _FOOTER.pack(masked_crc32c(length)) + data + _FOOTER.pack(masked_crc32c(data))


def _check_compression(compression: str) -> str:
    if compression not in ("", *COMPRESSIONS):
        raise ValueError(f"compression must be '', 'GZIP' or 'ZLIB', got {compression!r}")
    return compression


def compressor(compression: str, level: int = -1):
    """A zlib compress object for ``compression`` ('GZIP' or 'ZLIB'), with TensorFlow's
    settings (deflate, memory level 9), so the bytes match what TF writes."""
    return zlib.compressobj(level, zlib.DEFLATED, COMPRESSIONS[compression], 9)


def write_records(path: str | os.PathLike, records, compression: str = "") -> None:
    """Writes ``records`` (bytes each) as a TFRecord file, compressed with ``compression``
    ('', 'GZIP' or 'ZLIB')."""
    _check_compression(compression)
    z = compressor(compression) if compression else None
    with open(path, "wb") as f:
        for data in records:
            framed = encode_record(bytes(data))
            f.write(z.compress(framed) if z else framed)
        if z:
            f.write(z.flush())


def read_file_bytes(
    path: str | os.PathLike, compression: str = "", max_bytes: int = TFRecordLimits.max_file_bytes
) -> bytes:
    """The contents of ``path``, inflated when ``compression`` is 'GZIP' or 'ZLIB';
    TFFormatError past ``max_bytes`` (before or after inflating) or on a bad stream."""
    _check_compression(compression)
    size = os.path.getsize(path)
    if size > max_bytes:
        raise TFFormatError(f"{path}: {size} bytes, over the {max_bytes}-byte limit")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if not compression:
        return data
    z = zlib.decompressobj(COMPRESSIONS[compression])
    try:
        out = z.decompress(data, max_bytes + 1)
    except zlib.error as e:
        raise TFFormatError(f"{path}: not a valid {compression} stream ({e})") from None
    if len(out) > max_bytes:
        raise TFFormatError(f"{path}: inflates past the {max_bytes}-byte limit")
    if not z.eof:
        raise TFFormatError(f"{path}: truncated {compression} stream")
    return out


def read_records(
    path: str | os.PathLike,
    *,
    max_records: int = TFRecordLimits.max_records,
    max_record_bytes: int = TFRecordLimits.max_record_bytes,
    max_file_bytes: int = TFRecordLimits.max_file_bytes,
    compression: str = "",
) -> list[bytes]:
    """The records of the TFRecord file at ``path``; TFFormatError on a truncated record, a
    checksum mismatch or a bound exceeded (the message names the record and the offset)."""
    data = read_file_bytes(path, compression, max_file_bytes)
    return decode_records(data, path, max_records=max_records, max_record_bytes=max_record_bytes)


def decode_records(
    data: bytes,
    path: str | os.PathLike = "<bytes>",
    *,
    max_records: int = TFRecordLimits.max_records,
    max_record_bytes: int = TFRecordLimits.max_record_bytes,
) -> list[bytes]:
    """The records framed in ``data`` (an uncompressed TFRecord file's bytes)."""
    return list(
        iter_records(data, path, max_records=max_records, max_record_bytes=max_record_bytes)
    )


def iter_records(
    data: bytes,
    path: str | os.PathLike = "<bytes>",
    *,
    max_records: int = TFRecordLimits.max_records,
    max_record_bytes: int = TFRecordLimits.max_record_bytes,
):
    """``decode_records`` one record at a time: the records before a damaged one are
    yielded before its TFFormatError, as TensorFlow's readers do."""
    count = 0
    offset = 0
    while offset < len(data):
        where = f"{path}: record {count} at offset {offset}"
        if count >= max_records:
            raise TFFormatError(f"{path}: more than {max_records} records")
        if offset + _HEADER.size > len(data):
            raise TFFormatError(f"{where}: truncated header")
        length, length_crc = _HEADER.unpack_from(data, offset)
        if masked_crc32c(data[offset : offset + 8]) != length_crc:
            raise TFFormatError(f"{where}: corrupted record length (checksum mismatch)")
        if length > max_record_bytes:
            raise TFFormatError(
                f"{where}: {length} bytes, over the {max_record_bytes}-byte record limit"
            )
        start = offset + _HEADER.size
        end = start + length
        if end + _FOOTER.size > len(data):
            raise TFFormatError(f"{where}: truncated record ({length} bytes announced)")
        record = data[start:end]
        (data_crc,) = _FOOTER.unpack_from(data, end)
        if masked_crc32c(record) != data_crc:
            raise TFFormatError(f"{where}: corrupted record data (checksum mismatch)")
        yield record
        count += 1
        offset = end + _FOOTER.size
