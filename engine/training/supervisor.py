"""``tf.train.Supervisor``: TF1's pre-MonitoredSession training helper (the PTB language
model tutorial and many 2016-2017 programs use it)::

    sv = tf.train.Supervisor(logdir="/tmp/train")
    with sv.managed_session() as sess:
        while not sv.should_stop():
            sess.run(train_op)

As in TF 1.15: the constructor fills in the init, ready and local-init ops, the saver, the
summary op, the global step and a summary writer from the graph's collections (or TF's
defaults) and finalizes the graph; a session restores the newest checkpoint of ``logdir``,
else runs the init op; the chief's standard services save a checkpoint every
``save_model_secs`` and the summaries every ``save_summaries_secs`` from background threads
stopped by the coordinator; ``managed_session`` closes it all and treats ``OutOfRangeError``
as the end of the input. Distributed use (a remote master, non-chief workers waiting for a
chief) is out of scope, as for the monitored sessions.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from engine import tf_logging as logging
from engine.framework import graph as ops
from engine.saving.graph_def import write_graph
from engine.summary.proto import SessionLog, Summary
from engine.summary.writer import FileWriter
from engine.training.coordinator import Coordinator
from engine.training.monitored_session import Scaffold, prepare_session
from engine.training.training_util import get_global_step

__all__ = ["Supervisor"]


class _Looper(threading.Thread):
    """TF's LooperThread: calls ``target`` right away and then every ``interval`` seconds
    (back to back when ``interval`` is None) until the coordinator stops; an exception
    from ``target`` stops the coordinator and is re-raised by its ``join``."""

    def __init__(self, coord: Coordinator, interval, target, args=(), kwargs=None):
        super().__init__(daemon=True)
        self._coord, self._interval = coord, interval
        self._target, self._args, self._kwargs = target, tuple(args or ()), dict(kwargs or {})
        coord.register_thread(self)

    def run(self):
        with self._coord.stop_on_exception():
            if self._interval is None:
                while not self._coord.should_stop():
                    self._target(*self._args, **self._kwargs)
                return
            next_time = time.monotonic()
            while not self._coord.wait_for_stop(max(0.0, next_time - time.monotonic())):
                next_time += self._interval
                self._target(*self._args, **self._kwargs)


class _StepCounter:
    """TF's SVStepCounterThread body: records ``<global step name>/sec``."""

    def __init__(self, sv: Supervisor, sess):
        self._sv, self._sess = sv, sess
        self._last_time = self._last_step = None
        self._tag = f"{sv.global_step.op.name}/sec"

    def __call__(self) -> None:
        now, step = time.monotonic(), int(self._sess.run(self._sv.global_step))
        if self._last_time is not None and now > self._last_time:
            rate = (step - self._last_step) / (now - self._last_time)
            value = Summary.Value(tag=self._tag, simple_value=float(rate))
            self._sv.summary_writer.add_summary(Summary(value=[value]), step)
            logging.log_first_n(logging.INFO, "%s: %g", 10, self._tag, rate)
        self._last_time, self._last_step = now, step


class Supervisor:
    """TF1's ``tf.train.Supervisor`` (one in-process chief)."""

    USE_DEFAULT = 0

    def __init__(
        self,
        graph=None,
        ready_op=USE_DEFAULT,
        ready_for_local_init_op=USE_DEFAULT,
        is_chief=True,
        init_op=USE_DEFAULT,
        init_feed_dict=None,
        local_init_op=USE_DEFAULT,
        logdir=None,
        summary_op=USE_DEFAULT,
        saver=USE_DEFAULT,
        global_step=USE_DEFAULT,
        save_summaries_secs=120,
        save_model_secs=600,
        recovery_wait_secs=30,  # noqa: ARG002 - a non-chief's wait for the chief
        stop_grace_secs=120,
        checkpoint_basename="model.ckpt",
        session_manager=None,
        summary_writer=USE_DEFAULT,
        init_fn=None,
        local_init_run_options=None,  # noqa: ARG002 - no run options in-process
    ):
        if not is_chief:
            raise NotImplementedError(
                "Supervisor(is_chief=False): workers waiting for a chief (distributed "
                "training) are out of scope; the supervisor runs one in-process chief"
            )
        if session_manager is not None:
            raise NotImplementedError("Supervisor(session_manager=...) is not supported")
        self._graph = graph if graph is not None else ops.get_default_graph()
        self._logdir, self._is_chief = logdir, is_chief
        self._save_summaries_secs = save_summaries_secs
        self._save_model_secs = save_model_secs
        self._stop_grace_secs = stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._coord = Coordinator()
        self._threads: list[threading.Thread] = []
        self._graph_written = False
        with self._graph.as_default():
            self._build(
                ready_op, ready_for_local_init_op, init_op, init_feed_dict, local_init_op,
                summary_op, saver, global_step, summary_writer, init_fn,
            )  # fmt: skip
        self._graph.finalize()

    def _build(self, ready_op, ready_local, init_op, init_feed_dict, local_init_op, summary_op,
               saver, global_step, summary_writer, init_fn):  # fmt: skip
        d = self.USE_DEFAULT

        def given(value):  # None: not wanted; USE_DEFAULT: the scaffold's default
            return None if value is d else value

        key = ops.GraphKeys.READY_FOR_LOCAL_INIT_OP
        collected_ready_local = self._graph.get_collection(key)
        scaffold = Scaffold(
            init_op=given(init_op),
            init_feed_dict=init_feed_dict,
            init_fn=(lambda _scaffold, sess: init_fn(sess)) if init_fn else None,
            ready_op=given(ready_op),
            ready_for_local_init_op=given(ready_local),
            local_init_op=given(local_init_op),
            summary_op=given(summary_op),
            saver=given(saver),
        )
        finalize = self._graph.finalize
        self._graph.finalize = lambda: None  # the scaffold fills in without finalizing yet
        try:
            scaffold.finalize()
        finally:
            self._graph.finalize = finalize
        # An explicit None drops the op, as TF's Supervisor does.
        self._init_op = None if init_op is None else scaffold.init_op
        self._ready_op = None if ready_op is None else scaffold.ready_op
        self._local_init_op = None if local_init_op is None else scaffold.local_init_op
        if ready_local is d:  # TF's Supervisor: the collection's op, else no check
            ready_local = collected_ready_local[0] if collected_ready_local else None
            self._graph.get_collection_ref(key)[:] = collected_ready_local
        scaffold._ready_for_local_init_op = self._ready_for_local_init_op = ready_local
        self._summary_op = None if summary_op is None else scaffold.summary_op
        self._saver = None if saver is None else scaffold.saver
        self._scaffold = scaffold
        self._global_step = get_global_step() if global_step is d else global_step
        if summary_writer is d:
            summary_writer = FileWriter(self._logdir) if self._logdir else None
        self._summary_writer = summary_writer

    # -- properties ----------------------------------------------------------------------
    graph = property(lambda self: self._graph)
    is_chief = property(lambda self: self._is_chief)
    coord = property(lambda self: self._coord)
    saver = property(lambda self: self._saver)
    global_step = property(lambda self: self._global_step)
    summary_op = property(lambda self: self._summary_op)
    summary_writer = property(lambda self: self._summary_writer)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    save_path = property(lambda self: self._save_path)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)

    # -- sessions ------------------------------------------------------------------------
    def prepare_or_wait_for_session(
        self,
        master="",
        config=None,
        wait_for_checkpoint=False,  # noqa: ARG002 - TF ignores it for the chief
        max_wait_secs=7200,  # noqa: ARG002 - TF ignores it for the chief
        start_standard_services=True,
    ):
        """A ready session: the newest checkpoint of ``logdir`` restored, else the init op
        run; with ``start_standard_services``, the checkpoint and summary threads started."""
        if master:
            raise NotImplementedError(f"Supervisor session on master {master!r} (a remote one)")
        scaffold = self._scaffold
        if self._init_op is None and scaffold.init_op is not None:
            scaffold._init_op = None
        if self._local_init_op is None:
            scaffold._local_init_op = None
        if self._ready_op is None:
            scaffold._ready_op = None
        # A session prepared again after stop(): its threads may run again.
        self._coord.clear_stop()
        if self._summary_writer is not None:
            self._summary_writer.reopen()
        with self._graph.as_default():
            sess = prepare_session(scaffold, config=config, checkpoint_dir=self._logdir)
        self._write_graph()
        if start_standard_services:
            self.start_standard_services(sess)
            self.start_queue_runners(sess)
        return sess

    def _write_graph(self) -> None:
        """``graph.pbtxt`` in ``logdir`` and the graph in the events file, once."""
        if self._graph_written:
            return
        if self._logdir:
            write_graph(self._graph, self._logdir, "graph.pbtxt")
        if self._summary_writer is not None:
            self._summary_writer.add_graph(self._graph)
        self._graph_written = True

    def start_standard_services(self, sess) -> list[threading.Thread]:
        """Starts the threads that save checkpoints, summaries and the global step's rate
        (the chief's), marking the restart in the events file."""
        if not self._logdir:
            logging.warning("Standard services need a 'logdir' passed to the Supervisor")
            return []
        writer, step_tensor = self._summary_writer, self._global_step
        if writer is not None:
            if step_tensor is not None:  # TensorBoard purges stale events from this step
                step = int(sess.run(step_tensor))
                writer.add_session_log(SessionLog(status=SessionLog.START), step)
        started = []
        if self._save_summaries_secs and writer is not None:
            if self._summary_op is not None:
                started.append(self.loop(self._save_summaries_secs, self._save_summary, (sess,)))
            if step_tensor is not None:
                started.append(self.loop(self._save_summaries_secs, _StepCounter(self, sess)))
        if self._saver is not None and self._save_model_secs:
            started.append(self.loop(self._save_model_secs, self._save_checkpoint, (sess,)))
        return started

    def _save_checkpoint(self, sess) -> None:
        self._saver.save(sess, self._save_path, global_step=self._global_step)

    def _save_summary(self, sess) -> None:
        if self._global_step is not None:
            summary, step = sess.run([self._summary_op, self._global_step])
        else:
            summary, step = sess.run(self._summary_op), None
        self.summary_computed(sess, summary, global_step=step)

    def summary_computed(self, sess, summary, global_step=None) -> None:
        """Writes ``summary`` (a serialized Summary) at ``global_step``."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = sess.run(self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    def loop(self, timer_interval_secs, target, args=None, kwargs=None) -> threading.Thread:
        """Starts a thread calling ``target`` now and every ``timer_interval_secs``."""
        thread = _Looper(self._coord, timer_interval_secs, target, args, kwargs)
        thread.start()
        self._threads.append(thread)
        return thread

    def start_queue_runners(self, sess, queue_runners=None) -> list[threading.Thread]:
        """Starts the threads of ``queue_runners`` (default: the graph's ``QUEUE_RUNNERS``)
        under the supervisor's coordinator; ``stop`` joins them."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(ops.GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    # -- stopping ------------------------------------------------------------------------
    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def request_stop(self, ex=None) -> None:
        self._coord.request_stop(ex)

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False) -> None:
        """Stops and joins the threads (re-raising what stopped them); closes the writer."""
        self._coord.request_stop()
        try:
            self._coord.join(
                threads if threads is not None else self._threads,
                stop_grace_period_secs=self._stop_grace_secs,
                ignore_live_threads=ignore_live_threads,
            )
        finally:
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.close()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    @contextlib.contextmanager
    def managed_session(
        self, master="", config=None, start_standard_services=True, close_summary_writer=True
    ):
        """A session whose services stop and which closes when the block ends; an
        ``OutOfRangeError`` raised in the block ends it normally (the input is exhausted)."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services
            )
            yield sess
        except Exception as e:  # noqa: BLE001 - handed to the coordinator, as TF does
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    sess.close()

    # TF1 spellings
    PrepareSession = prepare_or_wait_for_session
    RequestStop = request_stop
    ShouldStop = should_stop
    Stop = stop
    StartStandardServices = start_standard_services
    Loop = loop
