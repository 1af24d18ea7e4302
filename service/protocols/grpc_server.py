"""The gRPC server: ``grpc.aio`` on the HTTP server's event loop, over the same app state.

``GrpcServer(app)`` serves the app's manager, metrics, auth token and shared memory regions
through every gRPC service on one port: KServe V2 (``inference.GRPCInferenceService``) and TF
Serving's ``tensorflow.serving.PredictionService``/``ModelService``. ``start`` binds and returns the
port (``0`` asks the OS for a free one); ``stop`` stops accepting calls and lets in-flight ones
finish within a grace period. The CLI starts it after the HTTP app (so the manager is running)
and stops it first.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import grpc
from aiohttp import web

from service.config import ServerConfig
from service.keys import CONFIG, LOG_SETTINGS, MANAGER, METRICS, SHARED_MEMORY, TRACE_SETTINGS
from service.protocols.grpc_kserve import KServeGrpc
from service.protocols.grpc_tfserving import TFServingGrpc

__all__ = ["GrpcServer", "server_options"]

log = logging.getLogger("flowserve.grpc")


def server_options(config: ServerConfig, reuse_port: bool = False) -> list[tuple[str, int]]:
    """gRPC channel arguments from the server configuration; ``reuse_port``: share the
    port with other processes (the workers of ``--workers N``)."""
    options = [
        ("grpc.max_receive_message_length", config.grpc_max_message_bytes),
        ("grpc.max_send_message_length", config.grpc_max_message_bytes),
        ("grpc.so_reuseport", 1 if reuse_port else 0),
    ]
    if config.grpc_keepalive_seconds > 0:
        options += [
            ("grpc.keepalive_time_ms", int(config.grpc_keepalive_seconds * 1000)),
            ("grpc.keepalive_timeout_ms", int(config.grpc_keepalive_timeout_seconds * 1000)),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
        ]
    return options


class GrpcServer:
    """Every gRPC service of one app, on one port."""

    def __init__(
        self,
        app: web.Application,
        reload_models: Callable[[list], Awaitable[None]] | None = None,
        reuse_port: bool = False,
    ):
        config = app[CONFIG]
        self.config = config
        self.reuse_port = reuse_port
        self.kserve = KServeGrpc(
            app[MANAGER],
            app[METRICS],
            app[SHARED_MEMORY],
            auth_token=config.auth_token,
            log_settings=app[LOG_SETTINGS],
            trace_settings=app[TRACE_SETTINGS],
        )
        self.tfserving = TFServingGrpc(
            app[MANAGER],
            app[METRICS],
            auth_token=config.auth_token,
            max_tensor_bytes=config.grpc_max_message_bytes,
            reload_models=reload_models,
        )
        self._handlers = [self.kserve.handler(), *self.tfserving.handlers()]
        self._server: grpc.aio.Server | None = None
        self.port: int | None = None

    async def start(self, host: str, port: int) -> int:
        """Binds ``host:port`` and starts serving; the bound port."""
        server = grpc.aio.server(options=server_options(self.config, self.reuse_port))
        server.add_generic_rpc_handlers(self._handlers)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        credentials = self.config.grpc_credentials()
        try:
            if credentials is None:
                bound = server.add_insecure_port(address)
            else:
                key, chain, ca = credentials
                bound = server.add_secure_port(
                    address,
                    grpc.ssl_server_credentials(
                        [(key, chain)], root_certificates=ca, require_client_auth=ca is not None
                    ),
                )
        except RuntimeError as e:  # grpc reports a port in use this way
            raise OSError(f"cannot listen for gRPC on {address}: {e}") from None
        if not bound:
            raise OSError(f"cannot listen for gRPC on {address}")
        await server.start()
        self._server, self.port = server, bound
        log.info(
            "flowserve gRPC listening on %s:%d%s", host, bound, " (TLS)" if credentials else ""
        )
        return bound

    async def stop(self, grace: float) -> None:
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
