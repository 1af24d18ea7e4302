"""Triton's trace extension: trace settings over REST and gRPC (tritonclient), validated,
global and per model, and applied to the OpenTelemetry spans the server records (level OFF
records nothing, rate N traces one request in N, count stops after that many)."""

import pytest

from service.app import create_app
from service.errors import InvalidInput
from service.trace_settings import TraceSettings
from tests.service.serving import ServerThread

sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")
httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

INFER = {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2]}]}


@pytest.fixture(scope="module")
def exporter():
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, sdk.TracerProvider):
        provider = sdk.TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def test_settings_sample_one_in_rate_and_stop_at_count():
    s = TraceSettings(tracing_active=True)
    assert s.current() == {
        "trace_level": ["TIMESTAMPS"],
        "trace_rate": "1",
        "trace_count": "-1",
        "log_frequency": "0",
        "trace_file": "",
        "trace_mode": "opentelemetry",
    }
    assert TraceSettings().current()["trace_level"] == ["OFF"]
    s.update({"trace_rate": "3"})
    assert [s.sample("m") for _ in range(7)] == [True, False, False, True, False, False, True]
    s.update({"trace_rate": 1, "trace_count": "2"})
    assert [s.sample(None) for _ in range(4)] == [True, True, False, False]
    # A model's overrides have their own counters; null clears them.
    assert s.update({"trace_count": "-1", "trace_level": ["OFF"]}, "m")["trace_level"] == ["OFF"]
    assert not any(s.sample("m") for _ in range(3))
    assert s.update({"trace_level": None, "trace_count": None}, "m")["trace_count"] == "0"
    assert s.current("m") == s.current()
    s.update({"trace_count": None, "trace_level": "timestamps"})
    assert s.current()["trace_count"] == "-1" and s.current()["trace_level"] == ["TIMESTAMPS"]


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"trace_rate": "0"}, "trace_rate must be between 1"),
        ({"trace_rate": "x"}, "trace_rate must be an integer"),
        ({"trace_count": "-2"}, "trace_count must be between -1"),
        ({"log_frequency": True}, "log_frequency must be an integer"),
        ({"trace_level": ["TENSORS"]}, "TENSORS is not supported"),
        ({"trace_level": ["OFF", "TIMESTAMPS"]}, "OFF cannot be combined"),
        ({"trace_level": "LOUD"}, "must be OFF or TIMESTAMPS"),
        ({"trace_file": "/tmp/t.json"}, "trace_file cannot be set"),
        ({"trace_mode": "triton"}, "trace_mode is opentelemetry"),
        ({"trace_speed": "1"}, "unknown trace setting"),
    ],
)
def test_bad_settings_are_refused_whole(changes, message):
    s = TraceSettings(tracing_active=True)
    with pytest.raises(InvalidInput, match=message):
        s.update({"trace_rate": "5", **changes})
    assert s.current()["trace_rate"] == "1"  # nothing applied


async def test_settings_decide_which_requests_are_traced(aiohttp_client, make_config, exporter):
    client = await aiohttp_client(create_app(make_config()))

    async def traced_requests(n):
        exporter.clear()
        for _ in range(n):
            resp = await client.post("/v2/models/half_plus_two/infer", json=INFER)
            assert resp.status == 200
        servers = [s for s in exporter.get_finished_spans() if s.kind == trace.SpanKind.SERVER]
        runs = [s for s in exporter.get_finished_spans() if s.name == "session_run"]
        assert len(runs) == len(servers)  # an untraced request leaves no child span either
        return len(servers)

    assert await traced_requests(2) == 2  # OTel configured: every request by default
    resp = await client.post("/v2/trace/setting", json={"trace_rate": "3"})
    assert resp.status == 200 and (await resp.json())["trace_rate"] == "3"
    assert await traced_requests(6) == 2
    resp = await client.post("/v2/trace/setting", json={"trace_level": ["OFF"]})
    assert await traced_requests(3) == 0
    # A model's own settings win over the global ones.
    resp = await client.post(
        "/v2/models/half_plus_two/trace/setting",
        json={"trace_level": ["TIMESTAMPS"], "trace_rate": "1", "trace_count": "2"},
    )
    assert resp.status == 200
    assert await traced_requests(4) == 2
    resp = await client.post(
        "/v2/models/half_plus_two/trace/setting",
        json={"trace_level": None, "trace_rate": None, "trace_count": None},
    )
    assert (await resp.json())["trace_level"] == ["OFF"]
    assert await traced_requests(2) == 0


async def test_rest_errors(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config()))
    resp = await client.post("/v2/trace/setting", json={"trace_rate": -1})
    assert resp.status == 400 and "trace_rate" in (await resp.json())["error"]
    resp = await client.get("/v2/models/nope/trace/setting")
    assert resp.status == 404
    assert (await resp.json())["error"] == "Request for unknown model: 'nope' is not found"
    resp = await client.get("/v2")
    assert "trace" in (await resp.json())["extensions"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from service.config import ServerConfig
    from tests.service import models

    root = models.make_repository(tmp_path_factory.mktemp("trace-repo"))
    config = ServerConfig(model_repository=str(root), poll_interval=0.0, port=0).validate()
    with ServerThread(config) as s:
        yield s


def test_tritonclient_http_and_grpc(server):
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    grpc_client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        settings = http.update_trace_settings(settings={"trace_rate": "7", "log_frequency": "2"})
        assert settings["trace_rate"] == "7" and settings["log_frequency"] == "2"
        got = grpc_client.get_trace_settings(as_json=True)["settings"]
        assert got["trace_rate"] == {"value": ["7"]}
        assert got["trace_mode"] == {"value": ["opentelemetry"]}
        got = grpc_client.update_trace_settings(
            model_name="half_plus_two", settings={"trace_count": "5"}, as_json=True
        )["settings"]
        assert got["trace_count"] == {"value": ["5"]} and got["trace_rate"] == {"value": ["7"]}
        assert http.get_trace_settings(model_name="half_plus_two")["trace_count"] == "5"
        assert http.get_trace_settings()["trace_count"] == "-1"
        got = grpc_client.update_trace_settings(
            model_name="half_plus_two", settings={"trace_count": None}, as_json=True
        )["settings"]
        assert got["trace_count"] == {"value": ["-1"]}
        with pytest.raises(Exception, match="trace_level TENSORS is not supported") as info:
            grpc_client.update_trace_settings(settings={"trace_level": ["TENSORS"]})
        assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
        with pytest.raises(Exception, match="Request for unknown model: 'nope'") as info:
            grpc_client.get_trace_settings(model_name="nope")
        assert info.value.status() == "StatusCode.NOT_FOUND"
        assert "trace" in grpc_client.get_server_metadata().extensions
    finally:
        http.close()
        grpc_client.close()


async def test_a_batch_is_traced_for_its_sampled_requests_only(
    aiohttp_client, tmp_path, exporter, monkeypatch
):
    import asyncio
    import threading

    from service import servable as servable_module
    from tests.service import models
    from tests.service.conftest import manager_config

    models.half_plus_two(tmp_path / "hpt" / "1")
    batching = {"enabled": True, "max_batch_size": 2, "batch_timeout_micros": 5_000_000}
    models.write_config(tmp_path / "hpt", {"batching": {**batching, "num_batch_threads": 1}})
    # Runs go to the batch thread (none inline on the event loop, which the hold would block).
    app = create_app(manager_config(tmp_path, inline_compute_micros=0))
    client = await aiohttp_client(app)
    resp = await client.post("/v2/trace/setting", json={"trace_rate": "2"})
    assert resp.status == 200

    # Hold the one batch thread's first run (installed after warmup), so that the next two
    # requests queue while it runs and then make one batch of two.
    started, release = threading.Event(), threading.Event()
    original = servable_module.Signature.run

    def held_run(sig, arrays, instance=None, **kw):
        started.set()
        release.wait(30)
        return original(sig, arrays, instance, **kw)

    monkeypatch.setattr(servable_module.Signature, "run", held_run)

    async def predict(i):
        resp = await client.post("/v1/models/hpt:predict", json={"instances": [float(i)]})
        assert resp.status == 200 and (await resp.json())["predictions"] == [i / 2 + 2]

    exporter.clear()
    # Rate 2: the first and third requests are sampled, the second is not.
    first = asyncio.create_task(predict(0))
    await asyncio.to_thread(started.wait, 30)
    rest = [asyncio.create_task(predict(i)) for i in (1, 2)]
    depth = 'flowserve_batch_queue_depth{model="hpt",version="1"} 2.0'
    for _ in range(500):
        if depth in await (await client.get("/metrics")).text():
            break
        await asyncio.sleep(0.02)
    release.set()
    await asyncio.gather(first, *rest)
    finished = exporter.get_finished_spans()
    servers = {
        s.context.span_id
        for s in finished
        if s.kind == trace.SpanKind.SERVER and s.attributes["url.path"].endswith(":predict")
    }
    batches = sorted(
        (s for s in finished if s.name == "batch"),
        key=lambda s: s.attributes["flowserve.batch_size"],
    )
    assert len(servers) == 2 and [s.attributes["flowserve.batch_size"] for s in batches] == [1, 2]
    assert len([s for s in finished if s.name == "queue_wait"]) == 2
    # Each batch links only the sampled requests it carries: the batch of two carries one.
    linked = [[link.context.span_id for link in b.links] for b in batches]
    assert all(len(ids) == 1 for ids in linked) and {ids[0] for ids in linked} == servers
    runs = [s for s in finished if s.name == "session_run"]
    assert {r.parent.span_id for r in runs} == {b.context.span_id for b in batches}
