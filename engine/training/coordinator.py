"""``tf.train.Coordinator`` and ``tf.train.start_queue_runners``: TF1's thread coordination.

TF1 input pipelines run Python threads beside the training loop and stop them together::

    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    try:
        while not coord.should_stop():
            sess.run(train_op)
    except tf.errors.OutOfRangeError:
        pass
    finally:
        coord.request_stop()
    coord.join(threads)

``start_queue_runners`` starts the ``tf.train.QueueRunner``s a graph's ``QUEUE_RUNNERS``
collection holds (the input pipeline functions add theirs; with none it says the call can
go); the ``Coordinator`` is TF's, whole, also for the program's own threads.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time

from engine import errors
from engine.framework.graph import GraphKeys, get_default_session
from engine.session import BaseSession

__all__ = ["Coordinator", "start_queue_runners"]

log = logging.getLogger("tensorflow")


class Coordinator:
    """Lets threads ask each other to stop, and joins them, re-raising the exception that
    stopped them (``OutOfRangeError`` and the other ``clean_stop_exception_types`` count as
    a clean stop)."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex):
        """``ex``, or None when it is a clean stop (``ex`` an exception or an exc_info)."""
        error = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(error, self._clean_stop_exception_types) else ex

    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop; ``ex`` (an exception, or ``sys.exc_info()``), the first
        one not a clean stop, is re-raised by ``join``. After ``join``, re-raises it here."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                if isinstance(ex, tuple) and len(ex) == 3 and isinstance(ex[1], BaseException):
                    self._exc_info_to_raise = ex
                elif isinstance(ex, BaseException):
                    self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                else:  # still a stop (TF's): join raises this instead of hanging
                    bad = ValueError(f"ex must be an exception or an exc_info tuple: {ex!r}")
                    self._exc_info_to_raise = (ValueError, bad, None)
                log.info("Error reported to Coordinator: %s", self._exc_info_to_raise[1])
            self._stop_event.set()

    def clear_stop(self) -> None:
        """Forgets a stop request (and its exception), so threads may start again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """Any exception raised inside requests a stop with it (and is not raised here)."""
        try:
            yield
        except:  # noqa: E722 - TF's: every exception, KeyboardInterrupt included, stops all
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None) -> bool:
        """Waits (at most ``timeout`` seconds) for a stop request; whether one came."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """A thread ``join`` waits for even when not passed to it."""
        with self._lock:
            self._registered_threads.add(thread)

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raises the exception a stop was requested with, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for ``threads`` (and the registered ones) to finish or for a stop request,
        then gives live threads ``stop_grace_period_secs`` to end; re-raises the exception
        the stop was requested with, else ``RuntimeError`` naming threads still running
        (a log line instead with ``ignore_live_threads``)."""
        with self._lock:
            threads = self._registered_threads | set(threads or ())
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        wait = 0.001
        while any(t.is_alive() for t in threads) and stop_grace_period_secs >= 0.0:
            time.sleep(wait)
            stop_grace_period_secs -= wait
            wait = max(min(2 * wait, stop_grace_period_secs), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)
            if stragglers:
                message = f"Coordinator stopped with threads still running: {' '.join(stragglers)}"
                if not ignore_live_threads:
                    raise RuntimeError(message)
                log.info("%s", message)


def start_queue_runners(
    sess=None, coord=None, daemon=True, start=True, collection=GraphKeys.QUEUE_RUNNERS
) -> list:
    """Starts the queue runners of ``sess``'s graph (its ``collection``, which
    ``tf.train.add_queue_runner`` and the input pipeline functions fill) under ``coord``:
    their threads. With none defined this is ``[]``, with TF's warning that the call can go."""
    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError(
                "Cannot start queue runners: No default session is registered. Use `with "
                "sess.as_default()` or pass an explicit session to "
                "tf.start_queue_runners(sess=sess)"
            )
    if not isinstance(sess, BaseSession):
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    runners = sess.graph.get_collection(collection)
    if not runners:
        log.warning(
            "`tf.train.start_queue_runners()` was called when no queue runners were "
            "defined. You can safely remove the call to this deprecated function."
        )
    threads = []
    with sess.graph.as_default():
        for runner in runners:
            threads.extend(runner.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
