"""Request IDs on every response and log line, RFC 3339 log timestamps, endpoint labels,
in-flight and execution metrics, and --metrics-port."""

import json
import logging
import re

from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app, endpoint_of, metrics_app
from service.logs import JsonFormatter, RequestIdFilter, TextFormatter, rfc3339

X = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}


async def test_request_id_is_echoed_on_success_and_every_error(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config(auth_token="s3cret")))
    auth = {"Authorization": "Bearer s3cret"}
    cases = [
        ("POST", "/v1/models/half_plus_two:predict", {"instances": [1.0]}, auth, 200),
        ("POST", "/v1/models/half_plus_two:predict", {"instances": ["x"]}, auth, 400),
        ("POST", "/v1/models/nope:predict", {"instances": [1.0]}, auth, 404),
        ("GET", "/v1/models/half_plus_two:predict", None, auth, 405),
        ("POST", "/v1/models/half_plus_two:predict", {"instances": [1.0]}, {}, 401),
        ("GET", "/no/such/route", None, auth, 404),
        ("GET", "/v2/health/live", None, {}, 200),
    ]
    for i, (method, path, body, headers, status) in enumerate(cases):
        rid = f"req-{i}.abc"
        resp = await client.request(
            method, path, json=body, headers={**headers, "X-Request-ID": rid}
        )
        assert resp.status == status, (path, await resp.text())
        assert resp.headers["X-Request-ID"] == rid, path
        resp = await client.request(method, path, json=body, headers=headers)
        assert re.fullmatch(r"[0-9a-f]{32}", resp.headers["X-Request-ID"]), path


async def test_bad_request_ids_are_replaced_and_v2_id_is_adopted(client):
    resp = await client.get("/v2/health/live", headers={"X-Request-ID": "a b\tc" * 40})
    assert re.fullmatch(r"[0-9a-f]{32}", resp.headers["X-Request-ID"])
    # V2 "id" without a header: the response carries it in the body and the header.
    resp = await client.post("/v2/models/half_plus_two/infer", json={**X, "id": "my-id-1"})
    assert (await resp.json())["id"] == "my-id-1" and resp.headers["X-Request-ID"] == "my-id-1"
    # A header wins for the header; the body echoes the body's id.
    resp = await client.post(
        "/v2/models/half_plus_two/infer",
        json={**X, "id": "body-id"},
        headers={"X-Request-ID": "hdr-id"},
    )
    assert (await resp.json())["id"] == "body-id" and resp.headers["X-Request-ID"] == "hdr-id"
    # No id anywhere: the generated one, in both places.
    resp = await client.post("/v2/models/half_plus_two/infer", json=X)
    assert (await resp.json())["id"] == resp.headers["X-Request-ID"]


async def test_every_log_line_of_a_request_carries_its_id(client, caplog, monkeypatch):
    from service.manager import ModelManager

    original = ModelManager.infer

    async def infer(self, *args, **kwargs):
        logging.getLogger("flowserve.test").warning("inside the request")
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(ModelManager, "infer", infer)
    caplog.handler.addFilter(RequestIdFilter())
    with caplog.at_level(logging.INFO):
        resp = await client.post(
            "/v1/models/half_plus_two:predict",
            json={"instances": [1.0]},
            headers={"X-Request-ID": "r-9"},
        )
        assert resp.status == 200
        resp = await client.post("/v1/models/half_plus_two:predict", json={"instances": [1.0]})
        generated = resp.headers["X-Request-ID"]
    lines = [r for r in caplog.records if r.getMessage() == "inside the request"]
    assert [r.request_id for r in lines] == ["r-9", generated]
    doc = json.loads(JsonFormatter().format(lines[0]))
    assert doc["request_id"] == "r-9"
    logging.getLogger("flowserve.test").warning("outside")
    assert caplog.records[-1].request_id is None


def test_log_timestamps_are_rfc3339_utc_milliseconds():
    record = logging.LogRecord("flowserve.x", logging.INFO, __file__, 1, "hello %s", ("w",), None)
    record.created = 1_700_000_000.1234
    record.request_id = "abc"
    doc = json.loads(JsonFormatter().format(record))
    assert doc["time"] == "2023-11-14T22:13:20.123Z" == rfc3339(record.created)
    assert doc["message"] == "hello w" and doc["request_id"] == "abc"
    line = TextFormatter().format(record)
    assert line == "2023-11-14T22:13:20.123Z INFO flowserve.x: hello w request_id=abc"


def test_endpoint_labels_are_a_fixed_set():
    assert endpoint_of("POST", "/v1/models/m:predict") == "predict"
    assert endpoint_of("POST", "/v1/models/m/versions/2:classify") == "predict"
    assert endpoint_of("GET", "/v1/models/m/metadata") == "metadata"
    assert endpoint_of("GET", "/v1/models/m") == "status"
    assert endpoint_of("POST", "/v2/models/m/versions/1/infer") == "infer"
    assert endpoint_of("GET", "/v2/models/m") == "metadata"
    assert endpoint_of("GET", "/v2") == "metadata"
    assert endpoint_of("GET", "/v2/models/m/ready") == "health"
    assert endpoint_of("GET", "/v2/health/ready") == "health"
    assert endpoint_of("GET", "/v2/models/m/config") == "config"
    assert endpoint_of("POST", "/v2/repository/index") == "repository"
    assert endpoint_of("GET", "/metrics") == "metrics"
    assert endpoint_of("GET", "/../etc/passwd") == "other"


def samples(text, name):
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


async def test_inference_and_metadata_are_separate_series(client):
    await client.post("/v2/models/half_plus_two/infer", json=X)
    await client.get("/v2/models/half_plus_two")
    await client.get("/v2/health/ready")
    rows = {"instances": [1.0, 2.0, 3.0]}
    await client.post("/v1/models/half_plus_two/versions/1:predict", json=rows)
    text = await (await client.get("/metrics")).text()
    counts = samples(text, "flowserve_requests_total")
    by_endpoint = {}
    for labels, v in counts.items():
        e = dict(labels)["endpoint"]
        by_endpoint[e] = by_endpoint.get(e, 0) + v
    assert by_endpoint == {"infer": 1, "metadata": 1, "health": 1, "predict": 1}
    inferred = samples(text, "flowserve_inference_rows_total")
    assert inferred[(("model", "half_plus_two"), ("version", "1"))] == 3.0  # rows
    executions = samples(text, "flowserve_model_executions_total")
    assert executions[(("model", "half_plus_two"), ("version", "1"))] == 1.0  # one run
    assert samples(text, "flowserve_requests_in_flight")[(("model", "half_plus_two"),)] == 0


async def test_metrics_port_serves_the_same_registry(aiohttp_client, make_config):
    app = create_app(make_config())
    client = await aiohttp_client(app)
    side = await aiohttp_client(metrics_app(app))
    await client.post("/v2/models/half_plus_two/infer", json=X)
    text = await (await side.get("/metrics")).text()
    assert 'endpoint="infer"' in text
    assert (await side.get("/v2/health/ready")).status == 404


def test_access_log_lines_carry_the_request_id():
    from service.cli import AccessLogger
    from service.keys import MODEL, REQUEST_ID

    class Request(dict):
        method, path, remote = "POST", "/v2/models/m/infer", "127.0.0.1"

    class Response:
        status = 200

    request = Request()
    request[MODEL] = "m"
    request[REQUEST_ID] = "abc-1"
    records = []
    logger = logging.getLogger("flowserve.access.rid")
    logger.propagate = False
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    AccessLogger(logger, "").log(request, Response(), 0.001)
    (record,) = records
    assert record.request_id == "abc-1"
    assert json.loads(JsonFormatter().format(record))["request_id"] == "abc-1"
    assert TextFormatter().format(record).endswith("request_id=abc-1")
