"""A real flowserve server (HTTP and gRPC, on free local ports) run by its own event loop in a
thread, for tests that drive it with blocking clients (tritonclient, gRPC stubs)."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from service.app import create_app
from service.config import ServerConfig
from service.protocols.grpc_server import GrpcServer


class ServerThread:
    """``with ServerThread(config) as s``: ``s.port`` (HTTP) and ``s.grpc_port`` are bound."""

    def __init__(self, config: ServerConfig):
        self.config = config
        self.port: int | None = None
        self.grpc_port: int | None = None
        self.app: web.Application | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="flowserve-test", daemon=True)

    def __enter__(self) -> ServerThread:
        self._thread.start()
        if not self._started.wait(60):
            raise RuntimeError("the server did not start within 60s")
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    def call(self, coro, timeout: float = 60):
        """Runs ``coro`` on the server's loop and returns its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as e:  # reported to the starting thread
            self._error = e
            self._started.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self.app = create_app(self.config)
        runner = web.AppRunner(self.app)
        await runner.setup()
        grpc_server = GrpcServer(self.app)
        try:
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            self.port = runner.addresses[0][1]
            self.grpc_port = await grpc_server.start("127.0.0.1", 0)
            self._started.set()
            await self._stop.wait()
        finally:
            await grpc_server.stop(5)
            await runner.cleanup()
