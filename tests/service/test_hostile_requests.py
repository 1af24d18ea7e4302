"""Hostile requests (issue 16, findings 4, 6, 7, 8, 11): exact integer ranges, client mistakes
answered 4xx with JSON (never 500), caps checked before allocating, defensive auth, bounded
metrics labels and in-flight budgets."""

import asyncio
import gzip
import json
import struct
import threading
import zlib

import brotli
import msgpack
import pytest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from service.app import METRICS, create_app
from service.config import ServerConfig
from tests.service import hostile

INT64_MAX, UINT64_MAX = 2**63 - 1, 2**64 - 1


@pytest.fixture(scope="module")
def echo_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("echo")
    hostile.echo(root / "echo" / "1")
    (root / "echo" / "config.json").write_text(json.dumps({"warmup": False}))
    return root


def config_for(root, **kw) -> ServerConfig:
    return ServerConfig(model_repository=str(root), poll_interval=0, port=0, **kw).validate()


@pytest.fixture
async def echo(aiohttp_client, echo_repo):
    return await aiohttp_client(create_app(config_for(echo_repo)))


def v2(datatype, data, shape=None, signature=None):
    doc = {
        "inputs": [
            {
                "name": "x",
                "datatype": datatype,
                "shape": [len(data)] if shape is None else shape,
                "data": data,
            }
        ]
    }
    if signature or datatype != "INT64":
        doc["parameters"] = {"signature_name": signature or datatype}
    return doc


async def post(client, path, body, status, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = await client.post(path, data=data, headers=headers or {})
    assert r.headers["Content-Type"].startswith(("application/json", "application/msgpack")), (
        r.headers
    )
    doc = await r.json() if r.content_type == "application/json" else None
    assert r.status == status, doc
    if status >= 400:
        assert isinstance(doc["error"], str) and doc["error"]
    return doc


INFER = "/v2/models/echo/infer"


# -- finding 4: integers are range-checked exactly -------------------------------------------
@pytest.mark.parametrize(
    "datatype, text",
    [
        ("INT64", "9.223372036854775807e18"),  # 2**63 as a float: used to wrap to -2**63
        ("INT64", "9223372036854775808"),
        ("INT64", "-9223372036854775809"),
        ("UINT64", "18446744073709551616"),  # orjson makes it a float: used to wrap to 0
        ("UINT64", "1.8446744073709552e19"),
        ("UINT64", "-1"),
        ("INT32", "2147483648"),
        ("INT64", "1" + "0" * 40),  # beyond 64 bits
    ],
)
async def test_integers_out_of_range_are_400(echo, datatype, text):
    sig = "" if datatype == "INT64" else f', "parameters": {{"signature_name": "{datatype}"}}'
    body = (
        f'{{"inputs": [{{"name": "x", "datatype": "{datatype}", "shape": [1], '
        f'"data": [{text}]}}]{sig}}}'
    ).encode()
    doc = await post(echo, INFER, body, 400)
    assert "range" in doc["error"] or "64 bits" in doc["error"], doc


@pytest.mark.parametrize(
    "datatype, values",
    [
        ("INT64", [INT64_MAX, -(2**63), 2**53 + 1, -1]),
        ("UINT64", [UINT64_MAX, 2**63 + 1, 0, 1]),
        ("INT64", [2**62 + 1, 1]),
    ],
)
async def test_64_bit_integers_round_trip_exactly(echo, datatype, values):
    doc = await post(echo, INFER, v2(datatype, values), 200)
    assert doc["outputs"][0]["data"] == values


async def test_more_than_64_bits_is_400_naming_it(echo):
    body = b'{"inputs": [{"name": "x", "datatype": "FP64", "shape": [1], "data": [%s]}]}' % (
        b"1" * 30
    )
    body = body.replace(b"]}]}", b']}], "parameters": {"signature_name": "FP64"}}')
    # FP64 takes any JSON number: a 30-digit integer becomes the nearest double.
    doc = await post(echo, INFER, body, 200)
    assert doc["outputs"][0]["data"] == [float("1" * 30)]
    doc = await post(echo, INFER, v2("INT64", [2**64 + 5]), 400)
    assert "out of range for int64" in doc["error"]
    doc = await post(echo, INFER, v2("INT64", [10**400]), 400)
    assert "integer 1000000000" in doc["error"] and "does not fit in 64 bits" in doc["error"]


# -- finding 6: client mistakes are 4xx JSON -------------------------------------------------
async def test_huge_dimension_with_empty_data_is_400_in_every_encoding(echo):
    shape = [0, 2**63]
    doc = await post(echo, INFER, v2("INT64", [], shape=shape), 400)
    assert "dimension 1" in doc["error"] and "max_tensor_elements" in doc["error"]
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "x",
                    "datatype": "INT64",
                    "shape": shape,
                    "parameters": {"binary_data_size": 0},
                }
            ]
        }
    ).encode()
    await post(echo, INFER, header, 400, {"Inference-Header-Content-Length": str(len(header))})
    packed = msgpack.packb(
        {"inputs": [{"name": "x", "datatype": "INT64", "shape": shape, "data": b""}]}
    )
    await post(echo, INFER, packed, 400, {"Content-Type": "application/msgpack"})
    v1 = msgpack.packb({"inputs": {"dtype": "int64", "shape": shape, "data": b""}})
    await post(echo, "/v1/models/echo:predict", v1, 400, {"Content-Type": "application/msgpack"})


async def test_element_count_cap_is_checked_before_allocating(aiohttp_client, echo_repo):
    client = await aiohttp_client(create_app(config_for(echo_repo, max_tensor_elements=1000)))
    await post(client, INFER, v2("INT64", list(range(1000))), 200)
    doc = await post(client, INFER, v2("INT64", [], shape=[1001]), 400)
    assert "at most 1000" in doc["error"]
    doc = await post(client, INFER, v2("INT64", [], shape=[2000, 0]), 400)
    assert "dimension 0 of shape [2000, 0] is 2000" in doc["error"]
    doc = await post(client, INFER, v2("INT64", [], shape=[100, 100]), 400)
    assert "holds 10000 elements" in doc["error"]


async def test_5000_digit_number_in_a_v1_body_is_400(echo):
    body = b'{"instances": [' + b"7" * 5000 + b"]}"
    doc = await post(echo, "/v1/models/echo:predict", body, 400)
    assert "number" in doc["error"]


@pytest.mark.parametrize(
    "encoding, body",
    [
        ("gzip", b"\x1f\x8b\x08\x00garbage-not-gzip"),
        ("deflate", b"definitely not deflate"),
        ("br", b"\xff\xff\xffnot brotli"),
        (
            "gzip",
            gzip.compress(json.dumps(v2("INT64", [1])).encode(), mtime=0) + b"trailing garbage",
        ),
        # A truncated raw deflate stream: aiohttp's parser dropped it without an answer.
        ("deflate", b"D\xf1Q\x85"),
        ("gzip", gzip.compress(json.dumps(v2("INT64", [1])).encode(), mtime=0)[:-6]),
        ("br", brotli.compress(json.dumps(v2("INT64", [1])).encode())[:-3]),
    ],
)
async def test_undecodable_bodies_are_400(echo, encoding, body):
    doc = await post(echo, INFER, body, 400, {"Content-Encoding": encoding})
    assert "could not be" in doc["error"], doc


async def test_unknown_content_encoding_is_415(echo):
    doc = await post(echo, INFER, b"(compressed)", 415, {"Content-Encoding": "zstd"})
    assert "'zstd' is not supported" in doc["error"]


async def test_compressed_bodies_still_work(echo):
    raw = json.dumps(v2("INT64", [1, 2])).encode()
    for encoding, data in (
        ("gzip", gzip.compress(raw)),
        ("deflate", zlib.compress(raw)),
        ("br", brotli.compress(raw)),
    ):
        doc = await post(echo, INFER, data, 200, {"Content-Encoding": encoding})
        assert doc["outputs"][0]["data"] == [1, 2]


@pytest.mark.parametrize("value", [True, False, "soon", [1], {"s": 1}, -1, 0.5, "nan", 1e300])
async def test_bad_timeout_parameters_are_400(echo, value):
    doc = v2("INT64", [1])
    doc["parameters"] = {"timeout": value}
    message = (await post(echo, INFER, doc, 400))["error"]
    assert "parameters.timeout" in message


async def test_authorization_is_parsed_defensively(aiohttp_client, echo_repo):
    client = await aiohttp_client(create_app(config_for(echo_repo, auth_token="s3cret")))
    body = json.dumps(v2("INT64", [1])).encode()
    for header in ("Bearer s3cret", "bearer s3cret", "BEARER  s3cret"):
        r = await client.post(INFER, data=body, headers={"Authorization": header})
        assert r.status == 200, header
    for header in ("Bearer wrong", "Basic s3cret", "s3cret", "Bearer", ""):
        r = await client.post(INFER, data=body, headers={"Authorization": header})
        assert r.status == 401 and "bearer token" in (await r.json())["error"]
    # Non-UTF-8 bytes in the header: aiohttp hands them over surrogate-escaped.
    raw = (
        b"POST /v2/models/echo/infer HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n"
        b"Content-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
        % len(body)
    ) + body
    status, headers, payload = hostile.split_response(
        await hostile.raw_request(client.server.port, raw)
    )
    assert status == 401 and headers["content-type"].startswith("application/json")
    assert "bearer token" in json.loads(payload)["error"]


async def test_content_length_over_the_limit_is_refused_before_reading(aiohttp_client, echo_repo):
    client = await aiohttp_client(create_app(config_for(echo_repo, max_request_bytes=4096)))
    # 100 GB declared, 10 bytes sent: the answer comes at once, from the header alone.
    raw = (
        b"POST /v2/models/echo/infer HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n0123456789"
    )
    status, headers, payload = hostile.split_response(
        await hostile.raw_request(client.server.port, raw, timeout=5)
    )
    assert status == 413, payload
    message = json.loads(payload)["error"]
    assert "Content-Length 100000000000" in message and "4096" in message


# -- finding 8: metrics labels come only from known names -----------------------------------
async def test_unknown_model_names_do_not_become_metric_labels(echo):
    for i in range(50):
        r = await echo.get(f"/v2/models/nosuch{i}/ready")
        assert r.status == 404
        r = await echo.post(f"/v1/models/other{i}:predict", data=b"{}")
        assert r.status == 404
    r = await echo.get("/v2/models/echo/versions/77/ready")
    assert r.status == 404
    await post(echo, INFER, v2("INT64", [1]), 200)
    text = await (await echo.get("/metrics")).text()
    models_seen, versions_seen = set(), set()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "model" in sample.labels:
                models_seen.add(sample.labels["model"])
            if sample.labels.get("model") == "echo" and "version" in sample.labels:
                versions_seen.add(sample.labels["version"])
    assert models_seen <= {"", "echo"}, models_seen
    assert "77" not in versions_seen


class _StuckCollector:
    """A collector whose ``collect`` blocks until released (a registry made slow): it
    records that it was entered, and whether it gave up waiting (never, when it passes)."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.gave_up = False

    def describe(self):
        return []

    def collect(self):
        self.entered.set()
        # Bounded, so that a scrape rendered on the event loop (the bug) fails the test
        # instead of hanging it: the loop would be stuck here and nothing else could run.
        self.gave_up = not self.release.wait(20)
        yield GaugeMetricFamily("flowserve_test_stuck", "a collector made slow", value=1.0)


async def test_metrics_are_rendered_off_the_event_loop(aiohttp_client, echo_repo):
    app = create_app(config_for(echo_repo))
    stuck = _StuckCollector()
    app[METRICS].registry.register(stuck)
    client = await aiohttp_client(app)
    scrape = asyncio.ensure_future(client.get("/metrics"))
    for _ in range(2000):  # the scrape reaches the collector
        if stuck.entered.is_set():
            break
        await asyncio.sleep(0.01)
    assert stuck.entered.is_set()
    # While the scrape is stuck rendering, the server answers other requests.
    r = await client.get("/v2/health/live")
    assert r.status == 200
    await post(client, INFER, v2("INT64", [7]), 200)
    assert not scrape.done() and not stuck.gave_up
    stuck.release.set()
    r = await scrape
    assert r.status == 200 and "flowserve_test_stuck 1.0" in await r.text()
    assert not stuck.gave_up


# -- finding 5: a global in-flight budget ----------------------------------------------------
async def test_inflight_budget_sheds_load_with_503_and_retry_after(aiohttp_client, echo_repo):
    from service.app import _Budget

    budget = _Budget(max_requests=2, max_bytes=100)
    assert budget.try_take(60) is None
    assert "max_inflight_bytes" in budget.try_take(60)
    assert budget.try_take(30) is None
    assert "max_inflight_requests" in budget.try_take(0)
    budget.give(60)
    budget.give(30)
    assert budget.try_take(500) is None  # alone, a request may use more than the budget
    budget.give(500)
    assert (budget.requests, budget.bytes) == (0, 0)

    client = await aiohttp_client(
        create_app(config_for(echo_repo, max_inflight_requests=1, max_inflight_bytes=1000))
    )
    # One request holding the budget: a body that never finishes arriving.
    head = (
        b"POST /v2/models/echo/infer HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"
    )
    import asyncio

    reader, writer = await asyncio.open_connection("127.0.0.1", client.server.port)
    writer.write(head)
    await writer.drain()
    await asyncio.sleep(0.2)
    r = await client.post(INFER, data=json.dumps(v2("INT64", [1])).encode())
    assert r.status == 503 and r.headers["Retry-After"] == "1"
    assert "max_inflight_requests" in (await r.json())["error"]
    writer.close()
    await asyncio.sleep(0.2)
    await post(client, INFER, v2("INT64", [1]), 200)  # the budget was given back
    _ = struct


# -- finding 1: a deadline stops the computation, batched or not ------------------------------
@pytest.mark.parametrize("batching", [False, True])
async def test_a_missed_deadline_frees_the_compute_thread(tmp_path, manager_for, batching):
    import numpy as np

    from service.errors import DeadlineExceeded
    from tests.service import models

    models.slow(tmp_path / "spin" / "1", iterations=10**9)
    models.write_config(tmp_path / "spin", {"warmup": False})
    models.half_plus_two(tmp_path / "hpt" / "1")
    params = tmp_path / "batching.json"
    params.write_text('{"num_batch_threads": 1}')
    # One compute thread: if the endless loop kept it, the second model could never run.
    manager = await manager_for(
        tmp_path,
        num_threads=1,
        enable_batching=batching,
        batching_parameters_file=str(params),
    )
    assert manager.compute_pool._max_workers == 1
    x = {"x": np.array([1.0], np.float32)}
    for _ in range(2):
        with pytest.raises(DeadlineExceeded):
            await manager.infer("spin", x, timeout=0.2)
    result = await manager.infer("hpt", x, timeout=10)
    assert result.outputs["y"].tolist() == [2.5]
    assert len(manager.overdue) == 0 and manager.ready
