"""The HTTP server's own defences, below the application: a connection cap, idle and
half-sent-header timeouts, and JSON bodies for the errors aiohttp's parser answers itself.

``HardenedRunner`` is an ``AppRunner`` whose protocol factory makes ``_Connection`` handlers:

- at most ``max_connections`` connections are open; one more gets a JSON 503 with
  ``Retry-After`` and is closed, so a flood of idle sockets cannot starve the process of file
  descriptors while the ones it holds time out;
- ``idle_timeout`` (set by ``create_app`` as aiohttp's keep-alive timer, armed from the
  moment a connection opens and after each response): a connection that sends nothing
  within it is closed;
- ``header_timeout``, a timer of its own: once the first byte of a request arrives, its
  headers must be complete within it, else the client gets a JSON 408 and the connection
  closes (aiohttp has one timer for both; while headers arrive, its keep-alive timer stands
  aside). A pipelined request's headers, arriving while the one before is handled, are
  bounded by ``idle_timeout`` instead;
- a request aiohttp cannot parse (bad request line, header too long, bad Content-Length,
  ...) is answered ``{"error": ...}`` with its 4xx status, as every other error is;
- the fast lane (``service.fastlane``): when the app has one, the connection reads each
  request head itself first. A plainly simple hot inference request is served by the lane;
  another plainly simple request (``GET /metrics``, ...) is handed to aiohttp alone, and the
  lane reads on once aiohttp has answered it; anything else hands the connection to aiohttp's
  parser from that request's first byte on, for good. Requests are answered one at a time,
  in order, whoever serves them; keep-alive, lingering over an unread body, the timers, the
  cap and graceful shutdown (which waits for a lane request as for aiohttp's) behave as
  aiohttp's.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from aiohttp import web, web_protocol, web_server
from aiohttp.http import HttpVersion11
from aiohttp.http_parser import RawRequestMessage
from aiohttp.http_writer import StreamWriter
from aiohttp.streams import EMPTY_PAYLOAD
from yarl import URL

from service.fastlane import (
    REFUSE,
    RESPONSE_MEMBERS,
    FastLane,
    LaneRequest,
    encode_response,
    finish_headers,
    simple_response,
    start_eagerly,
)
from service.protocols.common import dumps

__all__ = ["HardenedRunner"]

log = logging.getLogger("flowserve.http")

_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: application/json\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n"
)
_HEADER_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n"
)
# Who reads the connection's bytes: aiohttp's parser (no lane, or handed over for good), the
# lane, or aiohttp serving one request the lane delimited (the lane reads on after it).
_OFF, _LANE, _ONE = 0, 1, 2
# Where the current request's remaining body bytes go (``_lane_need`` of them).
_COLLECT, _DISCARD, _FORWARD = 0, 1, 2
# Bytes of pipelined requests held while one is served, before reading pauses.
_LANE_BUFFER_LIMIT = 1 << 20
# The lane drives aiohttp's connection handler through these private members, so it runs
# only on the aiohttp releases it was tested with (and only where they are all present):
# on any other, every request is aiohttp's, as with --no-fast-lane.
LANE_AIOHTTP = ((3, 14), (3, 14))  # first and last tested (major, minor), inclusive
_LANE_INTERNALS = (
    "_loop _manager _request_count _force_close _close _waiter _keepalive_handle "
    "_keepalive_timeout _next_keepalive_close_time _buffer_paused _pause_reading_for_buffer "
    "_resume_reading_for_buffer _request_in_progress _handler_waiter _messages "
    "_process_keepalive _logging_enabled _lingering_time _drain_helper data_received "
    "log_access log_exception force_close"
).split()


def lane_unsupported(version: str = aiohttp.__version__) -> str | None:
    """Why the fast lane cannot run on this aiohttp (``version``), or None when it can."""
    try:
        release = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        release = ()
    first, last = LANE_AIOHTTP
    if len(release) != 2 or not first <= release <= last:
        return (
            f"aiohttp {version} is not one the fast lane was tested with "
            f"({first[0]}.{first[1]} to {last[0]}.{last[1]})"
        )
    members = set(dir(web_protocol.RequestHandler))
    for cls in web_protocol.RequestHandler.__mro__:
        members.update(getattr(cls, "__slots__", ()))
    missing = [name for name in _LANE_INTERNALS if name not in members]
    if missing:
        return f"aiohttp {version}'s connection handler lacks {', '.join(missing)}"
    probe = web.Response(body=b"")
    missing = [name for name in RESPONSE_MEMBERS if not hasattr(probe, name)]
    if missing:
        return f"aiohttp {version}'s Response lacks {', '.join(missing)}"
    return None


class _Connection(web_protocol.RequestHandler):
    """One client connection: refused beyond the cap; parser errors answered in JSON; the
    fast lane's requests served below aiohttp's web layer."""

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        manager = self._manager
        cap = getattr(manager, "max_connections", None)
        if cap is not None and len(manager.connections) > cap:
            body = dumps({"error": f"Too many connections (the limit is {cap}); retry shortly"})
            transport.write(_REFUSED + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            if isinstance(manager, _Server):
                manager.refused += 1
            # Half-close now and close a moment later: closing a socket whose request is
            # still unread would reset it, and the client would never see the answer.
            self._refused = True
            transport.write_eof()
            self._loop.call_later(1.0, self.force_close)
            return
        self._lane = getattr(manager, "lane", None)
        if self._lane is not None:
            self._lane_mode = _LANE
            self._lane_buffer = bytearray()

    _refused = False
    _header_timer = None  # armed while a request's headers are arriving
    _header_count = 0  # requests parsed when it was armed
    _lane: FastLane | None = None
    _lane_mode = _OFF
    # Bytes read and not yet given to anyone: consumed from the front in place (a bytearray
    # advances its start on ``del buffer[:n]``), so pipelined requests are not copied again.
    _lane_buffer: bytearray | bytes = b""
    _lane_pipelined = False  # the buffer's first bytes arrived while a request was served
    _lane_need = 0  # body bytes of the current request still to come ...
    _lane_sink = _COLLECT  # ... and where they go
    _lane_parts: list | None = None  # the body collected so far
    _lane_request: LaneRequest | None = None  # the request the lane is serving
    _lane_task: asyncio.Task | None = None
    _lane_resolving = False  # a new path's route is being looked up
    _lane_eager = False  # a request's first step is running inside data_received
    _lane_linger: asyncio.TimerHandle | None = None  # discarding an unread body until then
    _lane_close_after = False  # close once the unread body is discarded
    _waiter_future = None

    @property
    def _waiter(self):  # aiohttp's: set while it waits for the next request
        return self._waiter_future

    @_waiter.setter
    def _waiter(self, future) -> None:
        self._waiter_future = future
        if future is not None and self._lane_mode == _ONE:
            # aiohttp has answered the request it was handed: the lane reads on.
            self._loop.call_soon(self._lane_resume)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._lane_mode == _OFF:
            self._parse_with_aiohttp(data)
            return
        if self._force_close or self._close:
            return
        if self._lane_need:
            data = self._lane_feed(data)
            if not data:
                return
        buffer = self._lane_buffer
        if not buffer and data:
            # A head arriving while a request is served is timed by the idle timeout (as
            # aiohttp's pipelined requests are), not header_timeout.
            idle = self._lane_mode == _LANE and self._lane_idle()
            self._lane_pipelined = not idle
            if idle and self._lane_whole(data):
                return
        buffer += data
        if self._lane_mode == _LANE and self._lane_idle():
            self._lane_pump()
        elif len(buffer) > _LANE_BUFFER_LIMIT and not self._buffer_paused:
            self._pause_reading_for_buffer()

    def _resume_reading_for_buffer(self) -> None:
        # aiohttp's start() resumes reading as its own queue drains; the lane's hold on a
        # full buffer stands until the lane has consumed it.
        if self._lane_mode != _OFF and len(self._lane_buffer) > _LANE_BUFFER_LIMIT:
            return
        super()._resume_reading_for_buffer()

    def _parse_with_aiohttp(self, data: bytes) -> None:
        super().data_received(data)
        if self._header_timer is not None:
            if self._request_count != self._header_count:  # the headers are complete
                self._header_timer.cancel()
                self._header_timer = None
        elif not self._messages and self._awaiting_request():
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        timeout = getattr(self._manager, "header_timeout", None)
        if timeout and self._header_timer is None:
            self._header_count = self._request_count
            self._header_timer = self._loop.call_later(timeout, self._headers_expired)

    def _awaiting_request(self) -> bool:
        """No request is being handled: bytes now are a new request's headers."""
        waiter = self._waiter
        if waiter is not None:
            return not waiter.done()
        return self._request_count == 0  # the first request (before start() waits)

    def _headers_expired(self) -> None:
        self._header_timer = None
        if self._request_count != self._header_count or self._force_close or self._close:
            return
        timeout = self._manager.header_timeout
        body = dumps(
            {"error": f"Request headers not received within {timeout:g}s (header_timeout)"}
        )
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.write(_HEADER_TIMEOUT + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self._refused = True
        transport.write_eof()  # as for refused connections: let the client read the answer
        self._loop.call_later(1.0, self.force_close)

    def _process_keepalive(self) -> None:
        if self._header_timer is not None or not self._lane_idle():
            # Headers are arriving (header_timeout bounds them, not the idle timeout), or
            # the lane is serving a request while aiohttp looks idle.
            self._keepalive_handle = None
            return
        super()._process_keepalive()

    def connection_lost(self, exc) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if self._lane_linger is not None:
            self._lane_linger.cancel()
            self._lane_linger = None
        request, task = self._lane_request, self._lane_task
        cancel = self._manager is not None and self._manager.handler_cancellation
        if request is not None and self._lane_need and self._lane_sink == _COLLECT:
            request.body_failed(exc or ConnectionResetError("Connection lost"))
        super().connection_lost(exc)
        if cancel and task is not None:
            task.cancel()

    # -- the lane ----------------------------------------------------------------------------
    def _lane_idle(self) -> bool:
        """No request is being served or read, by the lane or by aiohttp for it."""
        return self._lane_request is None and not self._lane_need and not self._lane_resolving

    def _lane_pump(self, resolved: tuple | None = None) -> None:
        """Serves the requests waiting in the buffer, one at a time, while the lane reads
        (``resolved``: a path's route just looked up, remembered or not)."""
        lane = self._lane
        buffer = self._lane_buffer
        while self._lane_mode == _LANE and self._lane_idle():
            if not buffer or self._force_close or self._close or self.transport is None:
                break
            head = lane.head(buffer)
            if head is None:
                if not self._lane_pipelined:
                    self._arm_header_timer()
                break
            if head is REFUSE:
                self._hand_over()
                break
            if not head.hot:
                self._hand_one(head.size + head.length)
                break
            route = lane.cached_route(head.path)
            if route is None:
                if resolved is None or resolved[0] != head.path:  # look its route up first
                    self._lane_resolving = True
                    self._lane_task = self._loop.create_task(self._lane_resolve(head.path))
                    break
                route, resolved = resolved[1], None
                if route is None:  # the router sends it elsewhere (404, 405): aiohttp's
                    self._hand_one(head.size + head.length)
                    break
            self._lane_start(head, route)
        if self._buffer_paused and len(buffer) <= _LANE_BUFFER_LIMIT:
            self._resume_reading_for_buffer()

    async def _lane_resolve(self, path: str) -> None:
        try:
            found = await self._lane.route(path)
        except Exception:  # noqa: BLE001 - aiohttp's own router judges it, as for any path
            found = None
        finally:
            self._lane_resolving = False
            self._lane_task = None
        self._lane_pump((path, found))

    def _hand_over(self) -> None:
        """aiohttp's parser reads the connection from here on (the bytes held first)."""
        self._lane_mode = _OFF
        buffer = self._lane_buffer
        data = bytes(buffer)
        del buffer[:]
        if self._buffer_paused:
            self._resume_reading_for_buffer()
        if data:
            self._parse_with_aiohttp(data)

    def _hand_one(self, size: int) -> None:
        """aiohttp serves the next request, of ``size`` bytes; the lane waits for it."""
        self._lane_mode = _ONE
        buffer = self._lane_buffer
        first = bytes(buffer[:size])
        del buffer[:size]
        self._lane_pipelined = True  # what is left arrived with it
        self._lane_need, self._lane_sink = size - len(first), _FORWARD
        self._parse_with_aiohttp(first)

    def _lane_resume(self) -> None:
        if self._lane_mode != _ONE or self._waiter is None or self._waiter.done():
            return
        if self._messages or self._lane_need:  # not at a message boundary: aiohttp's now
            self._hand_over()
            return
        self._lane_mode = _LANE
        self._lane_pump()

    def _lane_whole(self, data: bytes) -> bool:
        """Serves ``data`` when it is one whole hot request of a known path (the common
        read), without copying it into the buffer; False when it is anything else."""
        head = self._lane.head(data)
        if head is None or head is REFUSE or not head.hot:
            return False
        if head.size + head.length != len(data):
            return False
        route = self._lane.cached_route(head.path)
        if route is None:
            return False
        self._lane_start(head, route, data)
        return True

    def _lane_start(self, head, route, whole: bytes | None = None) -> None:
        """Takes a hot request: its body (what has arrived, from the buffer or ``whole``),
        and a task serving it."""
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        self._request_count += 1
        self._manager.requests_count += 1
        self._lane.served += 1
        request = LaneRequest(self._lane.app, route[0], head, self.peername)
        buffer = self._lane_buffer
        end = head.size + head.length
        if whole is not None:  # the request is all of ``whole``; nothing is held
            request.body_arrived(whole[head.size :])
        elif len(buffer) >= end:
            with memoryview(buffer) as view:  # released: the buffer may resize again
                request.body_arrived(bytes(view[head.size : end]))
            del buffer[:end]
        else:
            self._lane_parts = [bytes(buffer[head.size :])]
            self._lane_need, self._lane_sink = end - len(buffer), _COLLECT
            del buffer[:]
        self._lane_pipelined = True  # what is left arrived with it
        self._lane_request = request
        self._request_in_progress = True  # aiohttp's shutdown waits for it
        coro = self._lane_serve(request, route)
        if not request.is_eof() or self._lane_eager:
            # A body still arriving is timed by read_body (a task's timeout); a request
            # pipelined behind one served eagerly starts a task rather than nesting deeper.
            self._lane_task = self._loop.create_task(coro)
            return
        self._lane_eager = True
        try:
            task = start_eagerly(self._loop, coro)
        except asyncio.CancelledError:  # its task cancelled within the step: closed already
            task = None
        finally:
            self._lane_eager = False
        if task is not None:  # it waits (on a compute thread, a batch): still in progress
            self._lane_task = task

    def _lane_feed(self, data: bytes) -> bytes:
        """Gives the current request's body bytes where they go; returns the rest."""
        need = self._lane_need
        chunk, rest = (data, b"") if len(data) <= need else (data[:need], data[need:])
        self._lane_need = need = need - len(chunk)
        sink = self._lane_sink
        if sink == _FORWARD:
            self._parse_with_aiohttp(chunk)
        elif sink == _COLLECT:
            self._lane_parts.append(chunk)
            if not need:
                body, self._lane_parts = b"".join(self._lane_parts), None
                self._lane_request.body_arrived(body)
        elif not need and self._lane_linger is not None:
            # The unread body is discarded: the connection reads on, or closes.
            self._lane_linger.cancel()
            self._lane_linger = None
            self._lane_next(not self._lane_close_after)
        return rest

    async def _lane_serve(self, request: LaneRequest, route: tuple) -> None:
        start = self._loop.time() if self._logging_enabled else None
        response = None
        keep_alive = sent = False
        try:
            try:
                response = await self._lane.serving(request, route[1])
            except web.HTTPException as e:  # a redirect, raised through the middleware
                response = e
            except Exception as exc:  # noqa: BLE001 - as aiohttp: logged, a 500, then closed
                self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
                response = web.Response(status=500, body=dumps({"error": "Internal server error"}))
                response.content_type = "application/json"
                response.force_close()
            if response.status != 404:  # a path naming something the server has
                self._lane.remember(request.path, route)
            try:
                keep_alive = await self._lane_write(request, response)
                sent = True
            except Exception as exc:  # noqa: BLE001 - as aiohttp's start(): logged, closed
                self.log_exception("Unhandled exception", exc_info=exc)
                self.force_close()
        except asyncio.CancelledError:
            # From the handler (a future cancelled by someone else) or this task cancelled
            # (the client left): as aiohttp's start(), the connection closes unanswered.
            self.force_close()
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return
        finally:
            self._request_in_progress = False
            waiter = self._handler_waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            self._lane_request = self._lane_task = None
            if self._lane_need and self._lane_sink == _COLLECT:
                self._lane_sink, self._lane_parts = _DISCARD, None
        if start is not None and sent:  # no line for an answer never sent (as aiohttp)
            self.log_access(request, response, start)
        if self._lane_need:  # linger over the unread body, as aiohttp does
            self._lane_close_after = not keep_alive
            self._lane_linger = self._loop.call_later(self._lingering_time, self.force_close)
            return
        self._lane_next(keep_alive)

    async def _lane_write(self, request: LaneRequest, response: web.StreamResponse) -> bool:
        """Writes ``response``; returns whether the connection stays open."""
        keep_alive = response._keep_alive  # (RESPONSE_MEMBERS: a StreamResponse's own)
        if keep_alive is None:
            keep_alive = request.keep_alive
        if not simple_response(response):
            return await self._lane_write_by_aiohttp(request, response)
        finish_headers(response, keep_alive)
        if self._lane.prepare_hooks:
            await self._lane.app.on_response_prepare.send(request, response)
        data = encode_response(response)
        transport = self.transport
        if transport is None or transport.is_closing():
            return False
        transport.write(data)
        response._body_length = len(data)  # what aiohttp's access log writes for %b
        if self.writing_paused:
            try:
                await self._drain_helper()
            except ConnectionError:  # the client went away: as aiohttp, nothing to log
                return False
        return keep_alive

    async def _lane_write_by_aiohttp(self, request: LaneRequest, response) -> bool:
        """A response the lane does not encode itself (compressed, streamed), written by
        aiohttp's own ``prepare`` for an aiohttp request made from the lane's."""
        headers = request.headers
        message = RawRequestMessage(
            request.method,
            request.path,
            HttpVersion11,
            headers,
            tuple((k.encode(), v.encode()) for k, v in headers.items()),
            not request.keep_alive,
            None,
            False,
            False,
            URL.build(path=request.path, encoded=True),
        )
        writer = StreamWriter(self, self._loop)
        task = asyncio.current_task()
        aiohttp_request = web.Request(message, EMPTY_PAYLOAD, self, writer, task, self._loop)
        aiohttp_request._match_info = request.match_info  # its on_response_prepare hooks
        try:
            await response.prepare(aiohttp_request)
            await response.write_eof()
        except ConnectionError:
            return False
        return bool(response.keep_alive)

    def _lane_next(self, keep_alive: bool) -> None:
        """After a request: close, or arm the idle timer (as aiohttp) and read on."""
        if not keep_alive or self._close:
            if self.transport is not None:
                self.transport.close()
            return
        if self._force_close:
            return
        close_time = self._loop.time() + self._keepalive_timeout
        self._next_keepalive_close_time = close_time
        if self._keepalive_handle is None:
            self._keepalive_handle = self._loop.call_at(close_time, self._process_keepalive)
        self._lane_pump()

    def handle_error(self, request, status=500, exc=None, message=None):
        text = super().handle_error(request, status, exc, message)  # logs, checks state
        if status >= 500:
            error = "Internal server error"
        else:
            error = f"Bad HTTP request: {message or getattr(exc, 'message', '') or status}"
        response = web.Response(status=status, body=dumps({"error": error}))
        response.content_type = "application/json"
        response.force_close()
        del text
        return response


class _Server(web_server.Server):
    """aiohttp's protocol factory, making ``_Connection`` handlers."""

    max_connections: int | None = None
    header_timeout: float | None = None
    lane: FastLane | None = None
    refused = 0

    def __call__(self) -> web_protocol.RequestHandler:
        return _Connection(self, loop=self._loop, **self._kwargs)


class HardenedRunner(web.AppRunner):
    """An ``AppRunner`` whose connections are capped at ``max_connections``, whose requests'
    headers must arrive within ``header_timeout`` seconds (None: no limit) and whose parser
    errors are JSON (the idle timeout is the app's ``handler_args``)."""

    def __init__(
        self,
        app: web.Application,
        *,
        max_connections: int,
        header_timeout: float | None = None,
        **kw: object,
    ) -> None:
        super().__init__(app, **kw)
        self._max_connections = max_connections
        self._header_timeout = header_timeout

    async def _make_server(self) -> web_server.Server:
        server = await super()._make_server()
        server.__class__ = _Server  # same state, our handler class
        server.max_connections = self._max_connections
        server.header_timeout = self._header_timeout
        lane = FastLane.of(self.app)
        if lane is not None:
            why = lane_unsupported()
            if why is not None:
                log.warning("The fast lane is off: %s; aiohttp serves every request", why)
                lane = None
        server.lane = lane
        return server
