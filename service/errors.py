"""Typed errors of the serving core; each maps to one HTTP status (TF Serving's mapping).

The core raises these without knowing about HTTP; protocol adapters turn them into
``{"error": message}`` responses with ``http_status``.
"""

from __future__ import annotations

__all__ = [
    "ServingError",
    "InvalidInput",
    "NotFound",
    "ModelNotFound",
    "Unavailable",
    "QueueFull",
    "DeadlineExceeded",
    "TooLarge",
    "RequestTimeout",
    "Unauthenticated",
    "Internal",
    "Cancelled",
    "FailedPrecondition",
    "ResourceExhausted",
]


class ServingError(Exception):
    """Base class: ``http_status`` and the canonical ``code`` name."""

    http_status = 500
    code = "INTERNAL"
    reason = "internal"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidInput(ServingError):
    """The request is malformed or does not match the model's signature."""

    http_status = 400
    code = "INVALID_ARGUMENT"
    reason = "invalid_input"


class FailedPrecondition(ServingError):
    http_status = 400
    code = "FAILED_PRECONDITION"
    reason = "failed_precondition"


class TooLarge(InvalidInput):
    """A request (or one of its inputs) is over a size limit."""

    reason = "too_large"


class RequestTimeout(ServingError):
    """The client did not send its request in time."""

    http_status = 408
    code = "DEADLINE_EXCEEDED"
    reason = "request_timeout"


class NotFound(ServingError):
    """Unknown model, version, label or signature."""

    http_status = 404
    code = "NOT_FOUND"
    reason = "not_found"


class ModelNotFound(NotFound):
    """The model (or the version of it) asked for is not in the repository."""

    def __init__(self, message: str, model: str, version: int | None = None):
        super().__init__(message)
        self.model = model
        self.version = version


class Unavailable(ServingError):
    """The model version exists but is not available (loading, unloading, failed)."""

    http_status = 503
    code = "UNAVAILABLE"
    reason = "unavailable"


class QueueFull(Unavailable):
    """The batching queue is full: the server sheds load instead of growing memory."""

    reason = "queue_full"


class ResourceExhausted(ServingError):
    """The run needed more memory than it may use (the model's ``max_intermediate_bytes``,
    or the machine's): 429, as TF Serving maps RESOURCE_EXHAUSTED."""

    http_status = 429
    code = "RESOURCE_EXHAUSTED"
    reason = "resource_exhausted"


class DeadlineExceeded(ServingError):
    http_status = 504
    code = "DEADLINE_EXCEEDED"
    reason = "deadline"


class Cancelled(ServingError):
    http_status = 499
    code = "CANCELLED"
    reason = "cancelled"


class Unauthenticated(ServingError):
    http_status = 401
    code = "UNAUTHENTICATED"
    reason = "unauthenticated"


class Internal(ServingError):
    http_status = 500
    code = "INTERNAL"
    reason = "internal"
