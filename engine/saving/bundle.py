"""Tensor bundles: named arrays on disk as a msgpack index plus one raw data file.

Layout for a prefix ``P``::

    P.index                     msgpack: format name, version, data file name and size,
                                and per tensor: name, dtype, shape, offset, size, crc32
    P.data-00000-of-00001       the tensors' little-endian bytes, each 64-byte aligned

Writing streams each array's buffer to the file; reading fills preallocated arrays with
``readinto`` -- no per-element Python work either way. Strings are stored as a msgpack list of
bytes. Nothing here ever unpickles: files are untrusted input, and every count, shape, offset
and size in the index is checked against limits and against the data before use. A damaged
file raises ``errors.DataLossError`` naming it.
"""

from __future__ import annotations

import os
import zlib

import msgpack
import numpy as np

from engine import dtypes, errors
from engine.formats.tensorflow import checkpoint as tf_checkpoint
from engine.formats.tensorflow.tensors import TFFormatError

__all__ = [
    "write_bundle",
    "read_bundle",
    "read_index",
    "bundle_exists",
    "data_path",
    "index_path",
    "BundleEntry",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Limits",
]

FORMAT_NAME = "flowserve.bundle"
FORMAT_VERSION = 1
_ALIGN = 64
_DATA_SUFFIX = ".data-00000-of-00001"
_LE = "<"


class Limits:
    """Bounds applied when reading files that may be hostile."""

    max_index_bytes = 64 << 20
    max_tensors = 1 << 20
    max_rank = 32
    max_dim = 1 << 40
    max_tensor_bytes = 1 << 40
    max_string_elements = 1 << 27


def index_path(prefix: str) -> str:
    return prefix + ".index"


def data_path(prefix: str) -> str:
    return prefix + _DATA_SUFFIX


def bundle_exists(prefix: str) -> bool:
    if tf_checkpoint.is_tf_bundle(prefix):
        return True
    return os.path.isfile(index_path(prefix)) and os.path.isfile(data_path(prefix))


def _read_tf_index(prefix: str) -> tuple[dict, list[BundleEntry]]:
    """``read_index`` of a TensorFlow bundle (entries carry no offset/crc of this format)."""
    r = _tf_reader(prefix)
    meta = {"format": "tensorflow", "metadata": {}}
    return meta, [
        BundleEntry(n, r.dtype(n), tuple(r.shape(n)), None, r.nbytes(n), None) for n in r.names()
    ]


def _tf_reader(prefix: str, verify: bool = True):
    """A reader for a bundle TensorFlow wrote (its index is a table, not msgpack)."""
    try:
        return tf_checkpoint.BundleReader(prefix, verify=verify)
    except TFFormatError as e:
        raise errors.DataLossError(None, None, str(e)) from None


class BundleEntry:
    __slots__ = ("name", "dtype", "shape", "offset", "size", "crc32")

    def __init__(self, name, dtype, shape, offset, size, crc32):
        self.name, self.dtype, self.shape = name, dtype, shape
        self.offset, self.size, self.crc32 = offset, size, crc32

    def __repr__(self) -> str:
        return f"BundleEntry({self.name!r}, {self.dtype.name}, {list(self.shape)})"


# -----------------------------------------------------------------------------------------
# Writing
# -----------------------------------------------------------------------------------------


def _string_payload(arr: np.ndarray) -> bytes:
    items = []
    for v in arr.reshape(-1):
        if isinstance(v, str):
            v = v.encode("utf-8")
        if not isinstance(v, (bytes, bytearray)):
            raise TypeError(f"string tensor element {v!r} is not bytes")
        items.append(bytes(v))
    return msgpack.packb(items, use_bin_type=True)


def write_bundle(prefix: str, tensors, metadata: dict | None = None) -> None:
    """Writes ``tensors`` (an iterable of (name, array)) as a bundle at ``prefix``.

    Files are written under temporary names and renamed into place, so a crash never leaves a
    half-written bundle under the final name.
    """
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    data_final = data_path(prefix)
    index_final = index_path(prefix)
    data_tmp = data_final + ".tmp"
    index_tmp = index_final + ".tmp"
    entries = []
    names = set()
    offset = 0
    try:
        with open(data_tmp, "wb") as f:
            for name, value in tensors:
                if not isinstance(name, str) or not name:
                    raise ValueError(f"Tensor names must be non-empty strings, got {name!r}")
                if name in names:
                    raise ValueError(f"Duplicate tensor name {name!r} in bundle")
                names.add(name)
                arr = np.asarray(value)
                dtype = dtypes.as_dtype(arr.dtype) if arr.dtype.kind not in "OUS" else dtypes.string
                pad = (-offset) % _ALIGN
                if pad:
                    f.write(b"\0" * pad)
                    offset += pad
                if dtype is dtypes.string:
                    payload = _string_payload(arr)
                    f.write(payload)
                    size, crc = len(payload), zlib.crc32(payload)
                else:
                    le = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder(_LE))
                    view = memoryview(le).cast("B") if le.size else memoryview(b"")
                    f.write(view)
                    size, crc = le.nbytes, zlib.crc32(view)
                entries.append(
                    {
                        "name": name,
                        "dtype": dtype.name,
                        "shape": list(arr.shape),
                        "offset": offset,
                        "size": size,
                        "crc32": crc,
                    }
                )
                offset += size
            f.flush()
            os.fsync(f.fileno())
        index = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "data_file": os.path.basename(data_final),
            "data_size": offset,
            "tensors": entries,
            "metadata": metadata or {},
        }
        with open(index_tmp, "wb") as f:
            f.write(msgpack.packb(index, use_bin_type=True))
            f.flush()
            os.fsync(f.fileno())
        os.replace(data_tmp, data_final)
        os.replace(index_tmp, index_final)
    except BaseException:
        for p in (data_tmp, index_tmp):
            try:
                os.remove(p)
            except OSError:
                pass
        raise


# -----------------------------------------------------------------------------------------
# Reading
# -----------------------------------------------------------------------------------------


def _loss(path: str, what: str) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"Corrupted or unsupported bundle {path}: {what}")


def _unpack_limited(raw: bytes, path: str):
    try:
        return msgpack.unpackb(
            raw,
            raw=False,
            strict_map_key=True,
            use_list=True,
            max_str_len=1 << 20,
            max_bin_len=len(raw),
            max_array_len=Limits.max_tensors,
            max_map_len=Limits.max_tensors,
            max_ext_len=0,
        )
    except (
        ValueError,
        msgpack.ExtraData,
        msgpack.FormatError,
        msgpack.StackError,
        TypeError,
        UnicodeDecodeError,
    ) as e:
        raise _loss(
            path,
            f"index is neither a TensorFlow checkpoint index (no table magic number at its "
            f"end) nor valid flowserve msgpack ({e})",
        ) from None


def _int(v, path, what, lo=0, hi=None):
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
        raise _loss(path, f"{what} must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def read_index(prefix: str) -> tuple[dict, list[BundleEntry]]:
    """The bundle's metadata and entries, validated; DataLossError if damaged. TensorFlow's
    V2 checkpoints are read too (entries then have no offset/crc of this format)."""
    path = index_path(prefix)
    if tf_checkpoint.is_tf_bundle(prefix):
        return _read_tf_index(prefix)
    try:
        size = os.path.getsize(path)
        if size > Limits.max_index_bytes:
            raise _loss(path, f"index is {size} bytes, over the {Limits.max_index_bytes} limit")
        with open(path, "rb") as f:
            # read(n) allocates n bytes up front: ask for what the file holds, not the limit
            raw = f.read(size + 1)
        if len(raw) > size:
            raise _loss(path, "index changed while it was read")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"No bundle index at {path}") from None
    except OSError as e:
        raise errors.DataLossError(None, None, f"Cannot read {path}: {e}") from None
    doc = _unpack_limited(raw, path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise _loss(path, f"not a {FORMAT_NAME} index")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _loss(path, "missing format version")
    if version > FORMAT_VERSION:
        raise errors.DataLossError(
            None,
            None,
            f"{path} has bundle format version {version}, "
            f"newer than the supported {FORMAT_VERSION}; "
            "upgrade flowserve to read it",
        )
    data_file = doc.get("data_file")
    if data_file != os.path.basename(data_path(prefix)):
        raise _loss(path, f"unexpected data file name {data_file!r}")
    data_size = _int(doc.get("data_size"), path, "data_size", 0, Limits.max_tensor_bytes)
    tensors = doc.get("tensors")
    if not isinstance(tensors, list) or len(tensors) > Limits.max_tensors:
        raise _loss(path, "tensors must be a list")
    entries = []
    seen = set()
    for i, t in enumerate(tensors):
        if not isinstance(t, dict):
            raise _loss(path, f"tensor entry {i} is not a map")
        name = t.get("name")
        if not isinstance(name, str) or not name or name in seen:
            raise _loss(path, f"tensor entry {i} has a missing or duplicate name")
        seen.add(name)
        try:
            dtype = dtypes.as_dtype(t.get("dtype")) if isinstance(t.get("dtype"), str) else None
        except TypeError:
            dtype = None
        if dtype is None or dtype not in dtypes.ALL_VALUE_TYPES:
            raise _loss(path, f"tensor {name!r} has unsupported dtype {t.get('dtype')!r}")
        shape = t.get("shape")
        if not isinstance(shape, list) or len(shape) > Limits.max_rank:
            raise _loss(path, f"tensor {name!r} has an invalid shape")
        shape = tuple(_int(d, path, f"dimension of {name!r}", 0, Limits.max_dim) for d in shape)
        offset = _int(t.get("offset"), path, f"offset of {name!r}", 0, data_size)
        nbytes = _int(t.get("size"), path, f"size of {name!r}", 0, data_size - offset)
        crc = _int(t.get("crc32"), path, f"crc32 of {name!r}", 0, 0xFFFFFFFF)
        count = 1
        for d in shape:
            count *= d
        if dtype is dtypes.string:
            if count > Limits.max_string_elements:
                raise _loss(path, f"string tensor {name!r} has too many elements")
        elif count * dtype.size != nbytes:
            raise _loss(
                path,
                f"tensor {name!r} of dtype {dtype.name} and shape {list(shape)} "
                f"needs {count * dtype.size} bytes, index says {nbytes}",
            )
        entries.append(BundleEntry(name, dtype, shape, offset, nbytes, crc))
    metadata = doc.get("metadata", {})
    if not isinstance(metadata, dict):
        raise _loss(path, "metadata must be a map")
    metadata["_data_size"] = data_size
    return metadata, entries


def _read_entry(f, entry: BundleEntry, path: str, verify: bool):
    f.seek(entry.offset)
    if entry.dtype is dtypes.string:
        payload = f.read(entry.size)
        if len(payload) != entry.size:
            raise _loss(path, f"tensor {entry.name!r} is truncated")
        if verify and zlib.crc32(payload) != entry.crc32:
            raise _loss(path, f"checksum mismatch for tensor {entry.name!r}")
        try:
            items = msgpack.unpackb(
                payload,
                raw=True,
                max_bin_len=entry.size,
                max_str_len=entry.size,
                max_array_len=Limits.max_string_elements,
                max_map_len=0,
                max_ext_len=0,
            )
        except (
            ValueError,
            msgpack.ExtraData,
            msgpack.FormatError,
            msgpack.StackError,
            TypeError,
        ) as e:
            raise _loss(path, f"string tensor {entry.name!r} is not valid ({e})") from None
        count = 1
        for d in entry.shape:
            count *= d
        if (
            not isinstance(items, list)
            or len(items) != count
            or not all(isinstance(v, bytes) for v in items)
        ):
            raise _loss(path, f"string tensor {entry.name!r} does not hold {count} byte strings")
        arr = np.empty(count, dtype=object)
        arr[:] = items
        return arr.reshape(entry.shape)
    native = entry.dtype.np
    arr = np.empty(entry.shape, dtype=native.newbyteorder(_LE))
    if entry.size:
        n = f.readinto(memoryview(arr).cast("B"))
        if n != entry.size:
            raise _loss(path, f"tensor {entry.name!r} is truncated ({n} of {entry.size} bytes)")
        if verify and zlib.crc32(memoryview(arr).cast("B")) != entry.crc32:
            raise _loss(path, f"checksum mismatch for tensor {entry.name!r}")
    elif verify and entry.crc32 != 0:
        raise _loss(path, f"checksum mismatch for tensor {entry.name!r}")
    if arr.dtype != native:
        arr = arr.astype(native)
    return arr


def read_bundle(prefix: str, names=None, verify: bool = True) -> dict[str, np.ndarray]:
    """Reads the bundle at ``prefix`` (all tensors, or just ``names``) into numpy arrays."""
    if tf_checkpoint.is_tf_bundle(prefix):
        r = _tf_reader(prefix, verify)
        wanted = r.names() if names is None else list(names)
        try:
            return {n: r.read(n) for n in wanted}
        except KeyError as e:
            raise errors.NotFoundError(None, None, f"{prefix}: no tensor {e}") from None
        except TFFormatError as e:
            raise errors.DataLossError(None, None, str(e)) from None
    metadata, entries = read_index(prefix)
    path = data_path(prefix)
    wanted = None if names is None else set(names)
    try:
        actual = os.path.getsize(path)
    except FileNotFoundError:
        raise errors.DataLossError(None, None, f"Bundle data file {path} is missing") from None
    expected = metadata["_data_size"]
    if actual != expected:
        # Checked before reading anything: a truncated file, or one grown past what its index
        # describes (e.g. a huge sparse file), is refused without reading its contents.
        why = "truncated" if actual < expected else "larger than its index declares"
        raise _loss(path, f"data file is {actual} bytes, index expects {expected} ({why})")
    out = {}
    try:
        f = open(path, "rb")
    except OSError as e:
        raise errors.DataLossError(None, None, f"Cannot read {path}: {e}") from None
    with f:
        for e in entries:
            if wanted is None or e.name in wanted:
                out[e.name] = _read_entry(f, e, path, verify)
    return out
