"""The floor for the HTTP path: a bare aiohttp handler that parses the same JSON request as
the server's predict endpoint and answers a precomputed response of the same size.

``--raw`` swaps aiohttp for a bare ``asyncio.Protocol`` doing the least HTTP/1.1 work the
same exchange needs (the head split at its blank line, a Content-Length body, the same JSON
parse, a fixed reply in one write, keep-alive): the floor below aiohttp's web layer, which
the server's fast lane (``service/fastlane.py``) aims at.

    python bench/bare_server.py --port 9000 --response-file response.json [--raw]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from email.utils import formatdate
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service.protocols.common import parse_json  # noqa: E402 - the server's own JSON parser


def make_app(response_body: bytes) -> web.Application:
    async def predict(request: web.Request) -> web.Response:
        doc = parse_json(await request.read())  # the same parsing work as the server
        if "instances" not in doc and "inputs" not in doc:
            return web.json_response({"error": "bad request"}, status=400)
        return web.Response(body=response_body, content_type="application/json")

    async def ready(_request: web.Request) -> web.Response:
        return web.json_response({"ready": True})

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/models/{tail:.*}", predict)
    app.router.add_post("/v2/models/{tail:.*}", predict)  # the V2 JSON body, same reply
    app.router.add_get("/v2/health/ready", ready)
    return app


def _reply(status: bytes, body: bytes) -> bytes:
    head = (
        b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nDate: %s\r\nServer: bare\r\n\r\n"
    ) % (len(body), formatdate(usegmt=True).encode())
    return head + body


class RawFloor(asyncio.Protocol):
    """One connection of the raw floor: requests in order, each answered in one write."""

    def __init__(self, response_body: bytes):
        self.response_body = response_body
        self.buffer = b""
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buffer[:end].split(b"\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if len(buffer) < end + 4 + length:
                break
            body = buffer[end + 4 : end + 4 + length]
            buffer = buffer[end + 4 + length :]
            if head[0].startswith(b"GET /v2/health/ready "):
                self.transport.write(_reply(b"200 OK", b'{"ready":true}'))
                continue
            doc = parse_json(body)
            if "instances" not in doc and "inputs" not in doc:
                self.transport.write(_reply(b"400 Bad Request", b'{"error":"bad request"}'))
            else:
                self.transport.write(_reply(b"200 OK", self.response_body))
        self.buffer = buffer


async def _serve_raw(port: int, body: bytes) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: RawFloor(body), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--response-file", required=True)
    parser.add_argument("--raw", action="store_true", help="a bare asyncio.Protocol, no aiohttp")
    args = parser.parse_args()
    with open(args.response_file, "rb") as f:
        body = f.read()
    if args.raw:
        asyncio.run(_serve_raw(args.port, body))
        return
    web.run_app(make_app(body), host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
