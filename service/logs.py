"""Request IDs and log formatting.

Every request gets an ID: the client's ``X-Request-ID`` when it is a sane token, else a new
one. It lives in a context variable for the request's task, so every log line written while
serving the request carries it (``RequestIdFilter``), and it is echoed in the response's
``X-Request-ID`` header. Timestamps are RFC 3339 in UTC with milliseconds, in both formats.
"""

from __future__ import annotations

import contextvars
import json
import logging
import random
import re
import sys
from datetime import UTC, datetime

__all__ = [
    "REQUEST_ID_HEADER",
    "request_id_var",
    "accept_request_id",
    "new_request_id",
    "RequestIdFilter",
    "JsonFormatter",
    "TextFormatter",
    "setup_logging",
    "rfc3339",
]

REQUEST_ID_HEADER = "X-Request-ID"
_random_bits = random.getrandbits
# What a client may choose as ID: a token that is safe in a header and in a log line.
_VALID_ID = re.compile(r"^[A-Za-z0-9._:/+=@-]{1,128}$")

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "flowserve_request_id", default=None
)


def new_request_id() -> str:
    """32 random hex digits, as a UUID4's hex. From ``random`` (reseeded in every forked
    worker), not ``os.urandom``: an ID needs to be unique, not secret, and the system call
    cost several percent of a small request under load."""
    return _random_bits(128).to_bytes(16).hex()


def accept_request_id(value: object) -> str | None:
    """``value`` if it is usable as a request ID (1-128 characters of ``A-Z a-z 0-9 . _ : /
    + = @ -``), else None."""
    if isinstance(value, str) and _VALID_ID.match(value):
        return value
    return None


def rfc3339(created: float) -> str:
    """``2026-11-22T20:31:05.123Z`` for a ``time.time()`` value."""
    second = int(created // 1)
    micros = round((created - second) * 1e6)  # as datetime rounds a timestamp
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    millis = micros // 1000
    # Formatted once a second, not once a line. One (second, text) pair, read and replaced
    # whole: threads logging at once never pair one second's text with another's.
    cached = _SECOND_STAMP[0]
    if cached[0] != second:
        cached = (second, datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S"))
        _SECOND_STAMP[0] = cached
    return f"{cached[1]}.{millis:03d}Z"


_SECOND_STAMP: list[tuple] = [(None, "")]


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (the current request's, or None) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and the access
    fields of access-log lines."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": rfc3339(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id:
            doc["request_id"] = request_id
        extra = getattr(record, "access", None)
        if extra:
            doc.update(extra)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``<RFC 3339 time> LEVEL logger: message [request_id=...]``."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{rfc3339(record.created)} {record.levelname} {record.name}: {record.getMessage()}"
        request_id = getattr(record, "request_id", None)
        if request_id:
            line += f" request_id={request_id}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(fmt: str, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
