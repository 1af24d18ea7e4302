"""The leaner request path answers exactly as before: the one middleware of a server without
tracing behaves as the chain it replaces (request ID, JSON errors, bearer token, in-flight
budget, metrics); JSON numbers packed by ``struct`` give the arrays numpy gives, or defer;
a version being unloaded still waits for its requests."""

import contextlib
import json
import threading
import time

import numpy as np
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import dtypes
from engine.tensor_shape import TensorShape
from service import app as app_module
from service import tracing
from service.app import create_app
from service.config import ModelConfig
from service.errors import InvalidInput, Unavailable
from service.servable import Servable, VersionState
from service.tensors import TensorSpec, coerce, float_array, from_json_value
from tests.service.test_request_fast_path import _same


# -- one middleware == the chain -------------------------------------------------------------
@pytest.fixture(autouse=True)
def _untraced(monkeypatch):
    """The lean app is the one without tracing: a tracer provider that an earlier test set
    (they stay set) would give every app the chain."""
    monkeypatch.setattr(tracing, "active", lambda refresh=False: False)


@contextlib.contextmanager
def _chained_app():
    """``create_app`` as with tracing on (the separate middlewares), with a pass-through
    where the tracing middleware sits."""

    @web.middleware
    async def passthrough(request, handler):
        return await handler(request)

    saved = (tracing.active, tracing.middleware)
    tracing.active = lambda refresh=False: True
    tracing.middleware = passthrough
    try:
        yield
    finally:
        tracing.active, tracing.middleware = saved


def _middlewares(app) -> int:
    return len(app.middlewares)


REQUESTS = [
    ("POST", "/v1/models/half_plus_two:predict", {"instances": [1.0, 2.0]}, {}),
    ("POST", "/v1/models/half_plus_two:predict", b"{not json", {}),
    ("POST", "/v1/models/half_plus_two:predict", {"instances": ["x"]}, {}),
    ("POST", "/v1/models/nope:predict", {"instances": [1.0]}, {}),
    ("POST", "/v1/models/half_plus_two:frobnicate", {"instances": [1.0]}, {}),
    ("GET", "/v1/models/half_plus_two:predict", None, {}),
    ("POST", "/v1/models/half_plus_two:predict", {"instances": [1.0]}, {"X-Request-ID": "abc-1"}),
    ("POST", "/v1/models/half_plus_two:predict", b"x" * 3000, {}),  # over max_request_bytes
    (
        "POST",
        "/v2/models/half_plus_two/infer",
        {"id": "mine", "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [3]}]},
        {},
    ),
    ("GET", "/v2/health/ready", None, {}),
    ("GET", "/nowhere", None, {}),
    ("GET", "/console", None, {}),
]


async def _answers(client, token: str | None) -> list:
    out = []
    for auth in [None, "Bearer " + token] if token else [None]:
        for method, path, body, headers in REQUESTS:
            headers = dict(headers)
            if auth:
                headers["Authorization"] = auth
            data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
            resp = await client.request(
                method, path, data=data, headers=headers, allow_redirects=False
            )
            kept = {
                k: v
                for k, v in resp.headers.items()
                if k != "Date" and (k != "X-Request-ID" or "X-Request-ID" in headers)
            }
            echoed = resp.headers.get("X-Request-ID")
            out.append((method, path, resp.status, await resp.read(), kept, bool(echoed)))
    return out


@pytest.mark.parametrize("token", [None, "s3cret"])
async def test_one_middleware_answers_as_the_chain(aiohttp_client, make_config, token):
    config = make_config(auth_token=token, max_request_bytes=2048)
    lean = create_app(config)
    with _chained_app():
        chained = create_app(config)
    assert _middlewares(lean) == 1 and _middlewares(chained) >= 4
    got = await _answers(await aiohttp_client(lean), token)
    want = await _answers(await aiohttp_client(chained), token)
    assert got == want
    statuses = {status for _, _, status, _, _, _ in got}
    assert {200, 400, 404, 405, 413}.issubset(statuses)
    if token:
        assert {401, 303} <= statuses  # the console redirects a browser to its login form
    assert all(echoed for *_, echoed in got)  # every answer carries a request ID


async def test_one_middleware_counts_every_request(aiohttp_client, make_config):
    app = create_app(make_config())
    client = await aiohttp_client(app)
    for body in ({"instances": [1.0]}, {"instances": [2.0]}, {"instances": ["x"]}):
        await client.post("/v1/models/half_plus_two:predict", json=body)
    await client.post("/v1/models/nope:predict", json={"instances": [1.0]})
    assert app_module.in_flight_requests(app) == 0
    text = await (await client.get("/metrics")).text()
    lines = [line for line in text.splitlines() if line.startswith("flowserve_requests_total")]
    assert (
        'flowserve_requests_total{code="200",endpoint="predict",model="half_plus_two",'
        'protocol="tfserving",version="2"} 2.0' in lines
    ), lines
    assert (
        'flowserve_requests_total{code="400",endpoint="predict",model="half_plus_two",'
        'protocol="tfserving",version="2"} 1.0' in lines
    ), lines
    assert (
        'flowserve_requests_total{code="404",endpoint="predict",model="",'
        'protocol="tfserving",version=""} 1.0' in lines
    ), lines


# -- JSON numbers packed by struct -----------------------------------------------------------
def _general(value, dtype):
    spec = TensorSpec("x", "x:0", dtype, TensorShape(None))
    try:
        return coerce(spec, from_json_value(value, "input 'x'"))
    except InvalidInput as e:
        return e.message


leaf = st.one_of(
    st.floats(width=64),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, 2**24 + 1, -(2**63), 2**64, 0, -0.0, 1e308]),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.just([1.0]),
    st.just({"b64": "AA=="}),
)


@st.composite
def rows(draw):
    """1-D or 2-D lists, mostly numbers, sometimes anything else in any position."""
    width = draw(st.integers(1, 5))
    numbers = st.one_of(st.floats(-1e6, 1e6), st.integers(-(2**30), 2**30))
    cell = st.one_of(numbers, numbers, numbers, leaf)
    if draw(st.booleans()):
        return draw(st.lists(cell, min_size=1, max_size=width))
    height = draw(st.integers(1, 4))
    value = [draw(st.lists(cell, min_size=width, max_size=width)) for _ in range(height)]
    if draw(st.integers(0, 5)) == 0:
        value[-1] = value[-1][:-1]  # ragged
    return value


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=500, deadline=None)
@given(value=rows(), dtype=st.sampled_from([dtypes.float32, dtypes.float64, dtypes.float16]))
def test_packed_numbers_are_numpys_or_defer(value, dtype):
    fast = float_array(value, dtype)
    if fast is not None:
        general = _general(value, dtype)
        assert _same(fast, general), (value, fast, general)
        assert fast.flags.writeable and fast.flags.owndata


@pytest.mark.parametrize(
    "value, expected",
    [
        ([[0.5, 2, -0.0]], np.float32([[0.5, 2, -0.0]])),
        ([[1.0, True]], np.float32([[1.0, 1.0]])),  # a bool among numbers is a number
        ([[True, 1.0]], np.float32([[1.0, 1.0]])),  # (through numpy: a bool comes first)
        ([2**24 + 1, 1.5], np.float32([2**24 + 1, 1.5])),
        ([[1.0], [2.0]], np.float32([[1.0], [2.0]])),
    ],
)
def test_packed_numbers_values(value, expected):
    assert _same(float_array(value, dtypes.float32), expected)


@pytest.mark.parametrize(
    "value",
    [[1.0, "2"], [[1.0, None]], [[1.0], [2.0, 3.0]], [[1.0, [2.0]]], [True, False], [2**70, 1.0]],
)
def test_packed_numbers_defer_to_the_general_path(value):
    assert float_array(value, dtypes.float32) is None


def test_big_lists_take_numpys_conversion():
    value = [float(i) for i in range((1 << 16) + 1)]
    assert _same(float_array(value, dtypes.float32), np.float32(value))


def test_tensor_spec_dims_follow_its_shape():
    spec = TensorSpec("x", "x:0", dtypes.float32, TensorShape([None, 3]))
    assert spec.dims == (None, 3)
    spec.shape = TensorShape([2])
    assert spec.dims == (2,)


# -- request accounting ----------------------------------------------------------------------
def test_unload_waits_for_requests_in_flight(tmp_path):
    s = Servable("m", 1, tmp_path, ModelConfig())
    s.state = VersionState.AVAILABLE
    s.acquire()
    s.acquire()
    done = threading.Event()
    worker = threading.Thread(target=lambda: (s.unload(drain_timeout=30.0), done.set()))
    worker.start()
    time.sleep(0.05)
    assert not done.is_set()  # waiting for the two requests
    with pytest.raises(Unavailable):
        s.acquire()  # no new request once unloading began
    s.release()
    time.sleep(0.05)
    assert not done.is_set()
    s.release()
    assert done.wait(5.0), "unload did not wake when the last request finished"
    worker.join()
    assert s.state is VersionState.END


def test_requests_without_an_unload_never_notify(tmp_path):
    s = Servable("m", 1, tmp_path, ModelConfig())
    s.state = VersionState.AVAILABLE
    for _ in range(3):
        s.acquire()
        s.release()
    assert s._inflight == 0
