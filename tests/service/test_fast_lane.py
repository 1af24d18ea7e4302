"""The fast lane answers exactly as aiohttp's path does: the same raw requests sent to a
server with the lane and to one without give the same status, headers (but Date, and a
generated request ID) and body, for successes and every error; the lane's connection
handling (pipelining, split bodies, keep-alive and close, handing odd requests to aiohttp,
timers, shutdown) behaves as aiohttp's; metrics count each request once. Real runners on
loopback, ordering-based (no timing thresholds)."""

import asyncio
import contextlib
import gzip
import json
import logging
import re

import pytest
from aiohttp import web

from service import http, tracing
from service.app import create_app, in_flight_requests
from service.cli import AccessLogger
from service.fastlane import SERVING
from service.http import HardenedRunner
from service.keys import MANAGER, METRICS
from service.workers import add_worker_header

V1 = "/v1/models/half_plus_two:predict"
V2 = "/v2/models/half_plus_two/infer"
ROWS = b'{"instances": [1.0, 2.0, 5.0]}'
V2_BODY = b'{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","data":[1,2,3]}]}'


def post(path: str, body: bytes, *headers: str, length: int | None = None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: x", *headers]
    lines.append(f"Content-Length: {len(body) if length is None else length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def get(path: str, *headers: str) -> bytes:
    return ("\r\n".join([f"GET {path} HTTP/1.1", "Host: x", *headers]) + "\r\n\r\n").encode()


@pytest.fixture(autouse=True)
def untraced(monkeypatch):
    """These servers are untraced (tracing turns the lane off): a tracer provider set by an
    earlier test stays set."""
    monkeypatch.setattr(tracing, "active", lambda refresh=False: False)


@contextlib.asynccontextmanager
async def serving(
    make_config,
    lane: bool,
    app_hook=None,
    access_log=None,
    cancel=False,
    header_timeout: float = 30,
    expect_lane: bool | None = None,
    **settings,
):
    """A HardenedRunner (the CLI's) on a free loopback port: (port, runner). ``cancel``:
    a client that disconnects cancels its request (the CLI's handler_cancellation).
    The runner has a lane exactly when ``lane`` (or ``expect_lane``) says: a lane turned
    off (tracing, an untested aiohttp) would compare aiohttp's answers with themselves."""
    app = create_app(make_config(fast_lane=lane, **settings))
    if app_hook is not None:
        app_hook(app)
    kwargs = {"access_log_class": AccessLogger, "access_log": access_log} if access_log else {}
    kwargs["handler_cancellation"] = cancel
    runner = HardenedRunner(app, max_connections=100, header_timeout=header_timeout, **kwargs)
    await runner.setup()
    expected = lane if expect_lane is None else expect_lane
    assert (runner.server.lane is not None) == expected, f"the lane is {runner.server.lane}"
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1], runner
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def both(make_config, **settings):
    """Two servers of the same settings, with the lane and without: {True: (port, the
    lane), False: (port, None)}."""
    async with serving(make_config, True, **settings) as (port_on, on):
        async with serving(make_config, False, **settings) as (port_off, off):
            yield {True: (port_on, on.server.lane), False: (port_off, None)}


async def read_response(reader) -> tuple[int, list, bytes]:
    """(status, headers in order without Date, body) of one response."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    lines = head[:-4].split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = [tuple(line.split(": ", 1)) for line in lines[1:]]
    values = {k.lower(): v for k, v in headers}
    if values.get("transfer-encoding") == "chunked":
        body = b""
        while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readuntil(b"\r\n")
    else:
        body = await reader.readexactly(int(values.get("content-length", 0)))
    return status, [(k, v) for k, v in headers if k != "Date"], body


async def exchange(port: int, *pieces: bytes, responses: int = 1, pause: float = 0.0):
    """Sends ``pieces`` (``pause`` seconds apart) on one connection; ``responses`` answers,
    and whether the server then closed the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
        async with asyncio.timeout(30):
            answers = [await read_response(reader) for _ in range(responses)]
            try:
                closed = await asyncio.wait_for(reader.read(1), 0.2) == b""
            except TimeoutError:
                closed = False
        return answers, closed
    finally:
        writer.close()


def _masked(answers, sent_id: bool):
    """Generated request IDs differ from run to run: compare their shape only."""
    if sent_id:
        return answers
    out = []
    for status, headers, body in answers:
        headers = [(k, "<id>" if k == "X-Request-ID" and len(v) == 32 else v) for k, v in headers]
        out.append((status, headers, body))
    return out


async def same_answers(servers, *pieces: bytes, responses: int = 1, pause: float = 0.0):
    """The answers of both servers to ``pieces``, checked equal; the lane's."""
    results = {}
    for lane, (port, _) in servers.items():
        answers, closed = await exchange(port, *pieces, responses=responses, pause=pause)
        sent_id = b"X-Request-ID" in b"".join(pieces)
        results[lane] = (_masked(answers, sent_id), closed)
    assert results[True] == results[False]
    return results[True]


def served(servers) -> int:
    return servers[True][1].served


RID = "X-Request-ID: fixed-id-1"
PARITY = {
    "v1 rows": post(V1, ROWS, RID),
    "v1 columns": post(V1, b'{"inputs": [1.5, 2.5]}', RID, "Content-Type: application/json"),
    "v1 version": post("/v1/models/half_plus_two/versions/2:predict", ROWS, RID),
    "v1 label": post("/v1/models/half_plus_two/labels/canary:predict", ROWS, RID),
    "v1 unknown label": post("/v1/models/half_plus_two/labels/nope:predict", ROWS, RID),
    "v1 unknown model": post("/v1/models/nope:predict", ROWS, RID),
    "v1 unknown version": post("/v1/models/half_plus_two/versions/9:predict", ROWS, RID),
    "v1 bad version": post("/v1/models/half_plus_two/versions/x1:predict", ROWS, RID),
    "v1 bad json": post(V1, b'{"instances": [1.0,', RID),
    "v1 not an object": post(V1, b"[1, 2]", RID),
    "v1 empty body": post(V1, b"", RID),
    "v1 unknown field": post(V1, b'{"instances": [1.0], "x": 1}', RID),
    "v1 wrong dtype": post(V1, b'{"instances": ["a", "b"]}', RID),
    "v1 wrong shape": post("/v1/models/multi_io:predict", b'{"instances": [[1.0]]}', RID),
    "v1 bools": post(V1, b'{"instances": [true, false]}', RID),
    "v1 nan": post(V1, b'{"instances": [NaN, 1.0]}', RID),
    "v1 bad timeout": post(V1, ROWS, RID, "Request-Timeout: soon"),
    "v1 no request id": post(V1, ROWS),
    "v1 msgpack answer": post(V1, ROWS, RID, "Accept: application/msgpack"),
    "v1 json charset": post(V1, ROWS, RID, "Content-Type: application/json; charset=utf-8"),
    "v1 keep-alive header": post(V1, ROWS, RID, "Connection: keep-alive"),
    "v1 identity encoding": post(V1, ROWS, RID, "Content-Encoding: identity"),
    "v1 classify": post("/v1/models/half_plus_two:classify", b'{"examples": []}', RID),
    "v2": post(V2, V2_BODY, RID),
    "v2 body id": post(V2, V2_BODY[:-1] + b',"id":"from-body"}'),
    "v2 body id and header": post(V2, V2_BODY[:-1] + b',"id":"from-body"}', RID),
    "v2 version": post("/v2/models/half_plus_two/versions/1/infer", V2_BODY, RID),
    "v2 unknown model": post("/v2/models/nope/infer", V2_BODY, RID),
    "v2 unknown version": post("/v2/models/half_plus_two/versions/7/infer", V2_BODY, RID),
    "v2 bad datatype": post(V2, V2_BODY.replace(b"FP32", b"FP99"), RID),
    "v2 bad shape": post(V2, V2_BODY.replace(b"[3]", b"[4]"), RID),
    "v2 no inputs": post(V2, b"{}", RID),
    "v2 binary output": post(
        V2,
        V2_BODY[:-1] + b',"parameters":{"binary_data_output":true}}',
        RID,
    ),
    "v2 gzip answer": post(
        V2,
        json.dumps(
            {"inputs": [{"name": "x", "shape": [600], "datatype": "FP32", "data": [1.0] * 600}]}
        ).encode(),
        RID,
        "Accept-Encoding: gzip, deflate",
    ),
    "v2 msgpack answer": post(V2, V2_BODY, RID, "Accept: application/msgpack"),
    "v2 GET infer": get(V2, RID),
    "v2 stats path": post("/v2/models/stats/infer", V2_BODY, RID),
    "unrouted": post("/v1/elsewhere:predict", ROWS, RID),
}


@pytest.mark.parametrize("name", list(PARITY))
async def test_the_lane_answers_as_aiohttp(make_config, name):
    async with both(make_config) as servers:
        [(status, headers, body)], closed = await same_answers(servers, PARITY[name])
        assert status in (200, 400, 404, 405, 503) and not closed
        assert dict(headers)["Server"].startswith("Python/")
    if name.startswith(("v1 ", "v2")) and name not in ("v2 GET infer", "v1 classify"):
        assert served(servers) == 1, "the lane served it"


async def test_the_lane_answers_known_values(make_config):
    async with serving(make_config, True) as (port, runner):
        [(status, headers, body)], _ = await exchange(port, post(V1, ROWS, RID))
        assert status == 200 and json.loads(body) == {"predictions": [3.5, 4.0, 5.5]}
        assert ("X-Request-ID", "fixed-id-1") in headers
        assert ("Content-Length", str(len(body))) in headers
        [(status, headers, body)], _ = await exchange(port, post(V2, V2_BODY[:-1] + b',"id":"q"}'))
        assert status == 200 and json.loads(body)["outputs"][0]["data"] == [3.5, 4.0, 4.5]
        assert ("X-Request-ID", "q") in headers  # adopted from the body
        assert runner.server.lane.served == 2


@pytest.mark.parametrize(
    "request_bytes",
    [
        post(V1, ROWS, "Authorization: Bearer s3cret"),
        post(V1, ROWS, "Authorization: Bearer wrong"),
        post(V1, ROWS),
        post(V2, V2_BODY, RID, "authorization: bearer s3cret"),
        post(V2, V2_BODY, RID, "Cookie: fs_token=s3cret"),
    ],
)
async def test_bearer_tokens_as_aiohttp(make_config, request_bytes):
    async with both(make_config, auth_token="s3cret") as servers:
        [(status, headers, _)], _ = await same_answers(servers, request_bytes)
        assert status in (200, 401)
        if status == 401:
            assert ("WWW-Authenticate", "Bearer") in headers


async def test_oversized_bodies_are_aiohttps_413(make_config):
    async with both(make_config, max_request_bytes=1024) as servers:
        big = post(V1, b'{"instances": [' + b"1.0," * 300 + b"1.0]}")
        [(status, headers, _)], closed = await same_answers(servers, big)
        assert status == 413 and closed
        # Declared small, decompressing beyond the limit: read_body's 413.
        bomb = gzip.compress(b'{"instances": [' + b"1.0," * 2000 + b"1.0]}")
        answers = await same_answers(servers, post(V1, bomb, "Content-Encoding: gzip"))
        assert answers[0][0][0] == 413
    assert served(servers) == 0


async def test_compressed_and_chunked_bodies_go_to_aiohttp(make_config):
    async with both(make_config) as servers:
        zipped = post(V1, gzip.compress(ROWS), RID, "Content-Encoding: gzip")
        [(status, _, body)], _ = await same_answers(servers, zipped)
        assert status == 200 and json.loads(body) == {"predictions": [3.5, 4.0, 5.5]}
        chunked = (
            f"POST {V1} HTTP/1.1\r\nHost: x\r\n{RID}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode() + b"%x\r\n%s\r\n0\r\n\r\n" % (len(ROWS), ROWS)
        # Handed to aiohttp for good: a lane request after it on the same connection too.
        [(s1, _, b1), (s2, _, b2)], _ = await same_answers(
            servers, chunked, post(V1, ROWS, RID), responses=2
        )
        assert (s1, s2) == (200, 200) and b1 == b2
    assert served(servers) == 0


async def test_pipelined_requests_are_answered_in_order(make_config):
    async with both(make_config) as servers:
        three = post(V1, ROWS, RID) + get("/v2/health/live", RID) + post(V2, V2_BODY, RID)
        answers, closed = await same_answers(servers, three, responses=3)
        assert [a[0] for a in answers] == [200, 200, 200] and not closed
        assert json.loads(answers[1][2]) == {"live": True}
        assert json.loads(answers[2][2])["model_name"] == "half_plus_two"
        # ... and back and forth on one connection, over separate writes.
        pieces = [post(V1, ROWS, RID), get("/metrics"), post(V1, ROWS, RID), post(V2, V2_BODY)]
        answers, _ = await exchange(servers[True][0], *pieces, responses=4, pause=0.05)
        assert [a[0] for a in answers] == [200, 200, 200, 200]
        assert answers[0][2] == answers[2][2]
    assert served(servers) == 2 + 3


async def test_a_body_in_one_byte_pieces(make_config):
    async with both(make_config) as servers:
        whole = post(V1, ROWS, RID) + post(V2, V2_BODY, RID)
        pieces = [whole[i : i + 1] for i in range(len(whole))]
        answers, _ = await same_answers(servers, *pieces, responses=2)
        assert [a[0] for a in answers] == [200, 200]
    assert served(servers) == 2


async def test_connection_close_and_http_1_0(make_config):
    async with both(make_config) as servers:
        [(status, headers, _)], closed = await same_answers(
            servers, post(V1, ROWS, RID, "Connection: close")
        )
        assert status == 200 and ("Connection", "close") in headers and closed
        old = post(V1, ROWS, RID).replace(b"HTTP/1.1", b"HTTP/1.0", 1)
        [(status, _, _)], closed = await same_answers(servers, old)
        assert status == 200 and closed
        # aiohttp's parser refuses a request pipelined after one that closes: so does the lane
        answers, closed = await same_answers(
            servers, post(V1, ROWS, RID, "Connection: close") + post(V1, ROWS), responses=1
        )
        assert answers[0][0] == 400 and closed
        # A declared body over the limit: 413, what follows is read as that body.
        answers, _ = await same_answers(
            servers, post(V1, ROWS, RID, length=1 << 30) + post(V1, ROWS), responses=1
        )
        assert answers[0][0] == 413
    assert served(servers) == 0


HOSTILE = {
    "two lengths": post(V1, ROWS, f"Content-Length: {len(ROWS)}"),
    "two different lengths": post(V1, ROWS, "Content-Length: 3"),
    "length and chunked": post(V1, ROWS, "Transfer-Encoding: chunked"),
    "signed length": post(V1, ROWS, length=None).replace(b"Length: ", b"Length: +"),
    "hex length": post(V1, ROWS).replace(b"Length: 30", b"Length: 0x1e"),
    "spaced length": post(V1, ROWS).replace(b"Length: 30", b"Length: 3 0"),
    "obs-fold": post(V1, ROWS, "X-A: 1", " folded"),
    "bare LF": post(V1, ROWS).replace(b"Host: x\r\n", b"Host: x\n"),
    "NUL in a value": post(V1, ROWS, "X-A: a\x00b"),
    "space before colon": post(V1, ROWS, "X-A : 1"),
    "no colon": post(V1, ROWS, "X-A"),
    "huge head": post(V1, ROWS, "X-A: " + "a" * 9000),
    "utf-8 value": post(V1, ROWS, "X-A: caf\u00e9"),
    "expect": post(V1, ROWS, "Expect: 100-continue"),
    "upgrade": post(V1, ROWS, "Connection: upgrade", "Upgrade: websocket"),
    "connection list": post(V1, ROWS, "Connection: keep-alive, x"),
    "lowercase method": post(V1, ROWS).replace(b"POST", b"post", 1),
    "absolute target": post(V1, ROWS).replace(b"POST /", b"POST http://x/", 1),
    "percent path": post("/v1/models/half%5Fplus_two:predict", ROWS),
    "dot segment": post("/v1/models/../models/half_plus_two:predict", ROWS),
    "query": post(V1 + "?a=1", ROWS),
    "HTTP/2 line": post(V1, ROWS).replace(b"HTTP/1.1", b"HTTP/2.0", 1),
}


@pytest.mark.parametrize("name", list(HOSTILE))
async def test_odd_and_hostile_heads_get_aiohttps_answers(make_config, name):
    async with both(make_config) as servers:
        results = {}
        for lane, (port, _) in servers.items():
            results[lane] = await _everything(port, HOSTILE[name])
        assert results[False].startswith(b"HTTP/")  # an answer, not a close
        assert _no_ids(results[True]) == _no_ids(results[False])
    assert served(servers) == 0


async def _everything(port: int, data: bytes) -> bytes:
    """The raw bytes of the first final answer to ``data`` (a 100 Continue before it
    included), or what came before the server closed. The connection is not half-closed
    first: aiohttp drops an answer whose handler finishes after the client's EOF, which made
    every case compare an empty answer with an empty answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    raw = b""
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(30):
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError as closed:
                    return raw + closed.partial
                raw += head
                status = int(head.split(b" ", 2)[1])
                if status == 100:
                    continue
                length = re.search(rb"(?im)^content-length: *(\d+)\r$", head)
                assert length, head  # aiohttp's answers here all declare their length
                return raw + await reader.readexactly(int(length.group(1)))
    finally:
        writer.close()


def _no_ids(raw: bytes) -> list:
    lines = raw.split(b"\r\n")
    return [
        line
        for line in lines
        if not line.startswith(b"Date: ")
        and not (line.startswith(b"X-Request-ID: ") and len(line) == 14 + 32)
    ]


async def _wait_for(predicate) -> None:
    async with asyncio.timeout(30):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_the_in_flight_budget_and_body_timeout_as_aiohttp(make_config):
    """A request whose body is still arriving holds the budget (1 request): the next gets
    aiohttp's 503; the held one times out with the same 408 (body_timeout)."""
    settings = {"max_inflight_requests": 1, "body_timeout": 0.5}
    results = {}
    for lane in (True, False):
        async with serving(make_config, lane, **settings) as (port, runner):
            app = runner.app
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(post(V1, ROWS, RID)[:-5])  # the body's last bytes never come
            await _wait_for(lambda app=app: in_flight_requests(app) == 1)
            shed, _ = await exchange(port, post(V1, ROWS, RID))
            async with asyncio.timeout(30):
                timed_out = await read_response(reader)
            writer.close()
            results[lane] = (shed, timed_out)
            if lane:
                assert runner.server.lane.served == 2
    assert results[True] == results[False]
    (shed, timed_out) = results[True]
    assert shed[0][0] == 503 and ("Retry-After", "1") in shed[0][1]
    assert timed_out[0] == 408 and "body_timeout" in json.loads(timed_out[2])["error"]


async def test_a_request_in_progress_is_not_cut_by_the_idle_timer(make_config):
    async with both(make_config, idle_timeout=0.3) as servers:
        post_bytes = post(V1, ROWS, RID)
        # The body comes after more than the idle timeout: the request is served ...
        answers, closed = await same_answers(servers, post_bytes[:-5], post_bytes[-5:], pause=1)
        assert answers[0][0] == 200
        # ... and idle after its answer, the connection is closed by the idle timer.
        reader, writer = await asyncio.open_connection("127.0.0.1", servers[True][0])
        writer.write(post_bytes)
        async with asyncio.timeout(30):
            assert (await read_response(reader))[0] == 200
            assert await reader.read() == b""
        writer.close()
    assert served(servers) == 2


async def test_metrics_and_statistics_count_each_lane_request_once(make_config):
    counts = {}
    for lane in (True, False):
        async with serving(make_config, lane) as (port, runner):
            pieces = [post(V1, ROWS, RID)] * 3 + [post(V2, V2_BODY, RID)] * 2
            pieces.append(post("/v1/models/nope:predict", ROWS, RID))
            await exchange(port, *pieces, responses=6, pause=0.02)
            text = runner.app[METRICS].render().decode()
            requests = sorted(
                line for line in text.splitlines() if line.startswith("flowserve_requests_total")
            )
            [(_, _, stats)], _ = await exchange(port, get("/v2/models/half_plus_two/stats"))
            stats = json.loads(stats)["model_stats"]
            inferences = {s["version"]: s["inference_count"] for s in stats}
            counts[lane] = (requests, inferences)
    assert counts[True] == counts[False]
    requests, inferences = counts[True]
    assert inferences == {"1": 0, "2": 5}
    assert any(
        'endpoint="predict"' in r and 'code="200"' in r and r.endswith(" 3.0") for r in requests
    )
    assert any('endpoint="infer"' in r and r.endswith(" 2.0") for r in requests)
    assert any('code="404"' in r and r.endswith(" 1.0") for r in requests)


async def test_a_client_closing_mid_body_leaves_the_server_serving(make_config):
    counts = {}
    for lane in (True, False):
        async with serving(make_config, lane) as (port, runner):
            app = runner.app
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(post(V1, ROWS, RID)[:-5])
            await _wait_for(lambda app=app: in_flight_requests(app) == 1)
            writer.close()
            await _wait_for(lambda app=app: in_flight_requests(app) == 0)
            answers, _ = await exchange(port, post(V1, ROWS, RID))
            assert answers[0][0] == 200
            text = app[METRICS].render().decode()
            counts[lane] = sorted(
                line for line in text.splitlines() if line.startswith("flowserve_requests_total")
            )
    assert counts[True] == counts[False]


async def test_shutdown_finishes_a_lane_request_in_flight(make_config):
    statuses = {}
    for lane in (True, False):
        async with serving(make_config, lane) as (port, runner):
            app = runner.app
            gate = _hold_inference(app)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(post(V1, ROWS, RID))
            await _wait_for(lambda app=app: in_flight_requests(app) == 1)
            cleanup = asyncio.create_task(runner.cleanup())
            await asyncio.sleep(0.1)  # shutting down, waiting for the request
            assert not cleanup.done()
            gate.set()
            async with asyncio.timeout(30):
                status, _, body = await read_response(reader)
                await cleanup
                assert await reader.read() == b""  # and then closed
            writer.close()
            statuses[lane] = (status, body)
    assert statuses[True] == statuses[False] == (200, b'{"predictions":[3.5,4.0,5.5]}')


async def test_response_hooks_and_the_access_log_as_aiohttp(make_config, caplog):
    def stamped(app):
        add_worker_header(app, 3)

    logger = logging.getLogger("flowserve.test-lane-access")
    logger.setLevel(logging.INFO)
    lines = {}
    for lane in (True, False):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=logger.name):
            async with serving(make_config, lane, app_hook=stamped, access_log=logger) as (
                port,
                runner,
            ):
                answers, _ = await exchange(
                    port, post(V1, ROWS, RID), post(V2, V2_BODY, RID), responses=2
                )
                assert all(("X-Flowserve-Worker", "3") in a[1] for a in answers)
                lines[lane] = (
                    answers,
                    [
                        {k: v for k, v in r.access.items() if k != "latency_ms"}
                        for r in caplog.records
                        if r.name == logger.name
                    ],
                )
                if lane:
                    assert runner.server.lane.served == 2
    assert lines[True] == lines[False]
    assert [(r["path"], r["status"]) for r in lines[True][1]] == [(V1, 200), (V2, 200)]


async def test_the_lane_is_off_when_asked_or_with_tracing(make_config, monkeypatch):
    assert SERVING in create_app(make_config())
    assert SERVING not in create_app(make_config(fast_lane=False))
    monkeypatch.setattr(tracing, "active", lambda refresh=False: True)
    assert SERVING not in create_app(make_config())


async def test_an_unread_body_is_discarded_and_the_connection_reads_on(make_config):
    async with both(make_config) as servers:
        unknown = post("/v1/models/nope:predict", ROWS, RID)
        # The 404 comes before the body is complete (the model is looked up first); the
        # rest of the body is then read and dropped, and the next request is served.
        answers, closed = await same_answers(
            servers, unknown[:-10], unknown[-10:] + post(V1, ROWS, RID), responses=2, pause=0.2
        )
        assert [a[0] for a in answers] == [404, 200] and not closed
        # A request aiohttp serves (a compressed body) between two of the lane's.
        zipped = post(V1, gzip.compress(ROWS), RID, "Content-Encoding: gzip")
        answers, _ = await same_answers(
            servers, post(V1, ROWS, RID) + zipped + post(V2, V2_BODY, RID), responses=3
        )
        assert [a[0] for a in answers] == [200, 200, 200] and answers[0][2] == answers[1][2]
    assert served(servers) == 1 + 1 + 2


async def test_many_pipelined_requests_come_back_in_order(make_config):
    pieces = []
    for i in range(150):
        path, body = (V1, ROWS) if i % 3 else (V2, V2_BODY)
        if i % 50 == 7:
            path, body = "/v1/models/nope:predict", ROWS  # an error among them
        pieces.append(post(path, body, f"X-Request-ID: r{i}"))
    async with both(make_config) as servers:
        answers, closed = await same_answers(servers, b"".join(pieces), responses=150)
        assert not closed
        assert [dict(h)["X-Request-ID"] for _, h, _ in answers] == [f"r{i}" for i in range(150)]
        assert [s for s, _, _ in answers].count(404) == 3
    assert served(servers) == 150


def _hold_inference(app):
    """Makes the app's inferences wait for the returned event (then run as before)."""
    manager = app[MANAGER]
    gate = asyncio.Event()
    infer = manager.infer

    async def held(*args, **kwargs):
        await gate.wait()
        return await infer(*args, **kwargs)

    manager.infer = held
    return gate


@pytest.mark.parametrize("cancel", [True, False])
async def test_a_client_leaving_while_its_request_waits(make_config, cancel):
    """With handler cancellation (the CLI's) the request is cancelled, else it finishes
    unanswered; either way it is counted as aiohttp counts it, and the server serves on."""
    counts = {}
    for lane in (True, False):
        async with serving(make_config, lane, cancel=cancel) as (port, runner):
            app = runner.app
            gate = _hold_inference(app)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(post(V1, ROWS, RID))
            await _wait_for(lambda app=app: in_flight_requests(app) == 1)
            writer.close()
            await asyncio.sleep(0.1)
            gate.set()
            await _wait_for(lambda app=app: in_flight_requests(app) == 0)
            answers, _ = await exchange(port, post(V2, V2_BODY, RID))
            assert answers[0][0] == 200
            text = app[METRICS].render().decode()
            counts[lane] = sorted(
                line for line in text.splitlines() if line.startswith("flowserve_requests_total")
            )
    assert counts[True] == counts[False]


def test_the_lane_runs_only_on_the_aiohttp_releases_it_was_tested_with(monkeypatch):
    first, last = http.LANE_AIOHTTP
    assert http.lane_unsupported() is None  # the installed aiohttp is one of them
    assert http.lane_unsupported(f"{first[0]}.{first[1]}.0") is None
    assert http.lane_unsupported(f"{last[0]}.{last[1]}.9rc1") is None
    for version in (f"{first[0]}.{first[1] - 1}.9", f"{last[0]}.{last[1] + 1}.0", "4.0.0", "x"):
        assert f"aiohttp {version} is not one the fast lane was tested with" in (
            http.lane_unsupported(version)
        )
    monkeypatch.setattr(http, "RESPONSE_MEMBERS", (*http.RESPONSE_MEMBERS, "_gone_from_responses"))
    assert "Response lacks _gone_from_responses" in http.lane_unsupported()
    monkeypatch.setattr(http, "_LANE_INTERNALS", [*http._LANE_INTERNALS, "_gone_in_a_release"])
    assert "lacks _gone_in_a_release" in http.lane_unsupported()


async def test_an_untested_aiohttp_turns_the_lane_off(make_config, monkeypatch, caplog):
    monkeypatch.setattr(http, "LANE_AIOHTTP", ((2, 0), (2, 1)))
    with caplog.at_level(logging.WARNING, logger="flowserve.http"):
        async with serving(make_config, True, expect_lane=False) as (port, runner):
            answers, _ = await exchange(port, post(V1, ROWS, RID))
    assert answers[0][0] == 200
    assert "The fast lane is off: aiohttp" in caplog.text
