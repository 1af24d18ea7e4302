"""The aiohttp application: routes, middlewares and the model manager's lifetime.

``create_app(config)`` builds it. Middlewares turn every error into a JSON ``{"error": ...}``
body with the right status, check the bearer token (health and metrics stay open), and record
metrics and the access log. The manager starts and stops in one ``cleanup_ctx``.
"""

from __future__ import annotations

import hmac
import logging
import time

from aiohttp import web

from service import console
from service.config import ServerConfig
from service.errors import ServingError
from service.keys import CONFIG, MANAGER, METRICS, MODEL, PROTOCOL, VERSION
from service.manager import ModelManager
from service.metrics import CONTENT_TYPE, ServingMetrics
from service.protocols import kserve_v2, tfserving
from service.protocols.common import json_response

__all__ = ["create_app"]

log = logging.getLogger("flowserve.app")

_OPEN_PATHS = frozenset(["/v2/health/live", "/v2/health/ready", "/metrics"])


@web.middleware
async def _errors(request: web.Request, handler):
    try:
        return await handler(request)
    except ServingError as e:
        return json_response({"error": e.message}, status=e.http_status)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        message = {
            404: "Not found: no route for " + request.method + " " + request.path,
            405: f"Method {request.method} is not allowed for {request.path}",
            413: f"Request body too large (the limit is "
            f"{request.app[CONFIG].max_request_bytes} bytes)",
        }.get(e.status, e.reason or "error")
        if e.text and e.status not in (404, 405, 413) and not e.text.startswith(str(e.status)):
            message = e.text
        headers = {k: v for k, v in e.headers.items() if k.lower() in ("allow", "www-authenticate")}
        return json_response({"error": message}, status=e.status, headers=headers)
    except Exception:  # noqa: BLE001 - a bug must still answer with JSON, and be logged
        log.exception("unhandled error serving %s %s", request.method, request.path)
        return json_response({"error": "Internal server error"}, status=500)


def _auth(token: str):
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def auth(request: web.Request, handler):
        if request.path not in _OPEN_PATHS and request.path != console.LOGIN_PATH:
            given = request.headers.get("Authorization", "").encode()
            if not (
                hmac.compare_digest(given, expected) or console.authorized_by_cookie(request, token)
            ):
                console.login_redirect(request)
                return json_response(
                    {
                        "error": "Missing or invalid bearer token (send "
                        "'Authorization: Bearer <token>')"
                    },
                    status=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await handler(request)

    return auth


@web.middleware
async def _observe(request: web.Request, handler):
    start = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as e:
        status = e.status
        raise
    finally:
        protocol = request.get(PROTOCOL)
        if protocol is not None:
            request.app[METRICS].observe_request(
                request.get(MODEL, ""),
                request.get(VERSION, ""),
                protocol,
                status,
                time.perf_counter() - start,
            )


async def _metrics_handler(request: web.Request) -> web.Response:
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE})


async def _manager_ctx(app: web.Application):
    manager = app[MANAGER]
    await manager.start()
    yield
    await manager.stop()


def create_app(config: ServerConfig, manager: ModelManager | None = None) -> web.Application:
    """The server application for ``config`` (validated by the caller or here)."""
    metrics = ServingMetrics() if manager is None or manager.metrics is None else manager.metrics
    # Outermost first: metrics see the final status of every response, errors included.
    middlewares = [_observe, _errors]
    if config.auth_token:
        middlewares.append(_auth(config.auth_token))
    app = web.Application(client_max_size=config.max_request_bytes, middlewares=middlewares)
    app[CONFIG] = config
    app[METRICS] = metrics
    app[MANAGER] = manager or ModelManager(config, metrics)
    app.cleanup_ctx.append(_manager_ctx)
    app.router.add_get("/metrics", _metrics_handler)
    tfserving.add_routes(app)
    kserve_v2.add_routes(app)
    if config.console:
        console.add_routes(app)
    return app
