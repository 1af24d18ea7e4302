"""Helpers shared by the protocol adapters: bodies, JSON, deadlines, request labels."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from service.errors import InvalidInput
from service.keys import MODEL, PROTOCOL, REQUEST_ID, VERSION
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
    "adopt_request_id",
    "parse_json",
    "dumps",
]

MSGPACK = "application/msgpack"
_JSON_DUMPS = json.JSONEncoder(ensure_ascii=False, allow_nan=True, separators=(",", ":"))


def note(
    request: web.Request,
    *,
    protocol: str | None = None,
    model: str | None = None,
    version: int | str | None = None,
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


async def read_body(request: web.Request) -> bytes:
    """The request body. aiohttp decompresses gzip/deflate bodies while reading and enforces
    ``client_max_size`` on the decompressed bytes, answering 413 beyond it."""
    return await request.read()


def is_msgpack(request: web.Request) -> bool:
    return request.content_type in (MSGPACK, "application/x-msgpack")


def wants_msgpack(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return (
        MSGPACK in accept
        or "application/x-msgpack" in accept
        or (not accept and is_msgpack(request))
    )


async def read_json(request: web.Request) -> Any:
    return parse_json(await read_body(request))


def parse_json(body: bytes, what: str = "The request body") -> Any:
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


def dumps(obj: Any) -> bytes:
    """JSON bytes. orjson writes NaN and infinities as ``null``; TF Serving writes the tokens
    ``NaN``/``Infinity``, so a document that came out with a ``null`` is re-encoded with the
    standard library to keep them."""
    out = orjson.dumps(obj)
    if b"null" in out:
        out = _JSON_DUMPS.encode(obj).encode("utf-8")
    return out


def json_response(
    obj: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=dumps(obj), status=status, content_type="application/json", headers=headers
    )


def parse_timeout(value: object, what: str) -> float | None:
    """A per-request deadline in seconds from a header or parameter (None if absent)."""
    if value is None or value == "":
        return None
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{what} must be a number of seconds, got {value!r}") from None
    if not t > 0 or t == float("inf"):
        raise InvalidInput(f"{what} must be a positive number of seconds, got {value!r}")
    return t
