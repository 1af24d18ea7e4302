"""KServe V2 / Open Inference Protocol over HTTP, with Triton's binary tensor data and model
repository extensions.

Routes (``[/versions/{v}]`` is optional; without it the latest available version answers)::

    GET  /v2                                         server metadata
    GET  /v2/health/live, /v2/health/ready           200, or 503 {"ready": false} while starting
    GET  /v2/models/{model}[/versions/{v}]           model metadata (the default signature)
    GET  /v2/models/{model}[/versions/{v}]/ready     200 {"name", "ready": true}; 503 if not
    GET  /v2/models/{model}[/versions/{v}]/config    Triton's model configuration (JSON form):
                                                     inputs, outputs, max_batch_size,
                                                     dynamic_batching, instance_group
    POST /v2/models/{model}[/versions/{v}]/infer     inference
    POST /v2/repository/index                        [{"name", "version", "state", "reason"}]
    POST /v2/repository/models/{model}/load|unload   repository control

Datatypes: BOOL, UINT8/16/32/64, INT8/16/32/64, FP16, FP32, FP64 and BYTES map to the engine's
dtypes of the same width (BYTES to ``string``); BF16 is refused. An input's ``data`` is flat
row-major (nested lists are accepted too) and must hold exactly the elements ``shape`` says;
its values must fit ``datatype``, which must then cast safely to the signature's dtype
(``service.tensors.coerce``). BYTES outputs are UTF-8 strings in JSON when every element
decodes, and binary otherwise.

Request ``parameters`` understood: ``signature_name`` (flowserve extension: which signature to
run; the default signature otherwise), ``timeout`` in **seconds** (note: Triton's clients send
microseconds; use the ``Request-Timeout`` header, also seconds, or pass seconds; the earlier of
the two deadlines wins), and ``binary_data_output``. Other request parameters are ignored.

Binary tensor data (Triton's extension): with the header ``Inference-Header-Content-Length: N``
the first N body bytes are the JSON request and the rest the raw data of the inputs that set
``parameters.binary_data_size``, concatenated in input order (little-endian, row-major; BOOL is
one byte; each BYTES element is a 4-byte little-endian length and the bytes). Outputs asked for
with ``parameters.binary_data: true`` (or all outputs, with ``binary_data_output: true``) come
back the same way: body = JSON header + raw buffers, with ``Inference-Header-Content-Length``,
``Content-Type: application/octet-stream`` and ``parameters.binary_data_size`` on each.

msgpack: an ``application/msgpack`` body is the same document as the JSON one, except that an
input's ``data`` may be raw bytes (bin) read as the binary extension reads them (for BYTES:
length-prefixed elements) -- or a list of values, as in JSON (BYTES elements as bin or str).
A msgpack request, or ``Accept: application/msgpack``, gets a msgpack response whose outputs'
``data`` is raw little-endian bytes (BYTES: a list of bin, one per element); ``binary_data``
flags do not apply there. Errors are always JSON ``{"error": ...}``.

gzip/deflate request bodies are decompressed by aiohttp (the size limit applies to the
decompressed bytes); infer responses of 1 KiB or more are compressed when ``Accept-Encoding``
allows it.
Client mistakes are 400, unknown model/version/signature 404, a model not available 503,
a missed deadline 504.
"""

from __future__ import annotations

import math
import struct

import numpy as np
from aiohttp import web

import service
from engine import dtypes
from engine.tensor_shape import TensorShape
from service.errors import Internal, InvalidInput, Unavailable
from service.keys import CONFIG, MANAGER
from service.manager import InferResult
from service.protocols.common import (
    MSGPACK,
    adopt_request_id,
    dumps,
    is_msgpack,
    json_response,
    note,
    parse_json,
    parse_timeout,
    read_body,
    wants_msgpack,
)
from service.protocols.msgpack_codec import packb, unpackb
from service.tensors import MAX_ELEMENTS, TensorSpec, check_shape, coerce, from_json_value

__all__ = ["add_routes", "DATATYPES"]

DATATYPES: dict[str, dtypes.DType] = {
    "BOOL": dtypes.bool,
    "UINT8": dtypes.uint8,
    "UINT16": dtypes.uint16,
    "UINT32": dtypes.uint32,
    "UINT64": dtypes.uint64,
    "INT8": dtypes.int8,
    "INT16": dtypes.int16,
    "INT32": dtypes.int32,
    "INT64": dtypes.int64,
    "FP16": dtypes.float16,
    "FP32": dtypes.float32,
    "FP64": dtypes.float64,
    "BYTES": dtypes.string,
}
_DATATYPE_OF = {d: name for name, d in DATATYPES.items()}
_HEADER_LENGTH = "Inference-Header-Content-Length"
_EXTENSIONS = ["binary_tensor_data", "model_repository"]
_COMPRESS_MIN_BYTES = 1024  # smaller responses are not worth compressing
# Manager version states (and the index's placeholders) as the repository extension names them.
_INDEX_STATES = {
    "AVAILABLE": "READY",
    "START": "LOADING",
    "LOADING": "LOADING",
    "UNLOADING": "UNLOADING",
    "END": "UNAVAILABLE",
    "UNAVAILABLE": "UNAVAILABLE",
    "UNLOADED": "UNAVAILABLE",
}


def add_routes(app: web.Application) -> None:
    router = app.router
    router.add_get("/v2", server_metadata)
    router.add_get("/v2/health/live", health_live)
    router.add_get("/v2/health/ready", health_ready)
    for model in ("/v2/models/{model}", "/v2/models/{model}/versions/{version}"):
        router.add_get(model, model_metadata)
        router.add_get(model + "/ready", model_ready)
        router.add_get(model + "/config", model_config)
        router.add_post(model + "/infer", infer)
    router.add_post("/v2/repository/index", repository_index)
    router.add_post("/v2/repository/models/{model}/load", repository_load)
    router.add_post("/v2/repository/models/{model}/unload", repository_unload)


# -----------------------------------------------------------------------------------------
# Health, metadata, repository
# -----------------------------------------------------------------------------------------


async def server_metadata(_request: web.Request) -> web.Response:
    return json_response(
        {"name": "flowserve", "version": service.__version__, "extensions": _EXTENSIONS}
    )


async def health_live(_request: web.Request) -> web.Response:
    return json_response({"live": True})


async def health_ready(request: web.Request) -> web.Response:
    ready = request.app[MANAGER].ready
    return json_response({"ready": ready}, status=200 if ready else 503)


def _target(request: web.Request) -> tuple[str, str | None]:
    name, version = request.match_info["model"], request.match_info.get("version")
    note(request, protocol="v2", model=name, version=version)
    return name, version


async def model_metadata(request: web.Request) -> web.Response:
    name, version = _target(request)
    manager = request.app[MANAGER]
    _, sig = manager.signature_info(name, version)
    versions = sorted(s.version for s in manager.status(name) if s.state == "AVAILABLE")
    return json_response(
        {
            "name": name,
            "versions": [str(v) for v in versions],
            "platform": "flowserve",
            "inputs": [_tensor_metadata(sig.inputs[a]) for a in sig.input_order],
            "outputs": [_tensor_metadata(sig.outputs[a]) for a in sig.output_order],
        }
    )


def _tensor_metadata(spec: TensorSpec) -> dict:
    dims = spec.dims
    meta = {
        "name": spec.alias,
        "datatype": _DATATYPE_OF[spec.dtype.base_dtype],
        "shape": [-1] if dims is None else [-1 if d is None else d for d in dims],
    }
    if dims is None:
        meta["parameters"] = {"unknown_rank": True}  # V2 has no way to say "any rank"
    return meta


async def model_config(request: web.Request) -> web.Response:
    """The version's configuration as Triton's ``GET .../config`` reports it (the subset that
    applies): what tritonclient's ``get_model_config`` reads."""
    name, version = _target(request)
    manager = request.app[MANAGER]
    servable, sig = manager.signature_info(name, version)
    batching = manager.batching_for(servable)
    batched = batching.enabled and sig.batchable
    config = {
        "name": name,
        "platform": "flowserve",
        "backend": "flowserve",
        "version_policy": _triton_version_policy(servable.config.version_policy),
        "max_batch_size": batching.max_batch_size if batched else 0,
        "input": [_triton_tensor(sig.inputs[a], batched) for a in sig.input_order],
        "output": [_triton_tensor(sig.outputs[a], batched) for a in sig.output_order],
        "instance_group": [
            _instance_group(name, i, d) for i, d in enumerate(servable.device_status())
        ],
        "parameters": {
            "device": {"string_value": servable.device},
            "signature_name": {"string_value": sig.key},
        },
    }
    if batched:
        config["dynamic_batching"] = {
            "max_queue_delay_microseconds": batching.batch_timeout_micros,
            "preferred_batch_size": list(batching.allowed_batch_sizes),
        }
    if servable.device_note:
        config["parameters"]["device_note"] = {"string_value": servable.device_note}
    return json_response(config)


def _triton_version_policy(policy) -> dict:
    if policy.kind == "all":
        return {"all": {}}
    if policy.kind == "specific":
        return {"specific": {"versions": list(policy.versions)}}
    return {"latest": {"num_versions": policy.num_versions}}


def _triton_tensor(spec: TensorSpec, batched: bool) -> dict:
    dims = [-1] if spec.dims is None else [-1 if d is None else d for d in spec.dims]
    if batched:
        dims = dims[1:]  # Triton leaves the batch dimension out when batching
    return {
        "name": spec.alias,
        "data_type": "TYPE_"
        + (
            "STRING"
            if spec.dtype.base_dtype is dtypes.string
            else _DATATYPE_OF[spec.dtype.base_dtype]
        ),
        "dims": dims,
    }


def _instance_group(name: str, i: int, entry: dict) -> dict:
    kind, _, index = entry["device"].partition(":")
    group = {
        "name": f"{name}_{i}",
        "count": entry["instances"],
        "kind": "KIND_CPU" if kind == "cpu" else "KIND_GPU",
    }
    if kind != "cpu":
        group["gpus"] = [int(index)] if index else []
    return group


async def model_ready(request: web.Request) -> web.Response:
    name, version = _target(request)
    manager = request.app[MANAGER]
    try:
        manager.resolve(name, version)
    except Unavailable as e:  # NotFound (404) goes to the error middleware
        # state: LOADING, FAILED (error: the load error), UNLOADING or UNAVAILABLE
        state, _ = manager.readiness(name, version)
        doc = {"name": name, "ready": False, "state": state, "error": e.message}
        return json_response(doc, status=503)
    return json_response({"name": name, "ready": True})


async def repository_index(request: web.Request) -> web.Response:
    note(request, protocol="v2")
    params = await _optional_json(request, "the repository index request")
    ready_only = _bool(params.get("ready", False), "'ready'")
    rows = []
    for status in request.app[MANAGER].index():
        state = _INDEX_STATES.get(status.state, status.state)
        if ready_only and state != "READY":
            continue
        reason = status.error or ("unloaded" if status.state == "UNLOADED" else "")
        rows.append(
            {
                "name": status.model,
                "version": str(status.version) if status.version else "",
                "state": state,
                "reason": reason,
            }
        )
    return json_response(rows)


async def repository_load(request: web.Request) -> web.Response:
    name = request.match_info["model"]
    note(request, protocol="v2", model=name)
    doc = await _optional_json(request, "the load request")
    overrides = sorted(_parameters(doc.get("parameters"), "the load request"))
    if overrides:
        raise InvalidInput(
            f"load parameters {overrides} are not supported: flowserve loads "
            "models from the model repository as they are on disk"
        )
    await request.app[MANAGER].load_model(name)
    return json_response({})


async def repository_unload(request: web.Request) -> web.Response:
    name = request.match_info["model"]
    note(request, protocol="v2", model=name)
    doc = await _optional_json(request, "the unload request")
    _parameters(doc.get("parameters"), "the unload request")  # unload_dependents: none here
    await request.app[MANAGER].unload_model(name)
    return json_response({})


async def _optional_json(request: web.Request, what: str) -> dict:
    body = await read_body(request)
    doc = _loads(body, "The request body") if body.strip() else {}
    if not isinstance(doc, dict):
        raise InvalidInput(f"{what} must be a JSON object")
    return doc


# -----------------------------------------------------------------------------------------
# Inference
# -----------------------------------------------------------------------------------------


async def infer(request: web.Request) -> web.Response:
    name, version = _target(request)
    doc, binary = _split_body(request, await read_body(request))
    params = _parameters(doc.get("parameters"), "request")
    request_id = doc.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise InvalidInput(f"'id' must be a string, got {request_id!r}")
    request_id = adopt_request_id(request, request_id)
    signature = params.get("signature_name")
    if signature is not None and not isinstance(signature, str):
        raise InvalidInput(f"parameters.signature_name must be a string, got {signature!r}")
    default_binary = _bool(params.get("binary_data_output", False), "parameters.binary_data_output")
    inputs = _parse_inputs(doc.get("inputs"), binary, request.app[CONFIG].max_tensor_elements)
    wanted, binary_outputs = _requested_outputs(doc.get("outputs"), default_binary)
    deadlines = [
        t
        for t in (
            parse_timeout(params.get("timeout"), "parameters.timeout"),
            parse_timeout(request.headers.get("Request-Timeout"), "the Request-Timeout header"),
        )
        if t is not None
    ]
    result = await request.app[MANAGER].infer(
        name,
        inputs,
        version=version,
        signature=signature,
        outputs=wanted,
        timeout=min(deadlines) if deadlines else None,
    )
    note(request, version=result.version)
    as_msgpack = wants_msgpack(request) or (
        is_msgpack(request) and "application/json" not in request.headers.get("Accept", "")
    )
    response = _response(result, request_id, binary_outputs, default_binary, as_msgpack)
    accepted = request.headers.get("Accept-Encoding", "").lower()
    if len(response.body) >= _COMPRESS_MIN_BYTES and ("gzip" in accepted or "deflate" in accepted):
        response.enable_compression()
    return response


def _loads(data: bytes, what: str):
    return parse_json(data, what)


def _split_body(request: web.Request, body: bytes) -> tuple[dict, bytes]:
    """The request document and the binary tensor data that follows it (if any)."""
    header_length = request.headers.get(_HEADER_LENGTH)
    if header_length is not None:
        digits = header_length.strip()
        if not (digits.isascii() and digits.isdigit()) or int(digits) > len(body):
            raise InvalidInput(
                f"{_HEADER_LENGTH} must be the length of the JSON header, an "
                f"integer from 0 to the body's {len(body)} bytes; got "
                f"{header_length!r}"
            )
        n = int(digits)
        doc, binary = _loads(body[:n], "The inference header"), body[n:]
    elif not body:
        raise InvalidInput("The request body is empty; expected an inference request")
    elif is_msgpack(request):
        doc, binary = unpackb(body), b""
    else:
        doc, binary = _loads(body, "The request body"), b""
    if not isinstance(doc, dict):
        raise InvalidInput("The inference request must be an object with 'inputs'")
    return doc, binary


def _parameters(value, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"'parameters' of {what} must be an object, got {value!r}")
    return value


def _bool(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false, got {value!r}")
    return value


def _datatype(value, what: str) -> dtypes.DType:
    dtype = DATATYPES.get(value) if isinstance(value, str) else None
    if dtype is None:
        detail = " (BF16 is not supported)" if value == "BF16" else ""
        raise InvalidInput(
            f"{what}: unsupported datatype {value!r}{detail}; expected one of "
            f"{', '.join(DATATYPES)}"
        )
    return dtype


def _shape(value, what: str) -> list[int]:
    if (
        not isinstance(value, list)
        or len(value) > 32
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)
    ):
        raise InvalidInput(
            f"{what}: 'shape' must be a list of non-negative integers, got {value!r}"
        )
    return value


def _parse_inputs(value, binary: bytes, max_elements: int = MAX_ELEMENTS) -> dict[str, np.ndarray]:
    if not isinstance(value, list):
        raise InvalidInput(
            "The inference request needs 'inputs': a list of {name, shape, datatype, data} objects"
        )
    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for i, item in enumerate(value):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"inputs[{i}] must be an object with a string 'name'")
        what = f"input '{name}'"
        if name in inputs:
            raise InvalidInput(f"{what} is given more than once")
        datatype = item.get("datatype")
        dtype = _datatype(datatype, what)
        shape = _shape(item.get("shape"), what)
        check_shape(shape, what, max_elements)
        params = _parameters(item.get("parameters"), what)
        if "shared_memory_region" in params:
            raise InvalidInput(
                f"{what}: the shared memory extension is not supported; send "
                "the data in the request"
            )
        size = params.get("binary_data_size")
        if size is not None:
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise InvalidInput(
                    f"{what}: binary_data_size must be a non-negative integer, got {size!r}"
                )
            if "data" in item:
                raise InvalidInput(f"{what} has both 'data' and binary_data_size; send one")
            if offset + size > len(binary):
                raise InvalidInput(
                    f"{what}: binary_data_size {size} runs past the end of the "
                    f"{len(binary)} bytes of binary data after the JSON header"
                )
            inputs[name] = _from_raw(binary[offset : offset + size], dtype, shape, datatype, what)
            offset += size
        elif "data" in item:
            inputs[name] = _from_data(item["data"], dtype, shape, datatype, what)
        else:
            raise InvalidInput(f"{what} has neither 'data' nor parameters.binary_data_size")
    if offset != len(binary):
        raise InvalidInput(
            f"{len(binary)} bytes of binary data follow the JSON header but the "
            f"inputs' binary_data_size add up to {offset}"
        )
    return inputs


def _from_raw(
    raw: bytes, dtype: dtypes.DType, shape: list[int], datatype: str, what: str
) -> np.ndarray:
    """A tensor from the binary extension's encoding."""
    count = math.prod(shape)
    if dtype is dtypes.string:
        return _unpack_bytes(raw, count, what).reshape(shape)
    expected = count * dtype.size
    if len(raw) != expected:
        raise InvalidInput(
            f"{what}: {len(raw)} bytes of binary data, but shape {shape} of "
            f"{datatype} takes {expected} ({count} x {dtype.size} bytes)"
        )
    if dtype is dtypes.bool:
        octets = np.frombuffer(raw, dtype=np.uint8)
        if octets.size and octets.max() > 1:
            raise InvalidInput(f"{what}: BOOL binary data must be bytes 0 or 1")
        return octets.astype(np.bool_).reshape(shape)
    return np.frombuffer(raw, dtype=dtype.np.newbyteorder("<")).astype(dtype.np).reshape(shape)


def _unpack_bytes(raw: bytes, count: int, what: str) -> np.ndarray:
    values, offset = [], 0
    while offset < len(raw) and len(values) < count:
        if offset + 4 > len(raw):
            raise InvalidInput(f"{what}: BYTES binary data ends inside an element's 4-byte length")
        (length,) = struct.unpack_from("<I", raw, offset)
        offset += 4
        if offset + length > len(raw):
            raise InvalidInput(
                f"{what}: BYTES element {len(values)} declares {length} bytes "
                f"but only {len(raw) - offset} remain"
            )
        values.append(raw[offset : offset + length])
        offset += length
    if len(values) != count or offset != len(raw):
        raise InvalidInput(
            f"{what}: BYTES binary data must hold exactly {count} "
            f"length-prefixed element(s) (4-byte little-endian length, then "
            f"the bytes) in {len(raw)} bytes"
        )
    out = np.empty(count, dtype=object)
    out[:] = values
    return out


def _from_data(data, dtype: dtypes.DType, shape: list[int], datatype: str, what: str) -> np.ndarray:
    """A tensor from ``data``: a (nested) list of values, or raw bytes in msgpack bodies."""
    if isinstance(data, bytes):
        return _from_raw(data, dtype, shape, datatype, what)
    count = math.prod(shape)
    arr = from_json_value(data if isinstance(data, list) else [data], what)
    if arr.size != count:
        raise InvalidInput(
            f"{what}: shape {shape} holds {count} element(s) but 'data' has {arr.size}"
        )
    if count == 0:
        return np.empty(shape, dtype=dtype.np)
    declared = TensorSpec(what, "", dtype, TensorShape(None))
    return coerce(declared, arr.reshape(shape), what=f"{what} (datatype {datatype})")


def _requested_outputs(value, default_binary: bool) -> tuple[list[str] | None, dict[str, bool]]:
    """The names of the outputs asked for (None: all) and which ones want binary data."""
    if value is None:
        return None, {}
    if not isinstance(value, list):
        raise InvalidInput("'outputs' must be a list of {name, parameters} objects")
    names, binary = [], {}
    for i, item in enumerate(value):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise InvalidInput(f"outputs[{i}] must be an object with a string 'name'")
        params = _parameters(item.get("parameters"), f"output '{name}'")
        for extension in ("classification", "shared_memory_region"):
            if extension in params:
                raise InvalidInput(
                    f"output '{name}': parameter {extension!r} (Triton extension) is not supported"
                )
        names.append(name)
        binary[name] = _bool(
            params.get("binary_data", default_binary), f"output '{name}': parameters.binary_data"
        )
    return names or None, binary


def _response(
    result: InferResult,
    request_id,
    binary_outputs: dict[str, bool],
    default_binary: bool,
    as_msgpack: bool,
) -> web.Response:
    doc = {"model_name": result.model, "model_version": str(result.version)}
    if request_id is not None:
        doc["id"] = request_id
    outputs, buffers = [], []
    for name, arr in result.outputs.items():
        entry = {"name": name, "datatype": _output_datatype(name, arr), "shape": list(arr.shape)}
        if as_msgpack:
            entry["data"] = _flat_bytes(arr) if arr.dtype.kind == "O" else _to_raw(arr)
        else:
            data = None if binary_outputs.get(name, default_binary) else _json_data(arr)
            if data is None:
                raw = _to_raw(arr)
                entry["parameters"] = {"binary_data_size": len(raw)}
                buffers.append(raw)
            else:
                entry["data"] = data
        outputs.append(entry)
    doc["outputs"] = outputs
    if as_msgpack:
        return web.Response(body=packb(doc), content_type=MSGPACK)
    if not buffers:
        return json_response(doc)
    header = dumps(doc)
    return web.Response(
        body=b"".join([header, *buffers]),
        content_type="application/octet-stream",
        headers={_HEADER_LENGTH: str(len(header))},
    )


def _output_datatype(name: str, arr: np.ndarray) -> str:
    try:
        return _DATATYPE_OF[dtypes.as_dtype(arr.dtype)]
    except (TypeError, KeyError):
        raise Internal(
            f"output '{name}' has dtype {arr.dtype}, which V2 cannot represent"
        ) from None


def _flat_bytes(arr: np.ndarray) -> list[bytes]:
    return [
        v
        if isinstance(v, bytes)
        else bytes(v)
        if isinstance(v, bytearray)
        else str(v).encode("utf-8")
        for v in arr.reshape(-1)
    ]


def _to_raw(arr: np.ndarray) -> bytes:
    if arr.dtype.kind == "O":
        return b"".join(struct.pack("<I", len(v)) + v for v in _flat_bytes(arr))
    return np.ascontiguousarray(arr, arr.dtype.newbyteorder("<")).tobytes()


def _json_data(arr: np.ndarray) -> list | None:
    """Flat JSON values, or None for BYTES that are not all UTF-8 (sent as binary then)."""
    if arr.dtype.kind != "O":
        return arr.reshape(-1).tolist()
    try:
        return [v.decode("utf-8") for v in _flat_bytes(arr)]
    except UnicodeDecodeError:
        return None
