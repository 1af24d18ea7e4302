"""OpenTelemetry tracing (the optional ``otel`` extra), configured by the standard ``OTEL_*``
environment variables.

Each HTTP request is a SERVER span continuing the caller's W3C ``traceparent`` (the
propagators of ``OTEL_PROPAGATORS``, W3C trace context by default). Under it: ``parse``
(request body to tensors), ``queue_wait`` (time in the batching queue), ``batch`` (one per
executed batch, linked to every request it carries, with ``session_run`` under it), or
``session_run`` directly without batching, and ``encode`` (tensors to the response body).
Spans carry ``flowserve.model``, ``flowserve.version`` and ``flowserve.batch_size``.

Without the ``opentelemetry`` packages, or with them but no tracer provider configured,
everything here is a no-op costing one check (``create_app`` adds the middleware only when
tracing is active). ``configure()`` installs an SDK tracer provider when the SDK is installed
and the environment asks for an exporter (``OTEL_TRACES_EXPORTER`` = ``otlp`` or ``console``,
or an ``OTEL_EXPORTER_OTLP_*ENDPOINT``), unless ``OTEL_SDK_DISABLED=true``.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager

from aiohttp import web

from service.keys import MODEL, REQUEST_ID, TRACE_SETTINGS, VERSION

try:  # the otel extra
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
except ImportError:  # pragma: no cover - exercised where the extra is absent
    trace = None
    otel_context = None
    propagate = None

__all__ = [
    "ENABLED",
    "active",
    "configure",
    "middleware",
    "phase",
    "traced",
    "span",
    "capture",
    "start_span",
    "end_span",
    "batch_span",
]

log = logging.getLogger("flowserve.tracing")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ENABLED = trace is not None
_SERVER_SPAN = web.RequestKey("fs_server_span", object)
_PHASE = web.RequestKey("fs_phase_span", object)
_PHASE_CONTEXT = web.RequestKey("fs_phase_context", object)
_TRACED = []  # [True] once a request got a server span: before that, phase() has no work
# Set while serving a request the trace settings did not sample: no span of it is recorded,
# in the handler or in the tasks it starts (batches reset it for the requests they carry).
_UNSAMPLED: contextvars.ContextVar[bool] = contextvars.ContextVar("fs_unsampled", default=False)


_TRACER = trace.get_tracer("flowserve") if ENABLED else None  # a proxy: follows the provider


def _tracer():
    return _TRACER


def active(refresh: bool = False) -> bool:
    """Whether spans are recorded: the packages are installed and a real tracer provider is
    set (by ``configure`` or the embedding program). Otherwise every hook here returns at
    once, instead of paying for the API's no-op spans (tens of microseconds a request).

    Whether a provider is set is looked up again with ``refresh`` (``create_app`` does, as
    it decides on the tracing middleware) and remembered in between: the lookup reads the
    environment, a few percent of a small request's time. Once set it stays set (an
    OpenTelemetry provider can be set only once)."""
    return ENABLED and _provider_set(refresh) and not _UNSAMPLED.get()


_PROVIDER = [None]  # whether a real tracer provider was set, as last looked up


def _provider_set(refresh: bool = False) -> bool:
    known = _PROVIDER[0]
    if known or (known is not None and not refresh):
        return known
    _PROVIDER[0] = not isinstance(
        trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
    )
    return _PROVIDER[0]


def configure(environ: Mapping[str, str] = os.environ) -> str | None:
    """Installs an SDK tracer provider as the ``OTEL_*`` environment asks; returns the
    exporter name, or None when tracing stays off."""
    if not ENABLED or environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    exporter_name = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not exporter_name and any(
        environ.get(k)
        for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        exporter_name = "otlp"
    if exporter_name in ("", "none"):
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        log.warning("OTEL_TRACES_EXPORTER is set but opentelemetry-sdk is not installed")
        return None
    if exporter_name == "console":
        exporter = ConsoleSpanExporter()
    elif exporter_name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning(
                "OTLP tracing needs opentelemetry-exporter-otlp-proto-http "
                "(pip install 'flowserve[otel]'); tracing is off"
            )
            return None
        exporter = OTLPSpanExporter()  # endpoint, headers, timeout from OTEL_EXPORTER_OTLP_*
    else:
        log.warning("unsupported OTEL_TRACES_EXPORTER %r (otlp, console, none)", exporter_name)
        return None
    # Resource: OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES; sampler: OTEL_TRACES_SAMPLER;
    # batching: OTEL_BSP_* -- all read by the SDK itself.
    resource = Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME", "flowserve")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _provider_set(refresh=True)
    return exporter_name


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The request's SERVER span, continuing the caller's trace; ends any open phase.
    Requests the trace settings (Triton's trace extension) do not sample are not traced."""
    if not active():
        return await handler(request)
    settings = request.app.get(TRACE_SETTINGS)
    if settings is not None and not _sampled(request, settings):
        token = _UNSAMPLED.set(True)
        try:
            return await handler(request)
        finally:
            _UNSAMPLED.reset(token)
    parent = propagate.extract(request.headers)
    route = request.match_info.route.resource
    name = f"{request.method} {route.canonical if route is not None else 'unmatched'}"
    with _tracer().start_as_current_span(
        name,
        context=parent,
        kind=trace.SpanKind.SERVER,
        attributes={"http.request.method": request.method, "url.path": request.path},
    ) as server_span:
        request[_SERVER_SPAN] = server_span
        if not _TRACED:
            _TRACED.append(True)
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as e:
            status = e.status
            raise
        finally:
            phase(request, None)
            server_span.set_attribute("http.response.status_code", status)
            if status >= 500:
                server_span.set_status(trace.Status(trace.StatusCode.ERROR))
            for key, attr in (
                (MODEL, "flowserve.model"),
                (VERSION, "flowserve.version"),
                (REQUEST_ID, "flowserve.request_id"),
            ):
                value = request.get(key)
                if value:
                    server_span.set_attribute(attr, value)


def _sampled(request: web.Request, settings) -> bool:
    """The trace settings' decision: inference requests count against the model's rate and
    count; other requests follow the global level."""
    info = request.match_info
    inference = request.method == "POST" and (
        request.path.endswith("/infer") or info.get("verb") in ("predict", "classify", "regress")
    )
    return settings.sample(info.get("model")) if inference else settings.enabled()


def traced(request: web.Request) -> bool:
    """Whether ``request`` has a server span (its handler's ``phase`` calls have work): a
    handler may ask once and skip them."""
    return bool(_TRACED) and _SERVER_SPAN in request


def phase(request: web.Request, name: str | None, **attributes: object) -> None:
    """Ends the request's open phase span (parse, encode), and starts ``name`` if given."""
    if not _TRACED or _SERVER_SPAN not in request:
        return  # not traced (a request's mapping raises KeyError inside ``in``: check first)
    current = request.get(_PHASE)
    if current is not None:
        current.end()
        request[_PHASE] = None
    server_span = request.get(_SERVER_SPAN)
    if name is None or server_span is None:
        return
    ctx = trace.set_span_in_context(server_span)
    request[_PHASE] = _tracer().start_span(name, context=ctx, attributes=_attrs(attributes))


def _attrs(attributes: dict) -> dict:
    return {f"flowserve.{k}": v for k, v in attributes.items() if v is not None}


@contextlib.contextmanager
def span(name: str, **attributes: object) -> Iterator[object]:
    """A child span of the current one (no-op unless tracing is active)."""
    if not active():
        yield None
        return
    with _tracer().start_as_current_span(name, attributes=_attrs(attributes)) as s:
        yield s


def capture() -> object:
    """The current trace context, to parent spans created later elsewhere (a batch)."""
    return otel_context.get_current() if active() else None


def start_span(name: str, context: object = None, **attributes: object) -> object:
    """A span started now and ended with ``end_span`` (no-op unless tracing is active)."""
    if not active():
        return None
    return _tracer().start_span(name, context=context, attributes=_attrs(attributes))


def end_span(s: object) -> None:
    if s is not None:
        s.end()


def batch_span(contexts: list, **attributes: object) -> AbstractContextManager:
    """The span of one executed batch: child of its first request's trace, linked to the
    span of every request it carries (``contexts`` of the traced ones only; none: no span).
    A context manager (it becomes current)."""
    if not ENABLED or not contexts or not _provider_set():
        return contextlib.nullcontext()
    return _sampled_batch_span(contexts, attributes)


@contextlib.contextmanager
def _sampled_batch_span(contexts: list, attributes: dict) -> Iterator[object]:
    token = _UNSAMPLED.set(False)  # the batch may run in an unsampled request's context
    try:
        with _batch_span(contexts, attributes) as s:
            yield s
    finally:
        _UNSAMPLED.reset(token)


def _batch_span(contexts: list, attributes: dict) -> AbstractContextManager:
    links = []
    for ctx in contexts:
        sc = trace.get_current_span(ctx).get_span_context()
        if sc.is_valid:
            links.append(trace.Link(sc))
    return _tracer().start_as_current_span(
        "batch",
        context=contexts[0] if contexts else None,
        links=links,
        attributes=_attrs(attributes),
    )
