"""Helpers shared by the protocol adapters: bodies, JSON, deadlines, request labels."""

from __future__ import annotations

import asyncio
import json
import zlib

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from service.errors import InvalidInput, RequestTimeout
from service.logs import REQUEST_ID_HEADER, accept_request_id, request_id_var

__all__ = [
    "read_body",
    "read_json",
    "json_response",
    "note",
    "MSGPACK",
    "wants_msgpack",
    "is_msgpack",
    "parse_timeout",
    "BODY_TIMEOUT",
    "MAX_TIMEOUT",
    "PROTOCOL",
    "MODEL",
    "VERSION",
    "ENDPOINT",
    "REQUEST_ID",
    "adopt_request_id",
    "parse_json",
    "dumps",
]

MSGPACK = "application/msgpack"
# What a request was about, for metrics and the access log.
PROTOCOL = web.RequestKey("fs_protocol", str)
MODEL = web.RequestKey("fs_model", str)
VERSION = web.RequestKey("fs_version", str)
MAX_TIMEOUT = 7 * 24 * 3600.0  # a week: longer deadlines are typos, and overflow timers
# Seconds a request body may take to arrive (set by create_app from ``body_timeout``).
BODY_TIMEOUT = web.AppKey("fs_body_timeout", float)
ENDPOINT = web.RequestKey("fs_endpoint", str)  # overrides the app's path-based endpoint label
REQUEST_ID = web.RequestKey("fs_request_id", str)  # set by the app; a V2 body "id" may adopt
_JSON_DUMPS = json.JSONEncoder(ensure_ascii=False, allow_nan=True, separators=(",", ":"))


def note(
    request: web.Request, *, protocol: str | None = None, model: str | None = None, version=None
) -> None:
    """Records what a request was about, for metrics and the access log."""
    if protocol is not None:
        request[PROTOCOL] = protocol
    if model is not None:
        request[MODEL] = model
    if version is not None:
        request[VERSION] = str(version)


def adopt_request_id(request: web.Request, body_id: str | None) -> str:
    """The ID to echo in a response body: the body's own (V2 ``id``), which also becomes the
    request's ID when the client sent no ``X-Request-ID`` and it is a valid token; else the
    request's ID."""
    current = request.get(REQUEST_ID)
    if body_id is None:
        return current
    if REQUEST_ID_HEADER not in request.headers and accept_request_id(body_id):
        request[REQUEST_ID] = body_id
        request_id_var.set(body_id)
    return body_id


async def read_body(request: web.Request, timeout: float | None = None) -> bytes:
    """The request body. aiohttp decompresses gzip/deflate/br bodies while reading and
    enforces ``client_max_size`` on the decompressed bytes, answering 413 beyond it. A body
    that cannot be decoded is a 400; one that does not arrive within ``timeout`` seconds
    (the ``body_timeout`` setting by default) is a 408."""
    if timeout is None:
        timeout = request.app.get(BODY_TIMEOUT)
    try:
        async with asyncio.timeout(timeout):
            return await request.read()
    except TimeoutError:
        raise RequestTimeout(
            f"The request body did not arrive within {timeout:g} seconds (body_timeout)"
        ) from None
    except (HttpProcessingError, RequestPayloadError) as e:
        encoding = request.headers.get("Content-Encoding")
        detail = f" (Content-Encoding {encoding!r})" if encoding else ""
        cause = e.__cause__ or e.__context__ or e
        text = str(getattr(cause, "message", "") or cause).strip() or type(cause).__name__
        raise InvalidInput(f"The request body could not be read{detail}: {text}") from None
    except (zlib.error, EOFError, OSError, ValueError) as e:
        encoding = request.headers.get("Content-Encoding", "identity")
        raise InvalidInput(
            f"The request body could not be decoded (Content-Encoding {encoding!r}): {e}"
        ) from None


def is_msgpack(request: web.Request) -> bool:
    return request.content_type in (MSGPACK, "application/x-msgpack")


def wants_msgpack(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return (
        MSGPACK in accept
        or "application/x-msgpack" in accept
        or (not accept and is_msgpack(request))
    )


async def read_json(request: web.Request):
    return parse_json(await read_body(request))


def parse_json(body: bytes, what: str = "The request body"):
    """A JSON document from request bytes; InvalidInput saying what is wrong otherwise.

    orjson parses (numbers an order of magnitude faster than the standard library); the
    standard parser takes over for what orjson refuses but TF Serving's clients may send:
    ``NaN``/``Infinity`` tokens and integers beyond 64 bits.
    """
    if not body:
        raise InvalidInput(f"{what} is empty; expected a JSON object")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(body)
    except UnicodeDecodeError:
        raise InvalidInput(f"{what} is not UTF-8 encoded JSON") from None
    except json.JSONDecodeError as e:
        raise InvalidInput(f"{what} is not valid JSON: {e}") from None
    except RecursionError:
        raise InvalidInput(f"{what}'s JSON is nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        raise InvalidInput(f"{what} holds a number that cannot be read: {e}") from None


def dumps(obj) -> bytes:
    """JSON bytes. orjson writes NaN and infinities as ``null``; TF Serving writes the tokens
    ``NaN``/``Infinity``, so a document that came out with a ``null`` is re-encoded with the
    standard library to keep them."""
    out = orjson.dumps(obj)
    if b"null" in out:
        out = _JSON_DUMPS.encode(obj).encode("utf-8")
    return out


def json_response(obj, status: int = 200, headers=None) -> web.Response:
    return web.Response(
        body=dumps(obj), status=status, content_type="application/json", headers=headers
    )


def parse_timeout(value, what: str) -> float | None:
    """A per-request deadline in seconds from a header or parameter (None if absent)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidInput(f"{what} must be a number of seconds, got {value!r}")
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{what} must be a number of seconds, got {value!r}") from None
    if not 0 < t <= MAX_TIMEOUT:
        raise InvalidInput(
            f"{what} must be a positive number of seconds (at most {MAX_TIMEOUT:g}), got {value!r}"
        )
    return t
