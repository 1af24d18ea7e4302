"""The parts of a batch that do not schedule: queued requests and batches, merging their
inputs (concatenated along the batch axis, padded as configured), a run on the calling thread
timed in wall and CPU time, the thread run's cancellation, checking and splitting the results.
``service.batching`` schedules them (which batch runs when, on which side of the event loop).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from engine.runtime import Cancellation
from service.config import BatchingConfig
from service.errors import Internal, InvalidInput, ServingError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from service.servable import Signature

log = logging.getLogger("flowserve.batching")


class Overdue:
    """Computations still running after their request's deadline. Threads cannot be
    interrupted, so each holds a compute thread until it ends; the manager reports them in
    readiness and refuses new work while they occupy every thread."""

    def __init__(self):
        self._running: set = set()

    # A cancelled computation stops at its next op or loop iteration; one still running
    # after this many seconds is inside a long kernel.
    grace = 0.25

    def add(self, future: Future) -> None:
        self._running.add(future)
        future.add_done_callback(self._running.discard)  # set ops are atomic under the GIL

    def watch(self, future: Future) -> None:
        """Counts ``future`` (a cancelled computation) if it still runs after ``grace``."""
        if not future.done():
            loop = asyncio.get_running_loop()
            loop.call_later(self.grace, lambda: None if future.done() else self.add(future))

    def __len__(self) -> int:
        return len(self._running)


def runs_inline(signature: Signature, arrays: list[np.ndarray], limit: float) -> bool:
    """Whether a run is cheap enough to run on the event loop: its estimated compute time
    (learned at warmup, kept current from every run) is under ``limit`` seconds. Handing a
    run of a few microseconds to a thread costs more than the run (a queue, a wakeup, a
    callback back to the loop); a big one stays off the loop."""
    if limit <= 0:
        return False
    estimate = signature.estimated_seconds(arrays)
    return estimate is not None and estimate < limit


def _timed_run(signature, arrays, cancellation=None, submitted=None):
    """Runs on a compute thread: ``(values, run seconds, seconds waited for the thread, the
    thread's CPU seconds in the run)``."""
    t0, c0 = time.perf_counter(), time.thread_time()
    waited = t0 - submitted if submitted is not None else 0.0
    if cancellation is None:
        values = signature.run(arrays)
    else:
        values = signature.run(arrays, cancellation=cancellation)
    return values, time.perf_counter() - t0, waited, time.thread_time() - c0


class _Request:
    __slots__ = ("arrays", "rows", "future", "deadline", "enqueued", "trace", "wait", "watch")

    def __init__(self, arrays, rows, future, deadline, enqueued):
        self.arrays = arrays
        self.rows = rows
        self.future = future
        self.deadline = deadline
        self.enqueued = enqueued
        self.watch = None  # its thread run's _Watch, once it runs on a thread
        self.trace = None  # the request's trace context (OpenTelemetry), for its batch
        self.wait = None  # its queue_wait span


class _Batch:
    """Requests merging into one run. One deadline timer per batch, not per request: it
    fires at the earliest deadline of its requests (most share one timeout, so a later
    request rarely moves it) and stays armed while the batch runs on a thread."""

    __slots__ = ("signature", "key", "requests", "rows", "timer", "closed", "deadline", "expiry")

    def __init__(self, signature, key):
        self.signature = signature
        self.key = key
        self.requests: list[_Request] = []
        self.rows = 0
        self.timer = None
        self.closed = False
        self.deadline = float("inf")  # the earliest deadline of its pending requests
        self.expiry: asyncio.TimerHandle | None = None  # fires at ``deadline``


class _Watch:
    """A thread run's cancellation: its token is cancelled once every request in the run
    has gone (missed its deadline or was cancelled), so nobody waits on a computation that
    runs on; one that runs on anyway (a long kernel) is counted as overdue. Each request
    reports its own leaving where it awaits its result (no callback per request)."""

    __slots__ = ("token", "pending", "work", "overdue")

    def __init__(self, requests: int, overdue: Overdue | None):
        self.token = Cancellation()
        self.pending = requests
        self.work: Future | None = None
        self.overdue = overdue

    def left(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.token.cancel("every request in the batch missed its deadline or left")
            if self.work is not None and self.overdue is not None:
                self.overdue.watch(self.work)


class _Run:
    """One batch on its way through a session run: its live requests and merged inputs."""

    __slots__ = ("batch", "signature", "live", "merged", "real_rows", "padding")

    def __init__(self, batch, live, merged, real_rows, padding):
        self.batch = batch
        self.signature = batch.signature
        self.live = live
        self.merged = merged
        self.real_rows = real_rows
        self.padding = padding


def _attempt(signature, merged):
    """A run on this thread: ``((values, seconds, waited, cpu), None)`` or ``(None, error)``."""
    try:
        return _timed_run(signature, merged), None
    except Exception as e:  # noqa: BLE001 - reported to every request in the batch
        return None, e


def _serving_error(error: BaseException) -> ServingError:
    """A run's error as the requests get it: a ServingError as it is, anything else logged
    and reported as Internal."""
    if isinstance(error, ServingError):
        return error
    log.error("batch run failed", exc_info=error)
    return Internal(f"model failed: {error}")


def _lost_batch_dim(values: dict, total: int) -> Internal | None:
    """The error when an output of a run over ``total`` rows does not keep them."""
    for alias, v in values.items():
        if v.ndim == 0 or v.shape[0] != total:
            return Internal(
                f"output '{alias}' has shape {list(v.shape)}, which does not keep the batch "
                f"dimension of {total} rows; this signature cannot be batched"
            )
    return None


def _request_elements(request: _Request) -> int:
    return sum(a.size for a in request.arrays)


def _fail(requests, error: ServingError) -> None:
    for r in requests:
        if not r.future.done():
            r.future.set_exception(type(error)(error.message))


def _rows(arrays) -> int:
    if len(arrays) == 1:
        return arrays[0].shape[0]
    rows = {a.shape[0] for a in arrays}
    if len(rows) != 1:
        raise InvalidInput(
            f"all inputs must have the same batch size (leading dimension); got {sorted(rows)}"
        )
    return rows.pop()


def _shape_key(arrays, pad: bool) -> tuple:
    if len(arrays) == 1:  # (most signatures: no generator per request)
        a = arrays[0]
        return ((a.dtype.str, a.ndim if pad else a.shape[1:]),)
    if pad:
        return tuple((a.dtype.str, a.ndim) for a in arrays)
    return tuple((a.dtype.str, a.shape[1:]) for a in arrays)


def _pad_to(arr: np.ndarray, shape) -> np.ndarray:
    if arr.shape[1:] == tuple(shape):
        return arr
    fill = arr.reshape(-1)[0] if arr.size else (b"" if arr.dtype.kind == "O" else 0)
    out = np.empty((arr.shape[0],) + tuple(shape), dtype=arr.dtype)
    out[...] = fill
    out[tuple(slice(0, s) for s in arr.shape)] = arr
    return out


def _merge(requests: list[_Request], cfg: BatchingConfig):
    """The batch's inputs concatenated (and padded), its real row count and padding rows."""
    n_inputs = len(requests[0].arrays)
    merged = []
    real_rows = sum(r.rows for r in requests)
    target = real_rows
    if cfg.allowed_batch_sizes:
        target = next((s for s in cfg.allowed_batch_sizes if s >= real_rows), real_rows)
    for i in range(n_inputs):
        parts = [r.arrays[i] for r in requests]
        if cfg.pad_variable_length_inputs and len({p.shape[1:] for p in parts}) > 1:
            shape = np.max([p.shape[1:] for p in parts], axis=0)
            parts = [_pad_to(p, shape) for p in parts]
        block = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
        if target > real_rows:
            block = np.concatenate([block, np.repeat(block[-1:], target - real_rows, axis=0)])
        merged.append(block)
    return merged, real_rows, target - real_rows
