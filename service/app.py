"""The aiohttp application: routes, middlewares and the model manager's lifetime.

``create_app(config)`` builds it. Middlewares give every request an ID (``X-Request-ID``,
echoed on every response and in every log line), turn every error into a JSON
``{"error": ...}`` body with the right status, check the bearer token (health and metrics stay
open), and record metrics (by endpoint) and the access log. The manager starts and stops in
one ``cleanup_ctx``; with ``load_in_background`` the app starts (and its listeners open)
before the first repository scan, and models load behind it.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import time

from aiohttp import web

from service import console, tracing
from service.config import ServerConfig
from service.errors import ServingError
from service.fastlane import SERVING
from service.keys import (
    CONFIG,
    ENDPOINT,
    LOG_SETTINGS,
    MANAGER,
    METRICS,
    MODEL,
    PROTOCOL,
    REQUEST_ID,
    SHARED_MEMORY,
    TRACE_SETTINGS,
    VERSION,
)
from service.log_settings import LogSettings
from service.logs import REQUEST_ID_HEADER, accept_request_id, new_request_id, request_id_var
from service.manager import ModelManager
from service.metrics import CONTENT_TYPE, ServingMetrics
from service.protocols import kserve_v2, tfserving
from service.protocols.common import BODY_TIMEOUT, MAX_BODY, json_response
from service.protocols.shared_memory import SharedMemoryRegistry
from service.trace_settings import TraceSettings

__all__ = ["create_app", "metrics_app", "in_flight_requests", "endpoint_of"]

log = logging.getLogger("flowserve.app")

LOAD_IN_BACKGROUND = web.AppKey("load_in_background", bool)
# Requests being handled right now, all endpoints (a one-element list: the app is frozen
# once started, its contents are not).
IN_FLIGHT = web.AppKey("in_flight", list)

_OPEN_PATHS = frozenset(["/v2/health/live", "/v2/health/ready", "/metrics"])


@web.middleware
async def _errors(request: web.Request, handler):
    try:
        return await handler(request)
    except Exception as e:  # noqa: BLE001 - every error answers with JSON (bugs are logged)
        return _error_response(request, e)


def _error_response(request: web.Request, e: Exception) -> web.Response:
    """The JSON answer to an exception a handler raised; HTTP exceptions below 400 (redirects)
    are raised again."""
    if isinstance(e, ServingError):
        return json_response({"error": e.message}, status=e.http_status)
    if isinstance(e, web.HTTPException):
        if e.status < 400:
            raise e
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
    log.exception("unhandled error serving %s %s", request.method, request.path, exc_info=e)
    return json_response({"error": "Internal server error"}, status=500)


def _auth_refusal(request: web.Request, token: str, expected: bytes) -> web.Response | None:
    """The 401 answer to a request without the bearer token (or the console's cookie), or
    None when it may pass (health and metrics stay open); a browser asking for the console
    page is redirected to its login form instead (raised)."""
    path = request.path
    if path in _OPEN_PATHS or path == console.LOGIN_PATH:
        return None
    # The scheme is case-insensitive (RFC 9110); the header may hold any bytes, which
    # aiohttp hands over surrogate-escaped: compare bytes, never decode.
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    given = credentials.strip().encode("utf-8", "surrogateescape")
    header_ok = scheme.lower() == "bearer" and hmac.compare_digest(given, expected)
    if header_ok or console.authorized_by_cookie(request, token):
        return None
    console.login_redirect(request)
    return json_response(
        {"error": "Missing or invalid bearer token (send 'Authorization: Bearer <token>')"},
        status=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


def _auth(token: str):
    expected = token.encode("utf-8")

    @web.middleware
    async def auth(request: web.Request, handler):
        refusal = _auth_refusal(request, token, expected)
        if refusal is not None:
            return refusal
        return await handler(request)

    return auth


class _Budget:
    """The requests and request-body bytes being handled at once, against the limits:
    refuses a declared body over the size limit before reading it (413), and sheds load
    past the global in-flight budget (503 with Retry-After). A body whose size is not known
    up front (chunked, or compressed) counts as ``max_request_bytes``."""

    def __init__(self, max_requests: int, max_bytes: int, max_request_bytes: int = 0):
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.max_request_bytes = max_request_bytes
        self.requests = 0
        self.bytes = 0

    def try_take(self, nbytes: int) -> str | None:
        """Takes one request of ``nbytes``; or says which limit it would exceed."""
        if self.max_requests and self.requests >= self.max_requests:
            return f"{self.requests} requests are in flight (max_inflight_requests)"
        if self.max_bytes and self.requests and self.bytes + nbytes > self.max_bytes:
            return f"{self.bytes} request bytes are in flight (max_inflight_bytes)"
        self.requests += 1
        self.bytes += nbytes
        return None

    def give(self, nbytes: int) -> None:
        self.requests -= 1
        self.bytes -= nbytes

    def admit(self, request: web.Request) -> tuple[web.Response | None, int]:
        """(the 413 or 503 answer, 0) for a request refused; (None, the bytes taken, to
        ``give`` back when it is done) for one admitted."""
        length = request.content_length
        limit = self.max_request_bytes
        if length is not None and length > limit:
            response = json_response(
                {
                    "error": f"Request body too large: Content-Length {length} is over the "
                    f"limit of {limit} bytes (max_request_bytes)"
                },
                status=413,
            )
            response.force_close()  # the body is not read, so the connection is unusable
            return response, 0
        if not request.body_exists:
            nbytes = 0
        elif length is None or request.headers.get("Content-Encoding", "identity") != "identity":
            nbytes = limit
        else:
            nbytes = length
        refused = self.try_take(nbytes)
        if refused is None:
            return None, nbytes
        response = json_response(
            {"error": f"Server busy: {refused}; retry shortly"},
            status=503,
            headers={"Retry-After": "1"},
        )
        if request.body_exists:
            response.force_close()
        return response, 0


def _limits(budget: _Budget):
    """The in-flight budget as a middleware (``_Budget``)."""

    @web.middleware
    async def limits(request: web.Request, handler):
        if request.path in _OPEN_PATHS:
            return await handler(request)
        refusal, nbytes = budget.admit(request)
        if refusal is not None:
            return refusal
        try:
            return await handler(request)
        finally:
            budget.give(nbytes)

    return limits


# (method or "*", path pattern) -> endpoint label; first match wins. Fixed values keep the
# label bounded whatever paths clients send.
_ENDPOINTS = [
    ("POST", re.compile(r"^/v1/models/.*:predict$"), "predict"),
    ("POST", re.compile(r"^/v1/models/.*:(classify|regress)$"), "predict"),
    ("GET", re.compile(r"^/v1/models/.*/metadata$"), "metadata"),
    ("GET", re.compile(r"^/v1/models/"), "status"),
    ("POST", re.compile(r"^/v2/models/.*/infer$"), "infer"),
    ("GET", re.compile(r"^/v2/health/"), "health"),
    ("GET", re.compile(r"^/v2/models/.*/ready$"), "health"),
    ("GET", re.compile(r"^/v2/models/.*/config$"), "config"),
    ("GET", re.compile(r"^/v2(/models/[^/]+(/versions/[^/]+)?)?$"), "metadata"),
    ("*", re.compile(r"^/v2/repository/"), "repository"),
    ("GET", re.compile(r"^/metrics$"), "metrics"),
]


def endpoint_of(method: str, path: str) -> str:
    """The ``endpoint`` metrics label of a request: infer, predict, metadata, status,
    health, config, repository, metrics, or other."""
    for m, pattern, name in _ENDPOINTS:
        if (m == "*" or m == method) and pattern.match(path):
            return name
    return "other"


def _protocol_of(path: str) -> str:
    if path.startswith("/v1/"):
        return "tfserving"
    if path.startswith("/v2"):
        return "v2"
    return ""


@web.middleware
async def _front(request: web.Request, handler):
    """Outermost (with tracing on): the request's ID (in the log context and on every
    response), the count of requests in flight, and the request's metrics with the final
    status of every response, errors included."""
    request_id, token = _start(request)
    counter = request.app[IN_FLIGHT]
    counter[0] += 1
    start = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
    except web.HTTPException as e:
        status = e.status
        e.headers[REQUEST_ID_HEADER] = request.get(REQUEST_ID, request_id)
        raise
    finally:
        counter[0] -= 1
        request_id_var.reset(token)
        _observe(request, status, time.perf_counter() - start)
    # A handler may adopt an ID from the body (V2's "id") when no header was sent.
    response.headers[REQUEST_ID_HEADER] = request.get(REQUEST_ID, request_id)
    return response


def _start(request: web.Request):
    """Gives the request its ID: (the ID, the log context's token to reset)."""
    request_id = accept_request_id(request.headers.get(REQUEST_ID_HEADER)) or new_request_id()
    request[REQUEST_ID] = request_id
    return request_id, request_id_var.set(request_id)


def _serving(
    budget: _Budget,
    counter: list,
    token: str | None,
    manager: ModelManager,
    metrics: ServingMetrics,
):
    """The middlewares of a server without tracing in one: ``_front``, ``_errors``, the
    bearer token check (when ``token`` is set) and the in-flight budget, in that order,
    with the behaviour of each. One layer instead of four: each costs a coroutine and a
    call per request."""
    expected = token.encode("utf-8") if token else b""

    @web.middleware
    async def serving(request: web.Request, handler):
        # _start, inline (a frame less on every request)
        given = request.headers.get(REQUEST_ID_HEADER)
        request_id = (given is not None and accept_request_id(given)) or new_request_id()
        request[REQUEST_ID] = request_id
        context = request_id_var.set(request_id)
        counter[0] += 1
        start = time.perf_counter()
        status = 500
        try:
            try:
                response = None
                if token:
                    response = _auth_refusal(request, token, expected)
                if response is None:
                    if request.path in _OPEN_PATHS:
                        response = await handler(request)
                    else:
                        response, nbytes = budget.admit(request)
                        if response is None:
                            try:
                                response = await handler(request)
                            finally:
                                budget.give(nbytes)
            except Exception as e:  # noqa: BLE001 - as _errors: every error answers in JSON
                response = _error_response(request, e)
            status = response.status
        except web.HTTPException as e:  # a redirect, raised again by _error_response
            status = e.status
            e.headers[REQUEST_ID_HEADER] = request.get(REQUEST_ID, request_id)
            raise
        finally:
            counter[0] -= 1
            request_id_var.reset(context)
            _observe(request, status, time.perf_counter() - start, manager, metrics)
        # A handler may adopt an ID from the body (V2's "id") when no header was sent.
        response.headers[REQUEST_ID_HEADER] = request.get(REQUEST_ID, request_id)
        return response

    return serving


def _observe(
    request: web.Request,
    status: int,
    seconds: float,
    manager: ModelManager | None = None,
    metrics: ServingMetrics | None = None,
) -> None:
    """Counts a finished request (``manager`` and ``metrics``: the app's, if known)."""
    path = request.path
    endpoint = (
        request.get(ENDPOINT)
        or _ENDPOINT_CACHE.get((request.method, path))
        or _endpoint_cached(request.method, path)
    )
    # Only names the repository knows become labels: names from URLs are unbounded.
    model, version = (manager or request.app[MANAGER]).known_labels(
        request.get(MODEL, ""), request.get(VERSION, "")
    )
    (metrics or request.app[METRICS]).observe_request(
        model,
        version,
        request.get(PROTOCOL) or _protocol_of(path),
        status,
        seconds,
        endpoint=endpoint,
    )


_ENDPOINT_CACHE: dict[tuple[str, str], str] = {}
_ENDPOINT_CACHE_SIZE = 4096  # paths come from clients: the cache stops growing here


def _endpoint_cached(method: str, path: str) -> str:
    """``endpoint_of``, remembered for the paths seen first (a few regular expressions a
    request otherwise)."""
    key = (method, path)
    endpoint = _ENDPOINT_CACHE.get(key)
    if endpoint is None:
        endpoint = endpoint_of(method, path)
        if len(_ENDPOINT_CACHE) < _ENDPOINT_CACHE_SIZE:
            _ENDPOINT_CACHE[key] = endpoint
    return endpoint


async def _metrics_handler(request: web.Request) -> web.Response:
    # Rendering walks every series: off the event loop, so a scrape never stalls requests.
    loop = asyncio.get_running_loop()
    body = await loop.run_in_executor(None, request.app[METRICS].render)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def _manager_ctx(app: web.Application):
    manager = app[MANAGER]
    await manager.start(wait=not app[LOAD_IN_BACKGROUND])
    yield
    await manager.stop()
    app[SHARED_MEMORY].close()  # unmap every registered region


def in_flight_requests(app: web.Application) -> int:
    """Requests ``app`` is handling right now (every endpoint)."""
    return app[IN_FLIGHT][0]


def metrics_app(app: web.Application) -> web.Application:
    """An application serving only ``GET /metrics`` of ``app`` (for ``--metrics-port``)."""
    side = web.Application(middlewares=[_errors])
    side[CONFIG] = app[CONFIG]
    side[METRICS] = app[METRICS]
    side.router.add_get("/metrics", _metrics_handler)
    return side


def create_app(
    config: ServerConfig,
    manager: ModelManager | None = None,
    *,
    load_in_background: bool = False,
) -> web.Application:
    """The server application for ``config`` (validated by the caller or here).

    ``load_in_background``: the app starts before the first repository scan and models
    load behind it (the ``flowserve`` command); otherwise starting it waits until the
    first scan's models have loaded (convenient in tests and embedding)."""
    worker = config.worker  # a worker process of --workers N, or None
    if manager is not None and manager.metrics is not None:
        metrics = manager.metrics
    else:
        metrics = ServingMetrics(worker.metrics_dir if worker is not None else None)
    # Outermost first: the request ID reaches every response; metrics see the final status
    # of every response, errors included.
    manager = manager or ModelManager(config, metrics)
    budget = _Budget(
        config.max_inflight_requests, config.max_inflight_bytes, config.max_request_bytes
    )
    counter = [0]
    if tracing.active(refresh=True):  # a tracer provider is set (flowserve's main does it)
        middlewares = [_front, tracing.middleware, _errors]
        if config.auth_token:
            middlewares.append(_auth(config.auth_token))
        middlewares.append(_limits(budget))
    else:
        middlewares = [_serving(budget, counter, config.auth_token, manager, metrics)]
    app = web.Application(
        client_max_size=config.max_request_bytes,
        middlewares=middlewares,
        handler_args={
            # An idle connection closes after idle_timeout (headers in progress have
            # header_timeout instead: service.http); an unread refused body is drained for
            # at most a second (so the client can read the answer), not aiohttp's ten.
            "keepalive_timeout": config.idle_timeout,
            "lingering_time": 1.0,
            # Bodies are decompressed by read_body (bounded, every error a 4xx).
            "auto_decompress": False,
        },
    )
    app[CONFIG] = config
    app[BODY_TIMEOUT] = config.body_timeout
    app[MAX_BODY] = config.max_request_bytes
    app[METRICS] = metrics
    app[MANAGER] = manager
    app[LOAD_IN_BACKGROUND] = load_in_background
    app[IN_FLIGHT] = counter
    if config.fast_lane and len(middlewares) == 1:  # not with tracing: it needs aiohttp's
        app[SERVING] = middlewares[0]  # the lane's requests go through the same middleware
    app[SHARED_MEMORY] = SharedMemoryRegistry()
    app[LOG_SETTINGS] = LogSettings(config.log_format)
    app[TRACE_SETTINGS] = TraceSettings(tracing_active=tracing.active())
    if worker is not None:  # per-process state: refuse changes rather than diverge
        app[SHARED_MEMORY].refusal = worker.refuse("System shared memory registration")
        app[LOG_SETTINGS].refusal = worker.refuse("Changing the log settings")
        app[TRACE_SETTINGS].refusal = worker.refuse("Changing the trace settings")
    app.cleanup_ctx.append(_manager_ctx)
    app.router.add_get("/metrics", _metrics_handler)
    if config.prometheus_path and config.prometheus_path != "/metrics":
        app.router.add_get(config.prometheus_path, _metrics_handler)
    tfserving.add_routes(app)
    kserve_v2.add_routes(app)
    if config.console:
        console.add_routes(app)
    return app
