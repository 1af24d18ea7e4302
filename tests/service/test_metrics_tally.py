"""The lean request core gives what the general paths give: the tallied request metrics
(plain numbers folded into the Prometheus children at scrape time) read exactly as the
children updated directly would, over HTTP as in process; an unbatched run's one statistics
update equals its two reports; a spec accepts only the arrays ``coerce`` returns unchanged."""

import asyncio
import random
import shutil
import subprocess
import threading

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine import dtypes
from engine.tensor_shape import TensorShape
from service.errors import InvalidInput
from service.metrics import ServingMetrics
from service.servable import Signature
from service.statistics import InferenceStatistics, SchedulingObserver
from service.tensors import TensorSpec, coerce

PROMTOOL = shutil.which("promtool")


def _samples(metrics: ServingMetrics) -> dict:
    """Every sample of a scrape but the ``_created`` timestamps (and the process, platform
    and GC collectors' own), by (name, labels)."""
    text = metrics.render().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("flowserve_"):
            continue
        for s in family.samples:
            if not s.name.endswith("_created"):
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _drive(metrics: ServingMetrics, seed: int) -> None:
    """The same mix of updates a server makes: requests of every kind, latencies on and
    between bucket bounds, in-flight counts, rows, runs, batches, queues, rejections."""
    rng = random.Random(seed)
    observer = SchedulingObserver(metrics, InferenceStatistics())
    bounds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 30.0, 31.0]
    for _ in range(400):
        model, version = rng.choice([("m", "1"), ("m", "2"), ("", "")])
        seconds = rng.choice(bounds) if rng.random() < 0.3 else rng.expovariate(300.0)
        metrics.observe_request(
            model,
            version,
            rng.choice(["tfserving", "v2", "grpc"]),
            rng.choice([200, 200, 200, 400, 404, 503]),
            seconds,
            endpoint=rng.choice(["predict", "infer", "metadata"]),
        )
        in_flight, rows = metrics.infer_children(model or "m", version or "1")
        in_flight.inc()
        if rng.random() < 0.5:
            in_flight.dec()
        rows.inc(rng.randint(1, 64))
        metrics.inflight("m", rng.choice([1, -1]))
        metrics.inferred("m", "1", rng.randint(1, 8))
        observer.direct_run("m", "1", seconds, seconds / 3)
        observer.session_run("m", "2", seconds)
        observer.batch("m", "1", rng.randint(1, 64), rng.choice([0, 0, 3]), seconds)
        observer.queue_wait("m", "1", seconds / 2)
        observer.queue_depth("m", "1", rng.randint(0, 9))
        if rng.random() < 0.1:
            observer.rejected("m", "1", rng.choice(["queue_full", "deadline"]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tallied_metrics_read_as_direct_updates(seed):
    tallied, direct = ServingMetrics(), ServingMetrics(tally=False)
    _drive(tallied, seed)
    _drive(direct, seed)
    got, expected = _samples(tallied), _samples(direct)
    assert got == expected
    assert got[("flowserve_batch_queue_depth", (("model", "m"), ("version", "1")))] >= 0
    # Scraped again after more updates: the tallies are copied again, not added twice.
    _drive(tallied, seed + 10)
    _drive(direct, seed + 10)
    assert _samples(tallied) == _samples(direct)


def test_registry_readers_see_tallied_values():
    metrics = ServingMetrics()
    for _ in range(3):
        metrics.observe_request("m", "1", "v2", 200, 0.002, endpoint="infer")
    labels = {"model": "m", "version": "1", "protocol": "v2", "endpoint": "infer"}
    value = metrics.registry.get_sample_value  # a collection: the flush runs first
    assert value("flowserve_requests_total", {**labels, "code": "200"}) == 3
    assert value("flowserve_request_duration_seconds_bucket", {**labels, "le": "0.0025"}) == 3
    assert value("flowserve_request_duration_seconds_bucket", {**labels, "le": "0.001"}) == 0
    assert value("flowserve_request_duration_seconds_sum", labels) == 0.002 + 0.002 + 0.002


def test_scrapes_on_threads_while_the_loop_counts():
    metrics = ServingMetrics()
    stop = threading.Event()

    def scrape():
        while not stop.is_set():
            metrics.render()

    threads = [threading.Thread(target=scrape) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(20000):
            metrics.observe_request("m", "1", "v2", 200 if i % 4 else 500, 0.001, "infer")
    finally:
        stop.set()
        for t in threads:
            t.join()
    value = metrics.registry.get_sample_value
    labels = {"model": "m", "version": "1", "protocol": "v2", "endpoint": "infer"}
    assert value("flowserve_requests_total", {**labels, "code": "200"}) == 15000
    assert value("flowserve_requests_total", {**labels, "code": "500"}) == 5000
    assert value("flowserve_request_duration_seconds_count", labels) == 20000


async def test_metrics_after_requests_and_errors(client):
    ok = {"instances": [1.0, 2.0, 5.0]}
    for _ in range(5):
        assert (await client.post("/v1/models/half_plus_two:predict", json=ok)).status == 200
    for _ in range(2):
        assert (await client.post("/v1/models/half_plus_two:predict", data=b"{")).status == 400
    assert (await client.post("/v1/models/nope:predict", json=ok)).status == 404
    v2 = {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 3]}]}
    answer = await client.post("/v2/models/half_plus_two/infer", json=v2)
    assert answer.status == 200, await answer.text()
    version = (await answer.json())["model_version"]
    resp = await client.get("/metrics")
    text = await resp.text()
    families = {f.name: f for f in text_string_to_metric_families(text)}

    def value(family, name, **labels):
        found = [
            s.value
            for s in families[family].samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        ]
        assert len(found) == 1, (name, labels, found)
        return found[0]

    rest = {"model": "half_plus_two", "version": version, "protocol": "tfserving"}
    assert value("flowserve_requests", "flowserve_requests_total", **rest, code="200") == 5
    assert value("flowserve_requests", "flowserve_requests_total", **rest, code="400") == 2
    unknown = {"model": "", "version": "", "protocol": "tfserving", "code": "404"}
    assert value("flowserve_requests", "flowserve_requests_total", **unknown) == 1
    hist = "flowserve_request_duration_seconds"
    assert value(hist, hist + "_count", **rest, endpoint="predict") == 7
    assert value(hist, hist + "_bucket", **rest, endpoint="predict", le="+Inf") == 7
    rows = "flowserve_inference_rows"
    assert value(rows, rows + "_total", model="half_plus_two", version=version) == 5 * 3 + 3
    runs = "flowserve_model_executions"
    assert value(runs, runs + "_total", model="half_plus_two", version=version) == 6
    in_flight = "flowserve_requests_in_flight"
    assert value(in_flight, in_flight, model="half_plus_two") == 0
    if PROMTOOL is not None:  # (installed by .ci/run)
        check = await asyncio.to_thread(
            subprocess.run,
            [PROMTOOL, "check", "metrics"],
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr


def test_a_direct_run_is_counted_as_its_two_reports():
    one, two = InferenceStatistics(), InferenceStatistics()
    for waited, seconds in [(0.0, 0.001), (0.002, 0.0005), (1e-7, 3.0)]:
        one.direct_run("m", 1, waited, seconds)
        two.queue("m", 1, waited)
        two.execution("m", 1, 1, seconds)
    assert one.doc("m", 1) == two.doc("m", 1)
    assert one.doc("m", 1)["execution_count"] == 3


@pytest.mark.parametrize(
    "dims, arr",
    [
        ([None, 3], np.zeros((2, 3), np.float32)),  # accepted as it is
        ([None, 3], np.zeros((2, 4), np.float32)),  # wrong size: coerce's message
        ([None, 3], np.zeros((3,), np.float32)),  # wrong rank
        ([None, 3], np.zeros((2, 3), ">f4")),  # another byte order: coerce casts
        ([None, 3], np.zeros((2, 3), np.float64)),  # another dtype: coerce casts
        (None, np.zeros((2, 3), np.float32)),  # unknown rank
        ([2, None], np.zeros((2, 5), np.float32)),
    ],
)
def test_a_spec_accepts_only_what_coerce_returns_unchanged(dims, arr):
    spec = TensorSpec("x", "x:0", dtypes.float32, TensorShape(dims))
    signature = Signature("k", "m", {"x": spec}, {}, lambda *a, **k: [])

    def outcome(fn):
        try:
            return fn()
        except InvalidInput as e:
            return e.message

    expected = outcome(lambda: [coerce(spec, arr)])
    got = outcome(lambda: signature.validate({"x": arr}))
    if isinstance(expected, str):
        assert got == expected and not spec.accepts(arr)
        return
    assert got[0].dtype == expected[0].dtype and np.array_equal(got[0], expected[0])
    if spec.accepts(arr):  # (False only sends the array through coerce)
        assert expected[0] is arr and got[0] is arr
    assert spec.accepts(arr) == (dims is not None and expected[0] is arr)


def test_a_spec_whose_dtype_is_replaced_checks_the_new_one():
    spec = TensorSpec("x", "x:0", dtypes.float32, TensorShape([None]))
    arr = np.zeros(2, np.float32)
    assert spec.accepts(arr)
    spec.dtype = dtypes.int32
    assert not spec.accepts(arr)
    assert not spec.accepts(arr.astype(np.float32))
    assert spec.accepts(np.zeros(2, np.int32))


def test_flush_brings_a_metrics_own_collect_up_to_date():
    metrics = ServingMetrics()
    metrics.observe_request("m", "1", "v2", 200, 0.002, endpoint="infer")

    def total():
        (family,) = metrics.requests.collect()  # the metric alone, not the registry
        return sum(s.value for s in family.samples if s.name.endswith("_total"))

    assert total() == 0  # not folded yet: only a collection of the registry folds
    metrics.flush()
    assert total() == 1
    direct = ServingMetrics(tally=False)  # children updated at once, as with --workers
    direct.observe_request("m", "1", "v2", 200, 0.002, endpoint="infer")
    (family,) = direct.requests.collect()
    assert sum(s.value for s in family.samples if s.name.endswith("_total")) == 1
