"""Helpers shared by the protocol adapters: bodies, JSON, deadlines, request labels."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

try:  # optional, as in aiohttp: br request bodies need the Brotli package
    import brotli
except ImportError:  # pragma: no cover - depends on the environment
    brotli = None

from service.errors import InvalidInput, RequestTimeout
from service.fastlane import LaneRequest
from service.keys import ENDPOINT, MODEL, PROTOCOL, REQUEST_ID, VERSION
from service.logs import REQUEST_ID_HEADER, accept_request_id, request_id_var

__all__ = [
    "body_at_hand",
    "read_body",
    "read_json",
    "json_response",
    "note",
    "MSGPACK",
    "wants_msgpack",
    "is_msgpack",
    "parse_timeout",
    "BODY_TIMEOUT",
    "MAX_BODY",
    "decode_body",
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
MAX_TIMEOUT = 7 * 24 * 3600.0  # a week: longer deadlines are typos, and overflow timers
# Seconds a request body may take to arrive (set by create_app from ``body_timeout``), and
# the most bytes it may decompress to (``max_request_bytes``).
BODY_TIMEOUT = web.AppKey("fs_body_timeout", float)
MAX_BODY = web.AppKey("fs_max_body", int)
_BROTLI_ERRORS = (brotli.error,) if brotli is not None else ()
_INLINE_DECODE_BYTES = 64 << 10  # larger compressed bodies are decoded off the event loop


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


def body_at_hand(request: web.Request) -> bytes | None:
    """What ``read_body`` returns, without its coroutines, for a request the fast lane took
    whose body has all arrived (the common request: it came in one read); None for any
    other: ask ``read_body``."""
    return request.body_at_hand() if type(request) is LaneRequest else None


async def read_body(request: web.Request, timeout: float | None = None) -> bytes:
    """The request body, decompressed (gzip, deflate, br). ``client_max_size`` bounds the
    bytes read and ``max_request_bytes`` the decompressed ones (413 beyond either); a body
    that cannot be decoded is a 400, an unknown encoding a 415, and one that does not arrive
    within ``timeout`` seconds (the ``body_timeout`` setting by default) a 408.

    The server decodes bodies itself rather than letting aiohttp do it while parsing: a
    truncated deflate stream made aiohttp's parser drop the request without an answer."""
    try:
        if request.content.is_eof():  # all arrived with the headers: no timer to arm
            raw = await request.read()
        else:
            if timeout is None:
                timeout = request.app.get(BODY_TIMEOUT)
            async with asyncio.timeout(timeout):
                raw = await request.read()
    except TimeoutError:
        if timeout is None:
            timeout = request.app.get(BODY_TIMEOUT)
        raise RequestTimeout(
            f"The request body did not arrive within {timeout:g} seconds (body_timeout)"
        ) from None
    except (HttpProcessingError, RequestPayloadError) as e:
        cause = e.__cause__ or e.__context__ or e
        text = str(getattr(cause, "message", "") or cause).strip() or type(cause).__name__
        raise InvalidInput(f"The request body could not be read: {text}") from None
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return raw
    limit = request.app[MAX_BODY]
    if len(raw) <= _INLINE_DECODE_BYTES:
        return decode_body(raw, encoding, limit)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, decode_body, raw, encoding, limit)


def decode_body(raw: bytes, encoding: str, limit: int) -> bytes:
    """``raw`` decompressed per ``encoding`` (gzip, x-gzip, deflate, br), producing at most
    ``limit`` bytes (413 beyond: a decompression bomb stops there); 400 if it is corrupt,
    truncated or followed by garbage, 415 for another encoding."""
    try:
        if encoding in ("gzip", "x-gzip"):
            return _inflate(raw, 31, limit, members=True)
        if encoding == "deflate":
            # RFC 9110's deflate is zlib-wrapped; some clients send raw deflate.
            wbits = 15 if raw[:1] and raw[0] & 0x0F == 8 else -15
            return _inflate(raw, wbits, limit, members=False)
        if encoding == "br" and brotli is not None:
            return _unbrotli(raw, limit)
    except (zlib.error, EOFError, *_BROTLI_ERRORS) as e:
        raise InvalidInput(
            f"The request body could not be decoded (Content-Encoding {encoding!r}): {e}"
        ) from None
    supported = "gzip, deflate or br" if brotli is not None else "gzip or deflate"
    raise web.HTTPUnsupportedMediaType(
        text=f"Content-Encoding {encoding!r} is not supported (use {supported})"
    )


def _too_large(limit: int):
    return web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=limit + 1)


def _inflate(raw: bytes, wbits: int, limit: int, members: bool) -> bytes:
    out, produced, data = [], 0, raw
    for _ in range(64):  # gzip members
        d = zlib.decompressobj(wbits)
        chunk = d.decompress(data, limit + 1 - produced)
        while True:
            out.append(chunk)
            produced += len(chunk)
            if produced > limit:
                raise _too_large(limit)
            if not d.unconsumed_tail:
                break
            chunk = d.decompress(d.unconsumed_tail, limit + 1 - produced)
        if not d.eof:
            raise EOFError("the compressed stream is truncated")
        data = d.unused_data
        if not data:
            return b"".join(out)
        if not members:
            raise EOFError(f"{len(data)} bytes of garbage follow the compressed stream")
    raise EOFError("more than 64 gzip members")


def _unbrotli(raw: bytes, limit: int) -> bytes:
    d = brotli.Decompressor()
    out = [d.process(raw, output_buffer_limit=limit + 1)]
    produced = len(out[0])
    while produced <= limit and not d.can_accept_more_data():
        out.append(d.process(b"", output_buffer_limit=limit + 1 - produced))
        produced += len(out[-1])
    if produced > limit:
        raise _too_large(limit)
    if not d.is_finished():
        raise EOFError("the compressed stream is truncated")
    return b"".join(out)


def is_msgpack(request: web.Request) -> bool:
    return request.content_type in (MSGPACK, "application/x-msgpack")


def wants_msgpack(request: web.Request, packed: bool | None = None) -> bool:
    """Whether the answer is msgpack: ``Accept`` names it, or without ``Accept`` the request
    is msgpack (``packed``: ``is_msgpack(request)``, if the caller knows it)."""
    accept = request.headers.get("Accept", "")
    return (
        MSGPACK in accept
        or "application/x-msgpack" in accept
        or (not accept and (is_msgpack(request) if packed is None else packed))
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
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        raise InvalidInput(f"{what} holds a number that cannot be read: {e}") from None


def dumps(obj: Any) -> bytes:
    """JSON bytes of ``obj``, which may hold numpy arrays and scalars (written as nested
    lists, without a Python object per element).

    Floats are written as the shortest text that reads back as the same value *of their
    own type*: a float32 0.1 is ``0.1`` (as TF Serving writes it), not the ``0.10000000149011612``
    of its float64 widening; parsed and cast to float32 it gives back the identical bits.

    orjson writes NaN and infinities as ``null``; TF Serving writes the tokens
    ``NaN``/``Infinity``, so a document that came out with a ``null`` is re-encoded with the
    standard library to keep them."""
    try:
        out = orjson.dumps(obj, default=_plain_array, option=orjson.OPT_SERIALIZE_NUMPY)
    except orjson.JSONEncodeError:  # e.g. a big-endian array, which orjson refuses
        out = None
    if out is None or b"null" in out:
        out = _JSON_DUMPS.encode(obj).encode("utf-8")
    return out


def _plain_array(value: Any) -> Any:
    """``value`` (a numpy array or scalar orjson does not write itself: non-contiguous,
    0-d, big-endian, object) as plain Python values, floats as ``dumps`` writes them."""
    if not isinstance(value, (np.ndarray, np.generic)):
        raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and arr.dtype.itemsize < 8:
        # numpy's str() of a float32 is its shortest round-tripping text (orjson's, which
        # writes a float16 as a float32); the float64 read from it prints as that text.
        return arr.astype(np.float32).astype(str).astype(np.float64).tolist()
    return arr.tolist()


_JSON_DUMPS = json.JSONEncoder(
    ensure_ascii=False, allow_nan=True, separators=(",", ":"), default=_plain_array
)


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
