"""OpenTelemetry: W3C traceparent propagation and the spans of a request (parse, queue wait,
batch, session run, encode) with their attributes, recorded by the SDK's in-memory
exporter."""

import asyncio

import pytest

from service import tracing
from service.app import create_app
from tests.service import models
from tests.service.conftest import manager_config

sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def exporter():
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, sdk.TracerProvider):
        provider = sdk.TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def spans(exporter):
    exporter.clear()

    def get():
        return {s.name: s for s in exporter.get_finished_spans()}, exporter.get_finished_spans()

    return get


async def test_traceparent_is_continued_and_phases_are_children(aiohttp_client, make_config, spans):
    client = await aiohttp_client(create_app(make_config()))
    resp = await client.post(
        "/v2/models/half_plus_two/infer",
        json={"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 5]}]},
        headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "X-Request-ID": "t-1"},
    )
    assert resp.status == 200
    by_name, _ = spans()
    server = by_name["POST /v2/models/{model}/infer"]
    assert format(server.context.trace_id, "032x") == TRACE_ID
    assert format(server.parent.span_id, "016x") == PARENT_ID
    assert server.kind == trace.SpanKind.SERVER
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["flowserve.model"] == "half_plus_two"
    assert server.attributes["flowserve.request_id"] == "t-1"
    for name in ("parse", "session_run", "encode"):
        child = by_name[name]
        assert child.context.trace_id == server.context.trace_id, name
        assert child.parent.span_id == server.context.span_id, name
    run = by_name["session_run"]
    assert run.attributes["flowserve.model"] == "half_plus_two"
    assert run.attributes["flowserve.version"] == "2"
    assert run.attributes["flowserve.batch_size"] == 3
    assert (
        by_name["parse"].end_time <= run.start_time <= run.end_time <= by_name["encode"].start_time
    )


async def test_a_batch_links_the_requests_it_carries(aiohttp_client, tmp_path, spans):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(
        tmp_path / "hpt",
        {"batching": {"enabled": True, "max_batch_size": 2, "batch_timeout_micros": 5_000_000}},
    )
    client = await aiohttp_client(create_app(manager_config(tmp_path)))

    async def predict(i):
        trace_id = f"{i + 1:032x}"
        resp = await client.post(
            "/v1/models/hpt:predict",
            json={"instances": [float(i)]},
            headers={"traceparent": f"00-{trace_id}-{PARENT_ID}-01"},
        )
        assert resp.status == 200

    await asyncio.gather(predict(0), predict(1))
    _, finished = spans()
    servers = [s for s in finished if s.kind == trace.SpanKind.SERVER]
    waits = [s for s in finished if s.name == "queue_wait"]
    (batch,) = [s for s in finished if s.name == "batch"]
    (run,) = [s for s in finished if s.name == "session_run"]
    assert len(servers) == 2 and len(waits) == 2
    assert {w.parent.span_id for w in waits} == {s.context.span_id for s in servers}
    assert {link.context.span_id for link in batch.links} == {s.context.span_id for s in servers}
    assert batch.attributes["flowserve.batch_size"] == 2
    assert batch.attributes["flowserve.requests"] == 2
    assert (
        run.parent.span_id == batch.context.span_id and run.attributes["flowserve.batch_size"] == 2
    )
    for w in waits:
        assert w.end_time <= run.start_time


def test_configure_follows_the_otel_environment():
    assert tracing.configure({}) is None
    assert tracing.configure({"OTEL_TRACES_EXPORTER": "none"}) is None
    assert (
        tracing.configure({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}) is None
    )
    assert tracing.configure({"OTEL_TRACES_EXPORTER": "zipkin-v9"}) is None


async def test_the_server_exports_spans_over_otlp(tmp_path, aiohttp_server):
    """The real ``flowserve`` process, configured only by OTEL_* variables, sends its spans
    to an OTLP/HTTP endpoint (a stand-in collector here)."""
    pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        reason="the otlp exporter (otel extra) is not installed",
    )
    import os
    import socket
    import subprocess
    import sys

    import aiohttp
    from aiohttp import web

    received = []

    async def collect(request):
        received.append(await request.read())
        return web.Response(status=200, content_type="application/x-protobuf")

    collector = web.Application()
    collector.router.add_post("/v1/traces", collect)
    server = await aiohttp_server(collector)
    models.half_plus_two(tmp_path / "hpt" / "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.port}",
        "OTEL_SERVICE_NAME": "flowserve-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    script = os.path.join(os.path.dirname(sys.executable), "flowserve")
    proc = subprocess.Popen(
        [
            script,
            "--model-repository",
            str(tmp_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--grpc-port",
            "0",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as session:
            base = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    async with session.get(base + "/v2/health/ready") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            headers = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
            body = {"instances": [1.0]}
            async with session.post(
                base + "/v1/models/hpt:predict", json=body, headers=headers
            ) as r:
                assert r.status == 200
            for _ in range(100):
                if any(b"session_run" in b for b in received):
                    break
                await asyncio.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(30)
    payload = b"".join(received)
    for name in (b"parse", b"session_run", b"encode", b"flowserve-test"):
        assert name in payload, name
    assert bytes.fromhex(TRACE_ID) in payload  # the caller's trace continued
