"""Triton's trace extension: which requests the OpenTelemetry tracing records.

Settings, with Triton's names and JSON forms (values are strings, ``trace_level`` a list):
``trace_level`` (``["OFF"]`` or ``["TIMESTAMPS"]``: spans carry timings; ``TENSORS`` is
refused, spans never carry tensor contents), ``trace_rate`` (trace 1 request in N, the first
one included), ``trace_count`` (how many more requests to trace; ``-1``: no limit; it counts
down as requests are traced, and tracing stops at 0), ``log_frequency`` (accepted and
reported; spans are exported by the OpenTelemetry batch processor, ``OTEL_BSP_*``),
``trace_file`` (always ``""``: spans go to the configured exporter, a request cannot make the
server write a file) and
``trace_mode`` (``"opentelemetry"``, read-only).

Inference requests (V2 ``infer``, TF Serving ``predict``/``classify``/``regress``) are
sampled by these settings; other requests are traced while the global level is not OFF.
Settings are global, and a model may override any of them (``/v2/models/{m}/trace/setting``);
a ``null`` value (an empty list over gRPC) clears a model's override, or restores the
global default. A model with overrides keeps its own rate and count counters.
"""

from __future__ import annotations

import threading

from service.errors import FailedPrecondition, InvalidInput

__all__ = ["TraceSettings"]

_FIELDS = ("trace_level", "trace_rate", "trace_count", "log_frequency", "trace_file", "trace_mode")
_MAX = 1 << 31


def _integer(key: str, value, low: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidInput(f"{key} must be an integer (as a string), got {value!r}")
    try:
        n = int(value, 10) if isinstance(value, str) else value
    except ValueError:
        raise InvalidInput(f"{key} must be an integer, got {value!r}") from None
    if not low <= n < _MAX:
        raise InvalidInput(f"{key} must be between {low} and {_MAX - 1}, got {n}")
    return str(n)


def _level(value) -> list[str]:
    levels = [value] if isinstance(value, str) else value
    if not isinstance(levels, list) or not levels or not all(isinstance(v, str) for v in levels):
        raise InvalidInput(f"trace_level must be a list of levels, got {value!r}")
    levels = [v.upper() for v in levels]
    for v in levels:
        if v == "TENSORS":
            raise InvalidInput("trace_level TENSORS is not supported: spans carry timings only")
        if v not in ("OFF", "TIMESTAMPS"):
            raise InvalidInput(f"trace_level must be OFF or TIMESTAMPS, got {v!r}")
    if "OFF" in levels and len(set(levels)) > 1:
        raise InvalidInput("trace_level OFF cannot be combined with other levels")
    return sorted(set(levels))


def _validated(key: str, value):
    if key == "trace_level":
        return _level(value)
    if key == "trace_rate":
        return _integer(key, value, 1)
    if key == "trace_count":
        return _integer(key, value, -1)
    if key == "log_frequency":
        return _integer(key, value, 0)
    if key == "trace_file":
        if value != "":
            raise InvalidInput("trace_file cannot be set: spans go to the OpenTelemetry exporter")
        return ""
    if value != "opentelemetry":
        raise InvalidInput("trace_mode is opentelemetry and cannot be changed")
    return value


class _Counter:
    def __init__(self, count: str):
        self.seen = 0
        self.remaining = int(count)


class TraceSettings:
    """The global settings, per-model overrides, and the sampling decision."""

    def __init__(self, tracing_active: bool = False):
        # Tracing configured through OTEL_* traces every request until told otherwise;
        # without it the level reads OFF (Triton's default).
        self.defaults = {
            "trace_level": ["TIMESTAMPS"] if tracing_active else ["OFF"],
            "trace_rate": "1",
            "trace_count": "-1",
            "log_frequency": "0",
            "trace_file": "",
            "trace_mode": "opentelemetry",
        }
        self.global_settings = dict(self.defaults)
        self.models: dict[str, dict] = {}
        self._counters: dict[str, _Counter] = {"": _Counter("-1")}
        self._lock = threading.Lock()  # gRPC and HTTP handlers share it (one loop, but cheap)
        # Why changes are refused (a worker of --workers N: trace settings are per process).
        self.refusal: str | None = None

    def current(self, model: str | None = None) -> dict:
        """The settings that apply to ``model`` (the global ones for None); ``trace_count``
        is what is left of it, as Triton reports it."""
        settings = {**self.global_settings, **self.models.get(model or "", {})}
        counter = self._counters.get(model if model in self.models else "")
        if counter is not None and settings["trace_count"] != "-1":
            settings["trace_count"] = str(counter.remaining)
        return settings

    def update(self, changes: dict, model: str | None = None) -> dict:
        """Applies ``changes`` (validated as a whole first); returns the new settings."""
        if not isinstance(changes, dict):
            raise InvalidInput("trace settings must be an object")
        if changes and self.refusal is not None:
            raise FailedPrecondition(self.refusal)
        unknown = sorted(set(changes) - set(_FIELDS))
        if unknown:
            raise InvalidInput(f"unknown trace setting(s) {unknown}")
        checked = {k: None if v is None else _validated(k, v) for k, v in changes.items()}
        with self._lock:
            if model:
                target = self.models.setdefault(model, {})
                for key, value in checked.items():
                    if value is None:
                        target.pop(key, None)
                    else:
                        target[key] = value
                if not target:
                    del self.models[model]
                    self._counters.pop(model, None)
                elif "trace_count" in checked or model not in self._counters:
                    count = target.get("trace_count", self.global_settings["trace_count"])
                    self._counters[model] = _Counter(count)
            else:
                for key, value in checked.items():
                    self.global_settings[key] = self.defaults[key] if value is None else value
                if "trace_count" in checked:
                    self._counters[""] = _Counter(self.global_settings["trace_count"])
        return self.current(model)

    def enabled(self) -> bool:
        """Whether requests that run no model (metadata, health, settings) are traced: the
        global level is not OFF. They do not count against the rate or the count."""
        return self.global_settings["trace_level"] != ["OFF"]

    def sample(self, model: str | None) -> bool:
        """Whether to trace this request (counts it against the rate and the count)."""
        key = model if model in self.models else ""
        settings = {**self.global_settings, **self.models.get(key, {})}
        if settings["trace_level"] == ["OFF"]:
            return False
        with self._lock:
            counter = self._counters.setdefault(key, _Counter(settings["trace_count"]))
            if counter.remaining == 0:
                return False
            chosen = counter.seen % int(settings["trace_rate"]) == 0
            counter.seen += 1
            if chosen and counter.remaining > 0:
                counter.remaining -= 1
            return chosen
