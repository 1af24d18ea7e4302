"""Exception types raised by the engine at run time, named and numbered as in TensorFlow.

``OpError`` carries the operation that failed (``.op``, ``.node_def``), a message and a
canonical error code. Build-time mistakes raise Python's ``ValueError``/``TypeError`` as TF does.
"""

from __future__ import annotations

__all__ = [
    "OpError",
    "CancelledError",
    "UnknownError",
    "InvalidArgumentError",
    "DeadlineExceededError",
    "NotFoundError",
    "AlreadyExistsError",
    "PermissionDeniedError",
    "UnauthenticatedError",
    "ResourceExhaustedError",
    "FailedPreconditionError",
    "AbortedError",
    "OutOfRangeError",
    "UnimplementedError",
    "InternalError",
    "UnavailableError",
    "DataLossError",
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "UNAUTHENTICATED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "exception_type_from_error_code",
]

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """A failure while running an operation.

    ``op`` is the failing ``Operation`` (or None), ``node_def`` its description,
    ``message`` the text and ``error_code`` the canonical code.
    """

    error_code_default = UNKNOWN

    def __init__(self, node_def, op, message: str, error_code: int | None = None):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = self.error_code_default if error_code is None else error_code

    @property
    def message(self) -> str:
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self) -> int:
        return self._error_code

    def __str__(self) -> str:
        return self._message

    def __reduce__(self):
        return type(self), (self._node_def, None, self._message)


def _subclass(name: str, code: int, doc: str) -> type[OpError]:
    def init(self, node_def=None, op=None, message="", *args):  # noqa: ARG001 - TF's OpError subclasses accept extra arguments
        OpError.__init__(self, node_def, op, message, code)

    return type(
        name,
        (OpError,),
        {"__init__": init, "__doc__": doc, "error_code_default": code, "__module__": __name__},
    )


CancelledError = _subclass("CancelledError", CANCELLED, "An operation or step was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An unknown error.")
InvalidArgumentError = _subclass(
    "InvalidArgumentError", INVALID_ARGUMENT, "An operation received an invalid argument."
)
DeadlineExceededError = _subclass(
    "DeadlineExceededError",
    DEADLINE_EXCEEDED,
    "A deadline expired before the operation could complete.",
)
NotFoundError = _subclass("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _subclass(
    "AlreadyExistsError", ALREADY_EXISTS, "An entity that we attempted to create already exists."
)
PermissionDeniedError = _subclass(
    "PermissionDeniedError",
    PERMISSION_DENIED,
    "The caller does not have permission to run an operation.",
)
UnauthenticatedError = _subclass(
    "UnauthenticatedError",
    UNAUTHENTICATED,
    "The request does not have valid authentication credentials.",
)
ResourceExhaustedError = _subclass(
    "ResourceExhaustedError",
    RESOURCE_EXHAUSTED,
    "Some resource (memory, queue space) has been exhausted.",
)
FailedPreconditionError = _subclass(
    "FailedPreconditionError",
    FAILED_PRECONDITION,
    "The system is not in a state to run an operation, "
    "e.g. a variable is read before it is initialized.",
)
AbortedError = _subclass("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _subclass(
    "OutOfRangeError", OUT_OF_RANGE, "An operation iterated past the valid range."
)
UnimplementedError = _subclass(
    "UnimplementedError", UNIMPLEMENTED, "The operation is not implemented or supported."
)
InternalError = _subclass("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE, "The runtime is unavailable.")
DataLossError = _subclass(
    "DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption, e.g. a corrupted file."
)

_BY_CODE = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    UNAUTHENTICATED: UnauthenticatedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
}


def exception_type_from_error_code(error_code: int) -> type[OpError]:
    return _BY_CODE[error_code]
