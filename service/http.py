"""The HTTP server's own defences, below the application: a connection cap, idle and
half-sent-header timeouts, and JSON bodies for the errors aiohttp's parser answers itself.

``HardenedRunner`` is an ``AppRunner`` whose protocol factory makes ``_Connection`` handlers:

- at most ``max_connections`` connections are open; one more gets a JSON 503 with
  ``Retry-After`` and is closed, so a flood of idle sockets cannot starve the process of file
  descriptors while the ones it holds time out;
- ``idle_timeout`` (set by ``create_app`` as aiohttp's keep-alive timer, armed from the
  moment a connection opens): a connection that has not completed a request's headers within
  it (idle, or sending its headers byte by byte) is closed;
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

    def data_received(self, data: bytes) -> None:
        if not self._refused:
            super().data_received(data)

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
    refused = 0

    def __call__(self) -> web_protocol.RequestHandler:
        return _Connection(self, loop=self._loop, **self._kwargs)


class HardenedRunner(web.AppRunner):
    """An ``AppRunner`` whose connections are capped at ``max_connections`` and whose parser
    errors are JSON (the idle timeout is the app's ``handler_args``)."""

    def __init__(self, app: web.Application, *, max_connections: int, **kw: object) -> None:
        super().__init__(app, **kw)
        self._max_connections = max_connections

    async def _make_server(self) -> web_server.Server:
        server = await super()._make_server()
        server.__class__ = _Server  # same state, our handler class
        server.max_connections = self._max_connections
        return server
