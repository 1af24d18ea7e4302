"""The batcher without HTTP: a fake signature records exactly what each session run saw."""

import asyncio
import threading
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor

import numpy as np
import pytest

from service.batching import Batcher
from service.config import BatchingConfig
from service.errors import DeadlineExceeded, Internal, InvalidInput, QueueFull, TooLarge
from service.metrics import ServingMetrics


class FakeSignature:
    """y = 2x (+ a row id column); records each run; can block or fail on demand."""

    key = "serving_default"

    def __init__(self, batchable=True, keep_batch_dim=True):
        self.batchable = batchable
        self.keep_batch_dim = keep_batch_dim
        self.runs: list[list[np.ndarray]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail_next = None

    def estimated_seconds(self, arrays):  # noqa: ARG002 - never measured: runs on threads
        return None

    def observe(self, arrays, seconds, cpu_seconds=None):
        pass

    def run(self, arrays, cancellation=None):  # noqa: ARG002 - Signature.run's signature
        self.gate.wait(timeout=30)
        self.runs.append([a.copy() for a in arrays])
        if self.fail_next is not None:
            err, self.fail_next = self.fail_next, None
            raise err
        x = arrays[0]
        if not self.keep_batch_dim:
            return {"y": np.asarray(x.sum())}
        return {"y": x * 2}


@pytest.fixture
def pool():
    with ThreadPoolExecutor(4) as p:
        yield p


def batcher(pool, metrics=None, **kw):
    cfg = BatchingConfig(enabled=True, **{"batch_timeout_micros": 20_000, **kw}).validate("t")
    return Batcher(cfg, pool, metrics, "m", "1")


def deadline(seconds=10.0):
    return asyncio.get_running_loop().time() + seconds


async def test_concurrent_requests_merge_and_split_back_in_order(pool):
    sig = FakeSignature()
    b = batcher(pool, max_batch_size=32)
    inputs = [
        np.arange(i, i + n, dtype=np.float32).reshape(n, 1)
        for i, n in [(0, 1), (10, 3), (20, 2), (30, 1)]
    ]
    results = await asyncio.gather(*(b.submit(sig, [x], deadline()) for x in inputs))
    assert len(sig.runs) == 1 and sig.runs[0][0].shape == (7, 1)
    for x, r in zip(inputs, results):
        np.testing.assert_array_equal(r["y"], x * 2)
    await b.close()


async def test_a_full_batch_runs_at_once_and_a_lone_request_after_the_timeout(pool):
    sig = FakeSignature()
    b = batcher(pool, max_batch_size=4, batch_timeout_micros=5_000_000)
    x = np.ones((4, 2), np.float32)
    r = await asyncio.wait_for(b.submit(sig, [x], deadline()), 2.0)  # full: no 5 s wait
    np.testing.assert_array_equal(r["y"], x * 2)
    quick = batcher(pool, max_batch_size=64, batch_timeout_micros=1000)
    r = await asyncio.wait_for(quick.submit(sig, [np.ones((1, 2), np.float32)], deadline()), 2)
    assert r["y"].shape == (1, 2)
    await b.close()
    await quick.close()


async def test_batches_never_exceed_max_batch_size(pool):
    sig = FakeSignature()
    b = batcher(pool, max_batch_size=4)
    await asyncio.gather(
        *(b.submit(sig, [np.full((3, 1), i, np.float32)], deadline()) for i in range(5))
    )
    assert [r[0].shape[0] for r in sig.runs] == [3] * 5
    await b.close()


async def test_different_inner_shapes_never_share_a_batch(pool):
    sig = FakeSignature()
    b = batcher(pool)
    a, c = np.ones((1, 2), np.float32), np.ones((1, 3), np.float32)
    ra, rc = await asyncio.gather(b.submit(sig, [a], deadline()), b.submit(sig, [c], deadline()))
    assert sorted(r[0].shape for r in sig.runs) == [(1, 2), (1, 3)]
    assert ra["y"].shape == (1, 2) and rc["y"].shape == (1, 3)
    await b.close()


async def test_pad_variable_length_inputs_pads_with_the_first_element(pool):
    sig = FakeSignature()
    b = batcher(pool, pad_variable_length_inputs=True)
    a = np.array([[7, 1]], np.float32)
    c = np.array([[5, 6, 8]], np.float32)
    ra, rc = await asyncio.gather(b.submit(sig, [a], deadline()), b.submit(sig, [c], deadline()))
    (run,) = sig.runs
    np.testing.assert_array_equal(run[0], [[7, 1, 7], [5, 6, 8]])
    np.testing.assert_array_equal(ra["y"], [[14, 2, 14]])  # outputs keep the padded width
    np.testing.assert_array_equal(rc["y"], [[10, 12, 16]])
    await b.close()


async def test_allowed_batch_sizes_pad_rows_that_never_reach_responses(pool):
    metrics = ServingMetrics()
    sig = FakeSignature()
    b = batcher(pool, metrics, max_batch_size=8, allowed_batch_sizes=(2, 4, 8))
    xs = [np.full((1, 1), i, np.float32) for i in range(3)]
    results = await asyncio.gather(*(b.submit(sig, [x], deadline()) for x in xs))
    (run,) = sig.runs
    np.testing.assert_array_equal(run[0].ravel(), [0, 1, 2, 2])  # padded to 4 with the last row
    assert [r["y"].tolist() for r in results] == [[[0.0]], [[2.0]], [[4.0]]]
    text = metrics.render().decode()
    assert 'flowserve_batch_padding_rows_total{model="m",version="1"} 1.0' in text
    assert 'flowserve_batch_size_rows_sum{model="m",version="1"} 3.0' in text
    await b.close()


async def test_large_requests_split_or_rejected(pool):
    sig = FakeSignature()
    b = batcher(pool, max_batch_size=4)
    with pytest.raises(TooLarge, match="Task size 10 is larger than maximum batch size 4"):
        await b.submit(sig, [np.ones((10, 1), np.float32)], deadline())
    split = batcher(pool, max_batch_size=4, enable_large_batch_splitting=True)
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    r = await split.submit(sig, [x], deadline())
    np.testing.assert_array_equal(r["y"], x * 2)
    assert sorted(run[0].shape[0] for run in sig.runs) == [2, 4, 4]
    await b.close()
    await split.close()


async def test_request_expiring_in_the_queue_gets_504_and_never_runs(pool):
    metrics = ServingMetrics()
    sig = FakeSignature()
    sig.gate.clear()  # the first batch blocks the only worker
    b = batcher(pool, metrics, num_batch_threads=1, batch_timeout_micros=1000)
    first = asyncio.create_task(b.submit(sig, [np.full((1, 1), 1, np.float32)], deadline()))
    await asyncio.sleep(0.05)
    with pytest.raises(DeadlineExceeded):
        await b.submit(sig, [np.full((1, 1), 2, np.float32)], deadline(0.1))
    sig.gate.set()
    await first
    await asyncio.sleep(0.05)
    assert [float(r[0][0, 0]) for r in sig.runs] == [1.0]  # the expired request never ran
    assert 'reason="deadline"' in metrics.render().decode()
    await b.close()


async def test_each_queued_request_expires_at_its_own_deadline(pool):
    """A batch keeps one deadline timer for its earliest deadline; a later request with an
    earlier deadline moves it, and after firing it waits for the next one."""
    sig = FakeSignature()
    sig.gate.clear()  # the first batch blocks the only worker
    b = batcher(pool, num_batch_threads=1, batch_timeout_micros=60_000_000)
    first = asyncio.create_task(b.submit(sig, [np.full((1, 1), 1, np.float32)], deadline()))
    await asyncio.sleep(0.05)
    late = asyncio.create_task(b.submit(sig, [np.full((1, 1), 2, np.float32)], deadline(0.4)))
    early = asyncio.create_task(b.submit(sig, [np.full((1, 1), 3, np.float32)], deadline(0.15)))
    keeps = asyncio.create_task(b.submit(sig, [np.full((1, 1), 4, np.float32)], deadline()))
    done, _ = await asyncio.wait([late, early], return_when=asyncio.FIRST_COMPLETED)
    assert done == {early} and isinstance(early.exception(), DeadlineExceeded)
    assert not late.done() and not keeps.done()
    with pytest.raises(DeadlineExceeded):
        await late
    sig.gate.set()
    assert (await asyncio.wait_for(keeps, 20))["y"].tolist() == [[8.0]]
    await first
    assert [run[0].ravel().tolist() for run in sig.runs] == [[1.0], [4.0]]
    await b.close()


@pytest.mark.parametrize(
    "params, compute_threads, rows",
    [
        # One batch per compute thread: while the first runs, later requests keep merging.
        ({}, 1, [1, 3]),
        # Never more batches than threads (the old default under --workers ran one per core
        # on a worker's share of them: each later request closed a batch of its own, which
        # then waited in the executor's queue unable to take more).
        ({"num_batch_threads": 4}, 1, [1, 3]),
        ({}, 4, [1, 1, 1, 1]),  # 0 follows the compute threads, whatever they are
        ({"num_batch_threads": 2}, 4, [1, 1, 2]),  # fewer than the threads: as asked
    ],
)
async def test_batches_run_one_per_compute_thread_at_most(pool, params, compute_threads, rows):
    sig = FakeSignature()
    sig.gate.clear()  # every run blocks until released
    cfg = BatchingConfig(enabled=True, **params).validate("t")
    b = Batcher(cfg, pool, None, "m", "1", compute_threads=compute_threads)
    tasks = []
    for i in range(4):  # one request per turn of the loop: none merges with the one before
        x = np.full((1, 1), i, np.float32)
        tasks.append(asyncio.create_task(b.submit(sig, [x], deadline())))
        await asyncio.sleep(0.02)
    sig.gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), 20)
    assert [r["y"].tolist() for r in results] == [[[2.0 * i]] for i in range(4)]
    assert sorted(run[0].shape[0] for run in sig.runs) == rows
    await b.close()


class SpinningSignature(FakeSignature):
    """Runs until its run is cancelled (or 20 s), recording whether it was."""

    def __init__(self):
        super().__init__()
        self.stopped = []

    def run(self, arrays, cancellation=None):
        end = time.monotonic() + 20
        while not cancellation.cancelled and time.monotonic() < end:
            time.sleep(0.001)
        self.stopped.append(cancellation.cancelled)
        return super().run(arrays, cancellation)


async def test_a_thread_run_is_cancelled_once_every_request_in_it_has_gone(pool):
    sig = SpinningSignature()
    b = batcher(pool, num_batch_threads=1)
    # Two requests in one batch on the thread: one leaves (client gone), one misses its
    # deadline; only then is the run cancelled, and the thread serves the next request.
    first = asyncio.create_task(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()))
    second = asyncio.create_task(b.submit(sig, [np.ones((1, 1), np.float32)], deadline(0.2)))
    await asyncio.sleep(0.05)
    first.cancel()
    await asyncio.sleep(0.05)
    assert sig.stopped == []  # one request still waits for the run
    with pytest.raises(DeadlineExceeded):
        await second
    for _ in range(500):
        if sig.stopped:
            break
        await asyncio.sleep(0.01)
    assert sig.stopped == [True] and first.cancelled()
    sig.run = FakeSignature.run.__get__(sig)  # the next run ends at once
    r = await asyncio.wait_for(b.submit(sig, [np.full((1, 1), 5, np.float32)], deadline()), 20)
    assert r["y"].tolist() == [[10.0]]
    await b.close()


async def test_cancelled_request_leaves_the_queue_before_execution(pool):
    sig = FakeSignature()
    sig.gate.clear()  # the first batch holds the only worker, so the next requests queue
    b = batcher(pool, num_batch_threads=1, batch_timeout_micros=200_000)
    first = asyncio.create_task(b.submit(sig, [np.full((1, 1), 1, np.float32)], deadline()))
    await asyncio.sleep(0.05)
    gone = asyncio.create_task(b.submit(sig, [np.full((1, 1), 9, np.float32)], deadline()))
    stays = asyncio.create_task(b.submit(sig, [np.full((1, 1), 3, np.float32)], deadline()))
    await asyncio.sleep(0.02)
    gone.cancel()  # what aiohttp does when the client disconnects
    sig.gate.set()
    r = await stays
    await first
    assert r["y"].tolist() == [[6.0]]
    assert [run[0].ravel().tolist() for run in sig.runs] == [[1.0], [3.0]]
    assert gone.cancelled()
    await b.close()


async def test_a_free_worker_takes_a_batch_without_waiting_for_its_timer(pool):
    sig = FakeSignature()
    b = batcher(pool, num_batch_threads=1, batch_timeout_micros=60_000_000)
    await b.submit(sig, [np.ones((1, 1), np.float32)], deadline())  # workers started, idle
    # The worker is idle: a lone request runs long before its batch's one-minute timer.
    r = await asyncio.wait_for(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()), 20)
    assert r["y"].tolist() == [[2.0]]
    assert len(sig.runs) == 2
    await b.close()


async def test_requests_arriving_while_every_worker_is_busy_form_one_batch(pool):
    sig = FakeSignature()
    sig.gate.clear()
    b = batcher(pool, num_batch_threads=1, max_batch_size=8, batch_timeout_micros=60_000_000)
    first = asyncio.create_task(b.submit(sig, [np.full((1, 1), 1, np.float32)], deadline()))
    await asyncio.sleep(0.05)  # the only worker runs the first batch
    rest = [
        asyncio.create_task(b.submit(sig, [np.full((1, 1), v, np.float32)], deadline()))
        for v in (2, 3, 4)
    ]
    await asyncio.sleep(0.05)
    sig.gate.set()  # the worker is free again: it takes the waiting requests at once, merged
    results = await asyncio.wait_for(asyncio.gather(first, *rest), 20)
    assert [run[0].ravel().tolist() for run in sig.runs] == [[1.0], [2.0, 3.0, 4.0]]
    assert [r["y"].tolist() for r in results] == [[[2.0]], [[4.0]], [[6.0]], [[8.0]]]
    await b.close()


async def test_queue_full_fails_fast(pool):
    metrics = ServingMetrics()
    sig = FakeSignature()
    sig.gate.clear()
    b = batcher(
        pool,
        metrics,
        num_batch_threads=1,
        max_enqueued_batches=2,
        max_batch_size=1,
        batch_timeout_micros=0,
    )

    def one():
        return asyncio.create_task(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()))

    tasks = [one()]
    await asyncio.sleep(0.05)  # the worker took the first batch and is blocked running it
    tasks += [one(), one()]
    await asyncio.sleep(0.05)  # two batches wait: the queue is full
    with pytest.raises(QueueFull, match="queue is full"):
        await b.submit(sig, [np.ones((1, 1), np.float32)], deadline())
    sig.gate.set()
    await asyncio.gather(*tasks)
    assert 'reason="queue_full"' in metrics.render().decode()
    await b.close()


async def test_an_error_in_a_batch_reaches_every_request_and_serving_continues(pool):
    sig = FakeSignature()
    b = batcher(pool)
    sig.fail_next = InvalidInput("model rejected the input: boom")
    results = await asyncio.gather(
        *(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()) for _ in range(3)),
        return_exceptions=True,
    )
    assert all(isinstance(r, InvalidInput) and "boom" in str(r) for r in results)
    r = await b.submit(sig, [np.ones((1, 1), np.float32)], deadline())
    assert r["y"].tolist() == [[2.0]]
    crash = FakeSignature()
    crash.fail_next = RuntimeError("kernel exploded")
    results = await asyncio.gather(
        *(b.submit(crash, [np.ones((1, 1), np.float32)], deadline()) for _ in range(2)),
        return_exceptions=True,
    )
    assert all("kernel exploded" in str(r) for r in results)
    await b.close()


async def test_outputs_without_a_batch_dimension_fail_clearly(pool):
    sig = FakeSignature(keep_batch_dim=False)
    b = batcher(pool)
    with pytest.raises(Exception, match="does not keep the batch dimension"):
        await b.submit(sig, [np.ones((2, 1), np.float32)], deadline())
    await b.close()


async def test_unbatchable_signatures_run_directly(pool):
    sig = FakeSignature(batchable=False)
    b = batcher(pool, batch_timeout_micros=10_000_000)
    r = await asyncio.wait_for(b.submit(sig, [np.ones((2, 1), np.float32)], deadline()), 2)
    assert r["y"].shape == (2, 1)
    with pytest.raises(InvalidInput, match="same batch size"):
        await batcher(pool).submit(FakeSignature(), [np.ones((2, 1)), np.ones((3, 1))], deadline())
    await b.close()


class InlineExecutor(Executor):
    """Runs each submitted call at once on the caller's thread: a batch's run and its
    completion callback happen in a fixed number of loop turns, so tests can assert by event
    ordering (turns) instead of wall time."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - delivered through the future
            future.set_exception(e)
        return future


async def _turns(n):
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_lone_request_with_an_idle_thread_runs_at_once_not_after_the_timeout():
    sig = FakeSignature()
    b = batcher(InlineExecutor(), num_batch_threads=1, batch_timeout_micros=60_000_000)
    task = asyncio.create_task(b.submit(sig, [np.ones((1, 2), np.float32)], deadline()))
    # Turns: enqueue; the batch starts (and, here, runs); its completion is delivered; the
    # request resumes. A batch waiting on its one-minute timer would still be pending.
    await _turns(5)
    assert task.done() and task.result()["y"].tolist() == [[2.0, 2.0]]
    assert len(sig.runs) == 1
    await b.close()


async def test_requests_read_in_the_same_turn_share_one_batch_without_a_timer():
    sig = FakeSignature()
    b = batcher(InlineExecutor(), batch_timeout_micros=0, max_batch_size=8)
    xs = [np.full((1, 1), v, np.float32) for v in range(5)]
    tasks = [asyncio.create_task(b.submit(sig, [x], deadline())) for x in xs]
    await _turns(6)
    assert all(t.done() for t in tasks)
    assert [run[0].ravel().tolist() for run in sig.runs] == [[0.0, 1.0, 2.0, 3.0, 4.0]]
    await b.close()


async def test_a_full_batch_runs_next_while_later_requests_start_another(pool):
    sig = FakeSignature()
    sig.gate.clear()
    b = batcher(pool, num_batch_threads=1, max_batch_size=4, batch_timeout_micros=60_000_000)

    def one(v, rows=1):
        x = np.full((rows, 1), v, np.float32)
        return asyncio.create_task(b.submit(sig, [x], deadline()))

    first = one(0)
    await asyncio.sleep(0.05)  # the only thread runs the first batch
    full = [one(v) for v in (1, 2, 3, 4)]  # fills max_batch_size: closed at once
    later = one(5)
    await _turns(3)
    sig.gate.set()
    await asyncio.wait_for(asyncio.gather(first, *full, later), 20)
    assert [run[0].ravel().tolist() for run in sig.runs] == [[0.0], [1, 2, 3, 4], [5.0]]
    await b.close()


class MatmulSignature(FakeSignature):
    """y = x @ w in float32 (BLAS), so merged runs exercise real kernels."""

    def __init__(self):
        super().__init__()
        self.w = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)

    def run(self, arrays, cancellation=None):  # noqa: ARG002
        self.runs.append([a.copy() for a in arrays])
        return {"y": arrays[0] @ self.w}


async def test_merged_results_are_the_merged_run_split_back_bit_for_bit():
    sig = MatmulSignature()
    b = batcher(InlineExecutor(), max_batch_size=32)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((n, 16)).astype(np.float32) for n in (1, 3, 2, 5, 1)]
    results = await asyncio.gather(*(b.submit(sig, [x], deadline()) for x in xs))
    (run,) = sig.runs
    whole = np.concatenate(xs) @ sig.w
    offsets = np.cumsum([0] + [len(x) for x in xs])
    for x, r, lo, hi in zip(xs, results, offsets, offsets[1:]):
        assert r["y"].dtype == np.float32
        np.testing.assert_array_equal(r["y"], whole[lo:hi])  # exactly its rows of the run
        # vs running the request alone: BLAS may sum in another order for another row count
        np.testing.assert_allclose(r["y"], x @ sig.w, rtol=1e-5, atol=1e-5)
    await b.close()


class PermitSignature(FakeSignature):
    """Each run waits for one permit (``allow()``), so a test decides when each batch ends."""

    def __init__(self):
        super().__init__()
        self.permits = threading.Semaphore(0)

    def allow(self):
        self.permits.release()

    def run(self, arrays, cancellation=None):
        assert self.permits.acquire(timeout=30)
        return super().run(arrays, cancellation)


async def test_requests_that_leave_a_running_batch_do_not_disturb_the_others(pool):
    sig = PermitSignature()
    b = batcher(pool, num_batch_threads=1, max_batch_size=8)
    first = asyncio.create_task(b.submit(sig, [np.zeros((1, 1), np.float32)], deadline()))
    await asyncio.sleep(0.05)  # the only thread runs the first batch
    tasks = [
        asyncio.create_task(b.submit(sig, [np.full((2, 1), v, np.float32)], deadline()))
        for v in (1, 2, 3)
    ]
    expiring = asyncio.create_task(b.submit(sig, [np.full((1, 1), 9, np.float32)], deadline(0.3)))
    await asyncio.sleep(0.05)
    sig.allow()
    await asyncio.wait_for(first, 20)  # the queued requests now run as one batch
    tasks[1].cancel()  # leaves while its batch runs
    with pytest.raises(DeadlineExceeded):
        await expiring
    sig.allow()
    r1, r3 = await asyncio.wait_for(asyncio.gather(tasks[0], tasks[2]), 20)
    assert r1["y"].tolist() == [[2.0], [2.0]] and r3["y"].tolist() == [[6.0], [6.0]]
    assert tasks[1].cancelled()
    assert [run[0].ravel().tolist() for run in sig.runs] == [[0.0], [1, 1, 2, 2, 3, 3, 9]]
    await b.close()


async def test_close_fails_queued_requests_and_lets_the_running_batch_finish(pool):
    sig = FakeSignature()
    sig.gate.clear()
    b = batcher(pool, num_batch_threads=1)
    running = asyncio.create_task(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()))
    await asyncio.sleep(0.05)
    queued = asyncio.create_task(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()))
    await _turns(2)
    await b.close()
    with pytest.raises(QueueFull, match="unloaded"):
        await queued
    with pytest.raises(QueueFull, match="unloaded"):
        await b.submit(sig, [np.ones((1, 1), np.float32)], deadline())
    sig.gate.set()
    r = await asyncio.wait_for(running, 20)
    assert r["y"].tolist() == [[2.0]]
    assert len(sig.runs) == 1


class CostedSignature(FakeSignature):
    """Estimated at ``per_row`` seconds a row (as Signature scales its estimate with input
    elements); records the thread of every run."""

    def __init__(self, per_row):
        super().__init__()
        self.per_row = per_row
        self.threads: list[tuple[int, int]] = []  # (rows, thread ident) per run

    def estimated_seconds(self, arrays):
        return self.per_row * arrays[0].shape[0]

    def run(self, arrays, cancellation=None):
        self.threads.append((arrays[0].shape[0], threading.get_ident()))
        return super().run(arrays, cancellation)


def inline_batcher(pool, limit_seconds, **kw):
    cfg = BatchingConfig(enabled=True, **{"max_batch_size": 64, **kw}).validate("t")
    return Batcher(cfg, pool, None, "m", "1", inline_seconds=limit_seconds)


async def test_a_merged_batch_of_requests_cheap_alone_runs_on_the_loop(pool):
    # 40 us a row, limit 100 us: each one-row request alone would run on the loop. The first
    # of the turn runs at once; the other seven merge, and the 7-row batch, estimated at
    # 280 us (over the limit), still runs on the loop: it costs no more than the seven would
    # one by one.
    sig = CostedSignature(40e-6)
    b = inline_batcher(pool, 100e-6)
    xs = [np.full((1, 1), v, np.float32) for v in range(8)]
    results = await asyncio.gather(*(b.submit(sig, [x], deadline()) for x in xs))
    assert [r["y"].ravel().tolist() for r in results] == [[2.0 * v] for v in range(8)]
    me = threading.get_ident()
    assert sig.threads == [(1, me), (7, me)]
    assert [run[0].ravel().tolist() for run in sig.runs] == [[0.0], [1, 2, 3, 4, 5, 6, 7]]
    await b.close()


async def test_a_batch_holding_a_request_too_costly_alone_runs_on_a_thread(pool):
    # The 3-row request alone is estimated at 120 us, over the limit: unbatched it would run
    # on a compute thread, so the batch holding it does too.
    sig = CostedSignature(40e-6)
    b = inline_batcher(pool, 100e-6)
    xs = [np.ones((n, 1), np.float32) for n in (1, 1, 3)]
    results = await asyncio.gather(*(b.submit(sig, [x], deadline()) for x in xs))
    assert [len(r["y"]) for r in results] == [1, 1, 3]
    (first, first_thread), (rows, thread) = sig.threads
    assert (first, first_thread) == (1, threading.get_ident())  # the turn's first, at once
    assert rows == 4 and thread != threading.get_ident()
    await b.close()


async def test_batches_stay_on_threads_with_inline_compute_off(pool):
    sig = CostedSignature(1e-9)
    b = inline_batcher(pool, 0.0)
    xs = [np.ones((1, 1), np.float32) for _ in range(3)]
    await asyncio.gather(*(b.submit(sig, [x], deadline()) for x in xs))
    ((rows, thread),) = sig.threads
    assert rows == 3 and thread != threading.get_ident()
    await b.close()


async def test_a_lone_cheap_request_runs_at_once_and_a_turn_of_several_merges(pool):
    sig = CostedSignature(10e-6)
    b = inline_batcher(pool, 100e-6)
    tasks = [
        asyncio.create_task(b.submit(sig, [np.full((1, 1), v, np.float32)], deadline()))
        for v in range(4)
    ]
    await asyncio.sleep(0)  # one turn: every task runs up to its first wait
    assert [t.done() for t in tasks] == [True, False, False, False]  # no queue, no turn
    assert len(sig.runs) == 1
    await asyncio.wait_for(asyncio.gather(*tasks), 20)
    assert [run[0].ravel().tolist() for run in sig.runs] == [[0.0], [1.0, 2.0, 3.0]]
    # Several requests came in one turn: the next ones queue and merge, until a batch
    # starts with a single request (traffic thinned out); then a lone request runs at once.
    after_burst = asyncio.create_task(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()))
    await asyncio.sleep(0)
    assert not after_burst.done()
    assert (await after_burst)["y"].tolist() == [[2.0]]
    lone = asyncio.create_task(b.submit(sig, [np.ones((1, 1), np.float32)], deadline()))
    await asyncio.sleep(0)
    assert lone.done() and lone.result()["y"].tolist() == [[2.0]]
    assert len(sig.runs) == 4
    await b.close()


async def test_a_request_never_runs_at_once_ahead_of_waiting_ones(pool):
    sig = CostedSignature(1.0)  # the first request is costly: the only batch thread runs it
    loop_thread = threading.get_ident()
    release = threading.Event()
    run = sig.run

    def held_on_threads(arrays, cancellation=None):
        if threading.get_ident() != loop_thread:
            assert release.wait(30)
        return run(arrays, cancellation)

    sig.run = held_on_threads
    b = inline_batcher(pool, 100e-6, num_batch_threads=1)

    def submit(v):
        x = np.full((1, 1), v, np.float32)
        return asyncio.create_task(b.submit(sig, [x], deadline()))

    held = submit(0)
    await asyncio.sleep(0.05)
    sig.per_row = 10e-6  # cheap from now on
    first, queued = submit(1), submit(2)  # one turn: the first runs at once, the next queues
    await _turns(3)
    assert first.done() and not queued.done()  # its batch waits for the busy thread
    late = submit(3)  # a later turn's first request, but one waits before it: it queues
    await _turns(3)
    assert not late.done() and not queued.done()
    release.set()
    await asyncio.wait_for(asyncio.gather(held, queued, late), 20)
    # (the held run records itself when it ends, after the one that ran at once)
    assert sorted(r[0].ravel().tolist() for r in sig.runs) == [[0.0], [1.0], [2.0, 3.0]]
    await b.close()


async def test_an_error_in_a_request_run_at_once_reaches_only_it(pool):
    sig = CostedSignature(10e-6)
    b = inline_batcher(pool, 100e-6)
    sig.fail_next = InvalidInput("bad row")
    with pytest.raises(InvalidInput, match="bad row"):
        await b.submit(sig, [np.ones((1, 1), np.float32)], deadline())
    sig.fail_next = RuntimeError("kernel exploded")
    await asyncio.sleep(0)
    with pytest.raises(Internal, match="kernel exploded"):
        await b.submit(sig, [np.ones((1, 1), np.float32)], deadline())
    await asyncio.sleep(0)
    r = await b.submit(sig, [np.ones((1, 1), np.float32)], deadline())
    assert r["y"].tolist() == [[2.0]]
    await b.close()
