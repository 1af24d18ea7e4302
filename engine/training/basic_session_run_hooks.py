"""The hooks TF1 ships for ``MonitoredSession`` (TF1's ``basic_session_run_hooks.py``).

Hooks that act every N steps or seconds share ``SecondOrStepTimer``. They read the global
step they were given in ``begin`` and re-read it with the raw session only when they are
about to act, because a step's fetched global step may be the value before the train op.
"""

from __future__ import annotations

import os
import time

import numpy as np

from engine import tf_logging as logging
from engine.framework import graph as ops
from engine.saving.graph_def import write_graph
from engine.summary.proto import SessionLog, Summary
from engine.summary.writer import FileWriterCache
from engine.training import training_util
from engine.training.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = [
    "SecondOrStepTimer",
    "NeverTriggerTimer",
    "StopAtStepHook",
    "CheckpointSaverListener",
    "CheckpointSaverHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "LoggingTensorHook",
    "StepCounterHook",
    "SummarySaverHook",
    "FinalOpsHook",
    "FeedFnHook",
    "GlobalStepWaiterHook",
]


class SecondOrStepTimer:
    """Triggers once every ``every_secs`` seconds or every ``every_steps`` steps (one of them),
    and always on the first step it is asked about."""

    def __init__(self, every_secs=None, every_steps=None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step) -> bool:
        """True on the first call, and once ``every_steps`` steps / ``every_secs`` passed."""
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= (
            self._last_triggered_time + self._every_secs
        ):
            return True
        return self._every_steps is not None and step >= (
            self._last_triggered_step + self._every_steps
        )

    def update_last_triggered_step(self, step):
        """Records a trigger at ``step``: (seconds, steps) since the last one, or (None, None)."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


class NeverTriggerTimer(SecondOrStepTimer):
    """A timer that never triggers (``LoggingTensorHook(at_end=True)`` alone)."""

    def __init__(self):
        self._every_secs = self._every_steps = None
        self.reset()

    def should_trigger_for_step(self, step) -> bool:  # noqa: ARG002 - the hook API's signature
        return False


def _global_step_or_raise(hook_name: str):
    step = training_util.get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return step


def _as_graph_element(obj):
    """A tensor of the default graph, from a tensor or a name ("loss" or "loss:0")."""
    graph = ops.get_default_graph()
    if not isinstance(obj, str):
        if getattr(obj, "graph", None) is not graph:
            raise ValueError(
                f"Passed {obj} should have graph attribute that is equal to current graph {graph}."
            )
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    try:
        graph.as_graph_element(obj + ":1")
    except (KeyError, ValueError):
        return element
    raise ValueError(
        f"Name {obj} is ambiguous, as this `Operation` has multiple outputs (at least 2)."
    )


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches ``last_step``, or ``num_steps`` steps
    after the step the session started at (exactly one of them)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step_tensor = _global_step_or_raise("StopAtStepHook")

    def after_create_session(self, session, coord):  # noqa: ARG002 - the hook API's signature
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if run_values.results + 1 >= self._last_step:
            # The fetched step may predate the train op: confirm with a fresh read.
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around each save of ``CheckpointSaverHook``; ``after_save`` returning True
    requests a stop."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint when the session is created (the state at its first step), every
    ``save_steps`` steps or ``save_secs`` seconds, and at the end if the last step is new."""

    def __init__(
        self,
        checkpoint_dir,
        save_secs=None,
        save_steps=None,
        saver=None,
        checkpoint_basename="model.ckpt",
        scaffold=None,
        listeners=None,
        save_graph_def=True,
    ):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = os.fspath(checkpoint_dir)
        self._save_path = os.path.join(self._checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def
        self._steps_per_run = 1

    def begin(self):
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _global_step_or_raise("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):  # noqa: ARG002 - the hook API's signature
        step = int(session.run(self._global_step_tensor))
        if self._save_graph_def:
            graph = ops.get_default_graph()
            write_graph(graph, self._checkpoint_dir, "graph.pbtxt")
            self._summary_writer.add_graph(graph)
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(run_values.results + self._steps_per_run):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        last_step = int(session.run(self._global_step_tensor))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step) -> bool:
        """Saves at ``step``; True when a listener asks to stop."""
        for listener in self._listeners:
            listener.before_save(session, step)
        logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        self._get_saver().save(
            session, self._save_path, global_step=step, write_meta_graph=self._save_graph_def
        )
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step
        )
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = ops.get_collection(ops.GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError("No items in collection savers. Please add a saver to it.")
        if len(savers) > 1:
            raise RuntimeError(
                "More than one item in collection savers. Please indicate which one to use "
                "by passing it to the constructor."
            )
        self._saver = savers[0]
        return self._saver


class NanLossDuringTrainingError(RuntimeError):
    """Raised by ``NanTensorHook`` when the loss is NaN."""

    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Raises ``NanLossDuringTrainingError`` (or, with ``fail_on_nan_loss=False``, requests a
    stop) when ``loss_tensor`` is NaN after a step."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(message)
                raise NanLossDuringTrainingError
            logging.warning(message)
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs ``tensors`` (a list of tensors/names, or a dict tag -> tensor) through the
    "tensorflow" logger every ``every_n_iter`` runs or ``every_n_secs``, and/or at the end.

    >>> LoggingTensorHook({"loss": loss}, every_n_iter=10)   # logs "loss = 0.25"
    """

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs must be "
                "provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors)
        else:
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        self._tensors = tensors
        self._formatter = formatter
        self._timer = (
            NeverTriggerTimer()
            if only_at_end
            else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        )
        self._log_at_end = at_end

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def after_run(self, run_context, run_values):  # noqa: ARG002 - the hook API's signature
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))

    def _log_tensors(self, tensor_values) -> None:
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter:
                logging.info(self._formatter(tensor_values))
                return
            stats = ", ".join(f"{tag} = {tensor_values[tag]}" for tag in self._tag_order)
            if elapsed_secs is not None:
                logging.info("%s (%.3f sec)", stats, elapsed_secs)
            else:
                logging.info("%s", stats)


class StepCounterHook(SessionRunHook):
    """Logs (and writes as the summary ``global_step/sec``) the steps per second, every
    ``every_n_steps`` steps or ``every_n_secs`` seconds."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._steps_per_run = 1

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_or_raise("StepCounterHook")
        self._summary_tag = self._global_step_tensor.op.name + "/sec"

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(run_values.results + self._steps_per_run):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, step)

    def _log_and_record(self, elapsed_steps, elapsed_time, step) -> None:
        steps_per_sec = elapsed_steps / max(elapsed_time, 1e-9)
        if self._summary_writer is not None:
            value = Summary.Value(tag=self._summary_tag, simple_value=float(steps_per_sec))
            self._summary_writer.add_summary(Summary(value=[value]), step)
        logging.info("%s: %g", self._summary_tag, steps_per_sec)


class SummarySaverHook(SessionRunHook):
    """Runs the summary op (``summary_op``, or the ``scaffold``'s: exactly one) every
    ``save_steps`` steps or ``save_secs`` seconds and writes it to ``output_dir``."""

    def __init__(
        self,
        save_steps=None,
        save_secs=None,
        output_dir=None,
        summary_writer=None,
        scaffold=None,
        summary_op=None,
    ):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step_or_raise("SummarySaverHook")

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(
            self._next_step
        )
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary and self._get_summary_op() is not None:
            requests["summary"] = self._get_summary_op()
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        step = run_values.results["global_step"] + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None):  # noqa: ARG002 - the hook API's signature
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; their values are ``final_ops_values``."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(
                self._final_ops, feed_dict=self._final_ops_feed_dict
            )


class FeedFnHook(SessionRunHook):
    """Adds ``feed_fn()`` (a feed dict) to every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first run until the global step reaches ``wait_until_step`` (another
    worker's progress in distributed training; in one process it passes at once or waits
    for a thread that trains)."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _global_step_or_raise("GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started or self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        while run_context.session.run(self._global_step_tensor) < self._wait_until_step:
            logging.info("Waiting for global step %d before starting.", self._wait_until_step)
            time.sleep(0.5)
        self._worker_is_started = True
        return None
