"""``SessionRunHook`` and the values passed to it (TF1's ``session_run_hook.py``).

A hook extends ``MonitoredSession.run``: ``begin`` before the graph is finalized,
``after_create_session`` once the variables are initialized or restored, ``before_run``
(which may return ``SessionRunArgs``: more fetches and feeds for the same run), ``after_run``
(with those fetches' values in ``SessionRunValues.results``) and ``end`` when the session
closes without an error. A hook stops the loop with ``run_context.request_stop()``.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues"]


class SessionRunHook:
    """A hook for ``MonitoredSession.run``; every method is optional (a no-op here)."""

    def begin(self) -> None:
        """Called once before the session is created; the graph may still change here."""

    def after_create_session(self, session, coord) -> None:
        """Called with the raw session and its coordinator once the model is ready."""

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        """Called before each run: returns None or ``SessionRunArgs`` to add to the run."""
        return None

    def after_run(self, run_context, run_values) -> None:
        """Called after each run, with the values of what ``before_run`` asked for."""

    def end(self, session) -> None:
        """Called when the session closes without an error (not after an exception)."""


class SessionRunArgs(NamedTuple):
    """What a hook adds to a run: ``fetches`` (any fetch structure), ``feed_dict`` and
    ``options``, as the arguments of ``Session.run``."""

    fetches: object
    feed_dict: dict | None = None
    options: object = None


class SessionRunValues(NamedTuple):
    """What a hook gets back: ``results`` (its fetches' values, in their structure, or None
    when it fetched nothing), and the run's ``options`` and ``run_metadata``."""

    results: object
    options: object
    run_metadata: object


class SessionRunContext:
    """One call of ``MonitoredSession.run`` as hooks see it: the caller's ``original_args``,
    the raw ``session`` (to run extra fetches without hooks) and ``request_stop()``."""

    def __init__(self, original_args: SessionRunArgs, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Makes the monitored session's ``should_stop()`` True after this run."""
        self._stop_requested = True
