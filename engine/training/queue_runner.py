"""``tf.train.QueueRunner``: threads that keep running a queue's enqueue ops (TF 1.15's
``queue_runner_impl``), started by ``tf.train.start_queue_runners`` or a monitored session.

Each enqueue op gets a thread that runs it until the coordinator stops or the op raises one
of ``queue_closed_exception_types`` (``OutOfRangeError``: its input is exhausted); the last
thread to finish runs ``close_op``, so the consumer drains the queue and then gets
``OutOfRangeError``. With a coordinator, one more thread runs ``cancel_op`` when a stop is
requested, which wakes the enqueues blocked on a full queue. Any other error is reported
to the coordinator (or raised in the thread without one) and kept in
``exceptions_raised``.
"""

from __future__ import annotations

import threading

from engine import errors
from engine import tf_logging as logging
from engine.framework import graph as ops
from engine.framework.graph import GraphKeys

__all__ = ["QueueRunner", "add_queue_runner"]


class QueueRunner:
    """Holds a queue and the ops that fill it; ``create_threads`` runs them in a session."""

    def __init__(
        self,
        queue=None,
        enqueue_ops=None,
        close_op=None,
        cancel_op=None,
        queue_closed_exception_types=None,
        queue_runner_def=None,
        import_scope=None,
    ):
        if queue_runner_def is not None or import_scope is not None:
            raise NotImplementedError(
                "QueueRunner from a QueueRunnerDef (a MetaGraph's QUEUE_RUNNERS collection) is "
                "not supported; build the queue runner in Python"
            )
        if queue is None:
            raise ValueError("Queue is a required argument")
        if not enqueue_ops:
            raise ValueError("Must provide at least one enqueue_op")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        )
        if queue_closed_exception_types is None:
            queue_closed_exception_types = (errors.OutOfRangeError,)
        elif not queue_closed_exception_types or not all(
            isinstance(t, type) and issubclass(t, errors.OpError)
            for t in queue_closed_exception_types
        ):
            raise TypeError(
                "queue_closed_exception_types, when provided, must be a tuple of tf.error "
                f"types, but saw: {queue_closed_exception_types}"
            )
        self._queue_closed_exception_types = tuple(queue_closed_exception_types)
        self._lock = threading.Lock()
        self._runs_per_session: dict = {}
        self._exceptions_raised: list = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)
    name = property(lambda self: self._queue.name)

    @property
    def exceptions_raised(self) -> list:
        """The errors the enqueue threads raised (other than the queue closing)."""
        return self._exceptions_raised

    def _run(self, sess, enqueue_op, coord=None) -> None:
        decremented = False
        try:
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    sess.run(enqueue_op)
                except self._queue_closed_exception_types:
                    # This thread's input is done; the last one closes the queue.
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # noqa: BLE001 - TF only logs this
                                logging.vlog(1, "Ignored exception: %s", str(e))
                        return
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                logging.error("Exception in QueueRunner: %s", str(e))
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord) -> None:
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception as e:  # noqa: BLE001 - the session may be closing; TF only logs
            logging.vlog(1, "Ignored exception: %s", str(e))

    def create_threads(self, sess, coord=None, daemon=False, start=False) -> list:
        """The threads running the enqueue ops in ``sess`` (plus, with ``coord``, one that
        cancels the queue when a stop is requested); none while this session's are running."""
        with self._lock:
            try:
                if self._runs_per_session[sess] > 0:
                    return []  # already running in this session
            except KeyError:
                pass
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon)
            for op in self._enqueue_ops
        ]
        if coord is not None:
            threads.append(
                threading.Thread(
                    target=self._close_on_stop, args=(sess, self._cancel_op, coord), daemon=daemon
                )
            )
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads

    def to_proto(self, export_scope=None):
        raise NotImplementedError("QueueRunner.to_proto (a QueueRunnerDef) is not supported")

    @staticmethod
    def from_proto(queue_runner_def, import_scope=None):
        raise NotImplementedError("QueueRunner.from_proto (a QueueRunnerDef) is not supported")


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds ``qr`` to the default graph's ``collection`` (what ``start_queue_runners``
    starts)."""
    ops.add_to_collection(collection, qr)
