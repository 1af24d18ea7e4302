"""TF1's readers: ``tf.ReaderBase``, ``tf.TFRecordReader``, ``tf.TextLineReader``,
``tf.FixedLengthRecordReader``, ``tf.WholeFileReader`` and ``tf.IdentityReader``, as TF 1.15's
``io_ops`` builds them: the same op types, op names, static shapes and errors.

A reader turns work items (file names) taken from a queue into records; its state (the file
in progress, the counts) lives in each session (``engine/reader_ops.py``)::

    filenames = tf.train.string_input_producer(["a.tfrecord", "b.tfrecord"], num_epochs=1)
    key, value = tf.TFRecordReader().read(filenames)   # key: b"a.tfrecord:0"
"""

from __future__ import annotations

from collections import namedtuple

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.ops._common import create
from engine.python_io import TFRecordOptions
from engine.reader_ops import ReaderState  # noqa: F401 - registers the reader op types

__all__ = [
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "FixedLengthRecordReader",
    "WholeFileReader",
    "IdentityReader",
]

ReaderReadV2 = namedtuple("ReaderReadV2", ["key", "value"])
ReaderReadUpToV2 = namedtuple("ReaderReadUpToV2", ["keys", "values"])


def _queue_ref(queue) -> Tensor:
    """A queue's handle: a ``QueueBase``'s ``queue_ref``, or the handle tensor itself."""
    return queue if isinstance(queue, Tensor) else queue.queue_ref


class ReaderBase:
    """What every reader does: produce (key, value) records from the work items of a queue,
    taking the next item when the current one is done (TF1's ``tf.ReaderBase``)."""

    def __init__(self, reader_ref, supports_serialize=False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self) -> Tensor:
        """The reader's handle (the reader op's output)."""
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        """Whether ``serialize_state``/``restore_state`` work for this reader."""
        return self._supports_serialize

    def _verb(self, op_type, name, inputs=(), outputs=True):
        o = create(op_type, [self._reader_ref, *inputs], {}, name)
        return o.outputs[0] if outputs else o

    def read(self, queue, name=None):
        """The next record as ``(key, value)`` scalar strings; takes a work item from
        ``queue`` (a queue or its handle) when needed. ``OutOfRangeError`` once the queue is
        closed and empty."""
        o = create("ReaderReadV2", [self._reader_ref, _queue_ref(queue)], {}, name)
        return ReaderReadV2(*o.outputs)

    def read_up_to(self, queue, num_records, name=None):
        """Up to ``num_records`` records as ``(keys, values)`` vectors: fewer when a work item
        ends, even before the last one."""
        queue_ref = _queue_ref(queue)
        with name_scope(name, "ReaderReadUpToV2", [self._reader_ref, queue_ref]) as scope:
            n = convert_to_tensor(num_records, dtype=dtypes.int64, name="num_records")
            o = create("ReaderReadUpToV2", [self._reader_ref, queue_ref, n], {}, scope)
        return ReaderReadUpToV2(*o.outputs)

    def num_records_produced(self, name=None):
        """An int64 scalar: the records this reader has produced."""
        return self._verb("ReaderNumRecordsProducedV2", name)

    def num_work_units_completed(self, name=None):
        """An int64 scalar: the work items this reader has finished."""
        return self._verb("ReaderNumWorkUnitsCompletedV2", name)

    def serialize_state(self, name=None):
        """A string scalar encoding the reader's state (``UnimplementedError`` when it run,
        for readers without ``supports_serialize``)."""
        return self._verb("ReaderSerializeStateV2", name)

    def restore_state(self, state, name=None):
        """An op restoring a state ``serialize_state`` produced (``UnimplementedError`` for
        readers without ``supports_serialize``; a failed restore resets the reader)."""
        with name_scope(name, "ReaderRestoreStateV2", [self._reader_ref]) as scope:
            state = convert_to_tensor(state, dtype=dtypes.string, name="state")
            return create("ReaderRestoreStateV2", [self._reader_ref, state], {}, scope)

    def reset(self, name=None):
        """An op putting the reader back in its initial state."""
        return self._verb("ReaderResetV2", name, outputs=False)


def _reader(op_type, name, **attrs) -> Tensor:
    attrs = {k: v for k, v in attrs.items() if v is not None}  # None: the declared default
    return create(op_type, [], attrs, name).outputs[0]


class WholeFileReader(ReaderBase):
    """Reads each work item's whole file: key the file name, value its contents."""

    def __init__(self, name=None):
        super().__init__(_reader("WholeFileReaderV2", name), supports_serialize=True)


class TextLineReader(ReaderBase):
    """The lines of each file, without their newlines; key ``<file>:<line number>`` (from 1,
    the ``skip_header_lines`` skipped at the start of every file included)."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(_reader("TextLineReaderV2", name, skip_header_lines=skip_header_lines))


class FixedLengthRecordReader(ReaderBase):
    """Records of ``record_bytes`` bytes after ``header_bytes`` (each needing
    ``footer_bytes`` after it, a new one every ``hop_bytes`` when set); key
    ``<file>:<record index>``. ``encoding`` 'GZIP' or 'ZLIB' inflates the files first."""

    def __init__(
        self,
        record_bytes,
        header_bytes=None,
        footer_bytes=None,
        hop_bytes=None,
        name=None,
        encoding=None,
    ):
        ref = _reader(
            "FixedLengthRecordReaderV2",
            name,
            record_bytes=record_bytes,
            header_bytes=header_bytes,
            footer_bytes=footer_bytes,
            hop_bytes=hop_bytes,
            encoding=encoding,
        )
        super().__init__(ref)


class TFRecordReader(ReaderBase):
    """The records of TFRecord files; key ``<file>:<offset>``. ``options``: a
    ``TFRecordOptions`` or a compression type ('', 'ZLIB', 'GZIP')."""

    def __init__(self, name=None, options=None):
        compression_type = TFRecordOptions.get_compression_type_string(options)
        super().__init__(_reader("TFRecordReaderV2", name, compression_type=compression_type))


class IdentityReader(ReaderBase):
    """Each work item as both key and value."""

    def __init__(self, name=None):
        super().__init__(_reader("IdentityReaderV2", name), supports_serialize=True)
