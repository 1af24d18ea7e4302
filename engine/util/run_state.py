"""The run executing on this thread: its cancellation token and memory budget, set by the
session's interpreter (``engine.runtime.interpreter.activated``) and read by kernels that
wait or loop (function bodies, blocked queue ops). Kept on the lowest floors so op modules
can read it without importing the runtime."""

from __future__ import annotations

import threading

ACTIVE = threading.local()


def active_cancellation():
    """The cancellation token of the run executing on this thread, or None."""
    return getattr(ACTIVE, "token", None)


def active_budget():
    """The memory budget of the run executing on this thread, if it has one."""
    return getattr(ACTIVE, "budget", None)
