"""The file side of TF1's readers (``engine/reader_ops.py``): files streamed in bounded
chunks with GZIP/ZLIB inflated on the way (``Stream``), the string arrays the reader ops
return, and the ``ReaderBaseState`` proto bytes of ``SerializeState``/``RestoreState``
(written and parsed here, field by field, as TF's)."""

from __future__ import annotations

import re
import zlib

import numpy as np

from engine import errors
from engine.file_io import GFile
from engine.formats.tensorflow import tfrecord

CHUNK = 64 << 10  # bytes read from a file at a time


def string_scalar(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def string_vector(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def over_limit(what: str, size: int, limit: int) -> errors.ResourceExhaustedError:
    return errors.ResourceExhaustedError(
        None, None, f"{what}: {size} bytes, over the {limit}-byte limit"
    )


# -- streams -------------------------------------------------------------------------------


def inflate_error(e: zlib.error) -> errors.DataLossError:
    """zlib's complaint in TF's words: ``inflate() failed with error -3: <zlib's text>``."""
    m = re.match(r"Error (-?\d+) while decompressing data: (.*)", str(e))
    text = f"inflate() failed with error {m[1]}: {m[2]}" if m else f"inflate() failed: {e}"
    return errors.DataLossError(None, None, text)


class Stream:
    """A file's bytes read forward in chunks of ``CHUNK``, inflated when ``compression`` is
    'GZIP' or 'ZLIB'. ``offset`` counts the (inflated) bytes consumed; the buffer holds at
    most what the current request needs plus a chunk."""

    def __init__(self, path: bytes, compression: str = ""):
        self.compression = compression
        self._file = GFile(path, "rb")
        self._file.tell()  # opens it now: a missing file is NotFoundError naming it
        self._restart()

    def _restart(self) -> None:
        self._file.seek(0)
        mode = tfrecord.COMPRESSIONS.get(self.compression)
        self._z = zlib.decompressobj(mode) if mode else None
        self._buf = bytearray()
        self._pos = 0  # the first unconsumed byte of _buf
        self.offset = 0

    @property
    def short_read(self) -> str:
        """TF's words for data that ended early."""
        return "EOF reached" if self._z else "Read less bytes than requested"

    def _fill(self) -> bool:
        """Appends up to a chunk to the buffer; False at the end of the data (a truncated
        compressed stream ends where its bytes end, as TF's ``ZlibInputStream``)."""
        if self._z is None:
            data = self._file.read(CHUNK)
        else:
            data = b""
            while not data and not self._z.eof:
                source = self._z.unconsumed_tail or self._file.read(CHUNK)
                if not source:
                    break
                try:
                    data = self._z.decompress(source, CHUNK)
                except zlib.error as e:
                    raise inflate_error(e) from None
        if not data:
            return False
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data
        return True

    def _available(self) -> int:
        return len(self._buf) - self._pos

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes, fewer at the end of the data."""
        while self._available() < n and self._fill():
            pass
        out = bytes(self._buf[self._pos : self._pos + n])
        self._pos += len(out)
        self.offset += len(out)
        return out

    def skip(self, n: int) -> int:
        """Drops the next ``n`` bytes without holding them; how many there were."""
        done = 0
        while done < n and (self._available() or self._fill()):
            k = min(self._available(), n - done)
            self._pos += k
            done += k
        self.offset += done
        return done

    def seek(self, offset: int) -> None:
        """Moves to ``offset`` (a compressed stream is inflated again from its start to go
        back, as TF's ``RecordReader`` does)."""
        if offset == self.offset:
            return
        if self._z is None:
            self._file.seek(offset)
            self._buf, self._pos, self.offset = bytearray(), 0, offset
            return
        if offset < self.offset:
            self._restart()
        self.skip(offset - self.offset)

    def readline(self, limit: int) -> bytes | None:
        """The next line without its newline (nor one carriage return before it); None at
        the end, as TF's ``InputBuffer::ReadLine``: a last line without a newline counts
        unless it is empty (or only a carriage return)."""
        scanned = 0  # bytes after _pos known to hold no newline
        while True:
            i = self._buf.find(b"\n", self._pos + scanned)
            if i >= 0:
                line, used, ended = bytes(self._buf[self._pos : i]), i + 1 - self._pos, False
                break
            scanned = self._available()
            if scanned > limit:
                raise over_limit(f"line at offset {self.offset}", scanned, limit)
            if not self._fill():
                line, used, ended = bytes(self._buf[self._pos :]), self._available(), True
                break
        if len(line) > limit:
            raise over_limit(f"line at offset {self.offset}", len(line), limit)
        self._pos += used
        self.offset += used
        if line.endswith(b"\r"):
            line = line[:-1]
        return None if ended and not line else line

    def close(self) -> None:
        self._file.close()


# -- the reader base: work items, counters, state -------------------------------------------

_STATE_FIELDS = ("work_started", "work_finished", "num_records_produced", "current_work")


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 as protobuf writes it: two's complement, ten bytes if < 0
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while shift < 70:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise ValueError("overlong varint")


def encode_state(work_started, work_finished, num_records_produced, current_work) -> bytes:
    """A ``ReaderBaseState`` proto (proto3: fields at their default are left out)."""
    out = bytearray()
    for field, value in enumerate((work_started, work_finished, num_records_produced), 1):
        if value:
            out += varint(field << 3) + varint(value)
    if current_work:
        out += varint(4 << 3 | 2) + varint(len(current_work)) + current_work
    return bytes(out)


def decode_state(data: bytes) -> dict:
    """The fields of a ``ReaderBaseState`` proto; ValueError when it does not parse (unknown
    fields are skipped, as protobuf does)."""
    state = {"work_started": 0, "work_finished": 0, "num_records_produced": 0, "current_work": b""}
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = read_varint(data, pos)
            if field <= 3:
                state[_STATE_FIELDS[field - 1]] = value - (1 << 64) if value >> 63 else value
        elif wire == 2:
            size, pos = read_varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field")
            if field == 4:
                state["current_work"] = data[pos : pos + size]
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > len(data):
                raise ValueError("truncated field")
        else:
            raise ValueError(f"wire type {wire}")
    return state


def c_escape(data: bytes) -> str:
    """``absl::CEscape``: printable ASCII as is, the usual escapes, octal for the rest."""
    named = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x27: "\\'", 0x5C: "\\\\"}
    return "".join(
        named.get(b) or (chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}") for b in bytes(data)
    )


def short_debug_string(state: dict) -> str:
    """The state as protobuf's ``ShortDebugString`` writes it."""
    parts = [f"{k}: {state[k]}" for k in _STATE_FIELDS[:3] if state[k]]
    if state["current_work"]:
        parts.append(f'current_work: "{c_escape(state["current_work"])}"')
    return " ".join(parts)
