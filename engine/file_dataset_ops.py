"""File dataset ops: ``TFRecordDataset``, ``TextLineDataset`` and
``FixedLengthRecordDatasetV2``, whose elements are scalar strings read from files.

Files are read one at a time, in order, when a pass reaches them; each is inflated first when
``compression_type`` is 'GZIP' or 'ZLIB', within the byte bound of
``engine.formats.tensorflow.tfrecord.TFRecordLimits`` (a larger file is an error, never a huge
allocation). A missing file raises ``NotFoundError``, a damaged TFRecord ``DataLossError``
and a fixed-length file whose body is not a whole number of records ``InvalidArgumentError``,
as TensorFlow's kernels do, when the iterator reaches it. CPU kernels only.
"""

from __future__ import annotations

import os

import numpy as np

from engine import dtypes, errors
from engine.formats.tensorflow import tfrecord
from engine.formats.tensorflow.tensors import TFFormatError
from engine.framework.registry import OpFlags, ShapeError, op
from engine.ops.dataset_ops import DatasetValue
from engine.tensor_shape import TensorShape

_CPU = OpFlags(device_types=("CPU",))


def _scalar_string(value) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _filenames(value) -> list[str]:
    items = np.asarray(value, dtype=object).reshape(-1)
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in items]


def _compression(value) -> str:
    name = np.asarray(value, dtype=object).reshape(-1)[0]
    name = name.decode("utf-8") if isinstance(name, bytes) else str(name)
    if name not in ("", "GZIP", "ZLIB"):
        raise errors.InvalidArgumentError(
            None, None, f"Unsupported compression_type: {name!r} (expected '', 'GZIP' or 'ZLIB')"
        )
    return name


def _read(path: str, compression: str) -> bytes:
    if not os.path.isfile(path):
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory")
    try:
        return tfrecord.read_file_bytes(path, compression)
    except TFFormatError as e:
        raise errors.DataLossError(None, None, str(e)) from None


class _FileDataset(DatasetValue):
    def __init__(self, filenames, compression):
        self.filenames = _filenames(filenames)
        self.compression = _compression(compression)

    def records(self, path: str, data: bytes):
        raise NotImplementedError

    def iterate(self, state):
        del state  # file datasets keep nothing in the session
        for path in self.filenames:
            for rec in self.records(path, _read(path, self.compression)):
                yield (_scalar_string(rec),)


class _TFRecords(_FileDataset):
    def records(self, path, data):
        try:
            # Every record takes at least 16 bytes of framing: the file size bounds the count.
            yield from tfrecord.iter_records(data, path, max_records=len(data) // 16 + 1)
        except TFFormatError as e:
            raise errors.DataLossError(None, None, str(e)) from None


class _TextLines(_FileDataset):
    def records(self, path, data):
        del path
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()  # the newline ending the last line starts no new line
        return [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]


class _FixedLength(_FileDataset):
    def __init__(self, filenames, header, record, footer, compression):
        super().__init__(filenames, compression)
        self.header, self.record, self.footer = int(header), int(record), int(footer)
        if self.record <= 0 or self.header < 0 or self.footer < 0:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"record_bytes must be > 0 and header/footer bytes >= 0, got record_bytes="
                f"{self.record}, header_bytes={self.header}, footer_bytes={self.footer}",
            )

    def records(self, path, data):
        body = len(data) - self.header - self.footer
        if body < 0 or body % self.record:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Excluding the header ({self.header} bytes) and footer ({self.footer} bytes), "
                f'input file "{path}" has body length {body} bytes, which is not an exact '
                f"multiple of the record length ({self.record} bytes).",
            )
        start = self.header
        return [data[i : i + self.record] for i in range(start, start + body, self.record)]


def _file_infer(o):
    names = o._inputs[0]
    if names._dtype.base_dtype is not dtypes.string:
        raise TypeError(f"{o.type} filenames must be strings, got {names._dtype.name}")
    if names._shape.rank is not None and names._shape.rank > 1:
        raise ShapeError(f"{o.type} filenames must be a scalar or a vector, got {names._shape}")
    return [(dtypes.variant, TensorShape([]))]


op(
    "TFRecordDataset",
    infer=_file_infer,
    inputs=("filenames", "compression_type", "buffer_size"),
    differentiable=False,
    flags=_CPU,
)(lambda xp, names, compression, buffer_size: _TFRecords(names, compression))
op(
    "TextLineDataset",
    infer=_file_infer,
    inputs=("filenames", "compression_type", "buffer_size"),
    differentiable=False,
    flags=_CPU,
)(lambda xp, names, compression, buffer_size: _TextLines(names, compression))
op(
    "FixedLengthRecordDatasetV2",
    infer=_file_infer,
    inputs=(
        "filenames",
        "header_bytes",
        "record_bytes",
        "footer_bytes",
        "buffer_size",
        "compression_type",
    ),
    differentiable=False,
    flags=_CPU,
)(
    lambda xp, names, header, record, footer, buffer_size, compression: _FixedLength(
        names, header, record, footer, compression
    )
)
