"""``FileWriter``: appends events to ``<logdir>/events.out.tfevents.<time>.<host><suffix>``,
the TFRecord file TensorBoard reads. Events are buffered and written on ``flush``, when
``max_queue`` are pending or ``flush_secs`` have passed, and on ``close``."""

from __future__ import annotations

import os
import socket
import threading
import time

import numpy as np

from engine.formats.tensorflow.tensors import TFFormatError, shape_to_proto
from engine.formats.tensorflow.writer import graph_to_tf
from engine.framework.graph import Graph
from engine.util import summary_records as records


def _as_bytes(summary) -> bytes:
    if isinstance(summary, bytes):
        return summary
    if isinstance(summary, np.ndarray) and summary.dtype == object and summary.ndim == 0:
        return _as_bytes(summary[()])
    if hasattr(summary, "SerializeToString"):
        return summary.SerializeToString()
    raise TypeError(
        "add_summary expects a serialized Summary (the bytes a summary op returns), got "
        f"{type(summary).__name__}"
    )


def tensorboard_graph_def(graph) -> bytes:
    """``graph`` as the GraphDef TensorBoard draws: TensorFlow's own GraphDef (the
    TensorFlow-format writer: every attr, TF's type attrs) plus ``_output_shapes`` for the
    edge labels. A graph that format cannot hold (functional control flow, py_func) is drawn
    from its node names, inputs, devices, dtypes and shapes only."""
    try:
        gd = graph_to_tf(graph)
    except TFFormatError:
        return records.graph_def(graph)
    by_name = {op.name: op for op in graph.get_operations()}
    for node in gd.node:
        outputs = by_name[node.name].outputs
        if outputs:
            shapes = node.attr["_output_shapes"].list
            for t in outputs:
                shapes.shape.add().CopyFrom(shape_to_proto(t.shape.as_tuple()))
    return gd.SerializeToString()


class FileWriter:
    """Writes summaries and graphs to an event file in ``logdir`` (created if missing).

    >>> writer = FileWriter("/tmp/logs", sess.graph)
    >>> writer.add_summary(summary_bytes, global_step=10)
    >>> writer.close()
    """

    def __init__(
        self,
        logdir,
        graph=None,
        max_queue=10,
        flush_secs=120,
        graph_def=None,
        filename_suffix=None,
        session=None,
    ):
        if session is not None:
            raise NotImplementedError("FileWriter(session=...) is not supported")
        self._logdir = os.fspath(logdir)
        os.makedirs(self._logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
        self._path = os.path.join(self._logdir, name + (filename_suffix or ""))
        self._max_queue = max(int(max_queue), 1)
        self._flush_secs = float(flush_secs)
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        self._closed = False
        self._last_flush = time.monotonic()
        self._file = open(self._path, "ab")  # noqa: SIM115 - closed by close()
        self.add_event(records.event(time.time(), file_version="brain.Event:2"))
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self._logdir

    def add_event(self, event: bytes) -> None:
        """Queues one serialized ``Event``."""
        with self._lock:
            if self._closed:
                raise RuntimeError("add_event on a closed FileWriter (call reopen() first)")
            self._pending.append(records.tfrecord(event))
            due = time.monotonic() - self._last_flush >= self._flush_secs
            if len(self._pending) >= self._max_queue or due:
                self._write_pending()

    def add_summary(self, summary, global_step=None) -> None:
        """Adds a serialized ``Summary`` (what running a summary op returns) at a step."""
        data = _as_bytes(summary)
        try:
            records.summary_tags(data)
        except ValueError as e:
            raise ValueError(f"add_summary: not a serialized Summary ({e})") from None
        step = int(global_step) if global_step is not None else 0
        self.add_event(records.event(time.time(), step, summary_bytes=data))

    def add_session_log(self, session_log, global_step=None) -> None:
        """Adds a ``SessionLog`` (START after a restart makes TensorBoard drop the events
        the crashed run wrote past ``global_step``)."""
        if not hasattr(session_log, "SerializeToString"):
            raise TypeError(
                f"add_session_log expects a SessionLog, got {type(session_log).__name__}"
            )
        step = int(global_step) if global_step is not None else 0
        data = session_log.SerializeToString()
        self.add_event(records.event(time.time(), step, session_log=data))

    def add_run_metadata(self, run_metadata, tag, global_step=None) -> None:
        """Adds the step stats of a traced ``Session.run`` (``run_metadata`` filled with
        ``RunOptions(trace_level=FULL_TRACE)``) under ``tag``, for TensorBoard's graph view."""
        if not isinstance(tag, str) or not tag:
            raise ValueError("add_run_metadata needs a non-empty string tag")
        if hasattr(run_metadata, "SerializeToString"):
            data = run_metadata.SerializeToString()
        elif hasattr(run_metadata, "step_stats"):
            data = records.run_metadata(run_metadata)
        else:
            raise TypeError(
                f"add_run_metadata expects a RunMetadata, got {type(run_metadata).__name__}"
            )
        step = int(global_step) if global_step is not None else 0
        tagged = records.tagged_run_metadata(tag, data)
        self.add_event(records.event(time.time(), step, tagged_run_metadata=tagged))

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Adds the graph TensorBoard draws (``graph`` an engine ``Graph``; ``graph_def`` a
        serialized TensorFlow ``GraphDef``)."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if graph is not None:
            if not isinstance(graph, Graph):
                raise TypeError(f"add_graph expects a Graph, got {type(graph).__name__}")
            data = tensorboard_graph_def(graph)
        elif isinstance(graph_def, bytes):
            data = graph_def
        elif graph_def is not None and hasattr(graph_def, "SerializeToString"):
            data = graph_def.SerializeToString()
        else:
            raise TypeError("add_graph needs a Graph or a serialized GraphDef")
        step = int(global_step) if global_step is not None else 0
        self.add_event(records.event(time.time(), step, graph_def=data))

    def _write_pending(self) -> None:
        if self._pending:
            self._file.write(b"".join(self._pending))
            self._pending.clear()
        self._file.flush()
        self._last_flush = time.monotonic()

    def flush(self) -> None:
        """Writes every pending event to disk."""
        with self._lock:
            if not self._closed:
                self._write_pending()

    def close(self) -> None:
        """Flushes and closes the file; ``reopen`` starts appending again."""
        with self._lock:
            if self._closed:
                return
            self._write_pending()
            self._file.close()
            self._closed = True

    def reopen(self) -> None:
        with self._lock:
            if self._closed:
                self._file = open(self._path, "ab")  # noqa: SIM115
                self._closed = False

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FileWriterCache:
    """One ``FileWriter`` per logdir, shared (TF1's ``tf.summary.FileWriterCache``)."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.Lock()

    @classmethod
    def get(cls, logdir) -> FileWriter:
        key = os.fspath(logdir)
        with cls._lock:
            if key not in cls._cache:
                cls._cache[key] = FileWriter(key)
            return cls._cache[key]

    @classmethod
    def clear(cls) -> None:
        with cls._lock:
            for w in cls._cache.values():
                w.close()
            cls._cache.clear()
