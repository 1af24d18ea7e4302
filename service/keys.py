"""The keys of the state the server keeps on its application and on each request.

They live apart from ``service.app`` so that a protocol adapter can read the manager from
``request.app[MANAGER]`` without importing the module that imports it. This module imports
nothing heavier than aiohttp (the CLI reads the request keys before numpy may be imported);
the value types are named for type checkers only.

Application keys (set by ``create_app``): ``MANAGER`` (the ``ModelManager``), ``CONFIG`` (the
``ServerConfig``), ``METRICS`` (the ``ServingMetrics``), ``SHARED_MEMORY`` (the system shared
memory regions), ``LOG_SETTINGS`` (the logging extension's settings), ``TRACE_SETTINGS``
(the trace extension's). Request keys (set by the
protocol adapters through ``service.protocols.common.note``, read by the metrics middleware and
the access log): ``PROTOCOL``, ``MODEL``, ``VERSION``; ``ENDPOINT`` (overrides the metrics'
path-based endpoint label) and ``REQUEST_ID`` (set by the app's request-ID middleware; a V2
body ``id`` may replace it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from service.config import ServerConfig
    from service.log_settings import LogSettings
    from service.manager import ModelManager
    from service.metrics import ServingMetrics
    from service.protocols.shared_memory import SharedMemoryRegistry
    from service.trace_settings import TraceSettings

__all__ = [
    "MANAGER",
    "CONFIG",
    "METRICS",
    "SHARED_MEMORY",
    "LOG_SETTINGS",
    "TRACE_SETTINGS",
    "PROTOCOL",
    "MODEL",
    "VERSION",
    "ENDPOINT",
    "REQUEST_ID",
]

MANAGER: web.AppKey[ModelManager] = web.AppKey("manager")
CONFIG: web.AppKey[ServerConfig] = web.AppKey("config")
METRICS: web.AppKey[ServingMetrics] = web.AppKey("metrics")
# Triton's system shared memory regions and log settings (shared by REST and gRPC).
SHARED_MEMORY: web.AppKey[SharedMemoryRegistry] = web.AppKey("shared_memory")
LOG_SETTINGS: web.AppKey[LogSettings] = web.AppKey("log_settings")
# Triton's trace settings: which requests the OpenTelemetry tracing records.
TRACE_SETTINGS: web.AppKey[TraceSettings] = web.AppKey("trace_settings")

# What a request was about, for metrics and the access log.
PROTOCOL: web.RequestKey[str] = web.RequestKey("fs_protocol", str)
MODEL: web.RequestKey[str] = web.RequestKey("fs_model", str)
VERSION: web.RequestKey[str] = web.RequestKey("fs_version", str)
ENDPOINT: web.RequestKey[str] = web.RequestKey("fs_endpoint", str)
REQUEST_ID: web.RequestKey[str] = web.RequestKey("fs_request_id", str)
