"""Application wiring: event loop stays free, auth, metrics, JSON errors, access log."""

import asyncio
import json
import logging

import aiohttp
import pytest

from service.app import create_app
from service.cli import AccessLogger, serve
from service.keys import MODEL, VERSION
from service.logs import JsonFormatter
from tests.service import models


@pytest.fixture
async def slow_client(aiohttp_client, make_config, tmp_path):
    models.slow(tmp_path / "slow" / "1", iterations=150_000)
    models.half_plus_two(tmp_path / "hpt" / "1")
    bad = tmp_path / "broken" / "1"
    bad.mkdir(parents=True)
    (bad / "saved_model.msgpack").write_bytes(b"garbage")
    config = make_config(model_repository=str(tmp_path), request_timeout=300.0)
    return await aiohttp_client(create_app(config))


async def test_health_answers_while_a_slow_model_computes(slow_client):
    slow = asyncio.create_task(
        slow_client.post("/v1/models/slow:predict", json={"instances": [1.0]})
    )
    await asyncio.sleep(0.2)  # the request is now running in a compute thread
    for _ in range(5):
        resp = await slow_client.get("/v2/health/live")
        assert resp.status == 200
    assert not slow.done(), "health checks waited for the model computation"
    resp = await slow
    assert resp.status == 200 and (await resp.json())["predictions"] == [1.0]


async def test_bearer_token_guards_both_protocols_but_not_health_or_metrics(
    aiohttp_client, make_config
):
    client = await aiohttp_client(create_app(make_config(auth_token="t0ken")))
    for method, path in [
        ("GET", "/v1/models/half_plus_two"),
        ("GET", "/v2/models/strings"),
        ("POST", "/v1/models/half_plus_two:predict"),
        ("POST", "/v2/repository/index"),
    ]:
        resp = await client.request(method, path, json={"instances": [1.0]})
        assert resp.status == 401 and resp.headers["WWW-Authenticate"] == "Bearer"
        assert "bearer token" in (await resp.json())["error"]
        resp = await client.request(method, path, headers={"Authorization": "Bearer wrong"})
        assert resp.status == 401
    resp = await client.post(
        "/v1/models/half_plus_two:predict",
        json={"instances": [2.0]},
        headers={"Authorization": "Bearer t0ken"},
    )
    assert resp.status == 200 and (await resp.json())["predictions"] == [4.0]
    for path in ["/v2/health/live", "/v2/health/ready", "/metrics"]:
        assert (await client.get(path)).status == 200


async def test_metrics_reference(slow_client):
    await slow_client.post("/v1/models/hpt:predict", json={"instances": [1.0]})
    await slow_client.post("/v1/models/hpt:predict", json={"instances": ["x"]})
    await slow_client.post("/v1/models/no_such_model:predict", json={"instances": [1.0]})
    await slow_client.post(
        "/v2/models/hpt/infer",
        json={"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]},
    )
    resp = await slow_client.get("/metrics")
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain")
    text = await resp.text()
    for line in [
        'flowserve_requests_total{code="200",endpoint="predict",model="hpt",'
        'protocol="tfserving",version="1"} 1.0',
        'flowserve_requests_total{code="400",endpoint="predict",model="hpt",'
        'protocol="tfserving",version="1"} 1.0',
        'flowserve_requests_total{code="404",endpoint="predict",model="",'
        'protocol="tfserving",version=""} 1.0',
        'flowserve_requests_total{code="200",endpoint="infer",model="hpt",'
        'protocol="v2",version="1"} 1.0',
        'flowserve_model_version_state{model="hpt",state="AVAILABLE",version="1"} 1.0',
        'flowserve_model_version_state{model="hpt",state="LOADING",version="1"} 0.0',
        'flowserve_model_version_state{model="broken",state="END",version="1"} 1.0',
        'flowserve_model_load_failures_total{model="broken"} 1.0',
        'flowserve_model_load_duration_seconds_count{model="hpt"} 1.0',
        'flowserve_model_loads_total{model="hpt"} 1.0',
        'flowserve_request_duration_seconds_count{endpoint="predict",model="hpt",'
        'protocol="tfserving",version="1"} 2.0',
        'flowserve_requests_in_flight{model="hpt"} 0.0',
        'flowserve_inference_rows_total{model="hpt",version="1"} 2.0',
        'flowserve_model_executions_total{model="hpt",version="1"} 2.0',
    ]:
        assert line in text, line
    assert "process_cpu_seconds_total" in text and "python_info" in text
    assert "no_such_model" not in text  # client-chosen names never become label values


async def test_unknown_routes_and_methods_are_json_errors(client):
    resp = await client.get("/nowhere")
    assert resp.status == 404 and "no route" in (await resp.json())["error"]
    resp = await client.delete("/v2/models/strings")
    assert resp.status == 405 and "not allowed" in (await resp.json())["error"]


async def test_apps_have_separate_metric_registries(aiohttp_client, make_config):
    a = await aiohttp_client(create_app(make_config()))
    b = await aiohttp_client(create_app(make_config()))
    await a.post("/v1/models/half_plus_two:predict", json={"instances": [1.0]})
    text_b = await (await b.get("/metrics")).text()
    assert 'protocol="tfserving"' not in text_b


class _FakeRequest(dict):
    method = "POST"
    path = "/v1/models/hpt:predict"
    remote = "127.0.0.1"


class _FakeResponse:
    status = 200


def test_access_log_lines_text_and_json(caplog):
    logger = logging.getLogger("flowserve.access.test")
    request = _FakeRequest()
    request[MODEL] = "hpt"
    request[VERSION] = "2"
    with caplog.at_level(logging.INFO, logger="flowserve.access.test"):
        AccessLogger(logger, "").log(request, _FakeResponse(), 0.0123)
    record = caplog.records[-1]
    assert record.getMessage() == (
        "POST /v1/models/hpt:predict model=hpt version=2 status=200 latency_ms=12.30"
    )
    doc = json.loads(JsonFormatter().format(record))
    assert doc["method"] == "POST" and doc["model"] == "hpt" and doc["status"] == 200
    assert doc["latency_ms"] == pytest.approx(12.3) and doc["path"] == "/v1/models/hpt:predict"


async def test_serve_logs_the_bound_port_serves_and_stops(make_config, caplog):
    stop = asyncio.Event()
    config = make_config(host="127.0.0.1", port=0, grpc_port=0)  # an OS-picked port; no gRPC
    with caplog.at_level(logging.INFO, logger="flowserve"):
        task = asyncio.create_task(serve(config, stop))
        for _ in range(200):  # at most ~10 s for the models to load
            found = [r for r in caplog.records if r.getMessage().startswith("flowserve listening")]
            if found or task.done():
                break
            await asyncio.sleep(0.05)
        assert found, "serve() never logged its address"
        port = int(found[0].getMessage().split("http://127.0.0.1:")[1].split(" ")[0])
        assert port > 0
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/v2/health/live") as r:
                assert r.status == 200 and await r.json() == {"live": True}
        stop.set()
        await asyncio.wait_for(task, 30)
    assert any(r.getMessage() == "stopped" for r in caplog.records)
