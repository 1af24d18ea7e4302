"""TF1's ``tf.python_io`` (and ``tf.io``'s TFRecord names): writing and reading TFRecord
files from Python, uncompressed or GZIP/ZLIB-compressed, byte for byte as TensorFlow does.

>>> with tf.python_io.TFRecordWriter("data.tfrecord", "GZIP") as w:
...     w.write(example.SerializeToString())
>>> records = list(tf.python_io.tf_record_iterator("data.tfrecord", "GZIP"))

The framing and the bounds on what is read live in ``engine.formats.tensorflow.tfrecord``;
a damaged file raises ``DataLossError`` naming the record, as TensorFlow's iterator does.
"""

from __future__ import annotations

import os
import zlib

from engine import errors
from engine.formats.tensorflow import tfrecord
from engine.formats.tensorflow.tensors import TFFormatError

__all__ = [
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "tf_record_iterator",
]


class TFRecordCompressionType:
    """The compression of a TFRecord file."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_TYPE_NAMES = {
    TFRecordCompressionType.NONE: "",
    TFRecordCompressionType.ZLIB: "ZLIB",
    TFRecordCompressionType.GZIP: "GZIP",
}


class TFRecordOptions:
    """How a TFRecord file is compressed: ``compression_type`` is a
    ``TFRecordCompressionType`` or one of '', 'ZLIB', 'GZIP' (None: uncompressed);
    ``compression_level`` 0-9 (None: zlib's default). The other zlib tuning arguments of
    TensorFlow are accepted and, when given, must be TensorFlow's defaults."""

    compression_type_map = {"ZLIB": 1, "GZIP": 2, "": 0}

    def __init__(
        self,
        compression_type=None,
        flush_mode=None,
        input_buffer_size=None,
        output_buffer_size=None,
        window_bits=None,
        compression_level=None,
        compression_method=None,
        mem_level=None,
        compression_strategy=None,
    ):
        if isinstance(compression_type, TFRecordOptions):
            compression_type = compression_type.compression_type
        self.compression_type = _compression_name(compression_type)
        if compression_level is not None and not -1 <= int(compression_level) <= 9:
            raise ValueError(f"compression_level must be in [-1, 9], got {compression_level}")
        for name, value, default in (
            ("window_bits", window_bits, 15),
            ("compression_method", compression_method, 8),
            ("mem_level", mem_level, 9),
            ("compression_strategy", compression_strategy, 0),
        ):
            if value is not None and value != default:
                raise errors.UnimplementedError(
                    None, None, f"TFRecordOptions {name}={value}: only {default} is supported"
                )
        del flush_mode, input_buffer_size, output_buffer_size  # buffering only
        self.compression_level = -1 if compression_level is None else int(compression_level)

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        """'', 'ZLIB' or 'GZIP' for ``options`` (TFRecordOptions, a type or a string)."""
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return _compression_name(options)


def _compression_name(value) -> str:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool) and value in _TYPE_NAMES:
        return _TYPE_NAMES[value]
    if isinstance(value, str) and value in TFRecordOptions.compression_type_map:
        return value
    raise ValueError(
        f"Not a valid compression_type: {value!r} (expected None, '', 'ZLIB', 'GZIP' or a "
        "TFRecordCompressionType)"
    )


def _options(options) -> TFRecordOptions:
    return options if isinstance(options, TFRecordOptions) else TFRecordOptions(options)


class TFRecordWriter:
    """Writes records (bytes) to a TFRecord file; a context manager that closes it."""

    def __init__(self, path, options=None):
        opts = _options(options)
        self._compression = opts.compression_type
        self._z = (
            tfrecord.compressor(self._compression, opts.compression_level)
            if self._compression
            else None
        )
        try:
            self._file = open(os.fspath(path), "wb")  # noqa: SIM115 - closed by close()
        except OSError as e:
            raise errors.NotFoundError(None, None, f"{path}: {e.strerror}") from None

    def write(self, record) -> None:
        """Appends one record (``bytes``; a ``str`` is written as UTF-8)."""
        if self._file is None:
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        if isinstance(record, str):
            record = record.encode("utf-8")
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"write expects bytes, got {type(record).__name__}")
        framed = tfrecord.encode_record(bytes(record))
        self._file.write(self._z.compress(framed) if self._z else framed)

    def flush(self) -> None:
        """Pushes what was written so far to the file (a full flush when compressed)."""
        if self._file is None:
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        if self._z:
            self._file.write(self._z.flush(zlib.Z_FULL_FLUSH))
        self._file.flush()

    def close(self) -> None:
        """Finishes the compressed stream and closes the file; closing twice is allowed."""
        if self._file is None:
            return
        if self._z:
            self._file.write(self._z.flush())
        self._file.close()
        self._file = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tf_record_iterator(path, options=None):
    """An iterator over the records of a TFRecord file (bytes each). A missing file raises
    ``NotFoundError`` at the call; a damaged record ``DataLossError`` naming it, once the
    records before it have been returned."""
    compression = TFRecordOptions.get_compression_type_string(options)
    if not os.path.exists(path):
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory")
    try:
        data = tfrecord.read_file_bytes(path, compression)
    except TFFormatError as e:
        raise errors.DataLossError(None, None, str(e)) from None
    return _records(data, path)


def _records(data: bytes, path):
    # Every record takes at least 16 bytes of framing: the file size bounds the count.
    try:
        yield from tfrecord.iter_records(data, path, max_records=len(data) // 16 + 1)
    except TFFormatError as e:
        raise errors.DataLossError(None, None, str(e)) from None
