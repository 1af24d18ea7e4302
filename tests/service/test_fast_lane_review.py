"""An adversarial review of the fast lane (issue 13): raw-socket cases where the lane and
aiohttp's own path (``--no-fast-lane``) must behave the same. Each test here was first a
strict xfail (a finding); the lane now behaves as aiohttp in all of them.

aiohttp internals the lane relies on (3.14.5; * marks the version-fragile ones):
RequestHandler's ``_waiter`` (*overridden as a property: the lane learns aiohttp is idle
when start() assigns it), ``_messages``, ``_request_count``, ``_force_close``, ``_close``,
``_keepalive_handle``, ``_next_keepalive_close_time`` (*), ``_keepalive_timeout``,
``_process_keepalive`` (*, overridden), ``_request_in_progress`` and ``_handler_waiter``
(*, shutdown's handshake), ``_lingering_time``, ``_logging_enabled``, ``_manager``
(``connections``, ``requests_count``, ``handler_cancellation``); BaseProtocol's
``_buffer_paused``, ``_pause_reading_for_buffer``, ``_resume_reading_for_buffer`` (*, new
in 3.14, shared with aiohttp's ``_resume_reading_if_drained``, which calls the overridden
``data_received(b"")``), ``_drain_helper``, ``writing_paused``; ``web_server.Server._kwargs``
and ``AppRunner._make_server`` (the ``__class__`` swap); ``http_writer._serialize_headers``
(*), ``helpers.rfc822_formatted_time``, ``StreamResponse._cookies``,
``RawRequestMessage``'s ten positional fields (*), ``web.Request``'s constructor and
``_match_info`` (*), ``StreamWriter(protocol, loop)``, ``UrlDispatcher.resolve`` given a
duck-typed request, ``match_info.add_app``/``freeze``; asyncio's
``asyncio.tasks._enter_task``/``_leave_task`` (*, start_eagerly on Python 3.11 only),
``StreamResponse._body_length`` (the access log's ``%b``)."""

import asyncio
import contextlib
import json
import logging
import time

import pytest
from aiohttp import web

from service.app import create_app
from service.cli import AccessLogger
from service.http import HardenedRunner
from tests.service.test_fast_lane import (
    ROWS,
    V1,
    V2,
    V2_BODY,
    exchange,
    get,
    post,
    read_response,
    serving,
    untraced,  # noqa: F401 - an autouse fixture: these servers are untraced
)


def server(make_config, lane: bool, header_timeout: float = 30, app_hook=None, **settings):
    """test_fast_lane's server (as the CLI builds it) on a free loopback port."""
    return serving(make_config, lane, app_hook, header_timeout=header_timeout, **settings)


async def converse(port: int, *pieces: bytes, wait: float = 3.0, pause: float = 0.05):
    """Sends ``pieces`` on one connection, then reads what comes back for up to ``wait``
    seconds: (the answers' statuses in order, whether the server closed, seconds to the
    last event)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    statuses = []
    closed = False
    try:
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(pause)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                while True:
                    if await reader.read(0) == b"" and reader.at_eof():
                        closed = True
                        break
                    try:
                        status, _, _ = await read_response(reader)
                    except asyncio.IncompleteReadError:
                        closed = True
                        break
                    statuses.append(status)
        return statuses, closed, round(time.monotonic() - started)
    finally:
        writer.close()


async def both_converse(make_config, *pieces, settings=None, app_hook=None, **kw):
    settings = dict(settings or {})
    header_timeout = settings.pop("header_timeout", 30)
    out = {}
    for lane in (True, False):
        async with server(make_config, lane, header_timeout, app_hook, **settings) as (port, _):
            out[lane] = await converse(port, *pieces, **kw)
    return out


TLS_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(40)


async def test_bytes_that_cannot_start_a_request_get_aiohttps_400_at_once(make_config):
    # A TLS client (or a scanner) on the plain HTTP port: no CRLF CRLF ever comes.
    out = await both_converse(make_config, TLS_HELLO, settings={"header_timeout": 3}, wait=5)
    assert out[False][:2] == ([400], True) and out[False][2] < 3
    assert out[True][:2] == out[False][:2] and out[True][2] < 3


async def test_a_body_longer_than_its_length_as_aiohttp(make_config):
    out = await both_converse(
        make_config,
        post(V1, ROWS),
        b"garbage",
        settings={"header_timeout": 3},
        wait=5,
        pause=0.3,
    )
    assert out[False][:2] == ([200, 400], True) and out[False][2] < 3
    assert out[True][:2] == out[False][:2] and out[True][2] < 3


async def test_a_partial_head_pipelined_behind_a_lane_request_as_aiohttp(make_config):
    partial = f"POST {V1} HTTP/1.1\r\nHost: x\r\n".encode()
    settings = {"header_timeout": 1, "idle_timeout": 3}
    out = await both_converse(make_config, post(V1, ROWS) + partial, settings=settings, wait=5)
    assert out[False][:2] == ([200], True) and out[False][2] >= 2
    assert out[True] == out[False]


def replace_predict(handler):
    """An app hook: ``handler`` serves the v1 predict route (in the lane and in aiohttp)."""

    def hook(app):
        for resource in app.router.resources():
            for route in resource:
                if route.method == "POST" and resource.canonical.startswith("/v1/models/"):
                    route._handler = handler

    return hook


async def cancelled_after_a_wait(_request):
    # A model run's future cancelled by someone else (an executor shut down with
    # cancel_futures, a batch torn down): CancelledError passes `except Exception`.
    await asyncio.sleep(0.01)
    raise asyncio.CancelledError()


async def cancelled_at_once(_request):
    raise asyncio.CancelledError()


async def test_a_handler_cancelled_from_within_closes_the_connection_as_aiohttp(make_config):
    out = await both_converse(
        make_config,
        post(V1, ROWS),
        post(V2, V2_BODY),
        settings={"idle_timeout": 3},
        app_hook=replace_predict(cancelled_after_a_wait),
        pause=0.3,
        wait=4,
    )
    assert out[False][:2] == ([], True) and out[False][2] < 3
    assert out[True] == out[False]


async def test_a_handler_cancelled_at_once_closes_the_connection_as_aiohttp(make_config, caplog):
    out = {}
    for lane in (True, False):
        hook = replace_predict(cancelled_at_once)
        async with server(make_config, lane, app_hook=hook) as (port, _):
            first = await converse(port, post(V1, ROWS), wait=2)  # the path is routed
            second = await converse(port, post(V1, ROWS), wait=2)  # from the route cache
            out[lane] = (first[:2], second[:2])
    assert out[False] == (([], True), ([], True))
    fatal = [r for r in caplog.records if "data_received() call failed" in r.getMessage()]
    assert out[True] == out[False] and fatal == []


async def test_paths_of_unknown_models_do_not_pin_memory(make_config):
    async with server(make_config, True) as (port, runner):
        names = [f"m{i:04d}" + "x" * 7000 for i in range(150)]
        pieces = [post(f"/v1/models/{name}:predict", ROWS) for name in names]
        answers, _ = await exchange(port, *pieces, responses=len(pieces))
        assert {status for status, _, _ in answers} == {404}
        held = sum(len(path) for path in runner.server.lane._routes)
        assert held < 256 << 10, f"{held} bytes of client paths held by the route cache"


async def timed_at_once(request):
    # Code that needs a current task, in the handler's first step (no wait before it).
    async with asyncio.timeout(5):
        task = asyncio.current_task()
    served_by = "lane" if type(request).__name__ == "LaneRequest" else "aiohttp"
    return web.json_response({"task": task is not None, "by": served_by})


async def test_a_handler_needing_a_current_task_in_its_first_step_as_aiohttp(make_config):
    out = {}
    hook = replace_predict(timed_at_once)
    for lane in (True, False):
        async with server(make_config, lane, app_hook=hook) as (port, runner):
            # The second, from the route cache, starts within the read that brings it.
            pieces = (post(V1, ROWS), post(V1, ROWS))
            answers, _ = await exchange(port, *pieces, responses=2, pause=0.2)
            out[lane] = [(status, json.loads(body)) for status, _, body in answers]
            if lane:
                assert runner.server.lane.served == 2
    assert out[True] == [(200, {"task": True, "by": "lane"})] * 2
    assert out[False] == [(200, {"task": True, "by": "aiohttp"})] * 2


HEAD_ONLY = f"POST {V1} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(ROWS)}\r\n\r\n".encode()
# Cases checked and found to behave as aiohttp: (pieces, settings).
SAME = {
    "body in pieces, next head pipelined behind it": (
        [HEAD_ONLY + ROWS[:7], ROWS[7:] + post(V2, V2_BODY)[:25], post(V2, V2_BODY)[25:]],
        {},
    ),
    "head split at its blank line": ([HEAD_ONLY[:-1], HEAD_ONLY[-1:] + ROWS], {}),
    "hot, handed one, handed over, hot": (
        [
            post(V1, ROWS)
            + get("/metrics")
            + post(V1, ROWS).replace(b"HTTP/1.1", b"HTTP/1.0", 1)[:-1],
            post(V1, ROWS)[-1:] + post(V1, ROWS),
        ],
        {},
    ),
    "GET with a body, then hot": (
        [b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + post(V1, ROWS)],
        {},
    ),
    "CONNECT with a body, then hot": (
        [b"CONNECT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nXXXX" + post(V1, ROWS)],
        {},
    ),
    "CONNECT, then hot": ([b"CONNECT x:80 HTTP/1.1\r\nHost: x\r\n\r\n" + post(V1, ROWS)], {}),
    "OPTIONS *, then hot": ([b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" + post(V1, ROWS)], {}),
    "unknown method, then hot": ([b"FOO /x HTTP/1.1\r\nHost: x\r\n\r\n" + post(V1, ROWS)], {}),
    "CRLF between requests": ([post(V1, ROWS) + b"\r\n" + post(V1, ROWS)], {}),
    "length with leading zeros": ([post(V1, ROWS).replace(b"Length: 30", b"Length: 00030")], {}),
    "fragment": ([post(V1 + "#f", ROWS)], {}),
    "empty Host": ([post(V1, ROWS).replace(b"Host: x", b"Host:")], {}),
    "body of the limit": (
        [post(V1, b'{"instances": [1.0]}' + b" " * (1024 - 20))],
        {"max_request_bytes": 1024},
    ),
    "body one over the limit, then hot": (
        [post(V1, b'{"instances": [1.0]}' + b" " * (1025 - 20)), post(V1, ROWS)],
        {"max_request_bytes": 1024},
    ),
    "body shorter than its length": ([post(V1, ROWS)[:-3]], {}),
    "a head in pieces past header_timeout": (
        [HEAD_ONLY[:20], HEAD_ONLY[20:40]],
        {"header_timeout": 1, "idle_timeout": 3},
    ),
    "98 headers": ([post(V1, ROWS, *[f"X-{i}: {i}" for i in range(96)])], {}),
    "99 headers": ([post(V1, ROWS, *[f"X-{i}: {i}" for i in range(97)])], {}),
    "130 headers": ([post(V1, ROWS, *[f"X-{i}: {i}" for i in range(128)])], {}),
    "no Host": ([post(V1, ROWS).replace(b"Host: x\r\n", b"")], {}),
    "double slash": ([post("/v1/models//half_plus_two:predict", ROWS)], {}),
    "model name with ~ and -": ([post("/v1/models/a~b-c:predict", ROWS)], {}),
}


@pytest.mark.parametrize("name", list(SAME))
async def test_checked_cases_behave_as_aiohttp(make_config, name):
    pieces, settings = SAME[name]
    out = await both_converse(make_config, *pieces, settings=settings, wait=1.5, pause=0.1)
    assert out[True] == out[False]


async def test_pipelined_requests_are_not_copied_once_per_request(make_config, monkeypatch):
    from service import http

    copied = [0]

    def held(self):
        return self.__dict__.get("_review_buffer", b"")

    def hold(self, value):
        copied[0] += len(value)
        self.__dict__["_review_buffer"] = value

    monkeypatch.setattr(http._Connection, "_lane_buffer", property(held, hold))
    async with server(make_config, True) as (port, runner):
        pieces = [post(V1, ROWS)] * 3000
        sent = sum(map(len, pieces))
        answers, _ = await exchange(port, b"".join(pieces), responses=len(pieces))
        assert {status for status, _, _ in answers} == {200}
        assert runner.server.lane.served == len(pieces)
    assert copied[0] < 4 * sent, f"{copied[0]} bytes copied for {sent} received"


async def test_pipelined_requests_handed_to_aiohttp_keep_the_lanes_buffer_bounded(make_config):
    async with server(make_config, True) as (port, runner):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def drain_answers():
            while await reader.read(1 << 16):
                pass

        draining = asyncio.create_task(drain_answers())
        most = 0
        try:
            writer.write(get("/v2/health/live") * 80_000)  # 3.4 MB
            for _ in range(200):
                await asyncio.sleep(0.01)
                held = [len(c._lane_buffer) for c in runner.server._connections]
                most = max([most, *held])
        finally:
            draining.cancel()
            writer.close()
    assert most <= (1 << 20) + (256 << 10), f"{most} bytes held by the lane"


async def test_the_default_access_log_line_as_aiohttp(make_config, caplog):
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    lines = {}
    for lane in (True, False):
        caplog.clear()
        async with server(make_config, lane) as (port, _):
            await exchange(port, post(V1, ROWS, "User-Agent: review"))
        lines[lane] = [
            (r.levelname, r.getMessage().split("] ", 1)[-1].rsplit(" ", 1)[0])
            for r in caplog.records
            if r.name == "aiohttp.access"
        ]
    assert len(lines[False]) == 1 and '"POST /v1/' in lines[False][0][1]
    assert lines[True] == lines[False]


async def failing_prepare_hook(request, _response):
    if request.path.startswith("/v1/"):
        raise RuntimeError("hook failed")


async def test_no_access_line_for_an_answer_never_sent(make_config, caplog):
    caplog.set_level(logging.INFO, logger="flowserve.access")
    seen = {}
    for lane in (True, False):
        caplog.clear()
        app = create_app(make_config(fast_lane=lane))
        app.on_response_prepare.append(failing_prepare_hook)
        runner = HardenedRunner(
            app,
            max_connections=10,
            access_log_class=AccessLogger,
            access_log=logging.getLogger("flowserve.access"),
        )
        await runner.setup()
        assert (runner.server.lane is not None) == lane  # else aiohttp against itself
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            answers = await converse(site._server.sockets[0].getsockname()[1], post(V1, ROWS))
        finally:
            await runner.cleanup()
        names = [r.name for r in caplog.records if r.name in ("flowserve.access", "aiohttp.server")]
        seen[lane] = (answers[:2], names)
    assert seen[False] == (([], True), ["aiohttp.server"])
    assert seen[True] == seen[False]
