"""``tf.data``'s file datasets: ``TFRecordDataset``, ``TextLineDataset`` and
``FixedLengthRecordDataset``, each a ``Dataset`` of scalar strings (see
``engine/file_dataset_ops.py`` for how files are read)::

    ds = tf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord"], compression_type="GZIP")
    ds = ds.map(lambda s: tf.parse_single_example(s, features)).batch(32)
"""

from __future__ import annotations

from engine import (
    dtypes,
    file_dataset_ops,  # noqa: F401 - registers the ops
)
from engine.data import Dataset
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.ops._common import create
from engine.tensor_shape import TensorShape

__all__ = ["FixedLengthRecordDataset", "TFRecordDataset", "TextLineDataset"]

_DEFAULT_BUFFER = 256 * 1024  # bytes; reads are whole files here, so it changes nothing


def _int64(value, default=0):
    return convert_to_tensor(default if value is None else value, dtype=dtypes.int64)


class _FileDataset(Dataset):
    """A dataset of scalar strings from the op ``op_type`` over ``inputs``."""

    def __init__(self, op_type: str, inputs: list):
        o = create(op_type, inputs, {}, op_type)
        super().__init__(o.outputs[0], dtypes.string, [dtypes.string], [TensorShape([])])


def _names_and_compression(filenames, compression_type):
    names = convert_to_tensor(filenames, dtype=dtypes.string)
    if names.shape.rank is not None and names.shape.rank > 1:
        raise ValueError(f"filenames must be a scalar or a vector, got shape {names.shape}")
    return names, convert_to_tensor(compression_type or "", dtype=dtypes.string)


class TFRecordDataset(_FileDataset):
    """The records of TFRecord files, in order (``compression_type`` '', 'GZIP' or 'ZLIB')."""

    def __init__(
        self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None
    ):
        del num_parallel_reads  # files are read in order, one at a time
        with name_scope(name, "TFRecordDataset"):
            names, compression = _names_and_compression(filenames, compression_type)
            buffer = _int64(buffer_size, _DEFAULT_BUFFER)
            super().__init__("TFRecordDataset", [names, compression, buffer])


class TextLineDataset(_FileDataset):
    """The lines of text files, without their ``\\n`` or ``\\r\\n``."""

    def __init__(
        self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None
    ):
        del num_parallel_reads
        with name_scope(name, "TextLineDataset"):
            names, compression = _names_and_compression(filenames, compression_type)
            buffer = _int64(buffer_size, _DEFAULT_BUFFER)
            super().__init__("TextLineDataset", [names, compression, buffer])


class FixedLengthRecordDataset(_FileDataset):
    """Records of ``record_bytes`` bytes from files, skipping ``header_bytes`` at the start
    and ``footer_bytes`` at the end of each."""

    def __init__(
        self,
        filenames,
        record_bytes,
        header_bytes=None,
        footer_bytes=None,
        buffer_size=None,
        compression_type=None,
        num_parallel_reads=None,
        name=None,
    ):
        del num_parallel_reads
        with name_scope(name, "FixedLengthRecordDataset"):
            names, compression = _names_and_compression(filenames, compression_type)
            sizes = [_int64(header_bytes), _int64(record_bytes), _int64(footer_bytes)]
            buffer = _int64(buffer_size, _DEFAULT_BUFFER)
            super().__init__("FixedLengthRecordDatasetV2", [names, *sizes, buffer, compression])
