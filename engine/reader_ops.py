"""Reader ops: TF1's ``TFRecordReaderV2``, ``TextLineReaderV2``, ``FixedLengthRecordReaderV2``,
``WholeFileReaderV2`` and ``IdentityReaderV2``, read with ``ReaderReadV2`` and
``ReaderReadUpToV2`` from a queue of work items (file names), as TF's C++ ``ReaderBase``.

A reader lives in each ``Session`` (like a queue): the reader op yields a handle to the
session's reader, and the verb ops take it. A read takes the next work item from the queue
when the reader has none in progress (``OutOfRangeError`` once the queue is closed and empty,
the end of input), then produces records from it until it ends. One lock per reader makes its
verbs atomic, so several threads may read one reader and each record comes out once.

Files are streamed in bounded chunks (GZIP/ZLIB inflated on the way), never read whole except
by ``WholeFileReader``, whose value is the whole file; a record, line or file past the bounds
of ``engine.formats.tensorflow.tfrecord.TFRecordLimits`` is ``ResourceExhaustedError``. As in
TF: a missing file is ``NotFoundError`` naming it (the work item is dropped); a damaged
TFRecord is ``DataLossError`` naming the offset, and the reader stays on it (every later read
fails the same way until ``reset``); a reader serializes its state only when TF's does
(``WholeFileReader``, ``IdentityReader``), the others raise ``UnimplementedError``.
Host (CPU) kernels only. The module lives outside ``engine/ops`` because it reads files
through ``engine.file_io`` and ``engine.formats`` (as ``engine/file_dataset_ops.py``).
"""

from __future__ import annotations

import struct
import threading
import weakref
from contextlib import contextmanager

import numpy as np

from engine import dtypes, errors
from engine import reader_streams as streams
from engine.file_io import GFile
from engine.formats.tensorflow import tfrecord
from engine.formats.tensorflow.checkpoint import masked_crc32c
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops.queue_ops import QueueState
from engine.tensor_shape import TensorShape
from engine.util.run_state import active_cancellation

__all__ = ["ReaderState"]

_HOST = OpFlags(stateful=True, device_types=("CPU",))
# How often a thread waiting for a busy reader looks at its run's token.
_POLL_SECONDS = 0.05


class ReaderState:
    """One reader in one session: TF's ``ReaderBase`` (``reader_base.cc``). Subclasses say
    how a work item starts, yields records and ends; this class takes work items from the
    queue, counts, resets and (for readers that support it) saves and restores."""

    kind = "ReaderBase"

    def __init__(self, node_name: str):
        self.name = f"{self.kind} '{node_name}'"
        self._lock = threading.Lock()
        self._session_closed = False
        self._reset_base()

    def _reset_base(self) -> None:
        self.work = b""
        self.work_started = self.work_finished = self.num_records_produced = 0

    # -- what a reader kind fills in -----------------------------------------------------
    def on_work_started(self) -> None:
        """Opens ``self.work`` (an error drops the work item)."""

    def on_work_finished(self) -> None:
        """Releases what ``on_work_started`` opened."""

    def read_locked(self) -> tuple[bytes | None, bytes | None, bool]:
        """``(key, value, at_end)``: a record (key None when there is none) and whether the
        work item is done. An error leaves the work item in progress."""
        raise NotImplementedError

    def reset_locked(self) -> None:
        self.on_work_finished()
        self._reset_base()

    def serialize_locked(self) -> bytes:
        raise errors.UnimplementedError(None, None, "Reader SerializeState")

    def restore_locked(self, state: bytes) -> None:
        del state  # a reader without a saved state accepts none
        raise errors.UnimplementedError(None, None, "Reader RestoreState")

    # -- the verbs -----------------------------------------------------------------------
    @contextmanager
    def _locked(self):
        """The reader's lock; a thread waiting for it still honours its run's token."""
        token = active_cancellation()
        if token is None:
            self._lock.acquire()
        else:
            while not self._lock.acquire(timeout=_POLL_SECONDS):
                token.check()
        try:
            yield
        finally:
            if self._session_closed:
                self.on_work_finished()
            self._lock.release()

    def _next_work(self, queue) -> bytes:
        if not isinstance(queue, QueueState):
            raise errors.InvalidArgumentError(None, None, "Expected a queue handle as input 1")
        components = queue.dequeue()
        if len(components) != 1:
            raise errors.InvalidArgumentError(None, None, "Expected single component queue")
        if queue.component_types[0] is not dtypes.string:
            raise errors.InvalidArgumentError(
                None, None, "Expected queue with single string component"
            )
        item = np.asarray(components[0], dtype=object)
        if item.size != 1:
            raise errors.InvalidArgumentError(
                None, None, "Expected to dequeue a one-element string tensor"
            )
        work = item.reshape(-1)[0]
        return work.encode("utf-8") if isinstance(work, str) else bytes(work)

    def _step(self, queue) -> tuple[bytes | None, bytes | None, bool]:
        """One ``read_locked``, taking a new work item first when none is in progress."""
        if self.work_finished >= self.work_started:
            self.work = self._next_work(queue)
            self.on_work_started()
            self.work_started += 1
        key, value, at_end = self.read_locked()
        if at_end:
            self.on_work_finished()
            self.work_finished = self.work_started
        if key is not None:
            self.num_records_produced += 1
        return key, value, at_end

    def read(self, queue) -> tuple[bytes, bytes]:
        with self._locked():
            while True:
                key, value, _ = self._step(queue)
                if key is not None:
                    return key, value

    def read_up_to(self, queue, num_records: int) -> tuple[list, list]:
        """Up to ``num_records`` records: fewer when a work item ends after giving some (TF
        returns then rather than start the next one)."""
        keys, values = [], []
        with self._locked():
            while len(keys) < num_records:
                key, value, at_end = self._step(queue)
                if key is not None:
                    keys.append(key)
                    values.append(value)
                if at_end and keys:
                    break
        return keys, values

    def reset(self) -> None:
        with self._locked():
            self.reset_locked()

    def serialize_state(self) -> bytes:
        with self._locked():
            return self.serialize_locked()

    def restore_state(self, state: bytes) -> None:
        with self._locked():
            try:
                self.restore_locked(state)
            except errors.OpError:
                self.reset_locked()
                raise

    def session_closed(self) -> None:
        """Closes the open file now if no verb is running, else when the running one ends."""
        self._session_closed = True
        if self._lock.acquire(blocking=False):
            try:
                self.on_work_finished()
            finally:
                self._lock.release()

    # -- the base state, for the readers that save it --------------------------------------
    def _serialize_base(self) -> bytes:
        return streams.encode_state(
            self.work_started, self.work_finished, self.num_records_produced, self.work
        )

    def _restore_base(self, data: bytes) -> None:
        try:
            state = streams.decode_state(bytes(data))
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse state for {self.name}: {streams.c_escape(data)}"
            ) from None
        self.work_started = state["work_started"]
        self.work_finished = state["work_finished"]
        self.num_records_produced = state["num_records_produced"]
        self.work = state["current_work"]
        if min(self.work_started, self.work_finished, self.num_records_produced) < 0:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Unexpected negative value when restoring in {self.name}: "
                f"{streams.short_debug_string(state)}",
            )
        if self.work_started > self.work_finished:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Inconsistent work started vs. finished when restoring in {self.name}: "
                f"{streams.short_debug_string(state)}",
            )


# -- the readers -----------------------------------------------------------------------------


class _FileState(ReaderState):
    """A reader holding the work item's file open while it reads it."""

    compression = ""

    def __init__(self, node_name: str):
        super().__init__(node_name)
        self.stream: streams.Stream | None = None

    def on_work_started(self) -> None:
        self.on_work_finished()
        self.stream = streams.Stream(self.work, self.compression)

    def on_work_finished(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None


def _record_limit() -> int:
    return tfrecord.TFRecordLimits.max_record_bytes


class _TFRecordState(_FileState):
    """Key ``<file>:<offset>`` (the record's offset in the inflated stream)."""

    kind = "TFRecordReader"
    _HEADER = struct.Struct("<QI")
    _FOOTER = struct.Struct("<I")

    def __init__(self, node_name: str, compression_type: str = ""):
        if compression_type == "SNAPPY":
            raise errors.UnimplementedError(
                None, None, "compression_type 'SNAPPY' is not supported (only '', 'GZIP', 'ZLIB')"
            )
        super().__init__(node_name)
        # TF reads an unknown compression type as none (and logs it).
        self.compression = compression_type if compression_type in tfrecord.COMPRESSIONS else ""
        self.offset = 0

    def on_work_started(self) -> None:
        self.offset = 0
        super().on_work_started()

    def read_locked(self):
        offset, stream = self.offset, self.stream
        stream.seek(offset)  # back to the record's start after a failed read
        header = stream.read(self._HEADER.size)
        if len(header) < self._HEADER.size:  # TF ends the file at a partial header too
            return None, None, True
        length, length_crc = self._HEADER.unpack(header)
        if masked_crc32c(header[:8]) != length_crc:
            raise errors.DataLossError(None, None, f"corrupted record at {offset}")
        if length > _record_limit():
            raise streams.over_limit(f"record at {offset}", length, _record_limit())
        body = stream.read(length + self._FOOTER.size)
        if len(body) < length + self._FOOTER.size:
            raise errors.DataLossError(
                None, None, f"truncated record at {offset}' failed with {stream.short_read}"
            )
        data = body[:length]
        if masked_crc32c(data) != self._FOOTER.unpack_from(body, length)[0]:
            raise errors.DataLossError(None, None, f"corrupted record at {offset + 12}")
        self.offset = stream.offset
        return b"%s:%d" % (self.work, offset), data, False

    def reset_locked(self) -> None:
        self.offset = 0
        super().reset_locked()


class _TextLineState(_FileState):
    """Key ``<file>:<line number>``, counting from 1 and counting the skipped header lines."""

    kind = "TextLineReader"

    def __init__(self, node_name: str, skip_header_lines: int = 0):
        if skip_header_lines < 0:
            raise errors.InvalidArgumentError(
                None, None, f"skip_header_lines must be >= 0 not {skip_header_lines}"
            )
        super().__init__(node_name)
        self.skip_header_lines = skip_header_lines
        self.line_number = 0

    def on_work_started(self) -> None:
        self.line_number = 0
        super().on_work_started()
        while self.line_number < self.skip_header_lines:
            if self.stream.readline(_record_limit()) is None:
                return  # a file shorter than its header yields nothing
            self.line_number += 1

    def read_locked(self):
        line = self.stream.readline(_record_limit())
        self.line_number += 1
        if line is None:
            return None, None, True
        return b"%s:%d" % (self.work, self.line_number), line, False

    def reset_locked(self) -> None:
        self.line_number = 0
        super().reset_locked()


class _FixedLengthState(_FileState):
    """Key ``<file>:<record index>``. Record ``k`` starts ``header_bytes + k * hop_bytes``
    into the (inflated) file (``record_bytes`` when ``hop_bytes`` is 0) and is read only when
    ``record_bytes + footer_bytes`` bytes follow its start: a last partial record is dropped.
    """

    kind = "FixedLengthRecordReader"

    def __init__(self, node_name, header_bytes, record_bytes, footer_bytes, hop_bytes, encoding):
        for attr, value in (
            ("header_bytes", header_bytes),
            ("record_bytes", record_bytes),
            ("footer_bytes", footer_bytes),
            ("hop_bytes", hop_bytes),
        ):
            if value < 0:
                raise errors.InvalidArgumentError(None, None, f"{attr} must be >= 0 not {value}")
        if record_bytes + footer_bytes > _record_limit():
            size = record_bytes + footer_bytes
            raise streams.over_limit("record_bytes + footer_bytes", size, _record_limit())
        super().__init__(node_name)
        self.header, self.record, self.footer, self.hop = (
            header_bytes,
            record_bytes,
            footer_bytes,
            hop_bytes,
        )
        # TF reads any other encoding as none.
        self.compression = encoding if encoding in tfrecord.COMPRESSIONS else ""
        self.record_number = 0
        self.lookahead = b""  # bytes read past the last record's start (TF's lookahead cache)

    def on_work_started(self) -> None:
        self.record_number = 0
        self.lookahead = b""
        super().on_work_started()
        if self.stream.skip(self.header) < self.header:
            # TF's stream reports a short skip as an error, not as an empty file.
            end = "EOF reached" if self.compression else "reached end of file"
            raise errors.OutOfRangeError(None, None, end)

    def read_locked(self):
        if self.record_number and self.hop:
            if self.hop <= len(self.lookahead):
                self.lookahead = self.lookahead[self.hop :]
            else:
                want = self.hop - len(self.lookahead)
                self.lookahead = b""
                if self.stream.skip(want) < want:
                    return None, None, True
        want = self.record + self.footer - len(self.lookahead)
        data = self.stream.read(want)
        if len(data) < want:
            return None, None, True
        self.lookahead += data
        value = self.lookahead[: self.record]
        if not self.hop:  # contiguous records: what follows this one starts the next
            self.lookahead = self.lookahead[self.record :]
        key = b"%s:%d" % (self.work, self.record_number)
        self.record_number += 1
        return key, value, False

    def reset_locked(self) -> None:
        self.record_number = 0
        self.lookahead = b""
        super().reset_locked()


class _WholeFileState(ReaderState):
    """Key: the file name; value: the whole file (within ``TFRecordLimits.max_file_bytes``).
    An unreadable file stays the work in progress, as TF's: every read fails on it."""

    kind = "WholeFileReader"

    def read_locked(self):
        limit = tfrecord.TFRecordLimits.max_file_bytes
        with GFile(self.work, "rb") as f:
            data = f.read(limit + 1)
            if len(data) > limit:
                raise streams.over_limit(self.work.decode("utf-8", "replace"), f.size(), limit)
        return self.work, data, True

    def serialize_locked(self) -> bytes:
        return self._serialize_base()

    def restore_locked(self, state: bytes) -> None:
        self._restore_base(state)


class _IdentityState(ReaderState):
    """Key and value: the work item itself."""

    kind = "IdentityReader"

    def read_locked(self):
        return self.work, self.work, True

    def serialize_locked(self) -> bytes:
        return self._serialize_base()

    def restore_locked(self, state: bytes) -> None:
        self._restore_base(state)


# -- ops -------------------------------------------------------------------------------------

_SESSION_READERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_READERS_LOCK = threading.Lock()

_FACTORIES = {
    "TFRecordReaderV2": lambda name, a: _TFRecordState(name, a["compression_type"]),
    "TextLineReaderV2": lambda name, a: _TextLineState(name, a["skip_header_lines"]),
    "FixedLengthRecordReaderV2": lambda name, a: _FixedLengthState(
        name, a["header_bytes"], a["record_bytes"], a["footer_bytes"], a["hop_bytes"], a["encoding"]
    ),
    "WholeFileReaderV2": lambda name, a: _WholeFileState(name),
    "IdentityReaderV2": lambda name, a: _IdentityState(name),
}


def _reader_bind(o, ctx):
    """The session's reader for this op (shared by ``shared_name``, else by op name)."""
    key = o._attrs.get("shared_name") or o._name
    with _READERS_LOCK:
        readers = _SESSION_READERS.get(ctx.session)
        if readers is None:
            readers = _SESSION_READERS[ctx.session] = {}
            ctx.session._add_close_hook(
                lambda rs=readers: [r.session_closed() for r in list(rs.values())]
            )
        reader = readers.get(key)
        if reader is None:
            try:
                reader = _FACTORIES[o._type](o._name, o._attrs)
            except errors.OpError as e:  # a bad attr: TF fails the reader op's first run
                raise type(e)(o.node_def, o, f"{e.message}\n\t [[node {o._name}]]") from None
            readers[key] = reader
    return {"reader": reader}


def _reader_infer(o):
    return [(dtypes.resource, TensorShape([]))]


def _fixed_length_kernel(
    xp,
    *,
    header_bytes=0,
    record_bytes,
    footer_bytes=0,
    hop_bytes=0,
    container="",
    shared_name="",
    encoding="",
    reader,
):
    return reader


_SHARING = (Attr("container", "string", default=""), Attr("shared_name", "string", default=""))

op(
    "TFRecordReaderV2",
    infer=_reader_infer,
    differentiable=False,
    attrs=(*_SHARING, Attr("compression_type", "string", default="")),
    bind=_reader_bind,
    flags=_HOST,
)(lambda xp, *, container="", shared_name="", compression_type="", reader: reader)
op(
    "TextLineReaderV2",
    infer=_reader_infer,
    differentiable=False,
    attrs=(Attr("skip_header_lines", "int", default=0), *_SHARING),
    bind=_reader_bind,
    flags=_HOST,
)(lambda xp, *, skip_header_lines=0, container="", shared_name="", reader: reader)
op(
    "FixedLengthRecordReaderV2",
    infer=_reader_infer,
    differentiable=False,
    attrs=(
        Attr("header_bytes", "int", default=0),
        Attr("record_bytes", "int"),
        Attr("footer_bytes", "int", default=0),
        Attr("hop_bytes", "int", default=0),
        *_SHARING,
        Attr("encoding", "string", default=""),
    ),
    bind=_reader_bind,
    flags=_HOST,
)(_fixed_length_kernel)
for _type in ("WholeFileReaderV2", "IdentityReaderV2"):
    op(
        _type,
        infer=_reader_infer,
        differentiable=False,
        attrs=_SHARING,
        bind=_reader_bind,
        flags=_HOST,
    )(lambda xp, *, container="", shared_name="", reader: reader)


def _verb_infer(outputs, *, queue=False, rank0=None):
    """Checks the handles (and that input ``rank0`` is a scalar); ``outputs`` are given."""

    def infer(o):
        handles = (0, 1) if queue else (0,)
        for i in handles:
            if o._inputs[i]._dtype.base_dtype is not dtypes.resource:
                what = "queue" if i else "reader"
                raise TypeError(f"{o._type} needs a {what} handle as input {i}")
        if rank0 is not None:
            rank = o._inputs[rank0]._shape.rank
            if rank is not None and rank != 0:
                raise ShapeError(f"Shape must be rank 0 but is rank {rank}")
        return outputs

    return infer


def _check_reader(reader) -> ReaderState:
    if not isinstance(reader, ReaderState):
        raise errors.InvalidArgumentError(None, None, "Expected a reader handle as input 0")
    return reader


_SCALAR = TensorShape([])


@op(
    "ReaderReadV2",
    infer=_verb_infer([(dtypes.string, _SCALAR)] * 2, queue=True),
    differentiable=False,
    inputs=("reader_handle", "queue_handle"),
    flags=_HOST,
)
def _read(xp, reader, queue):
    key, value = _check_reader(reader).read(queue)
    return streams.string_scalar(key), streams.string_scalar(value)


@op(
    "ReaderReadUpToV2",
    infer=_verb_infer([(dtypes.string, TensorShape([None]))] * 2, queue=True, rank0=2),
    differentiable=False,
    inputs=("reader_handle", "queue_handle", "num_records"),
    flags=_HOST,
)
def _read_up_to(xp, reader, queue, num_records):
    n = int(np.asarray(num_records))
    if n < 0:  # TF's kernel crashes its process here
        raise errors.InvalidArgumentError(None, None, f"num_records must be >= 0, got {n}")
    keys, values = _check_reader(reader).read_up_to(queue, n)
    return streams.string_vector(keys), streams.string_vector(values)


for _type, _attr in (
    ("ReaderNumRecordsProducedV2", "num_records_produced"),
    ("ReaderNumWorkUnitsCompletedV2", "work_finished"),
):
    op(
        _type,
        infer=_verb_infer([(dtypes.int64, _SCALAR)]),
        differentiable=False,
        inputs=("reader_handle",),
        flags=_HOST,
    )(lambda xp, reader, _attr=_attr: np.asarray(getattr(_check_reader(reader), _attr), np.int64))


@op(
    "ReaderSerializeStateV2",
    infer=_verb_infer([(dtypes.string, _SCALAR)]),
    differentiable=False,
    inputs=("reader_handle",),
    flags=_HOST,
)
def _serialize_state(xp, reader):
    return streams.string_scalar(_check_reader(reader).serialize_state())


@op(
    "ReaderRestoreStateV2",
    infer=_verb_infer([], rank0=1),
    differentiable=False,
    inputs=("reader_handle", "state"),
    flags=_HOST,
)
def _restore_state(xp, reader, state):
    state = np.asarray(state, dtype=object)
    if state.ndim:
        raise errors.InvalidArgumentError(
            None, None, f"Reader state must be scalar, but had shape: {list(state.shape)}"
        )
    value = state[()]
    _check_reader(reader).restore_state(value.encode("utf-8") if isinstance(value, str) else value)


@op(
    "ReaderResetV2",
    infer=_verb_infer([]),
    differentiable=False,
    inputs=("reader_handle",),
    flags=_HOST,
)
def _reset(xp, reader):
    _check_reader(reader).reset()
