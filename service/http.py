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
  ...) is answered ``{"error": ...}`` with its 4xx status, as every other error is.
"""

from __future__ import annotations

import logging

from aiohttp import web, web_protocol, web_server

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


class _Connection(web_protocol.RequestHandler):
    """One client connection: refused beyond the cap; parser errors answered in JSON."""

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

    _refused = False
    _header_timer = None  # armed while a request's headers are arriving
    _header_count = 0  # requests parsed when it was armed

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self._header_timer is not None:
            if self._request_count != self._header_count:  # the headers are complete
                self._header_timer.cancel()
                self._header_timer = None
        elif not self._messages and self._awaiting_request():
            timeout = getattr(self._manager, "header_timeout", None)
            if timeout:
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
        if self._header_timer is not None:
            # Headers are arriving: header_timeout bounds them, not the idle timeout.
            self._keepalive_handle = None
            return
        super()._process_keepalive()

    def connection_lost(self, exc) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

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
        return server
