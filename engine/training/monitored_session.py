"""TF1's monitored sessions: ``MonitoredSession``, ``SingularMonitoredSession`` and
``MonitoredTrainingSession``, with ``Scaffold`` and ``ChiefSessionCreator``.

Creating a monitored session calls every hook's ``begin``, finalizes the graph (through the
``Scaffold``), creates a raw ``Session``, restores it from the newest checkpoint of
``checkpoint_dir`` or runs the init op, checks the model is ready, starts the queue runners
under a ``Coordinator`` and calls the hooks' ``after_create_session``. Each ``run`` adds
the hooks' ``SessionRunArgs`` to the caller's fetches and feeds, runs once, hands every hook
its values in ``after_run`` and returns the caller's. ``close`` (or leaving ``with``, where
``OutOfRangeError`` and ``StopIteration`` end the loop cleanly) calls the hooks' ``end``.
Only in-process, single-worker training is in scope: distributed options raise.
"""

from __future__ import annotations

import inspect

from engine import errors
from engine import tf_logging as logging
from engine.framework import graph as ops
from engine.framework.graph import GraphKeys
from engine.ops.control_flow import group
from engine.ops.lookup import tables_initializer
from engine.session import Session
from engine.summary import merge_all
from engine.training import saver as saver_lib
from engine.training.basic_session_run_hooks import (
    CheckpointSaverHook,
    StepCounterHook,
    SummarySaverHook,
)
from engine.training.coordinator import Coordinator, start_queue_runners
from engine.training.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunValues,
)
from engine.variables import (
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
    report_uninitialized_variables,
)

__all__ = [
    "Scaffold",
    "SessionCreator",
    "ChiefSessionCreator",
    "WorkerSessionCreator",
    "MonitoredSession",
    "SingularMonitoredSession",
    "MonitoredTrainingSession",
    "StepContext",
]

# Errors after which a MonitoredSession closes its session and creates a new one.
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
_USE_DEFAULT = object()


def _out_of_scope(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: distributed training (a remote master, non-chief workers waiting for a "
        "chief) is out of scope; monitored sessions here run one in-process chief "
        "(master='', is_chief=True)."
    )


def _get_or_default(arg_name: str, collection_key: str, default_constructor):
    """The one item of ``collection_key``, else ``default_constructor()`` (then collected)."""
    elements = ops.get_collection(collection_key)
    if elements:
        if len(elements) > 1:
            raise RuntimeError(
                f'More than one item in the collection "{collection_key}". Please indicate '
                f"which one to use by passing it to the tf.Scaffold constructor as: "
                f"tf.Scaffold({arg_name}=item to use)"
            )
        return elements[0]
    op = default_constructor()
    if op is not None:
        ops.add_to_collection(collection_key, op)
    return op


def _default_saver():
    """The one Saver of the SAVERS collection, else a new one over every global variable."""
    savers = ops.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(
                "More than one item in collection savers. Please indicate which one to use "
                "by passing it to the constructor."
            )
        return savers[0]
    saver = saver_lib.Saver(sharded=True, allow_empty=True)
    ops.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


class Scaffold:
    """The ops that create and prepare a model's session; ``finalize`` fills in the ones not
    given (from their graph collections, else TF's defaults) and finalizes the graph."""

    def __init__(
        self,
        init_op=None,
        init_feed_dict=None,
        init_fn=None,
        ready_op=None,
        ready_for_local_init_op=None,
        local_init_op=None,
        summary_op=None,
        saver=None,
        copy_from_scaffold=None,
        local_init_feed_dict=None,
    ):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op = init_op if init_op is not None else c.init_op
            init_feed_dict = init_feed_dict or c.init_feed_dict
            init_fn = init_fn or c._user_init_fn
            ready_op = ready_op if ready_op is not None else c.ready_op
            ready_for_local_init_op = ready_for_local_init_op or c.ready_for_local_init_op
            local_init_op = local_init_op if local_init_op is not None else c.local_init_op
            local_init_feed_dict = local_init_feed_dict or c.local_init_feed_dict
            summary_op = summary_op if summary_op is not None else c.summary_op
            saver = saver or c.saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._local_init_feed_dict = local_init_op, local_init_feed_dict
        self._summary_op, self._saver = summary_op, saver

    def finalize(self) -> Scaffold:
        """Creates the missing ops and the saver, then makes the graph read-only."""
        if self._init_op is None:
            self._init_op = _get_or_default(
                "init_op", GraphKeys.INIT_OP, lambda: group(global_variables_initializer())
            )
        if self._ready_op is None:
            self._ready_op = _get_or_default(
                "ready_op", GraphKeys.READY_OP, report_uninitialized_variables
            )
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _get_or_default(
                "ready_for_local_init_op",
                GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: report_uninitialized_variables(global_variables()),
            )
        if self._local_init_op is None:
            self._local_init_op = _get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op
            )
        if self._summary_op is None:
            self._summary_op = _get_or_default("summary_op", GraphKeys.SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = _default_saver()
        ops.get_default_graph().finalize()
        logging.info("Graph was finalized.")
        return self

    @staticmethod
    def default_local_init_op():
        """Initializes the local variables and the lookup tables."""
        return group(local_variables_initializer(), tables_initializer())

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)


class SessionCreator:
    """Creates a ready raw session (``create_session``)."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for SessionCreator.")


def _uninitialized(sess, op) -> list[str]:
    """The names ``op`` (a report_uninitialized_variables op) lists, or [] when None."""
    if op is None:
        return []
    return [n.decode() if isinstance(n, bytes) else str(n) for n in sess.run(op).ravel()]


def _restore(sess, saver, checkpoint_dir, checkpoint_filename_with_path) -> bool:
    """Restores ``sess`` from the given checkpoint or the newest in ``checkpoint_dir``."""
    if checkpoint_filename_with_path:
        saver.restore(sess, checkpoint_filename_with_path)
        return True
    if not checkpoint_dir:
        return False
    state = saver_lib.get_checkpoint_state(checkpoint_dir)
    if state is None or not saver_lib.checkpoint_exists(state.model_checkpoint_path):
        return False
    logging.info("Restoring parameters from %s", state.model_checkpoint_path)
    saver.restore(sess, state.model_checkpoint_path)
    saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
    return True


def prepare_session(scaffold, config=None, checkpoint_dir=None, checkpoint_filename_with_path=None):
    """A session of the default graph, restored or initialized, whose model is ready."""
    sess = Session(graph=ops.get_default_graph(), config=config)
    if not _restore(sess, scaffold.saver, checkpoint_dir, checkpoint_filename_with_path):
        if scaffold.init_op is None and not scaffold.init_fn and scaffold.local_init_op is None:
            raise RuntimeError(
                "Model is not initialized and no init_op or init_fn or local_init_op was given"
            )
        if scaffold.init_op is not None:
            sess.run(scaffold.init_op, feed_dict=scaffold.init_feed_dict)
        if scaffold.init_fn:
            scaffold.init_fn(sess)
    if scaffold.local_init_op is not None:
        missing = _uninitialized(sess, scaffold.ready_for_local_init_op)
        if missing:
            raise RuntimeError(
                "Init operations did not make model ready for local_init. Variables not "
                f"initialized: {', '.join(missing)}"
            )
        sess.run(scaffold.local_init_op, feed_dict=scaffold.local_init_feed_dict)
    missing = _uninitialized(sess, scaffold.ready_op)
    if missing:
        sess.close()
        raise RuntimeError(
            f"Init operations did not make model ready. Init op: {scaffold.init_op.name}, "
            f"init fn: {scaffold.init_fn}, local_init_op: {scaffold.local_init_op}, "
            f"error: Variables not initialized: {', '.join(missing)}"
        )
    return sess


class ChiefSessionCreator(SessionCreator):
    """Creates the chief's session: restores ``checkpoint_filename_with_path`` or the newest
    checkpoint of ``checkpoint_dir``, else runs the scaffold's init op."""

    def __init__(
        self,
        scaffold=None,
        master="",
        config=None,
        checkpoint_dir=None,
        checkpoint_filename_with_path=None,
    ):
        if master:
            raise _out_of_scope(f"ChiefSessionCreator(master={master!r})")
        self._scaffold = scaffold or Scaffold()
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        return prepare_session(
            self._scaffold, self._config, self._checkpoint_dir, self._checkpoint_filename_with_path
        )


class WorkerSessionCreator(SessionCreator):
    """A non-chief worker's session, which waits for a chief: out of scope here."""

    def __init__(self, *args, **kwargs):  # noqa: ARG002 - TF's signature, refused
        raise _out_of_scope("WorkerSessionCreator")


class StepContext:
    """What ``run_step_fn``'s ``step_fn`` gets: the raw ``session``, ``run_with_hooks`` (as
    ``MonitoredSession.run``) and ``request_stop()`` (raises StopIteration, ending the loop)."""

    def __init__(self, session, run_with_hooks_fn):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        raise StopIteration("step_fn has requested the iterations to stop.")


def _collect_requests(hooks, run_context, user_feed_dict, options):
    """Calls every hook's ``before_run``: ([(hook, fetches)], merged feeds, options)."""
    hook_fetches, hook_feeds = [], {}
    for hook in hooks:
        request = hook.before_run(run_context)
        if request is None:
            continue
        if request.fetches is not None:
            hook_fetches.append((hook, request.fetches))
        if request.feed_dict:
            if set(hook_feeds).intersection(request.feed_dict):
                raise RuntimeError("Same tensor is fed by two hooks.")
            hook_feeds.update(request.feed_dict)
        if request.options is not None and options is None:
            options = request.options
    if not hook_feeds:
        return hook_fetches, user_feed_dict, options
    if user_feed_dict:
        if set(hook_feeds).intersection(user_feed_dict):
            raise RuntimeError("Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
    return hook_fetches, hook_feeds, options


class _MonitoredSession:
    """The shared machinery of ``MonitoredSession`` and ``SingularMonitoredSession``."""

    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._graph = ops.get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._session_creator = session_creator or ChiefSessionCreator()
        self._should_recover = should_recover
        self._stop_grace_period_secs = stop_grace_period_secs
        self._tf_sess = self._coord = None
        self._closed = False
        self._create_session()

    @property
    def graph(self):
        return self._graph

    def _create_session(self) -> None:
        """A raw session (retried after a preemption when recovering), its coordinator and
        queue runners, then the hooks' ``after_create_session``."""
        while True:
            try:
                self._tf_sess = self._session_creator.create_session()
                break
            except _PREEMPTION_ERRORS as e:
                if not self._should_recover:
                    raise
                logging.info("An error was raised while a session was being created: %s", e)
        self._coord = Coordinator()
        self._hooks_requested_stop = False
        if self._graph.get_collection(GraphKeys.QUEUE_RUNNERS):
            start_queue_runners(sess=self._tf_sess, coord=self._coord)
        for hook in self._hooks:
            hook.after_create_session(self._tf_sess, self._coord)

    def _close_session(self) -> None:
        """Stops the queue runners and closes the raw session (errors while closing ignored)."""
        self._coord.request_stop()
        try:
            self._coord.join(
                stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True
            )
        finally:
            try:
                self._tf_sess.close()
            except Exception:  # noqa: BLE001 - as TF, a failing close does not mask the run's error
                pass

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Run called on a closed MonitoredSession.")

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs ``fetches`` with the hooks' requests; returns the values of ``fetches``."""
        self._check_open()
        while True:
            try:
                return self._run_with_hooks(fetches, feed_dict, options, run_metadata)
            except _PREEMPTION_ERRORS as e:
                if not self._should_recover:
                    raise
                logging.info("A session run failed (%s); creating a new session.", e)
                self._close_session()
                self._create_session()

    def _run_with_hooks(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._hooks_requested_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._tf_sess)
        hook_fetches, feed_dict, options = _collect_requests(
            self._hooks, context, feed_dict, options
        )
        try:
            outputs = self._tf_sess.run(
                [fetches] + [f for _, f in hook_fetches],
                feed_dict=feed_dict,
                options=options,
                run_metadata=run_metadata,
            )
        except Exception:
            self._coord.raise_requested_exception()  # a queue runner's error comes first
            raise
        results = {id(hook): value for (hook, _), value in zip(hook_fetches, outputs[1:])}
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(results.get(id(hook)), options, run_metadata))
        self._hooks_requested_stop = self._hooks_requested_stop or context.stop_requested
        return outputs[0]

    def run_step_fn(self, step_fn):
        """Calls ``step_fn(step_context)`` (see ``StepContext``); returns what it returns."""
        self._check_open()
        params = tuple(inspect.signature(step_fn).parameters)
        if params not in (("step_context",), ("self", "step_context")):
            raise ValueError(
                "`step_fn` may either have one `step_context` argument, or `self` and "
                f"`step_context` arguments if it's an instance method. Got {params} instead."
            )
        while True:
            try:
                return step_fn(StepContext(self._tf_sess, self._run_with_hooks))
            except _PREEMPTION_ERRORS:
                if not self._should_recover:
                    raise
                self._close_session()
                self._create_session()

    def should_stop(self) -> bool:
        """True once a hook requested a stop, the coordinator stopped, or after close."""
        if self._closed:
            return True
        self._coord.raise_requested_exception()
        return self._coord.should_stop() or self._hooks_requested_stop

    def close(self) -> None:
        """Calls the hooks' ``end`` and closes the session; a second call does nothing."""
        self._close_internal()

    def _close_internal(self, exception_type=None) -> None:
        if self._closed:
            return
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._tf_sess)
        finally:
            self._closed = True
            try:
                self._close_session()
            finally:
                self._tf_sess = self._coord = None
                if not self._graph_was_finalized:
                    self._graph._unsafe_unfinalize()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """A session that runs hooks around each run, initializes or restores the model through
    ``session_creator`` (a ``ChiefSessionCreator`` by default), and creates a new session
    after a preemption error (``AbortedError``, ``UnavailableError``).

    >>> with MonitoredSession(hooks=[StopAtStepHook(last_step=100)]) as sess:
    ...     while not sess.should_stop():
    ...         sess.run(train_op)
    """

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(
            session_creator,
            hooks,
            should_recover=True,
            stop_grace_period_secs=stop_grace_period_secs,
        )


class SingularMonitoredSession(_MonitoredSession):
    """A ``MonitoredSession`` for one chief that does not recover from errors, and gives
    access to its raw session (``raw_session()``)."""

    def __init__(
        self,
        hooks=None,
        scaffold=None,
        master="",
        config=None,
        checkpoint_dir=None,
        stop_grace_period_secs=120,
        checkpoint_filename_with_path=None,
    ):
        creator = ChiefSessionCreator(
            scaffold=scaffold,
            master=master,
            config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
        )
        super().__init__(
            creator, hooks, should_recover=False, stop_grace_period_secs=stop_grace_period_secs
        )

    def raw_session(self):
        """The underlying ``Session``."""
        return self._tf_sess


def _resolve_defaults(primary, secondary, primary_default, secondary_default):
    """TF's rule for a steps/secs pair: both unset -> the defaults; one set -> the other None."""
    if primary is _USE_DEFAULT and secondary is _USE_DEFAULT:
        return primary_default, secondary_default
    return (None if primary is _USE_DEFAULT else primary), (
        None if secondary is _USE_DEFAULT else secondary
    )


def MonitoredTrainingSession(  # noqa: N802 - TF's name
    master="",
    is_chief=True,
    checkpoint_dir=None,
    scaffold=None,
    hooks=None,
    chief_only_hooks=None,
    save_checkpoint_secs=_USE_DEFAULT,
    save_summaries_steps=_USE_DEFAULT,
    save_summaries_secs=_USE_DEFAULT,
    config=None,
    stop_grace_period_secs=120,
    log_step_count_steps=100,
    max_wait_secs=7200,  # noqa: ARG001 - only non-chief workers wait
    save_checkpoint_steps=_USE_DEFAULT,
    summary_dir=None,
):
    """A ``MonitoredSession`` for training, with TF's default hooks: with a ``summary_dir``
    (default ``checkpoint_dir``) a ``StepCounterHook`` and a ``SummarySaverHook`` (every 100
    steps unless told), with a ``checkpoint_dir`` a ``CheckpointSaverHook`` (every 600 s
    unless told). It restores the newest checkpoint of ``checkpoint_dir`` if there is one.
    """
    if master:
        raise _out_of_scope(f"MonitoredTrainingSession(master={master!r})")
    if not is_chief:
        raise _out_of_scope("MonitoredTrainingSession(is_chief=False)")
    save_summaries_steps, save_summaries_secs = _resolve_defaults(
        save_summaries_steps, save_summaries_secs, 100, None
    )
    save_checkpoint_steps, save_checkpoint_secs = _resolve_defaults(
        save_checkpoint_steps, save_checkpoint_secs, None, 600
    )
    scaffold = scaffold or Scaffold()
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(
        scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config
    )
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(
                StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps)
            )
        if (save_summaries_steps and save_summaries_steps > 0) or (
            save_summaries_secs and save_summaries_secs > 0
        ):
            all_hooks.append(
                SummarySaverHook(
                    scaffold=scaffold,
                    save_steps=save_summaries_steps,
                    save_secs=save_summaries_secs,
                    output_dir=summary_dir,
                )
            )
    if checkpoint_dir and (
        (save_checkpoint_secs and save_checkpoint_secs > 0)
        or (save_checkpoint_steps and save_checkpoint_steps > 0)
    ):
        all_hooks.append(
            CheckpointSaverHook(
                checkpoint_dir,
                save_steps=save_checkpoint_steps,
                save_secs=save_checkpoint_secs,
                scaffold=scaffold,
            )
        )
    all_hooks.extend(hooks or [])
    return MonitoredSession(
        session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs
    )
