"""What every gRPC service adapter shares: bearer auth from metadata, core errors as gRPC
status codes, and request metrics (``protocol="grpc"``, ``code``: the HTTP status the same
outcome has over REST, so one dashboard reads both transports)."""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable

import grpc
from google.protobuf.message import Message

from service.errors import ServingError
from service.manager import ModelManager
from service.metrics import ServingMetrics

__all__ = ["GrpcService", "status_code", "GRPC_PROTOCOL", "serialize"]

GRPC_PROTOCOL = "grpc"
# A unary handler: (request, context) -> response.
Handler = Callable[[Message, grpc.aio.ServicerContext], Awaitable[Message]]


def status_code(error: ServingError) -> grpc.StatusCode:
    """The gRPC status code of a core error (its canonical code name)."""
    return getattr(grpc.StatusCode, error.code, grpc.StatusCode.INTERNAL)


def serialize(message: Message) -> bytes:
    return message.SerializeToString()


class GrpcService:
    """Base of the service adapters: ``unary(fn)`` wraps a handler with auth and errors."""

    def __init__(
        self,
        manager: ModelManager,
        metrics: ServingMetrics | None = None,
        auth_token: str | None = None,
    ):
        self.manager = manager
        self.metrics = metrics
        self._expected_auth = f"Bearer {auth_token}".encode() if auth_token else None

    async def check_auth(self, context: grpc.aio.ServicerContext) -> None:
        if self._expected_auth is None:
            return
        given = dict(context.invocation_metadata()).get("authorization", "")
        if not hmac.compare_digest(str(given).encode(), self._expected_auth):
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "Missing or invalid bearer token (send metadata 'authorization: Bearer <token>')",
            )

    def unary(self, fn: Handler) -> Handler:
        async def call(request, context):
            await self.check_auth(context)
            try:
                return await fn(request, context)
            except ServingError as e:
                await context.abort(status_code(e), e.message)

        return call

    def method(self, fn: Handler, request_type: type[Message]) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(
            self.unary(fn),
            request_deserializer=request_type.FromString,
            response_serializer=serialize,
        )

    def observe(
        self,
        model: str,
        version: int | str | None,
        status: int,
        start: float,
        endpoint: str = "infer",
    ) -> None:
        """Counts one RPC in the shared request metrics (``endpoint`` as REST labels it);
        only names the repository knows become labels."""
        if self.metrics is not None:
            model, version = self.manager.known_labels(model, str(version or ""))
            self.metrics.observe_request(
                model,
                version,
                GRPC_PROTOCOL,
                status,
                time.perf_counter() - start,
                endpoint=endpoint,
            )
