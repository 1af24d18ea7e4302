"""The fast lane: the hot inference requests served below aiohttp's web layer.

A plain ``POST /v1/models/<m>[/versions/<v>|/labels/<l>]:predict`` or ``POST /v2/models/<m>
[/versions/<v>]/infer`` with a JSON (or untyped) body of one decimal Content-Length costs most
of its HTTP time in aiohttp's machinery around the handler: the parser's message objects, a
``Request``, the router, ``Application._handle``, the response's header preparation and its
writer. The connection (``service.http``) hands such a request's head to ``parse_head``; when
it is *plainly simple* the lane serves it: the same ``serving`` middleware (``service.app``:
request ID, auth, budget, errors, metrics) and the same route handler (resolved once per path
by aiohttp's own router), given a ``LaneRequest`` that offers what they use of aiohttp's
request, and the response written in one ``transport.write``, with the bytes aiohttp would
have written (``encode_response``).

Anything else, or any doubt, stays aiohttp's: the head parser is strict (HTTP/1.1, an
origin-form target, token header names, visible-ASCII values, no obs-fold, no bare CR or LF,
one Host, at most one Content-Length of digits and of each header RFC 9110 makes single, no
Transfer-Encoding, Expect, Upgrade or Connection but keep-alive, a bounded size), so the
lane never frames or accepts a message differently from aiohttp's parser; what it refuses
reaches that parser byte for byte.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
from collections.abc import Awaitable, Callable, Coroutine, Iterator, MutableMapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from aiohttp import web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE
from aiohttp.http_writer import _serialize_headers
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from service.keys import CONFIG

__all__ = [
    "SERVING",
    "FastLane",
    "Head",
    "LaneRequest",
    "parse_head",
    "encode_response",
    "start_eagerly",
    "MAX_HEAD",
    "REFUSE",
]

# The ``serving`` middleware of an app whose requests may take the lane (set by create_app
# when the lane is on and nothing needs aiohttp's own request, such as tracing).
SERVING = web.AppKey("fast_lane_serving", object)

MAX_HEAD = 8190  # aiohttp's own line limit: a longer head is its to judge
_MAX_HEADERS = 100
_MAX_LENGTH_DIGITS = 18
REFUSE = "refuse"  # parse_head: not plainly simple; aiohttp's parser takes it from here

_REQUEST_LINE = re.compile(r"([A-Z]{1,16}) (/[\x21-\x7e]*) HTTP/1\.1\Z")
# A header line: a token name, a colon, optional whitespace, a value of visible ASCII (inner
# spaces and tabs allowed), optional whitespace. Checked for the whole block at once.
_FIELD = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[ \t]*(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?[ \t]*"
_FIELDS = re.compile(rf"(?:\r\n{_FIELD})*\Z")
_FIELD_PARTS = re.compile(
    r"\r\n([^:]+):[ \t]*((?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?)[ \t]*"
)
_SEGMENT = r"[A-Za-z0-9_~-][A-Za-z0-9_.~-]*"
_HOT_PATH = re.compile(
    rf"(?:/v1/models/{_SEGMENT}(?:/(?:versions|labels)/{_SEGMENT})?:predict"
    rf"|/v2/models/{_SEGMENT}(?:/versions/{_SEGMENT})?/infer)\Z"
)
_JSON_TYPES = frozenset(["application/json", "application/json; charset=utf-8"])
# Headers whose presence sends a request to aiohttp whole: framing or protocol switches
# the lane does not implement.
_HANDED = frozenset(["transfer-encoding", "expect", "upgrade", "te", "sec-websocket-key1"])
# Headers aiohttp's parser refuses twice (RFC 9110's singletons): a second one is its 400.
_SINGLETONS = frozenset(
    [
        "content-length",
        "content-location",
        "content-range",
        "content-type",
        "etag",
        "host",
        "max-forwards",
        "server",
        "transfer-encoding",
        "user-agent",
    ]
)
_NOTED = _HANDED | _SINGLETONS | {"connection", "content-encoding", "cookie"}


@dataclass(slots=True)
class Head:
    """A complete, plainly simple request head: ``size`` bytes, then ``length`` body bytes.
    ``hot``: the lane may serve it; otherwise aiohttp serves this one request."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    length: int
    size: int
    hot: bool
    content_type: str


def parse_head(buffer: bytes, max_body: int) -> Head | str | None:
    """The head at the start of ``buffer``: a ``Head``; None while it may still be
    arriving; ``REFUSE`` when it is not plainly simple HTTP/1.1 (aiohttp's parser judges
    it)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None if len(buffer) <= MAX_HEAD else REFUSE
    if end > MAX_HEAD:
        return REFUSE
    try:
        text = buffer[:end].decode("ascii")
    except UnicodeDecodeError:
        return REFUSE
    line_end = text.find("\r\n")
    if line_end < 0:
        line_end = len(text)
    request_line = _REQUEST_LINE.match(text, 0, line_end)
    if request_line is None or not _FIELDS.match(text, line_end):
        return REFUSE
    headers = _FIELD_PARTS.findall(text, line_end)
    if len(headers) >= _MAX_HEADERS:
        return REFUSE
    method, path = request_line.groups()
    length = None
    hot = method == "POST" and _HOT_PATH.match(path) is not None and "/." not in path
    content_type = "application/octet-stream"
    seen = set()
    for name, value in headers:
        lower = name.lower()
        if lower not in _NOTED:
            continue
        if lower in _SINGLETONS:
            if lower in seen:
                return REFUSE
            seen.add(lower)
        if lower == "content-length":
            if not value.isdigit() or len(value) > _MAX_LENGTH_DIGITS:
                return REFUSE
            length = int(value)
        elif lower == "content-type":
            if value.lower() not in _JSON_TYPES:
                hot = False
            content_type = "application/json"
        elif lower == "connection":
            # "close": aiohttp's parser refuses whatever follows such a request on the
            # connection (a 400 for the pair, pipelined): that stays its to judge.
            if value.lower() != "keep-alive":
                return REFUSE
        elif lower in _HANDED:
            return REFUSE
        elif lower == "content-encoding":
            hot = hot and value.lower() == "identity"
        elif lower == "cookie":  # the auth check may read it (aiohttp's request parses it)
            hot = False
    if "host" not in seen:  # HTTP/1.1 requires one: aiohttp answers 400 without
        return REFUSE
    if length is None:
        length = 0
        hot = False
    elif length > max_body:
        hot = False  # aiohttp answers 413 and drops the body
    return Head(method, path, headers, length, end + 4, hot, content_type)


class LaneRequest(MutableMapping[str, Any]):
    """What the ``serving`` middleware, the inference handlers and the access log use of
    an aiohttp request, for a request the lane serves: ``app``, ``match_info``, ``method``,
    ``path``, ``headers``, ``content_type``, ``content_length``, ``body_exists``,
    ``cookies`` (none: a request with cookies is aiohttp's), ``remote``, item storage and
    ``read()``, whose body may still be arriving."""

    __slots__ = (
        "app",
        "match_info",
        "method",
        "path",
        "headers",
        "content_type",
        "content_length",
        "keep_alive",
        "_state",
        "_body",
        "_waiter",
        "_peername",
    )

    cookies = MappingProxyType({})

    def __init__(
        self, app: web.Application, match_info: Any, head: Head, peername: object = None
    ) -> None:
        self.app = app
        self.match_info = match_info
        self.method = head.method
        self.path = head.path
        self.headers = CIMultiDictProxy(CIMultiDict(head.headers))
        self.content_type = head.content_type
        self.content_length = head.length
        self.keep_alive = True  # a request with "Connection: close" is aiohttp's
        self._state: dict[str, Any] = {}
        self._body: bytes | None = None
        self._waiter: asyncio.Future | None = None
        self._peername = peername

    @property
    def body_exists(self) -> bool:
        return self.content_length > 0

    @property
    def remote(self) -> str | None:
        peer = self._peername
        if isinstance(peer, (list, tuple)):
            return str(peer[0])
        return None if peer is None else str(peer)

    @property
    def content(self) -> LaneRequest:
        """The body stream's one question read_body asks: ``is_eof()``."""
        return self

    def is_eof(self) -> bool:
        return self._body is not None

    async def read(self) -> bytes:
        """The whole body, once it has arrived."""
        if self._body is None:
            if self._waiter is None:
                self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._body

    def body_arrived(self, body: bytes) -> None:
        self._body = body
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def body_failed(self, exc: BaseException) -> None:
        """The connection ended before the body did: ``read()`` raises ``exc``."""
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        if not self._waiter.done():
            self._waiter.set_exception(exc)
            self._waiter.exception()  # retrieved: nobody may be reading

    def __getitem__(self, key: str) -> Any:
        return self._state[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._state[key] = value

    def __delitem__(self, key: str) -> None:
        del self._state[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def get(self, key: str, default: Any = None) -> Any:
        return self._state.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._state


class _Target:
    """What aiohttp's router reads of a request."""

    __slots__ = ("method", "rel_url")

    def __init__(self, method: str, path: str) -> None:
        self.method = method
        self.rel_url = URL.build(path=path, encoded=True)


class FastLane:
    """The lane of one application: its ``serving`` middleware and the hot routes, each
    path resolved once by the app's router (a bounded cache: paths come from clients)."""

    CACHE_SIZE = 4096

    def __init__(self, app: web.Application, serving: Callable[..., Awaitable]) -> None:
        self.app = app
        self.serving = serving
        self.max_body = app[CONFIG].max_request_bytes
        self.prepare_hooks = bool(app.on_response_prepare)
        self.served = 0  # requests the lane has taken (tests and benchmarks read it)
        self._routes: dict[str, tuple[Any, Callable] | None] = {}
        self._last: tuple[str, tuple[Any, Callable] | None] = ("", None)

    @classmethod
    def of(cls, app: web.Application) -> FastLane | None:
        """The lane of ``app``, or None when it has none (turned off, or tracing on)."""
        serving = app.get(SERVING)
        if serving is None or list(app.middlewares) != [serving]:
            return None
        return cls(app, serving)

    def cached_route(self, path: str) -> tuple[Any, Callable] | None | bool:
        """``route(path)`` if known without asking the router, else False."""
        try:
            return self._routes[path]
        except KeyError:
            last_path, found = self._last
            return found if last_path == path else False

    async def route(self, path: str) -> tuple[Any, Callable] | None:
        """(match_info, handler) of ``POST path``; None when the router sends it elsewhere
        (a 404 or 405: aiohttp answers those)."""
        found = self.cached_route(path)
        if found is not False:
            return found
        match_info = await self.app.router.resolve(_Target("POST", path))
        found = None
        if match_info.http_exception is None and match_info.route.method == "POST":
            match_info.add_app(self.app)
            match_info.freeze()
            found = (match_info, match_info.handler)
        if len(self._routes) < self.CACHE_SIZE:
            self._routes[path] = found
        self._last = (path, found)
        return found


def simple_response(response: web.StreamResponse) -> bool:
    """Whether ``encode_response`` writes ``response`` as aiohttp would: a ``Response``
    with a bytes body, no compression, chunking or cookies, a status with a body."""
    return (
        isinstance(response, web.Response)
        and isinstance(response.body, (bytes, bytearray))
        and not response.chunked
        and not response.compression
        and not response._cookies
        and response.status >= 200
        and response.status not in (204, 304)
    )


def finish_headers(response: web.Response, keep_alive: bool) -> CIMultiDict:
    """``response``'s headers completed as aiohttp's ``prepare`` completes them for an
    HTTP/1.1 request: Content-Length, a default Content-Type, Date, Server, Connection."""
    headers = response.headers
    body = response.body
    if "Content-Length" not in headers:
        headers["Content-Length"] = str(len(body))
    if body:
        headers.setdefault("Content-Type", "application/octet-stream")
    if "Date" not in headers:
        headers["Date"] = rfc822_formatted_time()
    headers.setdefault("Server", SERVER_SOFTWARE)
    if "Connection" not in headers and not keep_alive:
        headers["Connection"] = "close"
    return headers


def encode_response(response: web.Response) -> bytes:
    """The bytes of a response ``finish_headers`` completed (``simple_response``)."""
    status_line = f"HTTP/1.1 {response.status} {response.reason}"
    return _serialize_headers(status_line, response.headers) + bytes(response.body)


def start_eagerly(loop: asyncio.AbstractEventLoop, coro: Coroutine) -> asyncio.Task | None:
    """Runs ``coro`` at once, in a copy of the current context, until it first waits; a task
    carries it on from there, in the same context (None when it finished without waiting).
    Python 3.12's eager tasks, for 3.11: a request whose model runs inline on the event loop
    is answered without a task or another turn of the loop. The first step runs outside any
    task (``asyncio.current_task()`` is None there: ``asyncio.timeout`` needs a task, so a
    request whose body is still arriving, which read_body times, starts as a task)."""
    context = contextvars.copy_context()
    try:
        waiting_on = context.run(coro.send, None)
    except StopIteration:
        return None
    return loop.create_task(_carry_on(coro, waiting_on), context=context)


async def _carry_on(coro: Coroutine, waiting_on: Any) -> Any:
    """Drives ``coro``, started and now waiting on ``waiting_on`` (a future, or None for a
    bare yield), as its own task would: resumed when the future is done (it reads the
    outcome itself), cancelled when this task is."""
    while True:
        cancelled = None
        try:
            if waiting_on is None:
                await asyncio.sleep(0)
            else:
                # Yielded by the coroutine's own await, which marked it as blocking (a
                # task clears the mark when it takes the future): awaited again here.
                waiting_on._asyncio_future_blocking = False
                await waiting_on
        except asyncio.CancelledError as e:
            if waiting_on is None or not waiting_on.cancelled():
                cancelled = e  # this task was cancelled while the future was not
        except BaseException:  # noqa: BLE001, S110 - the coroutine raises it from the future
            pass
        try:
            waiting_on = coro.send(None) if cancelled is None else coro.throw(cancelled)
        except StopIteration as stop:
            return stop.value
