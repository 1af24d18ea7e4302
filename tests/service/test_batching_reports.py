"""What the batcher reports per batch and per request: each request's queue wait reaches the
Prometheus histogram and the statistics once, in one report per batch where the observer
takes one, and request by request where it does not."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from service.batch_parts import _shape_key
from service.batching import Batcher
from service.config import BatchingConfig
from service.metrics import ServingMetrics
from service.statistics import InferenceStatistics, SchedulingObserver
from tests.service.test_batching import FakeSignature


@pytest.fixture
def pool():
    with ThreadPoolExecutor(2) as p:
        yield p


def _batcher(pool, observer) -> Batcher:
    cfg = BatchingConfig(enabled=True, max_batch_size=32).validate("t")
    return Batcher(cfg, pool, observer, "m", "1")


async def _merged(b: Batcher, sig: FakeSignature, n: int) -> list[dict]:
    deadline = asyncio.get_running_loop().time() + 10
    xs = [np.full((1, 1), i, np.float32) for i in range(n)]
    return await asyncio.gather(*(b.submit(sig, [x], deadline) for x in xs))


class _Recorder:
    """An observer recording the calls it gets (``queue_waits`` only when ``batched``)."""

    def __init__(self, batched: bool):
        self.calls: list[tuple] = []
        self.batched = batched

    def __getattr__(self, name):
        if name == "queue_waits" and not self.batched:
            raise AttributeError(name)
        return lambda *args, **kw: self.calls.append((name, *args))


async def test_each_request_of_a_batch_counts_one_queue_wait_in_metrics_and_statistics(pool):
    metrics, statistics = ServingMetrics(), InferenceStatistics()
    b = _batcher(pool, SchedulingObserver(metrics, statistics))
    sig = FakeSignature()
    results = await _merged(b, sig, 5)
    assert len(sig.runs) == 1 and [float(r["y"][0, 0]) for r in results] == [0, 2, 4, 6, 8]
    queue = statistics.doc("m", "1")["inference_stats"]["queue"]
    assert queue["count"] == 5 and queue["ns"] > 0
    text = metrics.render().decode()
    assert 'flowserve_batch_queue_wait_seconds_count{model="m",version="1"} 5.0' in text
    await b.close()


async def test_an_observer_taking_batches_gets_one_report_with_every_wait_in_order(pool):
    recorder = _Recorder(batched=True)
    b = _batcher(pool, recorder)
    await _merged(b, FakeSignature(), 4)
    reports = [c for c in recorder.calls if c[0].startswith("queue_wait")]
    assert len(reports) == 1
    name, model, version, waits = reports[0]
    assert (name, model, version, len(waits)) == ("queue_waits", "m", "1", 4)
    assert all(w >= 0 for w in waits)
    assert waits == sorted(waits, reverse=True)  # the first queued waited longest
    await b.close()


async def test_an_observer_without_batch_reports_gets_one_queue_wait_per_request(pool):
    recorder = _Recorder(batched=False)
    b = _batcher(pool, recorder)
    await _merged(b, FakeSignature(), 3)
    reports = [c for c in recorder.calls if c[0].startswith("queue_wait")]
    assert [c[:3] for c in reports] == [("queue_wait", "m", "1")] * 3
    await b.close()


def test_statistics_queues_adds_the_same_nanoseconds_as_one_queue_call_per_wait():
    waits = [0.1234567891, 3e-7, 0.0, 2.5e-3]
    one, many = InferenceStatistics(), InferenceStatistics()
    one.queues("m", "1", waits)
    for w in waits:
        many.queue("m", "1", w)
    assert one.doc("m", "1") == many.doc("m", "1")


def test_the_shape_key_of_one_input_is_the_general_key():
    for a in (np.zeros((2, 3, 4), np.float32), np.zeros((1,), np.int64), np.zeros((5, 0))):
        for pad in (False, True):
            general = _shape_key([a, a], pad)[:1]
            assert _shape_key([a], pad) == general


async def test_requests_of_another_dtype_never_share_a_batch(pool):
    b = _batcher(pool, None)
    sig = FakeSignature()
    deadline = asyncio.get_running_loop().time() + 10
    xs = [np.ones((1, 2), np.float32), np.ones((1, 2), np.float64), np.ones((1, 2), np.float32)]
    results = await asyncio.gather(*(b.submit(sig, [x], deadline) for x in xs))
    assert sorted((r[0].dtype.str, r[0].shape[0]) for r in sig.runs) == [("<f4", 2), ("<f8", 1)]
    assert [r["y"].dtype for r in results] == [np.float32, np.float64, np.float32]
    await b.close()


class _Cheap(FakeSignature):
    """Estimated at 1 us a run: a lone request runs at once."""

    def estimated_seconds(self, arrays):  # noqa: ARG002 - the fake's fixed estimate
        return 1e-6


def _labelled(text: str, name: str) -> float:
    line = next(x for x in text.splitlines() if x.startswith(name + '{model="m",version="1"}'))
    return float(line.rsplit(" ", 1)[1])


async def test_a_request_run_at_once_counts_as_one_queued_request_and_one_batch(pool):
    metrics, statistics = ServingMetrics(), InferenceStatistics()
    cfg = BatchingConfig(enabled=True, max_batch_size=32).validate("t")
    b = Batcher(cfg, pool, SchedulingObserver(metrics, statistics), "m", "1", inline_seconds=1e-3)
    sig = _Cheap()
    deadline = asyncio.get_running_loop().time() + 10
    out = await b.submit(sig, [np.full((3, 1), 2, np.float32)], deadline)
    assert out["y"].tolist() == [[4.0]] * 3 and len(sig.runs) == 1
    doc = statistics.doc("m", "1")
    assert doc["inference_stats"]["queue"] == {"count": 1, "ns": 0}
    assert doc["execution_count"] == 1 and doc["inference_stats"]["compute_infer"]["count"] == 1
    assert [s["batch_size"] for s in doc["batch_stats"]] == [3]
    text = metrics.render().decode()
    assert _labelled(text, "flowserve_batch_queue_wait_seconds_count") == 1
    assert _labelled(text, "flowserve_batch_queue_wait_seconds_sum") == 0
    assert _labelled(text, "flowserve_batch_size_rows_sum") == 3
    assert _labelled(text, "flowserve_batches_total") == 1
    assert _labelled(text, "flowserve_model_executions_total") == 1
    await b.close()


async def test_an_observer_gets_one_report_for_a_request_run_at_once(pool):
    recorder = _Recorder(batched=True)
    cfg = BatchingConfig(enabled=True, max_batch_size=32).validate("t")
    b = Batcher(cfg, pool, recorder, "m", "1", inline_seconds=1e-3)
    deadline = asyncio.get_running_loop().time() + 10
    await b.submit(_Cheap(), [np.ones((2, 1), np.float32)], deadline)
    runs = [c for c in recorder.calls if c[0] in ("ran_at_once", "batch", "queue_wait")]
    assert len(runs) == 1 and runs[0][:4] == ("ran_at_once", "m", "1", 2)
    await b.close()


def test_statistics_direct_run_of_rows_is_a_queue_and_an_execution_of_those_rows():
    one, two = InferenceStatistics(), InferenceStatistics()
    one.direct_run("m", "1", 0.25, 0.125, rows=3)
    two.queue("m", "1", 0.25)
    two.execution("m", "1", 3, 0.125)
    assert one.doc("m", "1") == two.doc("m", "1")
