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
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from aiohttp import web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE, HttpVersion11
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

_REQUEST_LINE = re.compile(r"([A-Z]{1,16}) (/[\x21-\x7e]*) HTTP/1\.1")
# The start of a head whose blank line has not arrived: a whole request line the lane could
# take, or the beginning of one. Anything else is aiohttp's to judge at once (a TLS
# ClientHello on the plain port, bytes after a body longer than its Content-Length, ...).
_FIRST_LINE = re.compile(rb"[A-Z]{1,16} /[\x21-\x7e]* HTTP/1\.1\r\n")
_VERSION_STARTS = b"|".join(re.escape(b"HTTP/1.1\r"[:n]) for n in range(10, -1, -1))
_FIRST_LINE_START = re.compile(
    rb"[A-Z]{1,16}(?: (?:/[\x21-\x7e]*(?: (?:" + _VERSION_STARTS + rb"))?)?)?\Z"
)
# A header line: a token name, a colon, optional whitespace, a value of visible ASCII (inner
# spaces and tabs allowed), optional whitespace. Each line is checked and taken apart in one
# match (a check of the whole block, then a second pass to take it apart, cost twice that).
_FIELD = re.compile(
    r"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*((?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?)[ \t]*"
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
    ``hot``: the lane may serve it; otherwise aiohttp serves this one request. Never changed
    once made: ``FastLane.head`` hands the same one to every request with the same bytes."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    length: int
    size: int
    hot: bool
    content_type: str
    _view: CIMultiDictProxy | None = field(default=None, compare=False, repr=False)

    def view(self) -> CIMultiDictProxy:
        """The headers as a read-only multidict (made once: requests may share it)."""
        view = self._view
        if view is None:
            view = self._view = CIMultiDictProxy(CIMultiDict(self.headers))
        return view


def parse_head(buffer: bytes, max_body: int) -> Head | str | None:
    """The head at the start of ``buffer``: a ``Head``; None while it may still be
    arriving; ``REFUSE`` when it is not plainly simple HTTP/1.1 (aiohttp's parser judges
    it)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > MAX_HEAD:
            return REFUSE
        if buffer.find(b"\r\n") >= 0:
            return None if _FIRST_LINE.match(buffer) else REFUSE
        return None if not buffer or _FIRST_LINE_START.match(buffer) else REFUSE
    if end > MAX_HEAD:
        return REFUSE
    try:
        text = buffer[:end].decode("ascii")
    except UnicodeDecodeError:
        return REFUSE
    lines = text.split("\r\n")
    if len(lines) > _MAX_HEADERS:  # the request line and _MAX_HEADERS fields or more
        return REFUSE
    request_line = _REQUEST_LINE.fullmatch(lines[0])
    if request_line is None:
        return REFUSE
    method, path = request_line.groups()
    length = None
    hot = method == "POST" and _HOT_PATH.match(path) is not None and "/." not in path
    content_type = "application/octet-stream"
    seen = set()
    headers = []
    field = _FIELD.fullmatch
    for line in lines[1:]:
        parts = field(line)
        if parts is None:
            return REFUSE
        name, value = pair = parts.groups()
        headers.append(pair)
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


class LaneRequest(dict):
    """What the ``serving`` middleware, the inference handlers and the access log use of
    an aiohttp request, for a request the lane serves: ``app``, ``match_info``, ``method``,
    ``path`` (and ``path_qs``, ``version``: aiohttp's access log reads them), ``headers``,
    ``content_type``, ``content_length``, ``body_exists``, ``cookies`` (none: a request with
    cookies is aiohttp's), ``remote``, item storage and ``read()``, whose body may still be
    arriving.

    The item storage (``request[KEY]``, ``get``, ``in``) is the object itself, a dict: a
    request's keys are read and written about ten times on the hot path, and a dict's own
    methods are C calls where a ``MutableMapping``'s are Python frames. Like aiohttp's
    request it compares and hashes by identity."""

    __hash__ = object.__hash__
    __eq__ = object.__eq__
    __ne__ = object.__ne__

    __slots__ = (
        "app",
        "match_info",
        "method",
        "path",
        "headers",
        "content_type",
        "content_length",
        "keep_alive",
        "_body",
        "_waiter",
        "_peername",
    )

    cookies = MappingProxyType({})
    version = HttpVersion11  # a request of another version is aiohttp's

    @property
    def path_qs(self) -> str:
        """What aiohttp's access log writes of the target (a hot path has no query)."""
        return self.path

    def __init__(
        self, app: web.Application, match_info: Any, head: Head, peername: object = None
    ) -> None:
        self.app = app
        self.match_info = match_info
        self.method = head.method
        self.path = head.path
        self.headers = head.view()
        self.content_type = head.content_type
        self.content_length = head.length
        self.keep_alive = True  # a request with "Connection: close" is aiohttp's
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

    def body_at_hand(self) -> bytes | None:
        """The whole body if it has all arrived (None while it is arriving). It is never
        encoded: ``parse_head`` leaves a request with a Content-Encoding but identity to
        aiohttp."""
        return self._body

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


class _Target:
    """What aiohttp's router reads of a request."""

    __slots__ = ("method", "rel_url")

    def __init__(self, method: str, path: str) -> None:
        self.method = method
        self.rel_url = URL.build(path=path, encoded=True)


class FastLane:
    """The lane of one application: its ``serving`` middleware and the hot routes. A path is
    resolved by the app's router, and remembered (``remember``) only once a request on it has
    been answered other than 404: paths come from clients, and one naming no model the server
    has pins nothing. The cache is bounded in paths and in bytes."""

    CACHE_SIZE = 1024
    CACHE_BYTES = 128 << 10
    HEADS = 256  # hot heads remembered (a keep-alive client sends the same head each time)
    HEAD_BYTES = 1024  # longer heads are parsed each time

    def __init__(self, app: web.Application, serving: Callable[..., Awaitable]) -> None:
        self.app = app
        self.serving = serving
        self.max_body = app[CONFIG].max_request_bytes
        self.prepare_hooks = bool(app.on_response_prepare)
        self.served = 0  # requests the lane has taken (tests and benchmarks read it)
        self._routes: dict[str, tuple[Any, Callable]] = {}
        self._cached_bytes = 0
        self._heads: dict[bytes, Head] = {}

    @classmethod
    def of(cls, app: web.Application) -> FastLane | None:
        """The lane of ``app``, or None when it has none (turned off, or tracing on)."""
        serving = app.get(SERVING)
        if serving is None or list(app.middlewares) != [serving]:
            return None
        return cls(app, serving)

    def head(self, buffer: bytes | bytearray) -> Head | str | None:
        """``parse_head(buffer, max_body)``, remembered for hot heads: clients on keep-alive
        connections send the same head bytes request after request (only Content-Length
        moves with the body's size), and a head is a function of its bytes. At most
        ``HEADS`` heads of at most ``HEAD_BYTES`` are kept; the cache starts over when full
        (heads that differ every time, such as ones carrying a request ID, just miss)."""
        end = buffer.find(b"\r\n\r\n", 0, self.HEAD_BYTES)
        if end < 0:
            return parse_head(buffer, self.max_body)
        key = bytes(buffer[: end + 4])
        head = self._heads.get(key)
        if head is None:
            head = parse_head(key, self.max_body)
            if type(head) is Head and head.hot:
                if len(self._heads) >= self.HEADS:
                    self._heads.clear()
                self._heads[key] = head
        return head

    def cached_route(self, path: str) -> tuple[Any, Callable] | None:
        """``route(path)`` when remembered, else None (ask ``route``)."""
        return self._routes.get(path)

    async def route(self, path: str) -> tuple[Any, Callable] | None:
        """(match_info, handler) of ``POST path``; None when the router sends it elsewhere
        (a 404 or 405: aiohttp answers those)."""
        found = self._routes.get(path)
        if found is not None:
            return found
        match_info = await self.app.router.resolve(_Target("POST", path))
        if match_info.http_exception is not None or match_info.route.method != "POST":
            return None
        match_info.add_app(self.app)
        match_info.freeze()
        return (match_info, match_info.handler)

    def remember(self, path: str, route: tuple[Any, Callable]) -> None:
        """Keeps ``route`` for ``path``, answered other than 404, while the cache has room."""
        if path in self._routes or len(self._routes) >= self.CACHE_SIZE:
            return
        if self._cached_bytes + len(path) > self.CACHE_BYTES:
            return
        self._routes[path] = route
        self._cached_bytes += len(path)


# What the functions below read of an aiohttp response, directly (the properties in front of
# them are a Python frame each): ``service.http.lane_unsupported`` checks they exist.
RESPONSE_MEMBERS = ("_body", "_chunked", "_compression", "_cookies", "_status", "_reason")
RESPONSE_MEMBERS += ("_headers", "_keep_alive")


def simple_response(response: web.StreamResponse) -> bool:
    """Whether ``encode_response`` writes ``response`` as aiohttp would: a ``Response``
    with a bytes body, no compression, chunking or cookies, a status with a body."""
    if not isinstance(response, web.Response):
        return False
    status = response._status
    return (
        isinstance(response._body, (bytes, bytearray))
        and not response._chunked
        and not response._compression
        and not response._cookies
        and status >= 200
        and status != 204
        and status != 304
    )


def finish_headers(response: web.Response, keep_alive: bool) -> CIMultiDict:
    """``response``'s headers completed as aiohttp's ``prepare`` completes them for an
    HTTP/1.1 request: Content-Length, a default Content-Type, Date, Server, Connection."""
    headers = response._headers
    body = response._body
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
    status_line = f"HTTP/1.1 {response._status} {response._reason}"
    return _serialize_headers(status_line, response._headers) + bytes(response._body)


EAGER_TASKS = sys.version_info >= (3, 12)  # asyncio.Task(..., eager_start=True)
# asyncio's own current-task registry (C functions on 3.11; ``asyncio.current_task`` is a
# Python frame in front of the dict).
_current_tasks = asyncio.tasks._current_tasks
_enter_task = asyncio.tasks._enter_task
_leave_task = asyncio.tasks._leave_task


def start_eagerly(loop: asyncio.AbstractEventLoop, coro: Coroutine) -> asyncio.Task | None:
    """Runs ``coro`` at once, with a current task, until it first waits; a task carries it on
    from there (None when it finished without waiting; an error it raised then is raised
    here). A request whose model runs inline on the event loop is answered within the read
    that brought it, without a task or another turn of the loop.

    On Python 3.12 and later this is asyncio's own eager task. On 3.11 the first step's
    current task is a ``_FirstStep`` standing for the task that carries ``coro`` on (made
    only if it waits): ``asyncio.timeout``, ``wait_for`` and ``current_task()`` work there,
    a cancellation asked for during the step reaches that task."""
    if EAGER_TASKS:
        task = asyncio.Task(coro, loop=loop, eager_start=True)
        if not task.done():
            return task
        task.result()
        return None
    context = contextvars.copy_context()
    carrier = _Carrier(coro)
    stand_in = _FirstStep()
    outer = _current_tasks.get(loop)  # a task starting another (a route lookup's)
    if outer is not None:
        _leave_task(loop, outer)
    _enter_task(loop, stand_in)
    try:
        carrier.first_step(context)
    finally:
        _leave_task(loop, stand_in)
        if outer is not None:
            _enter_task(loop, outer)
    if carrier.finished:
        raised, error = carrier._first
        if raised and not isinstance(error, StopIteration):
            raise error
        return None
    task = asyncio.Task(carrier, loop=loop, context=context)
    stand_in.task = task
    if stand_in.cancel_asked is not None:
        task.cancel(*stand_in.cancel_asked)
    return task


class _FirstStep:
    """The current task of a first step on Python 3.11: until the task carrying the
    coroutine on exists, it answers as a new task would (what ``asyncio.timeout`` asks:
    ``cancelling``, ``uncancel``, ``cancel``); then it is that task."""

    __slots__ = ("task", "cancel_asked", "__weakref__")

    def __init__(self) -> None:
        self.task: asyncio.Task | None = None
        self.cancel_asked: tuple | None = None

    def cancel(self, msg: Any = None) -> bool:
        if self.task is not None:
            return self.task.cancel(msg)
        self.cancel_asked = (msg,)
        return True

    def cancelling(self) -> int:
        if self.task is not None:
            return self.task.cancelling()
        return 0 if self.cancel_asked is None else 1

    def uncancel(self) -> int:
        if self.task is not None:
            return self.task.uncancel()
        self.cancel_asked = None
        return 0

    def done(self) -> bool:
        return self.task is not None and self.task.done()

    def __getattr__(self, name: str) -> Any:
        task = object.__getattribute__(self, "task")
        if task is None:
            raise AttributeError(f"a request's first step has no task {name!r} yet")
        return getattr(task, name)


class _Carrier(Coroutine):
    """``coro`` as its task sees it on Python 3.11, its first step already run by
    ``start_eagerly``: the first ``send`` is given what that step waits on (or its outcome),
    then every ``send`` and ``throw`` is ``coro``'s own."""

    __slots__ = ("coro", "finished", "_first")

    def __init__(self, coro: Coroutine) -> None:
        self.coro = coro
        self.finished = False
        self._first: tuple[bool, Any] | None = None  # (raised, what) of the first step

    def first_step(self, context: contextvars.Context) -> None:
        try:
            self._first = (False, context.run(self.coro.send, None))
        except BaseException as e:  # noqa: BLE001 - StopIteration too: given to the task
            self.finished = True
            self._first = (True, e)

    def send(self, value: Any) -> Any:
        first = self._first
        if first is None:
            return self.coro.send(value)
        self._first = None
        raised, what = first
        if raised:
            raise what
        return what

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        exc = val if val is not None else typ() if isinstance(typ, type) else typ
        if tb is not None:
            exc = exc.with_traceback(tb)
        if self._first is not None:
            self._first = None
            if self.finished:
                raise exc
        return self.coro.throw(exc)

    def close(self) -> None:
        self.coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        raise TypeError("a _Carrier is driven by its task only")
