"""TFRecord files: TensorFlow's framing of a sequence of byte records.

Each record is ``uint64 length`` (little-endian), ``uint32 masked_crc32c(length bytes)``,
``length`` bytes of data and ``uint32 masked_crc32c(data)``. ``read_records`` checks both
checksums and bounds the record count, each record's size and the file's size before reading
anything large, so a damaged or hostile file is an error naming the record, never a huge
allocation. Compressed (GZIP/ZLIB) TFRecord files are not read.
"""

from __future__ import annotations

import os
import struct

from engine.formats.tensorflow.checkpoint import masked_crc32c
from engine.formats.tensorflow.tensors import TFFormatError

__all__ = ["TFRecordLimits", "read_records", "encode_record", "write_records"]

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


def write_records(path: str | os.PathLike, records) -> None:
    """Writes ``records`` (bytes each) as an uncompressed TFRecord file."""
    with open(path, "wb") as f:
        for data in records:
            f.write(encode_record(bytes(data)))


def read_records(
    path: str | os.PathLike,
    *,
    max_records: int = TFRecordLimits.max_records,
    max_record_bytes: int = TFRecordLimits.max_record_bytes,
    max_file_bytes: int = TFRecordLimits.max_file_bytes,
) -> list[bytes]:
    """The records of the TFRecord file at ``path``; TFFormatError on a truncated record, a
    checksum mismatch or a bound exceeded (the message names the record and the offset)."""
    size = os.path.getsize(path)
    if size > max_file_bytes:
        raise TFFormatError(f"{path}: {size} bytes, over the {max_file_bytes}-byte limit")
    with open(path, "rb") as f:
        data = f.read(max_file_bytes + 1)
    records: list[bytes] = []
    offset = 0
    while offset < len(data):
        where = f"{path}: record {len(records)} at offset {offset}"
        if len(records) >= max_records:
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
        records.append(record)
        offset = end + _FOOTER.size
    return records
