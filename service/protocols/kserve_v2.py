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
    GET  /v2/models[/{model}[/versions/{v}]]/stats   Triton's statistics extension
    GET|POST /v2/logging                             Triton's log settings (service.log_settings)
    GET|POST /v2[/models/{model}]/trace/setting      Triton's trace settings
    GET  /v2/systemsharedmemory[/region/{r}]/status  system shared memory regions
    POST /v2/systemsharedmemory/region/{r}/register, [/region/{r}]/unregister

Datatypes: BOOL, UINT8/16/32/64, INT8/16/32/64, FP16, FP32, FP64 and BYTES map to the engine's
dtypes of the same width (BYTES to ``string``); BF16 is refused. An input's ``data`` is flat
row-major (nested lists are accepted too) and must hold exactly the elements ``shape`` says;
its values must fit ``datatype``, which must then cast safely to the signature's dtype
(``service.tensors.coerce``). BYTES outputs are UTF-8 strings in JSON when every element
decodes, and binary otherwise.

Request ``parameters`` understood: ``signature_name`` (flowserve extension: which signature to
run; the default signature otherwise), ``timeout`` in **microseconds**, an integer, as
Triton's clients send it (the ``Request-Timeout`` header gives one in seconds; the earlier of
the two deadlines wins), and ``binary_data_output``. Other request parameters are ignored.

System shared memory (Triton's extension): ``/v2/systemsharedmemory[/region/{r}]/status``,
``.../region/{r}/register`` (``{"key", "offset", "byte_size"}``) and
``[/region/{r}]/unregister``. An input with the parameters ``shared_memory_region``,
``shared_memory_byte_size`` [, ``shared_memory_offset``] is read from that window of the region
(raw, as the binary extension); an output asked for with them is written there and answered
with those parameters and no data. CUDA shared memory registration is refused (400).

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

import contextlib
import functools
from collections.abc import Iterator

import numpy as np
from aiohttp import web

import service
from engine import dtypes
from service import tracing
from service.config import ConfigError, parse_model_config
from service.errors import InvalidInput, ModelNotFound, NotFound, Unavailable
from service.keys import CONFIG, LOG_SETTINGS, MANAGER, SHARED_MEMORY, TRACE_SETTINGS
from service.manager import InferResult, ModelManager
from service.protocols.classification import apply_classification, class_count
from service.protocols.common import (
    MSGPACK,
    adopt_request_id,
    body_at_hand,
    dumps,
    is_msgpack,
    json_response,
    note,
    parse_json,
    parse_timeout,
    read_body,
    wants_msgpack,
)
from service.protocols.json_numbers import parse_infer
from service.protocols.msgpack_codec import packb, unpackb
from service.protocols.v2_tensors import DATATYPE_OF as _DATATYPE_OF
from service.protocols.v2_tensors import (
    DATATYPES,
    output_datatype,
    parse_datatype,
    parse_shape,
    tensor_from_raw,
    tensor_to_raw,
)
from service.protocols.v2_tensors import flat_bytes as _flat_bytes
from service.protocols.v2_tensors import json_data as _json_data
from service.protocols.v2_tensors import tensor_from_data as _from_data
from service.tensors import MAX_ELEMENTS, TensorSpec, check_shape
from service.triton_config import parse_triton_json

_datatype, _shape, _from_raw, _to_raw = parse_datatype, parse_shape, tensor_from_raw, tensor_to_raw
_output_datatype = output_datatype

__all__ = [
    "add_routes",
    "DATATYPES",
    "EXTENSIONS",
    "CUDA_SHM_REFUSED",
    "triton_errors",
    "model_metadata_doc",
    "model_config_doc",
    "repository_index_rows",
    "load_model",
    "timeout_micros",
    "parse_datatype",
    "parse_shape",
    "tensor_from_raw",
    "tensor_to_raw",
    "output_datatype",
]

_HEADER_LENGTH = "Inference-Header-Content-Length"
# Triton's names for the protocol extensions implemented (REST and gRPC alike).
EXTENSIONS = [
    "binary_tensor_data",
    "model_repository",
    "model_configuration",
    "system_shared_memory",
    "statistics",
    "logging",
    "trace",
    "classification",
]
CUDA_SHM_REFUSED = (
    "CUDA shared memory is not supported: flowserve keeps tensors in host memory; use "
    "system shared memory (/v2/systemsharedmemory) or send the data in the request"
)
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


@contextlib.contextmanager
def triton_errors(name: str) -> Iterator[None]:
    """Rewrites an unknown-model error in the words Triton uses, which its clients (and
    users' scripts) recognise: ``Request for unknown model: 'm' is not found``."""
    try:
        yield
    except ModelNotFound as e:
        raise _unknown_model(name, e) from None


def _unknown_model(name: str, e: ModelNotFound) -> NotFound:
    at = f" version {e.version}" if e.version is not None else ""
    return NotFound(f"Request for unknown model: '{name}'{at} is not found")


def _triton_route(handler):
    @functools.wraps(handler)
    async def wrapped(request: web.Request) -> web.Response:
        # triton_errors, without a context manager's generator per request
        try:
            return await handler(request)
        except ModelNotFound as e:
            raise _unknown_model(request.match_info.get("model", ""), e) from None

    return wrapped


def add_routes(app: web.Application) -> None:
    router = app.router
    router.add_get("/v2", server_metadata)
    router.add_get("/v2/health/live", health_live)
    router.add_get("/v2/health/ready", health_ready)
    router.add_get("/v2/models/stats", _triton_route(model_statistics))  # before {model}
    for model in ("/v2/models/{model}", "/v2/models/{model}/versions/{version}"):
        router.add_get(model, _triton_route(model_metadata))
        router.add_get(model + "/ready", _triton_route(model_ready))
        router.add_get(model + "/config", _triton_route(model_config))
        router.add_get(model + "/stats", _triton_route(model_statistics))
        router.add_post(model + "/infer", infer)  # (Triton's words inside)
    router.add_post("/v2/repository/index", repository_index)
    router.add_get("/v2/logging", log_settings)
    router.add_post("/v2/logging", log_settings)
    for path in ("/v2/trace/setting", "/v2/models/{model}/trace/setting"):
        router.add_get(path, _triton_route(trace_settings))
        router.add_post(path, _triton_route(trace_settings))
    shm = "/v2/systemsharedmemory"
    router.add_get(shm + "/status", shm_status)
    router.add_get(shm + "/region/{region}/status", shm_status)
    router.add_post(shm + "/region/{region}/register", shm_register)
    router.add_post(shm + "/unregister", shm_unregister)
    router.add_post(shm + "/region/{region}/unregister", shm_unregister)
    cuda = "/v2/cudasharedmemory"
    router.add_get(cuda + "/status", cuda_shm_status)
    router.add_get(cuda + "/region/{region}/status", cuda_shm_status)
    router.add_post(cuda + "/region/{region}/register", cuda_shm_refused)
    router.add_post(cuda + "/unregister", cuda_shm_status)
    router.add_post(cuda + "/region/{region}/unregister", cuda_shm_status)
    router.add_post("/v2/repository/models/{model}/load", repository_load)
    router.add_post("/v2/repository/models/{model}/unload", _triton_route(repository_unload))


# -----------------------------------------------------------------------------------------
# Health, metadata, repository
# -----------------------------------------------------------------------------------------


async def server_metadata(_request: web.Request) -> web.Response:
    return json_response(
        {"name": "flowserve", "version": service.__version__, "extensions": EXTENSIONS}
    )


async def health_live(_request: web.Request) -> web.Response:
    return json_response({"live": True})


async def health_ready(request: web.Request) -> web.Response:
    manager = request.app[MANAGER]
    if manager.ready:
        return json_response({"ready": True})
    # flowserve's extension: what readiness waits for (model -> LOADING, FAILED, ...)
    return json_response({"ready": False, "waiting_for": manager.unready_models()}, status=503)


def _target(request: web.Request) -> tuple[str, str | None]:
    name, version = request.match_info["model"], request.match_info.get("version")
    note(request, protocol="v2", model=name, version=version)
    return name, version


async def model_metadata(request: web.Request) -> web.Response:
    name, version = _target(request)
    return json_response(model_metadata_doc(request.app[MANAGER], name, version))


def model_metadata_doc(manager: ModelManager, name: str, version: str | None = None) -> dict:
    """The V2 model metadata document (the default signature's tensors)."""
    _, sig = manager.signature_info(name, version)
    versions = sorted(s.version for s in manager.status(name) if s.state == "AVAILABLE")
    return {
        "name": name,
        "versions": [str(v) for v in versions],
        "platform": "flowserve",
        "inputs": [_tensor_metadata(sig.inputs[a]) for a in sig.input_order],
        "outputs": [_tensor_metadata(sig.outputs[a]) for a in sig.output_order],
    }


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
    return json_response(model_config_doc(request.app[MANAGER], name, version))


def model_config_doc(manager: ModelManager, name: str, version: str | None = None) -> dict:
    """Triton's model configuration (JSON form) of a version."""
    servable, sig = manager.signature_info(name, version)
    batching = manager.batching_for(servable)
    batched = batching.enabled and sig.batchable
    config = {
        "name": name,
        "platform": "flowserve",
        "backend": "flowserve",
        "version_policy": _triton_version_policy(servable.config.version_policy),
        "max_batch_size": batching.max_batch_size if batched else 0,
        "input": [
            {**_triton_tensor(sig.inputs[a], batched), "format": "FORMAT_NONE"}
            for a in sig.input_order
        ],
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
    return config


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


async def model_statistics(request: web.Request) -> web.Response:
    """Triton's statistics extension: ``{"model_stats": [...]}`` of every loaded version, of
    one model's, or of one version."""
    name = request.match_info.get("model")
    version = request.match_info.get("version")
    note(request, protocol="v2", model=name, version=version)
    return json_response({"model_stats": request.app[MANAGER].model_statistics(name, version)})


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
    return json_response(repository_index_rows(request.app[MANAGER], ready_only))


def repository_index_rows(manager: ModelManager, ready_only: bool = False) -> list[dict]:
    """The repository index: one row per model version (or per model without versions)."""
    rows = []
    for status in manager.index():
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
    return rows


async def repository_load(request: web.Request) -> web.Response:
    name = request.match_info["model"]
    note(request, protocol="v2", model=name)
    doc = await _optional_json(request, "the load request")
    await load_model(request.app[MANAGER], name, _parameters(doc.get("parameters"), "the load"))
    return json_response({})


async def load_model(manager: ModelManager, name: str, parameters: dict) -> None:
    """The repository extension's load (REST and gRPC). ``parameters.config``: a Triton model
    configuration (JSON text) that replaces the repository's for this load."""
    unsupported = sorted(set(parameters) - {"config"})
    if unsupported:
        raise InvalidInput(
            f"load parameters {unsupported} are not supported (only 'config'; model files "
            "come from the model repository)"
        )
    override = None
    if "config" in parameters:
        text = parameters["config"]
        if not isinstance(text, str):
            raise InvalidInput("parameters.config must be a JSON string of the model config")
        try:
            override = parse_model_config(
                parse_triton_json(text, name, "parameters.config"), "parameters.config"
            )
        except ConfigError as e:
            raise InvalidInput(str(e)) from None
    await manager.load_model(name, override)


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


async def log_settings(request: web.Request) -> web.Response:
    """Triton's logging extension: GET the settings, POST changes to them."""
    note(request, protocol="v2")
    settings = request.app[LOG_SETTINGS]
    if request.method == "GET":
        return json_response(settings.current())
    return json_response(settings.update(await _optional_json(request, "the log settings")))


async def trace_settings(request: web.Request) -> web.Response:
    """Triton's trace extension: GET the (global or a model's) settings, POST changes."""
    model = request.match_info.get("model")
    note(request, protocol="v2", model=model)
    if model and model not in request.app[MANAGER].model_names():
        raise ModelNotFound(f"unknown model {model!r}", model)
    settings = request.app[TRACE_SETTINGS]
    if request.method == "GET":
        return json_response(settings.current(model))
    changes = await _optional_json(request, "the trace settings")
    return json_response(settings.update(changes, model))


# -----------------------------------------------------------------------------------------
# System shared memory extension
# -----------------------------------------------------------------------------------------


async def shm_status(request: web.Request) -> web.Response:
    note(request, protocol="v2")
    return json_response(request.app[SHARED_MEMORY].status(request.match_info.get("region")))


async def shm_register(request: web.Request) -> web.Response:
    note(request, protocol="v2")
    doc = await _optional_json(request, "the register request")
    request.app[SHARED_MEMORY].register(
        request.match_info["region"],
        doc.get("key"),
        doc.get("offset", 0),
        doc.get("byte_size"),
    )
    return json_response({})


async def shm_unregister(request: web.Request) -> web.Response:
    note(request, protocol="v2")
    request.app[SHARED_MEMORY].unregister(request.match_info.get("region"))
    return json_response({})


async def cuda_shm_status(request: web.Request) -> web.Response:
    """No CUDA regions can be registered, so none is ever listed or unregistered."""
    note(request, protocol="v2")
    region = request.match_info.get("region")
    if region:
        raise NotFound(f"Unable to find cuda shared memory region: '{region}'")
    return json_response([] if request.method == "GET" else {})


async def cuda_shm_refused(request: web.Request) -> web.Response:
    note(request, protocol="v2")
    raise InvalidInput(CUDA_SHM_REFUSED)


# -----------------------------------------------------------------------------------------
# Inference
# -----------------------------------------------------------------------------------------


async def infer(request: web.Request) -> web.Response:
    """V2 inference. An unknown model is answered in Triton's words, as ``_triton_route``
    answers on the other routes (inline here: a coroutine less on every request)."""
    try:
        name, version = _target(request)
        traced = tracing.traced(request)
        if traced:
            tracing.phase(request, "parse", model=name)
        raw = body_at_hand(request)
        if raw is None:
            raw = await read_body(request)
        doc, binary = _split_body(request, raw)
        params = _parameters(doc.get("parameters"), "request")
        request_id = doc.get("id")
        if request_id is not None and not isinstance(request_id, str):
            raise InvalidInput(f"'id' must be a string, got {request_id!r}")
        request_id = adopt_request_id(request, request_id)
        signature = params.get("signature_name")
        if signature is not None and not isinstance(signature, str):
            raise InvalidInput(f"parameters.signature_name must be a string, got {signature!r}")
        default_binary = _bool(
            params.get("binary_data_output", False), "parameters.binary_data_output"
        )
        shm = request.app[SHARED_MEMORY]
        max_elements = request.app[CONFIG].max_tensor_elements
        inputs = _parse_inputs(doc.get("inputs"), binary, shm, max_elements)
        wanted, binary_outputs, shm_outputs, classes = _requested_outputs(
            doc.get("outputs"), default_binary, shm
        )
        header = request.headers.get("Request-Timeout")
        field = params.get("timeout")
        deadlines = (
            []
            if header is None and field is None
            else [
                t
                for t in (
                    timeout_micros(field),
                    parse_timeout(header, "the Request-Timeout header"),
                )
                if t is not None
            ]
        )
        if traced:
            tracing.phase(request, None)
        manager = request.app[MANAGER]
        result = await manager.infer(
            name,
            inputs,
            version=version,
            signature=signature,
            outputs=wanted,
            timeout=min(deadlines) if deadlines else None,
        )
        note(request, version=result.version)
        if traced:
            tracing.phase(request, "encode", model=name, version=result.version)
        packed = is_msgpack(request)
        as_msgpack = wants_msgpack(request, packed) or (
            packed and "application/json" not in request.headers.get("Accept", "")
        )
        if classes:
            apply_classification(manager, result, classes)
        if shm_outputs:
            _write_shm_outputs(result, shm_outputs, shm)
        response = _response(
            result, request_id, binary_outputs, default_binary, as_msgpack, shm_outputs
        )
        accepted = request.headers.get("Accept-Encoding", "").lower()
        if len(response.body) >= _COMPRESS_MIN_BYTES and (
            "gzip" in accepted or "deflate" in accepted
        ):
            response.enable_compression()
        return response
    except ModelNotFound as e:
        raise _unknown_model(request.match_info.get("model", ""), e) from None


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
    else:  # the inputs' numbers read straight into arrays where they can be
        doc, binary = parse_infer(body), b""
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


def _parse_inputs(
    value, binary: bytes, shm=None, max_elements: int = MAX_ELEMENTS
) -> dict[str, np.ndarray]:
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
            if "data" in item or "binary_data_size" in params:
                raise InvalidInput(f"{what} has both data and a shared memory region; send one")
            data = shm.read(*_shm_window(params, what), what)
            inputs[name] = _from_raw(data, dtype, shape, datatype, what)
            continue
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


def _shm_window(params: dict, what: str) -> tuple[str, int, int]:
    """(region, offset, byte size) of a tensor's ``shared_memory_*`` parameters."""
    region = params["shared_memory_region"]
    if not isinstance(region, str):
        raise InvalidInput(f"{what}: shared_memory_region must be a string")
    size = params.get("shared_memory_byte_size")
    if size is None:
        raise InvalidInput(f"{what}: shared_memory_region needs shared_memory_byte_size")
    return region, params.get("shared_memory_offset", 0), size


def _requested_outputs(
    value, default_binary: bool, shm=None
) -> tuple[list[str] | None, dict[str, bool], dict[str, tuple[str, int, int]]]:
    """The names of the outputs asked for (None: all), which ones want binary data, and the
    shared memory window of those written to shared memory."""
    if value is None:
        return None, {}, {}, {}
    if not isinstance(value, list):
        raise InvalidInput("'outputs' must be a list of {name, parameters} objects")
    names, binary, windows, classes = [], {}, {}, {}
    for i, item in enumerate(value):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise InvalidInput(f"outputs[{i}] must be an object with a string 'name'")
        params = _parameters(item.get("parameters"), f"output '{name}'")
        if "classification" in params:
            classes[name] = class_count(params["classification"], f"output '{name}'")
        if "shared_memory_region" in params:
            what = f"output '{name}'"
            windows[name] = _shm_window(params, what)
            shm.check_write(*windows[name], what)
        names.append(name)
        binary[name] = _bool(
            params.get("binary_data", default_binary), f"output '{name}': parameters.binary_data"
        )
    return names or None, binary, windows, classes


def _write_shm_outputs(result: InferResult, windows: dict, shm) -> None:
    for name, (region, offset, size) in windows.items():
        shm.write(region, offset, size, _to_raw(result.outputs[name]), f"output '{name}'")


def _response(
    result: InferResult,
    request_id,
    binary_outputs: dict[str, bool],
    default_binary: bool,
    as_msgpack: bool,
    shm_outputs: dict | None = None,
) -> web.Response:
    doc = {"model_name": result.model, "model_version": str(result.version)}
    if request_id is not None:
        doc["id"] = request_id
    outputs, buffers = [], []
    for name, arr in result.outputs.items():
        entry = {"name": name, "datatype": _output_datatype(name, arr), "shape": list(arr.shape)}
        if shm_outputs and name in shm_outputs:
            region, offset, _ = shm_outputs[name]
            entry["parameters"] = {
                "shared_memory_region": region,
                "shared_memory_byte_size": len(_to_raw(arr)),
            }
            if offset:
                entry["parameters"]["shared_memory_offset"] = offset
        elif as_msgpack:
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


def timeout_micros(value: object) -> float | None:
    """Triton's ``timeout`` request parameter: microseconds, as seconds (None if absent)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(
            f"parameters.timeout must be a non-negative integer number of microseconds, "
            f"got {value!r}"
        )
    return value * 1e-6 if value else None
