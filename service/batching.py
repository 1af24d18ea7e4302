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
to ``num_batch_threads`` batches (and at least one per model instance) run at once, off the
event loop, each on the least busy instance; at most ``max_enqueued_batches`` batches wait, and
beyond that requests fail fast with ``QueueFull`` (503) instead of growing memory. No task runs
per batch: a finished run is one callback on the loop that splits the results back by row
count (each request gets exactly its rows, in order) and starts the next waiting batch. A
batch runs on the event loop instead (inline compute) when its run is estimated cheap, or when
each of its requests would have run there unbatched. While requests arrive one at a time, a
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
from service.config import BatchingConfig
from service.errors import (
    DeadlineExceeded,
    Internal,
    InvalidInput,
    QueueFull,
    ServingError,
    TooLarge,
)

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from service.metrics import ServingMetrics
    from service.servable import Signature

__all__ = ["DirectScheduler", "Batcher", "Overdue", "warn_blas_threads"]

log = logging.getLogger("flowserve.batching")


_warned_blas: set[int] = set()


def warn_blas_threads(intra_op_threads: int) -> None:
    """Logs once per process (and thread count) that batching with several BLAS threads per
    computation is fragile. Measured with ``bench/batching.py`` (part ``blas``): while another
    process used one of two cores, a 16-row batch of a 784-256-128-10 MLP took 184 ms with
    two BLAS threads instead of 1.6 ms with one, and batching's p99 became 3x unbatched."""
    if intra_op_threads > 1 and intra_op_threads not in _warned_blas:
        _warned_blas.add(intra_op_threads)
        log.warning(
            "batching with intra_op_threads=%d: each batched run uses several BLAS threads, "
            "which stall when other work shares the cores (tail latency several times "
            "worse than without batching); intra_op_threads=1 avoids it",
            intra_op_threads,
        )


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


class DirectScheduler:
    """Runs each request alone, in ``executor`` or inline (``runs_inline``; one inline run
    in ``CPU_SAMPLE`` reads its CPU time, a system call, to keep the cost estimate)."""

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
            learn = self._inline_runs % self.CPU_SAMPLE == 1
            try:
                if learn:
                    values, seconds, waited, cpu = _timed_run(signature, arrays)
                else:
                    t0 = time.perf_counter()
                    values = signature.run(arrays)
                    seconds, waited = time.perf_counter() - t0, 0.0
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
            learn = True
        if learn:
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


def runs_inline(signature: Signature, arrays: list[np.ndarray], limit: float) -> bool:
    """Whether a run is cheap enough to run on the event loop: its estimated compute time
    (learned at warmup, kept current from every run) is under ``limit`` seconds. Handing a
    run of a few microseconds to a thread costs more than the run (a queue, a wakeup, a
    callback back to the loop); a big one stays off the loop."""
    if limit <= 0:
        return False
    estimate = signature.estimated_seconds(arrays)
    return estimate is not None and estimate < limit


def _expire(future, expired: list) -> None:
    if not future.done():
        expired.append(True)
        future.cancel()


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
    ):
        self.config = config
        self._inline_seconds = inline_seconds
        self._overdue = overdue
        # Batches running at once: the batch threads, and at least one per model instance so
        # that every instance can be busy.
        self._concurrency = max(config.threads, instances)
        self._executor = executor
        self._metrics = metrics
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
        return await self._enqueue(signature, arrays, rows, deadline)

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

    async def _enqueue(self, signature, arrays, rows, deadline):
        loop = asyncio.get_running_loop()
        if self._closed:
            raise QueueFull("the model version is being unloaded; retry")
        if self._may_run_at_once(signature, arrays):
            return self._run_at_once(loop, signature, arrays, rows, deadline)
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
        try:
            return await request.future
        except BaseException:  # missed its deadline, cancelled, or its run failed
            if request.watch is not None:
                request.watch.left()
            raise
        finally:
            tracing.end_span(request.wait)  # already ended when its batch started

    def _may_run_at_once(self, signature, arrays) -> bool:
        """Whether a request runs at once, on the loop, without queueing: requests have been
        arriving one at a time, it is the first of this turn of the loop, nothing waits
        before it, and it is estimated cheap enough to run inline. So a lone client pays no
        queueing (two loop turns, a timer, a future) over unbatched serving. A second
        request in the same turn queues, and from then on every request queues and merges
        until a batch starts with a single request in it (traffic thinned out again)."""
        return (
            self._lone
            and self._dispatching is None
            and not self._turn_taken
            and not self._open
            and not self._ready
            and not self.config.allowed_batch_sizes
            and runs_inline(signature, arrays, self._inline_seconds)
            and not tracing.active()
        )

    def _run_at_once(self, loop, signature, arrays, rows, deadline):
        """Runs one request as a batch of its own, here and now (see ``_may_run_at_once``)."""
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
        if self._metrics is not None:
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
        parts = await asyncio.gather(
            *(self._enqueue(signature, c, _rows(c), deadline) for c in chunks)
        )
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
        if self._metrics is not None:
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
