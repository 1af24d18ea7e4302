"""``header_timeout`` is its own timer, apart from the idle keep-alive timeout: a request
whose headers do not arrive in time gets a JSON 408 and its connection closes, while idle
connections wait for ``idle_timeout``; and a connection sending headers is not closed by the
idle timer. Ordering-based, against the real runner on loopback (no timing thresholds)."""

import asyncio
import contextlib
import json

import pytest
from aiohttp import web

from service.app import create_app
from service.config import ServerConfig
from service.http import HardenedRunner
from tests.service import hostile

GET = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"


@contextlib.asynccontextmanager
async def serving(tmp_path, idle_timeout, header_timeout):
    config = ServerConfig(
        model_repository=str(tmp_path),
        poll_interval=0,
        port=0,
        idle_timeout=idle_timeout,
        header_timeout=header_timeout,
    ).validate()
    runner = HardenedRunner(
        create_app(config), max_connections=100, header_timeout=config.header_timeout
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        await runner.cleanup()


async def read_response(reader) -> tuple[int, dict, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status, headers, _ = hostile.split_response(head)
    body = await reader.readexactly(int(headers["content-length"]))
    return status, headers, body


async def test_slow_headers_get_408_while_idle_connections_stay(tmp_path):
    async with serving(tmp_path, idle_timeout=600, header_timeout=0.3) as port:
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n")  # never finished
        await writer.drain()
        async with asyncio.timeout(30):
            status, headers, body = await read_response(reader)
            assert status == 408 and headers["content-type"] == "application/json"
            assert "header_timeout" in json.loads(body)["error"]
            assert await reader.read() == b""  # and closed
        # The idle connection, open all along, outlived it and is served.
        idle_writer.write(GET)
        async with asyncio.timeout(30):
            status, _, body = await read_response(idle_reader)
        assert status == 200 and json.loads(body) == {"live": True}
        # A second request on it gets a fresh header timer: complete headers are served.
        idle_writer.write(GET)
        async with asyncio.timeout(30):
            assert (await read_response(idle_reader))[0] == 200
        for w in (writer, idle_writer):
            w.close()


async def test_idle_timer_does_not_cut_headers_in_progress(tmp_path):
    async with serving(tmp_path, idle_timeout=0.3, header_timeout=600) as port:
        slow_reader, slow_writer = await asyncio.open_connection("127.0.0.1", port)
        slow_writer.write(b"GET /v2/health/live HTTP/1.1\r\n")
        await slow_writer.drain()
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
        async with asyncio.timeout(30):
            assert await idle_reader.read() == b""  # the idle one is closed ...
        slow_writer.write(b"Host: x\r\n\r\n")  # ... the one sending headers is not
        async with asyncio.timeout(30):
            status, _, body = await read_response(slow_reader)
        assert status == 200 and json.loads(body) == {"live": True}
        # Idle again after its response: now the idle timeout closes it.
        async with asyncio.timeout(30):
            assert await slow_reader.read() == b""
        for w in (slow_writer, idle_writer):
            w.close()


@pytest.mark.parametrize("value", [0, -1, 10**9])
def test_header_timeout_is_bounded(tmp_path, value):
    from service.config import ConfigError

    with pytest.raises(ConfigError, match="header_timeout"):
        ServerConfig(model_repository=str(tmp_path), header_timeout=value).validate()
