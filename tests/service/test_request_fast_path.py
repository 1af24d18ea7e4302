"""The per-request fast paths give what the general ones give: ``float_array`` the arrays (and,
by falling back, the errors) of ``coerce(from_json_value(...))``; responses written with
orjson's numpy support read back as the identical float32 bits; request IDs stay unique."""

import json
import logging
import math
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import dtypes
from engine.tensor_shape import TensorShape
from service import tracing
from service.cli import AccessLogger
from service.errors import InvalidInput
from service.logs import JsonFormatter, new_request_id, rfc3339
from service.metrics import ServingMetrics
from service.protocols.common import dumps
from service.protocols.tfserving import _has_bool_token
from service.tensors import TensorSpec, coerce, float_array, from_json_value

FLOATS = (dtypes.float32, dtypes.float64, dtypes.float16)


def _general(value, dtype):
    """The array or the InvalidInput message of the general path."""
    spec = TensorSpec("x", "x:0", dtype, TensorShape(None))
    try:
        return coerce(spec, from_json_value(value, "input 'x'"))
    except InvalidInput as e:
        return e.message


def _nested(value, levels: int):
    for _ in range(levels):
        value = [value]
    return value


def _same(a, b) -> bool:
    return (
        isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
        and a.dtype == b.dtype
        and a.shape == b.shape
        and a.tobytes() == b.tobytes()
    )


leaves = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.floats(min_value=-1e6, max_value=1e6),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.sampled_from([0.0, -0.0, 1.0, 2.0**53, -(2.0**53), 65504.0, 65519.0, 3.5e38, 1e-45]),
)


@st.composite
def rectangular(draw):
    """A nested list of numbers (rows of equal length), sometimes with a ragged row."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    flat = draw(st.lists(leaves, min_size=math.prod(shape), max_size=math.prod(shape)))
    arr = np.empty(math.prod(shape), dtype=object)
    arr[:] = flat
    value = arr.reshape(shape).tolist()
    if len(shape) > 1 and draw(st.booleans()) and draw(st.booleans()):
        value[0] = value[0][:-1] or [[]]  # ragged
    return value


# The general path turns an integer beyond float16's range into inf, warning (as before).
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@settings(max_examples=400, deadline=None)
@given(value=rectangular(), dtype=st.sampled_from(FLOATS))
def test_float_array_is_the_general_conversion_or_defers_to_it(value, dtype):
    fast = float_array(value, dtype)
    general = _general(value, dtype)
    if fast is not None:
        assert _same(fast, general), (value, fast, general)


@pytest.mark.parametrize(
    "value",
    [
        [[1.0, 2.0], [3.0]],  # ragged
        [1.0, "2"],  # a string
        ["NaN", 1.0],
        [1.0, None],
        [True, False],  # bools alone
        [2**64, 1.0],  # beyond 64 bits
        [1e39, 1.0],  # beyond float32
        [float("nan"), 1.0],
        [2.0**53 + 2, 1.0],
        [],
        [[]],
        [{"b64": "AA=="}],
        _nested([1.0], 33),  # 34 levels
    ],
)
def test_float_array_defers_whatever_needs_a_check(value):
    assert float_array(value, dtypes.float32) is None
    # and the general path answers it (an array for NaN, a clear error for the rest)
    general = _general(value, dtypes.float32)
    assert isinstance(general, (np.ndarray, str))


def test_float_array_matches_values_and_dtypes():
    assert _same(float_array([[1, 2], [3, 4]], dtypes.float32), np.float32([[1, 2], [3, 4]]))
    got = float_array([0.1, -2.5], dtypes.float16)
    assert got.dtype == np.float16 and got.tolist() == np.float16([0.1, -2.5]).tolist()
    assert float_array([1.0], dtypes.int32) is None  # integer targets take the exact path
    assert float_array(["a"], dtypes.string) is None


async def test_malformed_rows_answer_as_before(client):
    """Fast or not, bad input gets the general path's messages."""
    cases = [
        ({"instances": [[1.0, 2.0], [3.0]]}, "input 'x'"),
        ({"instances": [1.0, "b"]}, "instance 1 holds strings but instance 0 holds numbers"),
        ({"instances": [1.0, True]}, "instance 1 holds bools but instance 0 holds numbers"),
        ({"instances": [1.0, 1e39]}, "values out of range for float32"),
        ({"instances": ["NaN"]}, "expects float32 numbers, got strings"),
        ({"inputs": [1.0, None]}, "values must all be numbers, all bools or all strings"),
        ({"inputs": [[1.0], [2.0]]}, "has shape [2, 1] (rank 2); the model expects shape [?]"),
    ]
    for body, message in cases:
        resp = await client.post("/v1/models/half_plus_two:predict", data=json.dumps(body))
        assert resp.status == 400, body
        assert message in (await resp.json())["error"], body


def test_bool_token_search():
    assert not _has_bool_token(b'{"instances": [[1.5, 2e-05, -3]]}')
    assert not _has_bool_token(b'{"signature_name": "serving_default", "inputs": [1]}')
    assert _has_bool_token(b'{"instances": [true]}')
    assert _has_bool_token(b'{"instances": [false]}')
    assert _has_bool_token(b'{"signature_name": "u", "instances": [1, true]}')


def test_float32_text_reads_back_as_the_same_bits():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 50_000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values = values[np.isfinite(values)]
    # contiguous, and not (written through the default hook)
    for doc in (dumps({"v": values}), dumps({"v": values.reshape(-1, 1)[::2]})):
        back = np.array(json.loads(doc)["v"], dtype=np.float64).astype(np.float32).reshape(-1)
        expected = values if back.size == values.size else values[::2]
        assert back.view(np.uint32).tolist() == expected.view(np.uint32).tolist()


def test_float32_is_written_as_its_shortest_text():
    assert dumps({"p": np.float32([0.1, 1 / 3, 2.5])}) == b'{"p":[0.1,0.33333334,2.5]}'
    assert dumps({"p": np.float32(0.1)}) == b'{"p":0.1}'
    assert dumps({"p": np.array(0.1, np.float32)}) == b'{"p":0.1}'  # 0-d
    assert dumps({"p": np.float64([0.1])}) == b'{"p":[0.1]}'
    assert dumps({"p": np.array([1, -2], np.int8)}) == b'{"p":[1,-2]}'
    assert dumps({"p": np.array([True])}) == b'{"p":[true]}'
    assert dumps({"p": np.array([2**64 - 1], np.uint64)}) == b'{"p":[18446744073709551615]}'


def test_nan_and_infinity_keep_their_tokens_and_the_same_float_text():
    doc = dumps({"p": np.float32([np.nan, np.inf, -np.inf, 0.1, 1 / 3])})
    assert doc == b'{"p":[NaN,Infinity,-Infinity,0.1,0.33333334]}'
    # a float16 as orjson writes it (its float32 text), with or without a NaN beside it
    assert dumps({"p": np.float16([0.1])}) == b'{"p":[0.099975586]}'
    assert dumps({"p": np.float16([np.nan, 0.1])}) == b'{"p":[NaN,0.099975586]}'
    big = dumps({"p": np.array([np.nan, 2.0], ">f4")})  # not native-endian: the fallback
    assert big == b'{"p":[NaN,2.0]}'


def test_unserializable_values_still_raise():
    with pytest.raises(TypeError):
        dumps({"p": object()})


def test_request_ids_are_unique_hex():
    ids = {new_request_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_rfc3339_matches_datetime_to_the_millisecond():
    rng = np.random.default_rng(1)
    seconds = rng.integers(0, 2**31, 20_000)
    fractions = np.concatenate([rng.random(10_000), 0.9999995 + rng.uniform(-1e-6, 1e-6, 10_000)])
    for created in [*(seconds + fractions).tolist(), 1700000000.123, 1700000000.9999999, 0.0]:
        stamp = datetime.fromtimestamp(created, tz=UTC).isoformat(timespec="milliseconds")
        assert rfc3339(created) == stamp.replace("+00:00", "Z"), created


def test_json_log_lines_with_unusual_text():
    record = logging.LogRecord(
        "flowserve.x", logging.INFO, __file__, 1, "päth \udcff %s", ("é",), None
    )
    record.access = {"path": "/v1/\udcff", "latency_ms": 0.123}
    doc = json.loads(JsonFormatter().format(record))
    assert doc["message"] == "päth \udcff é" and doc["path"] == "/v1/\udcff"
    assert doc["latency_ms"] == 0.123 and doc["level"] == "INFO"
    record.access = {"path": "/v1/ok", "latency_ms": 1.5}
    record.msg, record.args = "ünïcode", None
    line = JsonFormatter().format(record)
    assert "ünïcode" in line and json.loads(line)["latency_ms"] == 1.5


def test_access_log_record_names_its_source():
    records = []
    logger = logging.getLogger("flowserve.access.fast-path")
    logger.propagate = False
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    class Request(dict):
        method, path, remote = "GET", "/v1/models/m", "127.0.0.1"

    class Response:
        status = 404

    AccessLogger(logger, "").log(Request(), Response(), 0.0025)
    (record,) = records
    assert record.getMessage() == "GET /v1/models/m model=- status=404 latency_ms=2.50"
    assert record.levelno == logging.INFO and record.funcName == "AccessLogger.log"
    assert record.access["status"] == 404 and record.access["latency_ms"] == 2.5
    logger.setLevel(logging.WARNING)
    AccessLogger(logger, "").log(Request(), Response(), 0.0025)
    assert len(records) == 1


def test_whether_a_tracer_provider_is_set_is_remembered_between_refreshes(monkeypatch):
    trace = pytest.importorskip("opentelemetry.trace", reason="the otel extra is not installed")
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the otel SDK is not installed")
    calls = []
    provider = [trace.ProxyTracerProvider()]
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: calls.append(1) or provider[0])
    monkeypatch.setattr(tracing, "_PROVIDER", [None])
    assert not tracing.active(refresh=True)
    assert not any(tracing.active() for _ in range(10))
    assert len(calls) == 1  # looked up once, not per request
    provider[0] = sdk.TracerProvider()
    assert not tracing.active()  # until the next refresh (create_app's)
    assert tracing.active(refresh=True)
    provider[0] = trace.ProxyTracerProvider()
    assert tracing.active(refresh=True)  # once set, a provider stays set
    assert len(calls) == 2


def test_cached_metric_children_count_per_label():
    metrics = ServingMetrics()
    for _ in range(3):
        metrics.observe_request("m", "1", "tfserving", 200, 0.002, endpoint="predict")
    metrics.observe_request("m", "1", "tfserving", 400, 0.001, endpoint="predict")
    metrics.observe_request("m", "2", "v2", 200, 0.003, endpoint="infer")
    metrics.inflight("m", 1)
    metrics.inflight("m", 1)
    metrics.inflight("m", -1)
    value = metrics.registry.get_sample_value
    labels = {"model": "m", "version": "1", "protocol": "tfserving", "endpoint": "predict"}
    assert value("flowserve_requests_total", {**labels, "code": "200"}) == 3
    assert value("flowserve_requests_total", {**labels, "code": "400"}) == 1
    v2 = {"model": "m", "version": "2", "protocol": "v2", "endpoint": "infer"}
    assert value("flowserve_requests_total", {**v2, "code": "200"}) == 1
    assert value("flowserve_request_duration_seconds_count", labels) == 4
    assert value("flowserve_request_duration_seconds_sum", labels) == pytest.approx(0.007)
    assert value("flowserve_request_duration_seconds_bucket", {**labels, "le": "0.001"}) == 1
    assert value("flowserve_requests_in_flight", {"model": "m"}) == 1


async def test_request_metrics_are_labelled_by_endpoint_and_status(client):
    for _ in range(2):
        resp = await client.post("/v1/models/half_plus_two:predict", json={"instances": [1.0]})
        assert resp.status == 200
    resp = await client.post("/v1/models/half_plus_two:predict", json={"instances": ["a"]})
    assert resp.status == 400
    text = await (await client.get("/metrics")).text()
    base = 'model="half_plus_two",protocol="tfserving"'
    lines = [line for line in text.splitlines() if line.startswith("flowserve_requests_total")]
    assert any(base in line and 'code="200"' in line and line.endswith(" 2.0") for line in lines)
    assert any(base in line and 'code="400"' in line and line.endswith(" 1.0") for line in lines)
    assert all('endpoint="predict"' in line for line in lines if base in line)
