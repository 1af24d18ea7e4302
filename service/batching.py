"""Request scheduling: how a validated request reaches a signature's callable.

``DirectScheduler`` runs each request on its own in the compute thread pool.

``Batcher`` (one per model version) merges concurrent requests into one session run. Requests
for the same signature whose inputs all have an unknown leading (batch) dimension queue
together; requests whose other dimensions differ go to separate batches unless
``pad_variable_length_inputs`` is on. While a batch thread is free, the oldest waiting batch
starts on the next turn of the event loop with every request read in the same turn (it never
waits on a timer); while every thread is busy, requests keep joining the open batch until it
holds ``max_batch_size`` rows or its oldest request has waited ``batch_timeout_micros``, and the
thread that frees up takes the oldest batch with the compatible batches waiting behind it. Up
to ``num_batch_threads`` batches (0: one per compute thread; at least one per model instance;
never more than the compute threads) run at once, off the event loop, each on the least busy
instance; at most ``max_enqueued_batches`` batches wait, and beyond that requests fail fast
with ``QueueFull`` (503) instead of growing memory. No task runs per batch: a finished run is
one callback on the loop that splits the results back by row count (each request gets exactly
its rows, in order) and starts the next waiting batch. A batch runs on the event loop instead
(inline compute) when its run is estimated cheap, or when each of its requests would have run
there unbatched. While requests arrive one at a time, a
cheap one runs at once as a batch of its own (no queue, no extra loop turns); a second request
in the same loop turn switches back to queueing and merging until a batch holds one request.

A request whose deadline passes while queued gets ``DeadlineExceeded`` (504) and never runs; a
request whose client disconnects (its task is cancelled) leaves the queue before execution.
An error while running a batch reaches every request in it; the batcher keeps serving.

Padding: with ``allowed_batch_sizes`` a batch is padded up to the next allowed size by
repeating its last row; with ``pad_variable_length_inputs`` each input is padded at the end of
every non-batch dimension to the largest size in the batch, with the first element of that
request's tensor (TF Serving's choice). Padding rows never reach a response; outputs keep the
padded sizes of their non-batch dimensions, as in TF Serving.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from engine.runtime import Cancellation
from service import tracing
from service.batch_parts import (
    Overdue,
    _attempt,
    _Batch,
    _fail,
    _lost_batch_dim,
    _merge,
    _Request,
    _request_elements,
    _rows,
    _Run,
    _serving_error,
    _shape_key,
    _timed_run,
    _Watch,
    runs_inline,
)
from service.config import BatchingConfig
from service.cpus import available_cores
from service.errors import DeadlineExceeded, Internal, QueueFull, ServingError, TooLarge

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from service.metrics import ServingMetrics
    from service.servable import Signature

__all__ = ["DirectScheduler", "Batcher", "Overdue", "runs_inline"]

log = logging.getLogger("flowserve.batching")


class DirectScheduler:
    """Runs each request alone, in ``executor`` or inline (``runs_inline``; one inline run
    in ``CPU_SAMPLE`` reads its CPU time, a system call; every run feeds the cost estimate,
    the others with their wall time, never below their CPU time on the loop)."""

    CPU_SAMPLE = 8

    def __init__(
        self,
        executor: Executor,
        metrics: ServingMetrics | None = None,
        model: str = "",
        version: str = "",
        overdue: Overdue | None = None,
        inline_seconds: float = 0.0,
    ):
        self._executor, self._metrics, self._overdue = executor, metrics, overdue
        self._labels = (model, version)
        self._inline_seconds = inline_seconds
        self._direct_run = getattr(metrics, "direct_run", None)  # an observer's one report
        self._inline_runs = 0

    async def submit(
        self, signature: Signature, arrays: list[np.ndarray], deadline: float
    ) -> dict[str, np.ndarray]:
        loop = asyncio.get_running_loop()
        remaining = deadline - loop.time()
        if remaining <= 0:
            self._reject("deadline")
            raise DeadlineExceeded("deadline exceeded before the request could run")
        run_span = self._span(signature, arrays) if tracing.active() else None
        if runs_inline(signature, arrays, self._inline_seconds):
            self._inline_runs += 1
            try:
                if self._inline_runs % self.CPU_SAMPLE == 1:
                    values, seconds, waited, cpu = _timed_run(signature, arrays)
                else:  # its wall time, never below its CPU time (the estimate takes the least)
                    t0 = time.perf_counter()
                    values = signature.run(arrays)
                    seconds, waited, cpu = time.perf_counter() - t0, 0.0, None
            finally:
                tracing.end_span(run_span)
        else:
            token = Cancellation()
            work = self._executor.submit(_timed_run, signature, arrays, token, time.perf_counter())
            future = asyncio.wrap_future(work, loop=loop)
            # A timer, not wait_for (no task per request). On expiry or when the client goes,
            # the run stops at its next op (inside one long kernel it runs on, as overdue).
            expired = []
            timer = loop.call_at(deadline, _expire, future, expired)
            try:
                values, seconds, waited, cpu = await future
            except asyncio.CancelledError:
                token.cancel("deadline exceeded" if expired else "request cancelled")
                if self._overdue is not None:
                    self._overdue.watch(work)
                if not expired:
                    raise
                self._reject("deadline")
                raise DeadlineExceeded(
                    f"deadline exceeded while running the model (limit {remaining:.3f}s)"
                ) from None
            finally:
                timer.cancel()
                tracing.end_span(run_span)
        signature.observe(arrays, seconds, cpu)
        if self._direct_run is not None:
            self._direct_run(*self._labels, seconds, waited)
        elif self._metrics is not None:
            self._metrics.executor_wait(*self._labels, waited, batched=False)
            self._metrics.session_run(*self._labels, seconds)
        return values

    def _span(self, signature: Signature, arrays: list[np.ndarray]):
        """The session_run span (only when tracing: its attributes cost their making)."""
        batch = _rows(arrays) if signature.batchable else 1
        model, version = self._labels
        return tracing.start_span(
            "session_run", None, model=model, version=version, batch_size=batch
        )

    def _reject(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.rejected(*self._labels, reason)

    async def close(self) -> None:
        return None


def _expire(future, expired: list) -> None:
    if not future.done():
        expired.append(True)
        future.cancel()


class Batcher:
    """Dynamic batching for one model version (see the module docstring)."""

    def __init__(
        self,
        config: BatchingConfig,
        executor: Executor,
        metrics: ServingMetrics | None = None,
        model: str = "",
        version: str = "",
        instances: int = 1,
        overdue: Overdue | None = None,
        inline_seconds: float = 0.0,
        compute_threads: int | None = None,
    ):
        self.config = config
        self._inline_seconds = inline_seconds
        self._overdue = overdue
        # Batches running at once: the batch threads (num_batch_threads, 0: one per thread
        # of ``executor``, ``compute_threads``), and at least one per model instance so that
        # every instance can be busy; never more than the executor's threads: a batch
        # beyond them would close only to wait in the executor's queue, where it can take
        # no more requests.
        threads = config.num_batch_threads or compute_threads or available_cores()
        self._concurrency = max(threads, instances)
        if compute_threads:
            self._concurrency = min(self._concurrency, compute_threads)
        self._executor = executor
        self._metrics = metrics
        # An observer's one report per batch / per request run at once, where it has them
        self._queue_waits = getattr(metrics, "queue_waits", None)
        self._ran_at_once = getattr(metrics, "ran_at_once", None)
        self._labels = (model, version)
        self._direct = DirectScheduler(
            executor, metrics, model, version, overdue=overdue, inline_seconds=inline_seconds
        )
        self._open: dict[tuple, _Batch] = {}
        # Closed batches waiting for a batch thread (a deque, so a batch being started can
        # take compatible waiting batches along).
        self._ready: collections.deque[_Batch] = collections.deque()
        self._running = 0  # batches handed to a thread and not yet finished
        self._dispatching: asyncio.Handle | None = None  # a dispatch scheduled for next turn
        self._queued_requests = 0
        self._closed = False
        # A request already ran at once in this turn of the loop: the rest of the turn's
        # arrivals queue and merge (reset on the next turn).
        self._turn_taken = False
        # Requests have been arriving one at a time (a turn's first request ran at once and
        # none followed it; or the last batch held one request): the next may run at once.
        self._lone = True

    # -- public ---------------------------------------------------------------------------
    @property
    def concurrency(self) -> int:
        """Batches that may run at once (``num_batch_threads``, 0: one per compute thread;
        at least one per model instance; at most the compute threads)."""
        return self._concurrency

    async def submit(
        self, signature: Signature, arrays: list[np.ndarray], deadline: float
    ) -> dict[str, np.ndarray]:
        if not signature.batchable:
            return await self._direct.submit(signature, arrays, deadline)
        rows = _rows(arrays)
        cfg = self.config
        if rows > cfg.max_batch_size:
            if not cfg.enable_large_batch_splitting:
                self._reject("too_large")
                raise TooLarge(
                    f"Task size {rows} is larger than maximum batch size "
                    f"{cfg.max_batch_size} (enable_large_batch_splitting to split "
                    "large requests across batches)"
                )
            return await self._submit_split(signature, arrays, rows, deadline)
        if rows == 0:
            return await self._direct.submit(signature, arrays, deadline)
        if self._may_run_at_once(signature, arrays):
            return self._run_at_once(signature, arrays, rows, deadline)
        request = self._queue(signature, arrays, rows, deadline)
        try:
            return await request.future
        except BaseException:  # missed its deadline, cancelled, or its run failed
            if request.watch is not None:
                request.watch.left()
            raise
        finally:
            tracing.end_span(request.wait)  # already ended when its batch started

    async def close(self) -> None:
        """Stops batching: queued requests fail with QueueFull (503, retry); batches already
        running finish and deliver their results."""
        self._closed = True
        if self._dispatching is not None:
            self._dispatching.cancel()
            self._dispatching = None
        for batch in list(self._open.values()):
            self._close_batch(batch)
        while self._ready:
            batch = self._ready.popleft()
            self._disarm(batch)
            self._queued_requests -= len(batch.requests)
            _fail(batch.requests, QueueFull("the model version is being unloaded; retry"))
        self._set_depth()

    # -- queueing -------------------------------------------------------------------------
    def _enqueued_batches(self) -> int:
        return len(self._open) + len(self._ready)

    def _queue(self, signature, arrays, rows, deadline) -> _Request:
        """Puts a request in its open batch (opening one if needed) and schedules a
        dispatch when a batch thread is free; the queued request, whose future the caller
        awaits."""
        if self._closed:
            raise QueueFull("the model version is being unloaded; retry")
        loop = asyncio.get_running_loop()
        if self._turn_taken:
            self._lone = False  # a second request in one turn: merge until traffic thins
        key = (signature.key, _shape_key(arrays, self.config.pad_variable_length_inputs))
        batch = self._open.get(key)
        if batch is not None and batch.rows + rows > self.config.max_batch_size:
            self._close_batch(batch)
            batch = None
        if batch is None:
            if self._enqueued_batches() >= self.config.max_enqueued_batches:
                self._reject("queue_full")
                raise QueueFull(
                    f"The batching queue is full ({self.config.max_enqueued_batches}"
                    " batches waiting); retry later"
                )
            batch = self._open[key] = _Batch(signature, key)
            if self.config.batch_timeout_micros:
                # Only matters while every batch thread is busy: a free one takes the batch
                # on the next turn of the loop whatever its age.
                timeout = self.config.batch_timeout_micros / 1e6
                batch.timer = loop.call_later(timeout, self._close_batch, batch)
        request = _Request(arrays, rows, loop.create_future(), deadline, loop.time())
        if deadline < batch.deadline:
            self._arm(loop, batch, deadline)
        if tracing.active():
            request.trace = tracing.capture()
            request.wait = tracing.start_span(
                "queue_wait", request.trace, model=self._labels[0], version=self._labels[1]
            )
        batch.requests.append(request)
        batch.rows += rows
        self._queued_requests += 1
        if batch.rows >= self.config.max_batch_size:
            self._close_batch(batch)
        if self._running < self._concurrency and self._dispatching is None:
            # A batch thread is free: the batch starts on the next turn of the loop, with
            # every request read in this turn (concurrent arrivals merge; none waits on a
            # timer).
            self._dispatching = loop.call_soon(self._dispatch)
        elif self._dispatching is None:
            self._set_depth()  # (else the dispatch on the next turn reports the depth)
        return request

    def _may_run_at_once(self, signature, arrays) -> bool:
        """Whether a request runs at once, on the loop, without queueing: requests have been
        arriving one at a time, it is the first of this turn of the loop, nothing waits
        before it, and it is estimated cheap enough to run inline. So a lone client pays no
        queueing (two loop turns, a timer, a future) over unbatched serving. A second
        request in the same turn queues, and from then on every request queues and merges
        until a batch starts with a single request in it (traffic thinned out again)."""
        return (
            self._lone
            and not self._closed
            and self._dispatching is None
            and not self._turn_taken
            and not self._open
            and not self._ready
            and not self.config.allowed_batch_sizes
            and runs_inline(signature, arrays, self._inline_seconds)
            and not tracing.active()
        )

    def _run_at_once(self, signature, arrays, rows, deadline):
        """Runs one request as a batch of its own, here and now (see ``_may_run_at_once``)."""
        loop = asyncio.get_running_loop()
        if loop.time() >= deadline:
            self._reject("deadline")
            raise DeadlineExceeded("deadline exceeded before the request could run")
        self._turn_taken = True
        loop.call_soon(self._next_turn)
        result, error = _attempt(signature, arrays)
        if error is not None:
            raise _serving_error(error)
        values, seconds, _, cpu = result
        signature.observe(arrays, seconds, cpu)
        if self._ran_at_once is not None:
            self._ran_at_once(*self._labels, rows, seconds)
        elif self._metrics is not None:
            self._metrics.queue_wait(*self._labels, 0.0)
            self._metrics.batch(*self._labels, rows, 0, seconds)
        wrong = _lost_batch_dim(values, rows)
        if wrong is not None:
            raise wrong
        return values

    def _next_turn(self) -> None:
        self._turn_taken = False

    def _close_batch(self, batch: _Batch) -> None:
        if batch.closed:
            return
        batch.closed = True
        if batch.timer is not None:
            batch.timer.cancel()
        if self._open.get(batch.key) is batch:
            del self._open[batch.key]
        self._ready.append(batch)

    def _arm(self, loop, batch: _Batch, deadline: float) -> None:
        """Sets ``batch``'s deadline timer to fire at ``deadline``."""
        if batch.expiry is not None:
            batch.expiry.cancel()
        batch.deadline = deadline
        batch.expiry = loop.call_at(deadline, self._expire, batch)

    def _expire(self, batch: _Batch) -> None:
        """``batch``'s earliest deadline passed: its requests past their deadline fail
        (queued or running), and the timer is set for the next pending deadline."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        batch.expiry = None
        batch.deadline = next_deadline = float("inf")
        for r in batch.requests:
            if r.future.done():
                continue
            if r.deadline <= now:
                self._reject("deadline")
                r.future.set_exception(
                    DeadlineExceeded("deadline exceeded while the request was queued or running")
                )
            elif r.deadline < next_deadline:
                next_deadline = r.deadline
        if next_deadline != float("inf"):
            self._arm(loop, batch, next_deadline)

    @staticmethod
    def _disarm(batch: _Batch) -> None:
        if batch.expiry is not None:
            batch.expiry.cancel()
            batch.expiry = None

    def _reject(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.rejected(*self._labels, reason)

    def _set_depth(self) -> None:
        if self._metrics is not None:
            self._metrics.queue_depth(*self._labels, self._queued_requests)

    async def _submit_split(self, signature, arrays, rows, deadline):
        step = self.config.max_batch_size
        chunks = [[a[i : i + step] for a in arrays] for i in range(0, rows, step)]
        parts = await asyncio.gather(*(self.submit(signature, c, deadline) for c in chunks))
        return {alias: np.concatenate([p[alias] for p in parts], axis=0) for alias in parts[0]}

    # -- execution ------------------------------------------------------------------------
    def _dispatch(self) -> None:
        """Starts waiting batches while batch threads are free: the oldest closed batch,
        else the oldest open one (a free thread never waits on a batch's timer)."""
        self._dispatching = None
        self._set_depth()
        while self._running < self._concurrency and not self._closed:
            if not self._ready:
                if not self._open:
                    return
                self._close_batch(next(iter(self._open.values())))
            batch = self._take()
            try:
                self._start(batch)
            except Exception as e:  # noqa: BLE001 - its requests must not hang
                log.exception("starting a batch failed")
                _fail(batch.requests, Internal(f"batching failed: {e}"))

    def _take(self) -> _Batch:
        """The oldest waiting batch, merged with later waiting batches it can hold."""
        batch = self._ready.popleft()
        limit = self.config.max_batch_size
        if self._ready and batch.rows < limit:
            keep = collections.deque()
            while self._ready:
                other = self._ready.popleft()
                if other.key == batch.key and batch.rows + other.rows <= limit:
                    batch.requests.extend(other.requests)
                    batch.rows += other.rows
                    if other.deadline < batch.deadline:  # one timer for the merged batch
                        self._arm(asyncio.get_running_loop(), batch, other.deadline)
                    self._disarm(other)
                else:
                    keep.append(other)
            self._ready = keep
        return batch

    def _start(self, batch: _Batch) -> None:
        """Hands ``batch`` to a batch thread (or runs it here when estimated cheap). No task
        per batch: the thread's completion is one callback on the loop, which delivers the
        results and starts the next waiting batch in the same turn."""
        loop = asyncio.get_running_loop()
        live = [r for r in batch.requests if not r.future.done()]
        self._queued_requests -= len(batch.requests)
        self._lone = len(batch.requests) == 1
        self._set_depth()
        if not live:
            self._disarm(batch)
            return
        now = loop.time()
        if self._queue_waits is not None:  # one report per batch
            self._queue_waits(*self._labels, [now - r.enqueued for r in live])
        elif self._metrics is not None:
            for r in live:
                self._metrics.queue_wait(*self._labels, now - r.enqueued)
        try:
            merged, real_rows, padding = _merge(live, self.config)
        except ServingError as e:
            self._disarm(batch)
            _fail(live, e)
            return
        run = _Run(batch, live, merged, real_rows, padding)
        traced = [r for r in live if r.trace is not None]
        if traced:
            self._running += 1
            task = loop.create_task(self._run_traced(run, traced))
            task.add_done_callback(self._traced_done)
            return
        if self._runs_inline(run):
            self._finish(run, *_attempt(run.signature, merged))
            return
        self._running += 1
        try:
            work = self._launch(run)
        except RuntimeError as e:  # the executor is shut down
            self._running -= 1
            self._disarm(batch)
            _fail(live, QueueFull(f"the model version is being unloaded; retry ({e})"))
            return

        def done(work) -> None:
            try:
                loop.call_soon_threadsafe(self._completed, run, work)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

        work.add_done_callback(done)

    def _runs_inline(self, run: _Run) -> bool:
        """Whether a merged batch runs on the event loop: when its whole run is estimated
        under the inline limit, or when every request in it would have run on the loop
        alone (batching off). The merged run costs at most what those requests cost one by
        one, so batching never moves onto a thread work that unbatched serving keeps on the
        loop: a thread hop for a small batch costs more than the batch (a wakeup, the GIL
        handed back and forth while the loop serves other requests, a callback back), and
        under load those hops made batching's tail worse than unbatched serving's."""
        limit = self._inline_seconds
        if runs_inline(run.signature, run.merged, limit):
            return True
        if limit <= 0 or len(run.live) < 2:
            return False
        largest = max(run.live, key=_request_elements)
        return runs_inline(run.signature, largest.arrays, limit)

    def _launch(self, run: _Run) -> Future:
        """Submits the run to the executor, with a token that cancels it once every request
        in it has gone (see ``_Watch``)."""
        watch = _Watch(len(run.live), self._overdue)
        for r in run.live:
            r.watch = watch
        work = watch.work = self._executor.submit(
            _timed_run, run.signature, run.merged, watch.token, time.perf_counter()
        )
        return work

    def _completed(self, run: _Run, work: Future) -> None:
        self._running -= 1
        try:
            outcome = (work.result(), None)
        except Exception as e:  # noqa: BLE001 - reported to every request in the batch
            outcome = (None, e)
        try:
            self._finish(run, *outcome)
        finally:
            self._dispatch()

    async def _run_traced(self, run: _Run, traced: list[_Request]) -> None:
        """A batch with traced requests: the same run inside its ``batch`` and
        ``session_run`` spans (a task, so the spans are current while it runs)."""
        for r in traced:
            tracing.end_span(r.wait)
            r.wait = None
        with tracing.batch_span(
            [r.trace for r in traced],
            model=self._labels[0],
            version=self._labels[1],
            batch_size=run.real_rows,
            requests=len(run.live),
        ):
            with tracing.span(
                "session_run",
                model=self._labels[0],
                version=self._labels[1],
                batch_size=run.real_rows + run.padding,
            ):
                if self._runs_inline(run):
                    result, error = _attempt(run.signature, run.merged)
                else:
                    try:
                        result, error = await asyncio.wrap_future(self._launch(run)), None
                    except Exception as e:  # noqa: BLE001 - reported to every request
                        result, error = None, e
            self._finish(run, result, error)

    def _traced_done(self, task: asyncio.Task) -> None:
        self._running -= 1
        if not task.cancelled() and task.exception() is not None:
            log.error("batch execution failed unexpectedly", exc_info=task.exception())
        self._dispatch()

    def _finish(self, run: _Run, result, error: BaseException | None) -> None:
        """Delivers a finished run: each live request its rows, or the run's error."""
        live = run.live
        self._disarm(run.batch)
        if error is not None:
            _fail(live, _serving_error(error))
            return
        values, seconds, waited, cpu = result
        run.signature.observe(run.merged, seconds, cpu)
        if self._metrics is not None:
            if waited:  # every request waited as long for the thread: one sum (inline: none)
                self._metrics.executor_wait(*self._labels, waited * len(live), batched=True)
            self._metrics.batch(*self._labels, run.real_rows, run.padding, seconds)
        wrong = _lost_batch_dim(values, run.real_rows + run.padding)
        if wrong is not None:
            _fail(live, wrong)
            return
        offset = 0
        for r in live:
            if not r.future.done():
                r.future.set_result({a: v[offset : offset + r.rows] for a, v in values.items()})
            offset += r.rows
