"""The fast lane's parts on their own: the head parser refuses what is not plainly simple
and reads what is as aiohttp's own parser does (a property test against it: never a
different framing), and ``start_eagerly`` runs a coroutine as its task would."""

import asyncio
import contextvars
import gzip

import pytest
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import HttpRequestParser
from hypothesis import event, given, settings
from hypothesis import strategies as st

from service.fastlane import REFUSE, Head, LaneRequest, parse_head, start_eagerly


@pytest.mark.parametrize(
    "head",
    [
        b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 1\r\n x\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\r\nA: \x00\r\nContent-Length: 1\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\r\nA\rB: c\r\nContent-Length: 1\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.0\r\nContent-Length: 1\r\n\r\n",
        b"POST /v1/models/m:predict  HTTP/1.1\r\nContent-Length: 1\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\nContent-Length: 1\r\n\r\n",
        b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 1" + b"0" * 19 + b"\r\n\r\n",
        b"P" * 9000,
    ],
)
def test_the_head_parser_refuses_what_is_not_plainly_simple(head):
    assert parse_head(head, 1 << 20) is REFUSE


HOT_HEAD = b"POST /v1/models/m:predict HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"


def test_a_head_still_arriving_waits_only_while_it_can_be_plain():
    # Every prefix of a plain head (and of a bytearray of it) may still become one.
    for n in range(HOT_HEAD.index(b"\r\n\r\n") + 3):
        assert parse_head(HOT_HEAD[:n], 1 << 20) is None, HOT_HEAD[:n]
        assert parse_head(bytearray(HOT_HEAD[:n]), 1 << 20) is None
    # What cannot start a plain request is aiohttp's at once, before any blank line.
    for start in (
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
        b"garbage",  # bytes after a body longer than its Content-Length
        b"\r\n",
        b"post /v1",
        b"POST  /v1",
        b"POST v1",
        b"POST /v1 HTTP/1.0",
        b"POST /v1 HTTP/1.1\rx",
        b"POST /v1 HTTP/1.0\r\nHost",  # its whole first line is there
        b"POST /v1 HTTP/2",
        b"ABCDEFGHIJKLMNOPQ",  # a method longer than the lane takes
    ):
        assert parse_head(start, 1 << 20) is REFUSE, start
    assert parse_head(b"POST /v1 HTTP/1.1\r\nHost", 1 << 20) is None


def test_the_head_parser_reads_plain_heads():
    raw = (
        b"POST /v2/models/m/versions/3/infer HTTP/1.1\r\nHost: h\r\ncontent-length: 007\r\n"
        b"Content-Type: application/json\r\nX-Empty:\r\n\r\n{}"
    )
    headers = [("Host", "h"), ("content-length", "007"), ("Content-Type", "application/json")]
    expected = Head(
        "POST",
        "/v2/models/m/versions/3/infer",
        [*headers, ("X-Empty", "")],
        7,
        len(raw) - 2,
        True,
        "application/json",
    )
    assert parse_head(raw, 1 << 20) == expected
    raw = b"POST /v1/models/m:predict HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"
    head = parse_head(raw, 1 << 20)
    assert (head.hot, head.length, head.size) == (True, 2, len(raw) - 2)
    assert parse_head(raw[:20], 1 << 20) is None  # still arriving
    assert parse_head(raw, 1).hot is False  # over the body limit: aiohttp's 413
    plain_get = parse_head(b"GET /metrics HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n", 1)
    assert (plain_get.hot, plain_get.length) == (False, 0)
    assert parse_head(b"GET /metrics HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1) is REFUSE
    for header in (b"Content-Type: text/plain", b"Cookie: a=b", b"Content-Encoding: gzip"):
        odd = raw.replace(b"\r\n\r\n", b"\r\n" + header + b"\r\n\r\n")
        assert parse_head(odd, 1 << 20).hot is False
    # What aiohttp's parser answers 400: no Host, a singleton header twice, the old
    # WebSocket handshake.
    for odd in (
        raw.replace(b"Host: h\r\n", b""),
        raw.replace(b"Host: h\r\n", b"Host: h\r\nhost: h\r\n"),
        raw.replace(b"Host: h\r\n", b"Host: h\r\nUser-Agent: a\r\nUser-Agent: b\r\n"),
        raw.replace(b"Host: h\r\n", b"Host: h\r\nContent-Type: application/json\r\n" * 2),
        raw.replace(b"Host: h\r\n", b"Host: h\r\nSec-WebSocket-Key1: x\r\n"),
    ):
        assert parse_head(odd, 1 << 20) is REFUSE


class _ParserProtocol:
    """What aiohttp's request parser calls on its protocol."""

    transport = None

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


def _aiohttp_reads(raw: bytes):
    """aiohttp's own parser (the server's, C where built) on ``raw``: its messages as
    (method, path, headers, should_close, chunked, upgrade, body), or the error it raises."""
    loop = asyncio.new_event_loop()
    try:
        parser = HttpRequestParser(
            _ParserProtocol(), loop, 2**16, max_line_size=8190, max_field_size=8190
        )
        try:
            messages, _, _ = parser.feed_data(raw)
        except HttpProcessingError as e:
            return type(e).__name__
        out = []
        for message, payload in messages:
            body = b"".join(getattr(payload, "_buffer", ()))
            out.append(
                (
                    message.method,
                    message.path,
                    list(message.headers.items()),
                    message.should_close,
                    message.chunked,
                    message.upgrade,
                    body,
                )
            )
        return out
    finally:
        loop.close()


_BENIGN = st.sampled_from(
    [
        "Content-Type: application/json",
        "content-type: Application/JSON; charset=UTF-8",
        "X-Request-ID: abc",
        "Accept: */*",
        "User-Agent: t/1",
        "Connection: keep-alive",
        "Content-Encoding: identity",
        "X-Empty:",
        "X-Spaces:  a b\tc \t",
        "Authorization: Bearer t",
    ]
)
_NAMES = st.sampled_from(
    [
        "Host",
        "host",
        "Content-Length",
        "content-length",
        "Content-Type",
        "Connection",
        "Transfer-Encoding",
        "User-Agent",
        "Cookie",
        "Expect",
        "Content-Encoding",
        "Upgrade",
        "X A",
        "X:A",
        "",
        "X\x00",
        "\u00e9",
        "Sec-WebSocket-Key1",
    ]
)
_VALUES = st.sampled_from(
    [
        "",
        "h",
        " 2",
        "02",
        "+2",
        "2 ",
        "2,2",
        "1" * 20,
        "-1",
        "0x2",
        "text/plain",
        "close",
        "Keep-Alive, Upgrade",
        "chunked",
        "gzip",
        "100-continue",
        "a\x00b",
        "a\rb",
        "a\nb",
        "a\x7fb",
        "caf\u00e9",
        "websocket",
    ]
)
_LINES = st.one_of(
    _BENIGN,
    _BENIGN,
    _BENIGN,
    st.tuples(_NAMES, _VALUES).map(lambda nv: f"{nv[0]}: {nv[1]}"),
    st.sampled_from([" folded", "\tfolded", "NoColon", "X-C :v"]),
)
_TARGETS = st.sampled_from(
    [
        "/v1/models/m:predict",
        "/v2/models/m/infer",
        "/v1/models/m/versions/2:predict",
        "/v2/models/a.b/versions/1/infer",
        "/v1/models/m/labels/x:predict",
        "/metrics",
        "/v1/models/.m:predict",
        "/v1/models/m:predict?x",
        "/v2/models/%6D/infer",
        "*",
        "http://h/v2/models/m/infer",
        "/v2/models//infer",
    ]
)
_USUALLY = st.sampled_from([True] * 7 + [False])


@settings(max_examples=1000, deadline=None)
@given(
    method=st.sampled_from(["POST"] * 6 + ["GET", "PUT", "post", "POST "]),
    target=_TARGETS,
    version=st.sampled_from(["HTTP/1.1"] * 6 + ["HTTP/1.0", "HTTP/1.10", "http/1.1"]),
    lines=st.lists(_LINES, max_size=5),
    with_host=_USUALLY,
    with_length=_USUALLY,
    separator=st.sampled_from(["\r\n"] * 6 + ["\n", "\r\n\t"]),
)
def test_what_the_lane_takes_aiohttp_reads_the_same(
    method, target, version, lines, with_host, with_length, separator
):
    """The lane's head parser never disagrees with aiohttp's on a message it accepts: the
    same method, path, headers, framing (body length, where the next request starts), and
    no close, chunking or upgrade. (What it refuses goes to aiohttp's parser itself.)"""
    body = b'{"a":1}' if with_length else b""
    if with_length and any(
        line.partition(":")[0].strip().lower() == "content-encoding"
        and line.partition(":")[2].strip().lower() == "gzip"
        for line in lines
    ):
        # A body its header says is gzip must be gzip: aiohttp's parser inflates it while
        # framing (and drops the connection on bytes that are not), the lane leaves that to
        # the handler; only well-formed bodies compare framing.
        body = gzip.compress(body, mtime=0)
    head = [f"{method} {target} {version}"] + (["Host: h"] if with_host else []) + lines
    if with_length:
        head.append(f"Content-Length: {len(body)}")
    raw = separator.join(head).encode("utf-8", "surrogateescape") + b"\r\n\r\n" + body
    following = b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n"
    lane = parse_head(raw + following, 1 << 20)
    assert lane is not None  # the head is all there
    event("refused" if lane is REFUSE else "accepted, hot" if lane.hot else "accepted")
    if lane is REFUSE:
        return
    aiohttp_view = _aiohttp_reads(raw + following)
    assert isinstance(aiohttp_view, list) and len(aiohttp_view) == 2, aiohttp_view
    first, second = aiohttp_view
    # (aiohttp spells the names it knows its own way; lookups ignore case)
    lane_headers = [(k.lower(), v) for k, v in lane.headers]
    assert [(k.lower(), v) for k, v in first[2]] == lane_headers
    assert first[:2] + first[3:6] == (lane.method, lane.path, False, False, False)
    assert len(first[6]) == lane.length
    assert raw[lane.size : lane.size + lane.length] == first[6]
    assert lane.size + lane.length == len(raw)  # the next request starts where aiohttp's does
    assert second[:2] == ("GET", "/next")


_VAR = contextvars.ContextVar("lane_test_var", default="unset")


async def test_start_eagerly_runs_until_the_first_wait_then_a_task_carries_on():
    loop = asyncio.get_running_loop()
    steps = []

    async def at_once():
        steps.append("ran")
        return 1

    assert start_eagerly(loop, at_once()) is None and steps == ["ran"]

    future = loop.create_future()

    async def waits():
        token = _VAR.set("inside")
        steps.append("before")
        value = await future  # a future, then a bare yield, then a failing future
        await asyncio.sleep(0)
        steps.append(_VAR.get())
        failing = loop.create_future()
        loop.call_soon(failing.set_exception, KeyError("k"))
        try:
            await failing
        except KeyError:
            steps.append("caught")
        _VAR.reset(token)  # the same context throughout: the token is valid
        return value * 2

    task = start_eagerly(loop, waits())
    assert steps[-1] == "before" and _VAR.get() == "unset"  # its own context
    future.set_result(21)
    assert await task == 42
    assert steps[-2:] == ["inside", "caught"]


@pytest.mark.parametrize("future_done", [False, True])
async def test_start_eagerly_passes_cancellation_on(future_done):
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    seen = []

    async def waits():
        try:
            await future
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    task = start_eagerly(loop, waits())
    await asyncio.sleep(0)
    if future_done:  # cancelled between the future's end and the coroutine's next step
        future.set_result(None)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]


async def test_start_eagerly_runs_the_first_step_as_the_current_task():
    """Code needing a current task (asyncio.timeout, wait_for, current_task) works in the
    first step, on every Python; the starter's own task is current again after it."""
    loop = asyncio.get_running_loop()
    outer = asyncio.current_task()
    seen = {}

    async def timed():
        seen["task"] = asyncio.current_task()
        async with asyncio.timeout(5):  # RuntimeError outside a task
            pass
        seen["value"] = await asyncio.wait_for(asyncio.sleep(0, "slept"), 5)
        try:
            async with asyncio.timeout(0.01):  # expires: the task it noted is cancelled
                await asyncio.sleep(5)
        except TimeoutError:
            seen["timed out"] = True
        return "done"

    task = start_eagerly(loop, timed())
    assert asyncio.current_task() is outer
    assert seen["task"] is not None and seen["task"] is not outer
    assert await task == "done"
    assert seen["value"] == "slept" and seen["timed out"] is True

    async def at_once():
        async with asyncio.timeout(5):
            return asyncio.current_task()

    assert start_eagerly(loop, at_once()) is None  # finished in its first step

    async def fails():
        raise KeyError("k")

    with pytest.raises(KeyError):
        start_eagerly(loop, fails())

    async def cancels_itself():
        asyncio.current_task().cancel()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "cancelled"

    task = start_eagerly(loop, cancels_itself())
    assert await task == "cancelled"


async def test_start_eagerly_cancelled_before_its_task_first_runs():
    loop = asyncio.get_running_loop()
    seen = []

    async def waits():
        try:
            await loop.create_future()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    task = start_eagerly(loop, waits())
    task.cancel()  # before the loop turns: the coroutine still sees it
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]


def test_a_lane_request_stores_items_and_compares_by_identity_as_aiohttps_request():
    head = parse_head(
        b"POST /v1/models/m:predict HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nContent-Length: 2\r\n\r\n", 100
    )
    one, two = LaneRequest(None, None, head), LaneRequest(None, None, head)
    one["k"] = "v"
    two["k"] = "v"
    assert one["k"] == "v" and one.get("k") == "v" and "k" in one and one.get("x", 3) == 3
    assert one != two and one == one and hash(one) != hash(two)
    assert len({one, two}) == 2  # hashable, like aiohttp's request
    del one["k"]
    assert "k" not in one and list(one) == [] and list(two) == ["k"]
    assert (
        one.headers["x-a"] == "1" and one.content_length == 2 and one.path == "/v1/models/m:predict"
    )


async def test_a_lane_requests_body_is_at_hand_once_it_has_all_arrived():
    """``body_at_hand`` gives what ``read_body`` would, without its coroutines, for a lane
    request whose body has arrived; None while it arrives, and for aiohttp's requests."""
    from aiohttp.test_utils import make_mocked_request

    from service.protocols.common import body_at_hand, read_body

    head = parse_head(
        b"POST /v1/models/m:predict HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n", 100
    )
    request = LaneRequest(None, None, head)
    assert body_at_hand(request) is None  # still arriving: read_body waits for it
    request.body_arrived(b"{}")
    assert body_at_hand(request) == b"{}" == await read_body(request)
    assert body_at_hand(make_mocked_request("POST", "/v1/models/m:predict")) is None


def _lane(max_body: int = 1 << 20):
    from types import SimpleNamespace

    from aiohttp import web

    from service.fastlane import FastLane
    from service.keys import CONFIG

    app = web.Application()
    app[CONFIG] = SimpleNamespace(max_request_bytes=max_body)
    return FastLane(app, None)


def test_the_lane_remembers_hot_heads_by_their_bytes():
    lane = _lane(max_body=100)
    first = lane.head(HOT_HEAD)
    assert first == parse_head(HOT_HEAD, 100) and first.hot
    # The same head bytes (a bytearray, other body bytes after them) give the same Head,
    # and requests share its headers, read-only.
    again = lane.head(bytearray(HOT_HEAD[:-2] + b"[]"))
    assert again is first
    view = LaneRequest(lane.app, None, again).headers
    assert view is LaneRequest(lane.app, None, first).headers
    assert dict(view) == {"Host": "h", "Content-Length": "2"}
    with pytest.raises(TypeError):
        view["Host"] = "other"
    # Another Content-Length is another head; what is not hot (aiohttp's) is not kept.
    other = lane.head(HOT_HEAD.replace(b"Length: 2", b"Length: 3"))
    assert other.length == 3 and other is not first
    big = HOT_HEAD.replace(b"Length: 2", b"Length: 101")  # over max_body: aiohttp's 413
    assert lane.head(big) == parse_head(big, 100) and not lane.head(big).hot
    get = HOT_HEAD.replace(b"POST", b"GET")
    assert not lane.head(get).hot
    assert lane.head(b"GARBAGE\r\n\r\n") is REFUSE
    assert lane.head(HOT_HEAD[:20]) is None  # still arriving
    assert len(lane._heads) == 2


def test_the_head_cache_is_bounded_in_heads_and_in_bytes():
    lane = _lane()
    for i in range(lane.HEADS + 10):
        head = HOT_HEAD.replace(b"Host: h", b"Host: h%d" % i)
        assert lane.head(head) == parse_head(head, 1 << 20)
        assert len(lane._heads) <= lane.HEADS
    assert 0 < len(lane._heads) <= lane.HEADS
    long = HOT_HEAD.replace(b"Host: h", b"Host: h\r\nX-Pad: " + b"p" * lane.HEAD_BYTES)
    lane._heads.clear()
    parsed = lane.head(long)
    assert parsed == parse_head(long, 1 << 20) and parsed.hot
    assert not lane._heads  # parsed each time, never kept
